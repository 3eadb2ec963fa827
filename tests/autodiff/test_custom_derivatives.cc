// Tests of custom_jvp / custom_vjp: rules used under jvp/grad/vmap, staging, errors.
// Expected values are derived by hand (derivations in comments).
#include <gtest/gtest.h>

#include <cmath>
#include <minijax/minijax.h>

namespace {

using mj::Array;

double at(const Array& a, int64_t i = 0) { return mj::astype(a, mj::f64).data<double>()[i]; }

// JAX docs' log1pexp: log(1 + e^x); its naive derivative e^x / (1 + e^x) overflows to inf/inf =
// nan at x = 100 in f32, the custom rule uses 1 - 1/(1 + e^x), which is 1.0 there.
auto make_log1pexp() {
  return mj::custom_jvp(
      [](const Array& x) { return mj::log1p(mj::exp(x)); },
      [](const auto& primals, const auto& tangents) {
        auto [x] = primals;
        auto [x_dot] = tangents;
        Array ans = mj::log1p(mj::exp(x));
        Array ans_dot = (1.0 - 1.0 / (1.0 + mj::exp(x))) * x_dot;
        return std::pair{ans, ans_dot};
      },
      "log1pexp");
}

TEST(CustomJvp, Log1pexpStableGradient) {
  auto log1pexp = make_log1pexp();
  // Without the rule the gradient at 100 is nan (inf / inf): the rule must be used.
  auto naive = [](const Array& x) { return mj::log1p(mj::exp(x)); };
  EXPECT_TRUE(std::isnan(at(mj::grad(naive)(mj::scalar(100.0)))));
  Array g = mj::grad(log1pexp)(mj::scalar(100.0));
  EXPECT_EQ(g.dtype(), mj::f32);
  EXPECT_DOUBLE_EQ(at(g), 1.0);
  // Forward value: log(1 + e^3) = 3.04858735157374...
  EXPECT_NEAR(at(log1pexp(mj::scalar(3.0))), 3.0485873515737421, 1e-6);
  // grad at 0: 1 - 1/2 = 0.5; at 3: 1 - 1/(1+e^3) = sigmoid(3) = 0.95257412682243...
  EXPECT_NEAR(at(mj::grad(log1pexp)(mj::scalar(0.0))), 0.5, 1e-7);
  EXPECT_NEAR(at(mj::grad(log1pexp)(mj::scalar(3.0))), 0.9525741268224334, 1e-6);
}

TEST(CustomJvp, RuleIsUsedNotTheFunction) {
  // f = sin with a deliberately different derivative 2*t: jvp must give 2*t, not cos(x)*t.
  auto f = mj::custom_jvp([](const Array& x) { return mj::sin(x); },
                          [](const Array& x, const Array& t) { return std::pair{mj::sin(x), 2.0 * t}; });
  Array x = mj::array({0.3f, -1.0f});
  Array t = mj::array({1.0f, 0.25f});
  auto [y, ty] = mj::jvp(f, x, t);
  EXPECT_NEAR(at(y, 0), std::sin(0.3), 1e-6);
  EXPECT_NEAR(at(y, 1), std::sin(-1.0), 1e-6);
  EXPECT_NEAR(at(ty, 0), 2.0, 1e-7);
  EXPECT_NEAR(at(ty, 1), 0.5, 1e-7);
  // grad of sum(f(x)) is 2 everywhere (the rule is linear in t, so it transposes).
  Array g = mj::grad([&](const Array& v) { return mj::sum(f(v)); })(x);
  EXPECT_NEAR(at(g, 0), 2.0, 1e-7);
  EXPECT_NEAR(at(g, 1), 2.0, 1e-7);
  // The primal value is the function's.
  EXPECT_NEAR(at(f(x), 0), std::sin(0.3), 1e-6);
}

TEST(CustomJvp, SecondDerivativeDifferentiatesTheRule) {
  // f(x) = x^3 with rule t * 3 x^2; d2/dx2 = 6x (the rule itself is differentiated).
  auto f = mj::custom_jvp([](const Array& x) { return x * x * x; },
                          [](const Array& x, const Array& t) { return std::pair{x * x * x, 3.0 * x * x * t}; });
  auto d1 = mj::grad([&](const Array& x) { return f(x); });
  auto d2 = mj::grad([&](const Array& x) { return d1(x); });
  EXPECT_NEAR(at(d1(mj::scalar(2.0))), 12.0, 1e-5);
  EXPECT_NEAR(at(d2(mj::scalar(2.0))), 12.0, 1e-5);
  EXPECT_NEAR(at(d2(mj::scalar(-0.5))), -3.0, 1e-5);
}

TEST(CustomJvp, TwoArgumentsAndPairOutput) {
  // f(x, y) = (x*y, x+y) with the correct rule written by hand:
  // d(xy) = y dx + x dy, d(x+y) = dx + dy.
  auto f = mj::custom_jvp(
      [](const Array& x, const Array& y) { return std::pair{x * y, x + y}; },
      [](const auto& p, const auto& t) {
        auto [x, y] = p;
        auto [dx, dy] = t;
        return std::pair{std::pair{x * y, x + y}, std::pair{y * dx + x * dy, dx + dy}};
      });
  // grad wrt y of (xy) + 3 (x + y) at x=2, y=5:  x + 3 = 5.
  auto g = mj::grad([&](const Array& x, const Array& y) {
    auto [a, b] = f(x, y);
    return a + 3.0 * b;
  }, mj::argnums<1>)(mj::scalar(2.0), mj::scalar(5.0));
  EXPECT_NEAR(at(g), 5.0, 1e-6);
}

TEST(CustomJvp, StagedAsCustomJvpCall) {
  auto log1pexp = make_log1pexp();
  auto j = mj::make_jaxpr([&](const Array& x) { return log1pexp(x); })(mj::scalar(1.0));
  std::string s = mj::to_string(j);
  EXPECT_NE(s.find("custom_jvp_call["), std::string::npos) << s;
  EXPECT_NE(s.find("call_jaxpr={ lambda ; "), std::string::npos) << s;
  EXPECT_NE(s.find("jvp=log1pexp_jvp"), std::string::npos) << s;
  EXPECT_NE(s.find("name=log1pexp"), std::string::npos) << s;
  EXPECT_NE(s.find("symbolic_zeros=False"), std::string::npos) << s;
  EXPECT_NE(s.find("log1p"), std::string::npos) << s;
  // No consts: num_consts is omitted, as JAX prints it.
  EXPECT_EQ(s.find("num_consts"), std::string::npos) << s;
  // The staged jaxpr evaluates to the same value.
  auto out = mj::eval_jaxpr(j, {mj::scalar(1.0)});
  EXPECT_NEAR(at(out.at(0)), std::log1p(std::exp(1.0)), 1e-6);
}

TEST(CustomJvp, ClosedOverConstantIsHoisted) {
  Array w = mj::array({2.f, 3.f});
  auto f = mj::custom_jvp([w](const Array& x) { return x * w; },
                          [w](const Array& x, const Array& t) { return std::pair{x * w, t * w}; });
  auto j = mj::make_jaxpr([&](const Array& x) { return f(x); })(mj::array({1.f, 1.f}));
  EXPECT_NE(mj::to_string(j).find("num_consts=1"), std::string::npos) << j;
  // d/dx sum(x * w) = w.
  Array g = mj::grad([&](const Array& x) { return mj::sum(f(x)); })(mj::array({1.f, -1.f}));
  EXPECT_NEAR(at(g, 0), 2.0, 1e-7);
  EXPECT_NEAR(at(g, 1), 3.0, 1e-7);
}

TEST(CustomJvp, VmapOfFunctionAndOfItsJvp) {
  auto f = mj::custom_jvp([](const Array& x) { return mj::sin(x); },
                          [](const Array& x, const Array& t) { return std::pair{mj::sin(x), 2.0 * t}; });
  Array xs = mj::array({{0.1f, 0.2f}, {0.3f, 0.4f}, {0.5f, 0.6f}});
  Array ys = mj::vmap([&](const Array& x) { return f(x); })(xs);
  ASSERT_EQ(ys.shape(), (mj::Shape{3, 2}));
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(at(ys, i), std::sin(0.1 * (i + 1)), 1e-6);
  // jvp of the vmapped function: the batched rule (2*t) is used.
  Array ts = mj::full({3, 2}, 1.5);
  auto [po, to] = mj::jvp(mj::vmap([&](const Array& x) { return f(x); }), xs, ts);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(at(to, i), 3.0, 1e-6);
  // vmap of grad: per-row gradient of sum(f(row)) is 2.
  auto gf = mj::grad([&](const Array& x) { return mj::sum(f(x)); });
  Array gs = mj::vmap([&](const Array& x) { return gf(x); })(xs);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(at(gs, i), 2.0, 1e-6);
  // grad of vmap.
  Array g2 = mj::grad([&](const Array& x) {
    return mj::sum(mj::vmap([&](const Array& r) { return f(r); })(x));
  })(xs);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(at(g2, i), 2.0, 1e-6);
}

TEST(CustomJvp, WrongTangentShapeIsATypeError) {
  auto f = mj::custom_jvp([](const Array& x) { return mj::sin(x); },
                          [](const Array& x, const Array& t) { return std::pair{mj::sin(x), mj::sum(t)}; },
                          "bad");
  try {
    mj::jvp(f, mj::array({1.f, 2.f}), mj::array({1.f, 1.f}));
    FAIL() << "expected TypeError";
  } catch (const mj::TypeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("Custom JVP rule of 'bad'"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[2]"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[]"), std::string::npos) << m;
  }
}

