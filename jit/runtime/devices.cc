// minijax runtime devices: the devices per process, the global ids of every process's devices and
// the descriptors of core/device.h. Owns the device globals (fixed at first use) and device(id).
#include <cstdlib>
#include <mutex>

#include "core/config.h"
#include "core/device.h"
#include "core/distributed.h"
#include "core/errors.h"
#include "sharding/mesh.h"  // declares devices(), num_devices(), set_num_devices()

namespace minijax {

namespace {
std::mutex g_devices_mu;
int g_requested = 0;   // set_num_devices before first use
int g_num_devices = 0;  // fixed at first use of devices()
std::optional<std::source_location> g_first_use;  // where that first use was
}  // namespace

std::optional<std::source_location> detail::first_device_use() {
  std::lock_guard<std::mutex> lock(g_devices_mu);
  return g_first_use;
}

namespace {
// The devices per process (L), fixed at the first call. Under g_devices_mu.
int local_count_locked(const std::source_location& loc) {
  if (g_num_devices == 0) {
    if (g_requested > 0) {
      g_num_devices = g_requested;
    } else if (const int c = config().num_cpu_devices; c != 0) {
      if (c < 1)
        throw ShardingError("config().num_cpu_devices = " + std::to_string(c) +
                                " is not a device count (an integer >= 1)",
                            loc);
      g_num_devices = c;
    } else if (const char* env = std::getenv("MINIJAX_NUM_DEVICES"); env && *env) {
      char* end = nullptr;
      long n = std::strtol(env, &end, 10);
      if (*end != '\0' || n < 1 || n > (1 << 20))
        throw ShardingError(std::string("MINIJAX_NUM_DEVICES='") + env +
                                "' is not a device count (an integer >= 1)",
                            loc);
      g_num_devices = int(n);
    } else {
      g_num_devices = 1;
    }
    g_first_use = loc;
  } else if (const int c = config().num_cpu_devices; c != 0 && c != g_num_devices) {
    throw ShardingError("config().num_cpu_devices = " + std::to_string(c) +
                            ", but devices() was already used with " + std::to_string(g_num_devices) +
                            " devices; set the count before first use",
                        loc);
  }
  return g_num_devices;
}

// L, fixing it now if no call did yet (a runtime query of a device's process counts as a use).
int local_count(std::source_location loc = std::source_location::current()) {
  std::lock_guard<std::mutex> lock(g_devices_mu);
  return g_num_devices ? g_num_devices : local_count_locked(loc);
}
}  // namespace

int num_devices(std::source_location loc) {
  int l;
  {
    std::lock_guard<std::mutex> lock(g_devices_mu);
    l = local_count_locked(loc);
  }
  return l * process_count();
}

std::vector<int> devices(std::source_location loc) {
  int n = num_devices(loc);
  std::vector<int> d(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) d[size_t(i)] = i;
  return d;
}

std::vector<int> local_devices(std::source_location loc) {
  const int n = num_devices(loc), l = n / process_count(), p = process_index();
  std::vector<int> d(static_cast<size_t>(l));
  for (int i = 0; i < l; ++i) d[size_t(i)] = p * l + i;
  return d;
}

int detail::process_of_device(int id) { return id / local_count(); }

bool detail::is_local_device(int id) {
  // An id outside 0..num_devices()-1 counts as local, so the checks that refuse it run here.
  const int l = local_count(), p = process_index();
  return id < 0 || id >= l * process_count() || id / l == p;
}

void set_num_devices(int n, std::source_location loc) {
  std::lock_guard<std::mutex> lock(g_devices_mu);
  if (n < 1) throw ShardingError("set_num_devices(" + std::to_string(n) + "): the count must be >= 1", loc);
  if (g_num_devices != 0 && g_num_devices != n)
    throw ShardingError("set_num_devices(" + std::to_string(n) + "): devices() was already used with " +
                            std::to_string(g_num_devices) + " devices; set the count before first use",
                        loc);
  g_requested = n;
  if (g_num_devices != 0) g_num_devices = n;
}

int64_t Device::capacity_bytes(MemoryKind kind) const {
  for (const MemorySpace& m : memories)
    if (m.kind == kind) return m.capacity_bytes;
  throw ValueError(str() + " has no memory of kind " + memory_kind_name(kind));
}

std::string Device::str() const { return "CpuDevice(id=" + std::to_string(id) + ")"; }

Device device(int id, std::source_location loc) {
  const int n = num_devices(loc);
  if (id < 0 || id >= n)
    throw ValueError("device(" + std::to_string(id) + "): there are " + std::to_string(n) +
                         " devices (ids 0.." + std::to_string(n - 1) +
                         "; config().num_cpu_devices sets the count)",
                     loc);
  Device d;
  d.id = id;
  d.process_index = detail::process_of_device(id);
  d.memories = {{MemoryKind::device, config().device_memory_bytes, false},
                {MemoryKind::pinned_host, config().host_memory_bytes, true},
                {MemoryKind::unpinned_host, config().host_memory_bytes, true}};
  return d;
}

}  // namespace minijax
