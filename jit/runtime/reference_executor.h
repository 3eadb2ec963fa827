// minijax reference SPMD executor: runs ONE program on every device of a mesh in lockstep,
// evaluating collectives across device groups. Owns run_spmd and its statistics (SpmdStats).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/collectives.h"
#include "core/jaxpr.h"
#include "sharding/mesh.h"

namespace minijax {

/// Traffic of one collective equation, per device (indexed by mesh position, device_ids order).
/// Model: a direct exchange: every piece goes straight from the device that holds it to each
/// device that needs it (no rings/trees). all_gather: each device sends its operand to the
/// other n-1 devices of its group and receives theirs; all_reduce: two phases, as the
/// resharding planner's all_reduce step (all_reduce_pieces in sharding/plan_reshard.h): rank r
/// receives piece r from the n-1 others, then the n-1 other reduced pieces (2(n-1)/n of the
/// operand when it splits evenly; a rank-0 operand: n-1 values each way); reduce_scatter and all_to_all: block j goes to rank j
/// (n-1 blocks out, n-1 in); collective_permute: a source sends its operand to its target;
/// ragged_all_to_all: the rows sent to / received from other ranks. Self-transfers count 0;
/// axis_index moves nothing and gets no entry.
struct CollectiveStats {
  /// Index of the equation in the program's (top-level) eqns; for a collective inside a body
  /// (a call, a loop, a cond branch), the index of the enclosing top-level equation.
  size_t eqn_index = 0;
  std::string primitive;
  std::vector<int64_t> bytes_sent, bytes_received;  ///< per mesh position (device_ids order)
  AxisNames axes;  ///< the collective's own axis_name (also for one inside a body)
};

/// What run_spmd measured.
struct SpmdStats {
  /// Per device: the most bytes of shard values alive at once. Arguments are alive from the
  /// start; an equation's outputs become alive when it runs, while its inputs still are; a value
  /// dies after its last use (unused outputs die at once); program outputs live to the end.
  std::vector<int64_t> peak_live_bytes;
  /// One entry per collective equation executed, in execution order (a collective inside a loop
  /// once per iteration).
  std::vector<CollectiveStats> collectives;
};

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
