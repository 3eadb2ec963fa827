// minijax device queues: the threads that run each virtual device's work in order (its compute
// stream), fed by the executor so that a call returns once enqueued.
#pragma once
#include <functional>

namespace minijax {

/// One device's compute stream: a thread running the tasks given to it in order. Idle threads
/// sleep on a condition variable (never spin). Tasks must not throw (an escaping exception
/// terminates); they report failures through the events they complete.
class DeviceQueue {
 public:
  explicit DeviceQueue(int device_id);
  /// Never destroyed while the process runs (the queues of compute_queue live to its end).
  ~DeviceQueue();
  DeviceQueue(const DeviceQueue&) = delete;
  DeviceQueue& operator=(const DeviceQueue&) = delete;

  /// Appends `task`; it runs after every task enqueued before it.
  void enqueue(std::function<void()> task);
  int device_id() const { return device_id_; }

  struct Impl;

 private:
  int device_id_;
  Impl* impl_;
};

/// Device `device_id`'s compute queue (its thread starts on first use). ValueError for an id
/// outside devices().
DeviceQueue& compute_queue(int device_id);

}  // namespace minijax
