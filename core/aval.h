// minijax abstract values: shapes, memory kinds and ShapedArray (shape, dtype, weak type, memory kind).
// Owns the aval type every trace, rule and pass reasons about.
#pragma once
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace minijax {

/// Array dimensions, major first (row-major layout).
using Shape = std::vector<int64_t>;

/// Where a buffer lives, spelled as JAX spells it: "device", "pinned_host", "unpinned_host".
enum class MemoryKind : uint8_t { device, pinned_host, unpinned_host };

/// "device", "pinned_host" or "unpinned_host".
const char* memory_kind_name(MemoryKind k);
/// Parses a memory kind name. Throws ValueError naming the accepted spellings.
MemoryKind memory_kind_from_name(const std::string& s,
                                 std::source_location loc = std::source_location::current());

/// Number of elements of a shape (1 for rank 0).
int64_t shape_size(const Shape& s);
/// Bytes an array of `shape` and `dtype` needs. ValueError (at `loc`) for a negative dimension
/// or when the element count or byte size does not fit in int64 (the product would wrap into a
/// small buffer that kernels overrun).
int64_t checked_nbytes(const Shape& shape, DType dtype,
                       std::source_location loc = std::source_location::current());
/// "[2,3]" (as in avals).
std::string shape_str(const Shape& s);
/// Row-major strides in elements.
std::vector<int64_t> strides_of(const Shape& s);

/// The abstract value of an array: JAX's ShapedArray plus the memory kind of its buffer.
/// Printed as `f32[2,3]`, `f32<pinned_host>[2,3]` (device is the default and is not printed);
/// a token prints as `Tok`.
struct ShapedArray {
  Shape shape;
  DType dtype = DType::f32;
  bool weak_type = false;
  MemoryKind memory_kind = MemoryKind::device;

  int64_t ndim() const { return int64_t(shape.size()); }
  int64_t size() const { return shape_size(shape); }
  /// Bytes of the buffer: size() * itemsize(dtype).
  int64_t nbytes() const { return size() * int64_t(itemsize(dtype)); }
  bool is_token() const { return dtype == DType::token; }
  /// The printed form (weak types are not printed, as in JAX's jaxpr text).
  std::string str() const;
  /// The same aval without the weak flag.
  ShapedArray strip_weak() const { ShapedArray a = *this; a.weak_type = false; return a; }
  /// Equality of shape, dtype and memory kind (weak type ignored).
  bool same_type(const ShapedArray& o) const {
    return shape == o.shape && dtype == o.dtype && memory_kind == o.memory_kind;
  }
  bool operator==(const ShapedArray& o) const = default;

  /// The aval of an ordering token.
  static ShapedArray token() { return ShapedArray{{}, DType::token, false, MemoryKind::device}; }
};

/// The aval of tangents/cotangents of values with aval a (float0 for ints and bools).
ShapedArray tangent_aval(const ShapedArray& a);

}  // namespace minijax
