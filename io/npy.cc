// minijax io: numpy's .npy format, one array per file (numpy.save / numpy.load).
// Owns the header's writer and its parser (the Python dict literal numpy.lib.format writes).
#include "io/npy.h"

#include <cstring>
#include <optional>

namespace minijax {

namespace detail {

namespace {
constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;  // numpy.lib.format.ARRAY_ALIGN

// The dict literal of a .npy header: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.
class HeaderParser {
 public:
  HeaderParser(const IOContext& ctx, std::string_view t) : ctx_(ctx), t_(t) {}

  // Fills descr, fortran_order and shape; fails unless the dict holds exactly these three keys.
  void parse(std::string& descr, bool& fortran, std::vector<uint64_t>& dims) {
    bool has_descr = false, has_fortran = false, has_shape = false;
    expect('{');
    while (!peek('}')) {
      if (!peek('\'') && !peek('"')) fail("a quoted key or '}'");
      const std::string key = string();
      expect(':');
      if (key == "descr" && !has_descr) {
        if (!peek('\'') && !peek('"'))
          fail("'descr' to be a dtype string such as '<f4' (structured and object dtypes are not supported)");
        descr = string();
        has_descr = true;
      } else if (key == "fortran_order" && !has_fortran) {
        fortran = boolean();
        has_fortran = true;
      } else if (key == "shape" && !has_shape) {
        dims = tuple();
        has_shape = true;
      } else {
        fail("only the keys 'descr', 'fortran_order' and 'shape', once each (got '" + key + "')");
      }
      if (!eat(',')) break;
    }
    expect('}');
    skip_ws();
    if (i_ != t_.size()) fail("only spaces and '\\n' after the header dict");
    if (!has_descr || !has_fortran || !has_shape)
      fail("the keys 'descr', 'fortran_order' and 'shape' in the header dict");
  }

 private:
  [[noreturn]] void fail(const std::string& expected) const {
    ctx_.fail("corrupt .npy header at byte " + std::to_string(i_) + " of the dict: expected " + expected);
  }
  void skip_ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t' || t_[i_] == '\r')) ++i_;
  }
  bool peek(char c) {
    skip_ws();
    return i_ < t_.size() && t_[i_] == c;
  }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++i_;
    return true;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("'") + c + "'");
  }
  std::string string() {
    skip_ws();
    if (i_ >= t_.size() || (t_[i_] != '\'' && t_[i_] != '"')) fail("a quoted string");
    const char q = t_[i_++];
    const size_t end = t_.find(q, i_);
    if (end == std::string_view::npos) fail("a closing quote");
    std::string s(t_.substr(i_, end - i_));
    if (s.find('\\') != std::string::npos) fail("a string without escapes");
    i_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_ws();
    for (auto [word, v] : {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}})
      if (t_.substr(i_, word.size()) == word) {
        i_ += word.size();
        return v;
      }
    fail("True or False");
  }
  // (), (3,), (2, 3) or (2, 3,): non-negative integers (Python 2's 3L too).
  std::vector<uint64_t> tuple() {
    std::vector<uint64_t> dims;
    expect('(');
    while (!peek(')')) {
      skip_ws();
      uint64_t v = 0;
      size_t digits = 0;
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') {
        const uint64_t d = uint64_t(t_[i_++] - '0');
        if (v > (UINT64_MAX - d) / 10) fail("a dimension below 2^64");
        v = v * 10 + d;
        ++digits;
      }
      if (digits == 0) fail("a non-negative integer dimension");
      if (i_ < t_.size() && t_[i_] == 'L') ++i_;
      dims.push_back(v);
      if (!eat(',')) {
        if (dims.size() == 1) fail("',' after the only dimension (a tuple (n,))");
        break;
      }
    }
    expect(')');
    return dims;
  }

  const IOContext& ctx_;
  std::string_view t_;
  size_t i_ = 0;
};

// The dtype of a descr, and whether it is big-endian; fails for what minijax does not hold.
DType dtype_of_descr(const IOContext& ctx, const std::string& descr, bool u2_as_bf16, bool& big) {
  const char order = descr.empty() ? '\0' : descr[0];
  const bool has_order = order == '<' || order == '>' || order == '|' || order == '=';
  const std::string code = has_order ? descr.substr(1) : descr;
  big = order == '>';
  std::optional<DType> d;
  if (code == "b1" || code == "?") d = DType::bool_;
  else if (code == "i4") d = DType::i32;
  else if (code == "u4") d = DType::u32;
  else if (code == "f4") d = DType::f32;
  else if (code == "f8") d = DType::f64;
  else if (code == "u2" && u2_as_bf16) d = DType::bf16;
  if (d) return *d;
  ctx.fail("unsupported dtype '" + descr + "' (minijax reads |b1 bool, <i4 int32, <u4 uint32, <f4 float32, " +
           "<f8 float64 and <u2 as bfloat16 where a bf16 leaf is expected; convert the array with astype " +
           "first, e.g. int64 to int32)");
}
}  // namespace

