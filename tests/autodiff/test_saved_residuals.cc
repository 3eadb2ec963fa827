// Tests of saved_residuals and of the seed case (grad of scan of an offloading checkpoint):
// gradients under several remat choices and the residual list (placement, memory kind, name).
#include <gtest/gtest.h>

#include <cmath>
#include <minijax/minijax.h>
#include <sstream>

#include "values.h"

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;

using minijax_test::vals;

// docs/cases/seed-offload-in-scan.md: step(y) = sin(name(sin(y), "save_remat"));
// loss = sum(scan carry).
std::pair<Array, mj::None> step0(const Array& y, const Array&) {
  Array a = mj::checkpoint_name(mj::sin(y), "save_remat");
  return {mj::sin(a), mj::None{}};
}

mj::PolicyPtr seed_policy() {
  return cp::save_and_offload_only_these_names({}, {"save_remat"}, "device", "pinned_host");
}

// d/dp of sin^4 (four nested sines, two steps): product of cos at each stage, by hand.
float seed_expected() {
  double v = 1.0, d = 1.0;
  for (int i = 0; i < 4; ++i) {
    d *= std::cos(v);
    v = std::sin(v);
  }
  return float(d);
}

TEST(SeedOffloadInScan, GradientUnderEveryVariant) {
  EXPECT_NEAR(seed_expected(), 0.20593520f, 1e-7f);
  Array params = mj::ones({3}, mj::f32), xs = mj::ones({2, 3}, mj::f32);
  auto with = [&](auto step) {
    return [=](const Array& p) { return mj::sum(mj::scan(step, p, xs).first); };
  };
  auto offload = with(mj::checkpoint(step0, {.policy = seed_policy()}));
  auto everything = with(mj::checkpoint(step0, {.policy = cp::everything_saveable()}));
  auto plain = with(step0);
  auto whole = mj::checkpoint([&](const Array& p) { return mj::sum(mj::scan(step0, p, xs).first); },
                              {.policy = seed_policy()});
  for (auto g : {mj::jit(mj::grad(offload))(params), mj::grad(everything)(params), mj::grad(plain)(params),
                 mj::grad(whole)(params), mj::grad(offload)(params)})
    for (float v : vals(g)) EXPECT_NEAR(v, seed_expected(), 1e-6f);
}

TEST(SeedOffloadInScan, SavedResidualsTwoStacked) {
  Array params = mj::ones({3}, mj::f32), xs = mj::ones({2, 3}, mj::f32);
  auto step = mj::checkpoint(step0, {.policy = seed_policy()});
  auto loss = [&](const Array& p) { return mj::sum(mj::scan(step, p, xs).first); };
  mj::SavedResiduals rs = mj::saved_residuals(loss, params);
  ASSERT_EQ(rs.size(), 2u) << rs;
  int host = 0, dev = 0;
  for (auto& r : rs) {
    EXPECT_EQ(r.aval.shape, (mj::Shape{2, 3}));
    EXPECT_EQ(r.placement, mj::ResidualPlacement::stacked);
    EXPECT_EQ(r.bytes, 24);
    if (r.memory_kind == mj::MemoryKind::pinned_host) {
      ++host;
      EXPECT_EQ(r.name, "save_remat");
    } else {
      ++dev;
      EXPECT_EQ(r.name, "");  // the carry y: the policy is never asked about inputs
      EXPECT_NE(r.description.find("carry"), std::string::npos) << r;
    }
  }
  EXPECT_EQ(host, 1);
  EXPECT_EQ(dev, 1);
  std::ostringstream os;
  os << rs;
  EXPECT_NE(os.str().find("f32[2,3] stacked pinned_host 24 bytes named 'save_remat'"), std::string::npos) << os.str();
}

