// minijax jax.lax.linalg: the linear-algebra primitives' entry points (core/primitives/linalg.cc)
// and the matrix helpers their rules share.
#pragma once
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "core/array.h"

namespace minijax::lax::linalg {

using SL = std::source_location;

/// JAX's lax.linalg.cholesky: the lower Cholesky factor L of each matrix of `x` (shape
/// [..., n, n], f32 or f64), x = L L^T, with zeros above the diagonal; shape and dtype of x.
/// With `symmetrize_input` (JAX's default) x is first replaced by (x + x^T) / 2; without it only
/// x's lower triangle is read. A matrix that is not positive definite (LAPACK's ?potrf_ reports
/// info > 0) gives a matrix of NaN for that batch element only, as JAX v0.7.0 on the CPU; NaN or
/// inf in a matrix gives NaN in its factor. Staged as `cholesky` (the symmetrization before it as
/// transpose, add and mul). Errors: rank < 2 or a non-square matrix (ShapeError naming the
/// shape), a dtype other than f32/f64 (TypeError naming it), naming cholesky and the call site.
/// Gradient: JAX's _cholesky_jvp_rule (Murray, "Differentiation of the Cholesky decomposition",
/// arXiv:1602.07527): L_dot = L phi(L^-1 x_dot L^-T), phi taking the lower triangle with the
/// diagonal halved. Like JAX's, the rule reads x_dot whole, as the derivative for a symmetric x:
/// without symmetrize_input, a tangent whose upper triangle differs from its lower one's transpose
/// gets that symmetric derivative, not the one of "the lower triangle only". Source: jax/_src/lax/linalg.py cholesky, _cholesky_cpu_lowering.
Array cholesky(const Array& x, bool symmetrize_input = true, SL loc = SL::current());

/// JAX's lax.linalg.triangular_solve: X with op(a) X = b (`left_side`) or X op(a) = b, where a is
/// [..., m, m] (only its `lower`, else upper, triangle read; its diagonal taken as ones if
/// `unit_diagonal`) and op(a) is a or a^T (`transpose_a`); b is [..., m, n] (left_side) or
/// [..., n, m] with a's batch dims, or, JAX's singleton form, of rank a.ndim - 1 (one right-hand
/// side: [..., m]). The result has b's shape and dtype (f32 or f64, a's). `conjugate_a` has no
/// effect on real operands (JAX binds it False for them, as minijax does). A zero on a's diagonal
/// gives inf or NaN, as XLA's. Staged as `triangular_solve[left_side=.. lower=.. transpose_a=..
/// conjugate_a=False unit_diagonal=..]`. Errors: operands of rank < 2, a non-square a, or dims
/// that do not fit (ShapeError naming both shapes and the side), dtypes other than f32/f64 or two
/// different ones (TypeError), naming triangular_solve and the call site.
/// Gradient: linear in b (its transpose solves with op(a)^T); in a, JAX's
/// _triangular_solve_jvp_rule_a. Source: jax/_src/lax/linalg.py triangular_solve.
Array triangular_solve(const Array& a, const Array& b, bool left_side = false, bool lower = false,
                       bool transpose_a = false, bool conjugate_a = false, bool unit_diagonal = false,
                       SL loc = SL::current());

/// JAX's lax.linalg.lu: LU decomposition with partial pivoting, P x = L U, of each matrix of `x`
/// ([..., m, n], f32 or f64; rectangular allowed). Returns (lu, pivots, permutation): `lu` of x's
/// shape and dtype holds L below the diagonal (its unit diagonal implicit) and U on and above it;
/// `pivots` (i32, [..., min(m, n)]) says that row i was swapped with row pivots[i] (0-based, in
/// order); `permutation` (i32, [..., m]) is the resulting row order, x[perm] = L U. A singular
/// matrix keeps LAPACK's factors (a zero pivot in U: ?getrf_'s info > 0), as JAX. Staged as `lu`.
/// Errors: rank < 2 (ShapeError naming the shape), a dtype other than f32/f64 (TypeError).
/// Gradient: JAX's _lu_jvp_rule. Source: jax/_src/lax/linalg.py lu, _lu_cpu_gpu_lowering.
std::tuple<Array, Array, Array> lu(const Array& x, SL loc = SL::current());

/// JAX's lax.linalg.qr: x = Q R for each matrix of `x` ([..., m, n], f32 or f64), Q with
/// orthonormal columns, R upper triangular. `full_matrices`: Q [..., m, m] and R [..., m, n];
/// otherwise Q [..., m, k] and R [..., k, n], k = min(m, n). Signs as LAPACK's ?geqrf_/?orgqr_
/// (R's diagonal may be negative). Staged as `qr[full_matrices=.. pivoting=False]`.
/// Errors: `pivoting = true` (ValueError: JAX's column-pivoted QR is outside this function), rank < 2
/// (ShapeError), dtype other than f32/f64 (TypeError). Gradient: JAX's qr_jvp_rule, defined for
/// m >= n and, with full_matrices, m == n (NotDifferentiableError otherwise, where JAX raises
/// NotImplementedError). Source: jax/_src/lax/linalg.py qr.
std::pair<Array, Array> qr(const Array& x, bool pivoting = false, bool full_matrices = true,
                           SL loc = SL::current());

/// JAX's lax.linalg.eigh: x = V diag(w) V^T for each symmetric matrix of `x` ([..., n, n], f32 or
/// f64). Returns (v, w): v [..., n, n] with the orthonormal eigenvectors as columns
/// (v[..., :, i] belongs to w[..., i]), w [..., n] ascending. With `symmetrize_input` (default)
/// x is first replaced by (x + x^T) / 2; otherwise only its `lower` (else upper) triangle is read.
/// `sort_eigenvalues`: ascending either way (LAPACK's order). A matrix on which ?syevd_ does not
/// converge, or that holds NaN or inf, gives NaN in v and w for that batch element. Staged as
/// `eigh[lower=.. sort_eigenvalues=..]`. Errors: rank < 2, non-square (ShapeError), dtype
/// (TypeError). Gradient: JAX's _eigh_jvp_rule; eigenvector tangents at repeated eigenvalues are
/// inf or NaN, eigenvalue tangents stay finite (docs/linalg.md). Source: jax/_src/lax/linalg.py.
std::pair<Array, Array> eigh(const Array& x, bool lower = true, bool symmetrize_input = true,
                             bool sort_eigenvalues = true, SL loc = SL::current());

/// JAX's lax.linalg.svd: x = U diag(s) V^H for each matrix of `x` ([..., m, n], f32 or f64),
/// k = min(m, n), s [..., k] descending and non-negative. With `compute_uv` returns {u, s, vh}:
/// u [..., m, m] and vh [..., n, n] if `full_matrices`, else u [..., m, k] and vh [..., k, n];
/// without it returns {s}. Through ?gesdd_; a matrix on which it does not converge, or that holds
/// NaN or inf, gives NaN in every result of that batch element. Staged as
/// `svd[full_matrices=.. compute_uv=..]` (the primitive's outputs: s, then u and vh). Errors:
/// rank < 2 (ShapeError), dtype (TypeError). Gradient: JAX's _svd_jvp_rule; with full_matrices
/// and compute_uv it throws NotDifferentiableError, as JAX refuses it. Source: jax/_src/lax/linalg.py.
std::vector<Array> svd(const Array& x, bool full_matrices = true, bool compute_uv = true,
                       SL loc = SL::current());

namespace detail {
/// x with its last two dims swapped (JAX's linalg._T).
Array matrix_transpose(const Array& x, SL loc = SL::current());
/// (x + x^T) / 2 over the last two dims (JAX's linalg.symmetrize for real x).
Array symmetrize(const Array& x, SL loc = SL::current());
/// x with the elements off the kept triangle zeroed: `lower` keeps col - row <= k (JAX's
/// _tril(x, k)), else col - row >= k (_triu(x, k)).
Array tri_mask(const Array& x, int64_t k, bool lower, SL loc = SL::current());
}  // namespace detail

}  // namespace minijax::lax::linalg
