// Tests of the linear-algebra primitives cholesky and triangular_solve, eagerly and compiled: values
// against oracles computed here by plain loops (L L^T rebuilt, op(A) X multiplied back, a textbook
// factor), LAPACK's failures as JAX reports them (a matrix that is not positive definite gives a
// NaN factor for that batch element only), the triangle read, JAX's singleton right-hand side,
// the printed params, and derivatives (check_grads, order 2, forward and reverse, f64).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <minijax/minijax.h>

#include "core/linalg_test_util.h"

namespace {

using namespace minijax;
namespace la = minijax::lax::linalg;
using V = std::vector<Array>;
using namespace linalg_test;



// Row-major n x n matrices (a batch of them): M M^T / n + I, symmetric positive definite.
Array spd(const Shape& s, uint32_t seed, DType d = f64) {
  const int64_t n = s.back();
  std::vector<double> m = vals(uniform(s, seed)), a(m.size());
  for (size_t o = 0; o < m.size(); o += size_t(n * n))
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = i == j ? 1.0 : 0.0;
        for (int64_t k = 0; k < n; ++k)
          acc += m[o + size_t(i * n + k)] * m[o + size_t(j * n + k)] / double(n);
        a[o + size_t(i * n + j)] = acc;
      }
  return mj::array(a, s, d);
}

// The bytes of two arrays are identical.

// f eagerly and under jit: the same bits (the runtime and the eager primitive call the same LAPACK
// routine per matrix), returned eager.
Array both(const std::function<Array(const Array&)>& f, const Array& x, const std::string& what) {
  Array e = f(x);
  Array c = mj::jit([&](const Array& a) { return f(a); })(x);
  expect_bits(c, e, what + " (compiled vs eager)");
  return e;
}

// ---- cholesky -----------------------------------------------------------------------------------

// The classic example (e.g. Golub and Van Loan's exercises; Wikipedia's "Cholesky decomposition"):
// [[4, 12, -16], [12, 37, -43], [-16, -43, 98]] = L L^T with L = [[2, 0, 0], [6, 1, 0], [-8, 5, 3]].
TEST(Cholesky, TextbookFactor) {
  for (DType d : {f32, f64}) {
    const Array a = mj::array({4, 12, -16, 12, 37, -43, -16, -43, 98}, {3, 3}, d);
    const std::vector<double> l = vals(both([](const Array& x) { return la::cholesky(x); }, a, "textbook"));
    const std::vector<double> want = {2, 0, 0, 6, 1, 0, -8, 5, 3};
    for (size_t i = 0; i < 9; ++i)
      EXPECT_NEAR(l[i], want[i], d == f32 ? 2e-5 : 1e-13) << dtype_name(d) << " " << i;
  }
}

// L is lower triangular with a positive diagonal and zeros above it, and L L^T rebuilds A.
TEST(Cholesky, FactorRebuildsTheMatrixAcrossSizesAndBatches) {
  for (const Shape& s :
       std::vector<Shape>{{1, 1}, {2, 2}, {5, 5}, {17, 17}, {3, 4, 4}, {2, 3, 6, 6}, {0, 3, 3}}) {
    for (DType d : {f32, f64}) {
      const Array a = spd(s, 7 + uint32_t(s.back()), d);
      const std::string what = shape_str(s) + " " + dtype_name(d);
      const std::vector<double> l = vals(both([](const Array& x) { return la::cholesky(x); }, a, what));
      const std::vector<double> av = vals(a);
      const int64_t n = s.back();
      for (size_t o = 0; o < l.size(); o += size_t(n * n))
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) {
            if (j > i) EXPECT_EQ(l[o + size_t(i * n + j)], 0.0) << what;
            if (i == j) EXPECT_GT(l[o + size_t(i * n + i)], 0.0) << what;
            double acc = 0;
            for (int64_t k = 0; k < n; ++k) acc += l[o + size_t(i * n + k)] * l[o + size_t(j * n + k)];
            EXPECT_NEAR(acc, av[o + size_t(i * n + j)], d == f32 ? 1e-5 * double(n) : 1e-13 * double(n))
                << what;
          }
    }
  }
}

