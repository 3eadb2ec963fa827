// minijax collective-site table: what lowering records of each collective and axis_index call
// site of a compiled SPMD program, which the executor binds to a mesh and the communicator runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/collectives.h"
#include "jit/runtime/communicator.h"

namespace minijax {

/// One call site of a compiled SPMD program: the compiled code calls mj_rt_collective(i, ...) or
/// mj_rt_axis_index(i) with the site's index i in the program's table (LoadedExecutable's
/// collective_sites, in emission order), and the runtime reads everything else from here: the
/// program's IR is not needed to run it. Filled by lowering from the equation.
struct CollectiveSiteSpec {
  /// The equation's stable site id (Eqn::site, given by number_collective_sites after
  /// partition_spmd and carried by every later pass), for the statistics' equation index.
  int32_t site_id = -1;
  /// The equation's primitive: "all_gather", ..., or "axis_index".
  std::string primitive;
  bool is_axis_index = false;
  /// The mesh axes whose devices form each group (in the equation's order: ranks are row-major
  /// over them), and the group size the program was partitioned for (checked against the mesh
  /// when the program is bound to one).
  AxisNames axes;
  int64_t axis_size = 1;
  /// The collective (not for axis_index): kind, reduction, dims, dtype and the local operand shape.
  CollectiveOp op;
  /// Bytes of each operand, in order (ragged_all_to_all: input, output, then the four i32 index
  /// tables), and of the result.
  std::vector<int64_t> operand_bytes;
  int64_t result_bytes = 0;
};

}  // namespace minijax
