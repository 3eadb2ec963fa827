// minijax runtime GEMM: compiled dot_generals' f32/f64 products on the oneTBB pool, each task one
// single-threaded library call, so the process has one thread budget (oneTBB's) and no OpenMP team.
#pragma once
#include <cstdint>

namespace minijax {

/// C = op(A) op(B) for row-major matrices (as core/gemm.h's gemm with alpha 1, beta 0), computed
/// by splitting the larger of C's rows and columns into at most 4 blocks of at least 128 run as
/// oneTBB tasks, each calling the GEMM library with one thread. The split depends only on m, n, k
/// (never on the threads available), so results are the same from run to run. Small products
/// run as one call on the calling thread. Throws what core/gemm.h's gemm throws.
void runtime_gemm(char trans_a, char trans_b, int64_t m, int64_t n, int64_t k, const float* A, int64_t lda,
                  const float* B, int64_t ldb, float* C, int64_t ldc);
void runtime_gemm(char trans_a, char trans_b, int64_t m, int64_t n, int64_t k, const double* A, int64_t lda,
                  const double* B, int64_t ldb, double* C, int64_t ldc);

/// Makes, on the calling thread and once per process, what the GEMM libraries create lazily at
/// their first call: oneDNN generates its sgemm kernels then and registers their destructors with
/// the C++ runtime. The sharded executor calls it before it registers its exit drain
/// (execute_spmd.cc), so that the drain, registered later, runs before those destructors: a
/// program that exits with its first sharded call running no longer frees the kernels under it.
void initialize_gemm_libraries();

}  // namespace minijax