TEST(SavedResiduals, SimpleFunctions) {
  Array x = mj::array({0.1f, 0.2f, 0.3f, 0.4f});
  // sin(sin(x)): direct linearize keeps cos(x) and cos(sin(x)), 16 bytes each.
  auto rs = mj::saved_residuals([](const Array& v) { return mj::sum(mj::sin(mj::sin(v))); }, x);
  ASSERT_EQ(rs.size(), 2u) << rs;
  for (auto& r : rs) {
    EXPECT_EQ(r.made_by, "cos");
    EXPECT_EQ(r.bytes, 16);
    EXPECT_EQ(r.placement, mj::ResidualPlacement::computed);
  }
  // x * y: each factor is the other's residual, forwarded from the arguments.
  auto rp = mj::saved_residuals([](const Array& a, const Array& b) { return mj::sum(a * b); }, x, x * 2.f);
  ASSERT_EQ(rp.size(), 2u) << rp;
  std::vector<int> argsseen;
  for (auto& r : rp) {
    EXPECT_EQ(r.placement, mj::ResidualPlacement::forwarded);
    ASSERT_TRUE(r.argument.has_value());
    argsseen.push_back(*r.argument);
  }
  std::sort(argsseen.begin(), argsseen.end());
  EXPECT_EQ(argsseen, (std::vector<int>{0, 1}));
  // nothing_saveable checkpoint of sin(sin(x)): only the input is kept (forwarded).
  auto f = mj::checkpoint([](const Array& v) { return mj::sin(mj::sin(v)); }, {.policy = cp::nothing_saveable()});
  auto rn = mj::saved_residuals([&](const Array& v) { return mj::sum(f(v)); }, x);
  ASSERT_EQ(rn.size(), 1u) << rn;
  EXPECT_EQ(rn[0].placement, mj::ResidualPlacement::forwarded);
  // A named value offloaded by the policy: pinned_host, named.
  auto g = mj::checkpoint([](const Array& v) { return mj::sin(mj::checkpoint_name(mj::sin(v), "s")); },
                          {.policy = cp::save_and_offload_only_these_names({}, {"s"}, "device", "pinned_host")});
  auto ro = mj::saved_residuals([&](const Array& v) { return mj::sum(g(v)); }, x);
  int pinned = 0;
  for (auto& r : ro)
    if (r.memory_kind == mj::MemoryKind::pinned_host) {
      ++pinned;
      EXPECT_EQ(r.name, "s");
      EXPECT_EQ(r.made_by, "device_put");
    }
  EXPECT_EQ(pinned, 1) << ro;
}

// ---- Placement of residuals that scan's partial evaluation hoists out of the loop.

std::vector<const mj::SavedResidual*> placed(const mj::SavedResiduals& rs, mj::ResidualPlacement p) {
  std::vector<const mj::SavedResidual*> out;
  for (auto& r : rs)
    if (r.placement == p) out.push_back(&r);
  return out;
}

constexpr int kSteps = 4;

// loss(c0) = sum(final carry of kSteps steps of `step`), xs unused zeros [kSteps, 3].
template <class Step>
auto scan_loss(Step step) {
  return [step](const Array& c0) {
    return mj::sum(mj::scan(step, c0, mj::zeros({kSteps, 3}, mj::f32)).first);
  };
}

// step(c) = sin(c * sin(W)), W closed over. By hand: dc' = cos(c * sin(W)) * (dc * sin(W)).
// sin(W) depends on the loop constant W only: hoisted, computed once, f32[3] = 12 bytes.
// cos(c * sin(W)) changes with the carry: stacked, f32[4,3] = 48 bytes. Nothing else is read.
void expect_sin_w_residuals(const mj::SavedResiduals& rs) {
  ASSERT_EQ(rs.size(), 2u) << rs;
  auto h = placed(rs, mj::ResidualPlacement::hoisted);
  ASSERT_EQ(h.size(), 1u) << rs;
  EXPECT_EQ(h[0]->aval.shape, (mj::Shape{3}));
  EXPECT_EQ(h[0]->bytes, 12);
  EXPECT_EQ(h[0]->made_by, "sin");
  EXPECT_EQ(h[0]->name, "");
  auto s = placed(rs, mj::ResidualPlacement::stacked);
  ASSERT_EQ(s.size(), 1u) << rs;
  EXPECT_EQ(s[0]->aval.shape, (mj::Shape{kSteps, 3}));
  EXPECT_EQ(s[0]->bytes, 48);
  std::ostringstream os;
  os << rs;
  EXPECT_NE(os.str().find("f32[3] hoisted device 12 bytes"), std::string::npos) << os.str();
}

