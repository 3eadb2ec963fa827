// Tests of cond/while under autodiff and vmap: grad through both branches, closed-over values,
// cond inside scan and scan inside cond, vmap vs loops, jvp of while vs finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <minijax/minijax.h>

namespace {

using mj::Array;

float at(const Array& a, int64_t i) { return mj::astype(a, mj::f32).data<float>()[i]; }
Array T() { return mj::scalar(1, mj::bool_); }
Array F() { return mj::scalar(0, mj::bool_); }

// f(p, x) = sum(sin(x) * x) if p else sum(x^3)
Array branchy(const Array& p, const Array& x) {
  return mj::cond(p, [](const Array& v) { return mj::sum(mj::sin(v) * v); },
                  [](const Array& v) { return mj::sum(v * v * v); }, x);
}

TEST(CondGrad, BothBranches) {
  Array x = mj::array({0.5f, -1.f, 2.f});
  // true: d/dx sin(x) x = cos(x) x + sin(x); false: 3 x^2.
  Array gt = mj::grad([](const Array& v) { return branchy(T(), v); })(x);
  Array gf = mj::grad([](const Array& v) { return branchy(F(), v); })(x);
  for (int i = 0; i < 3; ++i) {
    float v = at(x, i);
    EXPECT_NEAR(at(gt, i), std::cos(v) * v + std::sin(v), 1e-5);
    EXPECT_NEAR(at(gf, i), 3 * v * v, 1e-5);
  }
  // Under jit the predicate is traced: both branches are staged and differentiated.
  auto jg = mj::jit(mj::grad([](const Array& v, const Array& p) { return branchy(p, v); }));
  Array jt = jg(x, T()), jf = jg(x, F());
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(at(jt, i), at(gt, i), 1e-6);
    EXPECT_NEAR(at(jf, i), at(gf, i), 1e-6);
  }
}

TEST(CondGrad, ClosedOverValueAndSecondOperand) {
  // g(w, x) = cond(p, x*w + w, x - w): true: dg/dw = sum(x + 1), dg/dx = w;
  // false: dg/dw = -n, dg/dx = 1 — w is only closed over by the branches.
  Array x = mj::array({1.f, 2.f});
  Array w = mj::array({3.f, -1.f});
  auto g = [](const Array& p) {
    return [p](const Array& wv, const Array& xv) {
      return mj::sum(mj::cond(p, [&](const Array& v) { return v * wv + wv; },
                              [&](const Array& v) { return v - wv; }, xv));
    };
  };
  auto [gw, gx] = mj::grad(g(T()), mj::argnums<0, 1>)(w, x);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(at(gw, i), at(x, i) + 1.f, 1e-6);
    EXPECT_NEAR(at(gx, i), at(w, i), 1e-6);
  }
  auto [fw, fx] = mj::grad(g(F()), mj::argnums<0, 1>)(w, x);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(at(fw, i), -1.f, 1e-6);
    EXPECT_NEAR(at(fx, i), 1.f, 1e-6);
  }
}

TEST(CondGrad, OutputZeroInOneBranchAndSwitch) {
  // switch over 3 branches, the middle one constant in x: d/dx = [2x, 0, cos x].
  std::vector<std::function<Array(const Array&)>> br{
      [](const Array& v) { return v * v; }, [](const Array& v) { return mj::zeros_like(v) + 5.0; },
      [](const Array& v) { return mj::sin(v); }};
  Array x = mj::scalar(0.7);
  for (int k = 0; k < 3; ++k) {
    Array idx = mj::scalar(k, mj::i32);
    float g = mj::grad([&](const Array& v) { return mj::switch_(idx, br, v); })(x).item<float>();
    float want = k == 0 ? 1.4f : (k == 1 ? 0.f : std::cos(0.7f));
    EXPECT_NEAR(g, want, 1e-6) << k;
  }
}