TEST(CustomJvp, DifferentiatingAClosedOverValueIsAnError) {
  // f closes over y, which grad differentiates: the rule cannot see y's tangent.
  auto outer = [](const Array& y) {
    auto f = mj::custom_jvp([y](const Array& x) { return x * y; },
                            [y](const Array& x, const Array& t) { return std::pair{x * y, t * y}; });
    return f(mj::scalar(3.0));
  };
  EXPECT_THROW(mj::grad(outer)(mj::scalar(2.0)), mj::ValueError);
}

// ---- custom_vjp ---------------------------------------------------------------------------------

// Identity whose backward pass clips the cotangent to [-1, 1].
auto make_clip_gradient() {
  return mj::custom_vjp(
      [](const Array& x) { return x; },
      [](const Array& x) { return std::pair{x, std::vector<Array>{}}; },
      [](const std::vector<Array>&, const Array& ct) { return mj::clip(ct, -1.0, 1.0); },
      "clip_gradient");
}

TEST(CustomVjp, ClippedGradient) {
  auto clip_gradient = make_clip_gradient();
  Array x = mj::array({0.5f, -2.f, 3.f});
  // Forward is the identity.
  Array y = clip_gradient(x);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(at(y, i), at(x, i));
  // d/dx sum(5 * f(x)): ct 5 clipped to 1 per element.
  Array g = mj::grad([&](const Array& v) { return mj::sum(5.0 * clip_gradient(v)); })(x);
  for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(at(g, i), 1.0);
  // A small cotangent passes unchanged: d/dx sum(0.25 f(x)) = 0.25; negative clipped to -1.
  Array g2 = mj::grad([&](const Array& v) { return mj::sum(clip_gradient(v) * mj::array({0.25f, -7.f, 1.f})); })(x);
  EXPECT_DOUBLE_EQ(at(g2, 0), 0.25);
  EXPECT_DOUBLE_EQ(at(g2, 1), -1.0);
  EXPECT_DOUBLE_EQ(at(g2, 2), 1.0);
}