TEST(SavedResidualsHoisted, LoopConstantOnlyValueIsHoistedNotStacked) {
  Array W = mj::array({0.5f, 1.0f, 1.5f});
  auto step = [W](const Array& c, const Array&) { return std::pair{mj::sin(c * mj::sin(W)), mj::None{}}; };
  expect_sin_w_residuals(mj::saved_residuals(scan_loss(step), mj::ones({3}, mj::f32)));
  // Saving everything inside a checkpoint around the body keeps the same two residuals.
  auto saved = mj::checkpoint(step, {.policy = cp::everything_saveable()});
  expect_sin_w_residuals(mj::saved_residuals(scan_loss(saved), mj::ones({3}, mj::f32)));
}

// step(c) = sin(c @ (W @ W)), W [3,3] closed over, under a checkpoint. By hand:
// dc' = cos(c @ M) * (dc @ M) with M = W @ W. M is a dot of loop constants: hoisted, f32[3,3] =
// 36 bytes, under both policies (dots_saveable saves dots). The per-step factor is cos(c @ M)
// under everything_saveable, and the dot c @ M (cos recomputed from it) under dots_saveable:
// stacked either way, f32[4,3] = 48 bytes.
TEST(SavedResidualsHoisted, DotOfLoopConstantsUnderCheckpointPolicies) {
  Array W = mj::reshape(mj::arange(9, mj::f32), {3, 3}) * 0.1f;
  auto step = [W](const Array& c, const Array&) {
    return std::pair{mj::sin(mj::matmul(c, mj::matmul(W, W))), mj::None{}};
  };
  for (auto policy : {cp::everything_saveable(), cp::dots_saveable()}) {
    auto rs = mj::saved_residuals(scan_loss(mj::checkpoint(step, {.policy = policy})), mj::ones({3}, mj::f32));
    ASSERT_EQ(rs.size(), 2u) << policy->str() << "\n" << rs;
    auto h = placed(rs, mj::ResidualPlacement::hoisted);
    ASSERT_EQ(h.size(), 1u) << policy->str() << "\n" << rs;
    EXPECT_EQ(h[0]->aval.shape, (mj::Shape{3, 3}));
    EXPECT_EQ(h[0]->bytes, 36);
    EXPECT_EQ(h[0]->made_by, "dot_general");
    auto s = placed(rs, mj::ResidualPlacement::stacked);
    ASSERT_EQ(s.size(), 1u) << policy->str() << "\n" << rs;
    EXPECT_EQ(s[0]->aval.shape, (mj::Shape{kSteps, 3}));
    EXPECT_EQ(s[0]->bytes, 48);
    for (auto& r : rs) EXPECT_EQ(r.name, "") << policy->str() << "\n" << rs;  // nothing is named
  }
}

// ---- Names: a residual whose value was named by checkpoint_name is reported by that name,
// whichever policy saved it (jax PR #20285).

std::vector<const mj::SavedResidual*> named(const mj::SavedResiduals& rs) {
  std::vector<const mj::SavedResidual*> out;
  for (auto& r : rs)
    if (!r.name.empty()) out.push_back(&r);
  return out;
}

