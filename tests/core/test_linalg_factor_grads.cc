// Tests of the derivatives of lu, qr, eigh and svd (issue 30 items 2 and 7), in f64.
// Owns their check_grads cases (order 2, fwd and rev) and their degenerate and undefined cases.
//
// check_grads (central differences at JAX's tolerances) of the packed LU factors, of Q and R, and
// of the gauge-invariant functions of eigh and svd, on inputs away from the degenerate cases; the
// degenerate cases as JAX v0.7.0 gives them: eigenvector and singular-vector tangents at a repeated
// eigenvalue or singular value are inf or NaN while the value tangents stay finite; svd's JVP with
// full_matrices and compute_uv, and qr's for m < n, throw mj::NotDifferentiableError.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <minijax/minijax.h>

#include "core/linalg_test_util.h"

namespace {

using namespace minijax;
namespace la = minijax::lax::linalg;
using V = std::vector<Array>;
using namespace linalg_test;



Array matrix_t(const Array& x) {
  std::vector<int64_t> p;
  for (int64_t i = 0; i < x.ndim(); ++i) p.push_back(i);
  std::swap(p[p.size() - 1], p[p.size() - 2]);
  return mj::transpose(x, p);
}

// A random n x n orthogonal matrix (row-major): Gram-Schmidt on the columns of a uniform matrix.
std::vector<double> orthogonal(int64_t n, uint32_t seed) {
  std::vector<double> q = uniform_values(size_t(n * n), seed);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t p = 0; p < j; ++p) {
      double d = 0;
      for (int64_t i = 0; i < n; ++i) d += q[size_t(i * n + j)] * q[size_t(i * n + p)];
      for (int64_t i = 0; i < n; ++i) q[size_t(i * n + j)] -= d * q[size_t(i * n + p)];
    }
    double norm = 0;
    for (int64_t i = 0; i < n; ++i) norm += q[size_t(i * n + j)] * q[size_t(i * n + j)];
    for (int64_t i = 0; i < n; ++i) q[size_t(i * n + j)] /= std::sqrt(norm);
  }
  return q;
}

