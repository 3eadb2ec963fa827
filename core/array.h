// minijax Array: a cheap handle to a concrete value (device buffers) or to a tracer of some trace.
// Owns Array, ArrayImpl, ConcreteArray, the Tracer base class and the indexing handles (Index, at).
#pragma once
#include <atomic>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/aval.h"
#include "core/buffer.h"
#include "core/errors.h"
#include "core/params.h"
#include "core/shards.h"

namespace minijax {

class Trace;
class Array;
class IndexUpdateRef;
struct Index;
struct Shard;
struct Operand;  // core/numpy.h: an Array or a C++ scalar
/// What Array::sharding() returns; defined in sharding/sharded_array.h (core/ does not know
/// meshes or shardings, see docs/sharding.md "Sharded arrays and constraints").
struct ArraySharding;

/// What an Array handle points to: a concrete value or a tracer.
class ArrayImpl {
 public:
  virtual ~ArrayImpl() = default;
  virtual const ShapedArray& aval() const = 0;
  virtual bool is_tracer() const { return false; }
  virtual bool is_abstract() const { return false; }
};

/// An abstract array: an aval without a value (what mj::ShapeDtypeStruct converts to), for
/// jit(f).lower(...) on shapes alone. Reading its elements throws ValueError. `sharding` is an
/// opaque handle its creator understands (jit/jit.h: the ShapeDtypeStruct's NamedSharding).
class AbstractArray final : public ArrayImpl {
 public:
  AbstractArray(ShapedArray aval, ParamObjectPtr sharding)
      : aval_(std::move(aval)), sharding_(std::move(sharding)) {}
  const ShapedArray& aval() const override { return aval_; }
  bool is_abstract() const override { return true; }
  const ParamObjectPtr& sharding() const { return sharding_; }

 private:
  ShapedArray aval_;
  ParamObjectPtr sharding_;
};

/// A concrete array: its aval and where its elements live. Layout is dense row-major.
///
/// Either one buffer holding the whole array (unsharded), or per-device shards (sharded): each
/// a StoredShard (device id, index box, buffer of that box's elements) plus an opaque handle to
/// the sharding they follow (a ParamObject; sharding/sharded_array.h knows its type). A sharded
/// array has no global buffer until something reads it: buffer() then assembles it from the
/// shards, once (thread-safe), and keeps it. Every element read (raw_data, data<T>, item,
/// printing, xtensor, eager kernels) goes through buffer(), so nothing reads a sharded array's
/// value without gathering it.
class ConcreteArray final : public ArrayImpl {
 public:
  ConcreteArray(ShapedArray aval, std::shared_ptr<Buffer> buffer);
  /// A sharded array. Throws ValueError when `shards` is empty, a shard's box does not lie in
  /// aval.shape or its buffer's size differs from its box's bytes. Coverage of the whole array
  /// by the boxes is the caller's contract (make_sharded_array checks it against the sharding).
  ConcreteArray(ShapedArray aval, std::vector<StoredShard> shards, ParamObjectPtr sharding);
  const ShapedArray& aval() const override { return aval_; }
  /// The global buffer (assembled from the shards on first use when sharded), once its bytes are
  /// written: waits for the buffer's ready event (every shard's, when sharded) and rethrows the
  /// error of the computation that failed to write them. ValueError for a sharded array whose
  /// shards were donated.
  const std::shared_ptr<Buffer>& buffer() const;
  /// The global buffer as a one-element list (assembled on first use when sharded); waits as
  /// buffer() does.
  const std::vector<std::shared_ptr<Buffer>>& buffers() const;
  /// An unsharded array's buffer without waiting for its ready event (an executor ordering its
  /// reads by the event itself). Null for a sharded array.
  std::shared_ptr<Buffer> buffer_no_wait() const { return shards_.empty() ? buffers_.front() : nullptr; }
  bool is_sharded() const { return !shards_.empty(); }
  /// The per-device shards (empty when unsharded); their buffers may still be pending (wait on
  /// each one's ready() before reading its bytes).
  const std::vector<StoredShard>& shards() const { return shards_; }
  /// The sharding handle given at construction (null when unsharded).
  const ParamObjectPtr& sharding() const { return sharding_; }
  /// Whether the shards' boxes cover every element (false for an array spanning devices of
  /// other processes, of which this process holds only its own shards).
  bool covers_all() const { return covers_all_; }
  /// Whether the global buffer exists (always for unsharded arrays; for sharded ones once read).
  bool is_gathered() const;

