// minijax compile pipeline: the table of every stage in order, top to bottom, the phases that run
// it (with a dump of the program after each stage and a profiler event per stage), and the cache.
#include "jit/pipeline.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "core/dce.h"
#include "core/errors.h"
#include "core/profiler_hooks.h"
#include "jit/compile_cache.h"
#include "jit/passes/cost_analysis.h"
#include "jit/codegen/emit_llvm.h"
#include "jit/passes/fuse.h"
#include "jit/passes/inline_calls.h"
#include "jit/codegen/orc.h"
#include "jit/passes/pack_dot_operands.h"
#include "jit/passes/rename_body_variables.h"
#include "jit/runtime/abi.h"
#include "jit/runtime/dnnl_ops.h"
#include "jit/passes/simplify.h"
#include "memory/coalesce_slice_copies.h"
#include "memory/memory_analysis.h"
#include "memory/pipeline_slice_copies.h"
#include "memory/place_copies.h"
#include "memory/plan_buffers.h"
#include "memory/split_copies.h"
#include "sharding/number_collective_sites.h"
#include "sharding/partition_spmd.h"

namespace minijax {

/// What the codegen stages hand each other.
struct CodegenState {
  kir::Module kir;
  std::unique_ptr<LlvmModule> llvm;
  ObjectCode object;
  const ObjectCode* cached = nullptr;  ///< object code from the persistent cache: no LLVM stages
};

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Writes `j` as <folder>/<NN>-<stage>.txt.
void dump_program(DumpState& d, const char* stage, const Jaxpr& j) {
  if (d.folder.empty()) return;
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%02d-", d.next++);
  std::ofstream out(std::filesystem::path(d.folder) / (std::string(prefix) + stage + ".txt"));
  if (!out) throw IOError("jit dump_dir: cannot write to " + d.folder);
  out << to_string(j) << "\n";
}

// ---- the stages ---------------------------------------------------------------------------------

void run_dce(Compilation& c) {
  c.program = dce_jaxpr(c.program, std::vector<bool>(c.program.outvars.size(), true), true).first;
}

void run_propagate_shardings(Compilation& c) {
  const ShardingRequest& s = *c.sharding;
  c.global = c.program;
  c.propagation = propagate_shardings(c.global, s.in, s.out, *s.mesh, s.loc);
}

void run_partition_spmd(Compilation& c) {
  c.program = partition_spmd(c.global, c.propagation, *c.sharding->mesh, c.sharding->loc);
}

void run_number_collective_sites(Compilation& c) { c.site_eqn_index = number_collective_sites(c.program); }

// inline_calls with the array constants of inlined bodies as trailing inputs of the program
// (their values in exe.loaded.hoisted_consts).
void run_inline_calls(Compilation& c) {
  ClosedJaxpr cj;
  cj.jaxpr = std::make_shared<Jaxpr>(std::move(c.program));
  ClosedJaxpr r = inline_calls(cj);
  c.program = *r.jaxpr;
  c.program.invars.insert(c.program.invars.end(), c.program.constvars.begin(), c.program.constvars.end());
  c.program.constvars.clear();
  c.exe.loaded.hoisted_consts = r.consts;
}

void run_simplify(Compilation& c) { c.program = simplify(c.program); }
void run_pack_dot_operands(Compilation& c) { c.program = pack_dot_operands(c.program); }
void run_fuse(Compilation& c) { c.program = fuse(c.program); }
void run_split_copies(Compilation& c) { c.program = split_copies(c.program); }
void run_coalesce_slice_copies(Compilation& c) {
  c.program = coalesce_slice_copies(c.program, c.options.offload.coalesce_bytes);
}
void run_pipeline_slice_copies(Compilation& c) { c.program = pipeline_slice_copies(c.program); }
void run_place_copies(Compilation& c) { c.program = place_copies(c.program, c.options.offload); }
void run_rename_body_variables(Compilation& c) { c.program = rename_body_variables(c.program); }

// analyze_liveness of each scope, then placement; the hoisted constants are never donated.
void run_plan_buffers(Compilation& c) {
  std::vector<bool> donated = c.options.donated;
  if (!c.exe.loaded.hoisted_consts.empty()) donated.resize(c.program.invars.size(), false);
  c.exe.plan = plan_buffers(c.program, donated);
}

void run_memory_analysis(Compilation& c) { c.exe.memory = memory_analysis(c.program, c.exe.plan); }
void run_cost_analysis(Compilation& c) { c.exe.cost = cost_analysis(c.program); }

void run_lower(Compilation& c) {
  Executable& exe = c.exe;
  CodegenState& g = *c.codegen;
  auto t = Clock::now();
  g.kir.name = c.options.name;
  LoadedExecutable& loaded = exe.loaded;
  loaded.spmd = c.options.spmd;
  exe.lowered = lower::lower_program(g.kir, exe.program, exe.plan, loaded.spmd ? &loaded.collective_sites : nullptr,
                                     &loaded.kernel_sites, &loaded.host_callbacks, &loaded.dnnl_sites);
  exe.kernels = kir::to_string(g.kir);
  exe.times.lower = seconds_since(t);
}

void run_llvm_translate(Compilation& c) {
  auto t = Clock::now();
  c.codegen->llvm = translate_to_llvm(c.codegen->kir);
  c.exe.times.translate = seconds_since(t);
}

void run_llvm_optimize(Compilation& c) {
  auto t = Clock::now();
  optimize_llvm(*c.codegen->llvm);
  c.stage_args = profiler::detail::Args().add("level", "O2").take();
  if (c.options.keep_llvm_ir) c.exe.llvm_ir = llvm_ir_text(*c.codegen->llvm);
  c.exe.times.optimize = seconds_since(t);
}

void run_llvm_codegen(Compilation& c) {
  CodegenState& g = *c.codegen;
  auto t = Clock::now();
  g.object = emit_object(*g.llvm);
  g.llvm.reset();
  c.stage_args = profiler::detail::Args().add("object_bytes", int64_t(g.object.bytes.size())).take();
  c.exe.times.codegen = seconds_since(t);
  store_persistent(c.exe, c.options, g.object);
}

// The object code loaded, and the loaded executable (all the runtime reads) assembled from the
// report: the entry point, the buffer plan's arenas, outputs and donation, the predicted peak.
void run_load(Compilation& c) {
  const CodegenState& g = *c.codegen;
  Executable& exe = c.exe;
  exe.times.cache_hit = g.cached != nullptr;
  auto t = Clock::now();
  exe.object = load_object(g.cached ? *g.cached : g.object, runtime_symbols(), c.options.name);
  LoadedExecutable& loaded = exe.loaded;
  loaded.name = exe.name;
  loaded.entry = reinterpret_cast<LoadedExecutable::Entry>(exe.object->lookup(lower::kEntryName));
  loaded.code = exe.object;
  loaded.arena_bytes = exe.plan.arena_bytes;
  loaded.outputs = exe.plan.outputs;
  loaded.donated = exe.plan.donated;
  loaded.predicted_device_peak_bytes = exe.memory.peak_bytes(MemoryKind::device);
  // The oneDNN primitives, once per compiled program: one OpenMP team of the cores per call on
  // one device, one thread per call on each device of an SPMD program (jit/runtime/dnnl_ops.h).
  if (!loaded.dnnl_sites.empty()) {
    const int threads = loaded.spmd ? 1 : dnnl_default_threads();
    loaded.dnnl = std::make_shared<const DnnlSites>(loaded.dnnl_sites, threads);
  }
  exe.times.load = seconds_since(t);
}

bool sharded(const Compilation& c) { return c.sharding != nullptr; }
bool spmd(const Compilation& c) { return c.options.spmd; }
bool not_in_persistent_cache(const Compilation& c) { return !c.codegen->cached; }

}  // namespace

