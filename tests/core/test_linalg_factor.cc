// Tests of the values of lu, qr, eigh and svd (issue 30), eager and compiled (bit-identical), f32 and f64.
// Owns their oracles, LAPACK failures, printed params, compiled workspaces, concurrency and thread count.
//
// Oracles are computed here by plain loops (P x = L U, Q R = x, V diag(w) V^T, U diag(s) V^T, the
// orthonormality of Q, V and U) and closed forms; batched, rectangular and empty shapes. LAPACK's
// failures are as JAX v0.7.0 reports them. Derivatives: test_linalg_factor_grads.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <thread>

#include <minijax/minijax.h>

#include "core/linalg_test_util.h"

#include "core/linalg_kernels.h"

namespace {

using namespace minijax;
namespace la = minijax::lax::linalg;
using V = std::vector<Array>;
using namespace linalg_test;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// f eagerly and under jit: the same bits in every result; returns the eager results.
V both(const std::function<V(const Array&)>& f, const Array& x, const std::string& what) {
  V e = f(x);
  V c = mj::jit([&](const Array& a) { return f(a); })(x);
  EXPECT_EQ(c.size(), e.size()) << what;
  for (size_t i = 0; i < std::min(c.size(), e.size()); ++i)
    expect_bits(c[i], e[i], what + " result " + std::to_string(i) + " (compiled vs eager)");
  return e;
}

V lu_of(const Array& x) {
  auto [a, p, q] = la::lu(x);
  return {a, p, q};
}
V qr_of(const Array& x, bool full = true) {
  auto [q, r] = la::qr(x, false, full);
  return {q, r};
}

// The matrices of a batch, read back in f64: element (b, i, j) of row-major rows x cols matrices.
struct Mats {
  std::vector<double> v;
  int64_t rows, cols;
  double operator()(int64_t b, int64_t i, int64_t j) const { return v[size_t((b * rows + i) * cols + j)]; }
};
Mats mats(const Array& a) { return {vals(a), a.shape()[size_t(a.ndim() - 2)], a.shape().back()}; }
int64_t batch_of(const Shape& s) {
  int64_t b = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) b *= s[i];
  return b;
}
// The tolerance of a reconstruction of an n-sized problem (products of n terms).
double tol(DType d, int64_t n) { return (d == f32 ? 4e-6 : 1e-14) * double(n + 2) * 4; }

// Q^T Q = I for the row-major rows x cols Q of batch element b (orthonormal columns).
void expect_orthonormal_columns(const Mats& q, int64_t b, double t, const std::string& what) {
  for (int64_t i = 0; i < q.cols; ++i)
    for (int64_t j = 0; j < q.cols; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < q.rows; ++k) acc += q(b, k, i) * q(b, k, j);
      EXPECT_NEAR(acc, i == j ? 1.0 : 0.0, t) << what << " column " << i << "." << j;
    }
}

// x with its last two dims swapped.
Array matrix_t(const Array& x) {
  std::vector<int64_t> p;
  for (int64_t i = 0; i < x.ndim(); ++i) p.push_back(i);
  std::swap(p[p.size() - 1], p[p.size() - 2]);
  return mj::transpose(x, p);
}

// 19 x 11 and 11 x 19 (odd, several 8-column strips), 18 x 18: the layout changes' block and edge paths.
const std::vector<Shape> kRectangular = {{1, 1},    {3, 3},       {5, 3},   {3, 5},   {2, 4, 3},
                                         {2, 3, 4}, {2, 2, 4, 4}, {19, 11}, {11, 19}, {2, 18, 18},
                                         {0, 3, 3}, {0, 3},       {3, 0},   {2, 0, 0}};

// ---- lu -----------------------------------------------------------------------------------------

