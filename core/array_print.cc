// minijax Array printing: Array::str() in JAX's repr format (numpy's array2string inside
// `Array(..., dtype=...)`). Owns element formatting, line wrapping and summarization.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/trace.h"

namespace minijax {

namespace {

// numpy's print options (defaults): linewidth 75, threshold 1000, edgeitems 3, precision 8.
constexpr int64_t kLineWidth = 75;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kPrecision = 8;

/// Shortest decimal digits that read back to the same value of element type T:
/// value = 0.d0d1d2... with decimal exponent `exp` such that value = d0.d1d2... * 10^exp.
struct Digits {
  std::string digits;
  int exp = 0;
  bool negative = false;
};

template <class T>
double to_d(T x) {
  if constexpr (std::is_same_v<T, bfloat16>) return double(float(x));
  else return double(x);
}

template <class T>
T read_back(const char* s) {
  if constexpr (std::is_same_v<T, double>) return std::strtod(s, nullptr);
  else if constexpr (std::is_same_v<T, float>) return std::strtof(s, nullptr);
  else return bfloat16(std::strtof(s, nullptr));
}

template <class T>
bool same(T a, T b) {
  if constexpr (std::is_same_v<T, bfloat16>) return a.bits == b.bits;
  else return a == b;
}

template <class T>
Digits shortest_digits(T v) {
  double d = to_d(v);
  Digits out;
  out.negative = std::signbit(d);
  char buf[64];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p - 1, d);
    if (same(read_back<T>(buf), v) || p == 17) break;
  }
  // buf = [-]d.ddde[+-]xx
  const char* s = buf + (buf[0] == '-' ? 1 : 0);
  const char* e = std::strchr(s, 'e');
  for (const char* c = s; c < e; ++c)
    if (*c != '.') out.digits.push_back(*c);
  out.exp = std::atoi(e + 1);
  while (out.digits.size() > 1 && out.digits.back() == '0') out.digits.pop_back();
  return out;
}

/// Integer and fraction parts of numpy's unique positional form (at most kPrecision fraction
/// digits, trailing zeros trimmed, the dot kept: "1." for 1.0).
template <class T>
std::pair<std::string, std::string> positional(T v) {
  Digits dg = shortest_digits(v);
  std::string ip, fp;
  if (dg.digits == "0") {
    ip = "0";
  } else if (dg.exp >= 0) {
    size_t n = size_t(dg.exp) + 1;
    ip = dg.digits.substr(0, std::min(n, dg.digits.size()));
    if (ip.size() < n) ip.append(n - ip.size(), '0');
    if (dg.digits.size() > n) fp = dg.digits.substr(n);
  } else {
    ip = "0";
    fp = std::string(size_t(-dg.exp - 1), '0') + dg.digits;
  }
  if (fp.size() > size_t(kPrecision)) {
    // More digits than the precision: the value rounded to kPrecision places, zeros trimmed.
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.*f", kPrecision, std::fabs(to_d(v)));
    std::string s = buf;
    size_t dot = s.find('.');
    ip = s.substr(0, dot);
    fp = s.substr(dot + 1);
    while (!fp.empty() && fp.back() == '0') fp.pop_back();
  }
  if (dg.negative) ip = "-" + ip;
  return {ip, fp};
}

/// Mantissa integer part, fraction digits and exponent of numpy's unique scientific form.
template <class T>
void scientific(T v, std::string& ip, std::string& fp, int& exp) {
  Digits dg = shortest_digits(v);
  if (dg.digits.size() - 1 > size_t(kPrecision)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*e", kPrecision, std::fabs(to_d(v)));
    Digits r;
    const char* e = std::strchr(buf, 'e');
    for (const char* c = buf; c < e; ++c)
      if (*c != '.') r.digits.push_back(*c);
    while (r.digits.size() > 1 && r.digits.back() == '0') r.digits.pop_back();
    r.exp = std::atoi(e + 1);
    r.negative = dg.negative;
    dg = r;
  }
  ip = (dg.negative ? "-" : "") + dg.digits.substr(0, 1);
  fp = dg.digits.substr(1);
  exp = dg.digits == "0" ? 0 : dg.exp;
}

std::string exp_str(int e, size_t digits) {
  std::string d = std::to_string(std::abs(e));
  if (d.size() < digits) d = std::string(digits - d.size(), '0') + d;
  return std::string(e < 0 ? "-" : "+") + d;
}

