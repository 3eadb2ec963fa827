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
}