TEST(CondGrad, JvpMatchesFiniteDifferences) {
  Array x = mj::array({0.3f, 1.1f});
  Array t = mj::array({1.f, -0.5f});
  for (Array p : {T(), F()}) {
    auto f = [p](const Array& v) { return branchy(p, v); };
    auto [y, ty] = mj::jvp(f, x, t);
    const float eps = 1e-3f;
    float fd = (f(x + t * eps).item<float>() - f(x - t * eps).item<float>()) / (2 * eps);
    EXPECT_NEAR(ty.item<float>(), fd, 2e-3);
  }
}

TEST(CondGrad, LinearJaxprKeepsPrimalsKnown) {
  // grad under make_jaxpr: the cond appears twice (known primal half, staged tangent half and
  // its transpose); evaluating the gradient is the real check.
  Array x = mj::array({0.5f, 2.f});
  auto gf = mj::grad([](const Array& v, const Array& p) { return branchy(p, v); });
  std::string s = mj::to_string(mj::make_jaxpr(gf)(x, T()));
  size_t n = 0;
  for (size_t pos = s.find("= cond["); pos != std::string::npos; pos = s.find("= cond[", pos + 1)) ++n;
  EXPECT_GE(n, 2u) << s;
}

TEST(CondGrad, UnderCheckpointPolicies) {
  // checkpoint(f) with a cond inside, predicate an argument: the cond's partial-eval rule gets
  // the checkpoint's policy (all inputs known in the forward split). d/dx of the true branch
  // sum(sin(x) x) is cos(x) x + sin(x); of the false branch sum(x^3), 3x^2.
  Array x = mj::array({0.4f, -1.3f});
  for (auto policy : {mj::PolicyPtr(), mj::checkpoint_policies::dots_saveable(),
                      mj::checkpoint_policies::everything_saveable()}) {
    auto f = mj::checkpoint([](const Array& v, const Array& p) { return branchy(p, v); }, {.policy = policy});
    for (bool pv : {true, false}) {
      Array g = mj::grad([&](const Array& v) { return f(v, pv ? T() : F()); })(x);
      for (int i = 0; i < 2; ++i) {
        float v = at(x, i);
        float want = pv ? std::cos(v) * v + std::sin(v) : 3 * v * v;
        EXPECT_NEAR(at(g, i), want, 1e-5) << pv;
      }
    }
  }
}

TEST(CondGrad, CondInsideScan) {
  // carry c, xs: c <- c * x if x > 0 else c + x. With c0 = 1, xs = [2, -1, 3]:
  // c1 = 2, c2 = 1, c3 = 3. dc3/dc0 = 3*1*2 = 6 (mul by 2, add, mul by 3).
  auto f = [](const Array& c0, const Array& xs) {
    auto [c, ys] = mj::scan(
        [](const Array& c, const Array& x) {
          Array nc = mj::cond(x > 0.0, [](const Array& a, const Array& b) { return a * b; },
                              [](const Array& a, const Array& b) { return a + b; }, c, x);
          return std::pair{nc, nc};
        },
        c0, xs);
    return c;
  };
  Array xs = mj::array({2.f, -1.f, 3.f});
  EXPECT_FLOAT_EQ(f(mj::scalar(1.0), xs).item<float>(), 3.f);
  EXPECT_NEAR(mj::grad(f)(mj::scalar(1.0), xs).item<float>(), 6.f, 1e-5);
  // d c3 / d xs: x0 multiplies: c3 = ((c0*x0) + x1) * x2 -> [c0*x2, x2, c0*x0 + x1] = [3, 3, 1].
  Array gx = mj::grad(f, mj::argnums<1>)(mj::scalar(1.0), xs);
  EXPECT_NEAR(at(gx, 0), 3.f, 1e-5);
  EXPECT_NEAR(at(gx, 1), 3.f, 1e-5);
  EXPECT_NEAR(at(gx, 2), 1.f, 1e-5);
}

