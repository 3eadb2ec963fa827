// minijax allocator interface: the process-wide installed allocator and core's fallback.
// Owns install_allocator/allocator(), the counting aligned_alloc allocator and the limit checks.
#include "core/allocator.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "core/config.h"
#include "core/errors.h"

namespace minijax {

namespace {

bool is_host(MemoryKind k) { return k != MemoryKind::device; }

const char* limit_field(MemoryKind k) {
  return is_host(k) ? "config().host_memory_bytes" : "config().device_memory_bytes";
}

/// Core's fallback: one aligned_alloc per block, exact counters under one mutex.
class CountingAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, MemoryKind kind, int device_id) override {
    if (device_id < 0)
      throw ValueError("allocate: device id " + std::to_string(device_id) + " is negative");
    const int64_t bytes = int64_t(nbytes == 0 ? kBufferAlignment
                                              : (nbytes + kBufferAlignment - 1) /
                                                    kBufferAlignment * kBufferAlignment);
    {
      std::lock_guard<std::mutex> g(mu_);
      SpaceCounters& s = space(kind, device_id);
      s.check_limit(kind, device_id, nbytes, bytes);
      s.on_alloc(kind, bytes);
    }
    void* p = std::aligned_alloc(kBufferAlignment, size_t(bytes));
    if (!p) {
      std::lock_guard<std::mutex> g(mu_);
      SpaceCounters& s = space(kind, device_id);
      s.on_free(kind, bytes);
      throw_resource_exhausted(kind, device_id, nbytes, bytes, s.total_in_use(),
                               reported_memory_limit(kind), "failed: the system has no memory left");
    }
    return p;
  }

  void deallocate(void* p, size_t nbytes, MemoryKind kind, int device_id) noexcept override {
    const int64_t bytes = int64_t(nbytes == 0 ? kBufferAlignment
                                              : (nbytes + kBufferAlignment - 1) /
                                                    kBufferAlignment * kBufferAlignment);
    std::free(p);
    std::lock_guard<std::mutex> g(mu_);
    space(kind, device_id).on_free(kind, bytes);
  }

  MemoryStats stats(int device_id, MemoryKind kind) const override {
    std::lock_guard<std::mutex> g(mu_);
    MemoryStats m;
    m.bytes_limit = reported_memory_limit(kind);
    const SpaceCounters* s = &host_;
    if (!is_host(kind)) {
      auto it = devices_.find(device_id);
      if (it == devices_.end()) return m;
      s = &it->second;
    }
    const size_t k = size_t(kind);
    m.bytes_in_use = s->in_use[k];
    m.peak_bytes_in_use = s->peak[k];
    m.num_allocs = s->num_allocs[k];
    return m;
  }

  void reset_peak(int device_id) override {
    std::lock_guard<std::mutex> g(mu_);
    auto it = devices_.find(device_id);
    if (it != devices_.end()) it->second.reset_peaks();
    host_.reset_peaks();
  }

  std::string name() const override { return "counting"; }

 private:
  SpaceCounters& space(MemoryKind kind, int device_id) {
    return is_host(kind) ? host_ : devices_[device_id];
  }
  mutable std::mutex mu_;
  std::map<int, SpaceCounters> devices_;
  SpaceCounters host_;
};

/// The installed allocator and every allocator ever installed (kept alive: Buffers return their
/// memory to the allocator they came from). Deliberately never destroyed, so Buffers that die
/// during static destruction still find their allocator.
struct Installed {
  std::mutex mu;
  std::vector<std::shared_ptr<Allocator>> keep;
  std::shared_ptr<Allocator> current_owner;
  std::atomic<Allocator*> current{nullptr};
};

Installed& installed() {
  static Installed* s = [] {
    auto* r = new Installed;
    r->current_owner = make_counting_allocator();
    r->keep.push_back(r->current_owner);
    r->current.store(r->current_owner.get(), std::memory_order_release);
    return r;
  }();
  return *s;
}

}  // namespace

std::shared_ptr<Allocator> make_counting_allocator() { return std::make_shared<CountingAllocator>(); }

std::shared_ptr<Allocator> install_allocator(std::shared_ptr<Allocator> a) {
  if (!a) throw ValueError("install_allocator: the allocator is null");
  Installed& s = installed();
  std::lock_guard<std::mutex> g(s.mu);
  std::shared_ptr<Allocator> prev = s.current_owner;
  bool kept = false;
  for (auto& k : s.keep) kept = kept || k == a;
  if (!kept) s.keep.push_back(a);
  s.current_owner = a;
  s.current.store(a.get(), std::memory_order_release);
  return prev;
}

Allocator& allocator() { return *installed().current.load(std::memory_order_acquire); }

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return int64_t(pages) * int64_t(page);
}

int64_t configured_memory_limit(MemoryKind kind) {
  const int64_t v = is_host(kind) ? config().host_memory_bytes : config().device_memory_bytes;
  return v > 0 ? v : 0;
}

int64_t reported_memory_limit(MemoryKind kind) {
  const int64_t v = configured_memory_limit(kind);
  return v > 0 ? v : physical_memory_bytes();
}

void throw_resource_exhausted(MemoryKind kind, int device_id, size_t requested, int64_t bytes,
                              int64_t in_use, int64_t limit, const std::string& why) {
  std::string where = is_host(kind) ? std::string(memory_kind_name(kind)) +
                                          " memory (the process's host memory) for device " +
                                          std::to_string(device_id)
                                    : "device memory of device " + std::to_string(device_id);
  const bool configured = configured_memory_limit(kind) > 0;
  throw ResourceExhaustedError(
      "RESOURCE_EXHAUSTED: allocating " + std::to_string(requested) + " bytes (a " +
      std::to_string(bytes) + "-byte block) of " + where + " " + why + ": " +
      std::to_string(in_use) + " bytes in use, limit " + std::to_string(limit) + " bytes (" +
      (configured ? std::string(limit_field(kind)) : std::string("physical memory")) + ")");
}

void SpaceCounters::check_limit(MemoryKind kind, int device_id, size_t requested,
                                int64_t bytes) const {
  const int64_t limit = configured_memory_limit(kind);
  if (limit > 0 && total_in_use() + bytes > limit)
    throw_resource_exhausted(kind, device_id, requested, bytes, total_in_use(), limit,
                             "exceeds the limit");
}

void SpaceCounters::on_alloc(MemoryKind kind, int64_t bytes) {
  const size_t k = size_t(kind);
  in_use[k] += bytes;
  if (in_use[k] > peak[k]) peak[k] = in_use[k];
  ++num_allocs[k];
}

void SpaceCounters::on_free(MemoryKind kind, int64_t bytes) { in_use[size_t(kind)] -= bytes; }

void SpaceCounters::reset_peaks() {
  for (size_t k = 0; k < 3; ++k) peak[k] = in_use[k];
}

}  // namespace minijax