 private:
  ShapedArray aval_;
  mutable std::vector<std::shared_ptr<Buffer>> buffers_;
  std::vector<StoredShard> shards_;
  ParamObjectPtr sharding_;
  bool covers_all_ = true;
  // Guards the gather (a mutex and a flag, not std::call_once: a gather that throws, e.g.
  // RESOURCE_EXHAUSTED, must leave the next read free to try again, and ThreadSanitizer's
  // pthread_once never releases a once whose function threw).
  mutable std::mutex gather_mu_;
  mutable std::atomic<bool> gathered_{false};
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

  /// Allocates a zero-filled concrete array of the given aval (on device 0, in aval's memory
  /// kind). Zero-filled always: callers that accumulate into it or leave elements unwritten rely
  /// on that. ResourceExhaustedError past a configured memory limit.
  static Array allocate(const ShapedArray& aval);
  /// Allocates a concrete array of the given aval whose elements are undefined (not zero-filled;
  /// the memory may be a recycled block): only for writers that store every element before any
  /// is read, such as the eager kernels' outputs. Otherwise as allocate().
  static Array empty(const ShapedArray& aval);
  /// A concrete array sharing `buffer` (which must hold aval.nbytes() bytes: ValueError for a
  /// null or smaller buffer).
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
  /// A value in memory (not a tracer, not abstract).
  bool is_concrete() const { return impl_ && !impl_->is_tracer() && !impl_->is_abstract(); }
  /// An aval without a value (AbstractArray, from mj::ShapeDtypeStruct).
  bool is_abstract() const { return impl_ && impl_->is_abstract(); }
  ArrayImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<ArrayImpl>& impl_ptr() const { return impl_; }
  /// The tracer (nullptr if concrete or empty).
  Tracer* tracer() const { return is_tracer() ? static_cast<Tracer*>(impl_.get()) : nullptr; }

  /// The concrete value of this array: itself, or the concrete primal under eager grad/jvp.
  /// Throws ConcretizationError for staged (jit/make_jaxpr/loop-body) values, naming `what`, and
  /// ValueError for an abstract array (no value).
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

  /// `x[i]`: the element (rank 1) or row (rank > 1) at index `i` of the leading dim, as numpy
  /// and JAX read it: shape x.shape[1:], x's dtype and memory kind. A C++ integer (or a concrete
  /// rank-0 Array) is static: negative counts from the end, and outside [-n, n) throws IndexError
  /// naming the index, the dim's size and the call site; it stages `slice` + `squeeze`. A traced
  /// rank-0 integer Array is dynamic (JAX's `x[i]` with traced `i`): negative counts from the
  /// end, then out-of-range clamps into [0, n - 1], as XLA's dynamic_slice; it stages
  /// `dynamic_slice` + `squeeze`. IndexError for a rank-0 `x`; TypeError for a non-integer Array
  /// index; ShapeError for an Array index of rank > 0 (use mj::take for many rows).
  Array operator[](const Index& i) const;
  /// `x.at(i)`: JAX's `x.at[i]`, for functional updates and reads of row `i` (IndexUpdateRef).
  /// Checks `i` as operator[] does (same errors).
  IndexUpdateRef at(const Index& i) const;

  /// numpy-style printing: `Array([[1., 2.], [3., 4.]], dtype=float32)`; tracers print their type.
  /// A sharded array prints its global value (gathered).
  std::string str() const;