TEST(CondGrad, ScanInsideCond) {
  // true branch: prod of a scan multiplying by x three times: x^3 -> 3x^2; false: -x -> -1.
  auto f = [](const Array& p, const Array& x) {
    return mj::cond(p,
                    [](const Array& v) {
                      mj::ScanOptions o;
                      o.length = 3;
                      return mj::scan([&](const Array& c, const mj::None&) { return std::pair{c * v, mj::None{}}; },
                                      mj::ones_like(v), o)
                          .first;
                    },
                    [](const Array& v) { return -v; }, x);
  };
  Array x = mj::scalar(1.5);
  EXPECT_NEAR(mj::grad([&](const Array& v) { return f(T(), v); })(x).item<float>(), 3 * 1.5f * 1.5f, 1e-5);
  EXPECT_NEAR(mj::grad([&](const Array& v) { return f(F(), v); })(x).item<float>(), -1.f, 1e-6);
}

TEST(CondVmap, BatchedAndUnbatchedPredicate) {
  Array xs = mj::array({{1.f, 2.f}, {-3.f, 4.f}, {5.f, -6.f}});
  auto g = [](const Array& p, const Array& x) {
    return mj::cond(p, [](const Array& v) { return v * 10.0; }, [](const Array& v) { return v - 1.0; }, x);
  };
  // Batched predicate: row i uses its own predicate (x[i, 0] > 0).
  auto per_row = mj::vmap([&](const Array& x) { return g(mj::lax::squeeze(mj::lax::slice(x, {0}, {1}), {0}) > 0.0, x); });
  Array out = per_row(xs);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      float v = at(xs, i * 2 + j);
      float want = at(xs, i * 2) > 0 ? v * 10 : v - 1;
      EXPECT_FLOAT_EQ(at(out, i * 2 + j), want) << i << "," << j;
    }
  // Unbatched predicate: the same branch for every row; the batched version stays a cond.
  auto same = mj::vmap([&](const Array& x) { return g(F(), x); });
  Array o2 = same(xs);
  for (int k = 0; k < 6; ++k) EXPECT_FLOAT_EQ(at(o2, k), at(xs, k) - 1.f);
  std::string s = mj::to_string(mj::make_jaxpr(mj::vmap([&](const Array& x, const Array& p) { return g(p, x); },
                                                        {.in_axes = {0, mj::kNotMapped}}))(xs, T()));
  EXPECT_NE(s.find("= cond["), std::string::npos) << s;
  std::string sb = mj::to_string(mj::make_jaxpr(per_row)(xs));
  EXPECT_NE(sb.find("select_n"), std::string::npos) << sb;
  EXPECT_EQ(sb.find("= cond["), std::string::npos) << sb;
}

TEST(WhileGrad, JvpMatchesFiniteDifferences) {
  // x <- x * 1.5 + sin(x) while x < 20: piecewise smooth; the trip count is locally constant.
  auto f = [](const Array& x) {
    return mj::while_loop([](const Array& v) { return v < 20.0; },
                          [](const Array& v) { return v * 1.5 + mj::sin(v); }, x);
  };
  Array x = mj::scalar(1.3);
  auto [y, ty] = mj::jvp(f, x, mj::scalar(1.0));
  const float eps = 1e-3f;
  float fd = (f(x + eps).item<float>() - f(x - eps).item<float>()) / (2 * eps);
  EXPECT_FLOAT_EQ(y.item<float>(), f(x).item<float>());
  EXPECT_NEAR(ty.item<float>(), fd, 1e-2 * std::abs(fd));
  // Under jit as well.
  auto [jy, jty] = mj::jvp(mj::jit(f), x, mj::scalar(1.0));
  EXPECT_NEAR(jty.item<float>(), ty.item<float>(), 1e-4 * std::abs(fd));
}

TEST(WhileGrad, JvpWithConstantTangentAndIntCounter) {
  // (i, acc): acc <- acc * a for 4 steps: acc = a^4; d/da = 4 a^3 (a closed over).
  auto f = [](const Array& a) {
    using C = std::pair<Array, Array>;
    C r = mj::while_loop([](const C& c) { return c.first < 4; },
                         [&](const C& c) { return C{c.first + 1, c.second * a}; },
                         C{mj::scalar(0, mj::i32), mj::scalar(1.0)});
    return r.second;
  };
  auto [y, ty] = mj::jvp(f, mj::scalar(1.2), mj::scalar(1.0));
  EXPECT_NEAR(y.item<float>(), std::pow(1.2f, 4.f), 1e-5);
  EXPECT_NEAR(ty.item<float>(), 4 * std::pow(1.2f, 3.f), 1e-4);
}