// A batch element that is not positive definite gives a NaN matrix; the others are unaffected (JAX
// v0.7.0's CPU lowering: info > 0 -> NaN for that element). A NaN input gives NaN in its factor.
TEST(Cholesky, NotPositiveDefiniteGivesNaNForThatBatchElementOnly) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Array a = mj::array({4, 2, 2, 3,     // positive definite
                             1, 2, 2, 1,     // eigenvalues 3 and -1
                             2, 0, 0, -1,    // negative diagonal
                             1, 0, 0, nan},  // NaN
                            {4, 2, 2}, f64);
  const std::vector<double> l = vals(both([](const Array& x) { return la::cholesky(x); }, a, "batch"));
  EXPECT_DOUBLE_EQ(l[0], 2.0);
  EXPECT_DOUBLE_EQ(l[1], 0.0);
  EXPECT_DOUBLE_EQ(l[2], 1.0);
  EXPECT_DOUBLE_EQ(l[3], std::sqrt(2.0));
  for (size_t i = 4; i < 12; ++i) EXPECT_TRUE(std::isnan(l[i])) << i;
  EXPECT_TRUE(std::isnan(l[15]));
}

// symmetrize_input=false reads only the lower triangle: an upper triangle of garbage changes
// nothing; with symmetrize_input the same matrix is first averaged with its transpose.
TEST(Cholesky, WithoutSymmetrizingOnlyTheLowerTriangleIsRead) {
  const Array a = spd({4, 4}, 11);
  std::vector<double> g = vals(a);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = i + 1; j < 4; ++j) g[size_t(i * 4 + j)] = 1e3 * double(i + 2 * j);
  const Array garbage = mj::array(g, {4, 4}, f64);
  expect_bits(both([](const Array& x) { return la::cholesky(x, false); }, garbage, "lower only"),
              la::cholesky(a, false), "upper triangle ignored");
  const Array sym = la::cholesky((garbage + mj::transpose(garbage)) * 0.5, false);
  expect_bits(la::cholesky(garbage), sym, "symmetrized first");
}

TEST(Cholesky, JaxprIsTheSymmetrizationThenOnePrimitive) {
  const std::string j = mj::to_string(
      mj::make_jaxpr([](const Array& x) { return la::cholesky(x); })(spd({3, 3}, 1)));
  EXPECT_NE(j.find("cholesky"), std::string::npos) << j;
  EXPECT_NE(j.find("transpose"), std::string::npos) << j;
  const std::string k = mj::to_string(
      mj::make_jaxpr([](const Array& x) { return la::cholesky(x, false); })(spd({3, 3}, 1)));
  EXPECT_EQ(k.find("transpose"), std::string::npos) << k;
}

TEST(Cholesky, CheckGradsOrderTwo) {
  EXPECT_NO_THROW(mj::check_grads([](const Array& x) { return la::cholesky(x); }, spd({3, 3}, 21), 2));
  EXPECT_NO_THROW(mj::check_grads([](const Array& x) { return la::cholesky(x); }, spd({2, 4, 4}, 22), 2));
  // A scalar loss through the factor: log det A = 2 sum log diag(L).
  auto logdet = [](const Array& x) {
    const Array l = la::cholesky(x);
    return mj::sum(mj::log(mj::sum(l * mj::eye(x.shape().back(), f64), -1))) * 2.0;
  };
  EXPECT_NO_THROW(mj::check_grads(logdet, spd({4, 4}, 23), 2));
  // d log det A / dA = A^-1 (A symmetric): checked against the inverse rebuilt from the factor.
  const Array a = spd({3, 3}, 24);
  const Array g = mj::grad(logdet)(a);
  const Array inv = la::triangular_solve(la::cholesky(a),
                                         la::triangular_solve(la::cholesky(a), mj::eye(3, f64), true, true),
                                         true, true, true);
  const std::vector<double> gv = vals(g), iv = vals(inv);
  for (size_t i = 0; i < 9; ++i) EXPECT_NEAR(gv[i], iv[i], 1e-12) << i;
}

// ---- triangular_solve ---------------------------------------------------------------------------

// op(A) with A's `lower` (else upper) triangle, ones on the diagonal if unit, transposed if trans.
std::vector<double> op_matrix(const std::vector<double>& a, int64_t m, bool lower, bool trans, bool unit) {
  std::vector<double> t(a.size(), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) {
      const bool in = i == j || (lower ? j < i : j > i);
      double v = !in ? 0.0 : (i == j && unit ? 1.0 : a[size_t(i * m + j)]);
      t[size_t(trans ? j * m + i : i * m + j)] = v;
    }
  return t;
}

