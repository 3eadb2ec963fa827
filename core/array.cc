// minijax Array handle.
// Owns concrete access (with ConcretizationError for staged values); printing is in array_print.cc.
#include "core/array.h"

#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "core/trace.h"

namespace minijax {

ConcreteArray::ConcreteArray(ShapedArray aval, std::shared_ptr<Buffer> buffer)
    : aval_(std::move(aval)), buffers_{std::move(buffer)} {}

std::optional<Array> Tracer::concrete_value() const { return std::nullopt; }

std::string Tracer::describe() const {
  return "a traced value " + aval().str() + " of " + trace_->name() +
         " (under jit/make_jaxpr or inside a scan/cond/while/checkpoint body, values are "
         "abstract: use lax control flow (cond, where) instead of C++ branching, or mark the "
         "argument static)";
}

Array Array::allocate(const ShapedArray& aval) {
  auto buf = std::make_shared<Buffer>(size_t(checked_nbytes(aval.shape, aval.dtype)), aval.memory_kind);
  return Array(std::make_shared<ConcreteArray>(aval, std::move(buf)));
}

Array Array::from_buffer(const ShapedArray& aval, std::shared_ptr<Buffer> buffer) {
  return Array(std::make_shared<ConcreteArray>(aval, std::move(buffer)));
}

const ShapedArray& Array::aval() const {
  if (!impl_) throw ValueError("use of an empty (default-constructed) Array");
  return impl_->aval();
}

int64_t Array::dim(int64_t i, std::source_location loc) const {
  int64_t n = ndim();
  if (i < -n || i >= n)
    throw ShapeError("axis " + std::to_string(i) + " out of range for " + aval().str(), loc);
  return shape()[size_t(i < 0 ? i + n : i)];
}

Array Array::concrete(std::source_location loc, const char* what) const {
  if (!impl_) throw ValueError("use of an empty (default-constructed) Array", loc);
  Array cur = *this;
  while (auto* tr = cur.tracer()) {
    auto c = tr->concrete_value();
    if (!c)
      throw ConcretizationError(std::string(what) + " was needed, but got " + tr->describe(), loc);
    cur = *c;
  }
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
    if constexpr (std::is_same_v<T, bfloat16>)
      return double(float(*static_cast<const T*>(p)));
    else
      return static_cast<double>(*static_cast<const T*>(p));
  });
}

Array::operator bool() const {
  return item_f64(std::source_location::current()) != 0.0;
}

// Array::str() (numpy-style printing) lives in core/array_print.cc.

std::ostream& operator<<(std::ostream& os, const Array& a) { return os << a.str(); }

}  // namespace minijax
