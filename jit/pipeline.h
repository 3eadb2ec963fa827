// minijax compile pipeline: the ordered table of every stage from a traced program to a loaded
// executable, the phases Lowered and Compiled run of it, and the executable cache between them.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "core/jaxpr.h"
#include "jit/executable.h"
#include "sharding/propagate_shardings.h"

namespace minijax {

/// Which part of a compilation runs a stage: `lower` is jit(f).lower(x) (dead code, then the
/// sharded stages), `compile` is Compiled's passes and analyses, and `codegen` runs only when the
/// executable cache (jit/compile_cache.h) has no equal program: lowering to KIR, LLVM, loading.
enum class StagePhase { lower, compile, codegen };

/// The sharded stages' inputs: the mesh and jit's resolved in/out shardings (one per invar /
/// outvar; nullopt: propagation decides), and the user's line their errors name.
struct ShardingRequest {
  std::shared_ptr<const Mesh> mesh;
  std::vector<std::optional<Sharding>> in, out;
  std::source_location loc;
};

struct CodegenState;  // the KIR module, LLVM module and object code between the codegen stages

/// What the stages read and write: the program between them and what the stages beside it
/// produce.
struct Compilation {
  CompileOptions options;
  Jaxpr program;
  /// The sharded stages' inputs; null (unsharded): propagate_shardings and partition_spmd are
  /// skipped.
  const ShardingRequest* sharding = nullptr;
  /// The global program propagate_shardings read (after dce) and its result (what
  /// partition_spmd and Lowered's text read).
  Jaxpr global;
  PropagationResult propagation;
  /// An SPMD program's collective sites: per stable site id (Eqn::site), the top-level equation
  /// holding it (number_collective_sites).
  std::vector<size_t> site_eqn_index;
  /// What the compile and codegen phases produce.
  Executable exe;
  std::shared_ptr<CodegenState> codegen;
  DumpState dump;
  /// The args of the running stage's trace event, when the stage sets them (profiler::detail::Args).
  std::string stage_args;
};

/// One stage of the pipeline: its name (the dump's file, the "compile" trace event and a pass
/// test's folder, tests/passes/<name>/), its phase, and what it does. `rewrites_program`: it maps
/// the program to a program (dumped after it; pass tests from text run it alone).
/// `applies` (null: always) says whether it runs for a compilation: the sharded stages only
/// with a ShardingRequest, the LLVM stages only without object code from the persistent cache.
struct Stage {
  const char* name;
  StagePhase phase;
  void (*run)(Compilation&);
  bool rewrites_program;
  bool (*applies)(const Compilation&) = nullptr;
};

/// The whole ordered list of stages: dce; propagate_shardings, partition_spmd (sharded only);
/// number_collective_sites (SPMD programs only: each collective's stable site id);
/// inline_calls; simplify; pack_dot_operands; fuse; split_copies; coalesce_slice_copies;
/// pipeline_slice_copies; place_copies; rename_body_variables; plan_buffers; memory_analysis;
/// cost_analysis; lower; llvm_translate; llvm_optimize; llvm_codegen; load.
const std::vector<Stage>& pipeline_stages();

/// The stage named `name`, or null.
const Stage* find_stage(const std::string& name);

/// Runs the stages of `phase` on `c` in the table's order, each under a "compile" trace event
/// named after it (jit/runtime/profiler.h); the program is dumped after each stage that rewrites
/// it. Throws what the stages throw.
void run_phase(Compilation& c, StagePhase phase);

/// Runs the stage named `name` alone on `program` with `options` (pass tests from text, tests of
/// one stage). ValueError naming the stage when no stage has that name, or when it does not
/// rewrite a program or needs a mesh (propagate_shardings, partition_spmd).
Jaxpr run_stage(const std::string& name, const Jaxpr& program, const CompileOptions& options = {});

/// Runs the stage named `name` of the lower phase (dce, propagate_shardings, partition_spmd, ...)
/// on the global `program` (no constvars) with `sharding`'s mesh and in/out shardings (one per
/// invar / outvar), after the stages of the lower phase before it that run only for some
/// compilations (`applies`) and apply to this one, whose results it reads (partition_spmd:
/// propagate_shardings first; dce and propagate_shardings: nothing before).
/// For pass tests from text of sharded programs (tests/passes/). Returns the Compilation:
/// `program` after the stage (dce's pruned program, partition_spmd's per-device program),
/// `global` and `propagation` once propagate_shardings ran (`propagation.text`: the program
/// annotated with every variable's sharding and the reshards); its `sharding` points at
/// `sharding`, which must outlive it. ValueError naming the stage when no stage has that name,
/// it is not of the lower phase, or `sharding` has no mesh; what the stages throw
/// (ShardingError from propagation and partitioning, at sharding.loc).
Compilation run_sharded_stage(const std::string& name, const Jaxpr& program, const ShardingRequest& sharding,
                              const CompileOptions& options = {});

/// Starts a compilation of `traced` (a jaxpr without constvars: f's constants are leading
/// invars): its dump folder made when options.dump_dir is set (IOError when it cannot be), the
/// traced program written as <NN>-traced.txt.
Compilation start_compilation(const Jaxpr& traced, const CompileOptions& options,
                              const ShardingRequest* sharding = nullptr);

/// The compile phase on `c` (after its lower phase), then the codegen phase through the
/// process-wide executable cache: an equal program compiled before (by any jit) with equal
/// options is shared, and code generation is skipped. Throws CompileError when LLVM rejects the
/// code (naming the kernel and its equation), ValueError naming a primitive no rule lowers, and
/// the internal ValueError of an SPMD program (options.spmd) whose collectives were not numbered
/// by the lower phase (number_collective_sites).
std::shared_ptr<const Executable> compile_lowered(Compilation c);

/// Every phase on `traced`, unsharded: start_compilation, the lower phase, compile_lowered.
std::shared_ptr<const Executable> compile_executable(const Jaxpr& traced, const CompileOptions& options);

}  // namespace minijax
