// minijax jax.numpy.linalg: inv, solve, det, slogdet, pinv, norm and matrix_power (mj::linalg),
// composed of the lax.linalg primitives (core/linalg.h) and existing ops, with JAX's custom JVPs.
#pragma once
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/array.h"
#include "core/numpy.h"

namespace minijax::linalg {

using SL = std::source_location;

/// numpy's `ord` argument of norm: None (the default, also from std::nullopt), a number (any
/// arithmetic C++ value; +-inf as std::numeric_limits<double>::infinity() or INFINITY), or a name
/// ("fro" or "f", "nuc"). Which values a norm accepts depends on the number of axes (see norm);
/// any other is a ValueError naming it when norm reads it.
struct Ord {
  enum class Kind { none, number, name };
  Kind kind = Kind::none;
  double value = 0;  ///< the number (Kind::number)
  std::string name;  ///< the name (Kind::name)
  Ord() = default;
  Ord(std::nullopt_t) {}  // NOLINT(google-explicit-constructor)
  template <class T>
    requires(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
  Ord(T v) : kind(Kind::number), value(double(v)) {}  // NOLINT(google-explicit-constructor)
  Ord(const char* s) : kind(Kind::name), name(s) {}  // NOLINT(google-explicit-constructor)
  Ord(std::string s) : kind(Kind::name), name(std::move(s)) {}  // NOLINT(google-explicit-constructor)
  /// How the value is printed in messages: None, the number (inf, -inf) or the quoted name.
  std::string str() const;
};

/// jnp.linalg.solve: x with a x = b. a: [..., m, m]; b: [m] (one right-hand side, the result
/// [..., m] with a's batch dims), or [..., m, k] (the result [..., m, k], the batch dims of a and b
/// broadcast as numpy's). Integer (and bool) operands are promoted to f32, mixed dtypes to the
/// promoted float dtype (JAX's promote_dtypes_inexact); the solve itself needs f32 or f64
/// (TypeError naming the dtype otherwise). Through one `lu` and two `triangular_solve`s of the
/// permuted right-hand side (a gather), as JAX's lax.linalg._solve / lu_solve; a singular a gives
/// inf or NaN in the result (LAPACK's factors keep the zero pivot, and the triangular solve divides
/// by it), never an error. Errors: a of rank < 2, a non-square a, b's m not a's, batch dims that do
/// not broadcast, or b [..., m] of rank > 1 that JAX before v0.5.0 read as a batch of vectors
/// (ShapeError naming both shapes and the side, "a x = b"). Derivative: the composition's (lu's
/// and triangular_solve's rules), which is JAX's custom_linear_solve derivative: x_dot = a^-1
/// (b_dot - a_dot x). Source: jax/_src/numpy/linalg.py solve, jax/_src/lax/linalg.py _solve.
Array solve(const Array& a, const Array& b, SL loc = SL::current());

/// jnp.linalg.inv: the inverse of each matrix of a ([..., n, n]), as solve(a, I) (JAX's inv).
/// Integers are promoted to f32. A singular matrix gives inf or NaN entries (see solve). Errors:
/// rank < 2 or a non-square matrix (ShapeError naming the shape), a dtype other than f32/f64 after
/// promotion (TypeError). Derivative: solve's, i.e. -inv(a) a_dot inv(a).
/// Source: jax/_src/numpy/linalg.py inv.
Array inv(const Array& a, SL loc = SL::current());

/// jnp.linalg.det: the determinant of each matrix of a ([..., n, n]), of shape a.shape[:-2].
/// Integers are promoted to f32. As JAX: 2x2 and 3x3 matrices by the closed forms (the rule of
/// Sarrus; derivative composed, exact everywhere); other sizes as sign * exp(log|det|) from slogdet
/// with JAX's custom JVP (_det_jvp): det_dot = trace(adj(a) a_dot), adj(a) from _cofactor_solve's
/// LU solve, finite at singular matrices of rank n - 1 (the derivative there is the cofactor
/// matrix) and zero for rank < n - 1. A zero pivot in the LU factors gives det 0 (rounding may
/// leave a tiny value for other singular matrices). Errors: rank < 2 or a non-square matrix
/// (ShapeError naming the shape), a dtype other than f32/f64 for n > 3 (TypeError naming det).
/// Source: jax/_src/numpy/linalg.py det, _det, _det_jvp, _cofactor_solve.
Array det(const Array& a, SL loc = SL::current());

/// jnp.linalg.slogdet: (sign, log|det|) of each matrix of a ([..., n, n]), both of shape
/// a.shape[:-2] and a's (promoted) dtype: sign is +-1, or 0 with log|det| = -inf for a singular
/// matrix (a zero on U's diagonal). Through `lu` (JAX's _slogdet_lu: the sign from the pivots'
/// parity and the negative diagonal entries of U, log|det| = sum log|U_ii|). Integers are
/// promoted to f32. Derivative: JAX's custom JVP (_slogdet_jvp): log|det|_dot = trace(solve(a,
/// a_dot)), sign_dot = 0. Errors: rank < 2 or a non-square matrix (ShapeError naming the shape),
/// a dtype other than f32/f64 (TypeError). JAX's method="qr" is not provided.
/// Source: jax/_src/numpy/linalg.py slogdet, _slogdet_lu, _slogdet_jvp.
std::pair<Array, Array> slogdet(const Array& a, SL loc = SL::current());

/// jnp.linalg.pinv: the Moore-Penrose pseudo-inverse of each matrix of a ([..., m, n]), of shape
/// [..., n, m], through the reduced `svd`: singular values <= rtol * the largest are dropped (JAX's
/// numpy algorithm). rtol: a number or an array broadcastable to a.shape[:-2]; by default JAX's
/// 10 * max(m, n) * eps(dtype). An empty matrix (m or n zero) gives an empty [..., n, m].
/// Integers are promoted to f32. Derivative: JAX's custom JVP _pinv_jvp (Golub and Pereyra,
/// "The differentiation of pseudo-inverses and nonlinear least squares problems whose variables
/// separate", 1973), rtol treated as a constant. JAX's `hermitian` option is not provided.
/// Errors: rank < 2 (ShapeError naming the shape), a dtype other than f32/f64 (TypeError).
/// Source: jax/_src/numpy/linalg.py pinv, _pinv, _pinv_jvp.
Array pinv(const Array& a, const std::optional<Operand>& rtol = std::nullopt, SL loc = SL::current());

/// jnp.linalg.norm: a vector or matrix norm of x, reduced over `axis` (one axis: a vector norm;
/// two: a matrix norm; negative axes count from the end), keeping the reduced dims as size 1 with
/// `keepdims`. axis = nullopt: with ord None the 2-norm of the flattened x (any rank); otherwise
/// all of x's dims, so x must be a vector or a matrix. Integers are promoted to f32.
/// Vector ord: None or 2 (sqrt(sum(x^2))), inf (max |x|, 0 for an empty vector), -inf (min |x|),
/// 0 (the number of nonzeros, in x's float dtype), 1 (sum |x|), any other p (sum |x|^p)^(1/p).
/// Matrix ord: None, "fro" or "f" (Frobenius), "nuc" (sum of singular values), 1 / -1 (max / min
/// column sum of |x|), inf / -inf (max / min row sum), 2 / -2 (largest / smallest singular value,
/// through `svd` without vectors). Derivative: the composition's, as JAX's (NaN at x = 0 for the
/// 2-norms, as sqrt's). Errors: a string ord for a vector or an unknown matrix ord (ValueError
/// naming the value), an axis list of length other than 1 or 2, a repeated axis, or an axis out of
/// range (ValueError naming it), an integer ord on a non-f32/f64 matrix through svd (TypeError).
/// Source: jax/_src/numpy/linalg.py norm, vector_norm.
Array norm(const Array& x, const Ord& ord = {},
           const std::optional<std::vector<int64_t>>& axis = std::nullopt, bool keepdims = false,
           SL loc = SL::current());

/// jnp.linalg.matrix_power: a ([..., m, m]) to the static integer power n by repeated squaring
/// (JAX's order of products): n = 0 gives identities of a's shape, n < 0 uses inv(a) (so a singular
/// a gives inf or NaN). No promotion, as JAX's: an integer matrix's powers stay integer for n >= 0
/// (n < 0 goes through inv, which promotes to f32). Derivative: the composition's (matmul, and
/// inv's for n < 0). Errors: rank < 2 or a non-square matrix (ShapeError naming the shape); a
/// floating-point exponent that is not an integer (ValueError naming it; JAX raises TypeError).
/// Source: jax/_src/numpy/linalg.py matrix_power.
Array matrix_power(const Array& a, int64_t n, SL loc = SL::current());

namespace detail {
/// matrix_power with a floating-point exponent: ValueError unless it is an integer.
Array matrix_power_of_double(const Array& a, double n, SL loc);
}  // namespace detail

/// matrix_power with a floating-point exponent (e.g. 2.0): the integer power if n is an integer
/// that fits in int64, else a ValueError naming n.
template <std::floating_point T>
Array matrix_power(const Array& a, T n, SL loc = SL::current()) {
  return detail::matrix_power_of_double(a, double(n), loc);
}

namespace detail {
/// JAX's promote_dtypes_inexact of one array: integers and bool to f32, floats unchanged.
Array promote_inexact(const Array& x, SL loc);
/// TypeError naming `fn` and the dtype unless x (promoted) is f32 or f64, the dtypes of the
/// LAPACK-backed primitives.
void check_lapack_dtype(const char* fn, const Array& x, SL loc);
/// JAX's lax.linalg.lu_pivots_to_permutation (_generic_lu_pivots_to_permutation): the row order
/// ([..., permutation_size] i32) that the swaps `pivots` ([..., k] i32, row i swapped with row
/// pivots[i], in order) produce from the identity; a fori_loop of swaps. ValueError if
/// permutation_size < k.
Array lu_pivots_to_permutation(const Array& pivots, int64_t permutation_size, SL loc);
/// JAX's lax.linalg.lu_solve: x with op(A) x = b from lu's packed factors ([..., m, m]) and
/// permutation ([..., m]), A[perm] = L U; op is A (trans 0) or A^T (1 and 2). b is [..., m]
/// when its rank is lu's minus one, else [..., m, k]; the batch dims of lu, permutation and b
/// broadcast. Errors name `fn`: a non-square lu, b that does not fit (ShapeError naming both
/// shapes and the side), trans other than 0, 1, 2 (ValueError).
Array lu_solve(const Array& lu, const Array& permutation, const Array& b, int trans, const char* fn, SL loc);
}  // namespace detail

}  // namespace minijax::linalg
