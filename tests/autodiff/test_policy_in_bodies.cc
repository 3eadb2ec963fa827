// Tests that a checkpoint's policy reaches the equations inside a scan, a cond branch and a nested
// call under it (JAX's _scan_partial_eval_custom, _cond_partial_eval_custom, call rules get `saveable`).
// Expected values: closed forms derived in the comments, float64 finite differences, JAX's test counts.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "autodiff/transpose.h"
#include "core/parser.h"

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;

// Occurrences of equations of primitive `prim` in a printed jaxpr ("= prim " or "= prim[").
int count_eqns(const std::string& text, const std::string& prim) {
  int n = 0;
  for (const std::string& form : {"= " + prim + " ", "= " + prim + "[", "= " + prim + "\n"})
    for (size_t at = text.find(form); at != std::string::npos; at = text.find(form, at + 1)) ++n;
  return n;
}

std::vector<double> vals(const Array& a) {
  Array f = mj::astype(a, mj::f64);
  return std::vector<double>(f.data<double>(), f.data<double>() + f.size());
}

// Central differences in float64 of a scalar function of one array (the oracle for gradients).
std::vector<double> fd_grad(const std::function<Array(const Array&)>& f, const Array& x, double eps = 1e-5) {
  Array x64 = mj::astype(x, mj::f64);
  std::vector<double> base = vals(x64), g(base.size());
  for (size_t i = 0; i < base.size(); ++i) {
    std::vector<double> p = base, m = base;
    p[i] += eps;
    m[i] -= eps;
    double fp = f(mj::array(p, x.shape(), mj::f64)).template item<double>();
    double fm = f(mj::array(m, x.shape(), mj::f64)).template item<double>();
    g[i] = (fp - fm) / (2 * eps);
  }
  return g;
}

// dots_saveable around a scan of h -> sin(dot(h, w)) saves the stacked dot outputs, as JAX does
// (not only w and a constant).
TEST(PolicyInBodies, DotsSaveableAroundAScanSavesTheStackedDots) {
  auto f = mj::checkpoint(
      [](const Array& w) {
        return mj::scan([w](const Array& h, const mj::None&) { return std::pair{mj::sin(mj::dot(h, w)), mj::None{}}; },
                        mj::ones({5}), {.length = 2})
            .first;
      },
      {.policy = cp::dots_saveable()});
  mj::SavedResiduals rs = mj::saved_residuals(f, mj::ones({5, 5}));
  int dots = 0;
  for (const auto& r : rs)
    if (r.placement == mj::ResidualPlacement::stacked && r.description.find("dot_general") != std::string::npos) {
      ++dots;
      EXPECT_EQ(r.aval.shape, (mj::Shape{2, 5})) << r;
    }
  EXPECT_EQ(dots, 1) << rs;
  // The sines are recomputed: no stacked residual is made by sin or cos.
  for (const auto& r : rs) {
    EXPECT_EQ(r.description.find("(per iteration: sin"), std::string::npos) << rs;
    EXPECT_EQ(r.description.find("(per iteration: cos"), std::string::npos) << rs;
  }
}

// JAX's test_remat_checkpoint_dots_outside_scan: f(W) = scan of length 2 of x -> sin(dot(x, W))
// three times, under checkpoint(dots_saveable). Only the dots are saved; the VJP function
// recomputes the sines from them (the two dot inputs and the next carry: 3 sin), takes the three
// cosines, and transposes each dot twice (6 dot_general).
TEST(PolicyInBodies, CheckpointDotsOutsideScanRecomputesOnlyTheElementwise) {
  auto f = mj::checkpoint(
      [](const Array& W) {
        auto three = [W](const Array& x0) {
          Array x = mj::sin(mj::dot(x0, W));
          x = mj::sin(mj::dot(x, W));
          return mj::sin(mj::dot(x, W));
        };
        return mj::scan([three](const Array& x, const mj::None&) { return std::pair{three(x), mj::None{}}; },
                        mj::ones({5}), {.length = 2})
            .first;
      },
      {.policy = cp::dots_saveable()});
  Array W = mj::ones({5, 5});
  auto [y, f_vjp] = mj::vjp(f, W);
  std::string text = mj::to_string(mj::make_jaxpr([&](const Array& ct) { return f_vjp(ct); })(y));
  EXPECT_EQ(count_eqns(text, "sin"), 3) << text;
  EXPECT_EQ(count_eqns(text, "cos"), 3) << text;
  EXPECT_EQ(count_eqns(text, "dot_general"), 6) << text;
  // Derivatives of every order up to 2 by finite differences, compiled (jit(f)).
  mj::check_grads(mj::jit(f), W * 0.1f, 2, {"fwd", "rev"});
}

