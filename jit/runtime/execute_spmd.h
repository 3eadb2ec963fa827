// minijax multi-device executor: runs one compiled SPMD program on every device of its mesh at
// once, each device on its own compute thread, and returns as soon as the work is enqueued.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <source_location>
#include <vector>

#include "core/array.h"
#include "jit/runtime/collective_stats.h"
#include "jit/runtime/execute.h"
#include "jit/runtime/loaded_executable.h"
#include "jit/runtime/spmd_context.h"
#include "sharding/mesh.h"

namespace minijax {

/// A program compiled with CompileOptions::spmd, bound to the mesh it runs on.
struct SpmdExecutable {
  std::shared_ptr<const LoadedExecutable> exe;
  std::shared_ptr<const Mesh> mesh;
  std::vector<CollectiveSite> sites;  ///< exe->collective_sites (the site table) on mesh
  /// Per stable site id (CollectiveSite::site_id): the index of the top-level equation of the
  /// SPMD program (after partitioning, before the compiler's passes) holding it, for
  /// CollectiveStats::eqn_index (number_collective_sites' result); SIZE_MAX for an id it lacks.
  std::vector<size_t> site_eqn_index;
};

/// Binds `exe` (compiled with spmd) to `mesh`. ShardingError at `loc` for a site whose axes do
/// not fit the mesh (bind_collective_sites).
std::shared_ptr<const SpmdExecutable> bind_spmd_executable(std::shared_ptr<const LoadedExecutable> exe,
                                                           std::shared_ptr<const Mesh> mesh,
                                                           std::vector<size_t> site_eqn_index,
                                                           std::source_location loc);

/// One call of an SPMD program: its outputs (valid at once; their bytes once `done` completes)
/// and what the communicator moved (valid once `done` completes).
struct SpmdCall {
  std::vector<std::vector<std::shared_ptr<Buffer>>> outputs;  ///< [mesh position][output]
  /// Completes when every device has run its part; fails with the first device's error (the
  /// outputs' ready events are this event, so reading an output rethrows it).
  ReadyEvent done;
  /// One entry per collective executed (in order; a loop's once per iteration): the bytes each
  /// device's communicator counters grew by while it ran that collective.
  std::vector<CollectiveStats> collectives;
};

/// Runs `spmd` on every device of its mesh. inputs[p][i]: input i (constants, then argument
/// leaves) of the device at mesh position p: unsharded concrete Arrays of exe->in_avals[i] whose
/// buffers live on device mesh->device_ids[p] (local shards; they may still be pending: each
/// device waits for its inputs' ready events itself). Returns once every device's work is
/// enqueued (JAX's asynchronous dispatch).
///
/// Before anything is claimed or enqueued, it throws at `loc` (naming inputs as `names` does):
/// TypeError for a wrong count or type; ValueError for an input on the wrong device, donated
/// before, or donated and passed twice; ResourceExhaustedError when a device's bytes in use plus
/// what the call will allocate there (its temporaries and fresh outputs) exceed the device's
/// capacity (config().device_memory_bytes; host kinds: config().host_memory_bytes for the whole
/// process), naming the device, the largest buffer, its size, the call's planned peak, the bytes
/// in use and the capacity. Donated inputs' shards are consumed on every device.
///
/// Calls run one at a time, in the order they were made, on all devices (so collective sequences
/// match); devices wait on condition variables, never spin. A failure on one device (an input
/// whose producer failed, a collective whose participants disagree, a runtime check) aborts the
/// communicator so the others' waits end, resets it once all devices of the call have finished,
/// and fails `done` with that error.
/// Blocks until every call dispatched so far has completed (on every device of this process).
/// mj::distributed::shutdown() and the exit handlers call it.
void drain_spmd_calls();

std::shared_ptr<SpmdCall> execute_spmd(const std::shared_ptr<const SpmdExecutable>& spmd,
                                       const std::vector<std::vector<Array>>& inputs,
                                       std::source_location loc, const InputNames& names);

}  // namespace minijax
