// minijax allocator interface: where every Buffer's bytes come from, and what they count.
// Owns Allocator, MemoryStats, install_allocator()/allocator(), core's fallback counting allocator.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/aval.h"

namespace minijax {

/// Alignment in bytes of every block an Allocator hands out (a cache line; also enough for the
/// widest vector loads, AVX-512).
inline constexpr size_t kBufferAlignment = 64;

/// What an allocator counted for one memory space, with JAX's `memory_stats()` keys. All in bytes
/// except num_allocs. Counted by the allocator itself, independently of any buffer planner.
struct MemoryStats {
  /// Bytes of the blocks handed out and not yet returned (each block counted at the size the
  /// allocator gave it, i.e. the request rounded up by the allocator's rule; see
  /// PoolAllocator::size_class).
  int64_t bytes_in_use = 0;
  /// The largest bytes_in_use since the start or the last reset_peak().
  int64_t peak_bytes_in_use = 0;
  /// The limit allocations are checked against: config().device_memory_bytes for the device
  /// kind, config().host_memory_bytes for host kinds; when that is 0 (unlimited), the machine's
  /// physical memory.
  int64_t bytes_limit = 0;
  /// Bytes held by the allocator's pool that are not in use (cached free blocks); 0 for an
  /// allocator without a pool.
  int64_t bytes_reserved = 0;
  /// Number of allocations made since the start (never reset).
  int64_t num_allocs = 0;
  /// JAX's `pool_bytes`: bytes the allocator's pool for this memory space has obtained from the
  /// system and not returned: the bytes in use of every kind the space serves plus
  /// bytes_reserved. Per space, not per kind: both host kinds report the process's one host pool
  /// (pinned_host + unpinned_host in use + cached); the device kind reports that device's pool.
  /// 0 for an allocator without a pool.
  int64_t pool_bytes = 0;
  /// JAX's `peak_pool_bytes`: the largest pool_bytes since the start or the last reset_peak()
  /// of the space (reset_peak makes it the current pool_bytes). 0 for an allocator without a pool.
  int64_t peak_pool_bytes = 0;
};

/// The source of every Buffer's memory (core/buffer.h), eager or compiled.
///
/// Contract: allocate(nbytes, kind, device_id) returns a block of at least max(nbytes, 1) bytes
/// aligned to kBufferAlignment (64) bytes, with undefined contents (never zero-filled: a Buffer
/// zero-fills when asked to), or throws (ResourceExhaustedError when a configured limit or the
/// system's memory is exhausted, ValueError for a bad device id). deallocate gets back the same
/// pointer with the same nbytes, kind and device_id. Host kinds (pinned_host, unpinned_host) are
/// one space per process shared by all devices: their device_id only says who asked. All members
/// are thread-safe.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes, MemoryKind kind, int device_id) = 0;
  virtual void deallocate(void* p, size_t nbytes, MemoryKind kind, int device_id) noexcept = 0;
  /// The counters of memory kind `kind` of device `device_id` (host kinds: the process's).
  virtual MemoryStats stats(int device_id, MemoryKind kind) const = 0;
  /// Sets the peak of device `device_id`'s device memory and the peaks of the process's host
  /// kinds to their current bytes in use (and those spaces' peak_pool_bytes to their pool_bytes).
  virtual void reset_peak(int device_id) = 0;
  /// Returns cached, unused blocks to the system (no-op for allocators without a cache).
  virtual void release_cached() {}
  /// A short name for messages ("counting", "pool").
  virtual std::string name() const = 0;
};

/// Makes `a` the process-wide allocator that every Buffer created from now on uses, and returns
/// the previous one. Installed allocators are kept alive until the process exits (Buffers that
/// were allocated from one return their memory to it, whatever is installed later), so an
/// allocator may be replaced at any time. Thread-safe. ValueError if `a` is null. The runtime
/// (jit/runtime/allocator.h) installs its pool allocator when the library is loaded.
std::shared_ptr<Allocator> install_allocator(std::shared_ptr<Allocator> a);

/// The installed allocator; core's counting allocator (make_counting_allocator) until one is
/// installed. Thread-safe; the reference stays valid for the life of the process.
Allocator& allocator();

/// Core's fallback allocator: std::aligned_alloc/std::free per block with exact counters (blocks
/// counted at nbytes rounded up to a multiple of 64, at least 64) and the configured limits; it
/// caches nothing (bytes_reserved is 0).
std::shared_ptr<Allocator> make_counting_allocator();

// ---- helpers shared by allocator implementations -----------------------------------------------

/// Physical memory of the machine in bytes (sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE)).
int64_t physical_memory_bytes();

/// The configured limit of a memory kind in bytes: config().device_memory_bytes for device,
/// config().host_memory_bytes for the host kinds; 0 = unlimited.
int64_t configured_memory_limit(MemoryKind kind);

/// What MemoryStats::bytes_limit reports: configured_memory_limit(kind), or
/// physical_memory_bytes() when that is 0.
int64_t reported_memory_limit(MemoryKind kind);

/// Counters of one memory space: one device's memory, or the process's host memory (both host
/// kinds). Not synchronized: the owning allocator locks around it.
struct SpaceCounters {
  int64_t in_use[3] = {0, 0, 0};  ///< indexed by MemoryKind
  int64_t peak[3] = {0, 0, 0};
  int64_t num_allocs[3] = {0, 0, 0};
  /// Bytes in use over all kinds of the space (what a limit is checked against).
  int64_t total_in_use() const { return in_use[0] + in_use[1] + in_use[2]; }
  /// Throws ResourceExhaustedError if a block of `bytes` (for a request of `requested`) would
  /// take the space past configured_memory_limit(kind). Changes nothing.
  void check_limit(MemoryKind kind, int device_id, size_t requested, int64_t bytes) const;
  void on_alloc(MemoryKind kind, int64_t bytes);
  void on_free(MemoryKind kind, int64_t bytes);
  /// Peaks of all kinds := their bytes in use.
  void reset_peaks();
};

/// Throws ResourceExhaustedError naming the kind, the device, the requested and rounded bytes,
/// the bytes in use and the limit (`why` completes the sentence, e.g. "exceeds the limit").
[[noreturn]] void throw_resource_exhausted(MemoryKind kind, int device_id, size_t requested,
                                           int64_t bytes, int64_t in_use, int64_t limit,
                                           const std::string& why);

}  // namespace minijax