// g(x, w, v) = name(x @ w, "proj") @ v. By hand the tangent is dx@w@v + x@dw@v + y@dv with
// y = x @ w: the backward pass reads x, w, v (the arguments, forwarded) and y, f32[2,4] = 32
// bytes. Under dots_saveable y is the saved dot (the name is recomputed from it); under
// everything_saveable and without a checkpoint it is the named value itself. Either way it is
// the value named "proj", and it is the only named residual.
TEST(SavedResidualsNames, NamedDotIsNamedUnderEveryPolicy) {
  Array x = mj::ones({2, 3}, mj::f32), w = mj::ones({3, 4}, mj::f32), v = mj::ones({4, 5}, mj::f32);
  auto g = [](const Array& a, const Array& b, const Array& c) {
    return mj::matmul(mj::checkpoint_name(mj::matmul(a, b), "proj"), c);
  };
  auto check = [&](auto body, const std::string& what) {
    auto rs = mj::saved_residuals(
        [&](const Array& a, const Array& b, const Array& c) { return mj::sum(body(a, b, c)); }, x, w, v);
    ASSERT_EQ(rs.size(), 4u) << what << "\n" << rs;
    auto n = named(rs);
    ASSERT_EQ(n.size(), 1u) << what << "\n" << rs;
    EXPECT_EQ(n[0]->name, "proj");
    EXPECT_EQ(n[0]->aval.shape, (mj::Shape{2, 4}));
    EXPECT_EQ(n[0]->bytes, 32);
    EXPECT_EQ(placed(rs, mj::ResidualPlacement::forwarded).size(), 3u) << what << "\n" << rs;
    std::ostringstream os;
    os << rs;
    EXPECT_NE(os.str().find("f32[2,4] computed device 32 bytes named 'proj'"), std::string::npos)
        << what << "\n" << os.str();
  };
  check(mj::checkpoint(g, {.policy = cp::dots_saveable()}), "dots_saveable");
  check(mj::checkpoint(g, {.policy = cp::everything_saveable()}), "everything_saveable");
  check(g, "no checkpoint");
}

// A policy that saves sin only: in name(sin(x), "s") * name(sin(x), "s") the sin output is saved
// because it is a sin, not because of its name; it still bears the name. By hand the tangent is
// 2 * s * cos(x) * dx with s = sin(x): residuals x (forwarded, cos recomputed from it) and s
// (f32[4] = 16 bytes, named "s").
TEST(SavedResidualsNames, NameOfAValueSavedForAnotherReason) {
  auto save_sin = cp::custom("save_sin", [](const mj::Primitive& p, const std::vector<mj::ShapedArray>&,
                                            const mj::Params&) -> mj::PolicyDecision {
    if (p.name == "sin") return mj::Saveable{};
    return mj::Recompute{};
  });
  auto g = mj::checkpoint([](const Array& v) {
    Array s = mj::checkpoint_name(mj::sin(v), "s");
    return s * s;
  }, {.policy = save_sin});
  auto rs = mj::saved_residuals([&](const Array& v) { return mj::sum(g(v)); }, mj::array({0.1f, 0.2f, 0.3f, 0.4f}));
  ASSERT_EQ(rs.size(), 2u) << rs;
  auto n = named(rs);
  ASSERT_EQ(n.size(), 1u) << rs;
  EXPECT_EQ(n[0]->name, "s");
  EXPECT_EQ(n[0]->made_by, "sin");
  EXPECT_EQ(n[0]->bytes, 16);
  EXPECT_EQ(placed(rs, mj::ResidualPlacement::forwarded).size(), 1u) << rs;
}

