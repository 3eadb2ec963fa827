// minijax compile pipeline: the passes in order, top to bottom, with an optional dump of the
// jaxpr after each one (CompileOptions::dump_dir) and a profiler event per pass, then code generation and loading.
#include "jit/pipeline.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/dce.h"
#include "core/errors.h"
#include "core/profiler_hooks.h"
#include "jit/compile_cache.h"
#include "jit/cost_analysis.h"
#include "jit/emit_llvm.h"
#include "jit/fuse.h"
#include "jit/rename_body_variables.h"
#include "jit/inline_calls.h"
#include "jit/orc.h"
#include "jit/pack_dot_operands.h"
#include "jit/simplify.h"
#include "jit/runtime/abi.h"
#include "memory/memory_analysis.h"
#include "memory/plan_buffers.h"
#include "memory/schedule_offloads.h"

namespace minijax {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Writes the jaxpr after each pass to <dir>/<name>-<signature>/<NN>-<pass>.txt when a dump
// directory is given: <signature> is 16 hex digits of a hash of the traced program, so each
// signature of a jit (and each jit) gets its own folder and none overwrites another's.
class Dumper {
 public:
  Dumper(const std::string& dir, const std::string& name, const Jaxpr& traced) {
    if (dir.empty()) return;
    char sig[17];
    std::snprintf(sig, sizeof sig, "%016llx", (unsigned long long)std::hash<std::string>{}(to_string(traced)));
    dir_ = (std::filesystem::path(dir) / ((name.empty() ? std::string("jit") : name) + "-" + sig)).string();
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) throw IOError("jit dump_dir: cannot create " + dir_ + ": " + ec.message());
  }
  const Jaxpr& operator()(const char* pass, const Jaxpr& j) {
    if (dir_.empty()) return j;
    char name[16];
    std::snprintf(name, sizeof name, "%02d-", n_++);
    std::ofstream out(std::filesystem::path(dir_) / (std::string(name) + pass + ".txt"));
    if (!out) throw IOError("jit dump_dir: cannot write to " + dir_);
    out << to_string(j) << "\n";
    return j;
  }

 private:
  std::string dir_;
  int n_ = 0;
};

Jaxpr dce(const Jaxpr& j) { return dce_jaxpr(j, std::vector<bool>(j.outvars.size(), true), true).first; }

// inline_calls with the array constants of inlined bodies as trailing inputs of the program
// (their values in `hoisted`).
Jaxpr inline_hoisting_constants(const Jaxpr& j, std::vector<Array>& hoisted) {
  ClosedJaxpr cj;
  cj.jaxpr = std::make_shared<Jaxpr>(j);
  ClosedJaxpr r = inline_calls(cj);
  Jaxpr out = *r.jaxpr;
  out.invars.insert(out.invars.end(), out.constvars.begin(), out.constvars.end());
  out.constvars.clear();
  hoisted = r.consts;
  return out;
}

// Runs pass `name` (as the dump and the trace name it): one "compile" event in an active trace
// (jit/runtime/profiler.h), then the dump.
template <class F>
Jaxpr run_pass(Dumper& dump, const char* name, F&& pass) {
  Jaxpr out = [&] {
    profiler::detail::Scope trace("compile", name);
    return pass();
  }();
  dump(name, out);
  return out;
}

// The passes, top to bottom.
Executable run_passes(const Jaxpr& traced, const CompileOptions& opts) {
  Executable exe;
  exe.name = opts.name;
  exe.in_avals = traced.in_avals();
  exe.out_avals = traced.out_avals();
  Dumper dump(opts.dump_dir, opts.name, traced);
  auto t0 = Clock::now();
  dump("traced", traced);
  Jaxpr j = run_pass(dump, "dce", [&] { return dce(traced); });
  j = run_pass(dump, "inline_calls", [&] { return inline_hoisting_constants(j, exe.hoisted_consts); });
  j = run_pass(dump, "simplify", [&] { return simplify(j); });
  j = run_pass(dump, "pack_dot_operands", [&] { return pack_dot_operands(j); });
  j = run_pass(dump, "fuse", [&] { return fuse(j); });
  j = run_pass(dump, "schedule_offloads", [&] { return schedule_offloads(j); });
  j = run_pass(dump, "rename_body_variables", [&] { return rename_body_variables(j); });
  std::vector<bool> donated = opts.donated;
  if (!exe.hoisted_consts.empty()) donated.resize(j.invars.size(), false);  // constants: never donated
  {
    profiler::detail::Scope trace("compile", "plan_buffers");
    exe.plan = plan_buffers(j, donated);  // analyze_liveness of each scope, then placement
  }
  {
    profiler::detail::Scope trace("compile", "memory_analysis, cost_analysis");
    exe.memory = memory_analysis(j, exe.plan);
    exe.cost = cost_analysis(j);
  }
  exe.program = std::move(j);
  exe.times.passes = seconds_since(t0);
  return exe;
}

// Lowering to KIR, LLVM's optimization and code generation, loading.
void generate_code(Executable& exe, const CompileOptions& opts, const ObjectCode* cached) {
  auto t1 = Clock::now();
  kir::Module m;
  m.name = opts.name;
  exe.spmd = opts.spmd;
  {
    profiler::detail::Scope trace("compile", "lower");
    exe.lowered = lower::lower_program(m, exe.program, exe.plan, opts.spmd ? &exe.collective_sites : nullptr,
                                       &exe.kernel_sites, &exe.host_callbacks);
    exe.kernels = kir::to_string(m);
  }
  exe.times.lower = seconds_since(t1);
  ObjectCode obj;
  if (cached) {
    obj = *cached;
    exe.times.cache_hit = true;
  } else {
    CodegenReport report;
    obj = compile_to_object(m, opts.keep_llvm_ir, &report);
    exe.llvm_ir = std::move(report.llvm_ir);
    exe.times.translate = report.translate_seconds;
    exe.times.optimize = report.optimize_seconds;
    exe.times.codegen = report.codegen_seconds;
    store_persistent(exe, opts, obj);
  }
  auto t2 = Clock::now();
  profiler::detail::Scope trace("compile", "load");
  exe.object = load_object(obj, runtime_symbols(), opts.name);
  exe.entry = reinterpret_cast<Executable::Entry>(exe.object->lookup(lower::kEntryName));
  exe.times.load = seconds_since(t2);
}

}  // namespace

std::shared_ptr<const Executable> compile_executable(const Jaxpr& traced, const CompileOptions& opts) {
  profiler::detail::Scope trace("compile", "compile");
  if (trace.active()) {
    trace.set_name("compile " + opts.name);
    trace.set_args(profiler::detail::Args().add("name", opts.name).add("eqns", int64_t(traced.eqns.size()))
                       .add("spmd", opts.spmd).take());
  }
  Executable exe = run_passes(traced, opts);
  return cached_executable(std::move(exe), opts, generate_code);
}

}  // namespace minijax