TEST(CustomVjp, ValueAndGradAndComposition) {
  auto clip_gradient = make_clip_gradient();
  // h(x) = sin(3 * clip_gradient(x^2)) at x = 1: value sin(3);
  // ct into clip_gradient = 3 cos(3) = -2.97 -> clipped to -1; then d(x^2)/dx = 2x = 2: grad -2.
  auto h = [&](const Array& x) { return mj::sin(3.0 * clip_gradient(x * x)); };
  auto [v, g] = mj::value_and_grad(h)(mj::scalar(1.0));
  EXPECT_NEAR(at(v), std::sin(3.0), 1e-6);
  EXPECT_NEAR(at(g), -2.0, 1e-6);
  // At x = 0.3: ct = 3 cos(0.27) = 2.891 -> 1; grad = 1 * 2 * 0.3 = 0.6.
  EXPECT_NEAR(at(mj::grad(h)(mj::scalar(0.3))), 0.6, 1e-6);
  // Where |ct| < 1 it passes: h2(x) = 0.1 * sin(clip_gradient(x)) at 0.5 -> 0.1 cos(0.5).
  auto h2 = [&](const Array& x) { return 0.1 * mj::sin(clip_gradient(x)); };
  EXPECT_NEAR(at(mj::grad(h2)(mj::scalar(0.5))), 0.1 * std::cos(0.5), 1e-6);
}