// P x = L U: x's rows in the order of `perm` equal L U, L unit lower (m x k, |L| <= 1: partial
// pivoting), U upper (k x n); the permutation is the pivots' swaps applied in order to 0..m-1.
TEST(Lu, FactorsRebuildThePermutedMatrix) {
  for (const Shape& s : kRectangular)
    for (DType d : {f32, f64}) {
      const std::string what = shape_str(s) + " " + dtype_name(d);
      const Array x = uniform(s, 3 + uint32_t(shape_size(s)), -1, 1, d);
      const V r = both(lu_of, x, what);
      const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n), batch = batch_of(s);
      ASSERT_EQ(r[0].shape(), s) << what;
      ASSERT_EQ(r[1].dtype(), i32) << what;
      ASSERT_EQ(r[2].dtype(), i32) << what;
      ASSERT_EQ(r[1].shape().back(), k) << what;
      ASSERT_EQ(r[2].shape().back(), m) << what;
      const Mats xm = mats(x), lu = mats(r[0]);
      const std::vector<double> piv = vals(r[1]), perm = vals(r[2]);
      for (int64_t b = 0; b < batch; ++b) {
        std::vector<int64_t> order(static_cast<size_t>(m));
        for (int64_t i = 0; i < m; ++i) order[size_t(i)] = i;
        for (int64_t i = 0; i < k; ++i) {
          const int64_t p = int64_t(piv[size_t(b * k + i)]);
          ASSERT_GE(p, i) << what;
          ASSERT_LT(p, m) << what;
          std::swap(order[size_t(i)], order[size_t(p)]);
        }
        for (int64_t i = 0; i < m; ++i) EXPECT_EQ(int64_t(perm[size_t(b * m + i)]), order[size_t(i)]) << what;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            if (j < std::min(i, k)) EXPECT_LE(std::abs(lu(b, i, j)), 1.0) << what;
            double acc = 0;  // (L U)_ij: L_ik (unit diagonal) times U_kj, k <= min(i, j)
            for (int64_t c = 0; c <= std::min({i, j, k - 1}); ++c)
              acc += (c == i ? 1.0 : lu(b, i, c)) * lu(b, c, j);
            EXPECT_NEAR(acc, xm(b, order[size_t(i)], j), tol(d, n)) << what << " (" << i << ", " << j << ")";
          }
      }
    }
}

// By hand: [[1, 2], [3, 4]] pivots on 3 (row 1): U = [[3, 4], [0, 2 - 4/3]], L = [[1, 0], [1/3, 1]].
TEST(Lu, TwoByTwoByHand) {
  for (DType d : {f32, f64}) {
    const V r = both(lu_of, mj::array({1, 2, 3, 4}, {2, 2}, d), "2x2");
    const std::vector<double> lu = vals(r[0]);
    const std::vector<double> want = {3, 4, 1.0 / 3, 2.0 / 3};
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(lu[i], want[i], d == f32 ? 1e-6 : 1e-15) << i;
    EXPECT_EQ(vals(r[1]), (std::vector<double>{1, 1}));
    EXPECT_EQ(vals(r[2]), (std::vector<double>{1, 0}));
  }
}

// A singular matrix keeps LAPACK's factors, a zero pivot in U (?getrf_'s info > 0), as JAX: no NaN,
// the other batch elements as if alone. [[1, 2], [2, 4]] pivots on 2: U = [[2, 4], [0, 0]],
// L = [[1, 0], [0.5, 1]]; the zero matrix has all-zero factors and no row swap.
TEST(Lu, SingularMatrixKeepsFiniteFactorsWithAZeroPivot) {
  for (DType d : {f32, f64}) {
    const Array x = mj::array({4, 1, 1, 3,  // regular
                               1, 2, 2, 4,  // rank 1
                               0, 0, 0, 0},
                              {3, 2, 2}, d);
    const V r = both(lu_of, x, "singular");
    const std::vector<double> lu = vals(r[0]);
    for (double v : lu) EXPECT_TRUE(std::isfinite(v));
    EXPECT_EQ(std::vector<double>(lu.begin() + 4, lu.begin() + 8), (std::vector<double>{2, 4, 0.5, 0}));
    EXPECT_EQ(std::vector<double>(lu.begin() + 8, lu.end()), (std::vector<double>(4, 0.0)));
    EXPECT_EQ(vals(r[1]), (std::vector<double>{0, 1, 1, 1, 0, 1}));
    const V alone = lu_of(mj::array({4, 1, 1, 3}, {1, 2, 2}, d));
    EXPECT_EQ(vals(alone[0]), std::vector<double>(lu.begin(), lu.begin() + 4));
  }
  // NaN in a matrix: no crash, and the NaN reaches its factors.
  const V r = both(lu_of, mj::array({1, kNaN, 3, 4}, {2, 2}, f64), "NaN");
  const std::vector<double> lu = vals(r[0]);
  EXPECT_TRUE(std::any_of(lu.begin(), lu.end(), [](double v) { return std::isnan(v); }));
}

