// minijax jit's flow behind its core (jit/jit.cc): the shardings of a call resolved, one signature
// lowered (propagated and partitioned on a mesh, or not), compiled, capacity-checked and run.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "core/jaxpr.h"
#include "jit/executable.h"
#include "jit/jit.h"
#include "jit/reference/reference_executor.h"
#include "jit/runtime/execute.h"
#include "memory/memory_analysis.h"
#include "sharding/mesh.h"
#include "sharding/sharding.h"

namespace minijax {
namespace detail {

// The NamedSharding a ShapeDtypeStruct's abstract Array carries (read back by resolve_shardings).
struct ShapeDtypeShardingParam final : ParamObject {
  explicit ShapeDtypeShardingParam(NamedSharding s) : sharding(std::move(s)) {}
  NamedSharding sharding;
  std::string str() const override { return sharding.str(); }
  bool equals(const ParamObject& o) const override {
    auto* q = dynamic_cast<const ShapeDtypeShardingParam*>(&o);
    return q && q->sharding.str() == sharding.str();
  }
};

/// The sharding each operand is given: from `given` (one per leaf, or one for all, or empty),
/// else the sharding of the leaf's value in `values` when it is a sharded Array, else nullopt.
/// Operands 0..num_consts-1 (f's constants) get nullopt. Throws ShardingError at `loc` for a
/// count other than 0, 1 or the number of leaves, a spec that does not fit its leaf, or two
/// shardings on different meshes; ValueError naming the function, the argument (`names`) and
/// both memory kinds for an `in_shardings` entry in another memory kind than its argument's aval
/// (as JAX: in_shardings never move memory; out_shardings do). `mesh` receives the common mesh
/// (if any).
std::vector<std::optional<Sharding>> resolve_shardings(
    const std::vector<std::optional<NamedSharding>>& given, const std::vector<ShapedArray>& avals,
    const std::vector<Array>& values, size_t num_consts, const char* what,
    std::shared_ptr<const Mesh>& mesh, const InputNames& names, std::source_location loc);

/// Propagates and partitions `jaxpr` (constvars converted to invars) for the resolved in/out
/// shardings on `mesh`; dead equations removed first.
/// The pipeline's lower phase (jit/pipeline.h); dumps under opts.dump_dir.
std::shared_ptr<const LoweredProgram> lower_sharded(const ClosedJaxprPtr& jaxpr, size_t num_consts,
                                                    const std::vector<std::optional<Sharding>>& in,
                                                    const std::vector<std::optional<Sharding>>& out,
                                                    const std::shared_ptr<const Mesh>& mesh, const JitOptions& opts,
                                                    std::source_location loc);

/// The unpartitioned LoweredProgram of `jaxpr`: the pipeline's lower phase without a mesh (dead
/// equations removed); dumps under opts.dump_dir.
std::shared_ptr<const LoweredProgram> lower_unsharded(const ClosedJaxprPtr& jaxpr, size_t num_consts,
                                                      const JitOptions& opts);

/// ShardingError at `loc` when `mesh` names a device id at or beyond num_devices(), naming the
/// id and the count.
void check_mesh_devices(const Mesh& mesh, std::source_location loc);

/// Puts each operand onto its propagated input sharding and runs the SPMD program with run_spmd.
SpmdRun run_lowered(const std::shared_ptr<const LoweredProgram>& lowered, const std::vector<Array>& operands,
                    std::source_location loc);

/// Under a trace: the body of the pjit a sharded jit binds, its inputs and outputs constrained.
std::pair<ClosedJaxprPtr, std::vector<Array>> constrained_body(
    const ClosedJaxprPtr& body, const std::vector<std::optional<Sharding>>& in,
    const std::vector<std::optional<Sharding>>& out, std::source_location loc);

/// The outputs of a sharded run as sharded Arrays in their out shardings.
std::vector<Array> sharded_outputs(const LoweredProgram& low, SpmdRun& run, std::source_location loc);

/// Executes an unsharded executable on the constants and leaves (concrete), with donation; errors
/// name jit `name` and the positional argument of a leaf (`first_leaf`, `nargs`).
std::vector<Array> run_compiled(const Executable& exe, const std::vector<Array>& consts,
                                const std::vector<Array>& leaves, const std::string& name,
                                const uint32_t* first_leaf, size_t nargs, std::source_location loc);

/// cost_analysis of a sharded lowering's SPMD program (one device's share).
std::map<std::string, double> spmd_cost_analysis(const LoweredProgram& low);
/// memory_analysis of a sharded lowering's SPMD program, planned without fusion.
CompiledMemoryStats spmd_memory_analysis(const LoweredProgram& low);

/// The compiler's options for a jit with `opts` whose program inputs are `donated` (true for
/// SPMD programs with `spmd`).
CompileOptions compile_options(const JitOptions& opts, const std::vector<bool>& donated, bool spmd);

/// The compiled program of a traced signature (process-wide cache; see compile_executable).
std::shared_ptr<const Executable> compile_traced(const ClosedJaxprPtr& jaxpr, const JitOptions& opts,
                                                 const std::vector<bool>& donated, std::source_location loc);

/// The compiled program of a lowering: the pipeline's compile and codegen phases on its program
/// after the lower phase (`spmd`: a sharded lowering's SPMD program, CompileOptions::spmd), with
/// inputs `donated`, capacity-checked on the lowering's devices (check_compiled_capacity).
std::shared_ptr<const Executable> compile_lowering(const LoweredProgram& low, const JitOptions& opts,
                                                   const std::vector<bool>& donated, bool spmd,
                                                   std::source_location loc);

/// ResourceExhaustedError at `loc` when `exe`'s predicted peak of device memory exceeds
/// config().device_memory_bytes (naming the peak, the capacity and the largest device buffer),
/// or its host peak times `num_devices` exceeds config().host_memory_bytes. Read at every
/// compile() (capacities may change between compilations of a cached program).
void check_compiled_capacity(const Executable& exe, size_t num_devices, std::source_location loc);

/// A sharded lowering compiled (compile_lowering with spmd; the executable cache shared with
/// every call) and its loaded executable bound to its mesh; `*exe`, when given, receives the
/// compiled program (Compiled's analyses and text). ResourceExhaustedError as
/// check_compiled_capacity; ShardingError for a collective whose axes do not fit the mesh.
std::shared_ptr<const SpmdExecutable> compile_sharded(const LoweredProgram& low, const JitOptions& opts,
                                                      const std::vector<bool>& donated, std::source_location loc,
                                                      std::shared_ptr<const Executable>* exe = nullptr);

/// Runs `spmd` (compiled from `lowered`) on every device of its mesh: each operand (constants
/// then leaves) put onto its input sharding, the call enqueued (execute_spmd: it returns before
/// the devices finish), the outputs returned as sharded Arrays in their out shardings, pending
/// until the call completes (a read waits; a failure is rethrown there). `*run` (when given)
/// receives the call's SpmdRun (its statistics through finished_run). Throws as execute_spmd,
/// and ShardingError for a mesh naming an unknown device.
std::vector<Array> run_sharded(const std::shared_ptr<const LoweredProgram>& lowered,
                               const std::shared_ptr<const SpmdExecutable>& spmd, const std::vector<Array>& operands,
                               const InputNames& names, std::shared_ptr<SpmdRun>* run, std::source_location loc);

/// `run` with its compiled call waited for and the communicator's counts copied into
/// stats.collectives (a call that failed: returned as it is); other runs unchanged.
std::shared_ptr<const SpmdRun> finished_run(const std::shared_ptr<const SpmdRun>& run);

}  // namespace detail
}  // namespace minijax
