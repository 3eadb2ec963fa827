// Tests of mj::checkpoint / remat and checkpoint_name: printing, eager values, gradients under
// every policy (plain, nested, scan body) x (grad, value_and_grad, grad-of-grad, vmap of grad).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <minijax/minijax.h>
#include <string>
#include <vector>

#include "values.h"

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;

using minijax_test::vals;

void expect_close(const Array& got, const Array& want, float tol = 2e-6f) {
  ASSERT_EQ(got.shape(), want.shape());
  auto g = vals(got), w = vals(want);
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], w[i], tol * (1.f + std::fabs(w[i]))) << "element " << i;
}

// The function under test: a matmul (dot without batch dims), a batched dot_general, two named
// values and a few nonlinearities, so every policy takes different decisions.
Array body(const Array& w, const Array& x) {
  Array h = mj::checkpoint_name(mj::matmul(w, x), "h");                       // [3]
  Array a = mj::checkpoint_name(mj::sin(h), "a");                             // [3]
  Array wb = mj::reshape(w, {1, 3, 3}), xb = mj::reshape(x, {1, 3, 1});
  Array z = mj::lax::dot_general(wb, xb, {{2}, {1}, {0}, {0}});               // [1,3,1], batch dims
  return mj::tanh(a * x) + h * h * 0.1f + mj::cos(mj::reshape(z, {3}));
}

Array loss_plain(const Array& w, const Array& x) { return mj::sum(body(w, x)); }

struct NamedPolicy {
  std::string label;
  std::function<mj::PolicyPtr()> make;
};

std::vector<NamedPolicy> all_policies() {
  return {
      {"None", [] { return mj::PolicyPtr(); }},
      {"everything_saveable", [] { return cp::everything_saveable(); }},
      {"nothing_saveable", [] { return cp::nothing_saveable(); }},
      {"dots_saveable", [] { return cp::dots_saveable(); }},
      {"dots_with_no_batch_dims_saveable", [] { return cp::dots_with_no_batch_dims_saveable(); }},
      {"offload_dot_with_no_batch_dims",
       [] { return cp::offload_dot_with_no_batch_dims("device", "pinned_host"); }},
      {"save_only_these_names", [] { return cp::save_only_these_names({"h"}); }},
      {"save_any_names_but_these", [] { return cp::save_any_names_but_these({"h"}); }},
      {"save_anything_except_these_names", [] { return cp::save_anything_except_these_names({"a"}); }},
      {"save_and_offload_only_these_names",
       [] { return cp::save_and_offload_only_these_names({"h"}, {"a"}, "device", mj::MemoryKind::pinned_host); }},
      {"save_from_both_policies",
       [] { return cp::save_from_both_policies(cp::dots_saveable(), cp::save_only_these_names({"a"})); }},
      {"custom", [] {
         return cp::custom("save_sin", [](const mj::Primitive& p, const std::vector<mj::ShapedArray>&,
                                          const mj::Params&) -> mj::PolicyDecision {
           if (p.name == "sin") return mj::Saveable{};
           if (p.name == "cos") return mj::Offloadable{mj::MemoryKind::device, mj::MemoryKind::pinned_host};
           return mj::Recompute{};
         });
       }},
  };
}

Array W() { return mj::reshape(mj::array({0.3f, -0.2f, 0.5f, 0.1f, 0.4f, -0.6f, 0.7f, 0.2f, -0.1f}), {3, 3}); }
Array X() { return mj::array({0.5f, -1.0f, 1.5f}); }