// ---- qr -----------------------------------------------------------------------------------------

// Q R = x with Q^T Q = I and R upper triangular (exact zeros below the diagonal): Q [m, m] and R
// [m, n] (full_matrices), Q [m, k] and R [k, n] otherwise.
TEST(Qr, FactorsRebuildTheMatrixFullAndReduced) {
  for (const Shape& s : kRectangular)
    for (bool full : {true, false})
      for (DType d : {f32, f64}) {
        const std::string what = shape_str(s) + (full ? " full " : " reduced ") + dtype_name(d);
        const Array x = uniform(s, 5 + uint32_t(shape_size(s)), -1, 1, d);
        const V r = both([full](const Array& a) { return qr_of(a, full); }, x, what);
        const int64_t m = s[s.size() - 2], n = s.back(), qc = full ? m : std::min(m, n);
        ASSERT_EQ(r[0].shape().back(), qc) << what;
        ASSERT_EQ(r[0].shape()[size_t(r[0].ndim() - 2)], m) << what;
        ASSERT_EQ(r[1].shape()[size_t(r[1].ndim() - 2)], qc) << what;
        ASSERT_EQ(r[1].shape().back(), n) << what;
        const Mats xm = mats(x), q = mats(r[0]), rm = mats(r[1]);
        for (int64_t b = 0; b < batch_of(s); ++b) {
          expect_orthonormal_columns(q, b, tol(d, m), what);
          for (int64_t i = 0; i < qc; ++i)
            for (int64_t j = 0; j < std::min(i, n); ++j) EXPECT_EQ(rm(b, i, j), 0.0) << what;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double acc = 0;
              for (int64_t c = 0; c < qc; ++c) acc += q(b, i, c) * rm(b, c, j);
              EXPECT_NEAR(acc, xm(b, i, j), tol(d, m)) << what;
            }
        }
      }
}

// Householder QR by hand (LAPACK's ?larfg: beta = -sign(alpha) ||x||, so a positive first column
// gives a negative R[0, 0]): [[3, 1], [4, 2]] -> H = I - 2 v v^T / v^T v, whose first column is
// -(3, 4) / 5: Q = H = [[-0.6, -0.8], [-0.8, 0.6]], R = Q^T x = [[-5, -2.2], [0, 0.4]].
TEST(Qr, TwoByTwoHouseholderByHand) {
  for (DType d : {f32, f64}) {
    const V r = both([](const Array& a) { return qr_of(a); }, mj::array({3, 1, 4, 2}, {2, 2}, d), "2x2");
    const std::vector<double> q = vals(r[0]), rr = vals(r[1]);
    const std::vector<double> wq = {-0.6, -0.8, -0.8, 0.6}, wr = {-5, -2.2, 0, 0.4};
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_NEAR(q[i], wq[i], d == f32 ? 1e-6 : 1e-15) << i;
      EXPECT_NEAR(rr[i], wr[i], d == f32 ? 4e-6 : 1e-14) << i;
    }
  }
}

// The reduced factors of a tall matrix are the first k columns of Q and rows of R of the full ones
// (the same Householder reflectors).
TEST(Qr, ReducedIsTheLeadingPartOfFull) {
  const Array x = uniform({2, 5, 3}, 17);
  auto [qf, rf] = la::qr(x, false, true);
  auto [qr_, rr] = la::qr(x, false, false);
  const Mats a = mats(qf), b = mats(qr_), c = mats(rf), e = mats(rr);
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        EXPECT_NEAR(a(t, i, j), b(t, i, j), 1e-14);
        if (i < 3) EXPECT_NEAR(c(t, i, j), e(t, i, j), 1e-14);
        else EXPECT_EQ(c(t, i, j), 0.0);
      }
}

// ---- eigh ---------------------------------------------------------------------------------------

V eigh_of(const Array& x) {
  auto [v, w] = la::eigh(x);
  return {v, w};
}