// Every combination of side, triangle, transpose and unit diagonal, in f32 and f64, batched:
// op(A) X (left side) or X op(A) (right side) multiplied back by plain loops equals B.
TEST(TriangularSolve, EveryCombinationSolvesTheSystem) {
  for (int flags = 0; flags < 16; ++flags) {
    const bool left = flags & 1, lower = flags & 2, trans = flags & 4, unit = flags & 8;
    for (DType d : {f32, f64}) {
      const int64_t m = 4, other = 3, batch = 2;
      const Shape sb = left ? Shape{batch, m, other} : Shape{batch, other, m};
      Array a = uniform({batch, m, m}, 31 + uint32_t(flags), -0.5, 0.5, d) +
                mj::astype(mj::eye(m, f64) * 3.0, d);
      const Array b = uniform(sb, 41 + uint32_t(flags), -1, 1, d);
      const std::string what = "flags " + std::to_string(flags) + " " + dtype_name(d);
      const Array x = la::triangular_solve(a, b, left, lower, trans, false, unit);
      const Array xc = mj::jit([&](const Array& p, const Array& q) {
        return la::triangular_solve(p, q, left, lower, trans, false, unit);
      })(a, b);
      expect_bits(xc, x, what + " (compiled vs eager)");
      const std::vector<double> av = vals(a), bv = vals(b), xv = vals(x);
      const int64_t rows = sb[1], cols = sb[2];
      for (int64_t e = 0; e < batch; ++e) {
        const std::vector<double> am(av.begin() + e * m * m, av.begin() + (e + 1) * m * m);
        const std::vector<double> op = op_matrix(am, m, lower, trans, unit);
        const double* xe = xv.data() + e * rows * cols;
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < m; ++k)
              acc += left ? op[size_t(i * m + k)] * xe[k * cols + j]
                          : xe[i * cols + k] * op[size_t(k * m + j)];
            EXPECT_NEAR(acc, bv[size_t(e * rows * cols + i * cols + j)], d == f32 ? 1e-5 : 1e-13) << what;
          }
      }
    }
  }
}

// JAX's singleton form: b of rank a.ndim - 1 is one right-hand side, the result of b's shape.
TEST(TriangularSolve, VectorRightHandSide) {
  const Array a = mj::array({2, 0, 1, 4}, {2, 2}, f64);  // lower: [[2, 0], [1, 4]]
  const Array b = mj::array({2, 9}, {2}, f64);
  // [[2, 0], [1, 4]] x = [2, 9] -> x = [1, 2]; x [[2, 0], [1, 4]] = [2, 9] -> x = [-1/8, 9/4].
  const std::vector<double> l = vals(la::triangular_solve(a, b, true, true));
  const std::vector<double> r = vals(la::triangular_solve(a, b, false, true));
  ASSERT_EQ(l.size(), 2u);
  EXPECT_DOUBLE_EQ(l[0], 1.0);
  EXPECT_DOUBLE_EQ(l[1], 2.0);
  EXPECT_DOUBLE_EQ(r[0], -0.125);
  EXPECT_DOUBLE_EQ(r[1], 2.25);
}

// A zero on the diagonal divides by zero (inf or NaN, as XLA's triangular solve): no error.
TEST(TriangularSolve, ZeroDiagonalGivesInfOrNaNNotAnError) {
  const Array a = mj::array({0, 0, 1, 1}, {2, 2}, f64);
  const Array b = mj::array({1, 1}, {2, 1}, f64);
  std::vector<double> x;
  ASSERT_NO_THROW(x = vals(mj::jit([](const Array& p, const Array& q) {
                    return la::triangular_solve(p, q, true, true);
                  })(a, b)));
  EXPECT_TRUE(std::isinf(x[0]));
  EXPECT_FALSE(std::isfinite(x[1]));
}

TEST(TriangularSolve, PrintsJaxParams) {
  const std::string j = mj::to_string(mj::make_jaxpr([](const Array& a, const Array& b) {
    return la::triangular_solve(a, b, true, true, false, true, true);
  })(spd({3, 3}, 1), spd({3, 3}, 2)));
  // JAX's printer: params sorted by name, one per line when they do not fit on one.
  EXPECT_NE(j.find("triangular_solve["), std::string::npos) << j;
  size_t at = 0;
  for (const char* p :
       {"conjugate_a=False", "left_side=True", "lower=True", "transpose_a=False", "unit_diagonal=True"}) {
    const size_t k = j.find(p);
    EXPECT_NE(k, std::string::npos) << p << " in\n" << j;
    EXPECT_GT(k, at) << p << " out of order in\n" << j;
    at = k;
  }
}

TEST(TriangularSolve, CheckGradsOrderTwoInBothOperands) {
  const Array a = uniform({3, 3}, 51, -0.5, 0.5) + mj::eye(3, f64) * 3.0;
  for (int flags = 0; flags < 16; ++flags) {
    const bool left = flags & 1, lower = flags & 2, trans = flags & 4, unit = flags & 8;
    const Array b = uniform(left ? Shape{3, 2} : Shape{2, 3}, 52 + uint32_t(flags));
    EXPECT_NO_THROW(mj::check_grads(
        [=](const Array& p, const Array& q) {
          return la::triangular_solve(p, q, left, lower, trans, false, unit);
        },
        std::tuple{a, b}, 2))
        << "flags " << flags;
  }
}