// ---------------------------------------------------------------------------------------------
TEST(Checkpoint, MakeJaxprPrintsLikeJax) {
  auto f = mj::checkpoint([](const Array& v) { return mj::sin(mj::sin(v)); });
  std::string s = mj::to_string(mj::make_jaxpr(f)(X()));
  EXPECT_NE(s.find("checkpoint["), std::string::npos) << s;
  EXPECT_NE(s.find("differentiated=False"), std::string::npos) << s;
  EXPECT_NE(s.find("policy=None"), std::string::npos) << s;
  EXPECT_NE(s.find("prevent_cse=True"), std::string::npos) << s;
  EXPECT_NE(s.find("jaxpr={ lambda ; c:f32[3]. let d:f32[3] = sin c; e:f32[3] = sin d in (e,) }"),
            std::string::npos)
      << s;
  // Params sorted by name, as JAX prints them.
  EXPECT_LT(s.find("differentiated"), s.find("jaxpr={"));
  EXPECT_LT(s.find("policy="), s.find("prevent_cse"));
}

TEST(Checkpoint, PolicyAndPreventCsePrinted) {
  auto f = mj::remat([](const Array& v) { return mj::sin(v); },
                     {.policy = cp::save_only_these_names({"x", "y"}), .prevent_cse = false});
  std::string s = mj::to_string(mj::make_jaxpr(f)(X()));
  EXPECT_NE(s.find("policy=save_only_these_names('x', 'y')"), std::string::npos) << s;
  EXPECT_NE(s.find("prevent_cse=False"), std::string::npos) << s;
}

TEST(Checkpoint, EagerValueAndClosure) {
  Array c = mj::array({1.f, 2.f, 3.f});
  auto f = mj::checkpoint([&](const Array& v) { return mj::sin(v) * c; });
  Array y = f(X());
  auto xv = vals(X());
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(vals(y)[size_t(i)], std::sin(xv[size_t(i)]) * float(i + 1), 1e-6);
  // The closed-over value is a leading operand of the equation.
  auto j = mj::make_jaxpr(f)(X());
  ASSERT_EQ(j.jaxpr->eqns.size(), 1u);
  EXPECT_EQ(j.jaxpr->eqns[0].inputs.size(), 2u);
}

TEST(Checkpoint, PytreeArgumentsAndOutputs) {
  auto f = mj::checkpoint([](const std::pair<Array, Array>& p) {
    return std::vector<Array>{p.first * p.second, mj::sin(p.first)};
  });
  auto loss = [&](const Array& a, const Array& b) {
    auto o = f(std::pair{a, b});
    return mj::sum(o[0]) + mj::sum(o[1]);
  };
  auto [ga, gb] = mj::grad(loss, mj::argnums<0, 1>)(X(), mj::array({2.f, 3.f, 4.f}));
  // d/da = b + cos(a); d/db = a.
  auto xv = vals(X());
  std::vector<float> b{2, 3, 4};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(vals(ga)[i], b[i] + std::cos(xv[i]), 1e-6);
    EXPECT_NEAR(vals(gb)[i], xv[i], 1e-6);
  }
}

TEST(Checkpoint, StaticArguments) {
  // An int is always static; an Array listed in static_argnums is passed untraced, so f may
  // read its value.
  auto f = mj::checkpoint(
      [](const Array& v, int power, const Array& scale) {
        float s = scale.item<float>();
        Array r = v;
        for (int i = 1; i < power; ++i) r = r * v;
        return r * s;
      },
      {.static_argnums = {2}});
  Array x = mj::array({2.f, 3.f});
  EXPECT_EQ(vals(f(x, 3, mj::scalar(0.5f, mj::f32))), (std::vector<float>{4.f, 13.5f}));
  auto g = mj::grad([&](const Array& v) { return mj::sum(f(v, 2, mj::scalar(2.f, mj::f32))); })(x);
  // d/dv 2 v^2 = 4 v.
  EXPECT_EQ(vals(g), (std::vector<float>{8.f, 12.f}));
  auto bad = mj::checkpoint([](const Array& v) { return v; }, {.static_argnums = {3}});
  EXPECT_THROW(bad(x), mj::ValueError);
}

TEST(Checkpoint, TracedValueAsBoolIsConcretizationError) {
  auto f = mj::checkpoint([](const Array& v) { return v.item<float>() > 0 ? v : -v; });
  EXPECT_THROW(f(mj::scalar(1.f, mj::f32)), mj::ConcretizationError);
}

