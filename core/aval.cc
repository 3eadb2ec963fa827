// minijax abstract values: shapes, memory kinds and ShapedArray.
// Owns their printing and parsing of memory-kind names.
#include "core/aval.h"

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
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
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
