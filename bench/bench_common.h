// minijax bench: what every benchmark program shares — the environment record (date, CPU, cores,
// load average, OpenMP policy, git commit), timing statistics, the floors (dnnl_sgemm, memcpy), JSON.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/jaxpr.h"
#include "jit/passes/dot_layout.h"

namespace mjbench {

using clock_type = std::chrono::steady_clock;

/// Seconds since t0 (steady clock).
double seconds_since(clock_type::time_point t0);

/// CPU time of the calling thread in seconds (CLOCK_THREAD_CPUTIME_ID).
double thread_cpu_seconds();

/// The first three fields of /proc/loadavg ("0.52 0.61 0.70"), or "unknown".
std::string loadavg();

/// Summary of a sample of times in seconds: median, min, max, 10th and 90th percentile (nearest
/// rank), and how many there were. An empty sample gives zeros.
struct Stats {
  double median = 0, min = 0, max = 0, p10 = 0, p90 = 0;
  size_t n = 0;
};
Stats stats(std::vector<double> seconds);

/// Runs `f` `warmup` times untimed, then `reps` times, each timed on its own (steady clock);
/// returns the per-call times in seconds.
std::vector<double> time_calls(int warmup, int reps, const std::function<void()>& f);
/// Median-style statistics of each function timed interleaved: `warmup` untimed rounds, then
/// `reps` rounds in each of which every function is timed once (one call), in order; seconds.
std::vector<Stats> interleaved(const std::vector<std::function<void()>>& fns, int warmup, int reps);

/// A JSON object built field by field, printed on one line. Numbers are printed with %.6g;
/// strings are escaped (quotes, backslashes, control characters).
class Json {
 public:
  Json& num(const std::string& key, double v);
  Json& integer(const std::string& key, int64_t v);
  Json& str(const std::string& key, const std::string& v);
  Json& boolean(const std::string& key, bool v);
  /// A nested object or array given as JSON text (inserted verbatim).
  Json& raw(const std::string& key, const std::string& json);
  /// {"median_ms": .., "min_ms": .., "max_ms": .., "p10_ms": .., "p90_ms": .., "n": ..} under key.
  Json& stats_ms(const std::string& key, const Stats& s);
  std::string text() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& k);
  std::string body_;
};

/// JSON string literal of s (with the quotes).
std::string json_string(const std::string& s);

/// The environment of a run, recorded at construction (load average before) and completed by
/// add_to (load average after): date (local ISO 8601), CPU model, logical CPUs online and in this
/// process's affinity mask, OMP_WAIT_POLICY, OMP_NUM_THREADS,
/// OPENBLAS_CORETYPE, MINIJAX_BENCH_LABEL (a free-form note of the run's conditions, e.g. "other
/// core busy"; null when unset), the scheduling policy of the process ("SCHED_OTHER",
/// "SCHED_FIFO 10" under chrt), and the git commit of the source tree (MINIJAX_BENCH_GIT
/// if set, else `git rev-parse --short HEAD` in the source directory, "-dirty" when the tree has
/// uncommitted changes to tracked files; "unknown" when git is unavailable).
class Environment {
 public:
  Environment();
  /// Adds the fields (loadavg_before/after among them) under the key "env".
  void add_to(Json& j) const;

 private:
  std::string date_, load_before_;
};

/// Times a 2-thread memcpy of `bytes` bytes (each thread copies half) from one pre-faulted
/// buffer into another (both written once before timing, so no page faults are timed). The two
/// threads are the caller and one helper woken through a condition variable (it sleeps while
/// idle). Returns the per-copy times of `reps` copies after `warmup` untimed ones, in seconds.
/// Repeated copies of less than the last-level cache run from it; with `evict`, 96 MiB are
/// written before each timed copy so that src and dst come from memory (not timed).
std::vector<double> time_memcpy_2threads(size_t bytes, int warmup, int reps, bool evict = false);

/// One GEMM call of a program: C = op(A) op(B), `batch` times with batch strides, `repeat` times
/// per program run (the trip count of enclosing scans). What jit/codegen/lower/dot.cc calls, as a
/// jit/passes/dot_layout.h layout.
struct GemmCall {
  minijax::GemmLayout layout;
  int64_t repeat = 1;
  std::string where;  ///< "top level" or "scan body (length 28)" ...
};

/// The dot_general equations of `program` (the compiled program after the passes, as
/// Executable::program), nested scan bodies multiplied by their length. Equations inside while
/// loops or conds are counted once and named in `where` (trip counts unknown statically).
/// f32 dots only; ValueError for an unpacked dot (no layout).
std::vector<GemmCall> program_gemms(const minijax::Jaxpr& program);

/// JSON array of the calls: [{"m":..,"n":..,"k":..,"batch":..,"ta":..,"tb":..,"repeat":..}, ...].
std::string gemms_json(const std::vector<GemmCall>& calls);

/// Who multiplies in time_gemms: dnnl_sgemm with the library's own OpenMP threads (OMP_NUM_THREADS
/// or all CPUs), dnnl_sgemm on one thread (omp_set_num_threads(1) around the run), or
/// minijax::runtime_gemm (jit/runtime/gemm.h: what compiled code calls, oneTBB blocks by default).
enum class GemmImpl { dnnl_library_threads, dnnl_one_thread, minijax_runtime };

/// Times one run of all `calls` through `impl` on private operand buffers of the right sizes
/// (filled with small values, pre-faulted): each call batch × repeat times. Returns the per-run
/// times in seconds of `reps` runs after `warmup` untimed ones.
std::vector<double> time_gemms(const std::vector<GemmCall>& calls, int warmup, int reps,
                               GemmImpl impl = GemmImpl::dnnl_library_threads);

/// Per call of `calls`: the median ms of one call (batch × repeat products) through each GemmImpl,
/// as a JSON array [{"m":..,"n":..,"k":..,"ta":..,"tb":..,"repeat":..,"dnnl_threads_ms":..,
/// "dnnl_1thread_ms":..,"minijax_runtime_ms":..}, ...].
std::string gemm_breakdown_json(const std::vector<GemmCall>& calls, int warmup, int reps);

/// Parses "--name value" and "--flag" arguments: value("steps", 200) etc. Unknown arguments make
/// check() print usage and exit(2).
class Args {
 public:
  Args(int argc, char** argv, std::string usage);
  int integer(const std::string& name, int def);
  std::string string(const std::string& name, const std::string& def);
  bool flag(const std::string& name);
  /// The first argument not starting with "--" (a subcommand), or def.
  std::string positional(const std::string& def);
  /// Exits with the usage message if any argument was not consumed.
  void check();

 private:
  std::vector<std::string> args_;
  std::vector<bool> used_;
  std::string usage_;
};

}  // namespace mjbench
