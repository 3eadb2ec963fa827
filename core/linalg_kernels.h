// minijax linear-algebra kernels: one row-major matrix at a time through LAPACK (core/lapack.h),
// the one interface through which the eager linalg primitives and the compiled runtime call it.
#pragma once
#include <cstdint>

namespace minijax::linalg_kernels {

/// The lower Cholesky factor of the row-major n x n matrix `a` (f32 or f64), in place: reads only
/// a's lower triangle (diagonal included), writes L (A = L L^T) there and zeros above it. Where
/// LAPACK's ?potrf_ reports a minor that is not positive definite (info > 0), the whole matrix is
/// NaN instead, as JAX v0.7.0's CPU lowering fills it (jax/_src/lax/linalg.py,
/// _cholesky_cpu_lowering's _replace_not_ok_with_nan). Returns LAPACK's info (0: success).
/// Requires 0 <= n <= INT32_MAX (the shape rule's check); no allocation.
/// Mapping: a row-major matrix is its transpose in column-major order, so ?potrf_ runs with
/// uplo 'U' on it, whose upper triangle is a's lower one.
template <class T>
int cholesky_lower(T* a, int64_t n);

/// Solves op(A) X = B (`left_side`) or X op(A) = B for X, in place of the row-major `b` of
/// rows x cols (f32 or f64), where A is the row-major m x m `a` (m = rows if left_side, else
/// cols), op(A) is A or A^T (`transpose_a`), only A's `lower` (else upper) triangle is read, and
/// its diagonal is taken as ones if `unit_diagonal`. One ?trsm_ call: a zero on A's diagonal gives
/// inf or NaN, as XLA's triangular solve. Requires the dims to fit in an int32 (the shape rule's
/// check); does nothing when b is empty.
/// Mapping to column-major (row-major matrices are their transposes): the side and the triangle
/// swap, the transpose flag stays, LAPACK's m and n are cols and rows.
template <class T>
void triangular_solve(const T* a, T* b, int64_t rows, int64_t cols, bool left_side, bool lower,
                      bool transpose_a, bool unit_diagonal);

}  // namespace minijax::linalg_kernels
