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

Array array(std::initializer_list<float> values, SL loc) {
  std::vector<double> v(values.begin(), values.end());
  return array(v, Shape{int64_t(v.size())}, f32, loc);
}

Array array(std::initializer_list<std::initializer_list<float>> rows, SL loc) {
  std::vector<double> v;
  size_t cols = rows.size() ? rows.begin()->size() : 0;
  size_t r = 0;
  for (const auto& row : rows) {
    if (row.size() != cols)
      throw ValueError("array: row " + std::to_string(r) + " has " + std::to_string(row.size()) +
                           " elements but row 0 has " + std::to_string(cols) +
                           " (nested lists must be rectangular)",
                       loc);
    v.insert(v.end(), row.begin(), row.end());
    ++r;
  }
  return array(v, Shape{int64_t(rows.size()), int64_t(cols)}, f32, loc);
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
