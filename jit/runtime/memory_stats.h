// minijax memory statistics: JAX's device.memory_stats() over the installed allocator.
// Owns memory_stats, reset_peak_memory_stats and clear_memory_pools.
#pragma once
#include <source_location>
#include <string>

#include "core/allocator.h"
#include "core/aval.h"

namespace minijax {

/// JAX's `jax.devices()[device_id].memory_stats()`: what the installed allocator (the runtime's
/// pool, jit/runtime/allocator.h) counted for memory kind `kind` of device `device_id`, in bytes:
/// bytes_in_use, peak_bytes_in_use, bytes_limit, bytes_reserved (cached by the pool, not in use),
/// num_allocs, pool_bytes and peak_pool_bytes (obtained from the system by the space's pool: in
/// use + cached). Counted by the allocator at every allocation, eager or compiled, independently
/// of any planner; a block counts at its block size (PoolAllocator::size_class: a size class up
/// to 1 MiB, page-rounded above). Host kinds (pinned_host, unpinned_host) are counted per
/// process: every device reports the same figures, and both kinds the same pool_bytes.
/// Throws ValueError when device_id is not one of mj::devices() (sharding/mesh.h).
MemoryStats memory_stats(int device_id, MemoryKind kind = MemoryKind::device,
                         std::source_location loc = std::source_location::current());
/// The same with the kind as JAX spells it: "device", "pinned_host" or "unpinned_host"
/// (ValueError otherwise).
MemoryStats memory_stats(int device_id, const std::string& kind,
                         std::source_location loc = std::source_location::current());

/// Resets the peaks: device `device_id`'s device-kind peak_bytes_in_use and the process's host
/// kinds' peaks become their current bytes_in_use, and both spaces' peak_pool_bytes their
/// pool_bytes. ValueError for a device id not in
/// mj::devices().
void reset_peak_memory_stats(int device_id,
                             std::source_location loc = std::source_location::current());

/// Returns the blocks the allocator's pools cache (freed, not in use) to the system, so
/// bytes_reserved becomes 0 everywhere; arrays alive are untouched. Use it after a large
/// computation whose block sizes will not recur.
void clear_memory_pools();

}  // namespace minijax