// V diag(w) V^T = (x + x^T) / 2 (the input is symmetrized, JAX's default), V^T V = I, w ascending.
TEST(Eigh, DecompositionRebuildsTheSymmetrizedMatrix) {
  for (const Shape& s :
       std::vector<Shape>{{1, 1}, {2, 2}, {5, 5}, {17, 17}, {3, 4, 4}, {2, 2, 6, 6}, {0, 3, 3}, {2, 0, 0}})
    for (DType d : {f32, f64}) {
      const std::string what = shape_str(s) + " " + dtype_name(d);
      const Array x = uniform(s, 9 + uint32_t(shape_size(s)), -1, 1, d);
      const V r = both(eigh_of, x, what);
      const int64_t n = s.back();
      ASSERT_EQ(r[0].shape(), s) << what;
      ASSERT_EQ(r[1].shape().back(), n) << what;
      const Mats xm = mats(x), v = mats(r[0]);
      const std::vector<double> w = vals(r[1]);
      for (int64_t b = 0; b < batch_of(s); ++b) {
        expect_orthonormal_columns(v, b, tol(d, n), what);
        for (int64_t i = 0; i + 1 < n; ++i) EXPECT_LE(w[size_t(b * n + i)], w[size_t(b * n + i + 1)]) << what;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double acc = 0;
            for (int64_t c = 0; c < n; ++c) acc += v(b, i, c) * w[size_t(b * n + c)] * v(b, j, c);
            EXPECT_NEAR(acc, (xm(b, i, j) + xm(b, j, i)) / 2, tol(d, n)) << what;
          }
      }
    }
}

// [[2, 1], [1, 2]]: eigenvalues 1 and 3, eigenvectors (1, -1) / sqrt(2) and (1, 1) / sqrt(2) (up to
// sign); a diagonal matrix's eigenvalues are its diagonal, sorted.
TEST(Eigh, ClosedForms) {
  for (DType d : {f32, f64}) {
    const double t = d == f32 ? 1e-6 : 1e-15;
    const V r = both(eigh_of, mj::array({2, 1, 1, 2}, {2, 2}, d), "2x2");
    const std::vector<double> v = vals(r[0]), w = vals(r[1]);
    EXPECT_NEAR(w[0], 1.0, t * 4);
    EXPECT_NEAR(w[1], 3.0, t * 4);
    for (double e : v) EXPECT_NEAR(std::abs(e), std::sqrt(0.5), t);
    EXPECT_NEAR(v[0] * v[2], -0.5, t);  // column 0 is +-(1, -1) / sqrt(2)
    EXPECT_NEAR(v[1] * v[3], 0.5, t);   // column 1 is +-(1, 1) / sqrt(2)
    const V g = both(eigh_of, mj::array({4, 0, 0, 0, -2, 0, 0, 0, 0.5}, {3, 3}, d), "diagonal");
    EXPECT_EQ(vals(g[1]), (std::vector<double>{-2, 0.5, 4}));
  }
}

// symmetrize_input = false reads one triangle only: garbage (even NaN) in the other changes nothing;
// lower = false reads the upper one. sort_eigenvalues = false is ascending too (LAPACK's order).
TEST(Eigh, WithoutSymmetrizingOnlyOneTriangleIsRead) {
  const Array x = uniform({4, 4}, 23);
  const Array sym = (x + mj::transpose(x)) * 0.5;
  std::vector<double> lo = vals(sym), up = vals(sym);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = i + 1; j < 4; ++j) {
      lo[size_t(i * 4 + j)] = i == 0 ? kNaN : 1e3;
      up[size_t(j * 4 + i)] = j == 3 ? kInf : -1e3;
    }
  const V want = eigh_of(sym);
  const V l = both(
      [](const Array& a) {
        auto [v, w] = la::eigh(a, true, false);
        return V{v, w};
      },
      mj::array(lo, {4, 4}, f64), "lower only");
  const V u = both(
      [](const Array& a) {
        auto [v, w] = la::eigh(a, false, false, false);
        return V{v, w};
      },
      mj::array(up, {4, 4}, f64), "upper only");
  const std::vector<double> wl = vals(l[1]), wu = vals(u[1]), ww = vals(want[1]);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(wl[i], ww[i], 1e-14) << i;
    EXPECT_NEAR(wu[i], ww[i], 1e-14) << i;
  }
}