// step(c) = name(c @ Wc, "proj") * c, Wc [3,3] closed over, under a checkpoint. By hand
// dc' = (dc @ Wc) * c + y * dc with y = c @ Wc: per step the backward pass reads c (the carry,
// stacked, unnamed: the carry out is a product, never named) and y (stacked, named "proj": the
// named value under everything_saveable, the saved dot under dots_saveable), both f32[4,3] = 48
// bytes; Wc is a loop constant passed through (forwarded).
TEST(SavedResidualsNames, NameSurvivesStackingInScan) {
  Array Wc = mj::reshape(mj::arange(9, mj::f32), {3, 3}) * 0.1f;
  auto step = [Wc](const Array& c, const Array&) {
    return std::pair{mj::checkpoint_name(mj::matmul(c, Wc), "proj") * c, mj::None{}};
  };
  for (auto policy : {cp::everything_saveable(), cp::dots_saveable()}) {
    auto rs = mj::saved_residuals(scan_loss(mj::checkpoint(step, {.policy = policy})), mj::ones({3}, mj::f32));
    auto s = placed(rs, mj::ResidualPlacement::stacked);
    ASSERT_EQ(s.size(), 2u) << policy->str() << "\n" << rs;
    int proj = 0, unnamed = 0;
    for (auto* r : s) {
      EXPECT_EQ(r->aval.shape, (mj::Shape{kSteps, 3}));
      EXPECT_EQ(r->bytes, 48);
      proj += r->name == "proj";
      unnamed += r->name.empty();
    }
    EXPECT_EQ(proj, 1) << policy->str() << "\n" << rs;
    EXPECT_EQ(unnamed, 1) << policy->str() << "\n" << rs;
    EXPECT_EQ(named(rs).size(), 1u) << policy->str() << "\n" << rs;
  }
}

// step(c) = sin(c @ name(W @ W, "m")): as in DotOfLoopConstantsUnderCheckpointPolicies, by hand
// the one hoisted residual is M = W @ W, f32[3,3]; here it is the value named "m" (the named
// value under everything_saveable, the saved dot it names under dots_saveable) and keeps the
// name, although under dots_saveable the name equation stays in the loop (only the dot is
// hoisted). The stacked per-step factor is unnamed.
TEST(SavedResidualsNames, HoistedResidualKeepsItsName) {
  Array W = mj::reshape(mj::arange(9, mj::f32), {3, 3}) * 0.1f;
  auto step = [W](const Array& c, const Array&) {
    return std::pair{mj::sin(mj::matmul(c, mj::checkpoint_name(mj::matmul(W, W), "m"))), mj::None{}};
  };
  for (auto policy : {cp::everything_saveable(), cp::dots_saveable()}) {
    auto rs = mj::saved_residuals(scan_loss(mj::checkpoint(step, {.policy = policy})), mj::ones({3}, mj::f32));
    auto h = placed(rs, mj::ResidualPlacement::hoisted);
    ASSERT_EQ(h.size(), 1u) << policy->str() << "\n" << rs;
    EXPECT_EQ(h[0]->name, "m") << policy->str() << "\n" << rs;
    EXPECT_EQ(h[0]->aval.shape, (mj::Shape{3, 3}));
    EXPECT_EQ(named(rs).size(), 1u) << policy->str() << "\n" << rs;
  }
}

// s = sin(x), t = name(s, "s"), f = sum(s * t). By hand df = sum(ds * t + s * dt) with
// ds = dt = cos(x) * dx: the backward pass reads cos(x) (unnamed), t (the named value) and s
// (saved because the product reads it, and named by t's name: jax PR #20285), each f32[4].
// Inside jit the three are outputs of the known call and the name equation is inside it; they
// bear the same names as without jit.
TEST(SavedResidualsNames, NamesSurviveJit) {
  auto f = [](const Array& x) {
    Array s = mj::sin(x);
    return mj::sum(s * mj::checkpoint_name(s, "s"));
  };
  Array x = mj::array({0.1f, 0.2f, 0.3f, 0.4f});
  for (bool jitted : {false, true}) {
    auto rs = jitted ? mj::saved_residuals(mj::jit(f), x) : mj::saved_residuals(f, x);
    ASSERT_EQ(rs.size(), 3u) << "jit " << jitted << "\n" << rs;
    auto n = named(rs);
    ASSERT_EQ(n.size(), 2u) << "jit " << jitted << "\n" << rs;
    for (auto* r : n) {
      EXPECT_EQ(r->name, "s");
      EXPECT_EQ(r->bytes, 16);
    }
  }
}

