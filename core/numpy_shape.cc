// minijax numpy-level shape API: reshape (with -1), transpose, expand_dims, squeeze,
// concatenate, stack, flip, take and device_put, as jax.numpy spells them, over the lax primitives.
#include <algorithm>
#include <string>

#include "core/jaxpr.h"
#include "core/lax.h"
#include "core/numpy.h"

namespace minijax {

namespace {
std::string tuple_str(const std::vector<int64_t>& v) { return param_to_string(Param(v)); }

/// axis in [-n, n) made non-negative; ValueError naming the function otherwise.
int64_t canonical_axis(int64_t axis, int64_t n, const char* fn, const Shape& shape, SL loc) {
  if (axis < -n || axis >= n)
    throw ValueError(std::string(fn) + ": axis " + std::to_string(axis) +
                         " is out of bounds for an array of shape " + tuple_str(shape) +
                         " (rank " + std::to_string(n) + ")",
                     loc);
  return axis < 0 ? axis + n : axis;
}
}  // namespace

Array reshape(const Array& x, const Shape& shape, SL loc) {
  Shape s = shape;
  int64_t unknown = -1, known = 1;
  // A zero dimension makes the size 0 whatever the others are (numpy allows huge ones beside it).
  const bool has_zero = std::find(s.begin(), s.end(), int64_t(0)) != s.end();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (unknown >= 0)
        throw ShapeError("reshape: can only specify one unknown dimension (-1), got shape " +
                             tuple_str(shape),
                         loc);
      unknown = int64_t(i);
    } else if (s[i] < 0) {
      throw ShapeError("reshape: negative dimension " + std::to_string(s[i]) + " in shape " +
                           tuple_str(shape),
                       loc);
    } else if (has_zero) {
      known = 0;
    } else if (__builtin_mul_overflow(known, s[i], &known)) {  // checked: no signed overflow
      throw ShapeError("reshape: shape " + tuple_str(shape) + " has more elements than an int64 holds", loc);
    }
  }
  if (unknown >= 0) {
    if (known == 0 || x.size() % known != 0)
      throw ShapeError("reshape: cannot reshape array of shape " + tuple_str(x.shape()) + " (size " +
                           std::to_string(x.size()) + ") into shape " + tuple_str(shape),
                       loc);
    s[size_t(unknown)] = x.size() / known;
  }
  return lax::reshape(x, s, loc);
}

Array transpose(const Array& x, const std::vector<int64_t>& axes, SL loc) {
  std::vector<int64_t> perm = axes;
  if (perm.empty())
    for (int64_t i = x.ndim(); i-- > 0;) perm.push_back(i);
  return lax::transpose(x, perm, loc);
}

Array expand_dims(const Array& x, int64_t axis, SL loc) {
  return lax::expand_dims(x, {canonical_axis(axis, x.ndim() + 1, __func__, x.shape(), loc)}, loc);
}

Array squeeze(const Array& x, const std::vector<int64_t>& axes, SL loc) {
  std::vector<int64_t> dims;
  if (axes.empty()) {
    for (int64_t i = 0; i < x.ndim(); ++i)
      if (x.shape()[size_t(i)] == 1) dims.push_back(i);
  } else {
    for (auto a : axes) dims.push_back(canonical_axis(a, x.ndim(), __func__, x.shape(), loc));
  }
  return lax::squeeze(x, dims, loc);
}

Array concatenate(const std::vector<Array>& xs, int64_t axis, SL loc) {
  if (xs.empty()) throw ValueError("concatenate: need at least one array to concatenate", loc);
  if (xs[0].ndim() == 0)
    throw ValueError("concatenate: zero-dimensional arrays cannot be concatenated", loc);
  return lax::concatenate(xs, canonical_axis(axis, xs[0].ndim(), __func__, xs[0].shape(), loc), loc);
}

Array stack(const std::vector<Array>& xs, int64_t axis, SL loc) {
  if (xs.empty()) throw ValueError("stack: need at least one array to stack", loc);
  const int64_t a = canonical_axis(axis, xs[0].ndim() + 1, "stack", xs[0].shape(), loc);
  std::vector<Array> parts;
  parts.reserve(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].shape() != xs[0].shape())
      throw ShapeError("stack: all input arrays must have the same shape, got " +
                           tuple_str(xs[0].shape()) + " and " + tuple_str(xs[i].shape()) +
                           " (argument " + std::to_string(i) + ")",
                       loc);
    parts.push_back(lax::expand_dims(xs[i], {a}, loc));
  }
  return lax::concatenate(parts, a, loc);
}

Array flip(const Array& x, int64_t axis, SL loc) {
  return lax::rev(x, {canonical_axis(axis, x.ndim(), "flip", x.shape(), loc)}, loc);
}

Array device_put(const Array& x, MemoryKind kind, SL loc) { return lax::device_put(x, kind, loc); }

Array device_put(const Array& x, const std::string& kind, SL loc) {
  MemoryKind k;
  try {
    k = memory_kind_from_name(kind, loc);
  } catch (const ValueError& e) {
    throw ValueError("device_put: " + e.message(), loc);
  }
  return lax::device_put(x, k, loc);
}

}  // namespace minijax
