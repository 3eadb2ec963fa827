// minijax per-collective statistics: what one collective moved on each device, as both the
// reference executor (run_spmd) and the compiled SPMD executor report it, and SpmdStats, a run's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/collectives.h"

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

}  // namespace minijax
