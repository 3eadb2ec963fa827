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

/// Performs the checked collective by reading the members' send buffers directly and writing
/// their recv buffers; adds what each rank moved to counted[rank] (resized to the group).
void perform_collective(const std::vector<CollectiveMember>& members, std::vector<CollectiveCounters>& counted);

}  // namespace minijax::detail
