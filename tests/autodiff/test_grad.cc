// Tests of the reverse/forward-mode engine: grad, value_and_grad, vjp, jvp, linearize.
// Expected values are derived by hand (derivations in comments) or by finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <minijax/minijax.h>

namespace {

struct Mlp {
  mj::Array w, b;
};

}  // namespace

MJ_REGISTER_PYTREE(Mlp, w, b)

namespace {

float at(const mj::Array& a, int64_t i) { return mj::astype(a, mj::f32).data<float>()[i]; }

TEST(Grad, SinSumIsCos) {
  mj::Array x = mj::array({0.1f, 0.5f, -1.2f, 2.0f});
  auto g = mj::grad([](const mj::Array& v) { return mj::sum(mj::sin(v)); })(x);
  ASSERT_EQ(g.shape(), (mj::Shape{4}));
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(at(g, i), std::cos(at(x, i)), 1e-6);
}

TEST(Grad, ProductRuleWithArgnums) {
  // f(x, y) = sum(x * y + sin(x)):  df/dx = y + cos(x),  df/dy = x.
  mj::Array x = mj::array({1.f, 2.f, 3.f});
  mj::Array y = mj::array({-1.f, 0.5f, 4.f});
  auto f = [](const mj::Array& a, const mj::Array& b) { return mj::sum(a * b + mj::sin(a)); };
  auto [gx, gy] = mj::grad(f, mj::argnums<0, 1>)(x, y);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(at(gx, i), at(y, i) + std::cos(at(x, i)), 1e-6);
    EXPECT_NEAR(at(gy, i), at(x, i), 1e-6);
  }
  auto gy_only = mj::grad(f, mj::argnums<1>)(x, y);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(at(gy_only, i), at(x, i), 1e-6);
}

TEST(Grad, ValueAndGradOverMapAndStruct) {
  // loss = sum((w * x + b)^2) for scalar-shaped w, b: dL/dw = sum(2 r x), dL/db = sum(2 r).
  std::map<std::string, mj::Array> p{{"w", mj::array({2.f})}, {"b", mj::array({-1.f})}};
  mj::Array x = mj::array({1.f, 2.f, 3.f});
  auto loss = [&](const std::map<std::string, mj::Array>& q) {
    mj::Array r = q.at("w") * x + q.at("b");
    return mj::sum(r * r);
  };
  auto [v, g] = mj::value_and_grad(loss)(p);
  // r = [1, 3, 5]: value 35, dw = 2*(1*1 + 3*2 + 5*3) = 44, db = 2*(1+3+5) = 18.
  EXPECT_FLOAT_EQ(v.item<float>(), 35.f);
  EXPECT_FLOAT_EQ(at(g.at("w"), 0), 44.f);
  EXPECT_FLOAT_EQ(at(g.at("b"), 0), 18.f);

  Mlp m{mj::array({2.f}), mj::array({-1.f})};
  auto g2 = mj::grad([&](const Mlp& q) { mj::Array r = q.w * x + q.b; return mj::sum(r * r); })(m);
  EXPECT_FLOAT_EQ(at(g2.w, 0), 44.f);
  EXPECT_FLOAT_EQ(at(g2.b, 0), 18.f);
}

TEST(Grad, GradOfGradIsMinusSin) {
  auto f = [](const mj::Array& x) { return mj::sum(mj::sin(x)); };
  auto df = [&](const mj::Array& x) { return mj::sum(mj::grad(f)(x)); };
  mj::Array x = mj::array({0.3f, 1.1f});
  auto d2 = mj::grad(df)(x);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(at(d2, i), -std::sin(at(x, i)), 1e-6);
  // Third order: d3/dx3 sin = -cos.
  auto d3 = mj::grad([&](const mj::Array& v) { return mj::sum(mj::grad(df)(v)); })(x);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(at(d3, i), -std::cos(at(x, i)), 1e-6);
}