// JAX's test_remat_of_scan_policy: a custom policy saving only cos around a scan of c -> sin(c):
// the linearized map needs cos(c) per iteration, saved; no sin or cos is left in it.
TEST(PolicyInBodies, CustomPolicySavingCosLeavesNoSinOrCosInTheLinearMap) {
  auto save_cos = cp::custom("save_cos", [](const mj::Primitive& p, const std::vector<mj::ShapedArray>&,
                                            const mj::Params&) -> mj::PolicyDecision {
    if (p.name == "cos") return mj::Saveable{};
    return mj::Recompute{};
  });
  auto f = mj::checkpoint(
      [](const Array& x) {
        auto [c, ys] = mj::scan([](const Array& c, const mj::None&) { return std::pair{mj::sin(c), mj::sin(c)}; }, x,
                                {.length = 3});
        return std::pair{c, ys};
      },
      {.policy = save_cos});
  auto [out, f_jvp] = mj::linearize(f, mj::scalar(4.0f));
  std::string text = mj::to_string(mj::make_jaxpr([&](const Array& t) { return f_jvp(t); })(mj::scalar(1.0f)));
  EXPECT_EQ(count_eqns(text, "sin"), 0) << text;
  EXPECT_EQ(count_eqns(text, "cos"), 0) << text;
  // The linear map is right: d c3/dx = cos(x) cos(sin x) cos(sin sin x) at x = 4 (chain rule).
  double x = 4, d = 1;
  std::vector<double> dys;
  for (int i = 0; i < 3; ++i) {
    d *= std::cos(x);
    dys.push_back(d);
    x = std::sin(x);
  }
  auto [dc, dy] = f_jvp(mj::scalar(1.0f));
  EXPECT_NEAR(dc.item<double>(), d, 1e-6);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(vals(dy)[size_t(i)], dys[size_t(i)], 1e-6);
  mj::check_grads([&](const Array& v) { return f(v); }, mj::scalar(3.0f), 2, {"rev"});
}

mj::PolicyPtr offload_zw() {
  return cp::save_and_offload_only_these_names({"y"}, {"z", "w"}, "device", "pinned_host");
}

// JAX's test_remat_offload_names_of_scan_jaxpr: the offloaded names inside a scan body are saved as
// stacked host residuals [3,16]; the grad program moves them to the host twice and back twice.
TEST(PolicyInBodies, OffloadNamesAroundAScanStackHostResiduals) {
  auto f = mj::checkpoint(
      [](const Array& x) {
        auto [c, out] = mj::scan(
            [](const Array& y0, const mj::None&) {
              Array y = mj::checkpoint_name(mj::sin(y0), "y");
              Array z = mj::checkpoint_name(mj::sin(y), "z");
              Array w = mj::checkpoint_name(mj::sin(z), "w");
              return std::pair{w, mj::sum(w * z)};
            },
            x, {.length = 3});
        return mj::sum(out);
      },
      {.policy = offload_zw()});
  Array x = mj::arange(16, mj::f32);
  mj::ClosedJaxpr j = mj::make_jaxpr(mj::grad(f))(x);
  std::string text = mj::to_string(j);
  int to_host = 0, to_device = 0;
  for (size_t at = text.find("device_put["); at != std::string::npos; at = text.find("device_put[", at + 1)) {
    std::string params = text.substr(at, text.find(']', at) - at);
    to_host += params.find("pinned_host") != std::string::npos;
    to_device += params.find("memory_kind=device") != std::string::npos;
  }
  EXPECT_EQ(to_host, 2) << text;
  EXPECT_EQ(to_device, 2) << text;
  EXPECT_NE(text.find("f32<pinned_host>[3,16]"), std::string::npos) << text;
  // The gradient equals the one without checkpoint (finite differences in float64).
  auto plain = [](const Array& x) {
    Array c = x, total = mj::scalar(0.0, x.dtype());
    for (int i = 0; i < 3; ++i) {
      Array z = mj::sin(mj::sin(c));
      Array w = mj::sin(z);
      total = total + mj::sum(w * z);
      c = w;
    }
    return total;
  };
  std::vector<double> want = fd_grad(plain, x * 0.1f);
  std::vector<double> got = vals(mj::grad(f)(x * 0.1f)), jitted = vals(mj::jit(mj::grad(f))(x * 0.1f));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-4) << i;
    EXPECT_NEAR(jitted[i], got[i], 1e-6) << i;
  }
}

