// minijax runtime ABI: the runtime functions compiled code calls (oneTBB parallel loops, GEMM through
// core/gemm.h, copies across memory kinds on the copy engine, one-device ragged_all_to_all; oneDNN's
// convolution and pooling are dnnl_ops.h's) and their symbol table (the profiler's kernel hooks
// included). Errors are recorded per thread, never thrown.
#include "jit/runtime/abi.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/config.h"
#include "core/dtype.h"
#include "core/gemm.h"
#include "jit/runtime/copy_engine.h"
#include "jit/runtime/dnnl_ops.h"
#include "jit/runtime/gemm.h"
#include "jit/runtime/host_callback.h"
#include "jit/runtime/linalg.h"
#include "jit/runtime/parallel_for.h"
#include "jit/runtime/profiler.h"
#include "jit/runtime/sort.h"
#include "jit/runtime/spmd_context.h"
#include "jit/runtime/trig_reduction.h"

namespace minijax {

namespace {
thread_local std::string runtime_error;

void record(const char* where, const std::exception& e) {
  if (runtime_error.empty()) runtime_error = std::string(where) + ": " + e.what();
}

template <class T>
void gemm_generic(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* A, int64_t lda, const T* B,
                  int64_t ldb, T* C, int64_t ldc) {
  // bf16: products accumulated in f32 per output element, rounded once; ints wrap mod 2^32.
  using Acc = std::conditional_t<std::is_same_v<T, bfloat16>, float,
                                 std::conditional_t<std::is_integral_v<T>, uint32_t, T>>;
  auto get = [](T v) -> Acc {
    if constexpr (std::is_same_v<T, bfloat16>) return float(v);
    else return Acc(v);
  };
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      Acc s = Acc(0);
      for (int64_t p = 0; p < k; ++p) {
        Acc a = get(ta ? A[p * lda + i] : A[i * lda + p]);
        Acc bv = get(tb ? B[j * ldb + p] : B[p * ldb + j]);
        s += a * bv;
      }
      if constexpr (std::is_same_v<T, bfloat16>) C[i * ldc + j] = bfloat16(s);
      else C[i * ldc + j] = T(s);
    }
}

// A GEMM event's args: the product's sizes, dtype, transposes, batch, flops and bytes touched.
std::string gemm_args(int32_t dtype, int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                      int64_t batch) {
  const int64_t item = int64_t(itemsize(DType(dtype)));
  profiler::detail::Args a;
  a.add("m", m).add("n", n).add("k", k).add("dtype", dtype_name(DType(dtype))).add("batch", batch);
  a.add("trans_a", trans_a != 0).add("trans_b", trans_b != 0).add("flops", 2 * m * n * k * batch);
  a.add("bytes", (m * k + k * n + m * n) * batch * item);
  return a.take();
}
}  // namespace

void detail::record_runtime_error(const std::string& msg) {
  if (runtime_error.empty()) runtime_error = msg;
}

std::string take_runtime_error() {
  std::string e;
  e.swap(runtime_error);
  return e;
}

const std::vector<RuntimeSymbol>& runtime_symbols() {
  static const std::vector<RuntimeSymbol> table = {
      {"mj_rt_parallel_for", reinterpret_cast<void*>(&mj_rt_parallel_for)},
      {"mj_rt_raise_flag", reinterpret_cast<void*>(&mj_rt_raise_flag)},
      {"mj_rt_gemm", reinterpret_cast<void*>(&mj_rt_gemm)},
      {"mj_rt_copy", reinterpret_cast<void*>(&mj_rt_copy)},
      {"mj_rt_copy_start", reinterpret_cast<void*>(&mj_rt_copy_start)},
      {"mj_rt_copy_slice_start", reinterpret_cast<void*>(&mj_rt_copy_slice_start)},
      {"mj_rt_copy_done", reinterpret_cast<void*>(&mj_rt_copy_done)},
      {"mj_rt_ragged_all_to_all_local", reinterpret_cast<void*>(&mj_rt_ragged_all_to_all_local)},
      {"mj_rt_collective", reinterpret_cast<void*>(&mj_rt_collective)},
      {"mj_rt_axis_index", reinterpret_cast<void*>(&mj_rt_axis_index)},
      {"mj_rt_host_callback", reinterpret_cast<void*>(&mj_rt_host_callback)},
      {"mj_rt_kernel_begin", reinterpret_cast<void*>(&mj_rt_kernel_begin)},
      {"mj_rt_kernel_end", reinterpret_cast<void*>(&mj_rt_kernel_end)},
      {"mj_rt_trig_reduce", reinterpret_cast<void*>(&mj_rt_trig_reduce)},
      {"mj_rt_sort", reinterpret_cast<void*>(&mj_rt_sort)},
      {"mj_rt_top_k", reinterpret_cast<void*>(&mj_rt_top_k)},
      {"mj_rt_cholesky", reinterpret_cast<void*>(&mj_rt_cholesky)},
      {"mj_rt_triangular_solve", reinterpret_cast<void*>(&mj_rt_triangular_solve)},
      {"mj_rt_lu", reinterpret_cast<void*>(&mj_rt_lu)},
      {"mj_rt_qr", reinterpret_cast<void*>(&mj_rt_qr)},
      {"mj_rt_eigh", reinterpret_cast<void*>(&mj_rt_eigh)},
      {"mj_rt_svd", reinterpret_cast<void*>(&mj_rt_svd)},
      {"mj_rt_dnnl", reinterpret_cast<void*>(&mj_rt_dnnl)},
      {"mj_rt_max_pool_needs_loop", reinterpret_cast<void*>(&mj_rt_max_pool_needs_loop)},
      {"mj_rt_dnnl_forward_ran_once", reinterpret_cast<void*>(&mj_rt_dnnl_forward_ran_once)},
  };
  return table;
}

}  // namespace minijax

