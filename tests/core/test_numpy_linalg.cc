// Tests of mj::linalg (inv, solve, det, slogdet, pinv, norm, matrix_power) and jax.scipy.linalg's
// lu_factor / lu_solve, eagerly and compiled: values against oracles computed here by plain loops
// and closed forms, singular inputs, integer promotion, batches, det's derivative at rank n - 1, and
// check_grads (order 2, forward and reverse, f64) of every function.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include <minijax/minijax.h>

namespace {

using namespace minijax;
namespace la = minijax::lax::linalg;
namespace sla = minijax::scipy::linalg;
using Vec = std::vector<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();

Vec vals(const Array& a) {
  Array c = mj::astype(a.concrete(), f64);
  const double* p = c.data<double>();
  return Vec(p, p + c.size());
}

Array uniform(const Shape& s, uint32_t seed, double lo = -1, double hi = 1, DType d = f64) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Vec v(size_t(shape_size(s)));
  for (double& x : v) x = u(g);
  return mj::array(v, s, d);
}

// Random matrices [..., n, n] with n added to the diagonal: well conditioned.
Array well_conditioned(const Shape& s, uint32_t seed, DType d = f64) {
  const int64_t n = s.back();
  Vec v = vals(uniform(s, seed));
  for (size_t o = 0; o < v.size(); o += size_t(n * n))
    for (int64_t i = 0; i < n; ++i) v[o + size_t(i * n + i)] += double(n);
  return mj::array(v, s, d);
}

void expect_near(const Vec& got, const Vec& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " [" << i << "]";
}

// f eagerly and under mj::jit (the compiled values checked against the eager ones), eager returned.
template <class F, class... A>
auto both(F f, const std::string& what, double tol, const A&... args) {
  auto e = f(args...);
  auto c = mj::jit(f)(args...);
  const std::vector<Array> el = mj::tree_flatten(e), cl = mj::tree_flatten(c);
  for (size_t i = 0; i < el.size(); ++i) {
    EXPECT_EQ(cl[i].shape(), el[i].shape()) << what;
    EXPECT_EQ(cl[i].dtype(), el[i].dtype()) << what;
    const Vec ev = vals(el[i]), cv = vals(cl[i]);
    for (size_t k = 0; k < ev.size(); ++k)
      if (std::isfinite(ev[k]))
        EXPECT_NEAR(cv[k], ev[k], tol * (1 + std::abs(ev[k]))) << what << " (compiled) " << k;
      else EXPECT_EQ(std::isnan(cv[k]), std::isnan(ev[k])) << what << " (compiled, non-finite) " << k;
  }
  return e;
}