/// numpy's FloatingFormat (floatmode 'maxprec', sign '-') fitted to the shown elements.
template <class T>
std::function<std::string(T)> float_formatter(const std::vector<T>& shown) {
  std::vector<double> finite;
  bool has_nonfinite = false, neginf = false;
  for (T x : shown) {
    double d = to_d(x);
    if (std::isfinite(d)) finite.push_back(d);
    else { has_nonfinite = true; if (std::isinf(d) && d < 0) neginf = true; }
  }
  bool exp_format = false;
  double mx = 0, mn = INFINITY;
  for (double d : finite)
    if (d != 0) { mx = std::max(mx, std::fabs(d)); mn = std::min(mn, std::fabs(d)); }
  if (mx > 0 && (mx >= 1e8 || mn < 1e-4 || mx / mn > 1e3)) exp_format = true;

  size_t pad_left = 0, pad_right = 0, precision = 0, exp_size = 0;
  for (T x : shown) {
    double d = to_d(x);
    if (!std::isfinite(d)) continue;
    if (exp_format) {
      std::string ip, fp;
      int e;
      scientific(x, ip, fp, e);
      pad_left = std::max(pad_left, ip.size());
      precision = std::max(precision, fp.size());
      exp_size = std::max(exp_size, std::max<size_t>(2, std::to_string(std::abs(e)).size()));
    } else {
      auto [ip, fp] = positional(x);
      pad_left = std::max(pad_left, ip.size());
      pad_right = std::max(pad_right, fp.size());
    }
  }
  if (exp_format) pad_right = exp_size + 2 + precision;
  if (has_nonfinite) {
    // Room for "nan" / "inf" / "-inf" (numpy widens pad_left).
    size_t offset = pad_right + 1;
    size_t need = std::max<size_t>(3, 3 + (neginf ? 1 : 0));
    if (need > offset) pad_left = std::max(pad_left, need - offset);
  }
  return [=](T x) -> std::string {
    double d = to_d(x);
    if (!std::isfinite(d)) {
      std::string r = std::isnan(d) ? "nan" : (d < 0 ? "-inf" : "inf");
      size_t w = pad_left + pad_right + 1;
      return std::string(w > r.size() ? w - r.size() : 0, ' ') + r;
    }
    std::string ip, fp;
    if (exp_format) {
      int e;
      scientific(x, ip, fp, e);
      fp.append(precision - fp.size(), '0');  // min_digits = precision
      std::string s = std::string(pad_left - ip.size(), ' ') + ip + "." + fp + "e" + exp_str(e, exp_size);
      return s;
    }
    std::tie(ip, fp) = positional(x);
    return std::string(pad_left - ip.size(), ' ') + ip + "." + fp + std::string(pad_right - fp.size(), ' ');
  };
}

/// numpy's _formatArray: nested brackets, ", " separators, wrapping at `line_width`, and "..."
/// summaries of long axes.
struct Formatter {
  const Shape& shape;
  std::vector<int64_t> strides;
  bool summarize;
  std::function<std::string(int64_t)> elem;  // flat index -> formatted element

  static void extend(std::string& s, std::string& line, const std::string& word, int64_t width,
                     const std::string& next_prefix) {
    bool wrap = int64_t(line.size() + word.size()) > width;
    if (line.size() <= next_prefix.size()) wrap = false;  // wrapping would not help
    if (wrap) {
      size_t end = line.find_last_not_of(' ');
      s += line.substr(0, end == std::string::npos ? 0 : end + 1) + "\n";
      line = next_prefix;
    }
    line += word;
  }

  std::string rec(size_t axis, int64_t offset, const std::string& hanging, int64_t width) const {
    if (axis == shape.size()) return elem(offset);
    std::string next_hanging = hanging + " ";
    int64_t next_width = width - 1;
    int64_t n = shape[axis], st = strides[axis];
    bool summary = summarize && 2 * kEdgeItems < n;
    int64_t leading = summary ? kEdgeItems : 0, trailing = summary ? kEdgeItems : n;
    std::string s;
    if (axis + 1 == shape.size()) {
      int64_t elem_width = width - 1;  // max(len(","), len("]"))
      std::string line = hanging;
      for (int64_t i = 0; i < leading; ++i) {
        extend(s, line, rec(axis + 1, offset + i * st, next_hanging, next_width), elem_width, hanging);
        line += ", ";
      }
      if (summary) {
        extend(s, line, "...", elem_width, hanging);
        line += ", ";
      }
      for (int64_t i = trailing; i > 1; --i) {
        extend(s, line, rec(axis + 1, offset + (n - i) * st, next_hanging, next_width), elem_width, hanging);
        line += ", ";
      }
      extend(s, line, rec(axis + 1, offset + (n - 1) * st, next_hanging, next_width), elem_width, hanging);
      s += line;
    } else {
      std::string sep = "," + std::string(shape.size() - axis - 1, '\n');
      for (int64_t i = 0; i < leading; ++i)
        s += hanging + rec(axis + 1, offset + i * st, next_hanging, next_width) + sep;
      if (summary) s += hanging + "..." + sep;
      for (int64_t i = trailing; i > 1; --i)
        s += hanging + rec(axis + 1, offset + (n - i) * st, next_hanging, next_width) + sep;
      s += hanging + rec(axis + 1, offset + (n - 1) * st, next_hanging, next_width);
    }
    return "[" + s.substr(hanging.size()) + "]";
  }
};