// ---- JAX's wording and order (jax.ad_checkpoint.saved_residuals; api_test.py's
// test_saved_residuals_utility and test_saved_residuals_utility_jit): literals, constants,
// arguments (named by their path), then values in program order.

// f(x, y) = z * ((x[0] * x[1]) * y) * [3.] with z = checkpoint_name(sin(3.), "z"). By hand the
// linear map is d f = z [3.] (y (x1 dx0 + x0 dx1) + x0 x1 dy): it reads the constant [3.],
// x[0], x[1], y, z and the product x0 x1.
Array utility_f(const std::pair<Array, Array>& x, const Array& y) {
  Array z = mj::checkpoint_name(mj::sin(mj::scalar(3.0f)), "z");
  return z * ((x.first * x.second) * y) * mj::array({3.0f});
}

TEST(SavedResidualsJax, UtilityInJaxsOrderAndWording) {
  std::pair<Array, Array> x{mj::scalar(2.0f), mj::scalar(3.0f)};
  auto rs = mj::saved_residuals(utility_f, mj::ArgNames{"x", "y"}, x, mj::scalar(4.0f));
  ASSERT_EQ(rs.size(), 6u) << rs;
  EXPECT_EQ(rs[0].aval.shape, (mj::Shape{1})) << rs;
  EXPECT_EQ(rs[0].description, "from a constant") << rs;
  EXPECT_EQ(rs[1].description, "from the argument x[0]") << rs;
  EXPECT_EQ(rs[2].description, "from the argument x[1]") << rs;
  EXPECT_EQ(rs[3].description, "from the argument y") << rs;
  EXPECT_EQ(rs[4].description.rfind("named 'z'", 0), 0u) << rs;
  for (size_t i = 1; i < 6; ++i) EXPECT_EQ(rs[i].aval.shape, mj::Shape{}) << rs;
  EXPECT_EQ(rs[5].description, "output of mul") << rs;
}

// Under jit the residuals that are arguments of the jitted function are forwarded (not returned
// by its known call) and only nonzero tangents enter the staged call: 6 residuals as JAX lists
// them, the constant first and then two outputs of the jitted function (z and x0 x1).
TEST(SavedResidualsJax, UtilityUnderJitForwardsItsArguments) {
  std::pair<Array, Array> x{mj::scalar(2.0f), mj::scalar(3.0f)};
  auto rs = mj::saved_residuals(mj::jit(utility_f, {.name = "f"}), mj::ArgNames{"x", "y"}, x, mj::scalar(4.0f));
  ASSERT_EQ(rs.size(), 6u) << rs;
  EXPECT_EQ(rs[0].description, "from a constant") << rs;
  EXPECT_EQ(rs[0].aval.shape, (mj::Shape{1})) << rs;
  EXPECT_EQ(rs[1].description, "from the argument x[0]") << rs;
  EXPECT_EQ(rs[2].description, "from the argument x[1]") << rs;
  EXPECT_EQ(rs[3].description, "from the argument y") << rs;
  for (size_t i : {4u, 5u}) {
    EXPECT_EQ(rs[i].description, "output of jitted function 'f'") << rs;
    EXPECT_EQ(rs[i].aval.shape, mj::Shape{}) << rs;
  }
  // The gradient through jit equals the closed form: d/dx0 = z 3 x1 y, d/dx1 = z 3 x0 y, d/dy = z 3 x0 x1.
  auto g = mj::grad([](const std::pair<Array, Array>& x, const Array& y) { return mj::sum(mj::jit(utility_f)(x, y)); },
                    mj::argnums<0, 1>)(x, mj::scalar(4.0f));
  const double z = std::sin(3.0);
  EXPECT_NEAR(std::get<0>(g).first.item<double>(), z * 3 * 3 * 4, 1e-5);
  EXPECT_NEAR(std::get<0>(g).second.item<double>(), z * 3 * 2 * 4, 1e-5);
  EXPECT_NEAR(std::get<1>(g).item<double>(), z * 3 * 2 * 3, 1e-5);
}

