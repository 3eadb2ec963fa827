// minijax samples: SIGINT and SIGTERM end a training run cleanly (the step, a checkpoint, exit 128+sig).
// Owns the signal thread (sigwait) and the flag the training loops poll between steps.
#include "samples/common/stop_signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

namespace minijax::samples {

namespace {
std::atomic<int> g_signal{0};  // lock-free: also safe to touch from a signal handler

// The first signal is recorded; a second ends the process at once with the first one's status.
void on_signal(int sig) {
  int none = 0;
  if (!g_signal.compare_exchange_strong(none, sig)) _exit(128 + none);
}

// A thread that existed before install_stop_handlers() may still take a signal: same rule.
void handler(int sig) { on_signal(sig); }

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

void install_stop_handlers() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  const sigset_t set = stop_set();
  struct sigaction sa = {};
  sa.sa_handler = handler;
  sa.sa_mask = set;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // Blocked in this thread and so in every thread it creates later (the runtime's workers): the
  // signals go to the thread below, which takes them with sigwait, outside any handler. None
  // interrupts a thread that is running a kernel or a system call.
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) == 0) on_signal(sig);
    }
  }).detach();
}

int stop_signal() { return g_signal.load(); }

int report_stop(int sig, bool checkpoint_written) {
  std::fflush(stdout);
  std::fprintf(stderr, "stopped by %s%s\n", signal_name(sig), checkpoint_written ? " (checkpoint written)" : "");
  return 128 + sig;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

}  // namespace minijax::samples
