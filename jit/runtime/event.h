// minijax runtime events: one-shot completion signals that carry an error (set, set_error, wait).
// Owns Event (shared state, condition-variable waits, ready callbacks).
#pragma once
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace minijax {

/// A one-shot completion signal shared by its copies (copies of an Event refer to one state).
/// It completes once, either successfully (set) or with an error (set_error); the first
/// completion wins and later set/set_error calls are ignored. Waiting blocks on a condition
/// variable (never spins). wait() rethrows the error. core/buffer.h's ReadyEvent (a buffer's
/// completion, which core code must see) is the same signal without callbacks; merging the two
/// is left open (docs/runtime.md). Thread-safe.
class Event {
 public:
  /// A fresh, pending event.
  Event();
  /// An event that has already completed successfully.
  static Event already_set();
  /// An event that has already failed with `err` (must not be null).
  static Event failed_with(std::exception_ptr err);

  /// Completes the event successfully (no-op if already completed); wakes every waiter and runs
  /// the on_ready callbacks (on this thread, after the state is published).
  void set() const;
  /// Completes the event successfully as of time `at`: waiters return, and ready() is true, from
  /// `at` on (a waiter sleeps until then, on a timed condition wait); the on_ready callbacks run
  /// now. The copy engines' emulated link uses it: a copy's bytes are in place at once, the link
  /// delivers them at `at`.
  void set_at(std::chrono::steady_clock::time_point at) const;
  /// Completes the event with `err` (no-op if already completed or if err is null).
  void set_error(std::exception_ptr err) const;
  /// Blocks until completed; rethrows the error of a failed event.
  void wait() const;
  /// Whether it has completed (successfully or not); never blocks on completion.
  bool ready() const;
  /// Whether it has completed with an error.
  bool failed() const;
  /// Runs `cb` once the event completes: at once on this thread if it already has, else on the
  /// thread that completes it. Callbacks must not throw (an exception escaping one terminates).
  void on_ready(std::function<void()> cb) const;

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::chrono::steady_clock::time_point at{};  // successful completion observed from then on
    std::exception_ptr error;
    std::vector<std::function<void()>> callbacks;
  };
  void complete(std::exception_ptr err, std::chrono::steady_clock::time_point at = {}) const;
  std::shared_ptr<State> s_;
};

}  // namespace minijax