// U diag(s) V^T for random orthogonal U (m x m) and V (n x n), s of length min(m, n): a matrix
// with the singular values s (eigenvalues s when m == n and same_sides, U = V).
Array with_spectrum(int64_t m, int64_t n, const std::vector<double>& s, uint32_t seed,
                    bool same_sides = false) {
  const std::vector<double> u = orthogonal(m, seed), v = same_sides ? u : orthogonal(n, seed + 1);
  std::vector<double> a(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (size_t k = 0; k < s.size(); ++k)
        a[size_t(i * n + j)] += u[size_t(i * m) + k] * s[k] * v[size_t(j * n) + k];
  return mj::array(a, {m, n}, f64);
}

// Rows of `m x n` small values (|x| <= 0.3) plus 3 at (perm[j], j) for each column j < min(m, n):
// partial pivoting picks row perm[j] at step j, and a small perturbation keeps that choice.
Array clear_pivots(int64_t m, int64_t n, const std::vector<int64_t>& perm, uint32_t seed) {
  std::vector<double> a = uniform_values(size_t(m * n), seed, -0.3, 0.3);
  for (size_t j = 0; j < perm.size(); ++j) a[size_t(perm[j] * n) + j] += 3.0;
  return mj::array(a, {m, n}, f64);
}

// ---- check_grads --------------------------------------------------------------------------------

TEST(LuGrad, CheckGradsOfThePackedFactors) {
  auto packed = [](const Array& x) { return std::get<0>(la::lu(x)); };
  EXPECT_NO_THROW(mj::check_grads(packed, clear_pivots(3, 3, {1, 2, 0}, 1), 2));
  EXPECT_NO_THROW(mj::check_grads(packed, clear_pivots(4, 3, {3, 0, 2}, 2), 2));
  EXPECT_NO_THROW(mj::check_grads(packed, clear_pivots(3, 4, {2, 0, 1}, 3), 2));
  const Array batch = mj::stack({clear_pivots(3, 3, {0, 2, 1}, 4), clear_pivots(3, 3, {2, 1, 0}, 5)});
  EXPECT_NO_THROW(mj::check_grads(packed, batch, 2));
  // The pivots of the inputs above are the chosen rows: step j swaps row j with perm[j]'s row.
  EXPECT_EQ(vals(std::get<1>(la::lu(clear_pivots(3, 3, {1, 2, 0}, 1)))), (std::vector<double>{1, 2, 2}));
}

TEST(QrGrad, CheckGradsReducedTallAndFullSquare) {
  auto both = [](bool full) {
    return [full](const Array& x) {
      auto [q, r] = la::qr(x, false, full);
      return V{q, r};
    };
  };
  const Array tall = uniform({4, 3}, 11) + with_spectrum(4, 3, {2, 1.5, 1}, 12);
  EXPECT_NO_THROW(mj::check_grads(both(false), tall, 2));
  EXPECT_NO_THROW(mj::check_grads(both(true), with_spectrum(3, 3, {2, 1.5, 1}, 13), 2));
  EXPECT_NO_THROW(mj::check_grads(both(false), with_spectrum(3, 3, {3, 2, 1}, 14), 2));
  EXPECT_NO_THROW(
      mj::check_grads(both(false),
                      mj::stack({with_spectrum(4, 2, {2, 1}, 15), with_spectrum(4, 2, {1.5, 1}, 16)}), 2));
}

// Symmetric inputs with eigenvalues {1, 1.4} and {4, 5}: distinct, the two clusters well apart.
Array eigh_input(uint32_t seed, int64_t n = 4) {
  const std::vector<double> w = n == 4 ? std::vector<double>{1, 1.4, 4, 5} : std::vector<double>{1, 2.5, 4};
  return with_spectrum(n, n, w, seed, true) + uniform({n, n}, seed + 7, -0.05, 0.05);
}

// V diag(f(w)) V^T (rows of V scaled by f(w) then multiplied back), for any batch.
Array rebuild(const Array& v, const Array& fw) {
  return mj::matmul(v * mj::expand_dims(fw, -2), matrix_t(v));
}

TEST(EighGrad, CheckGradsOfGaugeInvariantFunctions) {
  auto w = [](const Array& x) { return la::eigh(x).second; };
  auto vfv = [](const Array& x) {
    auto [v, e] = la::eigh(x);
    return rebuild(v, mj::sin(e));
  };
  // The projector onto the eigenspace of the two smallest eigenvalues (gap 1.4 -> 4).
  auto projector = [](const Array& x) {
    const Array v = la::eigh(x).first;
    std::vector<int64_t> start(size_t(v.ndim()), 0), limit(v.shape().begin(), v.shape().end());
    limit.back() = 2;
    const Array v2 = mj::lax::slice(v, start, limit);
    return mj::matmul(v2, matrix_t(v2));
  };
  for (uint32_t seed : {21u, 22u}) {
    const Array x = eigh_input(seed);
    EXPECT_NO_THROW(mj::check_grads(w, x, 2)) << seed;
    EXPECT_NO_THROW(mj::check_grads(vfv, x, 2)) << seed;
    EXPECT_NO_THROW(mj::check_grads(projector, x, 2)) << seed;
  }
  EXPECT_NO_THROW(mj::check_grads(vfv, mj::stack({eigh_input(23, 3), eigh_input(24, 3)}), 2));
  // The eigenvalue gradient of a symmetric matrix: d w_i / dx = v_i v_i^T (Giles, NA-08-01), for
  // the symmetrized input (x + x^T) / 2 it is the same (v_i v_i^T is symmetric).
  const Array x = eigh_input(25);
  const Array g = mj::grad([](const Array& a) { return la::eigh(a).second[3]; })(x);
  const std::vector<double> v = vals(la::eigh(x).first), gv = vals(g);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_NEAR(gv[size_t(i * 4 + j)], v[size_t(i * 4 + 3)] * v[size_t(j * 4 + 3)], 1e-13);
}

TEST(SvdGrad, CheckGradsOfGaugeInvariantFunctions) {
  auto s_only = [](const Array& x) { return la::svd(x, false, false)[0]; };
  auto s_of_uv = [](const Array& x) { return la::svd(x, false, true)[1]; };
  auto ufv = [](const Array& x) {
    const V r = la::svd(x, false, true);
    return mj::matmul(r[0] * mj::expand_dims(mj::tanh(r[1]), -2), r[2]);
  };
  for (const auto& [m, n] : std::vector<std::pair<int64_t, int64_t>>{{4, 3}, {3, 4}, {3, 3}}) {
    const Array x = with_spectrum(m, n, {2.5, 1.5, 0.7}, 31 + uint32_t(m)) + uniform({m, n}, 35, -0.05, 0.05);
    const std::string what = std::to_string(m) + "x" + std::to_string(n);
    EXPECT_NO_THROW(mj::check_grads(s_only, x, 2)) << what;
    EXPECT_NO_THROW(mj::check_grads(s_of_uv, x, 2)) << what;
    EXPECT_NO_THROW(mj::check_grads(ufv, x, 2)) << what;
  }
  // full_matrices without compute_uv is differentiable (s only), as JAX.
  EXPECT_NO_THROW(mj::check_grads([](const Array& x) { return la::svd(x, true, false)[0]; },
                                  with_spectrum(4, 3, {2, 1, 0.5}, 37), 2));
  // The singular-value gradient: d s_i / dx = u_i v_i^T.
  const Array x = with_spectrum(3, 3, {3, 2, 1}, 38);
  const Array g = mj::grad([](const Array& a) { return la::svd(a, false, false)[0][0]; })(x);
  const V r = la::svd(x, false, true);
  const std::vector<double> u = vals(r[0]), vh = vals(r[2]), gv = vals(g);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_NEAR(gv[size_t(i * 3 + j)], u[size_t(i * 3)] * vh[size_t(j)], 1e-13);
}

// ---- degenerate cases ---------------------------------------------------------------------------

bool any_non_finite(const Array& a) {
  for (double v : vals(a))
    if (!std::isfinite(v)) return true;
  return false;
}
bool all_finite(const Array& a) { return !any_non_finite(a); }

// diag(2, 2, 5): the eigenvalue 2 is repeated (exactly: ?syevd_ of a diagonal matrix). JAX's rule
// divides by w_j - w_i = 0, so the eigenvector tangent is inf or NaN; the eigenvalue tangent
// diag(V^T t V) stays finite, sums to trace(t) (V orthogonal) and, for the simple eigenvalue 5 with
// eigenvector +-e_3, is t[2, 2] (first-order perturbation theory). Eagerly and compiled.
TEST(EighGrad, RepeatedEigenvalueGivesNonFiniteEigenvectorTangentOnly) {
  const Array x = mj::array({2, 0, 0, 0, 2, 0, 0, 0, 5}, {3, 3}, f64);
  const Array t0 = uniform({3, 3}, 41);
  const Array t = (t0 + matrix_t(t0)) * 0.5;
  const std::vector<double> tv = vals(t);
  auto f = [](const Array& a) {
    auto [v, w] = la::eigh(a);
    return V{v, w};
  };
  const auto [pe, te] = mj::jvp(f, std::tuple{x}, std::tuple{t});
  const auto [pc, tc] = mj::jit(
      [&](const Array& a, const Array& d) { return mj::jvp(f, std::tuple{a}, std::tuple{d}); })(x, t);
  for (const auto& [p, d] : {std::pair{pe, te}, std::pair{pc, tc}}) {
    const std::vector<double> w = vals(p[1]), dw = vals(d[1]);
    ASSERT_EQ(w[0], w[1]);  // the premise: exactly repeated
    EXPECT_TRUE(any_non_finite(d[0]));
    EXPECT_TRUE(all_finite(d[1]));
    EXPECT_NEAR(dw[0] + dw[1] + dw[2], tv[0] + tv[4] + tv[8], 1e-14);
    EXPECT_NEAR(dw[2], tv[8], 1e-15);
  }
  // A gauge-invariant function that needs no eigenvector tangent is finite there too: sum(w^2).
  const Array g = mj::grad([](const Array& a) { return mj::sum(mj::square(la::eigh(a).second)); })(x);
  const std::vector<double> gv = vals(g);  // d sum(w^2) = 2 trace(x dx): 2 x for a symmetric x
  const std::vector<double> want = {4, 0, 0, 0, 4, 0, 0, 0, 10};
  for (size_t i = 0; i < 9; ++i) EXPECT_NEAR(gv[i], want[i], 1e-14) << i;
}

// diag(2, 2, 1): the singular value 2 is repeated. JAX's rule divides by s_j^2 - s_i^2 = 0, so the
// singular-vector tangents are inf or NaN; ds = diag(U^T t V) stays finite, for the simple value 1
// (u = v = +-e_3) t[2, 2].
TEST(SvdGrad, RepeatedSingularValueGivesNonFiniteVectorTangentsOnly) {
  const Array x = mj::array({2, 0, 0, 0, 2, 0, 0, 0, 1}, {3, 3}, f64);
  const Array t = uniform({3, 3}, 43);
  const std::vector<double> tv = vals(t);
  auto f = [](const Array& a) { return la::svd(a, false, true); };
  const auto [pe, te] = mj::jvp(f, std::tuple{x}, std::tuple{t});
  const auto [pc, tc] = mj::jit(
      [&](const Array& a, const Array& d) { return mj::jvp(f, std::tuple{a}, std::tuple{d}); })(x, t);
  for (const auto& [p, d] : {std::pair{pe, te}, std::pair{pc, tc}}) {
    const std::vector<double> s = vals(p[1]), ds = vals(d[1]), u = vals(p[0]), vh = vals(p[2]);
    ASSERT_EQ(s[0], s[1]);
    EXPECT_TRUE(any_non_finite(d[0]));
    EXPECT_TRUE(any_non_finite(d[2]));
    ASSERT_TRUE(all_finite(d[1]));
    for (int64_t k = 0; k < 3; ++k) {  // ds_k = u_k^T t v_k, by loops
      double acc = 0;
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 3; ++j)
          acc += u[size_t(i * 3 + k)] * tv[size_t(i * 3 + j)] * vh[size_t(k * 3 + j)];
      EXPECT_NEAR(ds[size_t(k)], acc, 1e-14) << k;
    }
    EXPECT_NEAR(ds[2], tv[8], 1e-15);
  }
}