const std::vector<Stage>& pipeline_stages() {
  using P = StagePhase;
  static const std::vector<Stage> stages = {
      {"dce", P::lower, run_dce, true},
      {"propagate_shardings", P::lower, run_propagate_shardings, false, sharded},
      {"partition_spmd", P::lower, run_partition_spmd, true, sharded},
      {"number_collective_sites", P::lower, run_number_collective_sites, false, spmd},
      {"inline_calls", P::compile, run_inline_calls, true},
      {"simplify", P::compile, run_simplify, true},
      {"pack_dot_operands", P::compile, run_pack_dot_operands, true},
      {"fuse", P::compile, run_fuse, true},
      {"split_copies", P::compile, run_split_copies, true},
      {"coalesce_slice_copies", P::compile, run_coalesce_slice_copies, true},
      {"pipeline_slice_copies", P::compile, run_pipeline_slice_copies, true},
      {"place_copies", P::compile, run_place_copies, true},
      {"rename_body_variables", P::compile, run_rename_body_variables, true},
      {"plan_buffers", P::compile, run_plan_buffers, false},
      {"memory_analysis", P::compile, run_memory_analysis, false},
      {"cost_analysis", P::compile, run_cost_analysis, false},
      {"lower", P::codegen, run_lower, false},
      {"llvm_translate", P::codegen, run_llvm_translate, false, not_in_persistent_cache},
      {"llvm_optimize", P::codegen, run_llvm_optimize, false, not_in_persistent_cache},
      {"llvm_codegen", P::codegen, run_llvm_codegen, false, not_in_persistent_cache},
      {"load", P::codegen, run_load, false},
  };
  return stages;
}

const Stage* find_stage(const std::string& name) {
  for (const Stage& s : pipeline_stages())
    if (name == s.name) return &s;
  return nullptr;
}