TEST(WhileGrad, ReverseModeRaisesJaxMessage) {
  auto f = [](const Array& x) {
    return mj::while_loop([](const Array& v) { return v < 10.0; }, [](const Array& v) { return v * 2.0; }, x);
  };
  try {
    mj::grad(f)(mj::scalar(1.0));
    FAIL() << "grad of while_loop succeeded";
  } catch (const mj::NotDifferentiableError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop "
                     "with dynamic start/stop values. Try using lax.scan, or using fori_loop with "
                     "constant start/stop."),
              std::string::npos)
        << m;
  }
  // fori_loop with traced bounds is a while_loop: same error. The bound is traced here because it
  // is an xs slice inside a scan body (JAX's testWhileGradError, "fori_inside_scan"); a bound that
  // is a value makes a scan, as in JAX (tests/core/test_loop_options.cc).
  auto g = [](const Array& x, const Array& ns) {
    return mj::scan([](const Array& c, const Array& n) {
      return std::pair{mj::fori_loop(mj::scalar(0, mj::i32), n, [](const Array&, const Array& v) { return v * 2.0; }, c),
                       mj::None{}};
    }, x, ns).first;
  };
  EXPECT_THROW(mj::grad(g)(mj::scalar(1.0), mj::array({3.0}, {1}, mj::i32)), mj::NotDifferentiableError);
  // But grad where the loop does not depend on the differentiated input works.
  auto h = [](const Array& x) {
    Array n = mj::while_loop([](const Array& v) { return v < 10.0; }, [](const Array& v) { return v * 2.0; },
                             mj::scalar(1.0));
    return x * n;  // n = 16
  };
  EXPECT_FLOAT_EQ(mj::grad(h)(mj::scalar(3.0)).item<float>(), 16.f);
}

TEST(WhileVmap, BatchedPredicateRunsUntilAllDone) {
  // Per example: count doublings of x until it exceeds 50.
  using C = std::pair<Array, Array>;
  auto f = [](const Array& x) {
    C r = mj::while_loop([](const C& c) { return c.second <= 50.0; },
                         [](const C& c) { return C{c.first + 1, c.second * 2.0}; },
                         C{mj::scalar(0, mj::i32), x});
    return r;
  };
  Array xs = mj::array({1.f, 30.f, 60.f, 7.f});
  auto [n, v] = mj::vmap(f)(xs);
  for (int i = 0; i < 4; ++i) {
    // Reference: the plain C++ loop.
    float x = at(xs, i);
    int cnt = 0;
    while (x <= 50.f) x *= 2.f, ++cnt;
    EXPECT_EQ(mj::astype(n, mj::i32).data<int32_t>()[i], cnt) << i;
    EXPECT_FLOAT_EQ(at(v, i), x) << i;
  }
}

TEST(WhileVmap, UnbatchedPredicateBatchedCarry) {
  // Three iterations for every example (counter unbatched), x batched: x * 2^3.
  using C = std::pair<Array, Array>;
  auto f = [](const Array& x) {
    return mj::while_loop([](const C& c) { return c.first < 3; },
                          [](const C& c) { return C{c.first + 1, c.second * 2.0}; },
                          C{mj::scalar(0, mj::i32), x})
        .second;
  };
  Array xs = mj::array({1.f, -2.f, 0.5f});
  Array out = mj::vmap(f)(xs);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(at(out, i), 8.f * at(xs, i));
  std::string s = mj::to_string(mj::make_jaxpr(mj::vmap(f))(xs));
  EXPECT_EQ(s.find("select_n"), std::string::npos) << s;
  // vmap of the jvp agrees with per-example jvps.
  auto jf = [&](const Array& x) { return std::get<1>(mj::jvp(f, x, mj::ones_like(x))); };
  Array tj = mj::vmap(jf)(xs);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(at(tj, i), 8.f);
}

}  // namespace
