// minijax Array: a cheap handle to a concrete value (device buffers) or to a tracer of some trace.
// Owns Array, ArrayImpl, ConcreteArray and the Tracer base class.
#pragma once
#include <iosfwd>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "core/aval.h"
#include "core/buffer.h"
#include "core/errors.h"

namespace minijax {

class Trace;
class Array;

/// What an Array handle points to: a concrete value or a tracer.
class ArrayImpl {
 public:
  virtual ~ArrayImpl() = default;
  virtual const ShapedArray& aval() const = 0;
  virtual bool is_tracer() const { return false; }
};

/// A concrete array: its aval and one buffer per device holding it (one device for now).
/// Layout is dense row-major.
class ConcreteArray final : public ArrayImpl {
 public:
  ConcreteArray(ShapedArray aval, std::shared_ptr<Buffer> buffer);
  const ShapedArray& aval() const override { return aval_; }
  const std::shared_ptr<Buffer>& buffer() const { return buffers_.at(0); }
  const std::vector<std::shared_ptr<Buffer>>& buffers() const { return buffers_; }

 private:
  ShapedArray aval_;
  std::vector<std::shared_ptr<Buffer>> buffers_;
};

/// Base class of the tracers of every trace (JVP, staging, batching, linearize).
class Tracer : public ArrayImpl {
 public:
  explicit Tracer(std::shared_ptr<Trace> trace) : trace_(std::move(trace)) {}
  bool is_tracer() const override { return true; }
  const std::shared_ptr<Trace>& trace() const { return trace_; }
  /// The concrete value behind this tracer when there is one (a JVP tracer over a concrete
  /// primal), otherwise nullopt (a staged value).
  virtual std::optional<Array> concrete_value() const;
  /// Why there is no concrete value, for ConcretizationError messages.
  virtual std::string describe() const;

 private:
  std::shared_ptr<Trace> trace_;
};

/// The user's array type: a shared handle, cheap to copy. A default-constructed Array is empty
/// (used internally as a symbolic zero tangent). Arithmetic operators and the numpy-style API are
/// declared in core/numpy.h.
class Array {
 public:
  Array() = default;
  explicit Array(std::shared_ptr<ArrayImpl> impl) : impl_(std::move(impl)) {}

  /// Allocates a zero-filled concrete array of the given aval.
  static Array allocate(const ShapedArray& aval);
  /// A concrete array sharing `buffer` (which must hold aval.nbytes() bytes).
  static Array from_buffer(const ShapedArray& aval, std::shared_ptr<Buffer> buffer);

  bool defined() const { return impl_ != nullptr; }
  const ShapedArray& aval() const;
  const Shape& shape() const { return aval().shape; }
  DType dtype() const { return aval().dtype; }
  bool weak_type() const { return aval().weak_type; }
  MemoryKind memory_kind() const { return aval().memory_kind; }
  int64_t ndim() const { return aval().ndim(); }
  int64_t size() const { return aval().size(); }
  /// Size of dimension i (negative i counts from the end). Throws ShapeError.
  int64_t dim(int64_t i, std::source_location loc = std::source_location::current()) const;

  bool is_tracer() const { return impl_ && impl_->is_tracer(); }
  bool is_concrete() const { return impl_ && !impl_->is_tracer(); }
  ArrayImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<ArrayImpl>& impl_ptr() const { return impl_; }
  /// The tracer (nullptr if concrete or empty).
  Tracer* tracer() const { return is_tracer() ? static_cast<Tracer*>(impl_.get()) : nullptr; }

  /// The concrete value of this array: itself, or the concrete primal under eager grad/jvp.
  /// Throws ConcretizationError for staged (jit/make_jaxpr/loop-body) values, naming `what`.
  Array concrete(std::source_location loc = std::source_location::current(),
                 const char* what = "a concrete value") const;
  /// The ConcreteArray behind concrete().
  const ConcreteArray& concrete_impl(std::source_location loc = std::source_location::current()) const;

  /// Pointer to the elements (row-major) of the concrete value. T must match dtype() exactly
  /// (TypeError otherwise). Throws ConcretizationError when traced, ValueError when donated.
  template <class T>
  const T* data(std::source_location loc = std::source_location::current()) const {
    return static_cast<const T*>(raw_data(dtype_of<T>(), loc));
  }
  /// Mutable elements; only for freshly allocated arrays nobody else shares.
  template <class T>
  T* mutable_data(std::source_location loc = std::source_location::current()) {
    return static_cast<T*>(const_cast<void*>(raw_data(dtype_of<T>(), loc)));
  }
  const void* raw_data(std::source_location loc = std::source_location::current()) const;

  /// The single element of a size-1 array converted to T (any dtype). Throws ValueError if
  /// size() != 1, ConcretizationError when traced.
  template <class T>
  T item(std::source_location loc = std::source_location::current()) const {
    return static_cast<T>(item_f64(loc));
  }
  double item_f64(std::source_location loc = std::source_location::current()) const;
  /// Truth value of a size-1 array (for `if (x > 0)`); ConcretizationError when traced.
  explicit operator bool() const;

  /// numpy-style printing: `Array([[1., 2.], [3., 4.]], dtype=float32)`; tracers print their type.
  std::string str() const;

 private:
  const void* raw_data(DType expect, std::source_location loc) const;
  std::shared_ptr<ArrayImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Array& a);

}  // namespace minijax