extern "C" void mj_rt_parallel_for(mj_rt_kernel kernel, void** bufs, int64_t n, int64_t grain) {
  if (n <= grain) return kernel(bufs, 0, n);
  // Blocks of whole grains: every bound but n is a multiple of grain (kernels.cc's vector loops
  // rely on it to drop their scalar tails).
  minijax::parallel_for_blocks((n + grain - 1) / grain, 1, [&](int64_t lo, int64_t hi) {
    kernel(bufs, lo * grain, std::min(hi * grain, n));
  });
}

extern "C" void mj_rt_raise_flag(int32_t* flag) {
  std::atomic_ref<int32_t>(*flag).store(1, std::memory_order_relaxed);
}

extern "C" void mj_rt_gemm(int32_t dtype, int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                           const void* A, int64_t lda, int64_t stride_a, const void* B, int64_t ldb,
                           int64_t stride_b, void* C, int64_t ldc, int64_t stride_c, int64_t batch) {
  using namespace minijax;
  profiler::detail::Scope trace("gemm", "gemm");
  if (trace.active()) trace.set_args(gemm_args(dtype, trans_a, trans_b, m, n, k, batch));
  try {
    const char ta = trans_a ? 'T' : 'N', tb = trans_b ? 'T' : 'N';
    for (int64_t bi = 0; bi < batch; ++bi) {
      switch (DType(dtype)) {
        case DType::f32:
          runtime_gemm(ta, tb, m, n, k, static_cast<const float*>(A) + bi * stride_a, lda,
                       static_cast<const float*>(B) + bi * stride_b, ldb, static_cast<float*>(C) + bi * stride_c, ldc);
          break;
        case DType::f64:
          runtime_gemm(ta, tb, m, n, k, static_cast<const double*>(A) + bi * stride_a, lda,
                       static_cast<const double*>(B) + bi * stride_b, ldb, static_cast<double*>(C) + bi * stride_c, ldc);
          break;
        case DType::bf16:
          gemm_generic(trans_a, trans_b, m, n, k, static_cast<const bfloat16*>(A) + bi * stride_a, lda,
                       static_cast<const bfloat16*>(B) + bi * stride_b, ldb, static_cast<bfloat16*>(C) + bi * stride_c, ldc);
          break;
        case DType::i32:
          gemm_generic(trans_a, trans_b, m, n, k, static_cast<const int32_t*>(A) + bi * stride_a, lda,
                       static_cast<const int32_t*>(B) + bi * stride_b, ldb, static_cast<int32_t*>(C) + bi * stride_c, ldc);
          break;
        case DType::u32:
          gemm_generic(trans_a, trans_b, m, n, k, static_cast<const uint32_t*>(A) + bi * stride_a, lda,
                       static_cast<const uint32_t*>(B) + bi * stride_b, ldb, static_cast<uint32_t*>(C) + bi * stride_c, ldc);
          break;
        default:
          throw std::runtime_error(std::string("no GEMM for dtype ") + dtype_name(DType(dtype)));
      }
    }
  } catch (const std::exception& e) {
    record("mj_rt_gemm", e);
  }
}

// A copy between memory kinds runs on the device's copy engine (so config().host_link_bytes_per_s
// applies and the engine counts it); the program waits for it here, until the offload stages
// splits copies into copy_start / copy_done (docs/offload.md). Within one kind: a memcpy.
extern "C" void mj_rt_copy(void* dst, int32_t dst_kind, const void* src, int32_t src_kind, int64_t nbytes) {
  using namespace minijax;
  if (nbytes <= 0) return;
  if (dst_kind == src_kind) {
    std::memcpy(dst, src, size_t(nbytes));
    return;
  }
  try {
    CopyEngine& engine = copy_engine(current_device_id());
    CopyDescriptor d{src, dst, nbytes};
    d.src_kind = src_kind;
    d.dst_kind = dst_kind;
    d.op = CopyOp::copy;
    engine.wait_for(engine.enqueue(d));
  } catch (const std::exception& e) {
    record("mj_rt_copy", e);
  }
}