// memories_test's test_remat_scan_jaxpr_offloadable: a scan over xs whose carry is (y, s) with
// two offloaded names per iteration: two stacked host residuals, and the compiled gradient keeps
// host bytes (host temporaries > 0).
TEST(PolicyInBodies, OffloadingPolicyAroundAScanKeepsTwoStackedHostResiduals) {
  Array inp = mj::reshape(mj::arange(8 * 4, mj::f32), {8, 4}) * 0.01f;
  auto f = mj::checkpoint(
      [inp](const Array& x) {
        using C = std::pair<Array, Array>;
        auto [carry, ys] = mj::scan(
            [](const C& c, const Array& xi) {
              Array y = mj::checkpoint_name(mj::sin(c.first + xi), "y");
              Array z = mj::checkpoint_name(mj::sin(y), "z");
              Array w = mj::checkpoint_name(mj::sin(z), "w");
              return std::pair{C{w, mj::sum(w)}, mj::None{}};
            },
            C{x, mj::scalar(1.0, x.dtype())}, mj::astype(inp, x.dtype()));
        return carry.second;
      },
      {.policy = offload_zw()});
  Array x = mj::reshape(mj::arange(4, mj::f32), {4}) * 0.1f;
  int host_stacks = 0;
  for (const auto& r : mj::saved_residuals(f, x))
    host_stacks += r.memory_kind == mj::MemoryKind::pinned_host && r.placement == mj::ResidualPlacement::stacked;
  EXPECT_EQ(host_stacks, 2) << mj::saved_residuals(f, x);
  auto g = mj::jit(mj::grad(f));
  mj::CompiledMemoryStats stats = g.lower(x).compile().memory_analysis();
  EXPECT_GT(stats.host_temp_size_in_bytes, 0) << stats.str();
  std::vector<double> got = vals(g(x)), eager = vals(mj::grad(f)(x));
  std::vector<double> want = fd_grad([&](const Array& v) { return f(v); }, x);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(eager[i], want[i], 1e-4) << i;
    EXPECT_NEAR(got[i], eager[i], 1e-6) << i;
  }
}

// A policy reaches the equations of a cond branch under the checkpoint: dots_saveable keeps the
// branch's dot (as a cond output) and recomputes its sine.
TEST(PolicyInBodies, DotsSaveableReachesACondBranch) {
  auto f = mj::checkpoint(
      [](const Array& w, const Array& p) {
        return mj::sum(mj::cond(
            p > 0.0f, [&w](const Array& v) { return mj::sin(mj::dot(v, w)); },
            [&w](const Array& v) { return mj::cos(mj::dot(v, w)); }, mj::ones({3})));
      },
      {.policy = cp::dots_saveable()});
  Array w = mj::reshape(mj::arange(9, mj::f32), {3, 3}) * 0.1f, p = mj::scalar(1.0f);
  mj::SavedResiduals rs = mj::saved_residuals(f, w, p);
  int from_cond = 0;
  for (const auto& r : rs) from_cond += r.made_by == "cond";
  // One slot for the dot output shared by both branches (JAX's _merge_branch_residuals).
  EXPECT_EQ(from_cond, 1) << rs;
  for (const auto& r : rs) EXPECT_NE(r.made_by, "cos") << rs;
  // The backward pass recomputes sin or cos from the saved dot inside its branch and transposes
  // the dot once per branch: 1 sin, 1 cos, 2 dot_general (4 if the dot were recomputed too).
  auto [y, f_vjp] = mj::vjp([&](const Array& wv) { return f(wv, p); }, w);
  std::string text = mj::to_string(mj::make_jaxpr([&](const Array& ct) { return f_vjp(ct); })(y));
  EXPECT_EQ(count_eqns(text, "sin"), 1) << text;
  EXPECT_EQ(count_eqns(text, "cos"), 1) << text;
  EXPECT_EQ(count_eqns(text, "dot_general"), 2) << text;
  auto g = mj::grad(f, mj::argnums<0>);
  // d/dw sum(sin(1ᵀ w)) = outer(1, cos(1ᵀ w)): column j gets cos(sum_i w_ij) in every row.
  std::vector<double> got = vals(g(w, p)), jitted = vals(mj::jit(g)(w, p)), wv = vals(w);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double col = wv[size_t(j)] + wv[size_t(3 + j)] + wv[size_t(6 + j)];
      EXPECT_NEAR(got[size_t(3 * i + j)], std::cos(col), 1e-6);
      EXPECT_NEAR(jitted[size_t(3 * i + j)], std::cos(col), 1e-6);
    }
}

