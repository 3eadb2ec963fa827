// minijax array constructors: array, scalar, zeros/ones/full(_like), arange, eye.
// Owns building concrete arrays directly (Array::empty + fill); staging lifts them as constants.
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <string>

#include "core/defined_arg.h"
#include "core/numpy.h"

namespace minijax {

namespace {

/// v converted to element type T as numpy's astype does for in-range values: bools test != 0,
/// integers truncate toward zero (NaN -> 0; out-of-range values wrap modulo 2^32), bf16 rounds
/// to nearest even through f32.
template <class T>
T convert_value(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return bfloat16(float(v));
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    double t = std::trunc(v);
    // Wrap modulo 2^32 (two's complement), as a C cast through int64 does for |v| < 2^63.
    if (std::fabs(t) >= 9.2e18) return T(0);
    return static_cast<T>(static_cast<uint32_t>(static_cast<uint64_t>(static_cast<int64_t>(t))));
  } else {
    return static_cast<T>(v);
  }
}

void check_shape(const Shape& shape, const char* fn, SL loc) {
  for (int64_t d : shape)
    if (d < 0)
      throw ValueError(std::string(fn) + ": negative dimension in shape " + shape_str(shape), loc);
  try {
    checked_nbytes(shape, DType::f64, loc);
  } catch (const ValueError& e) {
    throw ValueError(std::string(fn) + ": " + e.message(), loc);
  }
}

void check_value_dtype(DType dtype, const char* fn, SL loc) {
  if (dtype == DType::float0 || dtype == DType::token)
    throw TypeError(std::string(fn) + ": cannot fill an array of dtype " + dtype_name(dtype), loc);
}

/// A concrete array of aval `av` with element i = value_at(i). An allocation beyond a memory
/// limit is a ResourceExhaustedError naming `fn` at the user's `loc`.
template <class F>
Array build(const ShapedArray& av, F&& value_at, const char* fn, SL loc) {
  Array out;
  try {
    out = Array::empty(av);
  } catch (const ResourceExhaustedError& e) {
    throw ResourceExhaustedError(std::string(fn) + ": " + e.message(), loc);
  }
  int64_t n = av.size();
  if (n == 0) return out;
  dispatch_dtype(av.dtype, [&]<class T>() {
    T* p = out.mutable_data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = convert_value<T>(value_at(i));
  });
  return out;
}

Array filled(const Shape& shape, double value, DType dtype, bool weak, MemoryKind kind,
             const char* fn, SL loc) {
  check_shape(shape, fn, loc);
  ShapedArray av{shape, dtype, weak, kind};
  if (dtype == DType::float0 && value == 0.0) return Array::allocate(av);  // zero-size elements
  check_value_dtype(dtype, fn, loc);
  return build(av, [&](int64_t) { return value; }, fn, loc);
}

}  // namespace

namespace detail {

namespace {

/// "[1][2]": the position of row-major element `flat` in `shape` (or "[flat]" for rank 0).
std::string position(int64_t flat, const Shape& shape) {
  if (shape.empty()) return "[" + std::to_string(flat) + "]";
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t n = shape[d] > 0 ? shape[d] : 1;
    idx[d] = flat % n;
    flat /= n;
  }
  std::string s;
  for (int64_t i : idx) s += "[" + std::to_string(i) + "]";
  return s;
}

/// The dtype JAX gives a literal of these numbers with 64-bit types off.
DType inferred_dtype(const std::vector<LiteralNumber>& values) {
  using K = LiteralNumber::Kind;
  bool any_float = false, any_signed = false, any_unsigned = false, any = false;
  for (const LiteralNumber& x : values) {
    any = true;
    any_float |= x.kind == K::floating;
    any_signed |= x.kind == K::signed_int;
    any_unsigned |= x.kind == K::unsigned_int;
  }
  if (!any || any_float) return DType::f32;
  if (any_signed) return DType::i32;
  if (any_unsigned) return DType::u32;
  return DType::bool_;
}

/// x as a double for the constructor; ValueError when x is an integer outside an integer
/// dtype's range (i32: [-2^31, 2^31), u32: [0, 2^32)).
double checked_value(const LiteralNumber& x, DType dtype, int64_t flat, const Shape& shape, SL loc) {
  using K = LiteralNumber::Kind;
  if (x.kind == K::floating) return x.f;
  if (is_integer(dtype) && x.kind != K::boolean) {
    const bool u = dtype == DType::u32;
    const bool fits = x.kind == K::unsigned_int
                          ? x.u <= (u ? uint64_t(UINT32_MAX) : uint64_t(INT32_MAX))
                          : (u ? x.i >= 0 && x.i <= int64_t(UINT32_MAX) : x.i >= INT32_MIN && x.i <= INT32_MAX);
    if (!fits)
      throw ValueError("array: the value " + (x.kind == K::unsigned_int ? std::to_string(x.u) : std::to_string(x.i)) +
                           " at " + position(flat, shape) + " is outside the range of " + dtype_name(dtype) +
                           " (minijax has no 64-bit integers, as JAX with 64-bit types off; give a "
                           "floating dtype or values in range)",
                       loc);
  }
  return x.kind == K::unsigned_int ? double(x.u) : double(x.i);
}

}  // namespace

void LiteralCollector::open(size_t n) {
  const size_t d = path_.size();
  if (d == shape_.size()) {
    shape_.push_back(int64_t(n));
  } else if (shape_[d] != int64_t(n)) {
    std::string at, first;
    for (int64_t i : path_) at += "[" + std::to_string(i) + "]";
    for (size_t i = 0; i < d; ++i) first += "[0]";
    throw ShapeError("array: ragged nested list: the list at " + at + " has " + std::to_string(n) +
                         " elements but the one at " + first + " has " + std::to_string(shape_[d]) +
                         " (nested lists must be rectangular)",
                     loc_);
  }
  path_.push_back(0);
}