// Jitting f adds no residual: the residuals of jit(f) that are not arguments or constants have
// the same bytes as f's own, and the compiled VJPs plan the same temporaries, exactly.
TEST(SavedResidualsJax, JitAddsNoResidualBytes) {
  Array cst = mj::full({16, 16}, 3.f);
  auto g = [cst](const Array& x1, const Array& x2, const Array& y) {
    Array z = mj::checkpoint_name(mj::sin(mj::scalar(3.0f)), "z");
    return mj::sum(mj::tanh(z * mj::matmul(mj::matmul(x1, x2), y) * cst));
  };
  Array a = mj::full({16, 16}, 0.02f), b = mj::full({16, 16}, 0.03f), c = mj::full({16, 16}, 0.04f);
  auto computed_bytes = [](const mj::SavedResiduals& rs) {
    int64_t n = 0;
    for (const auto& r : rs) n += r.placement == mj::ResidualPlacement::forwarded ? 0 : r.bytes;
    return n;
  };
  mj::SavedResiduals plain = mj::saved_residuals(g, a, b, c), jitted = mj::saved_residuals(mj::jit(g), a, b, c);
  // By hand: z (4 bytes), x1 x2, tanh(u) and 1 - tanh(u)^2 (1024 bytes each).
  EXPECT_EQ(computed_bytes(plain), 4 + 3 * 16 * 16 * 4) << plain;
  EXPECT_EQ(computed_bytes(jitted), computed_bytes(plain)) << jitted;
  EXPECT_EQ(jitted.size(), plain.size()) << jitted;
  auto vjp_plain = mj::jit(mj::grad(g, mj::argnums<0, 1, 2>));
  auto vjp_jitted = mj::jit(mj::grad(mj::jit(g), mj::argnums<0, 1, 2>));
  EXPECT_EQ(vjp_jitted.lower(a, b, c).compile().memory_analysis().temp_size_in_bytes,
            vjp_plain.lower(a, b, c).compile().memory_analysis().temp_size_in_bytes);
}

struct Layer {
  Array w, b;
};

}  // namespace

MJ_REGISTER_PYTREE(Layer, w, b)

namespace {

// Arguments are named by their path, as JAX's keystr: a struct's field after a dot, a sequence
// index in brackets, `args[i]` for an argument given no name.
TEST(SavedResidualsJax, ArgumentsAreNamedByTheirPath) {
  Layer params{mj::array({0.5f, -0.5f}), mj::array({0.1f, 0.2f})};
  std::vector<Array> xs{mj::array({1.0f, 2.0f})};
  auto f = [](const Layer& p, const std::vector<Array>& v) { return mj::sum(p.w * v[0] + p.b); };
  auto named = mj::saved_residuals(f, mj::ArgNames{"params"}, params, xs);
  std::vector<std::string> got;
  for (const auto& r : named) got.push_back(r.description);
  EXPECT_EQ(got, (std::vector<std::string>{"from the argument params.w", "from the argument args[1][0]"})) << named;
  auto unnamed = mj::saved_residuals(f, params, xs);
  got.clear();
  for (const auto& r : unnamed) got.push_back(r.description);
  EXPECT_EQ(got, (std::vector<std::string>{"from the argument args[0].w", "from the argument args[1][0]"}))
      << unnamed;
}

// The error names the counts and the caller's line (where the names were written).
TEST(SavedResidualsJax, MoreNamesThanArgumentsIsAValueError) {
  const int line = __LINE__ + 2;
  try {
    mj::saved_residuals([](const Array& v) { return mj::sum(v * v); }, mj::ArgNames{"x", "y"}, mj::ones({2}));
    FAIL() << "two names for one argument must be refused";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("2 argument names (ArgNames) for 1 arguments"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test_saved_residuals.cc:" + std::to_string(line)), std::string::npos)
        << e.what();
  }
}

}  // namespace