namespace {
// The copies a thread's program started and has not yet waited for, by destination address
// (copy_start and its copy_done run on the same thread: the device's compute thread).
thread_local std::unordered_map<const void*, minijax::Event> started_copies;

// Enqueues d on the calling device's engine, pending under `key` (or waited for at once when
// config().synchronous_copies is set).
void start_copy(const void* key, const minijax::CopyDescriptor& d) {
  using namespace minijax;
  CopyEngine& engine = copy_engine(current_device_id());
  Event ev = engine.enqueue(d);
  if (config().synchronous_copies) engine.wait_for(ev);
  else started_copies[key] = std::move(ev);
}
}  // namespace

extern "C" void mj_rt_copy_start(void* dst, int32_t dst_kind, const void* src, int32_t src_kind, int64_t nbytes) {
  using namespace minijax;
  if (nbytes <= 0) return;
  try {
    if (dst_kind == src_kind) {
      std::memcpy(dst, src, size_t(nbytes));
      return;
    }
    CopyDescriptor d{src, dst, nbytes};
    d.src_kind = src_kind;
    d.dst_kind = dst_kind;
    d.op = CopyOp::copy_start;
    start_copy(dst, d);
  } catch (const std::exception& e) {
    record("mj_rt_copy_start", e);
  }
}

extern "C" void mj_rt_copy_slice_start(void* dst, int32_t dst_kind, const void* src, int32_t src_kind,
                                       int64_t index, int64_t extent, int64_t count, int64_t chunk_bytes,
                                       int32_t update) {
  using namespace minijax;
  const int64_t bytes = count * chunk_bytes;
  if (bytes <= 0) return;
  if (index < 0 || index >= extent) {
    if (!update) std::memset(dst, 0, size_t(bytes));  // the prefetch past a loop's end
    return;
  }
  CopyDescriptor d;
  d.chunk_bytes = chunk_bytes;
  d.count = count;
  d.src_kind = src_kind;
  d.dst_kind = dst_kind;
  d.op = update ? CopyOp::copy_update_start : CopyOp::copy_slice_start;
  if (update) {
    d.src = src;
    d.dst = static_cast<char*>(dst) + index * chunk_bytes;
    d.src_stride = chunk_bytes;
    d.dst_stride = extent * chunk_bytes;
  } else {
    d.src = static_cast<const char*>(src) + index * chunk_bytes;
    d.dst = dst;
    d.src_stride = extent * chunk_bytes;
    d.dst_stride = chunk_bytes;
  }
  try {
    if (dst_kind == src_kind) {
      for (int64_t c = 0; c < count; ++c)
        std::memcpy(static_cast<char*>(d.dst) + c * d.dst_stride, static_cast<const char*>(d.src) + c * d.src_stride,
                    size_t(chunk_bytes));
      return;
    }
    start_copy(dst, d);
  } catch (const std::exception& e) {
    record(update ? "mj_rt_copy_update_start" : "mj_rt_copy_slice_start", e);
  }
}

extern "C" void mj_rt_copy_done(void* dst) {
  using namespace minijax;
  auto it = started_copies.find(dst);
  if (it == started_copies.end()) return;  // a literal, an empty or a same-kind copy: done at the start
  minijax::Event ev = std::move(it->second);
  started_copies.erase(it);
  try {
    copy_engine(current_device_id()).wait_for(ev);
  } catch (const std::exception& e) {
    record("mj_rt_copy_done", e);
  }
}

extern "C" void mj_rt_ragged_all_to_all_local(void* out, int64_t out_rows, const void* in, int64_t in_rows,
                                              int64_t row_bytes, const int32_t* in_off, const int32_t* send,
                                              const int32_t* out_off, const int32_t* recv) {
  using namespace minijax;
  try {
    const int64_t rows = send[0], src = in_off[0], dst = out_off[0], expect = recv[0];
    if (rows != expect)
      throw std::runtime_error("rank 0 sends " + std::to_string(rows) + " rows to rank 0, whose recv_sizes expects " +
                               std::to_string(expect));
    if (rows < 0 || src < 0 || dst < 0 || src + rows > in_rows || dst + rows > out_rows)
      throw std::runtime_error("rank 0 -> rank 0: rows [" + std::to_string(src) + ", " + std::to_string(src + rows) +
                               ") of an input of " + std::to_string(in_rows) + " rows to rows [" + std::to_string(dst) +
                               ", " + std::to_string(dst + rows) + ") of an output of " + std::to_string(out_rows) +
                               " rows fall outside the buffers");
    if (rows > 0 && row_bytes > 0)
      std::memmove(static_cast<char*>(out) + dst * row_bytes, static_cast<const char*>(in) + src * row_bytes,
                   size_t(rows * row_bytes));
  } catch (const std::exception& e) {
    record("mj_rt_ragged_all_to_all_local", e);
  }
}