/// Flat indices of the elements numpy shows (leading/trailing kEdgeItems per long axis).
void shown_indices(const Shape& s, const std::vector<int64_t>& st, bool summarize, size_t axis,
                   int64_t off, std::vector<int64_t>& out) {
  if (axis == s.size()) { out.push_back(off); return; }
  int64_t n = s[axis];
  bool cut = summarize && 2 * kEdgeItems < n;
  for (int64_t i = 0; i < n; ++i) {
    if (cut && i == kEdgeItems) i = n - kEdgeItems;
    shown_indices(s, st, summarize, axis + 1, off + i * st[axis], out);
  }
}

std::string tuple_str(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string Array::str() const {
  if (!impl_) return "Array(<empty>)";
  if (impl_->is_abstract()) return "ShapeDtypeStruct(" + aval().str() + ")";
  if (impl_->is_tracer())
    return "Traced<" + aval().str() + ">with<" + tracer()->trace()->name() + ">";
  const ConcreteArray& c = *static_cast<const ConcreteArray*>(impl_.get());
  const auto& av = c.aval();
  static const char* np_names[] = {"bool",    "int32",   "uint32", "bfloat16",
                                   "float32", "float64", "float0", "token"};
  if (av.dtype == DType::token) return "Token()";
  if (av.dtype == DType::float0) return "Array(float0" + shape_str(av.shape) + ")";
  std::string dtype_str = std::string("dtype=") + np_names[int(av.dtype)];
  if (av.weak_type) dtype_str += ", weak_type=True";
  if (av.memory_kind != MemoryKind::device)
    dtype_str += std::string(", memory_kind=") + memory_kind_name(av.memory_kind);
  dtype_str += ")";
  const std::string prefix = "Array(";
  if (c.buffer()->donated()) return prefix + "<donated>, " + dtype_str;
  std::string s;
  if (av.size() == 0) {
    s = "[], shape=" + tuple_str(av.shape);
  } else {
    bool summarize = av.size() > kThreshold;
    auto st = strides_of(av.shape);
    std::vector<int64_t> idx;
    shown_indices(av.shape, st, summarize, 0, 0, idx);
    const void* p = c.buffer()->data();
    Formatter f{av.shape, st, summarize, {}};
    dispatch_dtype(av.dtype, [&]<class T>() {
      const T* data = static_cast<const T*>(p);
      if constexpr (std::is_same_v<T, bool>) {
        bool scalar = av.shape.empty();
        f.elem = [data, scalar](int64_t i) -> std::string {
          return data[i] ? (scalar ? "True" : " True") : "False";
        };
      } else if constexpr (std::is_integral_v<T>) {
        size_t w = 0;
        for (int64_t i : idx) w = std::max(w, std::to_string(data[i]).size());
        f.elem = [data, w](int64_t i) {
          std::string e = std::to_string(data[i]);
          return std::string(w - e.size(), ' ') + e;
        };
      } else {
        std::vector<T> shown;
        for (int64_t i : idx) shown.push_back(data[i]);
        auto ff = float_formatter<T>(shown);
        f.elem = [data, ff](int64_t i) { return ff(data[i]); };
      }
    });
    // array2string(prefix="Array(", suffix=","): the wrap width excludes the suffix and
    // continuation lines are indented past "Array([".
    s = f.rec(0, 0, std::string(prefix.size() + 1, ' '), kLineWidth - 1);
  }
  // JAX's Array.__repr__: the dtype goes after the last line (separated by len(prefix) spaces
  // when that line is too long).
  size_t nl = s.rfind('\n');
  int64_t last_line_len = nl == std::string::npos ? int64_t(s.size()) + 2 : int64_t(s.size() - nl) + 1;
  std::string sep = " ";
  if (last_line_len + int64_t(dtype_str.size()) + 1 > kLineWidth) sep = std::string(prefix.size(), ' ');
  return prefix + s + "," + sep + dtype_str;
}

}  // namespace minijax