TEST(CheckpointName, IdentityPrintedAndErrors) {
  Array x = X();
  EXPECT_EQ(vals(mj::checkpoint_name(x, "n")), vals(x));
  std::string s = mj::to_string(mj::make_jaxpr([](const Array& v) { return mj::checkpoint_name(v, "save_remat"); })(x));
  EXPECT_NE(s.find("name[name=save_remat]"), std::string::npos) << s;
  try {
    mj::checkpoint_name(Array(), "my_value");
    FAIL() << "expected TypeError";
  } catch (const mj::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("my_value"), std::string::npos) << e.what();
  }
  // Under grad the tangent passes through: d/dx sum(name(x)^2) = 2x.
  auto g = mj::grad([](const Array& v) { Array n = mj::checkpoint_name(v, "n"); return mj::sum(n * n); })(x);
  auto xv = vals(x);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(vals(g)[i], 2 * xv[i], 1e-6);
  // vmap: the name stays on the batched value.
  auto b = mj::vmap([](const Array& v) { return mj::checkpoint_name(v * 2.f, "n"); })(W());
  expect_close(b, W() * 2.f);
}

TEST(Checkpoint, HandDerivedGradient) {
  // f(x) = sin(sin(x)), f'(x) = cos(sin x) cos x, under every policy.
  for (auto& np : all_policies()) {
    auto f = mj::checkpoint([](const Array& v) { return mj::sin(mj::sin(v)); }, {.policy = np.make()});
    auto g = mj::grad([&](const Array& v) { return mj::sum(f(v)); })(X());
    auto xv = vals(X());
    for (size_t i = 0; i < 3; ++i)
      EXPECT_NEAR(vals(g)[i], std::cos(std::sin(xv[i])) * std::cos(xv[i]), 1e-6) << np.label;
  }
}

// ---- every policy x {plain, nested, scan body} x {grad, value_and_grad, grad-of-grad, vmap} ----

enum class Ctx { plain, nested, scan_body };

std::function<Array(const Array&, const Array&)> make_loss(Ctx ctx, mj::PolicyPtr policy) {
  switch (ctx) {
    case Ctx::plain:
      return [policy](const Array& w, const Array& x) {
        return mj::sum(mj::checkpoint(body, {.policy = policy})(w, x));
      };
    case Ctx::nested:
      // The inner checkpoint (its own policy: nothing_saveable) inside the outer one.
      return [policy](const Array& w, const Array& x) {
        auto inner = mj::checkpoint(body, {.policy = cp::nothing_saveable()});
        auto outer = mj::checkpoint([&](const Array& w2, const Array& x2) { return mj::sin(inner(w2, x2)) + x2; },
                                    {.policy = policy});
        return mj::sum(outer(w, x));
      };
    case Ctx::scan_body:
      return [policy](const Array& w, const Array& x) {
        auto step = mj::checkpoint(
            [&](const Array& c, const Array& xi) {
              Array y = body(w, c) * 0.5f + xi;
              return std::pair{y, mj::sum(y)};
            },
            {.policy = policy});
        Array xs = mj::stack({x, x * 0.5f});
        auto [c, ys] = mj::scan([&](const Array& c, const Array& xi) { return step(c, xi); }, x, xs);
        return mj::sum(c) + mj::sum(ys);
      };
  }
  return {};
}

// The same program without any checkpoint: the reference gradients.
std::function<Array(const Array&, const Array&)> make_reference(Ctx ctx) {
  switch (ctx) {
    case Ctx::plain: return loss_plain;
    case Ctx::nested:
      return [](const Array& w, const Array& x) { return mj::sum(mj::sin(body(w, x)) + x); };
    case Ctx::scan_body:
      return [](const Array& w, const Array& x) {
        Array xs = mj::stack({x, x * 0.5f});
        auto [c, ys] = mj::scan(
            [&](const Array& c, const Array& xi) {
              Array y = body(w, c) * 0.5f + xi;
              return std::pair{y, mj::sum(y)};
            },
            x, xs);
        return mj::sum(c) + mj::sum(ys);
      };
  }
  return {};
}

