// minijax profiler: mj::profiler::start_trace / stop_trace (as jax.profiler) writing Chrome
// trace-event JSON, TraceAnnotation, and the kernel hooks compiled code calls (mj_rt_kernel_*).
#pragma once
#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "core/profiler_hooks.h"

namespace minijax::profiler {

/// Starts recording a trace (jax.profiler.start_trace) that stop_trace() writes to the file
/// `path` as Chrome trace-event JSON (a "traceEvents" array of complete "X" events, times in
/// microseconds from the start, and "M" events naming each thread's track), which Perfetto
/// (ui.perfetto.dev) and chrome://tracing open. Recorded, each on the track of the thread that
/// runs it: tracing (jit, make_jaxpr), compiling (each pass, LLVM's optimization and code
/// generation, loading), each call of a compiled program and each of its kernels, GEMMs, the
/// copy engines' copies and the devices' waits for them, collectives (on the device threads and
/// the communicator's thread), and TraceAnnotation scopes. Everything that runs while the trace
/// is active is recorded, also programs compiled before it started. The file is created (or
/// truncated) here and written at stop_trace. Thread-safe.
/// Throws ValueError when a trace is already being recorded, and IOError naming `path` when the
/// file cannot be opened for writing (then nothing is recorded); at `loc`.
void start_trace(const std::string& path, std::source_location loc = std::source_location::current());

/// Stops the trace and writes it to the path given to start_trace. Events still running (a copy
/// on the emulated link, a kernel on another thread) are left out; so are events past the first
/// 4,000,000 (their count is written as "dropped_events" in the file's "otherData").
/// Throws ValueError when no trace is being recorded, and IOError naming the path when writing
/// fails (the trace is stopped all the same); at `loc`.
void stop_trace(std::source_location loc = std::source_location::current());

/// Whether a trace is being recorded.
bool is_tracing();

/// jax.profiler.TraceAnnotation: the scope from construction to destruction is one event named
/// `name` (category "user") on the calling thread's track, when a trace is active at
/// construction; otherwise it costs one atomic load. Not copyable.
class TraceAnnotation {
 public:
  explicit TraceAnnotation(std::string_view name);
  ~TraceAnnotation();
  TraceAnnotation(const TraceAnnotation&) = delete;
  TraceAnnotation& operator=(const TraceAnnotation&) = delete;

 private:
  int64_t begin_ns_ = -1;
  std::string name_;
};

namespace detail {

/// For the executors: the kernel sites (LoadedExecutable::kernel_sites) of the program the calling
/// thread runs, which mj_rt_kernel_begin/end name their events from, for the life of the scope
/// (the previous ones are restored after). Costs two thread-local stores.
class KernelSitesScope {
 public:
  explicit KernelSitesScope(const std::vector<KernelSite>* sites) noexcept;
  ~KernelSitesScope();
  KernelSitesScope(const KernelSitesScope&) = delete;
  KernelSitesScope& operator=(const KernelSitesScope&) = delete;

 private:
  const std::vector<KernelSite>* previous_;
};

}  // namespace detail

}  // namespace minijax::profiler

extern "C" {
/// Called by compiled code before kernel call site `site` of its program (every fusion kernel,
/// whether or not a trace is active; it then returns after one atomic load).
void mj_rt_kernel_begin(int32_t site);
/// Called after kernel call site `site`: records the kernel's event (named from the calling
/// thread's KernelSitesScope, "kernel <site>" outside one) when its begin was recorded.
void mj_rt_kernel_end(int32_t site);
}
