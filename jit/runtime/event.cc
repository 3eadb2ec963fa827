// minijax runtime events: one-shot completion signals carrying an error; the waits block on a
// condition variable, the callbacks run on the completing thread.
#include "jit/runtime/event.h"

namespace minijax {

Event::Event() : s_(std::make_shared<State>()) {}

Event Event::already_set() {
  Event e;
  e.set();
  return e;
}

Event Event::failed_with(std::exception_ptr err) {
  Event e;
  e.set_error(std::move(err));
  return e;
}

void Event::complete(std::exception_ptr err, std::chrono::steady_clock::time_point at) const {
  std::vector<std::function<void()>> cbs;
  {
    std::lock_guard<std::mutex> g(s_->mu);
    if (s_->done) return;
    s_->done = true;
    s_->at = at;
    s_->error = std::move(err);
    cbs.swap(s_->callbacks);
  }
  s_->cv.notify_all();
  for (auto& cb : cbs) cb();
}

void Event::set() const { complete(nullptr); }

void Event::set_at(std::chrono::steady_clock::time_point at) const { complete(nullptr, at); }

void Event::set_error(std::exception_ptr err) const {
  if (err) complete(std::move(err));
}

void Event::wait() const {
  std::unique_lock<std::mutex> g(s_->mu);
  s_->cv.wait(g, [&] { return s_->done; });
  if (s_->error) std::rethrow_exception(s_->error);
  // Completed as of s_->at: sleep until then (nothing notifies; the timeout ends the wait).
  s_->cv.wait_until(g, s_->at, [] { return false; });
}

bool Event::ready() const {
  std::lock_guard<std::mutex> g(s_->mu);
  return s_->done && (s_->error || std::chrono::steady_clock::now() >= s_->at);
}

bool Event::failed() const {
  std::lock_guard<std::mutex> g(s_->mu);
  return s_->done && s_->error;
}

void Event::on_ready(std::function<void()> cb) const {
  {
    std::lock_guard<std::mutex> g(s_->mu);
    if (!s_->done) {
      s_->callbacks.push_back(std::move(cb));
      return;
    }
  }
  cb();
}

}  // namespace minijax
