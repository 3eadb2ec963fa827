// minijax GEMM: the one interface through which eager dot_general multiplies matrices.
// Owns gemm() for f32 (oneDNN's dnnl_sgemm) and f64 (OpenBLAS's cblas_dgemm), row-major.
#pragma once
#include <cstdint>
#include <mutex>

namespace minijax {

/// C = alpha * op(A) @ op(B) + beta * C for row-major matrices, where op(X) is X ('N') or X^T
/// ('T'). op(A) is [m, k], op(B) is [k, n], C is [m, n]; lda/ldb/ldc are row strides in elements
/// (for A stored as 'N' lda >= k, as 'T' lda >= m; likewise for B). Sizes of zero are allowed
/// (k == 0 scales C by beta). f32 goes through oneDNN's dnnl_sgemm, f64 through OpenBLAS's
/// cblas_dgemm (OPENBLAS_CORETYPE is left as the environment sets it).
/// Throws ValueError for a transpose flag other than 'N'/'T', a leading dimension that is too
/// small, or a failure status from the library.
void gemm(char trans_a, char trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
/// The f64 overload (OpenBLAS cblas_dgemm); same contract.
void gemm(char trans_a, char trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* A, int64_t lda, const double* B, int64_t ldb, double beta, double* C,
          int64_t ldc);

/// The one lock every call into the serial OpenBLAS holds (cblas_dgemm here, the LAPACK routines
/// of core/linalg_kernels.cc, which call its BLAS inside). Debian's libopenblas0-serial is built
/// with USE_THREAD=0 and without USE_LOCKING, so its work-buffer allocator (blas_memory_alloc)
/// takes no lock: two calls at once from different threads (device threads, oneTBB tasks) can
/// share a buffer and silently return wrong numbers (OpenBLAS's USE_LOCKING option exists for
/// this, OpenMathLib/OpenBLAS#2126). So such calls take turns; oneDNN (f32) needs no lock.
std::mutex& serial_openblas_mutex();

}  // namespace minijax
