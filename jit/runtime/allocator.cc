// minijax runtime allocator: caching pools per memory space and their installation at load time.
// Owns the block sizes, the intrusive caches (small classes, large groups), counters and installer.
#include "jit/runtime/allocator.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>

#include "core/errors.h"

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define MINIJAX_MARK_UNDEFINED(p, n) VALGRIND_MAKE_MEM_UNDEFINED(p, n)
#endif
#endif
#ifndef MINIJAX_MARK_UNDEFINED
#define MINIJAX_MARK_UNDEFINED(p, n) ((void)(p), (void)(n))
#endif

namespace minijax {

namespace {

/// Requests above this (4 EiB) fail at once (no block size can hold them without overflow).
constexpr size_t kMaxRequest = size_t(1) << 62;

size_t size_of_index(size_t i) {
  if (i < 8) return (i + 1) * 64;
  const size_t e = 9 + (i - 8) / 4, q = (i - 8) % 4 + 1;
  const size_t p = size_t(1) << e;
  return p + q * (p / 4);
}

/// The small class of a request of at most PoolAllocator::kLargeThreshold bytes.
size_t class_index(size_t n) {
  if (n <= 512) return n <= 64 ? 0 : (n + 63) / 64 - 1;
  const size_t p = std::bit_floor(n - 1);  // p < n <= 2p, 512 <= p < 1 MiB
  const size_t e = size_t(std::countr_zero(p)), step = p / 4;
  const size_t q = (n - p + step - 1) / step;  // 1..4
  return 8 + (e - 9) * 4 + (q - 1);
}

/// Where a request of n bytes lives: a small class, or a large block of a page multiple.
struct BlockSize {
  bool large;
  size_t idx;    ///< the small class (0 for large blocks)
  size_t bytes;  ///< the block's size, what it is counted at
};

BlockSize block_size(size_t n) {
  if (n > PoolAllocator::kLargeThreshold) {
    const size_t page = PoolAllocator::kPageBytes;
    return {true, 0, (n + page - 1) / page * page};
  }
  const size_t idx = class_index(n);
  return {false, idx, size_of_index(idx)};
}

/// The header a cached large block carries in its first bytes (blocks are at least 1 MiB).
/// Blocks of one size form a group linked by next_same; groups are linked by their heads'
/// next_group (only a group's head has a meaningful next_group).
struct LargeBlock {
  LargeBlock* next_same;
  LargeBlock* next_group;
  size_t bytes;
};

}  // namespace

/// One memory space's pool: small free lists by size class (each block's first word links to
/// the next), the large blocks cached by exact size, the space's counters, and the bytes
/// obtained from the system, under one mutex.
struct PoolAllocator::Pool {
  mutable std::mutex mu;
  std::array<void*, kNumClasses> free{};
  LargeBlock* large = nullptr;  ///< the first group of cached large blocks
  int64_t cached = 0;           ///< bytes on the free lists and in the large groups
  int64_t system = 0;       ///< bytes obtained from the system and not returned (in use + cached)
  int64_t peak_system = 0;  ///< the largest `system` since the start or the last reset_peak
  SpaceCounters counters;

  /// Returns the cached blocks to the system. Caller holds mu.
  void release_locked() {
    for (size_t i = 0; i < kNumClasses; ++i) {
      while (void* b = free[i]) {
        free[i] = *static_cast<void**>(b);
        std::free(b);
        cached -= int64_t(size_of_index(i));
        system -= int64_t(size_of_index(i));
      }
    }
    while (LargeBlock* g = large) {
      large = g->next_group;
      while (LargeBlock* b = g) {
        g = b->next_same;
        cached -= int64_t(b->bytes);
        system -= int64_t(b->bytes);
        std::free(b);
      }
    }
  }

  /// A cached block of class `idx` (small) or of exactly `bytes` (large), taken off its list;
  /// nullptr when none is cached. Caller holds mu.
  void* take_locked(bool is_large, size_t idx, size_t bytes) {
    void* b = nullptr;
    if (!is_large) {
      b = free[idx];
      if (b) free[idx] = *static_cast<void**>(b);
    } else {
      LargeBlock** link = &large;
      while (*link && (*link)->bytes != bytes) link = &(*link)->next_group;
      LargeBlock* h = *link;
      if (h && h->next_same) {  // the next block of this size heads the group now
        h->next_same->next_group = h->next_group;
        *link = h->next_same;
      } else if (h) {
        *link = h->next_group;
      }
      b = h;
    }
    if (b) cached -= int64_t(bytes);
    return b;
  }

