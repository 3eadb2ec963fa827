// minijax samples: the progress line — its text, its throttled redraw and its erasure.
// Owns ProgressLine's implementation (isatty decides whether it draws at all).
#include "samples/common/progress.h"

#include <unistd.h>

namespace minijax::samples {

bool is_terminal(std::FILE* out) { return out != nullptr && ::isatty(::fileno(out)) == 1; }

ProgressLine::ProgressLine(std::FILE* out) : ProgressLine(out, is_terminal(out)) {}

ProgressLine::ProgressLine(std::FILE* out, bool enabled, double min_interval_s)
    : out_(out), enabled_(enabled && out != nullptr), min_interval_s_(min_interval_s) {}

std::string ProgressLine::text(int epoch, int64_t done, int64_t total, double ms_per_step,
                               double running_loss) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "epoch %d  step %lld/%lld  %.1f ms/step  loss %.4f", epoch,
                (long long)done, (long long)total, ms_per_step, running_loss);
  return buf;
}

void ProgressLine::begin(int epoch, int64_t total_steps) {
  epoch_ = epoch;
  total_ = total_steps;
  done_ = 0;
  loss_sum_ = 0;
  start_ = clock::now();
  last_draw_ = clock::time_point{};
}

void ProgressLine::step(double loss) {
  ++done_;
  loss_sum_ += loss;
  if (!enabled_) return;
  const auto now = clock::now();
  const bool due = done_ == 1 || done_ >= total_ ||
                   std::chrono::duration<double>(now - last_draw_).count() >= min_interval_s_;
  if (!due) return;
  last_draw_ = now;
  const double ms = 1000.0 * std::chrono::duration<double>(now - start_).count() / double(done_);
  draw(text(epoch_, done_, total_, ms, loss_sum_ / double(done_)));
}

void ProgressLine::draw(const std::string& line) {
  std::string s = "\r" + line;
  if (line.size() < drawn_) s += std::string(drawn_ - line.size(), ' ');  // cover a longer line
  std::fputs(s.c_str(), out_);
  std::fflush(out_);
  drawn_ = line.size();
}

void ProgressLine::end() {
  if (!enabled_ || drawn_ == 0) return;
  std::fputs(("\r" + std::string(drawn_, ' ') + "\r").c_str(), out_);
  std::fflush(out_);
  drawn_ = 0;
}

}  // namespace minijax::samples