TEST(Grad, EagerGradAllowsBranchingOnValues) {
  // f(x) = x^2 if x > 0 else -x: f'(3) = 6, f'(-2) = -1.
  auto f = [](const mj::Array& x) {
    if (mj::sum(x) > 0.0) return mj::sum(x * x);
    return mj::sum(-x);
  };
  EXPECT_FLOAT_EQ(mj::grad(f)(mj::array({3.f})).data<float>()[0], 6.f);
  EXPECT_FLOAT_EQ(mj::grad(f)(mj::array({-2.f})).data<float>()[0], -1.f);
}

TEST(Grad, BranchingUnderMakeJaxprIsAConcretizationError) {
  auto f = [](const mj::Array& x) {
    if (mj::sum(x) > 0.0) return mj::sum(x * x);
    return mj::sum(-x);
  };
  try {
    mj::make_jaxpr(mj::grad(f))(mj::array({3.f}));
    FAIL() << "expected ConcretizationError";
  } catch (const mj::ConcretizationError& e) {
    EXPECT_NE(std::string(e.what()).find("JaxprTrace"), std::string::npos) << e.what();
  }
}

TEST(Grad, HasAux) {
  auto f = [](const mj::Array& x) {
    mj::Array y = x * x;
    return std::pair{mj::sum(y), y};
  };
  auto [g, aux] = mj::grad(f, mj::GradOptions{.has_aux = true})(mj::array({1.f, -2.f}));
  EXPECT_FLOAT_EQ(at(g, 0), 2.f);
  EXPECT_FLOAT_EQ(at(g, 1), -4.f);
  EXPECT_FALSE(aux.is_tracer());
  EXPECT_FLOAT_EQ(at(aux, 1), 4.f);
  auto [va, g2] = mj::value_and_grad(f, mj::GradOptions{.has_aux = true})(mj::array({3.f}));
  EXPECT_FLOAT_EQ(va.first.item<float>(), 9.f);
  EXPECT_FLOAT_EQ(at(va.second, 0), 9.f);
  EXPECT_FLOAT_EQ(at(g2, 0), 6.f);
}

TEST(Grad, IntegerInputsNeedAllowInt) {
  auto f = [](const mj::Array& x, const mj::Array& n) {
    return mj::sum(x * mj::astype(n, mj::f32));
  };
  mj::Array x = mj::array({1.f, 2.f});
  mj::Array n = mj::arange(2, mj::i32);
  EXPECT_THROW(mj::grad(f, mj::argnums<0, 1>)(x, n), mj::TypeError);
  auto [gx, gn] = mj::grad(f, mj::argnums<0, 1>, mj::GradOptions{.allow_int = true})(x, n);
  EXPECT_EQ(gn.dtype(), mj::float0);
  EXPECT_EQ(gn.shape(), (mj::Shape{2}));
  EXPECT_FLOAT_EQ(at(gx, 1), 1.f);  // d/dx sum(x * n) = n
}

TEST(Grad, NonScalarOutputIsATypeError) {
  try {
    mj::grad([](const mj::Array& x) { return mj::sin(x); })(mj::array({1.f, 2.f}));
    FAIL();
  } catch (const mj::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("f32[2]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test_grad.cc"), std::string::npos) << e.what();
  }
}

TEST(Jvp, MatchesHandDerivativeAndZeroTangents) {
  // f(x) = exp(x) * x: f' = exp(x) (1 + x).
  auto f = [](const mj::Array& x) { return mj::exp(x) * x; };
  mj::Array x = mj::array({0.f, 1.f, -0.5f});
  mj::Array t = mj::array({1.f, 2.f, 3.f});
  auto [y, ty] = mj::jvp(f, x, t);
  for (int i = 0; i < 3; ++i) {
    float xi = at(x, i);
    EXPECT_NEAR(at(y, i), std::exp(xi) * xi, 1e-6);
    EXPECT_NEAR(at(ty, i), std::exp(xi) * (1 + xi) * at(t, i), 1e-5);
  }
  // A function that ignores its input has a zero (materialized) tangent.
  auto [c, tc] = mj::jvp([](const mj::Array& v) { return mj::ones({3}) + mj::zeros_like(v) * 0.0; }, x, t);
  EXPECT_EQ(tc.shape(), (mj::Shape{3}));
}

