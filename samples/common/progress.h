// minijax samples: the progress line a sample shows on a terminal while an epoch runs.
// Owns ProgressLine (steps done/total, ms/step, running loss; rewritten in place with '\r').
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace minijax::samples {

/// Whether `out` is a terminal (isatty of its descriptor); false for null, a file or a pipe.
bool is_terminal(std::FILE* out);

/// One line, `epoch 2  step 120/469  3.4 ms/step  loss 0.3821`, redrawn in place ('\r') as the
/// steps of an epoch finish, and erased before the epoch's report is printed. It writes only
/// when enabled, by default when its stream is a terminal (isatty), so a log or a pipe sees the
/// program's plain lines and nothing else. Usage: begin(epoch, steps) before an epoch's first
/// step, step(loss) after each step, end() before printing the epoch's line.
class ProgressLine {
 public:
  /// Draws on `out` when it is a terminal, at most once per 0.1 s (the last step of an epoch is
  /// always drawn).
  explicit ProgressLine(std::FILE* out = stdout);
  /// Draws on `out` when `enabled`, whatever `out` is, at most once per `min_interval_s` seconds.
  ProgressLine(std::FILE* out, bool enabled, double min_interval_s = 0.1);

  bool enabled() const { return enabled_; }
  /// Starts epoch `epoch` of `total_steps` steps: the clock, the count and the loss restart.
  void begin(int epoch, int64_t total_steps);
  /// One more step done, with its loss: the running loss is the mean of the epoch's losses so
  /// far; ms/step the time since begin() over the steps done.
  void step(double loss);
  /// Erases the line (blanks over it, then '\r'), if one is drawn.
  void end();

  /// The line's text (without '\r'): `epoch E  step D/T  M ms/step  loss L` (M with one
  /// decimal, L with four).
  static std::string text(int epoch, int64_t done, int64_t total, double ms_per_step,
                          double running_loss);

 private:
  using clock = std::chrono::steady_clock;
  void draw(const std::string& line);

  std::FILE* out_;
  bool enabled_;
  double min_interval_s_;
  int epoch_ = 0;
  int64_t total_ = 0, done_ = 0;
  double loss_sum_ = 0;
  clock::time_point start_, last_draw_;
  size_t drawn_ = 0;  ///< length of the line on screen (0: none)
};

}  // namespace minijax::samples