// NaN or inf in a matrix gives NaN eigenvectors and eigenvalues for that batch element only
// (JAX v0.7.0's _eigh_cpu_gpu_lowering fills a failed element with NaN); the others are as alone.
TEST(Eigh, NonFiniteInputGivesNaNForThatBatchElementOnly) {
  for (DType d : {f32, f64}) {
    std::vector<double> x = vals(uniform({4, 3, 3}, 29));
    x[9 + 3] = kNaN;   // element 1, (1, 0): in the lower triangle read
    x[18 + 8] = kInf;  // element 2, (2, 2)
    x[27 + 2] = -kInf; // element 3, (0, 2): upper, but symmetrize_input copies it down
    const V r = both(eigh_of, mj::array(x, {4, 3, 3}, d), dtype_name(d));
    const std::vector<double> v = vals(r[0]), w = vals(r[1]);
    for (size_t i = 9; i < 36; ++i) EXPECT_TRUE(std::isnan(v[i])) << i;
    for (size_t i = 3; i < 12; ++i) EXPECT_TRUE(std::isnan(w[i])) << i;
    const V alone = eigh_of(mj::array(std::vector<double>(x.begin(), x.begin() + 9), {3, 3}, d));
    EXPECT_EQ(std::vector<double>(v.begin(), v.begin() + 9), vals(alone[0]));
    EXPECT_EQ(std::vector<double>(w.begin(), w.begin() + 3), vals(alone[1]));
  }
}

// ---- svd ----------------------------------------------------------------------------------------

V svd_of(const Array& x, bool full, bool uv) { return la::svd(x, full, uv); }

// U diag(s) V^T = x with U^T U = I, V V^T = I (orthonormal rows of vh), s descending and >= 0;
// full_matrices: U [m, m], vh [n, n]; otherwise U [m, k], vh [k, n]. compute_uv = false gives s alone.
TEST(Svd, DecompositionRebuildsTheMatrixFullAndReduced) {
  for (const Shape& s : kRectangular)
    for (bool full : {true, false})
      for (DType d : {f32, f64}) {
        const std::string what = shape_str(s) + (full ? " full " : " reduced ") + dtype_name(d);
        const Array x = uniform(s, 13 + uint32_t(shape_size(s)), -1, 1, d);
        const V r = both([full](const Array& a) { return svd_of(a, full, true); }, x, what);
        const int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
        ASSERT_EQ(r.size(), 3u) << what;
        ASSERT_EQ(r[0].shape().back(), full ? m : k) << what;
        ASSERT_EQ(r[1].shape().back(), k) << what;
        ASSERT_EQ(r[2].shape()[size_t(r[2].ndim() - 2)], full ? n : k) << what;
        const Mats xm = mats(x), u = mats(r[0]), vh = mats(r[2]);
        const Mats v{vals(matrix_t(r[2])), n, vh.rows};
        const std::vector<double> sv = vals(r[1]);
        const V s_only = both([full](const Array& a) { return svd_of(a, full, false); }, x, what + " s only");
        ASSERT_EQ(s_only.size(), 1u);
        const std::vector<double> sv2 = vals(s_only[0]);
        for (int64_t b = 0; b < batch_of(s); ++b) {
          expect_orthonormal_columns(u, b, tol(d, m), what + " U");
          expect_orthonormal_columns(v, b, tol(d, n), what + " V");
          for (int64_t i = 0; i < k; ++i) {
            EXPECT_GE(sv[size_t(b * k + i)], 0.0) << what;
            if (i + 1 < k) EXPECT_GE(sv[size_t(b * k + i)], sv[size_t(b * k + i + 1)]) << what;
            EXPECT_NEAR(sv2[size_t(b * k + i)], sv[size_t(b * k + i)], tol(d, m + n)) << what;
          }
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double acc = 0;
              for (int64_t c = 0; c < k; ++c) acc += u(b, i, c) * sv[size_t(b * k + c)] * vh(b, c, j);
              EXPECT_NEAR(acc, xm(b, i, j), tol(d, m + n)) << what;
            }
        }
      }
}

