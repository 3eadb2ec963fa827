// Tests of scan's reverse mode: partial evaluation (residual placement: forwarded, hoisted,
// stacked, offloaded) and the transpose rule, against unrolled loops and hand-derived gradients,
// and nested reverse scans under a checkpoint against float64 central differences.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <minijax/minijax.h>

#include "core/views/control_flow.h"
#include "autodiff/jvp.h"
#include "autodiff/partial_eval.h"
#include "autodiff/transpose.h"
#include "core/pjit.h"

#include "finite_differences.h"

namespace {

using mj::Array;
using Carry = std::pair<Array, Array>;

Array rnd(const mj::Shape& shape, unsigned seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  Array a = Array::allocate(mj::ShapedArray{shape, mj::DType::f32});
  float* p = a.mutable_data<float>();
  for (int64_t i = 0; i < a.size(); ++i) p[i] = u(g);
  return a;
}

Array row(const Array& xs, int64_t t) {
  std::vector<int64_t> start(size_t(xs.ndim()), 0), limit(xs.shape().begin(), xs.shape().end());
  start[0] = t;
  limit[0] = t + 1;
  return mj::lax::squeeze(mj::lax::slice(xs, start, limit), {0});
}

void expect_close(const Array& got, const Array& want, double tol = 2e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.size(); ++i) {
    double g = got.data<float>()[i], w = want.data<float>()[i];
    EXPECT_NEAR(g, w, tol * (1 + std::abs(w))) << "element " << i;
  }
}

// A body using matmul, tanh, sin, mul and exp over a pytree carry (a, b) and a const W.
std::pair<Carry, Array> body1(const Array& W, const Carry& c, const Array& x) {
  Array a = mj::tanh(mj::matmul(W, c.first) + x);
  Array b = c.second * mj::sin(a) + mj::exp(x * 0.1);
  return {Carry{a, b}, a * c.second};
}

// Loss through a scan, or through the same loop unrolled in C++.
Array loss1(const Array& W, const Carry& init, const Array& xs, bool reverse, bool unrolled) {
  Carry c;
  Array ys;
  const int64_t n = xs.shape()[0];
  if (unrolled) {
    c = init;
    std::vector<Array> y(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      int64_t t = reverse ? n - 1 - k : k;
      auto [c2, yt] = body1(W, c, row(xs, t));
      c = c2;
      y[size_t(t)] = yt;
    }
    ys = n ? mj::stack(y) : mj::zeros({0, 3});
  } else {
    mj::ScanOptions o;
    o.reverse = reverse;
    auto r = mj::scan([&](const Carry& cc, const Array& x) { return body1(W, cc, x); }, init, xs, o);
    c = r.first;
    ys = r.second;
  }
  return mj::sum(c.first) + mj::sum(c.second * c.second) + mj::sum(mj::sin(ys));
}

class ScanGradVsUnrolled : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(ScanGradVsUnrolled, AllArgumentsDifferentiated) {
  auto [n, reverse] = GetParam();
  Array W = rnd({3, 3}, 1, 0.8f), xs = rnd({n, 3}, 2);
  Carry init{rnd({3}, 3), rnd({3}, 4)};
  auto g = [reverse = reverse](bool unrolled) {
    return mj::grad([=](const Array& w, const Carry& c, const Array& x) { return loss1(w, c, x, reverse, unrolled); },
                    mj::argnums<0, 1, 2>);
  };
  auto [gW, gc, gx] = g(false)(W, init, xs);
  auto [uW, uc, ux] = g(true)(W, init, xs);
  expect_close(gW, uW);
  expect_close(gc.first, uc.first);
  expect_close(gc.second, uc.second);
  expect_close(gx, ux);
  // value_and_grad agrees on the value.
  auto [v, gv] = mj::value_and_grad([&](const Array& w) { return loss1(w, init, xs, reverse, false); })(W);
  EXPECT_NEAR(v.item<float>(), loss1(W, init, xs, reverse, true).item<float>(), 1e-5);
  expect_close(gv, uW);
}

INSTANTIATE_TEST_SUITE_P(Lengths, ScanGradVsUnrolled,
                         ::testing::Combine(::testing::Values(0, 1, 2, 5), ::testing::Bool()));