// Plain-loop oracles on row-major n x n matrices.
Vec matmul_loops(const Vec& a, const Vec& b, int64_t m, int64_t k, int64_t n) {
  Vec c(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < k; ++l) c[size_t(i * n + j)] += a[size_t(i * k + l)] * b[size_t(l * n + j)];
  return c;
}
Vec minor_of(const Vec& a, int64_t n, int64_t row, int64_t col) {
  Vec m;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      if (i != row && j != col) m.push_back(a[size_t(i * n + j)]);
  return m;
}
// The determinant by Laplace expansion along the first row.
double det_laplace(const Vec& a, int64_t n) {
  if (n == 0) return 1.0;
  if (n == 1) return a[0];
  double s = 0;
  for (int64_t j = 0; j < n; ++j)
    s += (j % 2 ? -1.0 : 1.0) * a[size_t(j)] * det_laplace(minor_of(a, n, 0, j), n - 1);
  return s;
}
// The cofactor matrix C_ij = (-1)^(i+j) det(minor_ij) (= adj(a)^T, the gradient of det).
Vec cofactors(const Vec& a, int64_t n) {
  Vec c(a.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[size_t(i * n + j)] = ((i + j) % 2 ? -1.0 : 1.0) * det_laplace(minor_of(a, n, i, j), n - 1);
  return c;
}
Vec slice_of(const Vec& v, size_t k, size_t len) {
  return Vec(v.begin() + long(k * len), v.begin() + long((k + 1) * len));
}

// ---- solve and inv ------------------------------------------------------------------------------

// [[2, 1], [1, 3]] x = [3, 5] by Cramer's rule: det 5, x = (3*3 - 1*5, 2*5 - 1*3) / 5 = (0.8, 1.4).
TEST(NumpyLinalgSolve, HandExampleAndIntegerPromotion) {
  const Array a = mj::array({2, 1, 1, 3}, {2, 2}, i32), b = mj::array({3, 5}, {2}, i32);
  const Array x = both([](const Array& p, const Array& q) { return linalg::solve(p, q); }, "int", 1e-6, a, b);
  EXPECT_EQ(x.dtype(), f32);  // promote_dtypes_inexact: ints -> f32
  expect_near(vals(x), {0.8, 1.4}, 1e-6, "int solve");
  const Array xd = linalg::solve(mj::astype(a, f64), mj::astype(b, f64));
  expect_near(vals(xd), {0.8, 1.4}, 1e-15, "f64 solve");
}

// A X = B multiplied back by loops, for vector and matrix right-hand sides, batched and broadcast.
TEST(NumpyLinalgSolve, ResidualsAcrossShapes) {
  struct C {
    Shape a, b, out;
  };
  for (const C& c : std::vector<C>{{{4, 4}, {4}, {4}},
                                   {{4, 4}, {4, 3}, {4, 3}},
                                   {{2, 4, 4}, {4}, {2, 4}},
                                   {{2, 4, 4}, {2, 4, 3}, {2, 4, 3}},
                                   {{2, 4, 4}, {4, 2}, {2, 4, 2}},       // b's batch broadcast
                                   {{4, 4}, {3, 4, 1}, {3, 4, 1}},       // a's batch broadcast
                                   {{2, 1, 4, 4}, {3, 4, 2}, {2, 3, 4, 2}}}) {
    const Array a = well_conditioned(c.a, 3), b = uniform(c.b, 4);
    const std::string what = shape_str(c.a) + " " + shape_str(c.b);
    const Array x = both([](const Array& p, const Array& q) { return linalg::solve(p, q); }, what, 1e-12, a,
                         b);
    ASSERT_EQ(x.shape(), c.out) << what;
    // Check each system against broadcast copies of a and b.
    const bool vec = c.b.size() == 1;
    Shape batch(c.out.begin(), c.out.end() - (vec ? 1 : 2));
    Shape as = batch;
    as.insert(as.end(), {4, 4});
    const Vec av = vals(mj::broadcast_to(a, as)), bv = vals(mj::broadcast_to(b, c.out)), xv = vals(x);
    const int64_t k = vec ? 1 : c.out.back(), count = int64_t(xv.size()) / (4 * k);
    for (int64_t e = 0; e < count; ++e)
      expect_near(matmul_loops(slice_of(av, size_t(e), 16), slice_of(xv, size_t(e), size_t(4 * k)), 4, 4, k),
                  slice_of(bv, size_t(e), size_t(4 * k)), 1e-12, what + " residual");
  }
}

// A singular matrix gives inf or NaN, as JAX's LU composition: [[1, 2], [2, 4]] factors (after the
// row swap) as U = [[2, 4], [0, 0]]; b = [1, 1] gives U x = [1, 0.5] -> x = (-inf, inf) and a
// consistent b = [1, 2] gives 0 / 0 -> NaN; inv divides by the zero pivot too.
TEST(NumpyLinalgSolve, SingularMatrixGivesInfOrNaN) {
  const Array a = mj::array({1, 2, 2, 4}, {2, 2}, f64);
  const Vec x1 = vals(both([](const Array& p, const Array& q) { return linalg::solve(p, q); }, "singular",
                           1e-12, a, mj::array({1, 1}, {2}, f64)));
  EXPECT_EQ(x1[0], -kInf);
  EXPECT_EQ(x1[1], kInf);
  const Vec x2 = vals(linalg::solve(a, mj::array({1, 2}, {2}, f64)));
  EXPECT_TRUE(std::isnan(x2[0]) && std::isnan(x2[1]));
  for (double v : vals(both([](const Array& p) { return linalg::inv(p); }, "inv singular", 1e-12, a)))
    EXPECT_FALSE(std::isfinite(v));
}

// inv(A) A = I by loops, batched, f32 and f64, with integer promotion.
TEST(NumpyLinalgInv, InverseTimesMatrixIsIdentity) {
  for (DType d : {f32, f64}) {
    const Array a = well_conditioned({3, 5, 5}, 7, d);
    const Array x = both([](const Array& p) { return linalg::inv(p); }, "inv", d == f64 ? 1e-12 : 1e-5, a);
    EXPECT_EQ(x.dtype(), d);
    const Vec av = vals(a), xv = vals(x);
    Vec id(25, 0.0);
    for (int i = 0; i < 5; ++i) id[size_t(i * 6)] = 1.0;
    for (size_t e = 0; e < 3; ++e)
      expect_near(matmul_loops(slice_of(xv, e, 25), slice_of(av, e, 25), 5, 5, 5), id,
                  d == f64 ? 1e-13 : 1e-5, "inv");
  }
  // [[1, 2], [3, 4]]^-1 = [[-2, 1], [1.5, -0.5]] (the 2x2 formula: adj / det, det = -2).
  const Array xi = linalg::inv(mj::array({1, 2, 3, 4}, {2, 2}, i32));
  EXPECT_EQ(xi.dtype(), f32);
  expect_near(vals(xi), {-2, 1, 1.5, -0.5}, 1e-6, "int inv");
}

// ---- det and slogdet ----------------------------------------------------------------------------

// det against Laplace expansion (n = 2, 3 by JAX's closed forms, 4 and 5 through LU), batched, with
// negative and zero determinants; slogdet's sign and log|det| against the same oracle.
TEST(NumpyLinalgDet, MatchesLaplaceExpansion) {
  for (int64_t n : {1, 2, 3, 4, 5}) {
    Array a = uniform({3, n, n}, uint32_t(10 + n), -2, 2);
    Vec av = vals(a);
    // The last matrix singular: its last row the sum of the others (n > 1).
    for (int64_t j = 0; j < n && n > 1; ++j) {
      double s = 0;
      for (int64_t i = 0; i + 1 < n; ++i) s += av[size_t(2 * n * n + i * n + j)];
      av[size_t(2 * n * n + (n - 1) * n + j)] = s;
    }
    a = mj::array(av, {3, n, n}, f64);
    const std::string what = "n=" + std::to_string(n);
    const Vec dv = vals(both([](const Array& x) { return linalg::det(x); }, what, 1e-12, a));
    const auto [sign, logabs] = both([](const Array& x) { return linalg::slogdet(x); }, what, 1e-12, a);
    const Vec sv = vals(sign), lv = vals(logabs);
    for (size_t e = 0; e < 3; ++e) {
      const double want = det_laplace(slice_of(av, e, size_t(n * n)), n);
      EXPECT_NEAR(dv[e], want, 1e-12 * (1 + std::abs(want))) << what << " det " << e;
      if (e == 2 && n > 1) continue;  // singular: checked below
      EXPECT_EQ(sv[e], want > 0 ? 1.0 : -1.0) << what << " sign " << e;
      EXPECT_NEAR(lv[e], std::log(std::abs(want)), 1e-12) << what << " log|det| " << e;
    }
  }
  // Exactly singular (a zero pivot): det 0, slogdet (0, -inf).
  const Array s = mj::array({1, 2, 3, 4, 2, 4, 6, 8, 0, 1, 0, 1, 1, 0, 1, 0}, {4, 4}, f64);
  EXPECT_EQ(linalg::det(s).item<double>(), 0.0);
  const auto [ss, sl] = linalg::slogdet(s);
  EXPECT_EQ(ss.item<double>(), 0.0);
  EXPECT_EQ(sl.item<double>(), -kInf);
}

TEST(NumpyLinalgDet, IntegerPromotionAndSarrus) {
  // The rule of Sarrus by hand on [[2, 0, 1], [1, 3, 2], [1, 1, 2]]:
  // 2*3*2 + 0*2*1 + 1*1*1 - 1*3*1 - 2*2*1 - 0*1*2 = 12 + 0 + 1 - 3 - 4 - 0 = 6.
  const Array a = mj::array({2, 0, 1, 1, 3, 2, 1, 1, 2}, {3, 3}, i32);
  const Array d = linalg::det(a);
  EXPECT_EQ(d.dtype(), f32);
  EXPECT_NEAR(d.item<float>(), 6.0f, 1e-6);
  const auto [s, l] = linalg::slogdet(a);
  EXPECT_EQ(s.item<float>(), 1.0f);
  EXPECT_NEAR(l.item<float>(), std::log(6.0f), 1e-6);
}

// det's gradient is the cofactor matrix adj(A)^T. At a rank n-1 matrix JAX's _cofactor_solve keeps
// it finite (the naive det * inv(A)^T is NaN there); at rank n-2 the cofactor matrix is zero.
TEST(NumpyLinalgDet, GradientAtRankDeficientMatricesIsTheCofactorMatrix) {
  for (int64_t n : {3, 4, 5}) {
    Vec av = vals(uniform({n, n}, uint32_t(40 + n), -2, 2));
    for (int64_t j = 0; j < n; ++j) av[size_t((n - 1) * n + j)] = av[size_t(j)] - 2.0 * av[size_t(n + j)];
    const Array a = mj::array(av, {n, n}, f64);
    auto g = [](const Array& x) { return mj::grad([](const Array& y) { return linalg::det(y); })(x); };
    const Vec gv = vals(both(g, "rank n-1 n=" + std::to_string(n), 1e-10, a));
    const Vec want = cofactors(av, n);
    double biggest = 0;
    for (double w : want) biggest = std::max(biggest, std::abs(w));
    ASSERT_GT(biggest, 1e-3) << "the oracle's cofactor matrix should not vanish at rank n-1";
    for (size_t i = 0; i < gv.size(); ++i) {
      EXPECT_TRUE(std::isfinite(gv[i])) << n << " " << i;
      EXPECT_NEAR(gv[i], want[i], 1e-10 * (1 + biggest)) << "n=" << n << " " << i;
    }
    // Rank n-2: two rows dependent on the others; the cofactor matrix (and gradient) is zero.
    if (n < 4) continue;
    for (int64_t j = 0; j < n; ++j) av[size_t((n - 2) * n + j)] = 3.0 * av[size_t(j)];
    const Vec g2 = vals(g(mj::array(av, {n, n}, f64)));
    const Vec want2 = cofactors(av, n);
    for (size_t i = 0; i < g2.size(); ++i) {
      EXPECT_NEAR(want2[i], 0.0, 1e-10) << "oracle";
      EXPECT_NEAR(g2[i], 0.0, 1e-10) << "rank n-2 n=" << n << " " << i;
    }
  }
}

TEST(NumpyLinalgDet, JaxprUsesTheCustomJvpAndLu) {
  const std::string j = mj::to_string(
      mj::make_jaxpr([](const Array& x) { return linalg::det(x); })(well_conditioned({4, 4}, 1)));
  EXPECT_NE(j.find("custom_jvp_call"), std::string::npos) << j;
  EXPECT_NE(j.find("lu"), std::string::npos) << j;
  const std::string s = mj::to_string(mj::make_jaxpr([](const Array& x, const Array& y) {
    return linalg::solve(x, y);
  })(well_conditioned({3, 3}, 1), uniform({3}, 2)));
  EXPECT_NE(s.find(" = lu "), std::string::npos) << s;
  EXPECT_NE(s.find("triangular_solve"), std::string::npos) << s;
}

// ---- pinv ---------------------------------------------------------------------------------------

// The four Moore-Penrose conditions by loops: A P A = A, P A P = P, A P and P A symmetric.
void expect_penrose(const Vec& a, const Vec& p, int64_t m, int64_t n, double tol, const std::string& what) {
  const Vec ap = matmul_loops(a, p, m, n, m), pa = matmul_loops(p, a, n, m, n);
  expect_near(matmul_loops(ap, a, m, m, n), a, tol, what + " APA");
  expect_near(matmul_loops(pa, p, n, n, m), p, tol, what + " PAP");
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) EXPECT_NEAR(ap[size_t(i * m + j)], ap[size_t(j * m + i)], tol) << what;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) EXPECT_NEAR(pa[size_t(i * n + j)], pa[size_t(j * n + i)], tol) << what;
}

