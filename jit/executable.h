// minijax executables: what compiling one program produces (the program after the passes, its
// buffer plan, kernels, loaded object code and analyses) and the options compiling takes.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/cache_budget.h"
#include "core/debug_callback.h"
#include "core/jaxpr.h"
#include "core/profiler_hooks.h"
#include "jit/lower/program.h"
#include "jit/orc.h"
#include "memory/memory_analysis.h"
#include "memory/offload_options.h"
#include "memory/plan_buffers.h"

namespace minijax {

/// Options of one compilation (from jit's options).
struct CompileOptions {
  std::string name = "jit";
  /// Per program input: donated (its buffer may hold an output; the caller's Array is invalid
  /// afterwards). Empty: none.
  std::vector<bool> donated;
  /// When not empty: the jaxpr after each pass is written to <dump_dir>/<NN>-<pass>.txt.
  std::string dump_dir;
  /// Keep the optimized LLVM IR text (Compiled::as_text(true)).
  bool keep_llvm_ir = false;
  /// An SPMD program, run on every device of a mesh at once (jit/runtime/execute_spmd.h): its
  /// collectives over several devices go through the communicator. False: one device.
  bool spmd = false;
  /// The offload stages' tunables (the API fills them from config()); part of the cache keys.
  OffloadOptions offload;
};

/// Where the program after each stage is written (CompileOptions::dump_dir): one folder per
/// traced program, <dir>/<name>-<16 hex digits of a hash of the traced program>, with one file
/// <NN>-<stage>.txt per stage of jit/pipeline.cc that rewrites it, numbered across the phases.
/// Empty `folder`: no dumps.
struct DumpState {
  std::string folder;
  int next = 0;
};

/// Seconds spent in each stage of one compilation.
struct CompileTimes {
  double passes = 0, lower = 0, translate = 0, optimize = 0, codegen = 0, load = 0;
  bool cache_hit = false;  ///< loaded from the persistent cache (no optimization or codegen)
};

/// A compiled program.
struct Executable {
  std::string name;
  Jaxpr program;                         ///< after every pass: what the code computes
  BufferPlan plan;
  std::vector<lower::LoweredEqn> lowered;
  std::string kernels;                   ///< the KIR module as text
  std::string llvm_ir;                   ///< when CompileOptions::keep_llvm_ir
  std::shared_ptr<LoadedObject> object;
  using Entry = void (*)(void** args, void** outs, void** arenas);
  Entry entry = nullptr;
  std::vector<ShapedArray> in_avals, out_avals;
  /// Array constants of inlined call bodies (inline_calls): the program's trailing inputs after
  /// the caller's (program.invars has in_avals.size() + hoisted_consts.size()); the executors
  /// pass them, read-only, on every call.
  std::vector<Array> hoisted_consts;
  /// CompileOptions::spmd: the collective and axis_index equations the code calls the runtime
  /// for (mj_rt_collective / mj_rt_axis_index name their index here), in site order.
  bool spmd = false;
  std::vector<Eqn> collective_sites;
  /// The kernel call sites of the entry function (mj_rt_kernel_begin/end name their index here):
  /// each kernel's name and its profiler event args, in emission order.
  std::vector<profiler::detail::KernelSite> kernel_sites;
  /// The debug_callback sites of the entry function (mj_rt_host_callback names their index
  /// here): each host function and its operands' avals, in emission order.
  std::vector<HostCallbackSite> host_callbacks;
  CompiledMemoryStats memory;
  std::map<std::string, double> cost;
  CompileTimes times;
  /// Its entry in the cache budget while the process-wide executable cache keeps it
  /// (jit/compile_cache.h); callers touch it at every use so eviction is least recently used.
  mutable detail::CacheNode cache_node;
};

}  // namespace minijax