TEST(ScanGrad, LengthZeroIsIdentityOnTheCarry) {
  // With no iterations the final carry is the init: d/d init of sum(a) + sum(b^2) = (1, 2b),
  // and W gets a zero gradient.
  Array W = rnd({3, 3}, 5), xs = mj::zeros({0, 3});
  Carry init{rnd({3}, 6), rnd({3}, 7)};
  auto [gW, gc] = mj::grad([&](const Array& w, const Carry& c) { return loss1(w, c, xs, false, false); },
                           mj::argnums<0, 1>)(W, init);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(gW.data<float>()[i], 0.0f);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(gc.first.data<float>()[i], 1.0f);
    EXPECT_NEAR(gc.second.data<float>()[i], 2 * init.second.data<float>()[i], 1e-7);
  }
}

// Nested scans: the outer scan runs over rows, the inner one over the columns of each row.
Array nested_loss(const Array& w, const Array& xs, bool unrolled) {
  auto inner = [&](const Array& c, const Array& xrow) {
    if (unrolled) {
      Array cc = c;
      for (int64_t j = 0; j < xrow.shape()[0]; ++j) cc = mj::sin(cc * w + row(xrow, j));
      return cc;
    }
    return mj::scan([&](const Array& cc, const Array& x) { return std::pair{mj::sin(cc * w + x), mj::None{}}; },
                    c, xrow).first;
  };
  Array c = mj::scalar(0.3);
  if (unrolled) {
    for (int64_t i = 0; i < xs.shape()[0]; ++i) c = mj::tanh(inner(c, row(xs, i)) * w);
    return c;
  }
  return mj::scan([&](const Array& cc, const Array& xr) { return std::pair{mj::tanh(inner(cc, xr) * w), mj::None{}}; },
                  c, xs).first;
}

TEST(ScanGrad, NestedScans) {
  Array w = mj::scalar(0.7), xs = rnd({3, 4}, 8);
  auto [gw, gx] = mj::grad([](const Array& a, const Array& b) { return nested_loss(a, b, false); },
                           mj::argnums<0, 1>)(w, xs);
  auto [uw, ux] = mj::grad([](const Array& a, const Array& b) { return nested_loss(a, b, true); },
                           mj::argnums<0, 1>)(w, xs);
  expect_close(gw, uw);
  expect_close(gx, ux);
}

TEST(ScanGrad, JitOfGradWithVerifiedJaxprs) {
  // jit(grad(scan)) with every produced jaxpr verified (known/staged scans, hoisted equations,
  // the transposed scan) equals the unrolled gradient.
  bool saved = mj::config().verify_jaxprs;
  mj::config().verify_jaxprs = true;
  Array W = rnd({3, 3}, 21, 0.8f), xs = rnd({4, 3}, 22);
  Carry init{rnd({3}, 23), rnd({3}, 24)};
  for (bool reverse : {false, true}) {
    auto g = [&](bool unrolled) {
      return mj::grad([=](const Array& w, const Array& x) { return loss1(w, init, x, reverse, unrolled); },
                      mj::argnums<0, 1>);
    };
    auto [jW, jx] = mj::jit(g(false))(W, xs);
    auto [uW, ux] = g(true)(W, xs);
    expect_close(jW, uW);
    expect_close(jx, ux);
  }
  mj::config().verify_jaxprs = saved;
}

TEST(ScanGrad, WholeScanInsideCheckpoint) {
  // checkpoint(scan) (the case files' "workaround"): under nothing_saveable the forward loop is
  // rematerialized in the backward pass; gradients equal the plain ones for every policy.
  Array W = rnd({3, 3}, 25, 0.8f), xs = rnd({5, 3}, 26);
  Carry init{rnd({3}, 27), rnd({3}, 28)};
  auto f = [&](const Array& w, const Array& x) { return loss1(w, init, x, false, false); };
  auto [pW, px] = mj::grad(f, mj::argnums<0, 1>)(W, xs);
  for (mj::PolicyPtr pol : {mj::PolicyPtr(), mj::checkpoint_policies::everything_saveable(),
                            mj::checkpoint_policies::nothing_saveable()}) {
    auto [cW, cx] = mj::grad(mj::checkpoint(f, {.policy = pol}), mj::argnums<0, 1>)(W, xs);
    expect_close(cW, pW, 1e-5);
    expect_close(cx, px, 1e-5);
  }
}

