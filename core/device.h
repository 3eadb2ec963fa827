// minijax device descriptors: what a (virtual) device is, as sharding/ and the runtime name it.
// Owns Device (id, process, memory kinds, capacities) and device(id).
#pragma once
#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "core/aval.h"

namespace minijax {

/// One memory space a device can address (JAX's `device.addressable_memories()`).
struct MemorySpace {
  MemoryKind kind = MemoryKind::device;
  /// Capacity in bytes as configured when the descriptor was made (config().device_memory_bytes
  /// for `device`, config().host_memory_bytes for the host kinds, which all devices of a process
  /// share); 0 = unlimited. The runtime reads the config again at every allocation and compile().
  int64_t capacity_bytes = 0;
  /// Whether the space is the process's host memory (shared by all its devices).
  bool shared_by_process = false;
};

/// A device descriptor (JAX's `jax.Device`): a value, not the runtime object (threads, queues and
/// allocators live in jit/runtime/). Every device is a virtual CPU device of one process, with a
/// `device` memory of its own and its process's `pinned_host` and `unpinned_host` memories.
struct Device {
  int id = 0;             ///< global id (0..num_devices()-1)
  /// The process that drives it: id / L for L devices per process (0 in a run of one process;
  /// mj::distributed::initialize, core/distributed.h).
  int process_index = 0;
  std::string platform = "cpu";
  /// The memory spaces, `device` first (the default memory kind), then pinned_host, unpinned_host.
  std::vector<MemorySpace> memories;

  /// The default memory kind: `device`.
  MemoryKind default_memory_kind() const { return MemoryKind::device; }
  /// Capacity in bytes of memory kind `kind` (0 = unlimited). ValueError for a kind the device lacks.
  int64_t capacity_bytes(MemoryKind kind) const;
  /// `CpuDevice(id=3)`, as JAX prints a CPU device.
  std::string str() const;
  bool operator==(const Device& o) const = default;
};

/// Every process's virtual devices, by global id: 0..P·L-1 for P processes (process_count(),
/// core/distributed.h) of L devices each, process p driving ids p·L .. p·L+L-1 (as jax.devices()
/// after jax.distributed.initialize()); one process: 0..L-1. L, the devices per process, is fixed
/// at first use: set_num_devices(L) if it was called before, else mj::config().num_cpu_devices when
/// non-zero (core/config.h), else the environment variable MINIJAX_NUM_DEVICES, else 1 (as XLA's
/// forced host platform device count). ShardingError if MINIJAX_NUM_DEVICES or the config is not an
/// integer >= 1, or if the config was changed to another count after first use.
std::vector<int> devices(std::source_location loc = std::source_location::current());
/// Number of devices of every process (devices().size(): P·L).
int num_devices(std::source_location loc = std::source_location::current());
/// This process's devices (jax.local_devices()): ids p·L .. p·L+L-1 for process p.
std::vector<int> local_devices(std::source_location loc = std::source_location::current());
/// Sets the number of devices of each process (L). ShardingError if n < 1, or if devices() was
/// already used with a different count (the count cannot change once meshes may have been built
/// from it).
void set_num_devices(int n, std::source_location loc = std::source_location::current());
// Like device(), these are defined by jit/runtime/devices.cc (the runtime owns the count).

/// The descriptor of device `id`, its capacities read from config() now. ValueError naming the id
/// and the device count when id is not one of devices().
Device device(int id, std::source_location loc = std::source_location::current());

namespace detail {
/// The call site of the first use of the devices (devices(), num_devices(), device(id), which
/// meshes, placements and compiled calls reach), the moment their count was fixed; empty before.
std::optional<std::source_location> first_device_use();
/// The process driving device `id` (id / L; no range check: the runtime's fast path).
int process_of_device(int id);
/// Whether this process drives device `id` (process_of_device(id) == process_index()); an id
/// outside 0..num_devices()-1 counts as local, so the runtime's checks that refuse it run.
bool is_local_device(int id);
}  // namespace detail

}  // namespace minijax
