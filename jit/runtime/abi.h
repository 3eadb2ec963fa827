// minijax runtime ABI: the C functions compiled code calls (threads, GEMM, copies), and the table
// of their addresses the ORC wrapper defines in every executable's JITDylib.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minijax {

/// An address the compiled code may call by name.
struct RuntimeSymbol {
  std::string name;
  void* address = nullptr;
};

/// Every runtime function compiled code may call (names as in the extern "C" block below).
const std::vector<RuntimeSymbol>& runtime_symbols();

/// The error a runtime function called from compiled code recorded on this thread (runtime
/// functions never throw through compiled frames); empty when none. take_runtime_error clears it.
std::string take_runtime_error();

namespace detail {
/// Records `msg` as this thread's runtime error (take_runtime_error), unless one is recorded.
void record_runtime_error(const std::string& msg);
}  // namespace detail

}  // namespace minijax

extern "C" {
/// A kernel's type: computes outer indices [begin, end) with the buffer addresses in bufs.
typedef void (*mj_rt_kernel)(void** bufs, int64_t begin, int64_t end);
/// Runs kernel over [0, n) in chunks [i grain, min((i + 1) grain, n)) of outer indices on the oneTBB
/// pool (the calling thread takes part). Chunks are fixed by n and grain, not by the thread count,
/// and each outer index is computed by one chunk, so results do not depend on scheduling; every
/// chunk bound but n is a multiple of grain.
void mj_rt_parallel_for(mj_rt_kernel kernel, void** bufs, int64_t n, int64_t grain);
/// Sets *flag to 1 (an atomic store: chunks of one kernel on several threads may raise the same
/// flag). A kernel watching an output for NaN or -inf calls it when it stored one.
void mj_rt_raise_flag(int32_t* flag);
/// Batched row-major GEMM: for b in [0, batch): C_b = op(A_b) op(B_b), op(X) = X or X^T
/// (trans_* = 0 or 1), A_b = A + b * stride_a elements (likewise B, C); op(A) is [m, k], op(B)
/// is [k, n], C is [m, n] with row strides lda, ldb, ldc (elements). `dtype` is a minijax DType
/// (f32: oneDNN's dnnl_sgemm; f64: OpenBLAS's cblas_dgemm; bf16: f32 products rounded to bf16;
/// i32/u32: wrapping integer products).
void mj_rt_gemm(int32_t dtype, int32_t trans_a, int32_t trans_b, int64_t m, int64_t n, int64_t k,
                const void* A, int64_t lda, int64_t stride_a, const void* B, int64_t ldb, int64_t stride_b,
                void* C, int64_t ldc, int64_t stride_c, int64_t batch);
/// Copies `nbytes` bytes from `src` (memory kind `src_kind`, a minijax MemoryKind: 0 device,
/// 1 pinned_host, 2 unpinned_host) to `dst` (kind `dst_kind`): a device_put (or a
/// sharding_constraint) across memory kinds, left synchronous (split_copies splits the
/// device_puts it sees): the copy runs on the calling device's copy engine (emulated link
/// included) and this call waits for it; within one kind, a memcpy. The buffers must not
/// overlap. nbytes <= 0: nothing.
void mj_rt_copy(void* dst, int32_t dst_kind, const void* src, int32_t src_kind, int64_t nbytes);
/// copy_start: enqueues the copy of nbytes from src (kind src_kind) to dst (kind dst_kind) on the
/// calling device's copy engine and returns (with config().synchronous_copies: after it is done);
/// within one kind, a memcpy at once.
void mj_rt_copy_start(void* dst, int32_t dst_kind, const void* src, int32_t src_kind, int64_t nbytes);
/// copy_slice_start (update = 0) / copy_update_start (update = 1): enqueues the copy of index
/// `index` of a stacked buffer along one axis, laid out as `count` × `extent` × `chunk_bytes`
/// bytes (the dims before the axis, the axis, the dims after it, row-major): with update = 0 from
/// the stacked `src` into `dst` (count × chunk_bytes), with update = 1 from `src` (count ×
/// chunk_bytes) into the stacked `dst` — one strided copy when count > 1. The copy is pending
/// under `dst` until mj_rt_copy_done(dst). An index outside [0, extent) copies nothing (update
/// = 0: dst is zero-filled). As mj_rt_copy_start otherwise.
void mj_rt_copy_slice_start(void* dst, int32_t dst_kind, const void* src, int32_t src_kind, int64_t index,
                            int64_t extent, int64_t count, int64_t chunk_bytes, int32_t update);
/// copy_done: waits for the copy the calling thread started into dst (a no-op when none is
/// pending), counting the wait in the engine's stats; a failed copy is recorded as the
/// thread's runtime error.
void mj_rt_copy_done(void* dst);
/// ragged_all_to_all on a group of one device (XLA RaggedAllToAll with axis_size 1; the SPMD
/// executor's rule in jit/reference/reference_executor.cc): `out` (out_rows rows of row_bytes
/// bytes) already holds the `output` operand; rows [in_off[0], in_off[0] + send[0]) of `in`
/// (in_rows rows) are copied to rows starting at out_off[0]. Records a ValueError-style message
/// (take_runtime_error) and copies nothing when recv[0] != send[0] or the rows fall outside a
/// buffer. The index arrays are i32[1].
void mj_rt_ragged_all_to_all_local(void* out, int64_t out_rows, const void* in, int64_t in_rows, int64_t row_bytes,
                                   const int32_t* in_off, const int32_t* send, const int32_t* out_off,
                                   const int32_t* recv);
}