class PolicyGrid : public ::testing::TestWithParam<std::tuple<int, Ctx>> {};

TEST_P(PolicyGrid, GradientsEqualNoCheckpoint) {
  auto [pi, ctx] = GetParam();
  NamedPolicy np = all_policies()[size_t(pi)];
  SCOPED_TRACE(np.label);
  auto loss = make_loss(ctx, np.make());
  auto ref = make_reference(ctx);
  Array w = W(), x = X();
  // grad w.r.t. both arguments.
  auto [gw, gx] = mj::grad(loss, mj::argnums<0, 1>)(w, x);
  auto [rw, rx] = mj::grad(ref, mj::argnums<0, 1>)(w, x);
  expect_close(gw, rw);
  expect_close(gx, rx);
  // value_and_grad.
  auto [v, g] = mj::value_and_grad(loss, mj::argnums<1>)(w, x);
  expect_close(v, ref(w, x));
  expect_close(g, rx);
  // grad of grad: d/dx sum(d loss/dx).
  auto gg = mj::grad([&](const Array& xx) { return mj::sum(mj::grad(loss, mj::argnums<1>)(w, xx)); })(x);
  auto rg = mj::grad([&](const Array& xx) { return mj::sum(mj::grad(ref, mj::argnums<1>)(w, xx)); })(x);
  expect_close(gg, rg, 1e-5f);
  // vmap of grad over a batch of x.
  Array xs = mj::stack({x, x * 0.5f, x * -1.f, x + 0.25f});
  auto vg = mj::vmap([&](const Array& xx) { return mj::grad(loss, mj::argnums<1>)(w, xx); })(xs);
  auto vr = mj::vmap([&](const Array& xx) { return mj::grad(ref, mj::argnums<1>)(w, xx); })(xs);
  expect_close(vg, vr);
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, PolicyGrid,
                         ::testing::Combine(::testing::Range(0, 12),
                                            ::testing::Values(Ctx::plain, Ctx::nested, Ctx::scan_body)));

// Under grad(jit(f)) a checkpoint inside the jitted function applies its own policy, as without
// jit: the call's partial evaluation passes no enclosing policy down (it used to pass
// everything_saveable, which kept cos(x) and cos(sin(x)) where nothing_saveable keeps only x, and
// kept an offloaded value on the device).
TEST(CheckpointUnderJit, TheCheckpointsOwnPolicyDecidesWhatIsSaved) {
  Array x = mj::ones({3});
  auto sin_sin = [](const Array& v) { return mj::sum(mj::sin(mj::sin(v))); };
  auto f = mj::checkpoint(sin_sin, {.policy = cp::nothing_saveable()});
  mj::SavedResiduals plain = mj::saved_residuals(f, x), jitted = mj::saved_residuals(mj::jit(f), x);
  ASSERT_EQ(plain.size(), 1u);
  ASSERT_EQ(jitted.size(), 1u) << jitted;
  EXPECT_EQ(jitted.begin()->placement, mj::ResidualPlacement::forwarded) << jitted;
  auto named = [](const Array& v) { return mj::sum(mj::sin(mj::checkpoint_name(mj::sin(v), "s"))); };
  auto g = mj::checkpoint(named, {.policy = cp::save_and_offload_only_these_names({}, {"s"}, "device", "pinned_host")});
  int host = 0;
  for (const auto& r : mj::saved_residuals(mj::jit(g), x)) host += r.memory_kind == mj::MemoryKind::pinned_host;
  EXPECT_EQ(host, 1) << mj::saved_residuals(mj::jit(g), x);
  // The gradient is unchanged: cos(sin(1)) cos(1) per element.
  Array dg = mj::grad(mj::jit(g))(x);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(dg.data<float>()[i], std::cos(std::sin(1.0)) * std::cos(1.0), 1e-6);
}

}  // namespace
