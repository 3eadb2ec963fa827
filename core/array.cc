// minijax Array handle.
// Owns concrete access (with ConcretizationError for staged values); printing is in array_print.cc.
#include "core/array.h"

#include <set>

#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "core/defined_arg.h"
#include "core/trace.h"

namespace minijax {

ConcreteArray::ConcreteArray(ShapedArray aval, std::shared_ptr<Buffer> buffer)
    : aval_(std::move(aval)), buffers_{std::move(buffer)} {
  gathered_ = true;
}

ConcreteArray::ConcreteArray(ShapedArray aval, std::vector<StoredShard> shards, ParamObjectPtr sharding)
    : aval_(std::move(aval)), shards_(std::move(shards)), sharding_(std::move(sharding)) {
  if (shards_.empty()) throw ValueError("a sharded " + aval_.str() + " array needs at least one shard");
  const size_t r = aval_.shape.size();
  for (auto& sh : shards_) {
    bool ok = sh.start.size() == r && sh.stop.size() == r && sh.buffer;
    for (size_t i = 0; ok && i < r; ++i)
      ok = 0 <= sh.start[i] && sh.start[i] <= sh.stop[i] && sh.stop[i] <= aval_.shape[i];
    if (!ok)
      throw ValueError("the shard of device " + std::to_string(sh.device_id) + " does not lie in the " +
                       aval_.str() + " array (or has no buffer)");
    int64_t bytes = shape_size(sh.extent()) * int64_t(itemsize(aval_.dtype));
    if (int64_t(sh.buffer->nbytes()) != bytes)
      throw ValueError("the shard of device " + std::to_string(sh.device_id) + " of a " + aval_.str() +
                       " array holds " + std::to_string(sh.buffer->nbytes()) + " bytes; its box " +
                       shape_str(sh.extent()) + " needs " + std::to_string(bytes));
  }
  // Replicas hold equal boxes and distinct boxes are disjoint (a sharding's boxes), so the shards
  // cover the array when the distinct boxes' volumes add up to it.
  std::set<std::pair<std::vector<int64_t>, std::vector<int64_t>>> boxes;
  int64_t covered = 0;
  for (auto& sh : shards_)
    if (boxes.insert({sh.start, sh.stop}).second) covered += shape_size(sh.extent());
  covers_all_ = covered == shape_size(aval_.shape);
}

const std::shared_ptr<Buffer>& ConcreteArray::buffer() const { return buffers().front(); }

const std::vector<std::shared_ptr<Buffer>>& ConcreteArray::buffers() const {
  if (shards_.empty()) {
    buffers_.front()->ready().wait();
    return buffers_;
  }
  for (auto& sh : shards_)
    if (sh.buffer->donated())
      throw ValueError("the shard of device " + std::to_string(sh.device_id) + " of this sharded " +
                       aval_.str() + " array was donated");
  if (!covers_all_)
    throw ValueError("this sharded " + aval_.str() +
                     " array spans devices of other processes, and the shards of this process (" +
                     std::to_string(shards_.size()) +
                     ") do not hold all its elements: read x.addressable_shards(), or gather it on every "
                     "process with mj::multihost_utils::process_allgather(x)");
  for (auto& sh : shards_) sh.buffer->ready().wait();
  // Gather once: copy every shard's box into one global buffer (replicas write equal values).
  if (gathered_.load(std::memory_order_acquire)) return buffers_;
  std::lock_guard<std::mutex> lock(gather_mu_);
  if (gathered_.load(std::memory_order_relaxed)) return buffers_;
  auto g = std::make_shared<Buffer>(size_t(checked_nbytes(aval_.shape, aval_.dtype)), aval_.memory_kind,
                                    shards_.front().device_id);
  std::vector<int64_t> zero(aval_.shape.size(), 0);
  for (auto& sh : shards_)
    copy_region(sh.buffer->data(), sh.start, sh.stop, g->data(), zero, aval_.shape, sh.start, sh.stop,
                itemsize(aval_.dtype));
  buffers_ = {std::move(g)};
  gathered_.store(true, std::memory_order_release);
  return buffers_;
}

bool ConcreteArray::is_gathered() const { return gathered_; }

std::optional<Array> Tracer::concrete_value() const { return std::nullopt; }

std::string Tracer::describe() const {
  return "a traced value " + aval().str() + " of " + trace_->name() +
         " (under jit/make_jaxpr or inside a scan/cond/while/checkpoint body, values are "
         "abstract: use lax control flow (cond, where) instead of C++ branching, or mark the "
         "argument static)";
}

Array Array::allocate(const ShapedArray& aval) {
  auto buf = std::make_shared<Buffer>(size_t(checked_nbytes(aval.shape, aval.dtype)), aval.memory_kind, 0,
                                      Init::zeros);
  return Array(std::make_shared<ConcreteArray>(aval, std::move(buf)));
}

Array Array::empty(const ShapedArray& aval) {
  auto buf = std::make_shared<Buffer>(size_t(checked_nbytes(aval.shape, aval.dtype)), aval.memory_kind, 0,
                                      Init::uninitialized);
  return Array(std::make_shared<ConcreteArray>(aval, std::move(buf)));
}

Array Array::from_buffer(const ShapedArray& aval, std::shared_ptr<Buffer> buffer) {
  if (!buffer) throw ValueError("Array::from_buffer: a null buffer for an array of " + aval.str());
  if (int64_t(buffer->nbytes()) < aval.nbytes())
    throw ValueError("Array::from_buffer: a buffer of " + std::to_string(buffer->nbytes()) +
                     " bytes for an array of " + aval.str() + " (" + std::to_string(aval.nbytes()) +
                     " bytes)");
  return Array(std::make_shared<ConcreteArray>(aval, std::move(buffer)));
}

const Array& detail::defined_or_throw(const Array& x, const char* fn, std::source_location loc) {
  if (!x.defined())
    throw ValueError(std::string(fn) + ": the operand is an empty (default-constructed) Array", loc);
  return x;
}

const ShapedArray& Array::aval() const {
  if (!impl_) throw ValueError("use of an empty (default-constructed) Array");
  return impl_->aval();
}

int64_t Array::dim(int64_t i, std::source_location loc) const {
  int64_t n = ndim();
  if (i < -n || i >= n)
    throw ShapeError("Array::dim: axis " + std::to_string(i) + " out of range for " + aval().str() +
                         " (rank " + std::to_string(n) + ")",
                     loc);
  return shape()[size_t(i < 0 ? i + n : i)];
}

Array Array::concrete(std::source_location loc, const char* what) const {
  if (!impl_)
    throw ValueError(std::string(what) + " was needed, but got an empty (default-constructed) Array", loc);
  Array cur = *this;
  while (auto* tr = cur.tracer()) {
    auto c = tr->concrete_value();
    if (!c) throw ConcretizationError(std::string(what) + " was needed, but got " + tr->describe(), loc);
    cur = *c;
  }
  if (cur.is_abstract())
    throw ValueError(std::string(what) + " was needed, but got an abstract " + cur.aval().str() +
                         " (a ShapeDtypeStruct has a shape and dtype, no value: use it with jit(f).lower)",
                     loc);
  return cur;
}

const ConcreteArray& Array::concrete_impl(std::source_location loc) const {
  Array c = concrete(loc);
  // The impl is kept alive by *this (directly or through the tracer's primal).
  return *static_cast<const ConcreteArray*>(c.impl());
}

const void* Array::raw_data(std::source_location loc) const {
  const ConcreteArray& c = concrete_impl(loc);
  if (c.buffer()->donated())
    throw ValueError("the buffer of this " + c.aval().str() + " array was donated", loc);
  return c.buffer()->data();
}

const void* Array::raw_data(DType expect, std::source_location loc) const {
  const ConcreteArray& c = concrete_impl(loc);
  if (c.aval().dtype != expect)
    throw TypeError(std::string("element access as ") + dtype_name(expect) + " of an array of dtype " +
                        dtype_name(c.aval().dtype),
                    loc);
  return raw_data(loc);
}

double Array::item_f64(std::source_location loc) const {
  const ConcreteArray& c = concrete_impl(loc);
  if (c.aval().size() != 1)
    throw ValueError("item() of an array of shape " + shape_str(c.aval().shape) +
                         " (only size-1 arrays convert to a scalar)",
                     loc);
  const void* p = raw_data(loc);
  return dispatch_dtype(c.aval().dtype, [&]<class T>() -> double {
    if constexpr (std::is_same_v<T, bfloat16>) return double(float(*static_cast<const T*>(p)));
    else return static_cast<double>(*static_cast<const T*>(p));
  });
}

Array::operator bool() const { return item_f64(std::source_location::current()) != 0.0; }

// Array::str() (numpy-style printing) lives in core/array_print.cc.

bool Array::is_sharded() const {
  return is_concrete() && static_cast<const ConcreteArray*>(impl_.get())->is_sharded();
}

bool Array::is_ready(std::source_location loc) const {
  Array c = concrete(loc, "whether a value is ready");
  const ConcreteArray& ci = *static_cast<const ConcreteArray*>(c.impl());
  if (!ci.is_sharded()) return ci.buffer_no_wait()->ready().is_ready();
  for (const StoredShard& s : ci.shards())
    if (!s.buffer->ready().is_ready()) return false;
  return true;
}

std::vector<Shard> Array::addressable_shards(std::source_location loc) const {
  Array c = concrete(loc, "the shards of a concrete array");
  const ConcreteArray& ci = *static_cast<const ConcreteArray*>(c.impl());
  std::vector<Shard> out;
  if (!ci.is_sharded()) {
    Shard s;
    s.device = ci.buffer()->device_id();
    for (int64_t d : ci.aval().shape) s.index.push_back({0, d});
    s.data = c;
    out.push_back(std::move(s));
    return out;
  }
  for (auto& sh : ci.shards()) {
    Shard s;
    s.device = sh.device_id;
    for (size_t i = 0; i < sh.start.size(); ++i) s.index.push_back({sh.start[i], sh.stop[i]});
    ShapedArray a = ci.aval();
    a.shape = sh.extent();
    s.data = Array::from_buffer(a, sh.buffer);
    out.push_back(std::move(s));
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, const Array& a) { return os << a.str(); }

}  // namespace minijax
