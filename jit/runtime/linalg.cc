// minijax runtime linear algebra (jit/runtime/linalg.h): batches of matrices split over oneTBB
// tasks, one single-threaded LAPACK call (core/linalg_kernels.h) per matrix.
#include "jit/runtime/linalg.h"

#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "core/dtype.h"
#include "core/linalg_kernels.h"
#include "jit/runtime/abi.h"
#include "jit/runtime/parallel_for.h"

namespace minijax {
namespace {

// Runs f<T>() for the LAPACK element type of `dtype` (f32 or f64).
template <class F>
void with_lapack_type(int32_t dtype, F&& f) {
  switch (DType(dtype)) {
    case DType::f32: return f.template operator()<float>();
    case DType::f64: return f.template operator()<double>();
    default: throw std::invalid_argument(std::string("unsupported dtype ") + dtype_name(DType(dtype)));
  }
}

// body(i) for i in [0, batch): one task per matrix (grain 1), inline for a single one.
template <class Body>
void for_each_matrix(int64_t batch, Body&& body) {
  if (batch == 1) return body(0);
  parallel_for_blocks(batch, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) body(i);
  });
}

}  // namespace
}  // namespace minijax

extern "C" void mj_rt_cholesky(int32_t dtype, const void* in, void* out, int64_t batch, int64_t n) {
  using namespace minijax;
  try {
    with_lapack_type(dtype, [&]<class T>() {
      const int64_t mat = n * n;
      if (batch == 0 || mat == 0) return;
      T* o = static_cast<T*>(out);
      const T* x = static_cast<const T*>(in);
      for_each_matrix(batch, [&](int64_t i) {
        if (x != o) std::memcpy(o + i * mat, x + i * mat, size_t(mat) * sizeof(T));
        linalg_kernels::cholesky_lower(o + i * mat, n);
      });
    });
  } catch (const std::exception& e) {
    detail::record_runtime_error(std::string("mj_rt_cholesky: ") + e.what());
  }
}

extern "C" void mj_rt_triangular_solve(int32_t dtype, const void* a, const void* b, void* out, int64_t batch,
                                       int64_t rows, int64_t cols, int32_t flags) {
  using namespace minijax;
  try {
    with_lapack_type(dtype, [&]<class T>() {
      const int64_t mat = rows * cols, m = (flags & MJ_RT_TRSM_LEFT_SIDE) ? rows : cols;
      if (batch == 0 || mat == 0) return;
      const T* ad = static_cast<const T*>(a);
      const T* bd = static_cast<const T*>(b);
      T* o = static_cast<T*>(out);
      for_each_matrix(batch, [&](int64_t i) {
        if (bd != o) std::memcpy(o + i * mat, bd + i * mat, size_t(mat) * sizeof(T));
        linalg_kernels::triangular_solve(ad + i * m * m, o + i * mat, rows, cols,
                                         flags & MJ_RT_TRSM_LEFT_SIDE, flags & MJ_RT_TRSM_LOWER,
                                         flags & MJ_RT_TRSM_TRANSPOSE_A, flags & MJ_RT_TRSM_UNIT_DIAGONAL);
      });
    });
  } catch (const std::exception& e) {
    detail::record_runtime_error(std::string("mj_rt_triangular_solve: ") + e.what());
  }
}