Array simple_loss(const Array& w, const Array& xs, bool unrolled) {
  auto step = [&](const Array& c, const Array& x) { return std::pair{mj::sin(c * w) + x * c, mj::exp(c * 0.5)}; };
  Array c = mj::scalar(0.2);
  Array ysum = mj::scalar(0.0);
  if (unrolled) {
    for (int64_t t = 0; t < xs.shape()[0]; ++t) {
      auto [c2, y] = step(c, row(xs, t));
      c = c2;
      ysum = ysum + y;
    }
    return c + ysum;
  }
  auto [cf, ys] = mj::scan(step, c, xs);
  return cf + mj::sum(ys);
}

TEST(ScanGrad, VmapOfGradEqualsPerElementUnrolledGrad) {
  // vmap batches the known scan and the transposed scan; each lane equals the unrolled gradient.
  Array xs = rnd({4}, 29, 0.5f), ws = rnd({3}, 30);
  auto f = [&](const Array& w) { return simple_loss(w, xs, false); };
  Array v = mj::vmap(mj::grad(f))(ws);
  for (int i = 0; i < 3; ++i) {
    Array wi = mj::scalar(ws.data<float>()[i]);
    Array u = mj::grad([&](const Array& w) { return simple_loss(w, xs, true); })(wi);
    EXPECT_NEAR(v.data<float>()[i], u.item<float>(), 2e-5 * (1 + std::abs(u.item<float>())));
  }
}

TEST(ScanGrad, GradOfGrad) {
  Array w = mj::scalar(0.9), xs = rnd({4}, 9, 0.5f);
  auto gg = [&](bool unrolled) {
    auto g = mj::grad([=](const Array& a, const Array& b) { return simple_loss(a, b, unrolled); }, mj::argnums<0, 1>);
    return mj::grad([=](const Array& a, const Array& b) {
      auto [ga, gb] = g(a, b);
      return ga * ga + mj::sum(gb * gb);
    }, mj::argnums<0, 1>)(w, xs);
  };
  auto [sw, sx] = gg(false);
  auto [uw, ux] = gg(true);
  expect_close(sw, uw, 1e-4);
  expect_close(sx, ux, 1e-4);
}

// Nested reverse scans closing over the differentiated argument, with the inner body
// checkpointed under a names policy: grad and grad-of-grad against finite differences of the
// same loop unrolled in C++.
TEST(ScanGrad, NestedReverseScanWithCheckpointMatchesFiniteDifferences) {
  Array W = fdtest::rnd64({3, 3}, 4), xss = fdtest::rnd64({3, 2, 3}, 5), x0 = fdtest::rnd64({3}, 6);
  auto inner = mj::checkpoint(
      [&W](const Array& c, const Array& xi, const Array& x) {
        Array n = mj::checkpoint_name(mj::sin(mj::matmul(W, c)), "s") * xi + x;
        return std::pair{n, n * n};
      },
      {.policy = mj::checkpoint_policies::save_only_these_names({"s"})});
  auto f = [&](const Array& x) {
    auto [c, ys] = mj::scan(
        [&](const Array& c, const Array& xt) {
          auto [ci, yi] = mj::scan([&](const Array& cc, const Array& xi) { return inner(cc, xi, x); },
                                   c, xt, {.reverse = true});
          return std::pair{ci, mj::sum(yi)};
        },
        x, xss);
    return mj::sum(c) + mj::sum(ys * ys);
  };
  // The same loop unrolled: inner slices visited last to first.
  auto unrolled = [&](const Array& x) {
    Array c = x, total = mj::zeros({}, mj::DType::f64);
    for (int64_t k = 0; k < 3; ++k) {
      Array s = mj::zeros({}, mj::DType::f64);
      for (int64_t j = 1; j >= 0; --j) {
        Array xi = mj::reshape(mj::lax::slice(xss, {k, j, 0}, {k + 1, j + 1, 3}), {3});
        Array n = mj::sin(mj::matmul(W, c)) * xi + x;
        s = s + mj::sum(n * n);
        c = n;
      }
      total = total + s * s;
    }
    return mj::sum(c) + total;
  };
  EXPECT_NEAR(f(x0).item<double>(), unrolled(x0).item<double>(), 1e-12);
  fdtest::expect_close(mj::grad(f)(x0), fdtest::fd_grad(unrolled, x0), 1e-6);
  auto sum_grad = [&](const Array& x) { return mj::sum(mj::grad(f)(x)); };
  auto sum_grad_unrolled = [&](const Array& x) { return mj::sum(mj::grad(unrolled)(x)); };
  fdtest::expect_close(mj::grad(sum_grad)(x0), fdtest::fd_grad(sum_grad_unrolled, x0), 1e-6);
}