TEST(NumpyLinalgPinv, MoorePenroseConditionsTallWideBatched) {
  for (const Shape& s : std::vector<Shape>{{5, 3}, {3, 5}, {2, 4, 4}}) {
    const Array a = uniform(s, 51);
    const int64_t m = s[s.size() - 2], n = s.back(), batch = shape_size(s) / (m * n);
    const Array p = both([](const Array& x) { return linalg::pinv(x); }, shape_str(s), 1e-12, a);
    ASSERT_EQ(p.shape().back(), m);
    const Vec av = vals(a), pv = vals(p);
    for (int64_t e = 0; e < batch; ++e)
      expect_penrose(slice_of(av, size_t(e), size_t(m * n)), slice_of(pv, size_t(e), size_t(m * n)), m, n,
                     1e-12, shape_str(s));
  }
}

// A rank-one u v^T has pinv v u^T / (|u|^2 |v|^2) (closed form); small singular values are cut at
// rtol * s_max: diag(1, 1e-3) keeps 1e-3 with rtol 1e-4 and drops it with rtol 1e-2; the default
// rtol (10 * 2 * eps) drops 1e-17.
TEST(NumpyLinalgPinv, RankDeficiencyAndRtol) {
  const Vec u = {1, 2, -1}, v = {3, 0, 4, 1};
  Vec a(12), want(12);
  const double nu = 6, nv = 26;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      a[size_t(i * 4 + j)] = u[size_t(i)] * v[size_t(j)],
                       want[size_t(j * 3 + i)] = v[size_t(j)] * u[size_t(i)] / (nu * nv);
  expect_near(vals(linalg::pinv(mj::array(a, {3, 4}, f64))), want, 1e-12, "rank one");
  const Array d = mj::array({1, 0, 0, 1e-3}, {2, 2}, f64);
  expect_near(vals(linalg::pinv(d, 1e-4)), {1, 0, 0, 1e3}, 1e-12, "rtol 1e-4");
  expect_near(vals(linalg::pinv(d, 1e-2)), {1, 0, 0, 0}, 1e-12, "rtol 1e-2");
  expect_near(vals(linalg::pinv(d, mj::scalar(1e-2, f64))), {1, 0, 0, 0}, 1e-12, "rtol array");
  expect_near(vals(linalg::pinv(mj::array({1, 0, 0, 1e-17}, {2, 2}, f64))), {1, 0, 0, 0}, 1e-12,
              "default rtol");
  const Array pi = linalg::pinv(mj::array({2, 0, 0, 4}, {2, 2}, i32));
  EXPECT_EQ(pi.dtype(), f32);
  expect_near(vals(pi), {0.5, 0, 0, 0.25}, 1e-6, "int pinv");
  EXPECT_EQ(linalg::pinv(mj::zeros({2, 0, 3}, f64)).shape(), (Shape{2, 3, 0}));
}

