// minijax executables: what compiling one program produces (its compile report and the loaded
// executable the runtime runs) and the options compiling takes.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/cache_budget.h"
#include "core/debug_callback.h"
#include "core/jaxpr.h"
#include "core/profiler_hooks.h"
#include "jit/codegen/lower/program.h"
#include "jit/codegen/orc.h"
#include "jit/runtime/loaded_executable.h"
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

/// What compiling one program reports: the program after every pass, its buffer plan, how each
/// equation was lowered, the kernels' KIR and LLVM IR, the analyses and the stages' times
/// (Compiled::as_text, memory_analysis, cost_analysis read it; the runtime never does).
struct CompileReport {
  std::string name;
  Jaxpr program;                         ///< after every pass: what the code computes
  BufferPlan plan;
  std::vector<lower::LoweredEqn> lowered;
  std::string kernels;                   ///< the KIR module as text
  std::string llvm_ir;                   ///< when CompileOptions::keep_llvm_ir
  CompiledMemoryStats memory;
  std::map<std::string, double> cost;
  CompileTimes times;
};

/// A compiled program: its compile report and the loaded executable the runtime runs
/// (jit/runtime/loaded_executable.h).
struct Executable : CompileReport {
  LoadedExecutable loaded;
  std::shared_ptr<LoadedObject> object;  ///< the loaded object code (loaded.code holds it too)
  /// Its entry in the cache budget while the process-wide executable cache keeps it
  /// (jit/compile_cache.h); callers touch it at every use so eviction is least recently used.
  mutable detail::CacheNode cache_node;
};

/// The loaded part of `exe`, sharing its lifetime (what the executors take).
inline std::shared_ptr<const LoadedExecutable> loaded_of(const std::shared_ptr<const Executable>& exe) {
  return exe ? std::shared_ptr<const LoadedExecutable>(exe, &exe->loaded) : nullptr;
}

}  // namespace minijax