// ---- structure: where residuals live --------------------------------------------------------

// Records what scan's partial-eval rule returns while `run` executes (the rule is wrapped in a
// spy and restored afterwards); only splits with some unknown input are kept.
std::vector<mj::PeCustomResult> capture_scan_pe(const std::function<void()>& run) {
  std::vector<mj::PeCustomResult> seen;
  mj::PeCustomRule orig = mj::pe_custom_rules().at("scan");
  mj::pe_custom_rules()["scan"] = [&](const mj::Eqn& e, const std::vector<bool>& unk, const std::vector<bool>& inst,
                                      const mj::SaveablePolicy& pol) {
    mj::PeCustomResult r = orig(e, unk, inst, pol);
    bool any = false;
    for (bool b : unk) any |= b;
    if (any) seen.push_back(r);
    return r;
  };
  try {
    run();
  } catch (...) {
    mj::pe_custom_rules()["scan"] = orig;
    throw;
  }
  mj::pe_custom_rules()["scan"] = orig;
  return seen;
}

std::vector<const mj::ResidualInfo*> with_placement(const mj::PeCustomResult& s, mj::ResidualPlacement p) {
  std::vector<const mj::ResidualInfo*> r;
  for (auto& i : s.residual_info)
    if (i.placement == p) r.push_back(&i);
  return r;
}

int count_top_level(const mj::ClosedJaxpr& j, const std::string& prim) {
  int n = 0;
  for (auto& e : j.jaxpr->eqns) n += e.primitive->name == prim;
  return n;
}

TEST(ScanPartialEval, LoopConstantResidualIsHoisted) {
  // body(c, x) = c * exp(w) + x with only c0 differentiated: the tangent is dc * exp(w), and
  // exp(w) depends only on the loop constant w, so it is computed once before the loop.
  Array w = rnd({3}, 10), xs = rnd({6, 3}, 11), c0 = rnd({3}, 12);
  auto f = [&](const Array& c0v) {
    return mj::sum(mj::scan([&](const Array& c, const Array& x) { return std::pair{c * mj::exp(w) + x, mj::None{}}; },
                            c0v, xs).first);
  };
  Array g;
  auto seen = capture_scan_pe([&] { g = mj::grad(f)(c0); });
  ASSERT_EQ(seen.size(), 1u);
  auto hoisted = with_placement(seen[0], mj::ResidualPlacement::hoisted);
  ASSERT_EQ(hoisted.size(), 1u);
  EXPECT_EQ(hoisted[0]->made_by, "exp");
  EXPECT_EQ(hoisted[0]->aval.shape, (mj::Shape{3}));
  EXPECT_TRUE(with_placement(seen[0], mj::ResidualPlacement::stacked).empty());
  // The hoisted exp is a known equation outside the loop; nothing is stacked.
  ASSERT_EQ(seen[0].known_eqns.size(), 2u);
  EXPECT_EQ(seen[0].known_eqns[0].primitive->name, "exp");
  EXPECT_EQ(seen[0].known_eqns[1].outputs.size(), 1u);  // the known scan: final carry only
  // make_jaxpr(grad(f)): one exp at the top level (the hoisted one), besides the loop's own.
  EXPECT_EQ(count_top_level(mj::make_jaxpr(mj::grad(f))(c0), "exp"), 1) << mj::make_jaxpr(mj::grad(f))(c0);
  // d sum(c_6)/d c0 = exp(w)^6 elementwise.
  for (int i = 0; i < 3; ++i) {
    double want = std::exp(6 * double(w.data<float>()[i]));
    EXPECT_NEAR(g.data<float>()[i], want, 1e-5 * want);
  }
}

