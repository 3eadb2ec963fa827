// minijax jax.scipy.linalg (core/scipy_linalg.h): scipy's argument conventions mapped onto the
// lax.linalg primitives, as jax/_src/scipy/linalg.py maps them (the LU solve shared with mj::linalg).
#include "core/scipy_linalg.h"

#include "core/errors.h"
#include "core/lax.h"
#include "core/linalg.h"
#include "core/numpy_linalg.h"

namespace minijax::scipy::linalg {

namespace {

namespace la = lax::linalg;

// JAX's promote_dtypes_inexact: both operands to their promoted dtype, an integer one to f32.
std::pair<Array, Array> promote_inexact(const Array& a, const Array& b, SL loc) {
  DType d = promote_types({a.dtype(), a.weak_type()}, {b.dtype(), b.weak_type()}, loc).dtype;
  if (!is_floating(d)) d = DType::f32;
  auto to = [&](const Array& x) { return x.dtype() == d ? x : lax::convert_element_type(x, d, false, loc); };
  return {to(a), to(b)};
}

// JAX's _check_solve_shapes: a [..., m, m] with b [..., m, k] or [..., m].
void check_solve_shapes(const char* fn, const Array& a, const Array& b, SL loc) {
  const int64_t r = a.ndim();
  const bool ok = r >= 2 && (b.ndim() == r || b.ndim() == r - 1) &&
                  a.shape()[size_t(r - 1)] == a.shape()[size_t(r - 2)] &&
                  b.shape()[size_t(r - 2)] == a.shape()[size_t(r - 1)];
  if (!ok)
    throw ShapeError(std::string(fn) +
                         ": operands must have shapes a=[..., m, m] and b=[..., m, k] or b=[..., m] "
                         "(left side); got a=" +
                         shape_str(a.shape()) + " and b=" + shape_str(b.shape()),
                     loc);
}

}  // namespace

Array solve_triangular(const Array& a, const Array& b, Trans trans, bool lower, bool unit_diagonal, SL loc) {
  bool transpose_a = false;
  const std::string& n = trans.name;
  if (trans.code == 0 || n == "N") transpose_a = false;
  else if (trans.code == 1 || trans.code == 2 || n == "T" || n == "C") transpose_a = true;
  else
    throw ValueError("solve_triangular: invalid trans value " +
                         (n.empty() ? std::to_string(trans.code) : "\"" + n + "\"") +
                         " (0, 1, 2 or \"N\", \"T\", \"C\")",
                     loc);
  if (!a.defined() || !b.defined()) throw ValueError("solve_triangular: an operand is an empty Array", loc);
  auto [pa, pb] = promote_inexact(a, b, loc);
  return la::triangular_solve(pa, pb, true, lower, transpose_a, false, unit_diagonal, loc);
}

std::pair<Array, bool> cho_factor(const Array& a, bool lower, SL loc) {
  if (!a.defined()) throw ValueError("cho_factor: the operand is an empty Array", loc);
  Array x = is_floating(a.dtype()) ? a : lax::convert_element_type(a, DType::f32, false, loc);
  // JAX's _cholesky: the upper factor is the transpose of the lower factor of a^T, whose lower
  // triangle is a's upper one.
  if (lower || x.ndim() < 2) return {la::cholesky(x, false, loc), lower};
  const Array l = la::cholesky(la::detail::matrix_transpose(x, loc), false, loc);
  return {la::detail::matrix_transpose(l, loc), lower};
}

Array cho_solve(const std::pair<Array, bool>& c_and_lower, const Array& b, SL loc) {
  const auto& [c0, lower] = c_and_lower;
  if (!c0.defined() || !b.defined()) throw ValueError("cho_solve: an operand is an empty Array", loc);
  auto [c, bb] = promote_inexact(c0, b, loc);
  check_solve_shapes("cho_solve", c, bb, loc);
  // c c^T x = b (lower) or c^T c x = b (upper): solve with the first factor, then the second.
  const Array y = la::triangular_solve(c, bb, true, lower, !lower, false, false, loc);
  return la::triangular_solve(c, y, true, lower, lower, false, false, loc);
}

std::pair<Array, Array> lu_factor(const Array& a, SL loc) {
  if (!a.defined()) throw ValueError("lu_factor: the operand is an empty Array", loc);
  const Array x = minijax::linalg::detail::promote_inexact(a, loc);
  minijax::linalg::detail::check_lapack_dtype("lu_factor", x, loc);
  const auto [lu, pivots, perm] = la::lu(x, loc);
  return {lu, pivots};
}

Array lu_solve(const std::pair<Array, Array>& lu_and_piv, const Array& b, int trans, SL loc) {
  const auto& [lu0, piv] = lu_and_piv;
  if (!lu0.defined() || !piv.defined() || !b.defined())
    throw ValueError("lu_solve: an operand is an empty Array", loc);
  if (!is_integer(piv.dtype()))
    throw TypeError(std::string("lu_solve: the pivots must be i32, got ") + dtype_name(piv.dtype()), loc);
  if (trans < 0 || trans > 2)
    throw ValueError("lu_solve: 'trans' must be 0, 1 or 2, got " + std::to_string(trans), loc);
  auto [lu, bb] = promote_inexact(lu0, b, loc);
  minijax::linalg::detail::check_lapack_dtype("lu_solve", lu, loc);
  const int64_t r = lu.ndim();
  if (r < 2 || lu.shape()[size_t(r - 1)] != lu.shape()[size_t(r - 2)] || piv.ndim() < 1 ||
      piv.shape().back() > lu.shape().back())
    throw ShapeError(
        "lu_solve: expected lu=[..., m, m] and piv=[..., k] with k <= m (from lu_factor of a square "
        "matrix); got lu=" +
            shape_str(lu.shape()) + " and piv=" + shape_str(piv.shape()),
        loc);
  const Array perm = minijax::linalg::detail::lu_pivots_to_permutation(piv, lu.shape().back(), loc);
  return minijax::linalg::detail::lu_solve(lu, perm, bb, trans, "lu_solve", loc);
}

}  // namespace minijax::scipy::linalg
