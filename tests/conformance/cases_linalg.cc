// minijax conformance cases of the linear-algebra primitives: cholesky (symmetrized and lower
// triangle only, batched) and triangular_solve (each side, triangle, transpose and unit diagonal,
// a shared a under vmap), in f64 (every rule) and f32; batch dims of 2, 4 and 8 for the sharded check.
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
});

}  // namespace
}  // namespace conformance