// ---- norm ---------------------------------------------------------------------------------------

TEST(NumpyLinalgNorm, VectorOrdersByHand) {
  const Array x = mj::array({3, -4, 0}, {3}, f64);
  struct C {
    linalg::Ord ord;
    double want;
  };
  // |3| + |-4| = 7; max 4; min 0; nonzeros 2; (27 + 64)^(1/3).
  for (const C& c : std::vector<C>{{{}, 5},
                                   {2, 5},
                                   {1, 7},
                                   {kInf, 4},
                                   {-kInf, 0},
                                   {0, 2},
                                   {3, std::cbrt(91.0)},
                                   {-1, 0},
                                   {0.5, std::pow(std::sqrt(3.0) + 2.0, 2.0)}}) {
    const double got =
        both([&](const Array& v) { return linalg::norm(v, c.ord); }, c.ord.str(), 1e-14, x).item<double>();
    EXPECT_NEAR(got, c.want, 1e-14 * (1 + c.want)) << c.ord.str();
  }
  // Integers promote to f32; ord=None on any rank is the 2-norm of the flattened array.
  const Array n = linalg::norm(mj::array({1, 2, 2, 4}, {2, 1, 2}, i32));
  EXPECT_EQ(n.dtype(), f32);
  EXPECT_NEAR(n.item<float>(), 5.0f, 1e-6);
  EXPECT_EQ(linalg::norm(mj::array({1, 2, 2, 4}, {2, 1, 2}, i32), {}, std::nullopt, true).shape(),
            (Shape{1, 1, 1}));
}

