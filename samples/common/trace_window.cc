// minijax samples: the `--trace FILE` window — starts the profiler trace, counts completed steps,
// stops and writes it after the window's last step (or at the end of a shorter run).
#include "samples/common/trace_window.h"

#include <cstdio>

#include <minijax/minijax.h>

namespace minijax::samples {

TraceWindow::TraceWindow(std::string path, int64_t steps) : path_(std::move(path)), steps_(steps) {
  if (path_.empty() || steps_ <= 0) return;
  mj::profiler::start_trace(path_);
  recording_ = true;
}

TraceWindow::~TraceWindow() {
  if (!recording_) return;
  try {
    mj::profiler::stop_trace();
  } catch (...) {  // a destructor reports nothing: finish() is where errors surface
  }
}

void TraceWindow::after_step(int64_t step) {
  if (!recording_) return;
  done_ = step + 1;
  if (done_ >= steps_) finish();
}

void TraceWindow::finish() {
  if (!recording_) return;
  recording_ = false;
  mj::profiler::stop_trace();
  if (done_ == 0)
    std::printf("profiler trace (no training step completed) written to %s\n", path_.c_str());
  else
    std::printf("profiler trace of the first %lld training step(s) (the first one traced and compiled) written "
                "to %s (open it in https://ui.perfetto.dev or chrome://tracing)\n",
                (long long)done_, path_.c_str());
  std::fflush(stdout);
}

}  // namespace minijax::samples