TEST(Linearize, LinearMapIsReusable) {
  // f(x) = sin(x) * x: f'(x) = cos(x) x + sin(x).
  mj::Array x = mj::array({0.7f, -1.3f});
  auto [y, f_jvp] = mj::linearize([](const mj::Array& v) { return mj::sin(v) * v; }, x);
  for (float s : {1.f, -2.f}) {
    mj::Array t = mj::full({2}, s);
    mj::Array ty = f_jvp(t);
    for (int i = 0; i < 2; ++i) {
      float xi = at(x, i);
      EXPECT_NEAR(at(ty, i), s * (std::cos(xi) * xi + std::sin(xi)), 1e-5);
    }
  }
}

TEST(Vjp, PullbackOfVectorFunction) {
  // f(x, y) = x * y (elementwise): pullback(ct) = (ct * y, ct * x).
  mj::Array x = mj::array({1.f, 2.f});
  mj::Array y = mj::array({3.f, -4.f});
  auto [out, pb] = mj::vjp([](const mj::Array& a, const mj::Array& b) { return a * b; }, x, y);
  auto [gx, gy] = pb(mj::array({1.f, 10.f}));
  EXPECT_FLOAT_EQ(at(gx, 0), 3.f);
  EXPECT_FLOAT_EQ(at(gx, 1), -40.f);
  EXPECT_FLOAT_EQ(at(gy, 1), 20.f);
  EXPECT_THROW(pb(mj::array({1.f, 2.f, 3.f})), mj::TypeError);
}

TEST(Grad, EscapedTracerIsReported) {
  mj::Array leaked;
  mj::grad([&](const mj::Array& x) { leaked = x; return mj::sum(x); })(mj::array({1.f}));
  EXPECT_THROW(mj::sin(leaked) + 1.0, mj::UnexpectedTracerError);
}

TEST(Grad, MatmulSoftmaxCrossEntropyMatchesFiniteDifferences) {
  // A small classifier: loss(W) = -mean(log_softmax(x W)[label]); compare with central
  // differences in f64 (independent of the autodiff rules).
  mj::Array x = mj::astype(mj::array({0.2f, -0.1f, 0.4f, 0.3f, 0.5f, -0.6f}), mj::f64);
  x = mj::reshape(x, {2, 3});
  mj::Array w = mj::astype(mj::reshape(mj::array({0.1f, -0.2f, 0.3f, 0.0f, 0.5f, -0.4f}), {3, 2}), mj::f64);
  mj::Array labels = mj::one_hot(mj::astype(mj::array({1.f, 0.f}), mj::i32), 2, mj::f64);
  auto loss = [&](const mj::Array& W) {
    return -mj::mean(mj::sum(mj::log_softmax(mj::matmul(x, W), -1) * labels, 1));
  };
  mj::Array g = mj::grad(loss)(w);
  const double* gd = g.data<double>();
  std::vector<double> wv(w.data<double>(), w.data<double>() + 6);
  for (int i = 0; i < 6; ++i) {
    double eps = 1e-6;
    auto wp = wv, wm = wv;
    wp[size_t(i)] += eps;
    wm[size_t(i)] -= eps;
    double fp = loss(mj::array(wp, {3, 2}, mj::f64)).item<double>();
    double fm = loss(mj::array(wm, {3, 2}, mj::f64)).item<double>();
    EXPECT_NEAR(gd[i], (fp - fm) / (2 * eps), 1e-7) << i;
  }
}

}  // namespace