TEST(ScanPartialEval, LayerWeightsAreForwardedNotStacked) {
  // A scan over layers: h' = tanh(W_l h), weights stacked as xs [L, 4, 4]. The backward pass
  // needs W_l (forwarded: the xs operand itself, never re-stacked) and per-layer values
  // (stacked, [L, 4]).
  const int L = 5;
  Array Ws = rnd({L, 4, 4}, 13, 0.7f), h0 = rnd({4}, 14);
  auto run = [](const Array& ws, const Array& h, bool unrolled) {
    if (unrolled) {
      Array c = h;
      for (int l = 0; l < L; ++l) c = mj::tanh(mj::matmul(row(ws, l), c));
      return mj::sum(c);
    }
    return mj::sum(mj::scan([](const Array& c, const Array& W) { return std::pair{mj::tanh(mj::matmul(W, c)), mj::None{}}; },
                            h, ws).first);
  };
  auto gf = mj::grad([&](const Array& a, const Array& b) { return run(a, b, false); }, mj::argnums<0, 1>);
  std::tuple<Array, Array> g;
  auto seen = capture_scan_pe([&] { g = gf(Ws, h0); });
  ASSERT_EQ(seen.size(), 1u);
  auto stacked = with_placement(seen[0], mj::ResidualPlacement::stacked);
  ASSERT_FALSE(stacked.empty());
  for (auto* r : stacked) EXPECT_EQ(r->aval.shape, (mj::Shape{L, 4})) << r->made_by;
  for (auto& r : seen[0].residual_info) EXPECT_NE(r.aval.shape, (mj::Shape{L, 4, 4}));
  // The staged scan reads the weights operand itself.
  ASSERT_EQ(seen[0].staged_eqns.size(), 1u);
  ASSERT_EQ(seen[0].known_eqns.size(), 1u);
  const mj::Eqn& known = seen[0].known_eqns[0];
  mj::Var ws_primal = mj::atom_var(known.inputs.back());
  ASSERT_EQ(ws_primal.aval().shape, (mj::Shape{L, 4, 4}));
  int reads_ws = 0;
  for (auto& a : seen[0].staged_eqns[0].inputs) reads_ws += mj::atom_var(a) == ws_primal;
  EXPECT_EQ(reads_ws, 1);
  auto [uW, uh] = mj::grad([&](const Array& a, const Array& b) { return run(a, b, true); }, mj::argnums<0, 1>)(Ws, h0);
  expect_close(std::get<0>(g), uW);
  expect_close(std::get<1>(g), uh);
  // make_jaxpr(grad): the forward scan (the first) has no [L, 4, 4] output.
  auto jx = mj::make_jaxpr(gf)(Ws, h0);
  int scans = 0;
  for (auto& e : jx.jaxpr->eqns) {
    if (e.primitive->name != "scan" || scans++) continue;
    for (auto& o : e.outputs) EXPECT_NE(o.aval().shape, (mj::Shape{L, 4, 4})) << jx;
  }
  EXPECT_EQ(scans, 2) << jx;  // forward and transposed (the tangent scan is transposed directly)
}

TEST(ScanPartialEval, GradOfScanMemoryCaseStacksYPlusZ) {
  // docs/cases/grad-of-scan-memory.md at 30x30: body(c, y) = c + x * (y + z); loss = mean(c_n).
  // c_n = sum_t x (y_t + z) = n x 2 (ones), so d loss/dx = 2n; the only residual is y + z,
  // stacked [n, 30, 30].
  for (int n : {1, 5, 10}) {
    Array z = mj::ones({30, 30}), ys = mj::ones({n}), c0 = mj::zeros({30, 30});
    auto f = [&](const Array& x) {
      return mj::mean(mj::scan([&](const Array& c, const Array& y) { return std::pair{c + x * (y + z), mj::None{}}; },
                               c0, ys).first);
    };
    Array g;
    auto seen = capture_scan_pe([&] { g = mj::grad(f)(mj::scalar(0.5)); });
    EXPECT_EQ(g.item<float>(), float(2 * n));
    ASSERT_EQ(seen.size(), 1u);
    ASSERT_EQ(seen[0].residual_info.size(), 1u);
    const mj::ResidualInfo& r = seen[0].residual_info[0];
    EXPECT_EQ(r.placement, mj::ResidualPlacement::stacked);
    EXPECT_EQ(r.aval.shape, (mj::Shape{n, 30, 30}));
    EXPECT_EQ(r.made_by, "add");
  }
}