  /// Whether this is a concrete array held as per-device shards (device_put to a sharding, or a
  /// jit output). Tracers are not sharded arrays (false).
  bool is_sharded() const;
  /// JAX's `x.is_ready()`: whether the computation writing this array has completed (or failed:
  /// reading it then rethrows the error); never blocks. Eager arrays are always ready; a jit
  /// output is ready once its program has run (every shard's, when sharded). Throws
  /// ConcretizationError for staged values.
  bool is_ready(std::source_location loc = std::source_location::current()) const;
  /// JAX's `x.sharding`: the NamedSharding (or the Shardy Sharding when PartitionSpec cannot
  /// express it) the array is laid out with; an unsharded array reports a fully replicated
  /// sharding on a one-device, zero-axis mesh of the device holding it (JAX's
  /// SingleDeviceSharding). Include sharding/sharded_array.h to use it (defined there).
  /// Throws ConcretizationError for staged values.
  ArraySharding sharding(std::source_location loc = std::source_location::current()) const;
  /// JAX's `x.is_fully_addressable`: whether every device of the array's sharding is driven by
  /// this process (always true in a run of one process, and for unsharded arrays). An array that
  /// is not can still be read when this process's shards cover it (replicated over processes);
  /// otherwise reading it throws ValueError naming mj::multihost_utils::process_allgather.
  /// Defined in sharding/sharded_array.cc. ConcretizationError for staged values.
  bool is_fully_addressable(std::source_location loc = std::source_location::current()) const;
  /// JAX's `x.addressable_shards`: per device (mesh order), its id, its index (per dim
  /// [start, stop)) and its data as an ordinary unsharded Array of the box's shape (sharing the
  /// shard's buffer, no copy). An unsharded array has one shard: device of its buffer, the whole
  /// index, itself. Throws ConcretizationError for staged values.
  std::vector<Shard> addressable_shards(std::source_location loc = std::source_location::current()) const;

 private:
  const void* raw_data(DType expect, std::source_location loc) const;
  std::shared_ptr<ArrayImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Array& a);

/// An index along an array's leading dim, as `x[i]` and `x.at(i)` take it: a C++ integer (a
/// static index: bounds-checked, negative counts from the end) or a rank-0 integer Array (a
/// concrete one is read and treated as a C++ integer; a traced one is a dynamic index, as JAX's
/// `x[i]` with a traced `i`). Converting to an Index records the caller's call site, which
/// indexing errors name (as mj::Operand does for operators). A float or bool does not convert.
struct Index {
  int64_t value = 0;  ///< the C++ integer (when `array` is undefined)
  Array array;        ///< the Array index; undefined for a C++ integer
  std::source_location loc;

  template <class T>
    requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
  Index(T i, std::source_location l = std::source_location::current())
      : value(static_cast<int64_t>(i)), loc(l) {}
  Index(const Array& a, std::source_location l = std::source_location::current()) : array(a), loc(l) {}
};

/// What `x.at(i)` returns: JAX's `x.at[i]` (its _IndexUpdateRef) for an index along the leading
/// dim. Each method returns a new array and leaves `x` unchanged; all are differentiable (get()
/// lowers to slice or dynamic_slice, the updates to lax::scatter, scatter_add, scatter_mul,
/// scatter_min and scatter_max with one index, unique and sorted). A static index was
/// bounds-checked by at(); for a traced index, as JAX does, get() clamps into range and the
/// updates drop an out-of-range update (x is returned unchanged: mode FILL_OR_DROP).
class IndexUpdateRef {
 public:
  /// x[i] (JAX's `x.at[i].get()`): shape x.shape[1:], x's dtype.
  Array get(std::source_location loc = std::source_location::current()) const;
  /// x with row i replaced by `v` (JAX's `x.at[i].set(v)`): `v` (an Array or a C++ scalar) is
  /// broadcast to x.shape[1:] and converted to x's dtype (as JAX converts a scatter's updates).
  /// ShapeError (naming the shapes and the call site) when `v` does not broadcast to x.shape[1:].
  Array set(const Operand& v) const;
  /// x with `v` added to row i (JAX's `x.at[i].add(v)`); `v` as for set().
  Array add(const Operand& v) const;
  /// x with row i multiplied by `v` (JAX's `x.at[i].multiply(v)`); `v` as for set().
  Array multiply(const Operand& v) const;
  /// x with row i replaced by its elementwise minimum with `v` (JAX's `x.at[i].min(v)`).
  Array min(const Operand& v) const;
  /// x with row i replaced by its elementwise maximum with `v` (JAX's `x.at[i].max(v)`).
  Array max(const Operand& v) const;

 private:
  friend class Array;
  IndexUpdateRef(Array x, Index i) : x_(std::move(x)), i_(std::move(i)) {}
  Array x_;
  Index i_;
};

/// One device's piece of a concrete array, as JAX's jax.Shard: `device` (virtual device id),
/// `index` (per dim the [start, stop) of global indices held) and `data` (the elements of that
/// box, an unsharded Array of shape stop - start).
struct Shard {
  int device = 0;
  std::vector<std::pair<int64_t, int64_t>> index;
  Array data;
};

}  // namespace minijax
