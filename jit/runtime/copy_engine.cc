// minijax copy engines: the FIFO thread of each device's engine, strided copies, the emulated
// link's timed waits, and the process's engines (one per device, created on first use).
#include "jit/runtime/copy_engine.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "core/config.h"
#include "core/device.h"
#include "core/errors.h"
#include "core/profiler_hooks.h"

namespace minijax {

const char* copy_op_name(CopyOp op) {
  switch (op) {
    case CopyOp::copy: return "copy";
    case CopyOp::copy_start: return "copy_start";
    case CopyOp::copy_slice_start: return "copy_slice_start";
    case CopyOp::copy_update_start: return "copy_update_start";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

struct Job {
  CopyDescriptor d;
  std::vector<Event> after;
  std::vector<std::shared_ptr<const void>> keep;
  Event done;
  int64_t enqueued_ns = 0;  // for the trace (set only while tracing)
};

const char* kind_name(int32_t k) { return k >= 0 && k <= 2 ? memory_kind_name(MemoryKind(k)) : "?"; }

// A copy's trace event: on the link from `link_begin` (its start, or when the link became free
// after the copies before it) until `done`; its memcpy ran from `start` to `copied`.
void trace_copy(const Job& job, int device, Clock::time_point start, Clock::time_point copied,
                Clock::time_point link_begin, Clock::time_point done) {
  namespace pd = profiler::detail;
  const CopyDescriptor& d = job.d;
  pd::Args a;
  a.add("device", device).add("bytes", d.bytes()).add("chunks", d.count).add("chunk_bytes", d.chunk_bytes);
  a.add("src_kind", kind_name(d.src_kind)).add("dst_kind", kind_name(d.dst_kind));
  a.add("memcpy_us", std::chrono::duration<double, std::micro>(copied - start).count());
  if (job.enqueued_ns > 0) a.add("queued_us", double(pd::to_ns(start) - job.enqueued_ns) * 1e-3);
  a.add("link", config().host_link_bytes_per_s > 0);
  std::string name = std::string(copy_op_name(d.op)) + " " + kind_name(d.src_kind) + " -> " +
                     kind_name(d.dst_kind);
  pd::record("copy", std::move(name), pd::to_ns(link_begin), pd::to_ns(done), a.take());
}

void copy_chunks(const CopyDescriptor& d) {
  const auto* src = static_cast<const std::byte*>(d.src);
  auto* dst = static_cast<std::byte*>(d.dst);
  if (d.count == 1 || (d.src_stride == d.chunk_bytes && d.dst_stride == d.chunk_bytes)) {
    if (d.bytes() > 0) std::memcpy(dst, src, size_t(d.bytes()));
    return;
  }
  for (int64_t k = 0; k < d.count; ++k)
    std::memcpy(dst + k * d.dst_stride, src + k * d.src_stride, size_t(d.chunk_bytes));
}

}  // namespace

struct CopyEngine::Impl {
  int device_id = 0;
  mutable std::mutex mu;
  std::condition_variable cv;       // work arrived, or stop
  std::condition_variable idle_cv;  // the queue drained
  std::deque<Job> jobs;
  bool running = false, stop = false;
  CopyEngineStats stats;
  std::thread thread;

  // The emulated link, one per engine, moving copies in order: a copy of n bytes that starts
  // at t leaves the link at max(t, when the link is free) + n / B. The memcpy has already put
  // the bytes in place; the copy's event completes as of that time (Event::set_at), so a waiter
  // sleeps until then on its own thread and the engine goes on with the next copy's memcpy at
  // once: the link's timing does not depend on when this thread is next scheduled.
  Clock::time_point link_free{};

  Clock::time_point link_deadline(int64_t bytes, Clock::time_point start, Clock::time_point copied,
                                  Clock::time_point* link_begin) {
    const double bw = config().host_link_bytes_per_s;
    *link_begin = start;
    if (bw <= 0 || bytes <= 0) return copied;
    const auto begin = std::max(start, link_free);
    *link_begin = begin;
    link_free = std::max(copied, begin + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(double(bytes) / bw)));
    return link_free;
  }

  void run_one(Job& job) {
    std::exception_ptr err;
    for (const Event& e : job.after) {
      try {
        e.wait();
      } catch (...) {
        err = std::current_exception();
        break;
      }
    }
    double copied = 0, linked = 0;
    Clock::time_point deadline{};
    if (!err) {
      const auto start = Clock::now();
      copy_chunks(job.d);
      const auto end = Clock::now();
      copied = std::chrono::duration<double>(end - start).count();
      Clock::time_point link_begin;
      deadline = link_deadline(job.d.bytes(), start, end, &link_begin);
      linked = std::chrono::duration<double>(deadline - end).count();
      if (profiler::detail::tracing()) trace_copy(job, device_id, start, end, link_begin, deadline);
    }
    {
      std::lock_guard<std::mutex> g(mu);
      if (!err) {
        stats.copies += 1;
        stats.bytes += job.d.bytes();
        stats.copy_seconds += copied;
        stats.link_wait_seconds += linked;
      }
    }
    job.keep.clear();
    if (err) job.done.set_error(err);
    else job.done.set_at(deadline);
  }

  void loop() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> g(mu);
        running = false;
        if (jobs.empty()) idle_cv.notify_all();
        cv.wait(g, [&] { return stop || !jobs.empty(); });
        if (jobs.empty()) return;
        job = std::move(jobs.front());
        jobs.pop_front();
        running = true;
      }
      run_one(job);
    }
  }
};

