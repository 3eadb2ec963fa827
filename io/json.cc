// minijax io: the JSON the safetensors header and npz's __minijax_dtypes__.json member are written in.
// Owns the recursive-descent parser (RFC 8259, https://www.rfc-editor.org/rfc/rfc8259) and quoting.
#include "io/json.h"

namespace minijax::detail::json {

namespace {

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  Value document() {
    Value v = value(0);
    skip_ws();
    if (i_ != t_.size()) fail("the end of the text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& expected) const {
    throw ParseError("invalid JSON at byte " + std::to_string(i_) + ": expected " + expected);
  }
  void skip_ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    skip_ws();
    if (i_ < t_.size() && t_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect_word(std::string_view w) {
    if (t_.substr(i_, w.size()) != w) fail("a value");
    i_ += w.size();
  }

  Value value(int depth) {
    if (depth > 64) fail("at most 64 levels of nesting");
    skip_ws();
    if (i_ >= t_.size()) fail("a value");
    Value v;
    switch (t_[i_]) {
      case '{': object(v, depth); break;
      case '[': array(v, depth); break;
      case '"': v.kind = Value::Kind::string; v.text = string(); break;
      case 't': expect_word("true"); v.kind = Value::Kind::boolean; v.boolean = true; break;
      case 'f': expect_word("false"); v.kind = Value::Kind::boolean; break;
      case 'n': expect_word("null"); break;
      default: v.kind = Value::Kind::number; v.text = number(); break;
    }
    return v;
  }

  void object(Value& v, int depth) {
    v.kind = Value::Kind::object;
    ++i_;
    if (eat('}')) return;
    do {
      skip_ws();
      if (i_ >= t_.size() || t_[i_] != '"') fail("a string key");
      const size_t at = i_;
      std::string key = string();
      for (auto& [k, _] : v.members)
        if (k == key) {
          i_ = at;
          fail("a key not seen before in this object (duplicate '" + key + "')");
        }
      if (!eat(':')) fail("':'");
      v.members.emplace_back(std::move(key), value(depth + 1));
    } while (eat(','));
    if (!eat('}')) fail("',' or '}'");
  }

  void array(Value& v, int depth) {
    v.kind = Value::Kind::array;
    ++i_;
    if (eat(']')) return;
    do v.items.push_back(value(depth + 1));
    while (eat(','));
    if (!eat(']')) fail("',' or ']'");
  }

  std::string number() {
    const size_t start = i_;
    auto digits = [&] {
      const size_t d = i_;
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
      return i_ - d;
    };
    if (i_ < t_.size() && t_[i_] == '-') ++i_;
    if (i_ < t_.size() && t_[i_] == '0') ++i_;
    else if (digits() == 0) fail("a value");
    if (i_ < t_.size() && t_[i_] == '.') {
      ++i_;
      if (digits() == 0) fail("a digit after '.'");
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (digits() == 0) fail("a digit in the exponent");
    }
    return std::string(t_.substr(start, i_ - start));
  }

  unsigned hex4() {
    if (i_ + 4 > t_.size()) fail("four hex digits after \\u");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = t_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else fail("a hex digit");
    }
    return v;
  }

  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  void escape(std::string& out) {
    if (i_ >= t_.size()) fail("an escape");
    const char c = t_[i_++];
    switch (c) {
      case '"': out += '"'; return;
      case '\\': out += '\\'; return;
      case '/': out += '/'; return;
      case 'b': out += '\b'; return;
      case 'f': out += '\f'; return;
      case 'n': out += '\n'; return;
      case 'r': out += '\r'; return;
      case 't': out += '\t'; return;
      case 'u': break;
      default: --i_; fail("one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u");
    }
    unsigned cp = hex4();
    if (cp >= 0xDC00 && cp <= 0xDFFF) fail("a high surrogate before a low one");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (t_.substr(i_, 2) != "\\u") fail("a low surrogate after a high one");
      i_ += 2;
      const unsigned lo = hex4();
      if (lo < 0xDC00 || lo > 0xDFFF) fail("a low surrogate after a high one");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    put_utf8(out, cp);
  }

  // One UTF-8 sequence starting at a byte >= 0x80 (RFC 3629: no overlongs, surrogates or > U+10FFFF).
  void utf8(std::string& out) {
    const auto b = [&](size_t k) { return uint8_t(t_[i_ + k]); };
    const uint8_t c = b(0);
    int n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n == 0 || i_ + size_t(n) > t_.size()) fail("valid UTF-8");
    for (int k = 1; k < n; ++k)
      if ((b(k) & 0xC0) != 0x80) fail("valid UTF-8");
    if ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) > 0x9F) || (c == 0xF0 && b(1) < 0x90) ||
        (c == 0xF4 && b(1) > 0x8F))
      fail("valid UTF-8");
    out.append(t_.substr(i_, size_t(n)));
    i_ += size_t(n);
  }

  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    while (true) {
      if (i_ >= t_.size()) fail("'\"' closing the string");
      const char c = t_[i_];
      if (c == '"') {
        ++i_;
        return out;
      }
      if (c == '\\') {
        ++i_;
        escape(out);
      } else if (uint8_t(c) < 0x20) {
        fail("no control character inside a string (escape it)");
      } else if (uint8_t(c) >= 0x80) {
        utf8(out);
      } else {
        out += c;
        ++i_;
      }
    }
  }

  std::string_view t_;
  size_t i_ = 0;
};

}  // namespace

const Value* Value::find(const std::string& key) const {
  for (auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

bool Value::to_u64(uint64_t& out) const {
  if (kind != Kind::number || text.empty()) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = uint64_t(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  out = v;
  return true;
}

const char* Value::kind_name() const {
  switch (kind) {
    case Kind::null: return "null";
    case Kind::boolean: return "a boolean";
    case Kind::number: return "a number";
    case Kind::string: return "a string";
    case Kind::array: return "an array";
    case Kind::object: return "an object";
  }
  return "?";
}

Value parse(std::string_view text) { return Parser(text).document(); }

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (uint8_t(c) < 0x20) {
          static const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[uint8_t(c) >> 4];
          out += hex[uint8_t(c) & 15];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace minijax::detail::json
