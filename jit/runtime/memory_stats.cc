// minijax memory statistics over the installed allocator.
// Owns the device-id validation (against mj::devices()) and the string form of the memory kind.
#include "jit/runtime/memory_stats.h"

#include "core/errors.h"
#include "sharding/mesh.h"

namespace minijax {

namespace {

void check_device(int device_id, const char* fn, std::source_location loc) {
  const int n = num_devices(loc);
  if (device_id < 0 || device_id >= n)
    throw ValueError(std::string(fn) + ": device " + std::to_string(device_id) +
                         " does not exist (this process has " + std::to_string(n) +
                         " device(s), ids 0.." + std::to_string(n - 1) + ")",
                     loc);
}

}  // namespace

MemoryStats memory_stats(int device_id, MemoryKind kind, std::source_location loc) {
  check_device(device_id, "memory_stats", loc);
  return allocator().stats(device_id, kind);
}

MemoryStats memory_stats(int device_id, const std::string& kind, std::source_location loc) {
  MemoryKind k;
  try {
    k = memory_kind_from_name(kind, loc);
  } catch (const ValueError& e) {
    throw ValueError("memory_stats: " + e.message(), loc);
  }
  return memory_stats(device_id, k, loc);
}

void reset_peak_memory_stats(int device_id, std::source_location loc) {
  check_device(device_id, "reset_peak_memory_stats", loc);
  allocator().reset_peak(device_id);
}

void clear_memory_pools() { allocator().release_cached(); }

}  // namespace minijax