CopyEngine::CopyEngine(int device_id) : device_id_(device_id), impl_(std::make_unique<Impl>()) {
  impl_->device_id = device_id;
  impl_->thread = std::thread([this] {
    profiler::detail::name_this_thread("copy engine " + std::to_string(device_id_), 11 + 2 * device_id_);
    impl_->loop();
  });
}

CopyEngine::~CopyEngine() {
  std::deque<Job> left;
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    impl_->stop = true;
    left.swap(impl_->jobs);
  }
  impl_->cv.notify_all();
  impl_->thread.join();
  auto err = std::make_exception_ptr(
      ValueError("copy engine of device " + std::to_string(device_id_) + " destroyed with the copy queued"));
  for (Job& j : left) j.done.set_error(err);
}

Event CopyEngine::enqueue(const CopyDescriptor& d, std::vector<Event> after,
                          std::vector<std::shared_ptr<const void>> keep) {
  const std::string what = "copy engine of device " + std::to_string(device_id_) + ": a copy of " +
                           std::to_string(d.count) + " x " + std::to_string(d.chunk_bytes) + " B";
  if (d.chunk_bytes < 0 || d.count < 0) throw ValueError(what + " has a negative size or count");
  if (d.bytes() > 0 && (!d.src || !d.dst)) throw ValueError(what + " has a null source or destination");
  Job job{d, std::move(after), std::move(keep), Event(),
          profiler::detail::tracing() ? profiler::detail::now_ns() : 0};
  Event done = job.done;
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    impl_->jobs.push_back(std::move(job));
  }
  impl_->cv.notify_one();
  return done;
}

void CopyEngine::synchronize() {
  std::unique_lock<std::mutex> g(impl_->mu);
  impl_->idle_cv.wait(g, [&] { return impl_->jobs.empty() && !impl_->running; });
  // The last copies may still be on the emulated link: wait until it is free.
  impl_->idle_cv.wait_until(g, impl_->link_free, [] { return false; });
}

CopyEngineStats CopyEngine::stats() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  return impl_->stats;
}

void CopyEngine::wait_for(const Event& copy) {
  if (copy.ready()) return copy.wait();
  const auto t0 = Clock::now();
  // Counts the wait (and records it in an active trace) however it ends.
  struct Count {
    Impl& impl;
    int device;
    Clock::time_point t0;
    ~Count() {
      const auto t1 = Clock::now();
      {
        std::lock_guard<std::mutex> g(impl.mu);
        impl.stats.device_waits += 1;
        impl.stats.device_wait_seconds += std::chrono::duration<double>(t1 - t0).count();
      }
      namespace pd = profiler::detail;
      if (!pd::tracing()) return;
      try {
        pd::record("copy_wait", "copy_done wait", pd::to_ns(t0), pd::to_ns(t1),
                   pd::Args().add("device", device).take());
      } catch (...) {  // an event lost to a failed allocation
      }
    }
  } count{*impl_, device_id_, t0};
  copy.wait();
}

CopyEngine& copy_engine(int device_id) {
  // Leaked on purpose, as the compute queues: engines outlive static destructors.
  static std::mutex mu;
  static auto* engines = new std::vector<std::unique_ptr<CopyEngine>>();
  const int n = num_devices();
  if (device_id < 0 || device_id >= n)
    throw ValueError("copy_engine: device " + std::to_string(device_id) + " does not exist (there are " +
                     std::to_string(n) + " devices)");
  std::lock_guard<std::mutex> g(mu);
  if (engines->size() < size_t(n)) engines->resize(size_t(n));
  auto& e = (*engines)[size_t(device_id)];
  if (!e) e = std::make_unique<CopyEngine>(device_id);
  return *e;
}

}  // namespace minijax