// [[1, -2], [3, 4]]: Frobenius sqrt(30); column sums (4, 6); row sums (3, 7); A^T A = [[10, 10],
// [10, 20]] has eigenvalues 15 +- sqrt(125), the squared singular values, so nuc = sqrt(30 + 2 *
// |det|) = sqrt(50).
TEST(NumpyLinalgNorm, MatrixOrdersByHand) {
  const Array a = mj::array({1, -2, 3, 4}, {2, 2}, f64);
  const double s1 = std::sqrt(15 + std::sqrt(125.0)), s2 = std::sqrt(15 - std::sqrt(125.0));
  struct C {
    linalg::Ord ord;
    double want;
  };
  for (const C& c : std::vector<C>{{{}, std::sqrt(30.0)},
                                   {"fro", std::sqrt(30.0)},
                                   {"f", std::sqrt(30.0)},
                                   {"nuc", std::sqrt(50.0)},
                                   {1, 6},
                                   {-1, 4},
                                   {kInf, 7},
                                   {-kInf, 3},
                                   {2, s1},
                                   {-2, s2}}) {
    const double got =
        both([&](const Array& v) { return linalg::norm(v, c.ord, std::vector<int64_t>{0, 1}); }, c.ord.str(),
             1e-13, a)
            .item<double>();
    EXPECT_NEAR(got, c.want, 1e-13) << c.ord.str();
    // axis = nullopt with an ord: all of the 2-D array's dims.
    if (c.ord.kind != linalg::Ord::Kind::none)
      EXPECT_NEAR(linalg::norm(a, c.ord).item<double>(), c.want, 1e-13);
  }
}

