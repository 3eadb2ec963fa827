// Tests of jacfwd, jacrev and hessian against hand-derived Jacobians and Hessians.
// Derivations are in the comments; values are checked elementwise.
#include <gtest/gtest.h>

#include <cmath>
#include <minijax/minijax.h>

namespace {

using mj::Array;

double at(const Array& a, int64_t i) { return mj::astype(a, mj::f64).data<double>()[i]; }

// x[i] as a rank-0 array.
Array elem(const Array& x, int64_t i) { return mj::lax::reshape(mj::lax::slice(x, {i}, {i + 1}), {}); }

// f(x) = [x0*x1, sin(x2), x0^2]
// J = [[x1, x0, 0], [0, 0, cos(x2)], [2 x0, 0, 0]]
Array f3(const Array& x) {
  return mj::stack({elem(x, 0) * elem(x, 1), mj::sin(elem(x, 2)), mj::square(elem(x, 0))});
}

void expect_f3_jacobian(const Array& J, const std::vector<double>& x, double tol) {
  ASSERT_EQ(J.shape(), (mj::Shape{3, 3}));
  const double want[9] = {x[1], x[0], 0, 0, 0, std::cos(x[2]), 2 * x[0], 0, 0};
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(at(J, i), want[i], tol) << "element " << i;
}

TEST(Jacobian, JacfwdHandDerived) {
  std::vector<double> xv = {1.5, -2.0, 0.7};
  Array x = mj::array(xv, {3}, mj::f64);
  expect_f3_jacobian(mj::jacfwd(f3)(x), xv, 1e-12);
}

TEST(Jacobian, JacrevHandDerived) {
  std::vector<double> xv = {1.5, -2.0, 0.7};
  Array x = mj::array(xv, {3}, mj::f64);
  expect_f3_jacobian(mj::jacrev(f3)(x), xv, 1e-12);
  // f32 too.
  expect_f3_jacobian(mj::jacrev(f3)(mj::array({1.5f, -2.f, 0.7f})), xv, 1e-6);
}

TEST(Jacobian, MatrixInputShapeIsOutPlusIn) {
  // f(W) = tanh(W v), W: [2, 3], v: [3].  dz_i/dW_kl = delta_ik v_l, so
  // J[i, k, l] = delta_ik (1 - tanh(z_i)^2) v_l, shape [2, 2, 3].
  std::vector<double> wv = {0.1, -0.2, 0.3, 0.4, 0.5, -0.6};
  std::vector<double> vv = {1.0, 2.0, -1.5};
  Array W = mj::array(wv, {2, 3}, mj::f64);
  Array v = mj::array(vv, {3}, mj::f64);
  auto f = [&](const Array& w) { return mj::tanh(mj::matmul(w, v)); };
  Array Jf = mj::jacfwd(f)(W);
  Array Jr = mj::jacrev(f)(W);
  ASSERT_EQ(Jf.shape(), (mj::Shape{2, 2, 3}));
  ASSERT_EQ(Jr.shape(), (mj::Shape{2, 2, 3}));
  for (int i = 0; i < 2; ++i) {
    double z = 0;
    for (int l = 0; l < 3; ++l) z += wv[size_t(i * 3 + l)] * vv[size_t(l)];
    double s = 1 - std::tanh(z) * std::tanh(z);
    for (int k = 0; k < 2; ++k)
      for (int l = 0; l < 3; ++l) {
        double want = i == k ? s * vv[size_t(l)] : 0.0;
        EXPECT_NEAR(at(Jf, i * 6 + k * 3 + l), want, 1e-12);
        EXPECT_NEAR(at(Jr, i * 6 + k * 3 + l), want, 1e-12);
      }
  }
}

TEST(Jacobian, ScalarInputAndOutput) {
  // d/dx x^3 = 3x^2: shapes [] + [] = [].
  auto f = [](const Array& x) { return x * x * x; };
  Array x = mj::scalar(2.0, mj::f64);
  Array a = mj::jacfwd(f)(x), b = mj::jacrev(f)(x);
  EXPECT_EQ(a.shape(), mj::Shape{});
  EXPECT_NEAR(at(a, 0), 12.0, 1e-12);
  EXPECT_NEAR(at(b, 0), 12.0, 1e-12);
}

TEST(Jacobian, ArgnumsAndPytreeOutput) {
  // g(a, x) = (a * x, sum(x)):  d/dx (a x) = diag(a),  d/dx sum(x) = ones.
  Array a = mj::array({2.0, 3.0}, {2}, mj::f64);
  Array x = mj::array({5.0, 7.0}, {2}, mj::f64);
  auto g = [](const Array& a_, const Array& x_) { return std::pair{a_ * x_, mj::sum(x_)}; };
  auto [j1, j2] = mj::jacfwd(g, mj::argnums<1>)(a, x);
  ASSERT_EQ(j1.shape(), (mj::Shape{2, 2}));
  ASSERT_EQ(j2.shape(), (mj::Shape{2}));
  EXPECT_NEAR(at(j1, 0), 2.0, 1e-12);
  EXPECT_NEAR(at(j1, 1), 0.0, 1e-12);
  EXPECT_NEAR(at(j1, 2), 0.0, 1e-12);
  EXPECT_NEAR(at(j1, 3), 3.0, 1e-12);
  EXPECT_NEAR(at(j2, 0), 1.0, 1e-12);
  EXPECT_NEAR(at(j2, 1), 1.0, 1e-12);
  auto [r1, r2] = mj::jacrev(g, mj::argnums<0>)(a, x);  // d/da (a x) = diag(x), d/da sum(x) = 0
  EXPECT_NEAR(at(r1, 0), 5.0, 1e-12);
  EXPECT_NEAR(at(r1, 3), 7.0, 1e-12);
  EXPECT_NEAR(at(r1, 1), 0.0, 1e-12);
  EXPECT_NEAR(at(r2, 0), 0.0, 1e-12);
  EXPECT_NEAR(at(r2, 1), 0.0, 1e-12);
  // Two argnums: a tuple of Jacobians.
  auto both = mj::jacrev([](const Array& a_, const Array& x_) { return mj::sum(a_ * x_); },
                         mj::argnums<0, 1>)(a, x);
  EXPECT_NEAR(at(std::get<0>(both), 1), 7.0, 1e-12);
  EXPECT_NEAR(at(std::get<1>(both), 1), 3.0, 1e-12);
}

// Rosenbrock in 3-D: f = sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2, i = 0, 1.
// H00 = 1200 x0^2 - 400 x1 + 2,  H01 = -400 x0,  H02 = 0,
// H11 = 200 + 1200 x1^2 - 400 x2 + 2,  H12 = -400 x1,  H22 = 200 (symmetric).
Array rosenbrock(const Array& x) {
  Array lo = mj::lax::slice(x, {0}, {2});
  Array hi = mj::lax::slice(x, {1}, {3});
  return mj::sum(100.0 * mj::square(hi - mj::square(lo)) + mj::square(1.0 - lo));
}

TEST(Jacobian, RosenbrockHessian) {
  const double x0 = 0.5, x1 = -1.25, x2 = 2.0;
  Array x = mj::array({x0, x1, x2}, {3}, mj::f64);
  Array H = mj::hessian(rosenbrock)(x);
  ASSERT_EQ(H.shape(), (mj::Shape{3, 3}));
  const double want[9] = {1200 * x0 * x0 - 400 * x1 + 2, -400 * x0, 0,
                          -400 * x0, 200 + 1200 * x1 * x1 - 400 * x2 + 2, -400 * x1,
                          0, -400 * x1, 200};
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(at(H, i), want[i], 1e-9) << "element " << i;
  // jacrev(jacfwd) and jacfwd(jacfwd) agree with it.
  Array H2 = mj::jacrev(mj::jacfwd(rosenbrock))(x);
  Array H3 = mj::jacfwd(mj::jacfwd(rosenbrock))(x);
  for (int i = 0; i < 9; ++i) {
    EXPECT_NEAR(at(H2, i), want[i], 1e-9);
    EXPECT_NEAR(at(H3, i), want[i], 1e-9);
  }
}

TEST(Jacobian, HessianUnderJit) {
  // hessian staged by make_jaxpr and evaluated: same numbers as eagerly.
  Array x = mj::array({0.5, -1.25, 2.0}, {3}, mj::f64);
  auto j = mj::make_jaxpr(mj::hessian(rosenbrock))(x);
  Array H = mj::eval_jaxpr(j, {x}).at(0);
  EXPECT_NEAR(at(H, 0), 1200 * 0.25 + 400 * 1.25 + 2, 1e-9);
  EXPECT_NEAR(at(H, 5), 500.0, 1e-9);  // H12 = -400 * -1.25
}

TEST(Jacobian, IntegerInputIsATypeError) {
  auto f = [](const Array& x) { return x; };
  EXPECT_THROW(mj::jacfwd(f)(mj::arange(3)), mj::TypeError);
  EXPECT_THROW(mj::jacrev(f)(mj::arange(3)), mj::TypeError);
}

TEST(Jacobian, CustomJvpInsideJacfwd) {
  // jacfwd uses the custom rule (2*t instead of cos): J = 2 I.
  auto f = mj::custom_jvp([](const Array& x) { return mj::sin(x); },
                          [](const Array& x, const Array& t) { return std::pair{mj::sin(x), 2.0 * t}; });
  Array J = mj::jacfwd(f)(mj::array({0.1f, 0.2f}));
  EXPECT_NEAR(at(J, 0), 2.0, 1e-7);
  EXPECT_NEAR(at(J, 1), 0.0, 1e-7);
  EXPECT_NEAR(at(J, 3), 2.0, 1e-7);
  Array Jr = mj::jacrev(f)(mj::array({0.1f, 0.2f}));
  EXPECT_NEAR(at(Jr, 0), 2.0, 1e-7);
  EXPECT_NEAR(at(Jr, 2), 0.0, 1e-7);
}

TEST(Jacobian, VmapOfJacobians) {
  // Per-example Jacobians of f3 over a batch of two points.
  std::vector<double> a = {1.5, -2.0, 0.7}, b = {0.25, 3.0, -1.0};
  std::vector<double> both = a;
  both.insert(both.end(), b.begin(), b.end());
  Array xs = mj::array(both, {2, 3}, mj::f64);
  auto jf = mj::jacfwd(f3);
  auto jr = mj::jacrev(f3);
  Array Jf = mj::vmap(jf)(xs);
  Array Jr = mj::vmap(jr)(xs);
  ASSERT_EQ(Jf.shape(), (mj::Shape{2, 3, 3}));
  ASSERT_EQ(Jr.shape(), (mj::Shape{2, 3, 3}));
  for (int e = 0; e < 2; ++e) {
    const auto& x = e == 0 ? a : b;
    const double want[9] = {x[1], x[0], 0, 0, 0, std::cos(x[2]), 2 * x[0], 0, 0};
    for (int i = 0; i < 9; ++i) {
      EXPECT_NEAR(at(Jf, e * 9 + i), want[i], 1e-12);
      EXPECT_NEAR(at(Jr, e * 9 + i), want[i], 1e-12);
    }
  }
}

}  // namespace
