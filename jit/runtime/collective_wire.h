// minijax collective wire layout (internal to the MPI communicator): how a collective over devices
// of several processes splits into one message per process pair, hierarchically, and its results.
#pragma once
#include <cstdint>
#include <vector>

#include "jit/runtime/collective_transfers.h"

namespace minijax::detail {

/// How a group's ranks fall on processes: procs in the order of their lowest rank (the order in
/// which partial reductions of processes are combined, so every process computes the same
/// value), ranks[i] the ranks of procs[i] ascending, `me` the index of this process in procs.
struct ProcessSplit {
  std::vector<int> procs;
  std::vector<std::vector<size_t>> ranks;
  size_t me = 0;
};

/// The split of `group` (global device ids) by process_of(id); `self` is this process, which must
/// drive at least one member.
template <class ProcessOf>
ProcessSplit split_group(const std::vector<int>& group, int self, ProcessOf process_of) {
  ProcessSplit s;
  for (size_t r = 0; r < group.size(); ++r) {
    const int p = process_of(group[r]);
    size_t i = 0;
    while (i < s.procs.size() && s.procs[i] != p) ++i;
    if (i == s.procs.size()) {
      s.procs.push_back(p);
      s.ranks.emplace_back();
    }
    s.ranks[i].push_back(r);
  }
  for (size_t i = 0; i < s.procs.size(); ++i)
    if (s.procs[i] == self) s.me = i;
  return s;
}

/// Payload bytes process procs[from] sends to procs[to] for `op` over a group of
/// `n` ranks (the same on both sides when they agree on the op):
///  - all_gather: every operand of `from`'s ranks (what every device needs of them);
///  - all_reduce: `from`'s partial reduction of its ranks' operands (hierarchical: within the
///    process first, then one message per process pair);
///  - reduce_scatter: the pieces of that partial that `to`'s ranks keep;
///  - all_to_all: the blocks `from`'s ranks send to `to`'s ranks;
///  - collective_permute: the operands of the pairs from `from`'s ranks to `to`'s;
///  - ragged_all_to_all: `from`'s ranks' inputs and their four index tables (i32[n] each).
int64_t wire_payload_bytes(const CollectiveOp& op, const ProcessSplit& s, size_t from, size_t to);

/// One collective's local half on this process: the members at their ranks (the local ones with
/// their op and buffers; the others empty until finish), the partial reduction for the
/// reductions, and what the local devices moved (counted, by rank).
struct WireCollective {
  const CollectiveOp* op = nullptr;
  std::vector<int> group;
  ProcessSplit split;
  std::vector<CollectiveMember> members;
  std::vector<char> partial;
  std::vector<CollectiveCounters> counted;
};

/// The local step before any message: the partial reduction of this process's ranks (all_reduce:
/// the operand's shape; reduce_scatter: every rank's piece, contiguous in rank order) at the
/// process's first rank ("leader"), each other local member counted as sending it its operand.
void reduce_locally(WireCollective& w);

/// Writes the payload for procs[to] at `out` (wire_payload_bytes bytes), counting each local
/// device's share as its bytes sent (one message per device and peer process).
void pack_payload(WireCollective& w, size_t to, char* out);

/// Writes every local member's result from the local operands and `incoming[i]`, the payload
/// received from procs[i] (null for this process), counting what each local device received and
/// what moved between local devices. For ragged_all_to_all it first checks every rank's size
/// tables (run_spmd's ValueErrors).
void finish_collective(WireCollective& w, const std::vector<const char*>& incoming);

}  // namespace minijax::detail
