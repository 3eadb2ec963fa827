// minijax buffers: raw storage of one array on one device, tagged with its memory kind.
// Owns Buffer (bytes from the allocator, memory kind, ready event, donation flag), Init, ReadyEvent.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>

#include "core/allocator.h"
#include "core/aval.h"

namespace minijax {

/// Signals that a buffer's contents are complete (set by whoever writes it: an eager kernel, a
/// copy engine, an executor), or that they never will be (set_error: the computation writing
/// them failed). Copies of a ReadyEvent share one state. Waiting blocks on a condition variable.
class ReadyEvent {
 public:
  /// An event that is already set (what eager evaluation produces).
  static ReadyEvent already_set();
  /// A fresh, unset event.
  ReadyEvent();
  /// Set or failed (wait() returns or throws at once).
  bool is_ready() const { return s_->done.load(std::memory_order_acquire); }
  void set() const;
  /// Completes the event with `err` (the first completion wins): wait() rethrows it.
  void set_error(std::exception_ptr err) const;
  /// Blocks until set; rethrows the error of set_error.
  void wait() const;
  /// The error of set_error, null while pending or when set without one.
  std::exception_ptr error() const;

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<bool> done{false};
    std::exception_ptr error;
  };
  std::shared_ptr<State> s_;
};

/// Whether a new Buffer's bytes are zero-filled. `uninitialized` is for writers that provably
/// store every element before anything reads it (eager kernels' outputs); its contents are
/// undefined (possibly a recycled block's old bytes).
enum class Init { zeros, uninitialized };

/// Storage of one array on one device: `nbytes` bytes aligned to 64 (kBufferAlignment), in
/// `memory_kind`, obtained from the installed allocator (core/allocator.h) and returned to the
/// same allocator on destruction. Host memory kinds and the (virtual CPU) device memory are all
/// host RAM here; the kind is what the scheduler and the allocator's statistics reason about.
class Buffer {
 public:
  /// Allocates nbytes of the given kind on device `device_id` from allocator(), zero-filled
  /// unless init is Init::uninitialized. Throws what the allocator throws
  /// (ResourceExhaustedError past a configured memory limit).
  Buffer(size_t nbytes, MemoryKind kind, int device_id = 0, Init init = Init::zeros);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  MemoryKind memory_kind() const { return kind_; }
  int device_id() const { return device_id_; }
  /// Completes when the bytes are written (already set for eager values; an executor's output
  /// completes when its program has run on the device).
  const ReadyEvent& ready() const { return ready_; }
  /// Makes `e` the buffer's ready event (an executor does so before anyone else sees the buffer).
  void set_ready_event(ReadyEvent e) { ready_ = std::move(e); }
  /// True once the buffer was donated to a computation; its contents may then be overwritten.
  bool donated() const { return donated_.load(std::memory_order_acquire); }
  void mark_donated() { donated_.store(true, std::memory_order_release); }
  /// Marks the buffer donated and returns true, unless it already was (then false): of several
  /// calls donating one buffer at once, exactly one claims it.
  bool claim_donation() { return !donated_.exchange(true, std::memory_order_acq_rel); }
  /// Undoes claim_donation (a call that claimed the buffer failed before running).
  void release_donation() { donated_.store(false, std::memory_order_release); }
  /// Donation: a new Buffer that owns `from`'s bytes (same size, kind and device); `from` keeps
  /// no bytes and is marked donated, so every Array still holding it throws ValueError when read
  /// (JAX's deleted donated arrays). Used by the executor when an output reuses a donated input.
  static std::shared_ptr<Buffer> take(Buffer& from);

 private:
  Buffer() = default;
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Allocator* allocator_ = nullptr;
  MemoryKind kind_;
  int device_id_;
  ReadyEvent ready_ = ReadyEvent::already_set();
  std::atomic<bool> donated_{false};
};

}  // namespace minijax