// ---- offloading inside a scan ---------------------------------------------------------------

// A test-local policy (save_and_offload_only_these_names({}, {name})): offload values named
// `name` to pinned_host, recompute everything else.
mj::PolicyPtr offload_named(const std::string& name) {
  return mj::checkpoint_policies::custom(
      "offload_" + name,
      [name](const mj::Primitive& p, const std::vector<mj::ShapedArray>&, const mj::Params& params) -> mj::PolicyDecision {
        if (p.name == "name" && mj::CheckpointNameParams::from(params).name == name)
          return mj::Offloadable{mj::MemoryKind::device, mj::MemoryKind::pinned_host};
        return mj::Recompute{};
      });
}

// docs/cases/offload-reverse-order.md: body(c, x) = (tanh(h), tanh(h)),
// h = name(sin(c (1+x)), "h"), checkpointed with `policy` (none: no checkpoint);
// loss = sum(c_n) + sum(ys).
Array reverse_order_loss(const Array& c0, const Array& xs, bool reverse, mj::PolicyPtr policy) {
  mj::ScanOptions o;
  o.reverse = reverse;
  auto step = [](const Array& c, const Array& x) {
    Array h = mj::checkpoint_name(mj::sin(c * (1.0 + x)), "h");
    return mj::tanh(h);
  };
  auto body = [&](const Array& c, const Array& x) {
    Array cn = policy ? mj::checkpoint(step, {.policy = policy})(c, x) : step(c, x);
    return std::pair{cn, cn};
  };
  auto [c, ys] = mj::scan(body, c0, xs, o);
  return mj::sum(c) + mj::sum(ys);
}

// Hand-derived reverse mode in double: a_t = c_t (1 + x_t), h_t = sin a_t, c_{t+1} = tanh h_t
// = y_t, visiting t = 0..n-1 (or n-1..0 with reverse). Backward from g = 1 (final carry):
// g += 1 (y_t); g_a = g (1 - tanh^2 h_t) cos a_t; dx_t = g_a c_t; g = g_a (1 + x_t).
std::pair<double, std::vector<double>> reverse_order_reference(int n, bool reverse) {
  const size_t un = static_cast<size_t>(n);
  std::vector<double> x(un), c(un + 1), a(un), h(un), dx(un);
  for (int i = 0; i < n; ++i) x[size_t(i)] = double(float(0.1 * (i + 1)));
  c[0] = 1;
  for (int k = 0; k < n; ++k) {
    int t = reverse ? n - 1 - k : k;
    a[size_t(k)] = c[size_t(k)] * (1 + x[size_t(t)]);
    h[size_t(k)] = std::sin(a[size_t(k)]);
    c[size_t(k) + 1] = std::tanh(h[size_t(k)]);
  }
  double g = 1;
  for (int k = n - 1; k >= 0; --k) {
    int t = reverse ? n - 1 - k : k;
    g += 1;
    double th = std::tanh(h[size_t(k)]);
    double ga = g * (1 - th * th) * std::cos(a[size_t(k)]);
    dx[size_t(t)] = ga * c[size_t(k)];
    g = ga * (1 + x[size_t(t)]);
  }
  return {g, dx};
}