// A diagonal matrix's singular values are |d| sorted descending; a rectangular one with one
// nonzero per row and column likewise.
TEST(Svd, ClosedForms) {
  for (DType d : {f32, f64}) {
    const double t = d == f32 ? 2e-6 : 1e-14;
    const Array diag = mj::array({3, 0, 0, 0, 0, -5, 0, 0, 0, 0, 0.5, 0, 0, 0, 0, -1}, {4, 4}, d);
    const std::vector<double> s = vals(
        both([](const Array& a) { return svd_of(a, true, false); }, diag, "diag")[0]);
    const std::vector<double> want = {5, 3, 1, 0.5};
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(s[i], want[i], t * want[i]) << i;
    const Array tall = mj::array({0, 2, 0, 0, -3, 0}, {3, 2}, d);
    const std::vector<double> st = vals(
        both([](const Array& a) { return svd_of(a, false, true); }, tall, "tall")[1]);
    EXPECT_NEAR(st[0], 3.0, 3 * t);
    EXPECT_NEAR(st[1], 2.0, 2 * t);
  }
}

// NaN or inf in a matrix gives NaN in s, U and vh for that batch element only (JAX v0.7.0's
// _svd_cpu_gpu_lowering), with and without compute_uv; the others are as alone.
TEST(Svd, NonFiniteInputGivesNaNForThatBatchElementOnly) {
  for (DType d : {f32, f64})
    for (bool full : {true, false}) {
      std::vector<double> x = vals(uniform({3, 3, 2}, 31));
      x[6 + 5] = kNaN;
      x[12 + 0] = -kInf;
      const Array a = mj::array(x, {3, 3, 2}, d);
      const V r = both([full](const Array& y) { return svd_of(y, full, true); }, a, dtype_name(d));
      const int64_t uc = full ? 3 : 2;
      const std::vector<double> u = vals(r[0]), s = vals(r[1]), vh = vals(r[2]);
      for (size_t i = size_t(3 * uc); i < u.size(); ++i) EXPECT_TRUE(std::isnan(u[i])) << i;
      for (size_t i = 2; i < 6; ++i) EXPECT_TRUE(std::isnan(s[i])) << i;
      for (size_t i = 4; i < 12; ++i) EXPECT_TRUE(std::isnan(vh[i])) << i;
      const std::vector<double> so = vals(
          both([full](const Array& y) { return svd_of(y, full, false); }, a, "s")[0]);
      for (size_t i = 2; i < 6; ++i) EXPECT_TRUE(std::isnan(so[i])) << i;
      const V alone = svd_of(mj::array(std::vector<double>(x.begin(), x.begin() + 6), {3, 2}, d), full, true);
      EXPECT_EQ(std::vector<double>(s.begin(), s.begin() + 2), vals(alone[1]));
      EXPECT_EQ(std::vector<double>(u.begin(), u.begin() + 3 * uc), vals(alone[0]));
      EXPECT_TRUE(std::isfinite(so[0]) && std::isfinite(so[1]));
    }
}

// ---- printed params -----------------------------------------------------------------------------

std::string jaxpr_of(const std::function<V(const Array&)>& f, const Array& x) {
  return mj::to_string(mj::make_jaxpr([&](const Array& a) { return f(a); })(x));
}

TEST(LinalgFactor, JaxprPrintsJaxParams) {
  const Array x = uniform({4, 3}, 41), sq = uniform({3, 3}, 42);
  const std::string lu = jaxpr_of(lu_of, x);
  // JAX: `b:f64[4,3] c:i32[3] d:i32[4] = lu a` (no params; the pivots [k], the permutation [m]).
  EXPECT_NE(lu.find("f64[4,3] c:i32[3] d:i32[4] = lu a"), std::string::npos) << lu;
  EXPECT_EQ(lu.find("lu["), std::string::npos) << lu;
  for (bool full : {true, false}) {
    const std::string q = jaxpr_of([full](const Array& a) { return qr_of(a, full); }, x);
    const std::string want = std::string("qr[full_matrices=") + (full ? "True" : "False") +
                             " pivoting=False]";
    EXPECT_NE(q.find(want), std::string::npos) << q;
    const std::string s = jaxpr_of([full](const Array& a) { return svd_of(a, full, !full); }, x);
    const std::string ws = std::string("svd[compute_uv=") + (full ? "False" : "True") +
                           " full_matrices=" + (full ? "True" : "False") + "]";
    EXPECT_NE(s.find(ws), std::string::npos) << s;
  }
  const std::string e = jaxpr_of(
      [](const Array& a) {
        auto [v, w] = la::eigh(a, false, false, true);
        return V{v, w};
      },
      sq);
  EXPECT_NE(e.find("eigh[lower=False sort_eigenvalues=True]"), std::string::npos) << e;
  EXPECT_EQ(e.find("transpose"), std::string::npos) << e;  // no symmetrization
}

