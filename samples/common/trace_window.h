// minijax samples: the `--trace FILE` window the samples share — a profiler trace of the first
// training steps (the first step's tracing and compilation included), written when they are done.
#pragma once
#include <cstdint>
#include <string>

namespace minijax::samples {

/// A profiler trace (mj::profiler::start_trace) of training steps [0, steps): started by the
/// constructor, stopped and written by after_step(steps - 1), or by finish() when the run has
/// fewer steps. With an empty path it does nothing. Throws what start_trace and stop_trace throw
/// (IOError naming the file, ValueError when another trace is running).
class TraceWindow {
 public:
  /// Default window: 5 steps (the first one traces and compiles the step function).
  static constexpr int64_t kDefaultSteps = 5;

  TraceWindow(std::string path, int64_t steps);
  /// Stops an unfinished trace without throwing (finish() reports errors).
  ~TraceWindow();
  TraceWindow(const TraceWindow&) = delete;
  TraceWindow& operator=(const TraceWindow&) = delete;

  /// Call once step `step` (counted from 0) has completed (its loss read back).
  void after_step(int64_t step);
  /// Stops and writes the trace if it is still recording; prints where it was written.
  void finish();
  bool recording() const { return recording_; }

 private:
  std::string path_;
  int64_t steps_ = 0, done_ = 0;
  bool recording_ = false;
};

}  // namespace minijax::samples
