// minijax abstract values: shapes, memory kinds and ShapedArray.
// Owns their printing and parsing of memory-kind names.
#include "core/aval.h"

#include <limits>

#include "core/errors.h"

namespace minijax {

const char* memory_kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::device: return "device";
    case MemoryKind::pinned_host: return "pinned_host";
    case MemoryKind::unpinned_host: return "unpinned_host";
  }
  return "?";
}

MemoryKind memory_kind_from_name(const std::string& s, std::source_location loc) {
  if (s == "device") return MemoryKind::device;
  if (s == "pinned_host") return MemoryKind::pinned_host;
  if (s == "unpinned_host") return MemoryKind::unpinned_host;
  throw ValueError("unknown memory kind '" + s +
                       "' (expected \"device\", \"pinned_host\" or \"unpinned_host\")",
                   loc);
}

int64_t shape_size(const Shape& s) {
  // No signed overflow (undefined behaviour, UBSan in Errors.ShapesWhoseSizeOverflowsAreRejected-
  // NotWrapped): a zero dimension makes the size 0 whatever the others are, and a product past
  // int64 saturates at its maximum, which no operand's size equals and checked_nbytes rejects.
  for (auto d : s)
    if (d == 0) return 0;
  int64_t n = 1;
  for (auto d : s)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}

int64_t checked_nbytes(const Shape& shape, DType dtype, std::source_location loc) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) throw ValueError("negative dimension in shape " + shape_str(shape), loc);
    empty |= d == 0;
  }
  if (empty) return 0;
  for (int64_t d : shape) {
    if (n > kMax / d)
      throw ValueError("an array of shape " + shape_str(shape) + " has more than 2^63 elements",
                       loc);
    n *= d;
  }
  int64_t item = int64_t(itemsize(dtype));
  if (item > 0 && n > kMax / item)
    throw ValueError("an array of " + std::string(dtype_name(dtype)) + shape_str(shape) +
                         " needs more than 2^63 bytes",
                     loc);
  return n * item;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) { st[i] = acc; acc *= s[i]; }
  return st;
}

std::string ShapedArray::str() const {
  if (is_token()) return "Tok";
  std::string r = dtype_name(dtype);
  if (memory_kind != MemoryKind::device) r += std::string("<") + memory_kind_name(memory_kind) + ">";
  return r + shape_str(shape);
}

ShapedArray tangent_aval(const ShapedArray& a) {
  ShapedArray t = a;
  t.dtype = tangent_dtype(a.dtype);
  t.weak_type = false;
  return t;
}

}  // namespace minijax
