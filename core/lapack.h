// minijax's declarations of the Fortran LAPACK and BLAS routines it calls, from the serial OpenBLAS
// it links (which exports them; there is no LAPACKE): the eager linalg primitives and the runtime.
//
// Fortran's calling convention: every argument by pointer, matrices column-major with a leading
// dimension, and one hidden `size_t` length per character argument, after all the others
// (gfortran >= 8). minijax's arrays are row-major: a row-major m x n matrix is its n x m transpose
// in column-major order, and each caller says how it maps its problem onto that (core/linalg_kernels.h).
// No routine here may be reached with arguments LAPACK's own checks reject (its `xerbla` would
// report them): core/linalg_kernels.cc, the only caller, checks sizes first.
#pragma once
#include <cstddef>

extern "C" {
// Cholesky factorisation: A = U^T U ('U') or L L^T ('L'); info > 0: the leading minor of that
// order is not positive definite.
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t uplo_len);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t uplo_len);

// Triangular solve with several right-hand sides: op(A) X = alpha B ('L') or X op(A) = alpha B
// ('R'), X overwriting B (m x n). Never fails: a zero on A's diagonal divides by zero.
void strsm_(const char* side, const char* uplo, const char* transa, const char* diag, const int* m,
            const int* n, const float* alpha, const float* a, const int* lda, float* b, const int* ldb,
            size_t side_len, size_t uplo_len, size_t transa_len, size_t diag_len);
void dtrsm_(const char* side, const char* uplo, const char* transa, const char* diag, const int* m,
            const int* n, const double* alpha, const double* a, const int* lda, double* b, const int* ldb,
            size_t side_len, size_t uplo_len, size_t transa_len, size_t diag_len);
}

namespace minijax::lapack {

/// The routine of the element type: potrf<float> is spotrf_, potrf<double> dpotrf_.
template <class T>
inline void potrf(char uplo, int n, T* a, int lda, int* info) {
  if constexpr (sizeof(T) == 4) spotrf_(&uplo, &n, a, &lda, info, 1);
  else dpotrf_(&uplo, &n, a, &lda, info, 1);
}

/// trsm<float> is strsm_, trsm<double> dtrsm_ (alpha = 1).
template <class T>
inline void trsm(char side, char uplo, char transa, char diag, int m, int n, const T* a, int lda, T* b,
                 int ldb) {
  const T one = 1;
  if constexpr (sizeof(T) == 4)
    strsm_(&side, &uplo, &transa, &diag, &m, &n, &one, a, &lda, b, &ldb, 1, 1, 1, 1);
  else dtrsm_(&side, &uplo, &transa, &diag, &m, &n, &one, a, &lda, b, &ldb, 1, 1, 1, 1);
}

}  // namespace minijax::lapack