const char* npy_descr(DType d) {
  switch (d) {
    case DType::bool_: return "|b1";
    case DType::i32: return "<i4";
    case DType::u32: return "<u4";
    case DType::bf16: return "<u2";
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    default: return "";
  }
}

std::string npy_header(DType d, const Shape& shape) {
  std::string dict = std::string("{'descr': '") + npy_descr(d) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(shape[i]);
  dict += shape.size() == 1 ? ",), }" : "), }";
  // Version 1.0 has a 2-byte header length, 2.0 a 4-byte one; both then pad to kAlign.
  for (int version = 1; version <= 2; ++version) {
    const size_t prefix = kMagicLen + 2 + (version == 1 ? 2 : 4);
    const size_t total = (prefix + dict.size() + 1 + kAlign - 1) / kAlign * kAlign;
    const size_t hlen = total - prefix;
    if (version == 1 && hlen > 0xffff) continue;
    std::string out(kMagic, kMagicLen);
    out += char(version);
    out += char(0);
    put_le(out, hlen, version == 1 ? 2 : 4);
    out += dict;
    out.append(hlen - dict.size() - 1, ' ');
    out += '\n';
    return out;
  }
  return {};
}

StoredArray parse_npy(const IOContext& ctx, const uint8_t* p, size_t n, bool u2_as_bf16) {
  if (n < kMagicLen + 4 || std::memcmp(p, kMagic, kMagicLen) != 0)
    ctx.fail(n < kMagicLen + 4 && std::memcmp(p, kMagic, std::min(n, kMagicLen)) == 0
                 ? "truncated .npy: " + std::to_string(n) + " bytes, fewer than the 10 of the preamble"
                 : "not a .npy file (it does not start with the magic \\x93NUMPY)");
  const int major = p[kMagicLen], minor = p[kMagicLen + 1];
  if (major < 1 || major > 3 || minor != 0)
    ctx.fail("unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor) +
             " (1.0, 2.0 and 3.0 are read)");
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (n < kMagicLen + 2 + len_bytes)
    ctx.fail("truncated .npy: " + std::to_string(n) + " bytes end inside the preamble");
  const size_t hlen = size_t(get_le(p + kMagicLen + 2, int(len_bytes)));
  const size_t data_at = kMagicLen + 2 + len_bytes + hlen;
  if (hlen > n || data_at > n)
    ctx.fail("truncated .npy: the header claims " + std::to_string(hlen) + " bytes, the file holds " +
             std::to_string(n - (kMagicLen + 2 + len_bytes)) + " after the preamble");
  std::string descr;
  bool fortran = false;
  std::vector<uint64_t> dims;
  HeaderParser(ctx, std::string_view(reinterpret_cast<const char*>(p) + data_at - hlen, hlen))
      .parse(descr, fortran, dims);
  StoredArray s;
  s.key = ctx.key;
  s.dtype = dtype_of_descr(ctx, descr, u2_as_bf16, s.big_endian);
  s.fortran_order = fortran;
  s.nbytes = checked_nbytes(ctx, dims, itemsize(s.dtype), s.shape);
  if (n - data_at != s.nbytes)
    ctx.fail(std::string(n - data_at < s.nbytes ? "truncated" : "corrupt") + " .npy: the header (" +
             descr + ", shape " + describe(s.dtype, s.shape) + ") claims " + std::to_string(s.nbytes) +
             " bytes of data, the file holds " + std::to_string(n - data_at));
  s.data = p + data_at;
  return s;
}

}  // namespace detail

void save_npy(const std::string& path, const Array& a, std::source_location loc) {
  detail::IOContext ctx{"save_npy", path, "", loc};
  detail::check_save_leaf(ctx, a);
  const std::string header = detail::npy_header(a.dtype(), a.shape());
  const void* data = a.raw_data(loc);
  detail::AtomicFile f(ctx);
  f.write(header.data(), header.size());
  f.write(data, size_t(a.aval().nbytes()));
  f.commit();
}

namespace {
Array load_npy_impl(const std::string& path, const Array* like, std::source_location loc) {
  detail::IOContext ctx{"load_npy", path, "", loc};
  if (like && !like->defined())
    throw ValueError(ctx.where() + ": `like` is an empty Array (no shape or dtype to expect)", loc);
  const std::vector<uint8_t> bytes = detail::read_file(ctx);
  const bool bf16 = like && like->dtype() == DType::bf16;
  detail::StoredArray s = detail::parse_npy(ctx, bytes.data(), bytes.size(), bf16);
  if (!like) return detail::materialize(s, ShapedArray{s.shape, s.dtype});
  if (s.dtype != like->dtype() || s.shape != like->shape())
    ctx.fail("the file holds " + detail::describe(s.dtype, s.shape) + ", expected " +
             detail::describe(like->dtype(), like->shape()) + " as like's");
  return detail::materialize(s, like->aval());
}
}  // namespace

Array load_npy(const std::string& path, std::source_location loc) { return load_npy_impl(path, nullptr, loc); }

Array load_npy(const std::string& path, const Array& like, std::source_location loc) {
  return load_npy_impl(path, &like, loc);
}

}  // namespace minijax