TEST(ScanOffload, ReverseOrderCaseMatchesReferenceAndNoOffload) {
  for (bool reverse : {false, true}) {
    for (int n = 1; n <= 7; ++n) {
      Array xs = Array::allocate(mj::ShapedArray{{n, 1}, mj::DType::f32});
      for (int i = 0; i < n; ++i) xs.mutable_data<float>()[i] = float(0.1 * (i + 1));
      Array c0 = mj::ones({1});
      auto grads = [&](mj::PolicyPtr pol) {
        return mj::value_and_grad([&](const Array& a, const Array& b) { return reverse_order_loss(a, b, reverse, pol); },
                                  mj::argnums<0, 1>)(c0, xs);
      };
      std::pair<Array, std::tuple<Array, Array>> off;
      auto seen = capture_scan_pe([&] { off = grads(offload_named("h")); });
      auto plain = grads(nullptr);
      auto saved = grads(mj::checkpoint_policies::everything_saveable());
      // The offloaded residual is a stacked pinned_host buffer [n, 1] named h.
      ASSERT_EQ(seen.size(), 1u);
      int host = 0;
      for (auto& r : seen[0].residual_info)
        if (r.memory_kind == mj::MemoryKind::pinned_host) {
          ++host;
          EXPECT_EQ(r.name, "h");
          EXPECT_EQ(r.placement, mj::ResidualPlacement::stacked);
          EXPECT_EQ(r.aval.shape, (mj::Shape{n, 1}));
        }
      EXPECT_EQ(host, 1) << "n=" << n;
      auto [rc, rx] = reverse_order_reference(n, reverse);
      for (auto* v : {&off, &plain, &saved}) {
        auto& [gc, gx] = v->second;
        EXPECT_NEAR(gc.item<float>(), rc, 2e-6) << "n=" << n << " reverse=" << reverse;
        for (int i = 0; i < n; ++i) EXPECT_NEAR(gx.data<float>()[i], rx[size_t(i)], 2e-6) << "n=" << n;
      }
      expect_close(std::get<0>(off.second), std::get<0>(plain.second), 1e-6);
      expect_close(std::get<1>(off.second), std::get<1>(plain.second), 1e-6);
      if (n == 4 && !reverse) {
        // The case file's PyTorch float64 values.
        EXPECT_NEAR(off.first.item<float>(), 3.27062478, 1e-5);
        EXPECT_NEAR(std::get<0>(off.second).item<float>(), 0.48603949, 1e-6);
        const double want[] = {0.44185408, 0.57885069, 0.53279751, 0.46597050};
        for (int i = 0; i < 4; ++i) EXPECT_NEAR(std::get<1>(off.second).data<float>()[i], want[i], 1e-6);
      }
      if (n == 4 && reverse) EXPECT_NEAR(std::get<0>(off.second).item<float>(), 0.18475333, 1e-6);
    }
  }
}

TEST(ScanOffload, NamedCarryIsStackedInHostMemory) {
  // docs/cases/offload-named-carry.md in small: a scan over layers of a checkpointed block
  // h' = name(tanh(W_l h), "carry") with a policy offloading "carry". The backward pass needs
  // the block's input carry h (for W_l's cotangent); it was named "carry" as the previous
  // iteration's output, so the stacked carry lives in pinned_host; the weights are forwarded.
  const int L = 4;
  Array Ws = rnd({L, 5, 5}, 15, 0.6f), h0 = rnd({5}, 16);
  auto run = [](const Array& ws, const Array& h, mj::PolicyPtr pol) {
    auto block = [](const Array& c, const Array& W) { return mj::checkpoint_name(mj::tanh(mj::matmul(W, c)), "carry"); };
    return mj::sum(mj::scan([&](const Array& c, const Array& W) {
                     Array out = pol ? mj::checkpoint(block, {.policy = pol})(c, W) : block(c, W);
                     return std::pair{out, mj::None{}};
                   }, h, ws).first);
  };
  auto g = [&](mj::PolicyPtr pol) {
    return mj::grad([&](const Array& a, const Array& b) { return run(a, b, pol); }, mj::argnums<0, 1>)(Ws, h0);
  };
  std::tuple<Array, Array> off;
  auto seen = capture_scan_pe([&] { off = g(offload_named("carry")); });
  ASSERT_EQ(seen.size(), 1u);
  int host_carry = 0;
  for (auto& r : seen[0].residual_info) {
    EXPECT_NE(r.aval.shape, (mj::Shape{L, 5, 5}));  // weights forwarded, not stacked
    if (r.memory_kind == mj::MemoryKind::pinned_host) {
      ++host_carry;
      EXPECT_EQ(r.name, "carry");
      EXPECT_EQ(r.placement, mj::ResidualPlacement::stacked);
      EXPECT_EQ(r.aval.shape, (mj::Shape{L, 5}));
    }
  }
  EXPECT_EQ(host_carry, 1);
  // Without the policy the carry stacks on the device.
  auto seen_plain = capture_scan_pe([&] { (void)g(nullptr); });
  ASSERT_EQ(seen_plain.size(), 1u);
  for (auto& r : seen_plain[0].residual_info) EXPECT_EQ(r.memory_kind, mj::MemoryKind::device);
  auto plain = g(nullptr);
  expect_close(std::get<0>(off), std::get<0>(plain), 1e-6);
  expect_close(std::get<1>(off), std::get<1>(plain), 1e-6);
}

}  // namespace
