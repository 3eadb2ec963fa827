// minijax SPMD device context: what compiled collectives need to know about the device a thread
// runs for (its mesh position, the program's collective sites) and the runtime calls that use it.
#pragma once
#include <cstdint>
#include <exception>
#include <source_location>
#include <string>
#include <vector>

#include "core/collectives.h"
#include "jit/runtime/collective_site.h"
#include "jit/runtime/communicator.h"
#include "sharding/mesh.h"

namespace minijax {

/// One collective (or axis_index) site of a compiled SPMD program (CollectiveSiteSpec), bound to a
/// mesh: what the communicator is asked to do and, per mesh position, the group it joins and its
/// rank there.
struct CollectiveSite {
  int32_t site_id = -1;   ///< the equation's stable site id (CollectiveSiteSpec::site_id)
  std::string primitive;  ///< "all_gather", ..., "axis_index"
  AxisNames axes;
  bool is_axis_index = false;
  CollectiveOp op;                        ///< static part (ragged index tables filled per call)
  std::vector<std::vector<int>> group;    ///< per mesh position: global ids of its group, in rank order
  std::vector<int32_t> rank;              ///< per mesh position: its rank in the group
  std::vector<int64_t> operand_bytes;     ///< per operand (ragged: the four index tables' bytes last)
  std::vector<int> context;               ///< the mesh's device ids: the communicator's context
  int64_t result_bytes = 0;
};

/// The sites of `sites` (the program's site table, LoadedExecutable::collective_sites) on `mesh`,
/// in order. Throws ShardingError at `loc` naming the mesh for an axis the mesh lacks or an
/// axis_size other than the group size.
std::vector<CollectiveSite> bind_collective_sites(const std::vector<CollectiveSiteSpec>& sites, const Mesh& mesh,
                                                  std::source_location loc);

/// What one device measured of one collective it ran: the site and the bytes and messages its
/// communicator counters grew by (the device is in one collective at a time, so the growth is
/// this collective's).
struct SiteTraffic {
  int32_t site = 0;
  CollectiveCounters moved;
};

/// The state of the device a thread runs an SPMD program for (set by the executor around the
/// program's entry call, read by mj_rt_collective / mj_rt_axis_index).
struct SpmdDeviceContext {
  int device_id = 0;
  size_t position = 0;  ///< mesh position (device_ids order)
  const std::vector<CollectiveSite>* sites = nullptr;
  const std::string* program = nullptr;  ///< the program's name, for the error of a site missing from `sites`
  std::vector<SiteTraffic> traffic;  ///< filled by the collectives, in execution order
  std::exception_ptr error;          ///< the first collective failure (the communicator is aborted)
};

/// The device the calling thread runs a program for: its SPMD context's device, else 0 (a
/// one-device program runs on device 0).
int current_device_id();
/// Makes `ctx` the calling thread's device context (null: none).
void set_spmd_context(SpmdDeviceContext* ctx);

}  // namespace minijax

extern "C" {
/// Runs collective site `site` of the calling thread's SPMD program for its device: joins the
/// device's group through communicator(), waits (blocking, not spinning) for this device's
/// result in `out`; in0..in5 are the operands' addresses (ragged_all_to_all: input, output and
/// the four i32 index tables; others: in0). A failure (participants disagreeing, ragged sizes
/// outside the buffers, an abort) is kept in the context and aborts the communicator so every
/// other device's wait ends; `out` is then left as it was. A site index outside the program's
/// table is such a failure too (an internal error naming the site and the program).
void mj_rt_collective(int32_t site, void* out, const void* in0, const void* in1, const void* in2, const void* in3,
                      const void* in4, const void* in5);
/// The calling device's rank along axis_index site `site`'s axes (0 outside an SPMD run; a site
/// outside the program's table: 0, and the run fails with the internal error naming it).
int32_t mj_rt_axis_index(int32_t site);
}
