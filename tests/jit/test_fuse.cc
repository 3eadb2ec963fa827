// Tests of the fusion primitive and the fuse pass: op classes over the registry, the fusion
// equation's rules, the structure fuse builds (checked against the contract of docs/compiler.md
// by an independent checker) and bitwise value preservation on programs from the samples.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "core/views/array_ops.h"
#include "core/views/control_flow.h"
#include "core/bodies.h"
#include "core/fusion.h"
#include "core/parser.h"
#include "jit/passes/fuse.h"
#include "jit/passes/inline_calls.h"
#include "jit/passes/simplify.h"
#include "pass_helpers.h"
#include "samples/fashion_mnist_mlp_lib.h"

namespace {

using mj::Array;
using mj::Eqn;
using mj::Jaxpr;
using mj::OpClass;
using passtest::body_of;
using passtest::count_eqns;
using passtest::count_in;
using passtest::top_fusions;

// ---- op classes -------------------------------------------------------------------------------

const char* class_name(OpClass c) {
  switch (c) {
    case OpClass::elementwise: return "elementwise";
    case OpClass::index_map: return "index_map";
    case OpClass::reduction: return "reduction";
    case OpClass::other: return "other";
  }
  return "?";
}

TEST(OpClass, EveryPrimitiveHasItsClass) {
  // The op classes of docs/compiler.md, by hand from each primitive's definition.
  std::map<std::string, OpClass> want;
  for (const char* n : {"neg", "sin", "cos", "tan", "exp", "log", "log1p", "expm1", "tanh", "logistic",
                        "sqrt", "rsqrt", "erf", "erf_inv", "floor", "ceil", "round", "abs", "sign", "not",
                        "integer_pow", "convert_element_type", "stop_gradient", "add", "sub", "mul", "div",
                        "rem", "pow", "atan2", "max", "min", "and", "or", "xor", "eq", "ne", "lt", "le",
                        "gt", "ge", "shift_left", "shift_right_logical", "select_n", "clamp", "add_any",
                        "threefry2x32", "is_finite", "nextafter", "population_count", "clz", "sinh",
                        "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "cbrt", "erfc", "lgamma",
                        "digamma", "polygamma"})
    want[n] = OpClass::elementwise;
  for (const char* n : {"igamma", "igamma_grad_a"}) want[n] = OpClass::elementwise;
  for (const char* n : {"broadcast_in_dim", "transpose", "slice", "rev", "pad", "concatenate", "iota",
                        "iota_2x32_shape", "dynamic_slice", "gather"})
    want[n] = OpClass::index_map;
  for (const char* n : {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin"})
    want[n] = OpClass::reduction;
  for (const char* n : {"reduce_and", "reduce_or", "reduce_xor"}) want[n] = OpClass::reduction;
  // bitcast_convert_type changes the shape between 4- and 8-byte types: not elementwise.
  for (const char* n : {"reshape", "squeeze", "expand_dims", "bitcast_convert_type", "dot_general", "cumsum",
                        "fusion", "scan", "device_put", "optimization_barrier"})
    want[n] = OpClass::other;
  auto names = mj::primitive_names();
  std::set<std::string> registered(names.begin(), names.end());
  for (auto& [n, c] : want) EXPECT_TRUE(registered.count(n)) << "unknown primitive " << n;
  for (auto& n : names) {
    const OpClass got = mj::primitive(n).op_class;
    std::printf("  %-22s %s\n", n.c_str(), class_name(got));
    auto it = want.find(n);
    const OpClass expect = it == want.end() ? OpClass::other : it->second;
    EXPECT_EQ(class_name(got), std::string(class_name(expect))) << n;
  }
}

const char* cost_name(mj::CostClass c) {
  switch (c) {
    case mj::CostClass::unset: return "unset";
    case mj::CostClass::arithmetic: return "arithmetic";
    case mj::CostClass::transcendental: return "transcendental";
    case mj::CostClass::reduction: return "reduction";
    case mj::CostClass::data_movement: return "data_movement";
    case mj::CostClass::view: return "view";
    case mj::CostClass::custom: return "custom";
  }
  return "?";
}

const char* fusion_name(mj::FusionClass c) {
  switch (c) {
    case mj::FusionClass::unset: return "unset";
    case mj::FusionClass::normal: return "normal";
    case mj::FusionClass::cheap: return "cheap";
    case mj::FusionClass::expensive: return "expensive";
  }
  return "?";
}

TEST(PrimitiveClasses, EveryPrimitiveDeclaresItsCostAndFusionClass) {
  // A primitive registered without a class fails here, naming the primitive and the field.
  for (auto& n : mj::primitive_names()) {
    const mj::Primitive& p = mj::primitive(n);
    EXPECT_NE(p.cost_class, mj::CostClass::unset) << n << ": cost_class is not set";
    EXPECT_NE(p.fusion_class, mj::FusionClass::unset) << n << ": fusion_class is not set";
    if (p.cost_class == mj::CostClass::custom) EXPECT_TRUE(bool(p.cost)) << n << ": cost_class custom without cost";
  }
}

TEST(PrimitiveClasses, EveryPrimitiveHasTheClassesOfItsDefinition) {
  // By hand from each primitive's definition (the compiler's former name lists): fusion
  // duplicates cheap producers and never re-reads expensive ones; cost_analysis counts one
  // transcendental per element of the transcendental functions (XLA's HloCostAnalysis), and
  // nothing for the views.
  std::map<std::string, mj::FusionClass> fusion;
  for (const char* n : {"broadcast_in_dim", "iota", "iota_2x32_shape", "convert_element_type"})
    fusion[n] = mj::FusionClass::cheap;
  for (const char* n : {"exp", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "erf",
                        "erf_inv", "pow", "atan2", "rsqrt", "sqrt", "div", "rem", "threefry2x32", "sinh",
                        "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "cbrt", "erfc", "lgamma",
                        "digamma", "polygamma"})
    fusion[n] = mj::FusionClass::expensive;
  for (const char* n : {"igamma", "igamma_grad_a"}) fusion[n] = mj::FusionClass::expensive;
  std::map<std::string, mj::CostClass> cost;
  for (const char* n : {"exp", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "erf",
                        "erf_inv", "pow", "atan2", "sqrt", "rsqrt", "sinh", "cosh", "asin", "acos", "atan",
                        "asinh", "acosh", "atanh", "cbrt", "erfc", "lgamma", "digamma", "polygamma"})
    cost[n] = mj::CostClass::transcendental;
  for (const char* n : {"igamma", "igamma_grad_a"}) cost[n] = mj::CostClass::transcendental;
  for (const char* n : {"reshape", "squeeze", "expand_dims", "optimization_barrier"}) cost[n] = mj::CostClass::view;
  for (const char* n : {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin"})
    cost[n] = mj::CostClass::reduction;
  for (const char* n : {"scatter", "scatter_mul", "scatter_min", "scatter_max"})
    cost[n] = mj::CostClass::custom;
  for (const char* n : {"reduce_and", "reduce_or", "reduce_xor"}) cost[n] = mj::CostClass::reduction;
  // cumprod/cummax/cummin: one combine per element; cumlogsumexp six (its logaddexp).
  for (const char* n : {"cumprod", "cummax", "cummin", "cumlogsumexp"}) cost[n] = mj::CostClass::custom;
  for (const char* n : {"dot_general", "cumsum", "scatter_add", "scan", "while", "cond", "fusion", "pjit",
                        "closed_call", "checkpoint", "custom_jvp_call", "custom_vjp_call"})
    cost[n] = mj::CostClass::custom;
  for (const char* n : {"reduce_window_sum", "reduce_window_max", "reduce_window_min", "reduce_window",
                        "select_and_scatter_add", "select_and_gather_add"})
    cost[n] = mj::CostClass::custom;  // one flop per window element per output (the body's for reduce_window)
  cost["conv_general_dilated"] = mj::CostClass::custom;  // 2 flops per multiply-add that reads the input
  for (const char* n : {"sort", "top_k"}) cost[n] = mj::CostClass::custom;  // n log n / one compare per element
  // n^3/3, m^2 n, and the factorisations' operation counts (core/primitives/linalg.cc).
  for (const char* n : {"cholesky", "triangular_solve", "lu", "qr", "eigh", "svd"}) cost[n] = mj::CostClass::custom;
  const std::set<std::string> inlined = {"pjit", "closed_call", "checkpoint", "custom_jvp_call",
                                         "custom_vjp_call", "name"};
  const std::set<std::string> never_merged = {"optimization_barrier"};
  for (auto& n : mj::primitive_names()) {
    const mj::Primitive& p = mj::primitive(n);
    auto f = fusion.find(n);
    EXPECT_STREQ(fusion_name(p.fusion_class), fusion_name(f == fusion.end() ? mj::FusionClass::normal : f->second))
        << n;
    // The rest: elementwise arithmetic (1 flop per element) or data movement (bytes only).
    mj::CostClass want = p.op_class == OpClass::elementwise && n != "stop_gradient" ? mj::CostClass::arithmetic
                                                                                     : mj::CostClass::data_movement;
    if (auto c = cost.find(n); c != cost.end()) want = c->second;
    EXPECT_STREQ(cost_name(p.cost_class), cost_name(want)) << n;
    EXPECT_EQ(p.inlined, inlined.count(n) == 1) << n;
    EXPECT_EQ(p.never_merged, never_merged.count(n) == 1) << n;
  }
}

// ---- the fusion primitive -----------------------------------------------------------------------

mj::ClosedJaxprPtr closed(Jaxpr j) {
  auto cj = std::make_shared<mj::ClosedJaxpr>();
  cj->jaxpr = std::make_shared<Jaxpr>(std::move(j));
  return cj;
}

mj::Params fusion_params(Jaxpr body, const std::string& kind = "loop") {
  return mj::Params{{"jaxpr", closed(std::move(body))}, {"kind", kind}, {"name", std::string("fusion.0")}};
}

TEST(FusionPrimitive, PrintsParsesEvaluatesAndChecksOperands) {
  Jaxpr body = passtest::parse("{ lambda ; a:f32[8]. let b:f32[8] = exp a in (b,) }");
  auto cj = mj::make_jaxpr([&](const Array& x) {
    return mj::bind(mj::fusion_p(), {x}, fusion_params(body)).at(0);
  })(mj::ones({8}));
  const std::string text = mj::to_string(cj);
  EXPECT_EQ(text,
            "{ lambda ; a:f32[8]. let\n    b:f32[8] = fusion[\n      jaxpr={ lambda ; c:f32[8]. let d:f32[8] = exp c in (d,) }\n"
            "      kind=loop\n      name=fusion.0\n    ] a\n  in (b,) }");
  EXPECT_EQ(mj::to_string(mj::parse_jaxpr(text)), text);
  // Eager: the body evaluated (exp(1) from libm in double, rounded to f32).
  Array x = mj::ones({8});
  Array y = mj::bind(mj::fusion_p(), {x}, fusion_params(body)).at(0);
  EXPECT_EQ(y.shape(), (mj::Shape{8}));
  EXPECT_EQ(mj::to_xtensor<float>(y)(3), float(std::exp(1.0)));
  // Operands must match the body; the kind is loop or reduction.
  EXPECT_THROW(mj::bind(mj::fusion_p(), {mj::ones({4})}, fusion_params(body)), mj::TypeError);
  EXPECT_THROW(mj::bind(mj::fusion_p(), {x, x}, fusion_params(body)), mj::TypeError);
  EXPECT_THROW(mj::bind(mj::fusion_p(), {mj::lax::device_put(x, mj::MemoryKind::pinned_host)}, fusion_params(body)),
               mj::TypeError);
  EXPECT_THROW(mj::bind(mj::fusion_p(), {x}, fusion_params(body, "map")), mj::ValueError);
  EXPECT_NO_THROW(mj::verify_jaxpr(cj));
  // Declared absences: no JVP, transpose or batching.
  const mj::Primitive& p = mj::fusion_p();
  EXPECT_FALSE(bool(p.jvp));
  EXPECT_NE(p.no_jvp_reason.find("compiler-internal"), std::string::npos);
  EXPECT_FALSE(p.no_transpose_reason.empty());
  EXPECT_FALSE(p.no_batch_reason.empty());
}

TEST(FusionPrimitive, DceDropsUnusedResultsAndPrunesTheBody) {
  Jaxpr body = passtest::parse(
      "{ lambda ; a:f32[4] b:f32[4]. let c:f32[4] = sin a; d:f32[4] = cos b in (c, d) }");
  auto cj = mj::make_jaxpr([&](const Array& x, const Array& y) {
    return mj::bind(mj::fusion_p(), {x, y}, fusion_params(body)).at(1);
  })(mj::ones({4}), mj::ones({4}));
  auto [r, used] = mj::dce_jaxpr(*cj.jaxpr, {true});
  ASSERT_EQ(r.eqns.size(), 1u) << r;
  const Eqn& f = r.eqns[0];
  EXPECT_EQ(f.outputs.size(), 1u);
  EXPECT_EQ(f.inputs.size(), 1u);
  EXPECT_EQ(count_in(f, "sin"), 0);
  EXPECT_EQ(count_in(f, "cos"), 1);
  EXPECT_EQ(used, (std::vector<bool>{false, true}));
}

// ---- the contract (docs/compiler.md, "Fusion"), checked independently of fuse --------------------

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

void check_fusion_body(const Eqn& f) {
  const Jaxpr& b = body_of(f);
  const std::string kind = mj::call_params(f).kind.value();
  SCOPED_TRACE(mj::call_params(f).name.value() + " (" + kind + ")\n" + mj::to_string(b));
  ASSERT_TRUE(b.constvars.empty());
  ASSERT_EQ(b.invars.size(), f.inputs.size());
  ASSERT_EQ(b.outvars.size(), f.outputs.size());
  ASSERT_FALSE(b.eqns.empty());
  // Operands in order of first use; results in program order, each computed in the body.
  std::vector<mj::Var> first_use;
  std::set<mj::Var> seen, defined;
  std::map<mj::Var, size_t> def_at;
  for (size_t i = 0; i < b.eqns.size(); ++i) {
    for (auto& a : b.eqns[i].inputs)
      if (auto* v = std::get_if<mj::Var>(&a))
        if (!defined.count(*v) && seen.insert(*v).second) first_use.push_back(*v);
    for (auto& o : b.eqns[i].outputs) defined.insert(o), def_at[o] = i;
  }
  EXPECT_EQ(first_use, b.invars);
  size_t last = 0;
  for (auto& a : b.outvars) {
    auto v = std::get<mj::Var>(a);
    ASSERT_TRUE(def_at.count(v)) << "a result that is not computed by the body";
    EXPECT_GE(def_at[v], last);
    last = def_at[v];
  }
  // Only fusible equations, no effects, one memory kind.
  const mj::MemoryKind mk = b.eqns.back().outputs[0].aval().memory_kind;
  std::vector<const Eqn*> reductions;
  for (auto& e : b.eqns) {
    EXPECT_NE(e.primitive->op_class, OpClass::other) << e.primitive->name;
    EXPECT_TRUE(e.effects.empty());
    for (auto& o : e.outputs) EXPECT_EQ(o.aval().memory_kind, mk);
    if (e.primitive->op_class == OpClass::reduction) reductions.push_back(&e);
  }
  if (kind == "loop") {
    EXPECT_TRUE(reductions.empty());
    for (auto& a : b.outvars) EXPECT_EQ(mj::atom_aval(a).shape, mj::atom_aval(b.outvars[0]).shape);
    return;
  }
  ASSERT_EQ(kind, "reduction");
  ASSERT_FALSE(reductions.empty());
  const mj::Shape in_space = mj::atom_aval(reductions[0]->inputs[0]).shape;
  const mj::Shape out_space = reductions[0]->outputs[0].aval().shape;
  const auto axes = sorted(mj::reduce_params(*reductions[0]).axes);
  for (auto* r : reductions) {
    EXPECT_EQ(mj::atom_aval(r->inputs[0]).shape, in_space);
    EXPECT_EQ(sorted(mj::reduce_params(*r).axes), axes);
  }
  for (auto& a : b.outvars) EXPECT_EQ(mj::atom_aval(a).shape, out_space);
  // The epilogue (everything downstream of a reduction) is elementwise, and no reduction reads it.
  std::set<mj::Var> after;
  for (auto& e : b.eqns) {
    bool downstream = false;
    for (auto& a : e.inputs)
      if (auto* v = std::get_if<mj::Var>(&a)) downstream |= after.count(*v) > 0;
    if (e.primitive->op_class == OpClass::reduction) {
      EXPECT_FALSE(downstream) << "a reduction of a reduction's result";
      after.insert(e.outputs[0]);
    } else if (downstream) {
      EXPECT_EQ(e.primitive->op_class, OpClass::elementwise) << e.primitive->name;
      for (auto& o : e.outputs) after.insert(o);
    }
  }
}

/// Checks the contract on a fused program: no fusible equation outside a fusion, each fusion
/// well formed, names fusion.0, fusion.1, ... in program order, printing round-trips.
void check_contract(const Jaxpr& j) {
  EXPECT_NO_THROW(mj::verify_jaxpr(j)) << j;
  int next = 0;
  passtest::visit_eqns(j, [&](const Eqn& e, int, bool in_fusion) {
    if (in_fusion) return;
    if (e.primitive->name == "fusion") {
      EXPECT_EQ(mj::call_params(e).name.value(), "fusion." + std::to_string(next++));
      check_fusion_body(e);
    } else {
      EXPECT_EQ(e.primitive->op_class, OpClass::other) << "unfused " << e.primitive->name << "\n" << j;
    }
  });
  if (!j.constvars.empty()) return;
  const std::string text = mj::to_string(j);
  EXPECT_EQ(mj::to_string(mj::parse_jaxpr(text)), text);
}

/// inline_calls + simplify + fuse (the pipeline's order), contract and values checked.
Jaxpr compile_passes(const mj::ClosedJaxpr& cj, const std::string& what, bool specials = true) {
  Jaxpr s = mj::simplify(mj::inline_calls(*cj.jaxpr));
  Jaxpr f = mj::fuse(s);
  SCOPED_TRACE(what);
  check_contract(f);
  passtest::expect_same_values(*cj.jaxpr, f, cj.consts, what, specials);
  return f;
}

std::vector<std::string> kinds(const Jaxpr& j) {
  std::vector<std::string> r;
  for (auto* f : top_fusions(j)) r.push_back(mj::call_params(*f).kind.value());
  return r;
}

// ---- structures -----------------------------------------------------------------------------------

TEST(Fuse, ElementwiseChainIsOneFusion) {
  auto cj = mj::make_jaxpr([](const Array& x, const Array& y) {
    Array v = mj::sin(x);
    v = v * y;
    v = mj::exp(v);
    v = v + 1.0;
    v = mj::tanh(v);
    v = v - y;
    v = mj::abs(v);
    v = mj::sqrt(v);
    v = mj::maximum(v, y);
    return mj::log1p(v);
  })(mj::ones({16}), mj::ones({16}));
  ASSERT_EQ(cj.jaxpr->eqns.size(), 10u) << cj;
  Jaxpr f = compile_passes(cj, "chain of 10");
  ASSERT_EQ(f.eqns.size(), 1u) << f;
  EXPECT_EQ(kinds(f), (std::vector<std::string>{"loop"}));
  EXPECT_EQ(body_of(f.eqns[0]).eqns.size(), 10u);
  EXPECT_EQ(f.eqns[0].outputs.size(), 1u);
  EXPECT_EQ(f.eqns[0].inputs.size(), 2u);
}

TEST(Fuse, LoneElementwiseIsAOneEquationFusion) {
  auto cj = mj::make_jaxpr([](const Array& x) { return mj::matmul(mj::exp(x), x); })(mj::ones({3, 3}));
  Jaxpr f = compile_passes(cj, "lone exp");
  ASSERT_EQ(f.eqns.size(), 2u) << f;
  EXPECT_EQ(f.eqns[0].primitive->name, "fusion");
  EXPECT_EQ(body_of(f.eqns[0]).eqns.size(), 1u);
  EXPECT_EQ(f.eqns[1].primitive->name, "dot_general");
}

// Adam (torch defaults, one leaf): the new m, v and parameter are one loop fusion, 3 results.
TEST(Fuse, AdamUpdateOfOneLeafIsOneFusionWithThreeResults) {
  auto adam = [](const Array& p, const Array& g, const Array& m, const Array& v, const Array& step) {
    const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    Array m1 = b1 * m + (1 - b1) * g;
    Array v1 = b2 * v + (1 - b2) * g * g;
    Array t = mj::lax::convert_element_type(step, mj::f32);
    Array c1 = 1.0 - mj::lax::pow(mj::lax::full({}, b1, mj::f32), t);
    Array c2 = 1.0 - mj::lax::pow(mj::lax::full({}, b2, mj::f32), t);
    Array p1 = p - lr * (m1 / c1) / (mj::sqrt(v1 / c2) + eps);
    return std::make_tuple(p1, m1, v1);
  };
  Array z = mj::ones({32});
  auto cj = mj::make_jaxpr(adam)(z, z, z, z, mj::scalar(3, mj::i32));
  Jaxpr f = compile_passes(cj, "adam");
  ASSERT_EQ(top_fusions(f).size(), 1u) << f;
  ASSERT_EQ(f.eqns.size(), 1u) << f;
  const Eqn& k = f.eqns[0];
  EXPECT_EQ(mj::call_params(k).kind.value(), "loop");
  EXPECT_EQ(k.outputs.size(), 3u);
  // Results in program order: m1, v1, then the parameter.
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(std::get<mj::Var>(f.outvars[(i + 1) % 3]) == k.outputs[i]) << f;
  EXPECT_EQ(count_in(k, "sqrt"), 1);
}

TEST(Fuse, SoftmaxAndLogSoftmax) {
  Array x = mj::ones({4, 6});
  // softmax: max (reduction), exp(x - max) (loop), sum (reduction), exp / sum (loop). exp's
  // value feeds both the sum and the division: an extra result of the sum's fusion would close a
  // cycle through the division's broadcast, and exp is not duplicated (expensive).
  Jaxpr s = compile_passes(mj::make_jaxpr([](const Array& v) { return mj::softmax(v); })(x), "softmax");
  EXPECT_EQ(kinds(s), (std::vector<std::string>{"reduction", "loop", "reduction", "loop"})) << s;
  EXPECT_EQ(count_eqns(s, "exp"), 1);
  // log_softmax: the log of the sum is the epilogue of the sum's reduction fusion, whose prologue
  // is the exp.
  Jaxpr l = compile_passes(mj::make_jaxpr([](const Array& v) { return mj::log_softmax(v); })(x), "log_softmax");
  ASSERT_EQ(kinds(l), (std::vector<std::string>{"reduction", "loop", "reduction", "loop"})) << l;
  const Eqn& red = *top_fusions(l)[2];
  EXPECT_EQ(count_in(red, "exp"), 1);
  EXPECT_EQ(count_in(red, "reduce_sum"), 1);
  EXPECT_EQ(count_in(red, "log"), 1);
  EXPECT_EQ(red.outputs[0].aval().shape, (mj::Shape{4}));
}

// Two reductions of one operand shape and axes meet in an elementwise epilogue: one kernel.
TEST(Fuse, VarianceIsOneReductionFusionWithTwoReductions) {
  auto cj = mj::make_jaxpr([](const Array& v) {
    Array s1 = mj::sum(v, 1), s2 = mj::sum(v * v, 1);
    return s2 / 6.0 - (s1 / 6.0) * (s1 / 6.0);
  })(mj::ones({4, 6}));
  Jaxpr f = compile_passes(cj, "variance");
  ASSERT_EQ(f.eqns.size(), 1u) << f;
  EXPECT_EQ(kinds(f), (std::vector<std::string>{"reduction"}));
  EXPECT_EQ(count_in(f.eqns[0], "reduce_sum"), 2);
}

TEST(Fuse, ScanBodyIsFused) {
  auto cj = mj::make_jaxpr([](const Array& c0, const Array& xs) {
    return mj::scan([](const Array& c, const Array& x) {
      Array n = mj::tanh(c * x + 0.5) * 0.9 - mj::sin(x);
      return std::pair{n, n * 2.0};
    }, c0, xs);
  })(mj::ones({8}), mj::ones({5, 8}));
  Jaxpr f = compile_passes(cj, "scan body");
  ASSERT_EQ(f.eqns.size(), 1u) << f;
  ASSERT_EQ(f.eqns[0].primitive->name, "scan");
  const Jaxpr& body = *mj::subjaxprs(f.eqns[0]).at(0).jaxpr->jaxpr;
  ASSERT_EQ(body.eqns.size(), 1u) << body;
  EXPECT_EQ(body.eqns[0].primitive->name, "fusion");
  EXPECT_EQ(body.eqns[0].outputs.size(), 2u);  // the new carry and the y (multi-output)
}

TEST(Fuse, DevicePutSplitsTheChain) {
  auto cj = mj::make_jaxpr([](const Array& x) {
    Array h = mj::lax::device_put(mj::exp(x) * 2.0, mj::MemoryKind::pinned_host);
    return mj::lax::device_put(h, mj::MemoryKind::device) + 1.0;
  })(mj::ones({8}));
  Jaxpr f = compile_passes(cj, "device_put");
  ASSERT_EQ(top_fusions(f).size(), 2u) << f;
  EXPECT_EQ(count_eqns(f, "device_put"), 2);
  // And on the host: operations in pinned_host memory fuse among themselves only.
  auto hj = mj::make_jaxpr([](const Array& x) {
    Array h = mj::lax::device_put(x, mj::MemoryKind::pinned_host);
    return std::pair{mj::sin(h) * mj::cos(h), mj::exp(x)};
  })(mj::ones({8}));
  Jaxpr hf = compile_passes(hj, "host kinds");
  ASSERT_EQ(top_fusions(hf).size(), 2u) << hf;
}

TEST(Fuse, ExpensiveProducerReadThroughABroadcastIsNotFused) {
  auto cj = mj::make_jaxpr([](const Array& x, const Array& w) {
    return mj::lax::broadcast_in_dim(mj::exp(x), {5, 8}, {1}) * w;
  })(mj::ones({8}), mj::ones({5, 8}));
  Jaxpr f = compile_passes(cj, "exp through broadcast");
  ASSERT_EQ(top_fusions(f).size(), 2u) << f;
  EXPECT_EQ(count_in(*top_fusions(f)[0], "exp"), 1);
  EXPECT_EQ(count_in(*top_fusions(f)[1], "exp"), 0);
  // Read once per element (a transpose), the same exp fuses.
  auto tj = mj::make_jaxpr([](const Array& x, const Array& w) {
    return mj::lax::transpose(mj::exp(x), {1, 0}) * w;
  })(mj::ones({8, 5}), mj::ones({5, 8}));
  EXPECT_EQ(top_fusions(compile_passes(tj, "exp through transpose")).size(), 1u);
  // A cheap producer (mul) read through the broadcast fuses.
  auto cj2 = mj::make_jaxpr([](const Array& x, const Array& w) {
    return mj::lax::broadcast_in_dim(x * 3.0, {5, 8}, {1}) * w;
  })(mj::ones({8}), mj::ones({5, 8}));
  EXPECT_EQ(top_fusions(compile_passes(cj2, "mul through broadcast")).size(), 1u);
}

TEST(Fuse, CheapProducerIsDuplicatedIntoEachConsumer) {
  // The broadcast feeds two kernels that cannot merge (a dot between them): each gets a copy.
  auto cj = mj::make_jaxpr([](const Array& b, const Array& w) {
    Array bb = mj::lax::broadcast_in_dim(b, {4, 4}, {1});
    Array h = mj::matmul(mj::tanh(w + bb), w);
    return mj::exp(h) * bb;
  })(mj::ones({4}), mj::ones({4, 4}));
  Jaxpr f = compile_passes(cj, "duplicated broadcast");
  ASSERT_EQ(top_fusions(f).size(), 2u) << f;
  for (auto* k : top_fusions(f)) EXPECT_EQ(count_in(*k, "broadcast_in_dim"), 1);
}

TEST(Fuse, EffectsAndBarriersAreNotCrossed) {
  Jaxpr j = passtest::parse(
      "{ lambda ; a:f32[4]. let b:f32[4] = sin a; c:f32[4] = test_jit_io b; d:f32[4] = cos c; "
      "e:f32[4] = optimization_barrier d; f:f32[4] = exp e; g:f32[4] = test_jit_io f in (g,) }");
  Jaxpr f = mj::fuse(j);
  check_contract(f);
  passtest::expect_same_values(j, f, {}, "effects");
  EXPECT_EQ(top_fusions(f).size(), 3u) << f;
  std::vector<std::string> order;
  for (auto& e : f.eqns) order.push_back(e.primitive->name);
  EXPECT_EQ(order, (std::vector<std::string>{"fusion", "test_jit_io", "fusion", "optimization_barrier",
                                             "fusion", "test_jit_io"}));
}

// An extra result needed by an earlier equation: the fusion sits at its group's last equation
// and the reader moves after it; effects keep their order; an extra result that would need an
// effect to run both before and after the group is refused.
TEST(Fuse, PlacementKeepsDependenciesAndEffectOrder) {
  Jaxpr j = passtest::parse(
      "{ lambda ; a:f32[4,4] w:f32[4,4]. let b:f32[4,4] = exp a; c:f32[4,4] = dot_general["
      "dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] b w; "
      "d:f32[4,4] = mul b 2.0:f32[] in (c, d) }");
  Jaxpr f = mj::fuse(j);
  check_contract(f);
  passtest::expect_same_values(j, f, {}, "placement");
  ASSERT_EQ(f.eqns.size(), 2u) << f;
  EXPECT_EQ(f.eqns[0].primitive->name, "fusion");
  EXPECT_EQ(f.eqns[0].outputs.size(), 2u);
  EXPECT_EQ(f.eqns[1].primitive->name, "dot_general");

  Jaxpr e = passtest::parse(
      "{ lambda ; a:f32[4]. let b:f32[4] = exp a; c:f32[4] = test_jit_io b; d:f32[4] = test_jit_io a; "
      "g:f32[4] = mul b 2.0:f32[] in (g, c, d) }");
  Jaxpr fe = mj::fuse(e);
  check_contract(fe);
  std::vector<std::string> order;
  for (auto& q : fe.eqns) order.push_back(q.primitive->name);
  EXPECT_EQ(order, (std::vector<std::string>{"fusion", "test_jit_io", "test_jit_io"})) << fe;
  EXPECT_TRUE(std::get<mj::Var>(fe.eqns[1].inputs[0]) == fe.eqns[0].outputs[0]) << fe;

  // The second effect feeds the group; the first reads exp: exp cannot be the group's result
  // (the first effect would have to run after the group and before the second).
  Jaxpr c = passtest::parse(
      "{ lambda ; a:f32[4]. let b:f32[4] = exp a; c:f32[4] = test_jit_io b; d:f32[4] = test_jit_io a; "
      "g:f32[4] = mul b d in (g, c) }");
  Jaxpr fc = mj::fuse(c);
  check_contract(fc);
  passtest::expect_same_values(c, fc, {}, "effect cycle");
  EXPECT_EQ(top_fusions(fc).size(), 2u) << fc;
}

// grad of a checkpoint with prevent_cse: after inline + simplify + fuse the barrier is still
// there, and the recomputed sin(sin(x)) stays apart from the forward one.
TEST(Fuse, CheckpointPreventCseSurvivesTheCompiler) {
  auto f = mj::checkpoint([](const Array& v) { return mj::sin(mj::sin(v)); });
  auto cj = mj::make_jaxpr([&](const Array& x) {
    return mj::value_and_grad([&](const Array& w) { return mj::sum(f(w)); })(x);
  })(mj::ones({4}));
  Jaxpr r = compile_passes(cj, "checkpoint prevent_cse");
  EXPECT_EQ(count_eqns(r, "optimization_barrier"), 1) << r;
  // Forward: sin, sin; backward: sin of the barrier's output (recomputed), by hand from the
  // derivative cos(sin(x)) cos(x).
  EXPECT_EQ(count_eqns(r, "sin"), 3) << r;
  EXPECT_EQ(count_eqns(r, "checkpoint"), 0) << r;
}

TEST(Fuse, NamesFollowProgramOrderThroughBodies) {
  auto cj = mj::make_jaxpr([](const Array& x, const Array& xs) {
    Array a = mj::exp(x);
    auto [c, ys] = mj::scan([](const Array& c, const Array& r) { return std::pair{mj::sin(c) * r, c}; }, a, xs);
    return mj::matmul(ys, mj::reshape(c, {8, 1})) + 1.0;
  })(mj::ones({8}), mj::ones({3, 8}));
  Jaxpr f = compile_passes(cj, "names");  // check_contract checks fusion.0 (exp), .1 (body), .2
  EXPECT_EQ(count_eqns(f, "fusion"), 3) << f;
}

// Random numbers: threefry2x32 (4 operands, 2 results), shifts, iota_2x32_shape, and the
// bitcast to f32 (class other) between kernels; the key is an integer input.
TEST(Fuse, RandomNormalSamples) {
  auto cj = mj::make_jaxpr([](const Array& key) {
    auto ks = mj::random::split(key);
    return mj::random::normal(mj::reshape(mj::lax::slice(ks, {1, 0}, {2, 2}), {2}), {6, 5}) * 2.0 +
           mj::random::uniform(key, {6, 5});
  })(mj::random::PRNGKey(3));
  Jaxpr f = mj::fuse(mj::simplify(mj::inline_calls(*cj.jaxpr)));
  check_contract(f);
  EXPECT_GE(count_eqns(f, "threefry2x32"), 3) << f;
  std::vector<Array> args{mj::random::PRNGKey(11)};
  passtest::expect_bitwise_equal(mj::eval_jaxpr(*cj.jaxpr, cj.consts, args), mj::eval_jaxpr(f, cj.consts, args),
                                 "random");
  // Each threefry kernel computes its own counters (iota_2x32_shape is cheap: duplicated, not
  // shared), and the two f32 chains after the bitcasts (uniform's and normal's) are one kernel.
  int threefry_kernels = 0;
  for (auto* k : top_fusions(f))
    if (count_in(*k, "threefry2x32")) {
      ++threefry_kernels;
      EXPECT_EQ(count_in(*k, "iota_2x32_shape"), 1);
    }
  EXPECT_EQ(threefry_kernels, 3) << f;
  ASSERT_EQ(f.eqns.back().primitive->name, "fusion");
  EXPECT_EQ(count_in(f.eqns.back(), "erf_inv"), 1) << f;
  EXPECT_EQ(count_in(f.eqns.back(), "max"), 2) << f;
}

// The MLP sample's training step: value_and_grad of its loss (dots, log_softmax, one_hot, mean
// and their backward pass), every fusible equation fused, values bitwise unchanged.
TEST(Fuse, MlpTrainingStep) {
  fmnist::MLP params = fmnist::init_mlp(7, 32);
  Array x = passtest::random_array({8, 784}, 5, mj::f32, false);
  Array y = mj::array({0, 3, 9, 1, 1, 4, 7, 2}, {8}, mj::i32);
  auto step = [](const fmnist::MLP& p, const Array& xb, const Array& yb) {
    return mj::value_and_grad([&](const fmnist::MLP& q) { return fmnist::loss_fn(q, xb, yb); })(p);
  };
  auto cj = mj::make_jaxpr(step)(params, x, y);
  Jaxpr s = mj::simplify(mj::inline_calls(*cj.jaxpr));
  Jaxpr f = mj::fuse(s);
  check_contract(f);
  std::vector<Array> args = mj::tree_flatten(params);
  args.push_back(x);
  args.push_back(y);
  passtest::expect_bitwise_equal(mj::eval_jaxpr(*cj.jaxpr, cj.consts, args), mj::eval_jaxpr(f, cj.consts, args),
                                 "mlp step");
  const int dots = count_eqns(s, "dot_general");
  EXPECT_EQ(dots, 8) << s;  // forward 3; backward: 3 weight gradients, 2 input gradients (not x's)
  EXPECT_EQ(count_eqns(f, "dot_general"), dots);
  // Fewer kernels than fusible equations (they were fused), and no fusion of a lone reduction
  // next to its elementwise producers.
  int fusible = 0;
  for (auto& e : s.eqns) fusible += e.primitive->op_class != OpClass::other;
  EXPECT_LT(int(top_fusions(f).size()) * 2, fusible) << f;
  std::printf("mlp step: %zu equations after simplify, %d fusible, %zu fusions\n", s.eqns.size(), fusible,
              top_fusions(f).size());
}

}  // namespace
