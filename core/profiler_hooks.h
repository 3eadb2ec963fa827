// minijax profiler hooks: what every layer (tracing, the compile pipeline, the runtime) calls to
// record a trace event. Declared in core/ so any layer may include it; recorded by jit/runtime/profiler.cc.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace minijax::profiler::detail {

/// True while a trace is being recorded (mj::profiler::start_trace .. stop_trace). Every hook
/// checks it first; with no trace active a hook costs this one relaxed atomic load.
extern std::atomic<bool> g_tracing;
inline bool tracing() noexcept { return g_tracing.load(std::memory_order_relaxed); }

/// The steady clock in nanoseconds (the trace's time base).
inline int64_t to_ns(std::chrono::steady_clock::time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
inline int64_t now_ns() noexcept { return to_ns(std::chrono::steady_clock::now()); }

/// The members of an event's "args" object as JSON text (`"m":128,"dtype":"f32"`), built only
/// while tracing. Strings are escaped.
class Args {
 public:
  Args& add(std::string_view key, int64_t v);
  Args& add(std::string_view key, int v) { return add(key, int64_t(v)); }
  Args& add(std::string_view key, double v);
  Args& add(std::string_view key, bool v);
  Args& add(std::string_view key, std::string_view v);
  Args& add(std::string_view key, const char* v) { return add(key, std::string_view(v)); }
  /// A member whose value is JSON text given verbatim (an array, an object).
  Args& add_raw(std::string_view key, std::string_view json);
  const std::string& text() const { return s_; }
  std::string take() { return std::move(s_); }

 private:
  void key(std::string_view k);
  std::string s_;
};

/// `s` as a JSON string literal (quoted, escaped).
std::string json_string(std::string_view s);

/// Records a complete event (Chrome trace "X") on the calling thread's track: category `cat`
/// (a string literal: "tracing", "compile", "call", "kernel", "gemm", "copy", "copy_wait",
/// "collective", "user"), `name`, the interval [begin_ns, end_ns] on the steady clock (now_ns),
/// and `args` (Args::text). Dropped when no trace is active or the event began before the
/// trace. Thread-safe; never throws (an allocation failure drops the event).
void record(const char* cat, std::string name, int64_t begin_ns, int64_t end_ns, std::string args = {}) noexcept;
/// The calling thread's track id (its Chrome trace "tid"), registering it on first use.
int this_track() noexcept;
/// Names the calling thread's track ("device 3", "copy engine 3", "communicator") and orders it
/// among the tracks (lower first). Called once by each runtime thread when it starts, whether or
/// not a trace is active; threads never named are "host thread N" (the first: "host thread 0").
void name_this_thread(std::string name, int sort_index) noexcept;

/// A scope recorded as one complete event from construction to destruction, when a trace was
/// active at construction. `name` and `cat` must outlive the scope (string literals); a dynamic
/// name or args are set only when active() (so nothing is built when no trace runs).
class Scope {
 public:
  Scope(const char* cat, const char* name) noexcept : cat_(cat), name_(name), begin_(tracing() ? now_ns() : -1) {}
  ~Scope() {
    if (begin_ < 0) return;
    try {
      record(cat_, dynamic_name_.empty() ? std::string(name_) : std::move(dynamic_name_), begin_, now_ns(),
             std::move(args_));
    } catch (...) {  // the name could not be allocated: the event is lost, nothing else
    }
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  bool active() const noexcept { return begin_ >= 0; }
  void set_name(std::string n) { dynamic_name_ = std::move(n); }
  void set_args(std::string a) { args_ = std::move(a); }

 private:
  const char* cat_;
  const char* name_;
  int64_t begin_;
  std::string dynamic_name_, args_;
};

/// One kernel call site of a compiled program (the entry function calls mj_rt_kernel_begin(i)
/// and mj_rt_kernel_end(i) around kernel i): the kernel's name as Compiled::as_text prints it
/// ("fusion_3") and its event args (Args::text: shapes, bytes, how it is run).
struct KernelSite {
  std::string name;
  std::string args;
};

}  // namespace minijax::profiler::detail
