// minijax buffers: raw storage of one array on one device.
// Owns getting and returning the bytes through allocator() and the ready event's synchronisation.
#include "core/buffer.h"

#include <cstring>

namespace minijax {

ReadyEvent::ReadyEvent() : s_(std::make_shared<State>()) {}

ReadyEvent ReadyEvent::already_set() {
  ReadyEvent e;
  e.s_->done.store(true, std::memory_order_relaxed);
  return e;
}

void ReadyEvent::set() const {
  {
    std::lock_guard<std::mutex> g(s_->mu);
    s_->done.store(true, std::memory_order_release);
  }
  s_->cv.notify_all();
}

void ReadyEvent::set_error(std::exception_ptr err) const {
  {
    std::lock_guard<std::mutex> g(s_->mu);
    if (s_->done.load(std::memory_order_relaxed)) return;
    s_->error = std::move(err);
    s_->done.store(true, std::memory_order_release);
  }
  s_->cv.notify_all();
}

void ReadyEvent::wait() const {
  if (!s_->done.load(std::memory_order_acquire)) {
    std::unique_lock<std::mutex> g(s_->mu);
    s_->cv.wait(g, [&] { return s_->done.load(std::memory_order_relaxed); });
  }
  if (s_->error) std::rethrow_exception(s_->error);
}

std::exception_ptr ReadyEvent::error() const {
  if (!is_ready()) return nullptr;
  return s_->error;
}

Buffer::Buffer(size_t nbytes, MemoryKind kind, int device_id, Init init)
    : nbytes_(nbytes), allocator_(&allocator()), kind_(kind), device_id_(device_id) {
  data_ = allocator_->allocate(nbytes, kind, device_id);
  if (init == Init::zeros && nbytes > 0) std::memset(data_, 0, nbytes);
}

Buffer::~Buffer() {
  if (data_) allocator_->deallocate(data_, nbytes_, kind_, device_id_);
}

std::shared_ptr<Buffer> Buffer::take(Buffer& from) {
  std::shared_ptr<Buffer> b(new Buffer());
  b->data_ = from.data_;
  b->nbytes_ = from.nbytes_;
  b->allocator_ = from.allocator_;
  b->kind_ = from.kind_;
  b->device_id_ = from.device_id_;
  from.data_ = nullptr;
  from.mark_donated();
  return b;
}

}  // namespace minijax
