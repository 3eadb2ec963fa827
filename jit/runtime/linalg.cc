// minijax runtime linear algebra (jit/runtime/linalg.h): batches of matrices split over oneTBB
// tasks, one single-threaded LAPACK call (core/linalg_kernels.h) per matrix, workspaces from the arena.
#include "jit/runtime/linalg.h"

#include <algorithm>
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

// body(i, slot) for i in [0, batch): `slots` contiguous runs, one task each, the run's workspace
// at work + slot * slot_bytes (no two tasks share one).
template <class Body>
void for_each_matrix_in_slots(int64_t batch, int64_t slots, void* work, int64_t slot_bytes, Body&& body) {
  slots = std::max<int64_t>(1, std::min(slots, batch));
  char* base = static_cast<char*>(work);
  auto run = [&](int64_t c) {
    for (int64_t i = c * batch / slots; i < (c + 1) * batch / slots; ++i) body(i, base + c * slot_bytes);
  };
  if (slots == 1) return run(0);
  parallel_for_blocks(slots, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) run(c);
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

extern "C" void mj_rt_lu(int32_t dtype, const void* in, void* out, void* pivots, void* perm, int64_t batch,
                         int64_t m, int64_t n, void* work, int64_t slot_bytes, int64_t slots) {
  using namespace minijax;
  try {
    with_lapack_type(dtype, [&]<class T>() {
      const int64_t mat = m * n, k = std::min(m, n);
      if (batch == 0) return;
      const T* x = static_cast<const T*>(in);
      T* o = static_cast<T*>(out);
      for_each_matrix_in_slots(batch, slots, work, slot_bytes, [&](int64_t i, void* w) {
        linalg_kernels::lu<T>(x + i * mat, o + i * mat, m, n, static_cast<int32_t*>(pivots) + i * k,
                              static_cast<int32_t*>(perm) + i * m, w, slot_bytes);
      });
    });
  } catch (const std::exception& e) {
    detail::record_runtime_error(std::string("mj_rt_lu: ") + e.what());
  }
}

extern "C" void mj_rt_qr(int32_t dtype, const void* in, void* q, void* r, int64_t batch, int64_t m, int64_t n,
                         int32_t full_matrices, void* work, int64_t slot_bytes, int64_t slots) {
  using namespace minijax;
  try {
    with_lapack_type(dtype, [&]<class T>() {
      const int64_t k = std::min(m, n), qc = full_matrices ? m : k;
      if (batch == 0) return;
      const T* x = static_cast<const T*>(in);
      for_each_matrix_in_slots(batch, slots, work, slot_bytes, [&](int64_t i, void* w) {
        linalg_kernels::qr<T>(x + i * m * n, static_cast<T*>(q) + i * m * qc, static_cast<T*>(r) + i * qc * n,
                              m, n, full_matrices != 0, w, slot_bytes);
      });
    });
  } catch (const std::exception& e) {
    detail::record_runtime_error(std::string("mj_rt_qr: ") + e.what());
  }
}

extern "C" void mj_rt_eigh(int32_t dtype, const void* in, void* v, void* w, int64_t batch, int64_t n,
                           int32_t lower, void* work, int64_t slot_bytes, int64_t slots) {
  using namespace minijax;
  try {
    with_lapack_type(dtype, [&]<class T>() {
      if (batch == 0) return;
      const T* x = static_cast<const T*>(in);
      for_each_matrix_in_slots(batch, slots, work, slot_bytes, [&](int64_t i, void* wk) {
        linalg_kernels::eigh<T>(x + i * n * n, static_cast<T*>(v) + i * n * n, static_cast<T*>(w) + i * n, n,
                                lower != 0, wk, slot_bytes);
      });
    });
  } catch (const std::exception& e) {
    detail::record_runtime_error(std::string("mj_rt_eigh: ") + e.what());
  }
}

extern "C" void mj_rt_svd(int32_t dtype, const void* in, void* s, void* u, void* vt, int64_t batch, int64_t m,
                          int64_t n, int32_t flags, void* work, int64_t slot_bytes, int64_t slots) {
  using namespace minijax;
  try {
    with_lapack_type(dtype, [&]<class T>() {
      const bool full = flags & MJ_RT_SVD_FULL_MATRICES, uv = flags & MJ_RT_SVD_COMPUTE_UV;
      const int64_t k = std::min(m, n), uc = full ? m : k, vr = full ? n : k;
      if (batch == 0) return;
      const T* x = static_cast<const T*>(in);
      for_each_matrix_in_slots(batch, slots, work, slot_bytes, [&](int64_t i, void* w) {
        linalg_kernels::svd<T>(x + i * m * n, static_cast<T*>(s) + i * k,
                               uv ? static_cast<T*>(u) + i * m * uc : nullptr,
                               uv ? static_cast<T*>(vt) + i * vr * n : nullptr, m, n, full, uv, w,
                               slot_bytes);
      });
    });
  } catch (const std::exception& e) {
    detail::record_runtime_error(std::string("mj_rt_svd: ") + e.what());
  }
}
