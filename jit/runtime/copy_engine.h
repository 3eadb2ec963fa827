// minijax copy engines: one per device, on its own thread, moving bytes between memory kinds
// while the device computes, with an optional emulated host link (config().host_link_bytes_per_s).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "jit/runtime/event.h"

namespace minijax {

/// Which runtime entry point made a copy: mj_rt_copy (a synchronous copy), mj_rt_copy_start,
/// mj_rt_copy_slice_start (a slice of a stacked buffer) or its update form (a slice written into one).
enum class CopyOp { copy, copy_start, copy_slice_start, copy_update_start };

/// The operation's name in profiler traces ("copy", "copy_start", ...).
const char* copy_op_name(CopyOp op);

/// One copy: `count` chunks of `chunk_bytes` bytes, chunk k read at src + k·src_stride and
/// written at dst + k·dst_stride (strides in bytes; negative walks backwards, as a reversed
/// scan's slices of a stacked buffer; count 1 is a plain contiguous copy). Source and
/// destination must not overlap.
struct CopyDescriptor {
  const void* src = nullptr;
  void* dst = nullptr;
  int64_t chunk_bytes = 0;
  int64_t count = 1;
  int64_t src_stride = 0, dst_stride = 0;
  /// The memory kinds (a MemoryKind's value; -1: not given) and the operation, shown in
  /// profiler traces only.
  int32_t src_kind = -1, dst_kind = -1;
  CopyOp op = CopyOp::copy;
  /// chunk_bytes × count.
  int64_t bytes() const { return chunk_bytes * count; }
};

/// What one engine did since it was created: copies completed, bytes moved, seconds its thread
/// spent copying (memcpy) and seconds its copies spent on the emulated link beyond their memcpy
/// (each copy's completion time minus the end of its memcpy); and what the
/// device it serves waited for it: `device_waits` copy_dones (or synchronous copies) that found
/// their copy still running and the wall seconds they blocked (`device_wait_seconds`). A copy's
/// time is copy_seconds + link_wait_seconds; the device's stall is device_wait_seconds.
struct CopyEngineStats {
  int64_t copies = 0, bytes = 0;
  double copy_seconds = 0, link_wait_seconds = 0;
  int64_t device_waits = 0;
  double device_wait_seconds = 0;
};

/// A device's copy engine: a thread working through a FIFO of copies, as a DMA engine works
/// through its queue. A copy starts once the copies before it have started and its `after`
/// events have completed; its event completes when its bytes are in place. With
/// config().host_link_bytes_per_s = B > 0 (read per copy) the engine emulates a link that moves
/// one copy at a time: a copy of n bytes starting at t completes at max(t, the end of the
/// previous copy on the link) + n / B (or when its memcpy ends, if later). Its event completes as
/// of that time (Event::set_at: a waiter sleeps until then on a timed wait, no core used), so
/// overlap with compute can be measured on machines where device and host memory are the same
/// RAM, and the link's timing does not depend on when the engine's thread is scheduled.
/// While a profiler trace is active (jit/runtime/profiler.h) each copy is an event on the
/// engine's track ("copy engine N"): from when it starts on the link to when it completes, with
/// its bytes, chunks, kinds, memcpy time and time queued; and each wait_for that found its copy
/// running is an event on the waiting thread's track.
/// Thread-safe; never spins.
class CopyEngine {
 public:
  explicit CopyEngine(int device_id);
  /// Fails the copies still queued (ValueError "copy engine destroyed") and joins the thread.
  ~CopyEngine();
  CopyEngine(const CopyEngine&) = delete;
  CopyEngine& operator=(const CopyEngine&) = delete;

  /// Enqueues `d`; returns at once. The returned event completes when the copy is done; if one
  /// of `after` fails, the copy is skipped (nothing written) and the event fails with that
  /// error. `keep` is held until the copy completes (the buffers it reads and writes). Throws
  /// ValueError for a null pointer with bytes to copy, or a negative size or count.
  Event enqueue(const CopyDescriptor& d, std::vector<Event> after = {},
                std::vector<std::shared_ptr<const void>> keep = {});
  /// Waits until every copy enqueued so far has completed (successfully or not).
  void synchronize();
  CopyEngineStats stats() const;
  /// Waits for `copy` (an event this engine returned) on behalf of its device, counting the
  /// wait in stats() when the copy was still running. Rethrows the copy's error.
  void wait_for(const Event& copy);
  int device_id() const { return device_id_; }

 private:
  struct Impl;
  int device_id_;
  std::unique_ptr<Impl> impl_;
};

/// The copy engine of device `device_id` (created on first use, kept for the life of the
/// process). ValueError naming the id and the count for an id outside devices().
CopyEngine& copy_engine(int device_id);

}  // namespace minijax