void run_phase(Compilation& c, StagePhase phase) {
  // The lower phase is one "lower NAME" event (as jit(f).lower is), beside the "compile NAME"
  // event of the other two.
  std::optional<profiler::detail::Scope> lower_event;
  if (phase == StagePhase::lower) {
    lower_event.emplace("compile", "lower");
    if (lower_event->active()) lower_event->set_name("lower " + c.options.name);
  }
  for (const Stage& s : pipeline_stages()) {
    if (s.phase != phase) continue;
    if (s.applies && !s.applies(c)) continue;
    {
      profiler::detail::Scope trace("compile", s.name);
      s.run(c);
      if (!c.stage_args.empty()) trace.set_args(std::move(c.stage_args));
      c.stage_args.clear();
    }
    if (s.rewrites_program) dump_program(c.dump, s.name, c.program);
  }
}

Jaxpr run_stage(const std::string& name, const Jaxpr& program, const CompileOptions& options) {
  const Stage* s = find_stage(name);
  if (!s) throw ValueError("run_stage: no stage named '" + name + "' (jit/pipeline.cc)");
  if (!s->rewrites_program || s->applies)
    throw ValueError("run_stage: stage '" + name + "' does not rewrite a program on its own");
  Compilation c;
  c.options = options;
  c.program = program;
  s->run(c);
  return std::move(c.program);
}

Compilation run_sharded_stage(const std::string& name, const Jaxpr& program, const ShardingRequest& sharding,
                              const CompileOptions& options) {
  const Stage* s = find_stage(name);
  if (!s) throw ValueError("run_sharded_stage: no stage named '" + name + "' (jit/pipeline.cc)");
  if (s->phase != StagePhase::lower)
    throw ValueError("run_sharded_stage: stage '" + name +
                     "' does not run on a global sharded program (the lower phase's stages do)");
  if (!sharding.mesh) throw ValueError("run_sharded_stage: stage '" + name + "' given a ShardingRequest without a mesh");
  Compilation c;
  c.options = options;
  c.program = program;
  c.sharding = &sharding;
  for (const Stage& before : pipeline_stages()) {  // the sharded stages whose results `name` reads
    if (&before == s) break;
    if (before.phase == StagePhase::lower && before.applies && before.applies(c)) before.run(c);
  }
  s->run(c);
  return c;
}

Compilation start_compilation(const Jaxpr& traced, const CompileOptions& options, const ShardingRequest* sharding) {
  Compilation c;
  c.options = options;
  c.program = traced;
  c.sharding = sharding;
  if (!options.dump_dir.empty()) {
    char sig[17];
    std::snprintf(sig, sizeof sig, "%016llx", (unsigned long long)std::hash<std::string>{}(to_string(traced)));
    const std::string name = options.name.empty() ? std::string("jit") : options.name;
    c.dump.folder = (std::filesystem::path(options.dump_dir) / (name + "-" + sig)).string();
    std::error_code ec;
    std::filesystem::create_directories(c.dump.folder, ec);
    if (ec) throw IOError("jit dump_dir: cannot create " + c.dump.folder + ": " + ec.message());
  }
  dump_program(c.dump, "traced", traced);
  return c;
}

namespace {

// The "compile NAME" trace event around a compilation's phases.
void name_compile_event(profiler::detail::Scope& trace, const Compilation& c) {
  if (!trace.active()) return;
  trace.set_name("compile " + c.options.name);
  trace.set_args(profiler::detail::Args().add("name", c.options.name).add("eqns", int64_t(c.program.eqns.size()))
                     .add("spmd", c.options.spmd).take());
}

// The compile phase, then the codegen phase through the executable cache.
std::shared_ptr<const Executable> compile_and_generate(Compilation c) {
  auto t0 = Clock::now();
  c.exe.name = c.options.name;
  c.exe.loaded.in_avals = c.program.in_avals();
  c.exe.loaded.out_avals = c.program.out_avals();
  run_phase(c, StagePhase::compile);
  c.exe.program = std::move(c.program);
  c.exe.times.passes = seconds_since(t0);
  const CompileOptions options = c.options;
  return cached_executable(std::move(c.exe), options,
                           [&](Executable& exe, const CompileOptions& opts, const ObjectCode* cached) {
                             Compilation g;
                             g.options = opts;
                             g.exe = std::move(exe);
                             g.codegen = std::make_shared<CodegenState>();
                             g.codegen->cached = cached;
                             try {
                               run_phase(g, StagePhase::codegen);
                             } catch (...) {
                               exe = std::move(g.exe);
                               throw;
                             }
                             exe = std::move(g.exe);
                           });
}

}  // namespace

std::shared_ptr<const Executable> compile_lowered(Compilation c) {
  profiler::detail::Scope trace("compile", "compile");
  name_compile_event(trace, c);
  return compile_and_generate(std::move(c));
}

std::shared_ptr<const Executable> compile_executable(const Jaxpr& traced, const CompileOptions& options) {
  Compilation c = start_compilation(traced, options);
  run_phase(c, StagePhase::lower);
  return compile_lowered(std::move(c));
}

}  // namespace minijax