// ---- the compiled workspace ---------------------------------------------------------------------

int64_t temp_bytes(const std::function<V(const Array&)>& f, const Array& x) {
  return mj::jit([&](const Array& a) { return f(a); })
      .lower(x)
      .compile()
      .memory_analysis()
      .temp_size_in_bytes;
}

// A compiled batched factorisation holds at least one LAPACK workspace among its temporaries, each
// minimum from LAPACK's documentation (the argument descriptions of each routine):
// ?syevd_ (JOBZ = 'V', N > 1): LWORK >= 1 + 6 N + 2 N^2, LIWORK >= 3 + 5 N;
// ?gesdd_ (JOBZ = 'S' or 'A'): LWORK >= min(M,N) (7 + 4 min(M,N)), IWORK 8 min(M,N);
// ?geqrf_ TAU min(M,N) and LWORK >= N, ?orgqr_ LWORK >= N (the columns of Q); ?getrf_ IPIV min(M,N).
TEST(LinalgFactor, CompiledBatchHoldsALapackWorkspace) {
  for (DType d : {f32, f64}) {
    const int64_t sz = d == f32 ? 4 : 8, n = 16;
    const Array sq = uniform({4, n, n}, 43, -1, 1, d);
    EXPECT_GE(temp_bytes(eigh_of, sq), (1 + 6 * n + 2 * n * n) * sz + (3 + 5 * n) * 4) << dtype_name(d);
    const Array rect = uniform({4, 9, 6}, 44, -1, 1, d);
    const int64_t mn = 6;
    for (bool full : {true, false})
      EXPECT_GE(temp_bytes([full](const Array& a) { return svd_of(a, full, true); }, rect),
                mn * (7 + 4 * mn) * sz + 8 * mn * 4)
          << dtype_name(d);
    // Q [9, 9] (full): ?orgqr_ needs 9; TAU 6.
    EXPECT_GE(temp_bytes([](const Array& a) { return qr_of(a); }, rect), (6 + 9) * sz) << dtype_name(d);
    EXPECT_GE(temp_bytes(lu_of, rect), 6 * 4) << dtype_name(d);
  }
}

// ---- concurrent LAPACK calls -------------------------------------------------------------------

// The compiled runtime splits a batch over oneTBB tasks; Debian's serial OpenBLAS is not safe to
// call from two threads at once (its buffer allocator takes no lock: before core/linalg_kernels.cc
// serialized its calls, most runs of a compiled [64, 128, 128] eigh returned some batch elements
// with wrong eigenvalues, off by up to 0.5). So: the same bits as the eager calls, one at a time,
// in every run; and eager calls from two threads at once give the bits of one thread alone.
TEST(LinalgFactor, BatchTasksGiveTheBitsOfOneCallAtATime) {
  const Array x = uniform({32, 96, 96}, 45);
  const std::vector<std::pair<const char*, std::function<V(const Array&)>>> fs = {
      {"eigh", eigh_of},
      {"svd", [](const Array& a) { return svd_of(a, false, true); }},
      {"lu", lu_of},
      {"qr", [](const Array& a) { return qr_of(a); }},
      {"cholesky",
       [](const Array& a) { return V{la::cholesky(mj::matmul(a, matrix_t(a)) + mj::eye(96, f64) * 96.0)}; }}};
  for (const auto& [name, f] : fs) {
    const V want = f(x);
    auto compiled = mj::jit([&f = f](const Array& a) { return f(a); });
    for (int run = 0; run < 3; ++run) {
      const V got = compiled(x);
      for (size_t i = 0; i < want.size(); ++i)
        expect_bits(got[i], want[i], std::string(name) + " run " + std::to_string(run));
    }
  }
  const Array y = uniform({32, 96, 96}, 46);
  const V wx = eigh_of(x), wy = eigh_of(y);
  for (int run = 0; run < 3; ++run) {
    V gx, gy;
    std::thread t([&] { gx = eigh_of(x); });
    gy = eigh_of(y);
    t.join();
    expect_bits(gx[1], wx[1], "eigh on another thread");
    expect_bits(gy[1], wy[1], "eigh on this thread");
  }
}