void LiteralCollector::close() {
  path_.pop_back();
  if (!path_.empty()) ++path_.back();
}

Array LiteralCollector::finish(const std::optional<Shape>& shape, std::optional<DType> dtype) const {
  const Shape& s = shape ? *shape : shape_;
  check_shape(s, "array", loc_);
  if (int64_t(values_.size()) != shape_size(s))
    throw ValueError("array: " + std::to_string(values_.size()) + " values do not fill shape " + shape_str(s) +
                         " (" + std::to_string(shape_size(s)) + " elements)",
                     loc_);
  const DType dt = dtype ? *dtype : inferred_dtype(values_);
  std::vector<double> v(values_.size());
  for (size_t k = 0; k < values_.size(); ++k) v[k] = checked_value(values_[k], dt, int64_t(k), s, loc_);
  return array(v, s, dt, loc_);
}

}  // namespace detail

Array array(std::initializer_list<detail::LiteralNumber> values, detail::LiteralSite loc) {
  return detail::array_literal(values, std::nullopt, loc.loc);
}
Array array(std::initializer_list<std::initializer_list<detail::LiteralNumber>> values, detail::LiteralSite loc) {
  return detail::array_literal(values, std::nullopt, loc.loc);
}
Array array(std::initializer_list<std::initializer_list<std::initializer_list<detail::LiteralNumber>>> values,
            detail::LiteralSite loc) {
  return detail::array_literal(values, std::nullopt, loc.loc);
}
Array array(
    std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<detail::LiteralNumber>>>>
        values,
    detail::LiteralSite loc) {
  return detail::array_literal(values, std::nullopt, loc.loc);
}

Array array(const std::vector<double>& values, const Shape& shape, DType dtype, SL loc) {
  check_shape(shape, "array", loc);
  check_value_dtype(dtype, "array", loc);
  if (int64_t(values.size()) != shape_size(shape))
    throw ValueError("array: " + std::to_string(values.size()) + " values do not fill shape " +
                         shape_str(shape) + " (" + std::to_string(shape_size(shape)) +
                         " elements)",
                     loc);
  return build(ShapedArray{shape, dtype, false, MemoryKind::device},
               [&](int64_t i) { return values[size_t(i)]; }, "array", loc);
}

Array scalar(double v, DType dtype, SL loc) {
  return filled({}, v, dtype, false, MemoryKind::device, "scalar", loc);
}

Array zeros(const Shape& shape, DType dtype, SL loc) {
  return filled(shape, 0.0, dtype, false, MemoryKind::device, "zeros", loc);
}

Array ones(const Shape& shape, DType dtype, SL loc) {
  return filled(shape, 1.0, dtype, false, MemoryKind::device, "ones", loc);
}

Array full(const Shape& shape, double value, DType dtype, SL loc) {
  return filled(shape, value, dtype, false, MemoryKind::device, "full", loc);
}

// The *_like constructors keep x's dtype, weak type and memory kind, as jax.numpy's full_like
// does when no dtype is given. Only x's aval is read, so x may be a tracer.
Array zeros_like(const Array& x, SL loc) {
  const ShapedArray& a = detail::defined_or_throw(x, "zeros_like", loc).aval();
  return filled(a.shape, 0.0, a.dtype, a.weak_type, a.memory_kind, "zeros_like", loc);
}

Array ones_like(const Array& x, SL loc) {
  const ShapedArray& a = detail::defined_or_throw(x, "ones_like", loc).aval();
  return filled(a.shape, 1.0, a.dtype, a.weak_type, a.memory_kind, "ones_like", loc);
}

Array full_like(const Array& x, double value, SL loc) {
  const ShapedArray& a = detail::defined_or_throw(x, "full_like", loc).aval();
  return filled(a.shape, value, a.dtype, a.weak_type, a.memory_kind, "full_like", loc);
}

Array arange(int64_t n, DType dtype, SL loc) {
  if (n < 0) n = 0;  // numpy: an empty range
  check_value_dtype(dtype, "arange", loc);
  return build(ShapedArray{{n}, dtype, false, MemoryKind::device},
               [](int64_t i) { return double(i); }, "arange", loc);
}

Array arange(double start, double stop, double step, DType dtype, SL loc) {
  if (step == 0.0 || std::isnan(step) || std::isnan(start) || std::isnan(stop))
    throw ValueError("arange: step must be a nonzero number and bounds must not be NaN", loc);
  check_value_dtype(dtype, "arange", loc);
  // numpy's length: ceil((stop - start) / step), at least 0.
  double len = std::ceil((stop - start) / step);
  if (!(len < 9.0e18)) {  // also catches an infinite length (inf bounds)
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", len);
    throw ValueError(std::string("arange: ") + buf + " elements do not fit in an array", loc);
  }
  int64_t n = len > 0 ? int64_t(len) : 0;
  return build(ShapedArray{{n}, dtype, false, MemoryKind::device},
               [&](int64_t i) { return start + double(i) * step; }, "arange", loc);
}

Array eye(int64_t n, DType dtype, SL loc) {
  if (n < 0) throw ValueError("eye: negative size " + std::to_string(n), loc);
  check_value_dtype(dtype, "eye", loc);
  return build(ShapedArray{{n, n}, dtype, false, MemoryKind::device},
               [n](int64_t i) { return i / n == i % n ? 1.0 : 0.0; }, "eye", loc);
}

}  // namespace minijax