TEST(CustomVjp, ResidualsAndTwoArguments) {
  // f(x, y) = x * y with fwd saving (x, y) and bwd returning (ct*y, ct*x) scaled by 10 in x to
  // prove bwd is what runs: grads (10*y, x).
  auto f = mj::custom_vjp(
      [](const Array& x, const Array& y) { return x * y; },
      [](const Array& x, const Array& y) { return std::pair{x * y, std::pair{x, y}}; },
      [](const std::pair<Array, Array>& res, const Array& ct) {
        return std::tuple{10.0 * ct * res.second, ct * res.first};
      },
      "mul10");
  auto [gx, gy] = mj::grad([&](const Array& x, const Array& y) { return f(x, y); },
                           mj::argnums<0, 1>)(mj::scalar(2.0), mj::scalar(7.0));
  EXPECT_NEAR(at(gx), 70.0, 1e-5);
  EXPECT_NEAR(at(gy), 2.0, 1e-6);
  auto j = mj::make_jaxpr([&](const Array& x, const Array& y) { return f(x, y); })(mj::scalar(2.0), mj::scalar(7.0));
  std::string s = mj::to_string(j);
  EXPECT_NE(s.find("custom_vjp_call["), std::string::npos) << s;
  EXPECT_NE(s.find("fwd=mul10_fwd"), std::string::npos) << s;
  EXPECT_NE(s.find("bwd=mul10_bwd"), std::string::npos) << s;
  EXPECT_NE(s.find("name=mul10"), std::string::npos) << s;
}

TEST(CustomVjp, ForwardModeIsAnError) {
  auto clip_gradient = make_clip_gradient();
  try {
    mj::jvp(clip_gradient, mj::scalar(1.0), mj::scalar(1.0));
    FAIL() << "expected NotDifferentiableError";
  } catch (const mj::NotDifferentiableError& e) {
    EXPECT_NE(std::string(e.what()).find("can't apply forward-mode autodiff (jvp) to a custom_vjp function"),
              std::string::npos)
        << e.what();
  }
}

