// minijax runtime GEMM: row or column blocks of C as oneTBB tasks, each one single-threaded call of
// core/gemm.h (oneDNN's dnnl_sgemm, OpenBLAS's cblas_dgemm) with OpenMP limited to the caller.
#include "jit/runtime/gemm.h"

#include <algorithm>
#include <vector>

// The two calls of the OpenMP API used here, as omp.h declares them (libgomp, which the library
// links, defines them). Declared rather than included: omp.h is GCC's, and clang finds none
// without LLVM's libomp headers, so the clang-19 sanitizer and fuzz builds could not compile it.
extern "C" {
int omp_get_max_threads(void);
void omp_set_num_threads(int);
}

#include "core/gemm.h"
#include "jit/runtime/parallel_for.h"

namespace minijax {

namespace {

// Products below this many multiply-adds run as one call (a task costs a few microseconds).
constexpr int64_t kSplitFlops = int64_t(1) << 20;
// Rows (or columns) per block at least, and at most this many blocks: each block repacks the
// operand it shares, and for [128,512]x[512,512] 4 column blocks ran NN at 1.19x and NT at 1.01x of
// the library's own threaded NN, 8 blocks at 1.03x and 0.70x (bench/README.md, "dot_general").
// The split depends only on m and n, never on the threads available: results are reproducible.
constexpr int64_t kMinBlock = 128;
constexpr int64_t kMaxBlocks = 4;

// One library call with OpenMP's team limited to this thread (restored afterwards): the GEMM
// library would otherwise start its own threads, which spin while idle.
template <class T>
void single_threaded(char ta, char tb, int64_t m, int64_t n, int64_t k, const T* A, int64_t lda, const T* B,
                     int64_t ldb, T* C, int64_t ldc) {
  struct OneThread {  // restores the team size also when gemm throws
    int prev = omp_get_max_threads();
    OneThread() { if (prev != 1) omp_set_num_threads(1); }
    ~OneThread() { if (prev != 1) omp_set_num_threads(prev); }
  } one_thread;
  gemm(ta, tb, m, n, k, T(1), A, lda, B, ldb, T(0), C, ldc);
}

template <class T>
void split_gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const T* A, int64_t lda, const T* B,
                int64_t ldb, T* C, int64_t ldc) {
  if (m * n * k < kSplitFlops) return single_threaded(ta, tb, m, n, k, A, lda, B, ldb, C, ldc);
  // Blocks along the larger of m and n: each block reads all of the other operand, which the
  // library packs again per call, so splitting the larger side repacks the smaller operand.
  // Measured for [128,512]x[512,512]: column blocks ran NT at 1.01x of the library's threaded NN,
  // row blocks at 0.78x.
  const bool by_rows = m >= n;
  const int64_t extent = by_rows ? m : n;
  const int64_t blocks = std::clamp<int64_t>(extent / kMinBlock, 1, kMaxBlocks);
  const int64_t step = (extent + blocks - 1) / blocks;
  parallel_for_blocks(blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t blk = first; blk < last; ++blk) {
      const int64_t lo = blk * step, hi = std::min(extent, lo + step);
      if (lo >= hi) continue;
      if (by_rows) {  // rows lo..hi of op(A) and of C
        const T* a = ta == 'N' ? A + lo * lda : A + lo;
        single_threaded(ta, tb, hi - lo, n, k, a, lda, B, ldb, C + lo * ldc, ldc);
      } else {  // columns lo..hi of op(B) and of C
        const T* b = tb == 'N' ? B + lo : B + lo * ldb;
        single_threaded(ta, tb, m, hi - lo, k, A, lda, b, ldb, C + lo, ldc);
      }
    }
  });
}

}  // namespace

void runtime_gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const float* A, int64_t lda, const float* B,
                  int64_t ldb, float* C, int64_t ldc) {
  split_gemm(ta, tb, m, n, k, A, lda, B, ldb, C, ldc);
}

void runtime_gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const double* A, int64_t lda, const double* B,
                  int64_t ldb, double* C, int64_t ldc) {
  split_gemm(ta, tb, m, n, k, A, lda, B, ldb, C, ldc);
}

void initialize_gemm_libraries() {
  static const bool done = [] {
    // Each transpose combination at the shapes whose paths differ in oneDNN (matrix-vector with m
    // or n of 1, a small product, one of a few register blocks) for f32, and OpenBLAS's f64.
    std::vector<float> af(64 * 64, 1.f), bf(64 * 64, 1.f), cf(64 * 64);
    std::vector<double> ad(64 * 64, 1.0), bd(64 * 64, 1.0), cd(64 * 64);
    const int64_t shapes[][3] = {{1, 8, 8}, {8, 1, 8}, {2, 2, 2}, {64, 64, 64}};
    for (char ta : {'N', 'T'})
      for (char tb : {'N', 'T'})
        for (const auto& s : shapes) {
          const int64_t m = s[0], n = s[1], k = s[2];
          const int64_t lda = ta == 'N' ? k : m, ldb = tb == 'N' ? n : k;
          single_threaded<float>(ta, tb, m, n, k, af.data(), lda, bf.data(), ldb, cf.data(), n);
          single_threaded<double>(ta, tb, m, n, k, ad.data(), lda, bd.data(), ldb, cd.data(), n);
        }
    return true;
  }();
  (void)done;
}

}  // namespace minijax
