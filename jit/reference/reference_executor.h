// minijax reference SPMD executor: a jaxpr interpreter that runs ONE program on every device of a
// mesh in lockstep, evaluating collectives across device groups. Owns run_spmd (SpmdStats: jit/runtime/collective_stats.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/collectives.h"
#include "core/jaxpr.h"
#include "jit/runtime/collective_stats.h"
#include "sharding/mesh.h"

namespace minijax {

/// Runs the SPMD `program` on every device of `mesh`, equation by equation in lockstep.
/// per_device_args[p] are the arguments of the device at mesh position p (device_ids order),
/// one per invar, of the invar's aval (local shard shapes); the result is indexed the same way.
/// Non-collective equations run per device through minijax::bind on the device's concrete
/// values (so call this from the eval trace). A collective over axes A runs once per group:
/// the devices sharing all mesh coordinates outside A, ranked row-major over A's coordinates in
/// the order the equation names them; its axis_size must equal the product of A's sizes.
/// axis_index yields each device's rank along its axes. Bodies run in lockstep the same way, so
/// collectives inside them work: pjit/closed_call/checkpoint/custom_jvp_call/custom_vjp_call
/// bodies once; scan's body once per iteration (x slices cut per device, ys stacked per device);
/// while's predicate and body once per iteration; cond's selected branch. The while predicate
/// and the cond index must agree across devices (ValueError naming two devices otherwise: the
/// partitioner keeps scalars replicated). A collective inside a loop gets one CollectiveStats
/// entry per iteration (eqn_index: the enclosing top-level equation). Live bytes inside a loop
/// also count the current x slices, the carries it produced and the ys stacked so far.
/// Throws: ValueError if the program has constvars (use the ClosedJaxpr overload), if the
/// argument count per device or the device count differs from the program / mesh, if an
/// argument's shape/dtype differs from its invar's; ShardingError (naming the mesh) for an axis
/// name the mesh lacks or an axis_size that is not the group size; ValueError for a
/// ragged_all_to_all whose sizes disagree between peers or fall outside the buffers.
std::vector<std::vector<Array>> run_spmd(const Jaxpr& program, const Mesh& mesh,
                                         const std::vector<std::vector<Array>>& per_device_args,
                                         SpmdStats* stats = nullptr);
/// run_spmd of a closed program: its consts are given to every device (replicated).
std::vector<std::vector<Array>> run_spmd(const ClosedJaxpr& program, const Mesh& mesh,
                                         const std::vector<std::vector<Array>>& per_device_args,
                                         SpmdStats* stats = nullptr);

}  // namespace minijax
