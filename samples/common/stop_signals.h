// minijax samples: SIGINT and SIGTERM end a training run cleanly (the step, a checkpoint, exit 128+sig).
// Owns the signal thread and the flag the training loops poll between steps.
#pragma once

namespace minijax::samples {

/// Makes SIGINT and SIGTERM stop requests; call it first thing in main(), before any thread
/// starts. Both signals are blocked in the calling thread, so in every thread it creates later
/// (the runtime's workers), and a thread of their own takes them with sigwait: no signal
/// interrupts a thread that runs a kernel or a system call. The first signal is only recorded;
/// the training loop polls stop_signal() between steps, finishes the step it is in, writes its
/// checkpoint (--save) and the program exits with 128 + the signal (130 for SIGINT, 143 for
/// SIGTERM), the shell's status for a process killed by it. A second SIGINT or SIGTERM — the
/// checkpoint is being written, or the user insists — calls _exit(128 + the first signal) at
/// once: the checkpoint's atomic write (a temporary renamed over the file) leaves the previous
/// checkpoint intact, and the next save removes the dead process's temporary
/// (mj::save_safetensors). A thread that existed before the call and takes a signal runs a
/// handler (sigaction) with the same rule, async-signal-safe (a lock-free atomic, _exit).
void install_stop_handlers();

/// The first SIGINT or SIGTERM received since install_stop_handlers(), or 0.
int stop_signal();

/// After a run stopped by signal `sig`: writes "stopped by SIGINT (checkpoint written)" (the
/// parenthesis when `checkpoint_written`) to stderr and returns the exit status, 128 + sig.
int report_stop(int sig, bool checkpoint_written);

/// "SIGINT", "SIGTERM", or "a signal" for another.
const char* signal_name(int sig);

}  // namespace minijax::samples