// ---- threads ------------------------------------------------------------------------------------

int64_t thread_count() {
  int64_t c = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++c;
  return c;
}

// Issue 30 item 4: a batched eigh of [64, 128, 128] f64, eagerly and compiled, starts no thread
// beyond those the process had after a compiled matrix product of the same size: minijax's own
// oneTBB pool, which the compiled eigh splits its batch over; the serial OpenBLAS's LAPACK starts
// none. A batched [64, 128, 128] product runs its 64 GEMMs one after another on the calling thread
// (mj_rt_gemm loops over the batch; one 128^3 GEMM is one block), so it starts no pool: the same
// 8 MiB as one [8192, 128] x [128, 128] product, split over row blocks, starts it.
TEST(LinalgFactor, BatchedEighStartsNoThreadAfterACompiledMatrixProduct) {
  const Array x = uniform({64, 128, 128}, 47);
  const Array p = mj::jit([](const Array& a) { return mj::matmul(a, a); })(x);
  ASSERT_EQ(vals(p).size(), size_t(64 * 128 * 128));
  const Array flat = mj::reshape(x, {64 * 128, 128});
  const Array q = mj::jit([](const Array& a, const Array& b) { return mj::matmul(a, b); })(flat, x[0]);
  ASSERT_EQ(vals(q).size(), size_t(64 * 128 * 128));
  const int64_t before = thread_count();
  const V e = eigh_of(x);
  const V c = mj::jit([](const Array& a) { return eigh_of(a); })(x);
  expect_bits(c[1], e[1], "eigenvalues compiled vs eager");
  expect_bits(c[0], e[0], "eigenvectors compiled vs eager");
  const std::vector<double> w = vals(e[1]);
  for (int64_t b = 0; b < 64; ++b)
    for (int64_t i = 0; i + 1 < 128; ++i) ASSERT_LE(w[size_t(b * 128 + i)], w[size_t(b * 128 + i + 1)]);
  EXPECT_LE(thread_count(), before);
}

// The workspace sizes are at least LAPACK's documented minimums where an f32 query cannot say them
// exactly: ssyevd_ (JOBZ = 'V') needs LWORK >= 1 + 6 n + 2 n^2, always odd, which a float rounds
// down for some n >= 2895 (then ssyevd_ rejects it through xerbla: its parameter 8); sgesdd_ ('S')
// needs 4 k^2 + 6 k + max(m, n) (LAPACK's dsyevd and dgesdd documentation). A workspace past
// LAPACK's 32-bit sizes (f64 eigh of n = 40000: 2 n^2 > 2^31 - 1) is a ValueError naming eigh.
TEST(LinalgWorkspace, AtLeastLapacksDocumentedMinimumsAndWithinItsIntegers) {
  namespace lk = mj::linalg_kernels;
  auto round64 = [](int64_t b) { return (b + 63) / 64 * 64; };
  for (int64_t n : {2895, 2897, 4097}) {
    EXPECT_GE(lk::eigh_workspace_bytes(int32_t(f32), n),
              round64((1 + 6 * n + 2 * n * n) * 4) + round64((3 + 5 * n) * 4))
        << n;
    EXPECT_GE(lk::svd_workspace_bytes(int32_t(f32), n, n, false, true),
              round64(n * n * 4) + round64((4 * n * n + 6 * n + n) * 4) + round64(8 * n * 4))
        << n;
  }
  try {
    (void)lk::eigh_workspace_bytes(int32_t(f64), 40000);
    ADD_FAILURE() << "expected a ValueError";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("eigh of a 40000 x 40000 matrix"), std::string::npos) << e.what();
  }
}

}  // namespace