// JAX refuses svd's JVP with full_matrices and compute_uv (NotImplementedError), even for a
// function of s alone, and qr's for m < n or with full_matrices for m > n: NotDifferentiableError,
// in forward and reverse mode; full_matrices without compute_uv, and reduced qr of a tall matrix,
// differentiate.
TEST(LinalgFactorGrad, UndefinedDerivativesThrowNotDifferentiable) {
  const Array x = with_spectrum(4, 3, {2, 1, 0.5}, 51), t = uniform({4, 3}, 52);
  auto svd_full = [](const Array& a) { return la::svd(a, true, true)[1]; };
  EXPECT_THROW(mj::jvp(svd_full, std::tuple{x}, std::tuple{t}), NotDifferentiableError);
  EXPECT_THROW(mj::grad([&](const Array& a) { return mj::sum(svd_full(a)); })(x), NotDifferentiableError);
  EXPECT_THROW(mj::jit([&](const Array& a) {
                 return mj::grad([&](const Array& b) { return mj::sum(svd_full(b)); })(a);
               })(x),
               NotDifferentiableError);
  const Array ds =
      mj::jvp([](const Array& a) { return la::svd(a, true, false)[0]; }, std::tuple{x}, std::tuple{t}).second;
  const Array ds_reduced = mj::jvp([](const Array& a) { return la::svd(a, false, false)[0]; }, std::tuple{x},
                                   std::tuple{t})
                               .second;
  const std::vector<double> a = vals(ds), b = vals(ds_reduced);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(a[i], b[i], 1e-14) << i;

  auto r_of = [](bool full) { return [full](const Array& a) { return la::qr(a, false, full).second; }; };
  const Array wide = uniform({3, 4}, 53), wt = uniform({3, 4}, 54);
  for (bool full : {true, false}) {
    EXPECT_THROW(mj::jvp(r_of(full), std::tuple{wide}, std::tuple{wt}), NotDifferentiableError) << full;
    EXPECT_THROW(mj::grad([&](const Array& c) { return mj::sum(r_of(full)(c)); })(wide),
                 NotDifferentiableError)
        << full;
  }
  EXPECT_THROW(mj::jvp(r_of(true), std::tuple{x}, std::tuple{t}), NotDifferentiableError);
  EXPECT_TRUE(all_finite(mj::jvp(r_of(false), std::tuple{x}, std::tuple{t}).second));
}

}  // namespace