// A policy reaches the equations of a jitted call under the checkpoint: dots_saveable keeps the
// dot computed inside jit and recomputes the sine around it.
TEST(PolicyInBodies, DotsSaveableReachesANestedJit) {
  auto inner = mj::jit([](const Array& v, const Array& w) { return mj::sin(mj::dot(v, w)); }, {.name = "inner"});
  auto f = mj::checkpoint([&](const Array& w) { return mj::sum(inner(mj::ones({3}), w)); },
                          {.policy = cp::dots_saveable()});
  Array w = mj::reshape(mj::arange(9, mj::f32), {3, 3}) * 0.1f;
  // The residuals: the constant ones(3) (the dot's other operand) and the dot, made in the call.
  mj::SavedResiduals rs = mj::saved_residuals(f, w);
  ASSERT_EQ(rs.size(), 2u) << rs;
  EXPECT_EQ(rs[0].description, "from a constant") << rs;
  EXPECT_EQ(rs[1].aval.shape, (mj::Shape{3})) << rs;
  EXPECT_EQ(rs[1].description, "output of jitted function 'inner'") << rs;
  std::vector<double> got = vals(mj::grad(f)(w)), wv = vals(w);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_NEAR(got[size_t(3 * i + j)], std::cos(wv[size_t(j)] + wv[size_t(3 + j)] + wv[size_t(6 + j)]), 1e-6);
}

// JAX's test_remat_of_jit_residual_forwarding: x * y * y through two nested jits, saving only
// "y": the one residual is y (x is not kept), and d/dx sum(x y y) = sum(y^2) = 2 sin(1)^2.
TEST(PolicyInBodies, RematOfJitForwardsResidualsAndKeepsOnlyTheName) {
  auto f = mj::checkpoint(
      [](const Array& x0) {
        Array y = mj::checkpoint_name(mj::sin(mj::ones({2}, mj::f32)), "y");
        Array x = mj::jit([&](const mj::None&) { return x0 * y; })(mj::None{});
        return mj::jit([&](const mj::None&) { return x * y; })(mj::None{});
      },
      {.policy = cp::save_only_these_names({"y"})});
  mj::SavedResiduals rs = mj::saved_residuals(f, mj::scalar(3.0f));
  ASSERT_EQ(rs.size(), 1u) << rs;
  EXPECT_EQ(rs[0].name, "y") << rs;
  Array g = mj::grad([&](const Array& x) { return mj::sum(f(x)); })(mj::scalar(3.0f));
  EXPECT_NEAR(g.item<double>(), 2 * std::pow(std::sin(1.0), 2), 1e-6);
}