TEST(CustomVjp, WrongCotangentShapeIsATypeError) {
  auto f = mj::custom_vjp([](const Array& x) { return mj::sum(x); },
                          [](const Array& x) { return std::pair{mj::sum(x), x}; },
                          [](const Array&, const Array& ct) { return ct; }, "badbwd");
  try {
    mj::grad(f)(mj::array({1.f, 2.f}));
    FAIL() << "expected TypeError";
  } catch (const mj::TypeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("badbwd"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[2]"), std::string::npos) << m;
  }
}

TEST(CustomVjp, VmapOfGradAndGradOfVmap) {
  auto clip_gradient = make_clip_gradient();
  Array xs = mj::array({{1.f, 2.f}, {3.f, 4.f}});
  // Per row: d/dx sum(4 * f(x)) = clip(4) = 1.
  auto gf = mj::grad([&](const Array& x) { return mj::sum(4.0 * clip_gradient(x)); });
  Array gs = mj::vmap([&](const Array& x) { return gf(x); })(xs);
  ASSERT_EQ(gs.shape(), (mj::Shape{2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(at(gs, i), 1.0);
  // grad of a vmapped custom_vjp: the batched bwd clips each element: 0.5 passes, 4 -> 1.
  Array w = mj::array({{0.5f, 4.f}, {0.5f, 4.f}});
  Array g = mj::grad([&](const Array& x) {
    return mj::sum(w * mj::vmap([&](const Array& r) { return clip_gradient(r); })(x));
  })(xs);
  EXPECT_DOUBLE_EQ(at(g, 0), 0.5);
  EXPECT_DOUBLE_EQ(at(g, 1), 1.0);
  EXPECT_DOUBLE_EQ(at(g, 2), 0.5);
  EXPECT_DOUBLE_EQ(at(g, 3), 1.0);
}

TEST(CustomVjp, GradOfGradDifferentiatesBwd) {
  // sin with fwd saving cos(x) and bwd ct * cos(x): grad = cos(x); grad(grad) differentiates the
  // residual cos(x) through fwd: -sin(x).
  auto f = mj::custom_vjp([](const Array& x) { return mj::sin(x); },
                          [](const Array& x) { return std::pair{mj::sin(x), mj::cos(x)}; },
                          [](const Array& c, const Array& ct) { return ct * c; });
  auto g1 = mj::grad([&](const Array& x) { return f(x); });
  auto g2 = mj::grad([&](const Array& x) { return g1(x); });
  EXPECT_NEAR(at(g1(mj::scalar(0.4))), std::cos(0.4), 1e-6);
  EXPECT_NEAR(at(g2(mj::scalar(0.4))), -std::sin(0.4), 1e-6);
}

TEST(CustomDerivatives, UnderJit) {
  // grad through a jitted function containing the custom functions.
  auto log1pexp = make_log1pexp();
  auto jf = mj::jit([&](const Array& x) { return log1pexp(x); });
  EXPECT_DOUBLE_EQ(at(mj::grad(jf)(mj::scalar(100.0))), 1.0);
  auto clip_gradient = make_clip_gradient();
  auto jg = mj::jit([&](const Array& x) { return mj::sum(5.0 * clip_gradient(x)); });
  Array g = mj::grad(jg)(mj::array({1.f, 2.f}));
  EXPECT_DOUBLE_EQ(at(g, 0), 1.0);
  EXPECT_DOUBLE_EQ(at(g, 1), 1.0);
}

TEST(CustomJvp, HessianDifferentiatesTheRule) {
  // d2/dx2 log1pexp = sigmoid(x) (1 - sigmoid(x)), through the rule 1 - 1/(1 + e^x).
  auto log1pexp = make_log1pexp();
  Array H = mj::hessian([&](const Array& x) { return mj::sum(log1pexp(x)); })(mj::array({0.0, 2.0}, {2}, mj::f64));
  auto s = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  EXPECT_NEAR(at(H, 0), 0.25, 1e-12);
  EXPECT_NEAR(at(H, 3), s(2.0) * (1 - s(2.0)), 1e-12);
  EXPECT_NEAR(at(H, 1), 0.0, 1e-12);
}

}  // namespace