  /// Caches block `b` of class `idx` (small) or of `bytes` (large); allocates nothing. Caller
  /// holds mu.
  void put_locked(void* b, bool is_large, size_t idx, size_t bytes) {
    if (!is_large) {
      *static_cast<void**>(b) = free[idx];
      free[idx] = b;
    } else {
      LargeBlock** link = &large;
      while (*link && (*link)->bytes != bytes) link = &(*link)->next_group;
      // b becomes its group's head (LIFO); a new size's group goes first.
      if (LargeBlock* h = *link)
        *link = new (b) LargeBlock{h, h->next_group, bytes};
      else
        large = new (b) LargeBlock{nullptr, large, bytes};
    }
    cached += int64_t(bytes);
  }
};
PoolAllocator::PoolAllocator(int64_t max_cached_bytes)
    : max_cached_(max_cached_bytes), host_(std::make_unique<Pool>()) {}

PoolAllocator::~PoolAllocator() {
  for (auto& slot : devices_) {
    Pool* p = slot.load(std::memory_order_acquire);
    if (!p) continue;
    {
      std::lock_guard<std::mutex> g(p->mu);
      p->release_locked();
    }
    delete p;
  }
  std::lock_guard<std::mutex> g(host_->mu);
  host_->release_locked();
}

PoolAllocator::Pool* PoolAllocator::find_pool(MemoryKind kind, int device_id) const {
  if (kind != MemoryKind::device) return host_.get();
  if (device_id < 0 || device_id >= kMaxDevices) return nullptr;
  return devices_[size_t(device_id)].load(std::memory_order_acquire);
}

PoolAllocator::Pool& PoolAllocator::pool(MemoryKind kind, int device_id) const {
  if (device_id < 0 || device_id >= kMaxDevices)
    throw ValueError("allocate: device id " + std::to_string(device_id) + " is out of range [0, " +
                     std::to_string(kMaxDevices) + ")");
  if (Pool* p = find_pool(kind, device_id)) return *p;
  // First use of this device: create its pool; a concurrent creator may win the race.
  auto fresh = std::make_unique<Pool>();
  Pool* expected = nullptr;
  auto& slot = devices_[size_t(device_id)];
  if (slot.compare_exchange_strong(expected, fresh.get(), std::memory_order_acq_rel))
    return *fresh.release();
  return *expected;
}

size_t PoolAllocator::size_class(size_t nbytes) { return block_size(nbytes).bytes; }

void* PoolAllocator::allocate(size_t nbytes, MemoryKind kind, int device_id) {
  Pool& p = pool(kind, device_id);
  if (nbytes > kMaxRequest)
    throw_resource_exhausted(kind, device_id, nbytes, int64_t(nbytes), 0,
                             reported_memory_limit(kind), "failed: no machine has that much memory");
  const BlockSize bs = block_size(nbytes);
  const int64_t bytes = int64_t(bs.bytes);
  std::lock_guard<std::mutex> g(p.mu);
  p.counters.check_limit(kind, device_id, nbytes, bytes);
  void* b = p.take_locked(bs.large, bs.idx, bs.bytes);
  if (!b) {
    const int64_t limit = configured_memory_limit(kind);
    if (limit > 0 && p.system + bytes > limit) p.release_locked();
    b = std::aligned_alloc(kBufferAlignment, bs.bytes);
    if (!b && p.cached > 0) {
      p.release_locked();
      b = std::aligned_alloc(kBufferAlignment, bs.bytes);
    }
    if (!b)
      throw_resource_exhausted(kind, device_id, nbytes, bytes, p.counters.total_in_use(),
                               reported_memory_limit(kind), "failed: the system has no memory left");
    p.system += bytes;
    p.peak_system = std::max(p.peak_system, p.system);
  }
  p.counters.on_alloc(kind, bytes);
  MINIJAX_MARK_UNDEFINED(b, bs.bytes);
  return b;
}

void PoolAllocator::deallocate(void* b, size_t nbytes, MemoryKind kind, int device_id) noexcept {
  if (!b) return;
  Pool* p = find_pool(kind, device_id);
  if (!p) return;  // not ours (cannot happen for blocks allocate() returned)
  const BlockSize bs = block_size(nbytes);
  const int64_t bytes = int64_t(bs.bytes);
  std::lock_guard<std::mutex> g(p->mu);
  p->counters.on_free(kind, bytes);
  if (p->cached + bytes <= max_cached_) {
    p->put_locked(b, bs.large, bs.idx, bs.bytes);
  } else {
    std::free(b);
    p->system -= bytes;
  }
}

MemoryStats PoolAllocator::stats(int device_id, MemoryKind kind) const {
  MemoryStats m;
  m.bytes_limit = reported_memory_limit(kind);
  const Pool* p = find_pool(kind, device_id);
  if (!p) return m;
  std::lock_guard<std::mutex> g(p->mu);
  const size_t k = size_t(kind);
  m.bytes_in_use = p->counters.in_use[k];
  m.peak_bytes_in_use = p->counters.peak[k];
  m.num_allocs = p->counters.num_allocs[k];
  m.bytes_reserved = p->cached;
  m.pool_bytes = p->system;
  m.peak_pool_bytes = p->peak_system;
  return m;
}

void PoolAllocator::reset_peak(int device_id) {
  if (Pool* p = find_pool(MemoryKind::device, device_id)) {
    std::lock_guard<std::mutex> g(p->mu);
    p->counters.reset_peaks();
    p->peak_system = p->system;
  }
  std::lock_guard<std::mutex> g(host_->mu);
  host_->counters.reset_peaks();
  host_->peak_system = host_->system;
}

void PoolAllocator::release_cached() {
  for (auto& slot : devices_) {
    if (Pool* p = slot.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> g(p->mu);
      p->release_locked();
    }
  }
  std::lock_guard<std::mutex> g(host_->mu);
  host_->release_locked();
}

namespace {

std::shared_ptr<PoolAllocator>& runtime_allocator_owner() {
  // Never destroyed: Buffers that die during static destruction still return their blocks.
  static auto* owner = new std::shared_ptr<PoolAllocator>(std::make_shared<PoolAllocator>());
  return *owner;
}

// Installed when libminijax is loaded (static initialization, before main()).
[[maybe_unused]] const bool kRuntimeAllocatorInstalled =
    (install_allocator(runtime_allocator_owner()), true);

}  // namespace

PoolAllocator& runtime_allocator() { return *runtime_allocator_owner(); }

}  // namespace minijax