// Axes in any order and negative, keepdims, over a [2, 3, 4] array, against loops.
TEST(NumpyLinalgNorm, AxesAndKeepdims) {
  const Array x = uniform({2, 3, 4}, 61);
  const Vec xv = vals(x);
  auto at = [&](int64_t i, int64_t j, int64_t k) { return xv[size_t(i * 12 + j * 4 + k)]; };
  // Vector 1-norm over axis 1: out[i, k] = sum_j |x[i, j, k]|.
  const Array v1 = linalg::norm(x, 1, std::vector<int64_t>{-2}, true);
  ASSERT_EQ(v1.shape(), (Shape{2, 1, 4}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 4; ++k) {
      double s = 0;
      for (int64_t j = 0; j < 3; ++j) s += std::abs(at(i, j, k));
      EXPECT_NEAR(vals(v1)[size_t(i * 4 + k)], s, 1e-14);
    }
  // Matrix inf-norm with rows = axis 2 and columns = axis 0: max over k of sum over i of |x[i, j, k]|.
  for (bool keep : {false, true}) {
    const Array m =
        both([&](const Array& v) { return linalg::norm(v, kInf, std::vector<int64_t>{2, 0}, keep); }, "inf",
             1e-14, x);
    ASSERT_EQ(m.shape(), (keep ? Shape{1, 3, 1} : Shape{3}));
    for (int64_t j = 0; j < 3; ++j) {
      double best = 0;
      for (int64_t k = 0; k < 4; ++k) best = std::max(best, std::abs(at(0, j, k)) + std::abs(at(1, j, k)));
      EXPECT_NEAR(vals(m)[size_t(j)], best, 1e-14);
    }
    // The 1-norm of the same (rows axis 2, columns axis 0): max over i of sum over k.
    const Vec m1 = vals(linalg::norm(x, 1, std::vector<int64_t>{2, 0}, keep));
    for (int64_t j = 0; j < 3; ++j) {
      double best = 0;
      for (int64_t i = 0; i < 2; ++i) {
        double s = 0;
        for (int64_t k = 0; k < 4; ++k) s += std::abs(at(i, j, k));
        best = std::max(best, s);
      }
      EXPECT_NEAR(m1[size_t(j)], best, 1e-14);
    }
  }
  // The 2-norm of each x[:, j, :] (moved to a 2 x 4 matrix) squared is the largest eigenvalue of
  // M M^T (2 x 2): (t + sqrt(t^2 - 4 det)) / 2.
  const Array s2 = linalg::norm(x, 2, std::vector<int64_t>{0, 2}, true);
  ASSERT_EQ(s2.shape(), (Shape{1, 3, 1}));
  for (int64_t j = 0; j < 3; ++j) {
    double p = 0, q = 0, r = 0;
    for (int64_t k = 0; k < 4; ++k)
      p += at(0, j, k) * at(0, j, k), q += at(0, j, k) * at(1, j, k), r += at(1, j, k) * at(1, j, k);
    const double t = p + r, dt = p * r - q * q;
    EXPECT_NEAR(vals(s2)[size_t(j)], std::sqrt((t + std::sqrt(t * t - 4 * dt)) / 2), 1e-13);
  }
}

// ---- matrix_power -------------------------------------------------------------------------------

TEST(NumpyLinalgMatrixPower, AgainstRepeatedProducts) {
  const Array a = uniform({2, 3, 3}, 71, -1, 1);
  const Vec av = vals(a);
  const Vec ai = vals(linalg::inv(a));
  for (int64_t n : {0, 1, 2, 3, 4, 5, 7, 8, -1, -2, -5}) {
    const Vec p = vals(
        both([n](const Array& x) { return linalg::matrix_power(x, n); }, "n=" + std::to_string(n), 1e-12, a));
    for (size_t e = 0; e < 2; ++e) {
      Vec want(9, 0.0);
      for (int i = 0; i < 3; ++i) want[size_t(i * 4)] = 1.0;
      const Vec base = slice_of(n < 0 ? ai : av, e, 9);
      for (int64_t k = 0; k < std::abs(n); ++k) want = matmul_loops(want, base, 3, 3, 3);
      expect_near(slice_of(p, e, 9), want, 1e-11, "n=" + std::to_string(n));
    }
  }
  // An integer-valued double exponent. Integer matrices keep their dtype for n >= 0, as
  // jnp.linalg.matrix_power (no promotion; jax/_src/numpy/linalg.py), and promote through inv for
  // n < 0: [[1, 1], [0, 1]]^k = [[1, k], [0, 1]] (by induction), eager and compiled.
  expect_near(vals(linalg::matrix_power(a, 2.0)), vals(linalg::matrix_power(a, 2)), 0, "2.0");
  const Array ai32 = mj::array({1, 1, 0, 1}, {2, 2}, i32);
  for (const Array& pi : {linalg::matrix_power(ai32, 5),
                          mj::jit([](const Array& x) { return linalg::matrix_power(x, 5); })(ai32)}) {
    EXPECT_EQ(pi.dtype(), i32);
    expect_near(vals(pi), {1, 5, 0, 1}, 0, "[[1, 1], [0, 1]]^5 = [[1, 5], [0, 1]]");
  }
  EXPECT_EQ(linalg::matrix_power(ai32, 0).dtype(), i32);
  const Array pn = linalg::matrix_power(ai32, -2);
  EXPECT_EQ(pn.dtype(), f32);
  expect_near(vals(pn), {1, -2, 0, 1}, 1e-6, "[[1, 1], [0, 1]]^-2 = [[1, -2], [0, 1]]");
}

// ---- lu_factor and lu_solve ---------------------------------------------------------------------

// The pivots become the same row order as the lu primitive's own permutation output.
TEST(ScipyLinalgLu, PivotsToPermutationMatchesLuPermutation) {
  const Array a = uniform({3, 6, 6}, 81);
  const auto [lu, piv, perm] = la::lu(a);
  const Array p =
      both([](const Array& q) { return linalg::detail::lu_pivots_to_permutation(q, 6, SL::current()); },
           "perm", 0, piv);
  EXPECT_EQ(p.dtype(), i32);
  expect_near(vals(p), vals(perm), 0, "permutation");
  const auto [lu2, piv2] = sla::lu_factor(a);
  expect_near(vals(lu2), vals(lu), 0, "lu_factor lu");
  expect_near(vals(piv2), vals(piv), 0, "lu_factor piv");
}

// op(A) x = b for trans 0, 1, 2 multiplied back by loops; vector and matrix right-hand sides,
// batched, the batch of b broadcast against the factors' (JAX's lax lu_solve: b of rank lu.ndim - 1
// is a batch of vectors).
TEST(ScipyLinalgLu, SolvesEveryTransAndShape) {
  const Array a = well_conditioned({2, 4, 4}, 91);
  const Vec av = vals(a);
  for (int trans : {0, 1, 2})
    for (const Shape& bs : std::vector<Shape>{{2, 4}, {2, 4, 3}, {1, 4, 3}}) {
      const Array b = uniform(bs, 92);
      const std::string what = "trans " + std::to_string(trans) + " b=" + shape_str(bs);
      const Array x = both([trans](const Array& p,
                                   const Array& q) { return sla::lu_solve(sla::lu_factor(p), q, trans); },
                           what, 1e-12, a, b);
      const int64_t k = bs.size() == 2 && bs[0] == 2 ? 1 : bs.back();
      const Vec bv = vals(mj::broadcast_to(b, bs.size() == 2 && bs[0] == 2 ? Shape{2, 4} : Shape{2, 4, k}));
      const Vec xv = vals(x);
      for (size_t e = 0; e < 2; ++e) {
        Vec m = slice_of(av, e, 16);
        if (trans) m = vals(mj::transpose(mj::array(m, {4, 4}, f64)));
        expect_near(matmul_loops(m, slice_of(xv, e, size_t(4 * k)), 4, 4, k), slice_of(bv, e, size_t(4 * k)),
                    1e-12, what);
      }
    }
  // Integers promote to f32: [[2, 1], [1, 3]] x = [3, 5] -> (0.8, 1.4) (Cramer's rule).
  const Array xi = sla::lu_solve(sla::lu_factor(mj::array({2, 1, 1, 3}, {2, 2}, i32)),
                                 mj::array({3, 5}, {2}, i32));
  EXPECT_EQ(xi.dtype(), f32);
  expect_near(vals(xi), {0.8, 1.4}, 1e-6, "int lu_solve");
}

// ---- vmap and derivatives -----------------------------------------------------------------------

TEST(NumpyLinalgTransforms, VmapMatchesTheBatchedCall) {
  const Array a = well_conditioned({3, 4, 4}, 101), b = uniform({3, 4}, 102);
  expect_near(vals(mj::vmap([](const Array& x) { return linalg::det(x); })(a)), vals(linalg::det(a)), 1e-13,
              "det");
  // A batch of vectors b [3, 4] is solve(a, b[..., None])[..., 0] (b [3, 4] itself would be read
  // as [3, 4] matrices).
  expect_near(vals(mj::vmap([](const Array& x, const Array& y) { return linalg::solve(x, y); })(a, b)),
              vals(linalg::solve(a, mj::expand_dims(b, 2))), 1e-13, "solve");
  expect_near(vals(mj::vmap([](const Array& x) { return linalg::pinv(x); })(a)), vals(linalg::pinv(a)), 1e-12,
              "pinv");
  expect_near(vals(mj::vmap([](const Array& x) { return sla::lu_factor(x).second; })(a)),
              vals(sla::lu_factor(a).second), 0, "lu_factor pivots");
}

// check_grads (JAX's central differences, order 2, forward and reverse) in f64 on inputs away from
// the degenerate cases (well-conditioned matrices, distinct singular values, no ties in max/min).
TEST(NumpyLinalgTransforms, CheckGradsOrderTwo) {
  const Array a = well_conditioned({4, 4}, 111), a3 = well_conditioned({2, 3, 3}, 112),
              b = uniform({4, 2}, 113);
  EXPECT_NO_THROW(mj::check_grads([](const Array& x, const Array& y) { return linalg::solve(x, y); },
                                  std::tuple{a, b}, 2));
  EXPECT_NO_THROW(mj::check_grads([](const Array& x, const Array& y) { return linalg::solve(x, y); },
                                  std::tuple{a3, uniform({3}, 114)}, 2));
  EXPECT_NO_THROW(mj::check_grads([](const Array& x) { return linalg::inv(x); }, a3, 2));
  EXPECT_NO_THROW(mj::check_grads([](const Array& x) { return linalg::det(x); }, a, 2));
  EXPECT_NO_THROW(mj::check_grads([](const Array& x) { return linalg::det(x); }, a3, 2));
  EXPECT_NO_THROW(mj::check_grads([](const Array& x) { return linalg::det(x); }, uniform({2, 5, 5}, 115), 2));
  EXPECT_NO_THROW(
      mj::check_grads([](const Array& x) { return linalg::slogdet(x).second; }, uniform({2, 4, 4}, 116), 2));
  EXPECT_NO_THROW(mj::check_grads([](const Array& x) { return linalg::pinv(x); }, uniform({5, 3}, 117), 2));
  EXPECT_NO_THROW(
      mj::check_grads([](const Array& x) { return linalg::pinv(x); }, uniform({2, 3, 5}, 118), 2));
  for (const linalg::Ord& o : std::vector<linalg::Ord>{{}, "fro", "nuc", 1, -1, 2, -2, kInf, -kInf})
    EXPECT_NO_THROW(
        mj::check_grads([&](const Array& x) { return linalg::norm(x, o, std::vector<int64_t>{1, 2}); },
                        uniform({2, 3, 4}, 119), 2))
        << o.str();
  for (const linalg::Ord& o : std::vector<linalg::Ord>{{}, 1, 3, 0.5, kInf, -kInf})
    EXPECT_NO_THROW(
        mj::check_grads([&](const Array& x) { return linalg::norm(x, o, std::vector<int64_t>{-1}); },
                        uniform({3, 4}, 120, 0.5, 2), 2))
        << o.str();
  for (int64_t n : {2, 5, -2})
    EXPECT_NO_THROW(mj::check_grads([n](const Array& x) { return linalg::matrix_power(x, n); }, a3 * 0.3, 2))
        << n;
  EXPECT_NO_THROW(
      mj::check_grads([](const Array& x, const Array& y) { return sla::lu_solve(sla::lu_factor(x), y, 1); },
                      std::tuple{a, b}, 2));
}

// det's custom JVP against the closed form: d det(A)[V] = trace(adj(A) V) = sum C .* V.
TEST(NumpyLinalgTransforms, DetJvpIsTraceOfAdjugateTimesTangent) {
  const Array a = uniform({5, 5}, 121), v = uniform({5, 5}, 122);
  const auto [y, t] = mj::jvp([](const Array& x) { return linalg::det(x); }, a, v);
  const Vec c = cofactors(vals(a), 5), vv = vals(v);
  double want = 0;
  for (size_t i = 0; i < 25; ++i) want += c[i] * vv[i];
  EXPECT_NEAR(y.item<double>(), det_laplace(vals(a), 5), 1e-12);
  EXPECT_NEAR(t.item<double>(), want, 1e-12 * (1 + std::abs(want)));
}

}  // namespace