namespace {

TEST(Grad, ThroughJitMatchesEager) {
  // grad(jit(f)) == grad(f) with f(x) = sum(tanh(x) * x); f' = (1 - tanh^2) x + tanh.
  auto f = [](const mj::Array& x) { return mj::sum(mj::tanh(x) * x); };
  auto jf = mj::jit(f, "f");
  mj::Array x = mj::array({0.3f, -1.2f, 2.f});
  mj::Array g = mj::grad(jf)(x);
  for (int i = 0; i < 3; ++i) {
    float xi = x.data<float>()[i], t = std::tanh(xi);
    EXPECT_NEAR(g.data<float>()[i], (1 - t * t) * xi + t, 1e-5);
  }
  // The jitted function stays one pjit equation in the linearized program, and vmap keeps it.
  auto printed = mj::to_string(mj::make_jaxpr(mj::grad(jf))(x));
  EXPECT_NE(printed.find("pjit"), std::string::npos) << printed;
  mj::Array xs = mj::reshape(mj::arange(0.0, 6.0, 1.0), {2, 3}) * 0.1;
  mj::Array vg = mj::vmap(mj::grad(jf))(xs);
  for (int i = 0; i < 6; ++i) {
    float xi = xs.data<float>()[i], t = std::tanh(xi);
    EXPECT_NEAR(vg.data<float>()[i], (1 - t * t) * xi + t, 1e-5);
  }
}

TEST(Grad, HessianVectorProductByForwardOverReverse) {
  // f(x) = sum(x^3): H = diag(6x); H v = 6 x v.
  auto f = [](const mj::Array& x) { return mj::sum(x * x * x); };
  mj::Array x = mj::array({1.f, -2.f, 0.5f});
  mj::Array v = mj::array({1.f, 1.f, 2.f});
  auto [g, hv] = mj::jvp(mj::grad(f), x, v);
  for (int i = 0; i < 3; ++i) {
    float xi = x.data<float>()[i];
    EXPECT_NEAR(g.data<float>()[i], 3 * xi * xi, 1e-5);
    EXPECT_NEAR(hv.data<float>()[i], 6 * xi * v.data<float>()[i], 1e-5);
  }
}

}  // namespace

namespace {

TEST(Grad, SeveralOutputsAreATypeErrorNotTheFirstGradient) {
  mj::Array x = mj::array({1.f, 2.f});
  auto two = [](const mj::Array& a) { return std::vector<mj::Array>{mj::sum(a), mj::sum(a * a)}; };
  EXPECT_THROW(mj::grad(two)(x), mj::TypeError);
  auto pair = [](const mj::Array& a) { return std::pair{mj::sum(a), mj::sum(a * a)}; };
  EXPECT_THROW(mj::value_and_grad(pair)(x), mj::TypeError);
  auto aux_vec = [](const mj::Array& a) {
    return std::pair{std::vector<mj::Array>{mj::sum(a), mj::sum(a)}, a};
  };
  EXPECT_THROW(mj::grad(aux_vec, mj::GradOptions{.has_aux = true})(x), mj::TypeError);
}

TEST(Grad, OfAPinnedHostInput) {
  // d/dx sum(2 x) = 2, computed where the input lives.
  mj::Array x = mj::device_put(mj::array({1.f, -3.f}), "pinned_host");
  mj::Array g = mj::grad([](const mj::Array& a) { return mj::sum(a * 2.0); })(x);
  EXPECT_EQ(g.memory_kind(), mj::MemoryKind::pinned_host);
  EXPECT_FLOAT_EQ(g.data<float>()[1], 2.f);
}

TEST(Grad, RepeatedEagerGradDoesNotLeakTraces) {
  // Each eager grad stages a linear jaxpr; the trace must be freed with its residuals.
  std::weak_ptr<mj::ArrayImpl> residual;
  {
    mj::Array x = mj::array({0.5f, 1.5f});
    auto f = [&](const mj::Array& a) {
      mj::Array s = mj::sin(a);
      residual = mj::cos(a).concrete().impl_ptr();  // a value the linear jaxpr would capture
      return mj::sum(s * s);
    };
    mj::Array g = mj::grad(f)(x);
    EXPECT_EQ(g.shape(), (mj::Shape{2}));
  }
  EXPECT_TRUE(residual.expired());
}

}  // namespace

namespace {

TEST(Grad, ShapeErrorsUnderGradNameTheUsersLine) {
  try {
    mj::grad([](const mj::Array& a) { return mj::sum(mj::sin(mj::reshape(a, {7}))); })(mj::ones({2, 3}));
    FAIL() << "expected ShapeError";
  } catch (const mj::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("test_grad.cc"), std::string::npos) << e.what();
  }
}

}  // namespace
