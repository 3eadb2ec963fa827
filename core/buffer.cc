// minijax buffers: raw storage of one array on one device.
// Owns aligned allocation and the ready event's synchronisation.
#include "core/buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace minijax {

ReadyEvent::ReadyEvent() : s_(std::make_shared<State>()) {}

ReadyEvent ReadyEvent::already_set() {
  ReadyEvent e;
  e.s_->ready = true;
  return e;
}

bool ReadyEvent::is_ready() const {
  std::lock_guard<std::mutex> g(s_->mu);
  return s_->ready;
}

void ReadyEvent::set() const {
  {
    std::lock_guard<std::mutex> g(s_->mu);
    s_->ready = true;
  }
  s_->cv.notify_all();
}

void ReadyEvent::wait() const {
  std::unique_lock<std::mutex> g(s_->mu);
  s_->cv.wait(g, [&] { return s_->ready; });
}

Buffer::Buffer(size_t nbytes, MemoryKind kind, int device_id)
    : nbytes_(nbytes), kind_(kind), device_id_(device_id) {
  size_t alloc = (nbytes + 63) / 64 * 64;
  if (alloc == 0) alloc = 64;
  data_ = std::aligned_alloc(64, alloc);
  if (!data_) throw std::bad_alloc();
  std::memset(data_, 0, alloc);
}

Buffer::~Buffer() { std::free(data_); }

}  // namespace minijax
