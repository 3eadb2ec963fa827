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
// LU factorisation with partial pivoting, P A = L U; ipiv 1-based; info > 0: U(info, info) is
// exactly zero (the factors are still complete).
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);

// QR factorisation: R on and above the diagonal, Householder reflectors below it and in tau.
// lwork = -1: the optimal workspace size is returned in work[0].
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork,
             int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
// Forms the m x n matrix Q with orthonormal columns from k reflectors (?geqrf_'s).
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau,
             float* work, const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
             double* work, const int* lwork, int* info);

// Symmetric eigendecomposition, divide and conquer: eigenvalues ascending in w, eigenvectors
// (jobz 'V') overwriting a as columns; info > 0: no convergence.
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w,
             float* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t jobz_len,
             size_t uplo_len);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
             double* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t jobz_len,
             size_t uplo_len);

// Singular value decomposition, divide and conquer: A = U diag(s) VT, s descending; jobz 'A'
// (full U and VT), 'S' (the first min(m, n) columns / rows) or 'N' (s only); a is destroyed;
// iwork of 8 min(m, n); info > 0: no convergence.
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u,
             const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info,
             size_t jobz_len);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork,
             int* info, size_t jobz_len);
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

/// getrf<float> is sgetrf_, getrf<double> dgetrf_.
template <class T>
inline void getrf(int m, int n, T* a, int lda, int* ipiv, int* info) {
  if constexpr (sizeof(T) == 4) sgetrf_(&m, &n, a, &lda, ipiv, info);
  else dgetrf_(&m, &n, a, &lda, ipiv, info);
}

/// geqrf<float> is sgeqrf_, geqrf<double> dgeqrf_.
template <class T>
inline void geqrf(int m, int n, T* a, int lda, T* tau, T* work, int lwork, int* info) {
  if constexpr (sizeof(T) == 4) sgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
  else dgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}

/// orgqr<float> is sorgqr_, orgqr<double> dorgqr_.
template <class T>
inline void orgqr(int m, int n, int k, T* a, int lda, const T* tau, T* work, int lwork, int* info) {
  if constexpr (sizeof(T) == 4) sorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
  else dorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}

/// syevd<float> is ssyevd_, syevd<double> dsyevd_.
template <class T>
inline void syevd(char jobz, char uplo, int n, T* a, int lda, T* w, T* work, int lwork, int* iwork,
                  int liwork, int* info) {
  if constexpr (sizeof(T) == 4)
    ssyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1);
  else dsyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1);
}

/// gesdd<float> is sgesdd_, gesdd<double> dgesdd_.
template <class T>
inline void gesdd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt, T* work,
                  int lwork, int* iwork, int* info) {
  if constexpr (sizeof(T) == 4)
    sgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
  else dgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}

}  // namespace minijax::lapack