// Nested checkpoints: the enclosing policy decides inside the inner one (JAX passes `saveable`
// down through remat's partial-eval rule), here saving a name the inner policy would recompute.
TEST(PolicyInBodies, TheEnclosingPolicyDecidesInsideANestedCheckpoint) {
  auto inner = mj::checkpoint([](const Array& v) { return mj::sin(mj::checkpoint_name(mj::sin(v), "a")); },
                              {.policy = cp::nothing_saveable()});
  auto f = mj::checkpoint(
      [&](const Array& v) {
        auto [c, ys] = mj::scan([&](const Array& c, const mj::None&) { return std::pair{inner(c), mj::None{}}; }, v,
                                {.length = 2});
        return mj::sum(c);
      },
      {.policy = cp::save_only_these_names({"a"})});
  Array x = mj::array({0.3f, 0.7f});
  // The enclosing policy decides inside the nested checkpoint: the argument and 'a' stacked over
  // the 2 iterations, nothing else (the inner nothing_saveable would save only the argument).
  mj::SavedResiduals rs = mj::saved_residuals(f, x);
  ASSERT_EQ(rs.size(), 2u) << rs;
  EXPECT_EQ(rs[0].description, "from the argument args[0]") << rs;
  EXPECT_EQ(rs[1].name, "a") << rs;
  EXPECT_EQ(rs[1].aval.shape, (mj::Shape{2, 2})) << rs;
  std::vector<double> want = fd_grad([&](const Array& v) { return f(v); }, x);
  std::vector<double> got = vals(mj::grad(f)(x)), jitted = vals(mj::jit(mj::grad(f))(x));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5);
    EXPECT_NEAR(jitted[i], got[i], 1e-6);
  }
}

// offload_dot_with_no_batch_dims around a scan: the dot outputs inside the loop (no batch dims)
// are saved stacked in pinned_host, one [3,4] stack and none on the device; the sine is
// recomputed; the gradient is the un-checkpointed loop's (float64 central differences).
TEST(PolicyInBodies, OffloadDotWithNoBatchDimsAroundAScanStacksTheDotsOnTheHost) {
  auto loop = [](const Array& w) {
    auto body = [w](const Array& h, const mj::None&) { return std::pair{mj::sin(mj::dot(h, w)), mj::None{}}; };
    return mj::sum(mj::scan(body, mj::ones({4}, w.dtype()), {.length = 3}).first);
  };
  auto f = mj::checkpoint(loop, {.policy = cp::offload_dot_with_no_batch_dims("device", "pinned_host")});
  Array w = mj::reshape(mj::arange(16, mj::f32), {4, 4}) * 0.05f;
  mj::SavedResiduals rs = mj::saved_residuals(f, w);
  int host_stacks = 0, device_stacks = 0;
  for (const auto& r : rs) {
    if (r.aval.shape != mj::Shape{3, 4}) continue;
    host_stacks += r.memory_kind == mj::MemoryKind::pinned_host;
    device_stacks += r.memory_kind == mj::MemoryKind::device;
  }
  EXPECT_EQ(host_stacks, 1) << rs;
  EXPECT_EQ(device_stacks, 0) << rs;
  std::vector<double> want = fd_grad(loop, w);
  std::vector<double> got = vals(mj::grad(f)(w)), jitted = vals(mj::jit(mj::grad(f))(w));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-4) << i;
    EXPECT_NEAR(jitted[i], got[i], 1e-6) << i;
  }
}

// while_loop stays forward-only under a checkpoint (JAX's _while_partial_eval_custom ignores the
// policy): grad raises the same error as without the checkpoint; jvp works.
TEST(PolicyInBodies, GradOfACheckpointedWhileLoopStillRaises) {
  auto loop = [](const Array& x) {
    using C = std::pair<Array, Array>;
    return mj::while_loop([](const C& c) { return c.first < 3.0f; },
                          [](const C& c) { return C{c.first + 1.0f, c.second * 2.0f}; }, C{mj::scalar(0.0f), x})
        .second;
  };
  auto f = mj::checkpoint(loop, {.policy = cp::dots_saveable()});
  try {
    mj::grad(f)(mj::scalar(1.0f));
    FAIL() << "grad of a checkpointed while_loop must raise";
  } catch (const mj::NotDifferentiableError& e) {
    EXPECT_NE(std::string(e.what()).find("Reverse-mode differentiation does not work for lax.while_loop"),
              std::string::npos)
        << e.what();
  }
  auto [y, t] = mj::jvp(f, mj::scalar(1.0f), mj::scalar(1.0f));
  EXPECT_FLOAT_EQ(y.item<float>(), 8.0f);
  EXPECT_FLOAT_EQ(t.item<float>(), 8.0f);
}

