// minijax GEMM: row-major matrix products through oneDNN (f32) and OpenBLAS (f64).
// Owns argument checking and the calls into the two libraries.
#include "core/gemm.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <climits>
#include <mutex>
#include <string>

#include "core/errors.h"

namespace minijax {

namespace {

// Validates flags and leading dimensions; returns false when there is nothing to compute.
template <class T>
bool check_and_trivial(char ta, char tb, int64_t m, int64_t n, int64_t k, int64_t lda,
                       int64_t ldb, int64_t ldc, T beta, T* C) {
  auto flag_ok = [](char t) { return t == 'N' || t == 'T' || t == 'n' || t == 't'; };
  if (!flag_ok(ta) || !flag_ok(tb))
    throw ValueError(std::string("gemm: transpose flags must be 'N' or 'T', got '") + ta +
                     "' and '" + tb + "'");
  if (m < 0 || n < 0 || k < 0)
    throw ValueError("gemm: negative size m=" + std::to_string(m) + " n=" + std::to_string(n) +
                     " k=" + std::to_string(k));
  bool at = ta == 'T' || ta == 't', bt = tb == 'T' || tb == 't';
  int64_t need_a = std::max<int64_t>(1, at ? m : k), need_b = std::max<int64_t>(1, bt ? k : n);
  int64_t need_c = std::max<int64_t>(1, n);
  if (lda < need_a || ldb < need_b || ldc < need_c)
    throw ValueError("gemm: leading dimensions too small (lda=" + std::to_string(lda) +
                     " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc) + ")");
  if (m == 0 || n == 0) return false;
  if (k == 0) {  // op(A) @ op(B) is all zeros: C = beta * C
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) C[i * ldc + j] = beta == T(0) ? T(0) : beta * C[i * ldc + j];
    return false;
  }
  return true;
}

}  // namespace

std::mutex& serial_openblas_mutex() {
  static std::mutex m;
  return m;
}

void gemm(char trans_a, char trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (!check_and_trivial<float>(trans_a, trans_b, m, n, k, lda, ldb, ldc, beta, C)) return;
  dnnl_status_t st = dnnl_sgemm(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  if (st != dnnl_success)
    throw ValueError("gemm: dnnl_sgemm failed with status " + std::to_string(int(st)) + " (m=" +
                     std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) + ")");
}

void gemm(char trans_a, char trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* A, int64_t lda, const double* B, int64_t ldb, double beta, double* C,
          int64_t ldc) {
  if (!check_and_trivial<double>(trans_a, trans_b, m, n, k, lda, ldb, ldc, beta, C)) return;
  for (int64_t v : {m, n, k, lda, ldb, ldc})
    if (v > INT_MAX) throw ValueError("gemm: dimension " + std::to_string(v) + " exceeds the BLAS int range");
  auto ta = (trans_a == 'T' || trans_a == 't') ? CblasTrans : CblasNoTrans;
  auto tb = (trans_b == 'T' || trans_b == 't') ? CblasTrans : CblasNoTrans;
  // Debian's serial OpenBLAS (cmake/Dependencies.cmake) shares its work buffer between calls, so
  // calls from several device threads at once corrupt each other's results (seen as wrong f64
  // dots in the sharded conformance suite): they take turns (serial_openblas_mutex).
  std::lock_guard<std::mutex> turn(serial_openblas_mutex());
  cblas_dgemm(CblasRowMajor, ta, tb, blasint(m), blasint(n), blasint(k), alpha, A, blasint(lda), B,
              blasint(ldb), beta, C, blasint(ldc));
}

}  // namespace minijax
