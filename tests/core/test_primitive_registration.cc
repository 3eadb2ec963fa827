// Tests of adding a primitive from outside the library: a toy primitive registered from this file
// alone runs under jit, grad, vmap and a sharded jit, and the per-primitive check names a missing fact.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include <minijax/minijax.h>

#include "core/bodies.h"
#include "core/collectives.h"
#include "core/primitive.h"
#include "core/primitive_facts.h"
#include "core/trace.h"
#include "jit/codegen/lower/lowering.h"
#include "jit/codegen/lower/strategy.h"
#include "jit/executable.h"
#include "sharding/sharding_rule.h"
#include "values.h"

namespace {

using mj::Array;
using mj::DType;
using mj::Params;
using mj::ShapedArray;
using minijax_test::vals;

// ---- the toy primitive: y = 3 * x, on f32 and f64 ----------------------------------------------

// Which fact define_toy leaves out (the check's tests register a primitive lacking one).
enum class Omit { nothing, batching, lowering };

// Registers `name` as the toy primitive through each layer's registration API, the ones
// core/primitives/, autodiff/rules/, jit/codegen/lower/ and sharding/rules/ use, leaving out `omit`
// (and anything an earlier definition of `name` left: a test may run more than once in a process).
const mj::Primitive& define_toy(const std::string& name, Omit omit) {
  mj::Primitive& p = mj::get_or_create_primitive(name);
  const mj::Primitive* self = &p;
  p.batch = nullptr;
  p.no_batch_reason.clear();
  mj::lower::elemental_rules().erase(name);
  // Core (core/primitives/): classes, shape rule, eager implementation.
  mj::set_classes(p, mj::OpClass::elementwise, mj::CostClass::arithmetic, mj::FusionClass::normal);
  p.shape_rule = [](const std::vector<ShapedArray>& in, const Params&) {
    if (in.size() != 1) throw mj::ValueError("expected 1 operand, got " + std::to_string(in.size()));
    if (in[0].dtype != DType::f32 && in[0].dtype != DType::f64)
      throw mj::TypeError(std::string("operand must be f32 or f64, got ") + mj::dtype_name(in[0].dtype));
    return std::vector<ShapedArray>{in[0]};
  };
  p.impl = [](const std::vector<Array>& args, const Params&, const std::vector<ShapedArray>& out_avals) {
    Array out = Array::empty(out_avals[0]);
    auto scale = [&]<class T>() {
      const T* x = args[0].data<T>();
      T* y = out.mutable_data<T>();
      for (int64_t i = 0; i < out.size(); ++i) y[i] = T(3) * x[i];
    };
    if (args[0].dtype() == DType::f32) scale.template operator()<float>();
    else scale.template operator()<double>();
    return std::vector<Array>{out};
  };
  // Autodiff (autodiff/rules/): linear, so its JVP applies it to the tangent and it is its own
  // transpose (3 is a scalar: the adjoint of x -> 3x is ct -> 3ct).
  p.jvp = [self](const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& params) {
    Array t = tangents[0].defined() ? mj::bind1(*self, {tangents[0]}, params) : Array();
    return std::pair{std::vector<Array>{mj::bind1(*self, primals, params)}, std::vector<Array>{t}};
  };
  p.transpose = [self](const std::vector<Array>& cts, const std::vector<Array>&, const std::vector<ShapedArray>&,
                       const Params& params) {
    return std::vector<Array>{cts[0].defined() ? mj::bind1(*self, {cts[0]}, params) : Array()};
  };
  // Batching: elementwise, so the batched operand is scaled whole and keeps its batch dim.
  if (omit != Omit::batching)
    p.batch = [self](const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& params) {
      return std::pair{std::vector<Array>{mj::bind1(*self, args, params)}, dims};
    };
  // Lowering (jit/codegen/lower/): the elemental rule, the value at an index inside a loop kernel.
  if (omit != Omit::lowering)
    mj::lower::RegisterElemental reg(name, [](mj::lower::FusionEmitter& fe, const mj::Eqn& e,
                                              const mj::lower::ElemIndex& at) {
      mj::lower::EVal x = fe.value1(e.inputs[0], at);
      mj::lower::EVal three = fe.constant(x.dtype, 3.0, x.lanes);
      return std::vector<mj::lower::EVal>{{fe.b.fmul(x.v, three.v), x.dtype, x.lanes}};
    });
  // Sharding (sharding/rules/): pointwise, each dim one factor shared by the operand and the result.
  mj::sharding_rules()[name] = [](const std::vector<ShapedArray>&, const std::vector<ShapedArray>& out,
                                  const Params&) {
    mj::FactorRule r;
    std::vector<std::vector<int>> dims;
    for (int64_t size : out.at(0).shape) {
      dims.push_back({int(r.factor_sizes.size())});
      r.factor_sizes.push_back(size);
    }
    r.operand_dims = {dims};
    r.result_dims = {dims};
    return r;
  };
  return p;
}

// The complete toy, registered at static initialization as the library's primitives are.
mj::Registrar reg_toy([] { define_toy("test_toy_scale", Omit::nothing); });

// The toy's binder, as lax's functions bind theirs.
Array toy_scale(const Array& x) {
  static const mj::Primitive& p = mj::primitive("test_toy_scale");
  return mj::bind1(p, {x});
}

// f32 array of `shape` whose element k (row-major) is k / 4 - 1: every value, and 3, 6 and 1
// times it plus small integers, is exact in f32, so results compare exactly.
Array ramp(const mj::Shape& shape) {
  Array a = Array::allocate(ShapedArray{shape, DType::f32});
  float* p = a.mutable_data<float>();
  for (int64_t k = 0; k < a.size(); ++k) p[k] = float(k) / 4 - 1;
  return a;
}

// Element k of ramp() mapped by the closed form f (the oracle: arithmetic on the ramp's formula).
template <class F>
std::vector<float> ramp_map(int64_t n, F f) {
  std::vector<float> out;
  for (int64_t k = 0; k < n; ++k) out.push_back(float(f(double(k) / 4 - 1)));
  return out;
}

// ---- the toy through every layer ----------------------------------------------------------------

TEST(PrimitiveRegistration, ToyHasEveryRequiredFact) {
  EXPECT_EQ(mj::detail::missing_facts(mj::primitive("test_toy_scale")), std::vector<std::string>{});
  EXPECT_EQ(mj::lower::lowering_strategy("test_toy_scale"), "fused loop");
  // Its factor rule, printed: one factor per dim of f32[8,4], shared by operand and result.
  const ShapedArray a{{8, 4}, DType::f32};
  EXPECT_EQ(mj::sharding_rule_for("test_toy_scale", {a}, {a}, {}).str(), "([i, j])->([i, j]) {i=8, j=4}");
}

TEST(PrimitiveRegistration, ToyRunsEagerlyAndCompiledInOneFusion) {
  const Array x = ramp({8});
  EXPECT_EQ(vals(toy_scale(x)), ramp_map(8, [](double v) { return 3 * v; }));
  auto f = [](const Array& a) { return toy_scale(a) + 1.0f; };
  EXPECT_EQ(vals(mj::jit(f)(x)), ramp_map(8, [](double v) { return 3 * v + 1; }));
  // Fusion class normal, op class elementwise: the toy and its consumer are one loop kernel.
  auto compiled = mj::jit(f).lower(x).compile();
  const mj::Jaxpr& program = compiled.executable()->program;
  ASSERT_EQ(program.eqns.size(), 1u) << mj::to_string(program);
  ASSERT_EQ(program.eqns[0].primitive->name, "fusion") << mj::to_string(program);
  std::vector<std::string> fused;
  for (const mj::Eqn& e : mj::subjaxprs(program.eqns[0]).at(0).jaxpr->jaxpr->eqns) fused.push_back(e.primitive->name);
  EXPECT_EQ(fused, (std::vector<std::string>{"test_toy_scale", "add"}));
  // Cost class arithmetic: one flop per element (XLA's HloCostAnalysis for elementwise ops), 8 for
  // the toy and 8 for the add; the kernel reads x and writes y, 32 bytes each.
  const auto cost = compiled.cost_analysis();
  EXPECT_EQ(cost.at("flops"), 16.0);
  EXPECT_EQ(cost.at("transcendentals"), 0.0);
  EXPECT_EQ(cost.at("bytes accessed"), 64.0);
}

TEST(PrimitiveRegistration, ToyUnderJvpAndGrad) {
  const Array x = ramp({6});
  // JVP rule: d(3x) = 3 dx, with dx = x + 2.
  auto [y, t] = mj::jvp([](const Array& a) { return toy_scale(a); }, x, x + 2.0f);
  EXPECT_EQ(vals(y), ramp_map(6, [](double v) { return 3 * v; }));
  EXPECT_EQ(vals(t), ramp_map(6, [](double v) { return 3 * (v + 2); }));
  // f(x) = sum(3x * x) = 3 sum(x^2), so grad f = 6x: the transpose rule carries the cotangent of
  // the product's first factor (ct * x) back through the toy (3 ct x), the rest is 3x.
  auto f = [](const Array& a) { return mj::sum(toy_scale(a) * a); };
  const std::vector<float> want = ramp_map(6, [](double v) { return 6 * v; });
  EXPECT_EQ(vals(mj::grad(f)(x)), want);
  EXPECT_EQ(vals(mj::jit(mj::grad(f))(x)), want);
}

TEST(PrimitiveRegistration, ToyUnderVmap) {
  const Array xs = ramp({3, 4});
  const std::vector<float> want = ramp_map(12, [](double v) { return 3 * v; });
  auto f = [](const Array& a) { return toy_scale(a); };
  EXPECT_EQ(vals(mj::vmap(f)(xs)), want);
  EXPECT_EQ(vals(mj::jit(mj::vmap(f))(xs)), want);
  // Mapped over axis 1 of xs^T (f32[4,3]): row b of the result is 3 * column b of xs^T, i.e. 3 xs.
  Array by_col = mj::vmap(f, {.in_axes = {1}})(mj::transpose(xs, {1, 0}));
  EXPECT_EQ(by_col.shape(), (mj::Shape{3, 4}));
  EXPECT_EQ(vals(by_col), want);
}

TEST(PrimitiveRegistration, ToyUnderShardedJit) {
  const Array x = ramp({8, 4});
  const mj::Mesh mesh = mj::make_mesh({4}, {"x"});
  auto f = mj::jit([](const Array& a) { return toy_scale(a) + 1.0f; },
                   {.in_shardings = {mj::NamedSharding(mesh, mj::P("x"))}});
  EXPECT_EQ(vals(f(x)), ramp_map(32, [](double v) { return 3 * v + 1; }));
  // The factor rule carries x's rows over 4 devices to the toy's result: each device scales its
  // f32[2,4] block, and the result comes back sharded the same way, with no collective between.
  auto low = f.lower(x);
  ASSERT_TRUE(low.mesh) << low.as_text();
  int toys = 0;
  for (const mj::Eqn& e : low.program.eqns) {
    EXPECT_FALSE(mj::is_collective(e.primitive->name)) << low.as_text();
    if (e.primitive->name != "test_toy_scale") continue;
    ++toys;
    EXPECT_EQ(e.outputs.at(0).aval().shape, (mj::Shape{2, 4})) << low.as_text();
  }
  EXPECT_EQ(toys, 1) << low.as_text();
  ASSERT_EQ(low.out_shardings.size(), 1u);
  ASSERT_EQ(low.out_shardings[0].dims.size(), 2u);
  ASSERT_EQ(low.out_shardings[0].dims[0].axes.size(), 1u) << low.as_text();
  EXPECT_EQ(low.out_shardings[0].dims[0].axes[0].name, "x");
  EXPECT_TRUE(low.out_shardings[0].dims[1].axes.empty()) << low.as_text();
}

// ---- the per-primitive check on primitives lacking a fact -----------------------------------------
// These stay registered in this binary once their test has run. Its only registry-wide test
// (ParserFuzzRegressions.EveryShapeRuleRejectsAnyOperandCountWithATypedError) reads shape rules,
// which they have; the registry-wide check itself runs in tests/conformance, which registers none.

TEST(PrimitiveFacts, APrimitiveWithoutABatchingRuleIsNamedWithTheFact) {
  const mj::Primitive& p = define_toy("test_toy_without_batching", Omit::batching);
  EXPECT_EQ(mj::detail::missing_facts(p),
            std::vector<std::string>{
                "primitive 'test_toy_without_batching': no batching rule and no declared reason (no_batch_reason)"});
  // Why it is required: vmap cannot pass through it.
  EXPECT_THROW(mj::vmap([&p](const Array& a) { return mj::bind1(p, {a}); })(ramp({3, 4})), mj::ValueError);
  // A declared reason stands for the rule.
  mj::get_or_create_primitive("test_toy_without_batching").no_batch_reason = "a test primitive";
  EXPECT_EQ(mj::detail::missing_facts(p), std::vector<std::string>{});
}

TEST(PrimitiveFacts, APrimitiveWithoutALoweringIsNamedWithTheFact) {
  const mj::Primitive& p = define_toy("test_toy_without_lowering", Omit::lowering);
  EXPECT_EQ(mj::detail::missing_facts(p),
            std::vector<std::string>{"primitive 'test_toy_without_lowering': no lowering (no elemental, reduction "
                                     "or program rule in jit/codegen/lower/, and not inlined)"});
  EXPECT_EQ(mj::lower::lowering_strategy("test_toy_without_lowering"), "");
  // Why it is required: jit cannot compile it (it runs eagerly).
  auto f = [&p](const Array& a) { return mj::bind1(p, {a}); };
  EXPECT_EQ(vals(f(ramp({8}))), ramp_map(8, [](double v) { return 3 * v; }));
  try {
    mj::jit(f)(ramp({8}));
    ADD_FAILURE() << "jit compiled a primitive without a lowering";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("test_toy_without_lowering"), std::string::npos) << e.what();
  }
}

}  // namespace
