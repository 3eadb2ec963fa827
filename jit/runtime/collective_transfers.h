// minijax collective transfers (internal to the communicators): validation of one collective's
// participants and the shared-memory data movement with its byte/message counting.
#pragma once
#include <vector>

#include "jit/runtime/communicator.h"

namespace minijax::detail {

/// One participant of a matched collective, at its rank (index in the vector).
struct CollectiveMember {
  int device = 0;
  const CollectiveOp* op = nullptr;
  CollectiveBuffers bufs;
};

/// Checks that the members agree (ValueError naming the collective and the devices that
/// disagree), that the op fits the group size and every buffer (ValueError), that the dtype can
/// be reduced (TypeError for a sum of bools over more than one device), and, for
/// ragged_all_to_all, that the peers' sizes agree and fit (run_spmd's ValueError messages).
void check_collective(const std::vector<CollectiveMember>& members, const std::vector<int>& group);

/// The checks of check_collective that one process can make on its own members (`part`, any
/// subset of the group's ranks, each with its device id): they agree, the op fits the group size
/// and their buffers, their ragged index tables have one entry per rank.
void check_collective_part(const std::vector<CollectiveMember>& part, const std::vector<int>& group);

/// run_spmd's checks of the ragged_all_to_all size tables of every rank (ops[rank]).
void check_ragged_sizes(const std::vector<const CollectiveOp*>& ops, const std::vector<int>& group);

/// Performs the checked collective by reading the members' send buffers directly and writing
/// their recv buffers; adds what each rank moved to counted[rank] (resized to the group). With
/// `writes`, only the ranks r with writes[r] receive (the others' recv may be null, and the send
/// buffers that only they would read may be null too).
void perform_collective(const std::vector<CollectiveMember>& members,
                        std::vector<CollectiveCounters>& counted, const std::vector<char>* writes = nullptr);

/// Copies the box `box` at `slo` of a dense row-major array of shape `sshape` at `src` to `dlo` of
/// one of shape `dshape` at `dst` (elements of `item` bytes); returns the bytes copied.
int64_t copy_box(void* dst, const Shape& dshape, const Shape& dlo, const void* src, const Shape& sshape,
                 const Shape& slo, const Shape& box, size_t item);

/// Reduces the box `box` at `slo` of every array of shape `sshape` in `srcs`, in their order
/// (as run_spmd's rank-order chain), into `box` at `dlo` of `dst` (shape `dshape`).
void reduce_box(DType dtype, const std::string& reduction, void* dst, const Shape& dshape, const Shape& dlo,
                const std::vector<const void*>& srcs, const Shape& sshape, const Shape& slo,
                const Shape& box);

}  // namespace minijax::detail
