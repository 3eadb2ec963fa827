// minijax runtime: the linear-algebra functions compiled code calls (jit/runtime/linalg.cc;
// listed in runtime_symbols()), on raw buffers through the C ABI, one LAPACK call per matrix.
#pragma once
#include <cstdint>

extern "C" {
/// cholesky: `batch` row-major n x n matrices of dtype `dtype` (minijax's DType: f32 or f64) in
/// `in`, each replaced in `out` (which may be `in`) by its lower Cholesky factor with zeros above
/// the diagonal, or by NaN where LAPACK's ?potrf_ finds it not positive definite
/// (core/linalg_kernels.h's cholesky_lower, the eager primitive's kernel). Matrices run in
/// parallel on the oneTBB pool, one single-threaded LAPACK call each; no allocation. Another dtype
/// records a runtime error.
void mj_rt_cholesky(int32_t dtype, const void* in, void* out, int64_t batch, int64_t n);

/// Flags of mj_rt_triangular_solve: triangular_solve's params.
enum : int32_t {
  MJ_RT_TRSM_LEFT_SIDE = 1,
  MJ_RT_TRSM_LOWER = 2,
  MJ_RT_TRSM_TRANSPOSE_A = 4,
  MJ_RT_TRSM_UNIT_DIAGONAL = 8,
};
/// triangular_solve: for each of `batch` pairs of a row-major m x m `a` and rows x cols `b`
/// (dtype `dtype`, f32 or f64; m = rows with MJ_RT_TRSM_LEFT_SIDE, else cols), X with op(a) X = b
/// (left side) or X op(a) = b, written to `out` (which may be `b`): core/linalg_kernels.h's
/// triangular_solve, the eager primitive's kernel, with `flags` as its params. Pairs run in
/// parallel on the oneTBB pool, one single-threaded ?trsm_ call each. Another dtype records a
/// runtime error.
void mj_rt_triangular_solve(int32_t dtype, const void* a, const void* b, void* out, int64_t batch,
                            int64_t rows, int64_t cols, int32_t flags);
/// The factorisations below take `work`: `slots` workspaces of `slot_bytes` each (the compiled
/// program's arena; core/linalg_kernels.h's *_workspace_bytes of one matrix, rounded up). The
/// batch is split into `slots` contiguous runs of matrices, one oneTBB task and one workspace
/// each, one single-threaded LAPACK call per matrix: no allocation. The kernels are the eager
/// primitives' (core/linalg_kernels.h). Another dtype (f32 and f64 only) records a runtime error.

/// lu: `batch` row-major m x n matrices in `in`; `out` (may be `in`) gets the packed factors,
/// `pivots` (i32, min(m, n) each) the 0-based row swaps, `perm` (i32, m each) the row order.
void mj_rt_lu(int32_t dtype, const void* in, void* out, void* pivots, void* perm, int64_t batch, int64_t m,
              int64_t n, void* work, int64_t slot_bytes, int64_t slots);

/// qr: `q` (m x m if `full_matrices`, else m x min(m, n)) and `r` (m x n or min(m, n) x n) of each
/// row-major m x n matrix of `in` (which may alias neither).
void mj_rt_qr(int32_t dtype, const void* in, void* q, void* r, int64_t batch, int64_t m, int64_t n,
              int32_t full_matrices, void* work, int64_t slot_bytes, int64_t slots);

/// eigh: eigenvectors `v` (n x n, as columns; may be `in`) and ascending eigenvalues `w` (n) of
/// each symmetric n x n matrix of `in`, its `lower` (else upper) triangle read; NaN for a matrix
/// with a non-finite value read or on which ?syevd_ does not converge.
void mj_rt_eigh(int32_t dtype, const void* in, void* v, void* w, int64_t batch, int64_t n, int32_t lower,
                void* work, int64_t slot_bytes, int64_t slots);

/// Flags of mj_rt_svd: svd's params.
enum : int32_t {
  MJ_RT_SVD_FULL_MATRICES = 1,
  MJ_RT_SVD_COMPUTE_UV = 2,
};
/// svd: singular values `s` (min(m, n), descending) and, with MJ_RT_SVD_COMPUTE_UV, `u` and `vt`
/// of each row-major m x n matrix of `in`; NaN for a non-finite matrix or no convergence.
void mj_rt_svd(int32_t dtype, const void* in, void* s, void* u, void* vt, int64_t batch, int64_t m, int64_t n,
               int32_t flags, void* work, int64_t slot_bytes, int64_t slots);
}
