// minijax runtime allocator: a caching pool per memory space, installed when the library loads.
// Owns PoolAllocator (size classes, page-rounded large blocks, counters) and runtime_allocator().
#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/allocator.h"

namespace minijax {

/// The runtime's allocator: a caching pool per memory space (each device's memory, keyed by
/// device id; the process's host memory, one pool shared by all devices serving both
/// pinned_host and unpinned_host), so that repeated steps reuse blocks instead of faulting in
/// fresh pages.
///
/// Block sizes (size_class()), in bytes:
/// - Small requests (at most kLargeThreshold = 1 MiB): size classes. At most 512 bytes round up
///   to a multiple of 64 (at least 64); above, four classes per power of two (p < n <= 2p rounds
///   up to p + k*p/4), so at most 25% of a block is slack. Freed blocks go to their class's free
///   list (an intrusive LIFO list: no allocation when freeing).
/// - Large requests (above 1 MiB): rounded up to a multiple of kPageBytes (4 KiB), so the slack
///   is at most 4095 bytes, under 4095 / (1 MiB + 1) = 0.39% of the block; a measured peak of
///   arenas and activations of megabytes is then within 0.4% of the bytes asked for. Freed blocks
///   are cached by their exact rounded size and only a request of that same rounded size takes
///   them again, so a repeated step with the same sizes reuses its blocks exactly. The cache is
///   intrusive too (nothing is allocated when freeing): each distinct cached size is a group of
///   blocks linked through their first words, the groups linked through their heads; a request
///   walks the groups (at most max_cached_bytes / 1 MiB of them, 1024 by default).
///   Why 1 MiB: below it, classes bound the number of free lists (sizes vary widely among small
///   buffers, which share a class); above it, buffers are few per step (arenas, activations), so
///   exact sizes cost few groups while page rounding keeps slack under 0.4%.
///
/// Either way a freed block is cached unless the pool's cached bytes would exceed
/// `max_cached_bytes` (then the block goes back to the system). Blocks come from
/// std::aligned_alloc (64-byte aligned) and are never split or merged.
///
/// Counters (per space, under the space's mutex; no busy-waiting): bytes_in_use and its peak per
/// memory kind count the block size (size_class()) of every block handed out; bytes_reserved
/// counts the cached blocks; pool_bytes (and its peak) the bytes obtained from the system and
/// not returned, in use plus cached. Limits: a block that would take a space's bytes in use past
/// the configured limit (config().device_memory_bytes / host_memory_bytes, 0 = none) throws
/// ResourceExhaustedError and changes nothing; before taking fresh memory past the limit (in use
/// + cached), the space's cache is released first, so a limited space holds at most about its
/// limit. When the system refuses memory the pool releases its caches and retries once, then
/// throws ResourceExhaustedError. Under valgrind a recycled block is marked undefined again, so
/// memcheck still reports reads of elements nobody wrote.
class PoolAllocator final : public Allocator {
 public:
  /// Device ids must be below this (ValueError otherwise).
  static constexpr int kMaxDevices = 1024;
  /// Default cap on each pool's cached (free) bytes.
  static constexpr int64_t kDefaultMaxCachedBytes = int64_t(1) << 30;
  /// Requests of more bytes than this (1 MiB) are large: page-rounded and cached by exact size.
  static constexpr size_t kLargeThreshold = size_t(1) << 20;
  /// The granularity of large blocks, in bytes (a page).
  static constexpr size_t kPageBytes = 4096;

  explicit PoolAllocator(int64_t max_cached_bytes = kDefaultMaxCachedBytes);
  /// Frees the cached blocks. Blocks still in use must not be returned afterwards (the installed
  /// runtime allocator is never destroyed).
  ~PoolAllocator() override;

  void* allocate(size_t nbytes, MemoryKind kind, int device_id) override;
  void deallocate(void* p, size_t nbytes, MemoryKind kind, int device_id) noexcept override;
  MemoryStats stats(int device_id, MemoryKind kind) const override;
  void reset_peak(int device_id) override;
  /// Returns every pool's cached blocks to the system (bytes_reserved becomes 0).
  void release_cached() override;
  std::string name() const override { return "pool"; }

  /// The block size a request of nbytes gets and is counted at (bytes_in_use, its peak,
  /// pool_bytes), in bytes: for nbytes <= kLargeThreshold its size class (at least 64, at most
  /// 25% over), above it nbytes rounded up to a multiple of kPageBytes (less than 0.4% over).
  /// Never throws; for nbytes above 2^62 (which allocate() refuses) the result is meaningless.
  static size_t size_class(size_t nbytes);

 private:
  struct Pool;
  /// Small classes: 8 multiples of 64, then 4 per power of two, (512, 1 KiB] to (512 KiB, 1 MiB].
  static constexpr size_t kNumClasses = 8 + 4 * 11;
  Pool& pool(MemoryKind kind, int device_id) const;
  Pool* find_pool(MemoryKind kind, int device_id) const;

  int64_t max_cached_;
  mutable std::array<std::atomic<Pool*>, kMaxDevices> devices_{};
  std::unique_ptr<Pool> host_;
};

/// The PoolAllocator the runtime installs (install_allocator) from a static initializer of
/// jit/runtime/allocator.cc when libminijax is loaded, before main() runs; Buffers created by
/// other static initializers that ran earlier use core's counting allocator and are not counted
/// here. Never destroyed.
PoolAllocator& runtime_allocator();

}  // namespace minijax