// The derivative with respect to a triangle that is not read is zero.
TEST(TriangularSolve, GradientOfTheIgnoredTriangleIsZero) {
  const Array a = uniform({3, 3}, 61, -0.5, 0.5) + mj::eye(3, f64) * 3.0;
  const Array b = uniform({3, 2}, 62);
  const Array g = mj::grad(
      [&](const Array& p) { return mj::sum(la::triangular_solve(p, b, true, true, false, false, true)); })(a);
  const std::vector<double> gv = vals(g);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = i; j < 3; ++j) EXPECT_EQ(gv[size_t(i * 3 + j)], 0.0) << i << "," << j;
  EXPECT_NE(gv[3], 0.0);
}

// ---- jax.scipy.linalg ---------------------------------------------------------------------------

// cho_factor's upper factor (scipy's default) is U with U^T U = A and zeros below the diagonal;
// the lower one L with L L^T = A; cho_solve with either solves A x = b (checked by multiplying back).
TEST(ScipyLinalg, ChoFactorBothTrianglesAndChoSolve) {
  namespace sla = mj::scipy::linalg;
  const Array a = spd({2, 4, 4}, 71);
  const Array b = uniform({2, 4, 3}, 72);
  const std::vector<double> av = vals(a), bv = vals(b);
  for (bool lower : {false, true}) {
    auto [c, flag] = sla::cho_factor(a, lower);
    EXPECT_EQ(flag, lower);
    const std::vector<double> cv = vals(c);
    for (size_t o = 0; o < 32; o += 16)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          if (lower ? j > i : j < i) EXPECT_EQ(cv[o + size_t(i * 4 + j)], 0.0);
          double acc = 0;  // (L L^T)_ij or (U^T U)_ij
          for (int64_t k = 0; k < 4; ++k)
            acc += lower ? cv[o + size_t(i * 4 + k)] * cv[o + size_t(j * 4 + k)]
                         : cv[o + size_t(k * 4 + i)] * cv[o + size_t(k * 4 + j)];
          EXPECT_NEAR(acc, av[o + size_t(i * 4 + j)], 1e-13);
        }
    const Array x = sla::cho_solve({c, flag}, b);
    const std::vector<double> xv = vals(
        mj::jit([&](const Array& cc, const Array& bb) { return sla::cho_solve({cc, flag}, bb); })(c, b));
    expect_bits(mj::array(xv, {2, 4, 3}, f64), x, "cho_solve compiled vs eager");
    for (size_t e = 0; e < 2; ++e)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 3; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < 4; ++k)
            acc += av[e * 16 + size_t(i * 4 + k)] * xv[e * 12 + size_t(k * 3 + j)];
          EXPECT_NEAR(acc, bv[e * 12 + size_t(i * 3 + j)], 1e-12);
        }
  }
}

// solve_triangular's trans 0/1/2 and "N"/"T"/"C" are lax's triangular_solve with left_side=True
// and transpose_a false, true, true; a vector b gives a vector; integer operands solve in f32.
TEST(ScipyLinalg, SolveTriangularTransSpellingsAndVectors) {
  namespace sla = mj::scipy::linalg;
  const Array a = uniform({3, 3}, 81, -0.5, 0.5) + mj::eye(3, f64) * 3.0;
  const Array b = uniform({3, 2}, 82);
  const Array n = la::triangular_solve(a, b, true, true);
  const Array t = la::triangular_solve(a, b, true, true, true);
  expect_bits(sla::solve_triangular(a, b, 0, true), n, "trans 0");
  expect_bits(sla::solve_triangular(a, b, "N", true), n, "trans N");
  expect_bits(sla::solve_triangular(a, b, 1, true), t, "trans 1");
  expect_bits(sla::solve_triangular(a, b, "T", true), t, "trans T");
  expect_bits(sla::solve_triangular(a, b, 2, true), t, "trans 2");
  expect_bits(sla::solve_triangular(a, b, "C", true), t, "trans C");
  const Array v = sla::solve_triangular(a, mj::array({1.0, 2.0, 3.0}, {3}, f64));
  EXPECT_EQ(v.shape(), (Shape{3}));
  // Upper (the default): [[2, 1], [0, 4]] x = [4, 8] -> x = [1, 2]; integers solve in f32.
  const Array xi = sla::solve_triangular(mj::array({2, 1, 0, 4}, {2, 2}, i32), mj::array({4, 8}, {2}, i32));
  EXPECT_EQ(xi.dtype(), f32);
  EXPECT_EQ(vals(xi), (std::vector<double>{1.0, 2.0}));
}

}  // namespace
