// minijax device queues: one thread per device's compute stream, a FIFO of tasks under a mutex and
// a condition variable, created on first use and kept for the life of the process.
#include "jit/runtime/device_queue.h"

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/device.h"
#include "core/errors.h"
#include "core/profiler_hooks.h"

namespace minijax {

struct DeviceQueue::Impl {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> tasks;
  bool stop = false;
  std::thread thread;

  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> g(mu);
        cv.wait(g, [&] { return stop || !tasks.empty(); });
        if (tasks.empty()) return;
        task = std::move(tasks.front());
        tasks.pop_front();
      }
      task();
    }
  }
};

DeviceQueue::DeviceQueue(int device_id) : device_id_(device_id), impl_(new Impl) {
  impl_->thread = std::thread([this] {
    profiler::detail::name_this_thread("device " + std::to_string(device_id_), 10 + 2 * device_id_);
    impl_->run();
  });
}

DeviceQueue::~DeviceQueue() {
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  delete impl_;
}

void DeviceQueue::enqueue(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    impl_->tasks.push_back(std::move(task));
  }
  impl_->cv.notify_one();
}

DeviceQueue& compute_queue(int device_id) {
  // Leaked on purpose: device threads outlive static destructors (a task may still be running
  // when main returns; the process then ends with the thread asleep or busy).
  static std::mutex mu;
  static auto* queues = new std::vector<std::unique_ptr<DeviceQueue>>();
  const int n = num_devices();
  if (device_id < 0 || device_id >= n)
    throw ValueError("device " + std::to_string(device_id) + " does not exist (there are " +
                     std::to_string(n) + " devices)");
  std::lock_guard<std::mutex> g(mu);
  if (queues->size() < size_t(n)) queues->resize(size_t(n));
  auto& q = (*queues)[size_t(device_id)];
  if (!q) q = std::make_unique<DeviceQueue>(device_id);
  return *q;
}

}  // namespace minijax
