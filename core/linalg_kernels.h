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

/// How many workspaces a batch of `batch` matrices is split over (one oneTBB task, and one
/// workspace, each): min(batch, the hardware threads), at least 1. The compiled program reserves
/// that many in its arena (memory/buffer_rules.cc) and the runtime runs that many tasks.
int64_t workspace_slots(int64_t batch);

/// The workspace bytes one matrix's call needs (each piece 64-byte aligned), from LAPACK's own
/// workspace queries (lwork = -1) where the routine has one, at least its documented minimum (an
/// f32 query is rounded up: a float may round a size above 2^24 down); `dtype` f32 or f64
/// (minijax's DType as an int). A size past LAPACK's 32-bit integers is a ValueError naming the
/// function and the matrix dims. Each kernel below takes its workspace as (work, work_bytes) and
/// throws std::length_error rather than use more than work_bytes. lu: a column-major copy and the pivots; qr: a column-major m x max(n, cols of Q)
/// copy, tau and ?geqrf_/?orgqr_'s work; eigh: ?syevd_'s work and iwork; svd: a copy of the
/// matrix, ?gesdd_'s work and iwork.
int64_t lu_workspace_bytes(int32_t dtype, int64_t m, int64_t n);
int64_t qr_workspace_bytes(int32_t dtype, int64_t m, int64_t n, bool full_matrices);
int64_t eigh_workspace_bytes(int32_t dtype, int64_t n);
int64_t svd_workspace_bytes(int32_t dtype, int64_t m, int64_t n, bool full_matrices, bool compute_uv);

/// LU with partial pivoting of the row-major m x n `x`, into `a` (row-major m x n; may be `x`): L
/// below the diagonal (unit diagonal implicit), U on and above, through ?getrf_ on a column-major
/// copy in `work` (lu_workspace_bytes). `pivots` gets min(m, n) 0-based row swaps, `perm` the m-row
/// order they give (x[perm] = L U). Returns ?getrf_'s info (> 0: an exact zero pivot; the factors
/// are kept).
template <class T>
int lu(const T* x, T* a, int64_t m, int64_t n, int32_t* pivots, int32_t* perm, void* work,
       int64_t work_bytes);

/// QR of the row-major m x n `x`: q (row-major m x m if `full_matrices`, else m x k, k = min(m, n))
/// and r (m x n or k x n, zeros below the diagonal), through ?geqrf_ and ?orgqr_ on a column-major
/// copy in `work` (qr_workspace_bytes). `x` may not alias q or r. Returns LAPACK's info (0).
template <class T>
int qr(const T* x, T* q, T* r, int64_t m, int64_t n, bool full_matrices, void* work, int64_t work_bytes);

/// Eigendecomposition of the symmetric row-major n x n `x` (its `lower`, else upper, triangle
/// read): v gets the eigenvectors as columns (row-major n x n), w the n eigenvalues ascending,
/// through ?syevd_ (jobz 'V'; work: eigh_workspace_bytes). `x` may be `v`. A non-finite value in
/// the triangle read, or ?syevd_'s info > 0 (no convergence), fills v and w with NaN, as JAX
/// v0.7.0's _eigh_cpu_gpu_lowering (the check first: LAPACK never sees a NaN or inf). Returns
/// info (-1 for a non-finite input).
template <class T>
int eigh(const T* x, T* v, T* w, int64_t n, bool lower, void* work, int64_t work_bytes);

/// SVD of the row-major m x n `x`, k = min(m, n): s the k singular values descending; with
/// `compute_uv` u (row-major m x m if `full_matrices`, else m x k) and vt (n x n, else k x n),
/// x = u diag(s) vt; through ?gesdd_ on a copy in `work` (svd_workspace_bytes). The row-major x is
/// the column-major x^T = vt^T diag(s) u^T, so ?gesdd_ of x^T writes vt where it writes its U and
/// u where it writes its VT, without a transpose. A non-finite x or info > 0 fills s, u and vt with
/// NaN (as JAX's _svd_cpu_gpu_lowering). Returns info (-1 for a non-finite input).
template <class T>
int svd(const T* x, T* s, T* u, T* vt, int64_t m, int64_t n, bool full_matrices, bool compute_uv, void* work,
        int64_t work_bytes);

}  // namespace minijax::linalg_kernels
