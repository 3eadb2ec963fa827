// minijax conformance cases of the linear-algebra primitives: cholesky, triangular_solve, lu, qr, eigh
// and svd (eigh and svd through gauge-invariant results), in f64 (every rule) and f32, batched.
#include "conformance.h"

namespace conformance {
namespace {
namespace la = mj::lax::linalg;
using V = std::vector<Array>;

// Well-conditioned symmetric positive definite matrices: M M^T / n + I for M uniform in [-1, 1).
Array spd(const mj::Shape& s, uint32_t seed, mj::DType dt = mj::f64) {
  const int64_t n = s.back();
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < int64_t(s.size()); ++i) perm.push_back(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  const Array m = rnd(s, seed);
  const Array a = mj::matmul(m, mj::transpose(m, perm)) / double(n) + mj::eye(n, mj::f64);
  return mj::astype(a, dt);
}

// Triangular-solve matrices: entries in [-0.5, 0.5) and a diagonal in [2, 3) (well conditioned
// whichever triangle is read; the other triangle is ignored, so it holds values too).
Array tri(const mj::Shape& s, uint32_t seed, mj::DType dt = mj::f64) {
  const int64_t n = s.back();
  const Array a = rnd(s, seed, -0.5, 0.5) + mj::eye(n, mj::f64) * (rnd({n}, seed + 1, 2, 3) + 0.0);
  return mj::astype(a, dt);
}

// Symmetric matrices with well-separated eigenvalues: (M + M^T) / 4 + diag(0, 3, 6, ...), M
// uniform in [-1, 1) (eigenvector derivatives blow up as eigenvalues meet).
Array separated_sym(const mj::Shape& s, uint32_t seed, mj::DType dt = mj::f64) {
  const int64_t n = s.back();
  std::vector<double> d;
  for (int64_t i = 0; i < n; ++i) d.push_back(3.0 * double(i));
  const Array m = rnd(s, seed);
  const Array a = (m + la::detail::matrix_transpose(m)) * 0.25 + mj::eye(n, mj::f64) * mj::array(d, {n});
  return mj::astype(a, dt);
}

// Matrices whose singular values are separated: M + diag(1, 3, 5, ...) on the leading square.
Array separated_rect(const mj::Shape& s, uint32_t seed, mj::DType dt = mj::f64) {
  const int64_t m = s[s.size() - 2], n = s.back();
  std::vector<double> d(size_t(m * n), 0.0);
  for (int64_t i = 0; i < std::min(m, n); ++i) d[size_t(i * n + i)] = 1.0 + 2.0 * double(i);
  return mj::astype(rnd(s, seed, -0.5, 0.5) + mj::array(d, {m, n}), dt);
}

// V diag(f(w)) V^T: a function of the eigendecomposition that does not depend on the signs (or,
// for a repeated eigenvalue, the basis) LAPACK picks.
Array spectral(const Array& v, const Array& fw) {
  return mj::matmul(v * mj::expand_dims(fw, fw.ndim() - 1), la::detail::matrix_transpose(v));
}

Case eigh_case(const std::string& label, mj::Shape s, uint32_t seed, mj::DType dt = mj::f64) {
  return Case{"eigh", label, [](const V& x) {
                const auto [v, w] = la::eigh(x[0]);
                return V{w, spectral(v, mj::sin(w))};
              },
              {separated_sym(s, seed, dt)}, dt == mj::f64};
}

// svd through gauge-invariant results: s, and U diag(sin s) V^T (reduced).
Case svd_case(const std::string& label, mj::Shape s, uint32_t seed, mj::DType dt = mj::f64) {
  return Case{"svd", label, [](const V& x) {
                const V usv = la::svd(x[0], false);
                return V{usv[1], mj::matmul(usv[0] * mj::expand_dims(mj::sin(usv[1]), usv[1].ndim() - 1), usv[2])};
              },
              {separated_rect(s, seed, dt)}, dt == mj::f64};
}

Case qr_case(const std::string& label, bool full, mj::Shape s, uint32_t seed, bool differentiable = true,
             mj::DType dt = mj::f64) {
  return Case{"qr", label, [full](const V& x) {
                const auto [q, r] = la::qr(x[0], false, full);
                return V{q, r};
              },
              {separated_rect(s, seed, dt)}, differentiable && dt == mj::f64};
}

Case solve_case(const std::string& label, bool left, bool lower, bool trans, bool unit, mj::Shape a,
                mj::Shape b, uint32_t seed, mj::DType dt = mj::f64) {
  return Case{"triangular_solve",
              label,
              one([=](const V& x) {
                return la::triangular_solve(x[0], x[1], left, lower, trans, false, unit);
              }),
              {tri(a, seed, dt), rnd(b, seed + 2, -1, 1, dt)},
              dt == mj::f64};
}

Add cases({
    Case{"cholesky", "f64", one([](const V& a) { return la::cholesky(a[0]); }), {spd({4, 4}, 1401)}},
    // Only the lower triangle read: a function of a's lower triangle, made symmetric so that its
    // tangent is too (JAX's JVP, like minijax's, reads the tangent whole: docs/linalg.md).
    Case{"cholesky",
         "lower_only",
         one([](const V& a) {
           const Array l = la::detail::tri_mask(a[0], 0, true), s = la::detail::tri_mask(a[0], -1, true);
           return la::cholesky(l + la::detail::matrix_transpose(s), false);
         }),
         {spd({3, 3}, 1402)}},
    Case{
        "cholesky", "batch_of_8", one([](const V& a) { return la::cholesky(a[0]); }), {spd({8, 3, 3}, 1403)}},
    Case{"cholesky",
         "batch_2x4",
         one([](const V& a) { return la::cholesky(a[0]); }),
         {spd({2, 4, 2, 2}, 1404)}},
    Case{"cholesky",
         "f32",
         one([](const V& a) { return la::cholesky(a[0]); }),
         {spd({5, 5}, 1405, mj::f32)},
         false},
    Case{
        "cholesky", "one_by_one", one([](const V& a) { return la::cholesky(a[0]); }), {spd({2, 1, 1}, 1406)}},

    solve_case("left_lower", true, true, false, false, {3, 3}, {3, 2}, 1411),
    solve_case("left_upper", true, false, false, false, {3, 3}, {3, 4}, 1412),
    solve_case("left_lower_trans", true, true, true, false, {4, 4}, {4, 2}, 1413),
    solve_case("left_upper_trans_unit", true, false, true, true, {3, 3}, {3, 3}, 1414),
    solve_case("right_lower", false, true, false, false, {3, 3}, {2, 3}, 1415),
    solve_case("right_upper_trans", false, false, true, false, {3, 3}, {4, 3}, 1416),
    solve_case("right_lower_unit", false, true, false, true, {2, 2}, {3, 2}, 1417),
    solve_case("right_upper_trans_unit", false, false, true, true, {3, 3}, {2, 3}, 1418),
    solve_case("batch_of_8_left", true, true, false, false, {8, 3, 3}, {8, 3, 2}, 1419),
    solve_case("batch_of_4_right", false, false, false, false, {4, 2, 2}, {4, 3, 2}, 1420),
    solve_case("f32_left", true, false, true, false, {4, 4}, {4, 3}, 1421, mj::f32),
    solve_case("f32_right", false, true, false, true, {5, 5}, {2, 5}, 1422, mj::f32),
    // A shared a (not batched under vmap: the batch folds into b's right-hand sides).
    Case{"triangular_solve",
         "shared_a_left",
         one([](const V& x) { return la::triangular_solve(x[0], x[1], true, true); }),
         {tri({3, 3}, 1423), rnd({3, 2}, 1424)},
         true,
         true,
         true,
         {true, false}},
    Case{"triangular_solve",
         "shared_a_right",
         one([](const V& x) { return la::triangular_solve(x[0], x[1], false, false, true); }),
         {tri({3, 3}, 1425), rnd({2, 3}, 1426)},
         true,
         true,
         true,
         {true, false}},
    // JAX's singleton form: b of rank a.ndim - 1 is one right-hand side.
    Case{"triangular_solve",
         "vector_b",
         one([](const V& x) { return la::triangular_solve(x[0], x[1], true, true); }),
         {tri({4, 4}, 1427), rnd({4}, 1428)}},
    // lu: the packed factors (differentiable), and all three results (pivots and permutation).
    Case{"lu", "f64", one([](const V& a) { return std::get<0>(la::lu(a[0])); }), {rnd({4, 4}, 1431)}},
    Case{"lu", "tall", one([](const V& a) { return std::get<0>(la::lu(a[0])); }), {rnd({5, 3}, 1432)}},
    Case{"lu", "wide", one([](const V& a) { return std::get<0>(la::lu(a[0])); }), {rnd({3, 5}, 1433)}},
    Case{"lu", "batch_of_4", one([](const V& a) { return std::get<0>(la::lu(a[0])); }), {rnd({4, 3, 3}, 1434)}},
    Case{"lu",
         "all_results",
         [](const V& a) {
           const auto [lu, piv, perm] = la::lu(a[0]);
           return V{lu, piv, perm};
         },
         {rnd({2, 4, 3}, 1435)},
         false},
    Case{"lu", "f32", one([](const V& a) { return std::get<0>(la::lu(a[0])); }), {rnd({4, 4}, 1436, -1, 1, mj::f32)},
         false},

    qr_case("reduced_tall", false, {5, 3}, 1441),
    qr_case("full_square", true, {4, 4}, 1442),
    qr_case("reduced_square_batch_of_4", false, {4, 3, 3}, 1443),
    qr_case("full_tall", true, {5, 3}, 1444, false),
    qr_case("reduced_wide", false, {3, 5}, 1445, false),
    qr_case("f32", false, {6, 4}, 1446, true, mj::f32),

    eigh_case("f64", {4, 4}, 1451),
    eigh_case("batch_of_8", {8, 3, 3}, 1452),
    eigh_case("f32", {5, 5}, 1453, mj::f32),
    // Only the upper triangle read: a function of it made symmetric (the JVP reads the tangent
    // whole, as JAX's: docs/linalg.md).
    Case{"eigh",
         "upper_only",
         [](const V& a) {
           const Array u = la::detail::tri_mask(a[0], 0, false), s = la::detail::tri_mask(a[0], 1, false);
           const auto [v, w] = la::eigh(u + la::detail::matrix_transpose(s), false, false);
           return V{w, spectral(v, w * w)};
         },
         {separated_sym({3, 3}, 1454)}},
    Case{"eigh",
         "raw_results",
         [](const V& a) {
           const auto [v, w] = la::eigh(a[0]);
           return V{v, w};
         },
         {separated_sym({2, 3, 3}, 1455)},
         false},

    svd_case("square", {4, 4}, 1461),
    svd_case("tall", {5, 3}, 1462),
    svd_case("wide_batch_of_4", {4, 2, 3}, 1463),
    svd_case("f32", {4, 6}, 1464, mj::f32),
    Case{"svd", "values_only", one([](const V& a) { return la::svd(a[0], true, false).at(0); }),
         {separated_rect({3, 4}, 1465)}},
    Case{"svd",
         "full_raw_results",
         [](const V& a) { return la::svd(a[0], true, true); },
         {separated_rect({2, 4, 3}, 1466)},
         false},
});

}  // namespace
}  // namespace conformance
