// minijax collective traffic: the bytes and messages each device sends and receives for a
// collective of an SPMD program under run_spmd's model, and the program printed with them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/collectives.h"
#include "core/jaxpr.h"
#include "sharding/mesh.h"

namespace minijax {

/// Traffic of one collective equation on `mesh`, per mesh position (device_ids order), under
/// run_spmd's model (jit/reference/reference_executor.h): all_gather (n−1)·operand;
/// reduce_scatter and all_to_all (n−1)·operand/n; all_reduce two-phase (all_reduce_pieces:
/// (n−1)·piece[r] + (E − piece[r])); collective_permute the operand from each source to its
/// target (no self-transfer); ragged_all_to_all its size operands' rows when they are rows of
/// constant tables selected by axis_index (what partition_spmd's ragged lowering emits).
/// Bytes sent/received and messages (sender -> receiver transfers with data) sent/received.
struct CollectiveTraffic {
  std::string primitive;
  AxisNames axes;
  bool known = true;  ///< false: a ragged_all_to_all whose sizes are computed at run time
  std::vector<int64_t> bytes_sent, bytes_received, messages_sent, messages_received;
};

/// The traffic of equation `i` of `j` (a collective other than axis_index; nullopt otherwise),
/// with `consts` the values of j's constvars (for ragged size tables; may be empty).
/// Throws ShardingError for an axis `mesh` lacks.
std::optional<CollectiveTraffic> collective_traffic(const Jaxpr& j, size_t i, const std::vector<Array>& consts,
                                                    const Mesh& mesh);

/// One printed line of a collective's traffic, shared by spmd_collectives_text (the static model)
/// and jit's collectives_text (run_spmd's measured bytes), so the two read alike:
/// `<where> <primitive> over <axes>: <sent> sent, <received> received per device, <in> msgs in,
/// <out> msgs out\n`, each amount `N B` when every device has the same, else `lo..hi B`
/// (bytes); the message counts only when `t.messages_sent` / `t.messages_received` are
/// non-empty; `... over <axes>: sizes computed at run time` when `!t.known`. `<axes>` is the
/// collective's own axis_name as the jaxpr prints it (`data`, `('x', 'y')`). Throws ValueError
/// for empty `t.axes` (a collective names at least one axis).
std::string collective_line(const std::string& where, const CollectiveTraffic& t);

/// One line per collective of the SPMD `program`, in program order, including those inside
/// bodies, named by the enclosing top-level equation: pjit / closed_call (with the call's name,
/// e.g. `eqn 1 closed_call reshard_ragged / ragged_all_to_all over ...`), checkpoint,
/// custom_jvp_call / custom_vjp_call, scan (`eqn 0 scan / ...`: one iteration's traffic),
/// while (`eqn 2 while cond_jaxpr / ...`, `... body_jaxpr / ...`: one iteration) and cond
/// (`eqn 3 cond branch 1 / ...`: each branch, taken or not), with the bytes and messages each device sends
/// and receives: `eqn 3 all_to_all over ('x', 'y'): 1792 B sent, 1792 B received per device,
/// 7 msgs in, 7 msgs out` (`lo..hi` where devices differ). Throws ShardingError for an axis
/// `mesh` lacks.
std::string spmd_collectives_text(const Jaxpr& program, const Mesh& mesh);
/// The SPMD program (to_string), a header line, then spmd_collectives_text.
std::string spmd_as_text(const Jaxpr& program, const Mesh& mesh);

}  // namespace minijax