// JAX's test_remat_of_scan_funky_custom_jvp: a custom_jvp sine whose rule computes (sin, cos) in
// a jitted call, in a scan of length 1 under checkpoint. What the linear map recomputes follows
// the policy through the rule's call: saving cos leaves neither; saving sin recomputes cos;
// saving nothing recomputes both (the sin is the recomputed carry; JAX counts the same).
TEST(PolicyInBodies, PolicyReachesTheCallInACustomJvpRuleInAScan) {
  auto sin_c = mj::custom_jvp([](const Array& x) { return mj::sin(x); },
                              [](const Array& x, const Array& xd) {
                                auto yc = mj::jit([&](const mj::None&) { return std::pair{mj::sin(x), mj::cos(x)}; })(
                                    mj::None{});
                                return std::pair{yc.first, yc.second * xd};
                              });
  auto scan_apply = [&](const Array& x) {
    return mj::scan([&](const Array& c, const mj::None&) { return std::pair{sin_c(c), mj::None{}}; }, x, {.length = 1})
        .first;
  };
  auto save_only = [](const std::string& prim) {
    return cp::custom("save_" + prim, [prim](const mj::Primitive& p, const std::vector<mj::ShapedArray>&,
                                             const mj::Params&) -> mj::PolicyDecision {
      if (p.name == prim) return mj::Saveable{};
      return mj::Recompute{};
    });
  };
  struct Case {
    mj::PolicyPtr policy;
    int sin, cos;
  };
  for (const Case& c : {Case{save_only("cos"), 0, 0}, Case{save_only("sin"), 0, 1},
                        Case{cp::everything_saveable(), 0, 0}, Case{cp::nothing_saveable(), 1, 1}}) {
    auto f = mj::checkpoint(scan_apply, {.policy = c.policy});
    auto [y, f_jvp] = mj::linearize(f, mj::scalar(4.0f));
    std::string text = mj::to_string(mj::make_jaxpr([&](const Array& t) { return f_jvp(t); })(mj::scalar(1.0f)));
    EXPECT_EQ(count_eqns(text, "sin"), c.sin) << c.policy->str() << "\n" << text;
    EXPECT_EQ(count_eqns(text, "cos"), c.cos) << c.policy->str() << "\n" << text;
    EXPECT_NEAR(f_jvp(mj::scalar(1.0f)).item<double>(), std::cos(4.0), 1e-6) << c.policy->str();
    mj::check_grads([&](const Array& v) { return f(v); }, mj::scalar(3.0f), 2, {"rev"});
  }
}

// scan_transpose of a scan whose first carry stays known (a primal the staged scan of a
// checkpoint recomputes, next to a tangent carry): the loop is split, the primal carries are
// recomputed forward, and the tangent carry's cotangent is the product of cos(p_i) along the
// primal chain p_0 = a, p_(i+1) = sin(p_i) + x_i (computed here in double).
TEST(PolicyInBodies, ScanTransposeSplitsOffCarriesThatStayKnown) {
  mj::ClosedJaxpr j = mj::parse_jaxpr(R"({ lambda ; a:f32[] b:f32[] c:f32[3]. let
    d:f32[] e:f32[] = scan[
      _split_transpose=False
      jaxpr={ lambda ; f:f32[] g:f32[] h:f32[]. let
          i:f32[] = sin f
          j:f32[] = add i h
          k:f32[] = cos f
          l:f32[] = mul g k
        in (j, l) }
      length=3
      linear=(0, 0, 0)
      num_carry=2
      num_consts=0
      reverse=False
      unroll=1
    ] a b c
  in (d, e) })");
  const double a = 0.4, xs[3] = {0.1, -0.2, 0.3};
  Array c = mj::array({float(xs[0]), float(xs[1]), float(xs[2])});
  std::vector<Array> g = mj::backward_pass(*j.jaxpr, j.consts, {mj::scalar(a), Array(), c}, {false, true, false},
                                           {Array(), mj::scalar(1.0f)});
  double p = a, want = 1;
  for (double x : xs) {
    want *= std::cos(p);
    p = std::sin(p) + x;
  }
  ASSERT_TRUE(g[1].defined());
  EXPECT_NEAR(g[1].item<double>(), want, 1e-6);
  EXPECT_FALSE(g[0].defined());
  EXPECT_FALSE(g[2].defined());
}

}  // namespace
