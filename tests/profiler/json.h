// minijax profiler tests: a small strict JSON parser (RFC 8259) for reading trace files back.
// Owns json::Value and json::parse; throws std::runtime_error with the offset on malformed input.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace json {

struct Value;
using Array = std::vector<Value>;
using Object = std::map<std::string, Value>;

/// A parsed JSON value: null, bool, number (double), string, array or object.
struct Value {
  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>> v;

  bool is_null() const { return std::holds_alternative<std::nullptr_t>(v); }
  bool is_number() const { return std::holds_alternative<double>(v); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_object() const { return std::holds_alternative<std::shared_ptr<Object>>(v); }
  bool is_array() const { return std::holds_alternative<std::shared_ptr<Array>>(v); }
  double num() const { return get<double>("a number"); }
  bool boolean() const { return get<bool>("a bool"); }
  const std::string& str() const { return get<std::string>("a string"); }
  const Array& arr() const { return *get<std::shared_ptr<Array>>("an array"); }
  const Object& obj() const { return *get<std::shared_ptr<Object>>("an object"); }
  bool has(const std::string& k) const { return is_object() && obj().count(k) > 0; }
  /// Member `k` of an object (std::runtime_error naming it when absent).
  const Value& operator[](const std::string& k) const {
    auto it = obj().find(k);
    if (it == obj().end()) throw std::runtime_error("json: no member '" + k + "'");
    return it->second;
  }

 private:
  template <class T>
  const T& get(const char* what) const {
    if (auto* p = std::get_if<T>(&v)) return *p;
    throw std::runtime_error(std::string("json: the value is not ") + what);
  }
};

namespace detail {

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Value document() {
    Value v = value(0);
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("json: " + what + " at offset " + std::to_string(i_));
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  char peek() {
    ws();
    if (i_ >= s_.size()) fail("unexpected end");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  bool literal(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }

  Value value(int depth) {
    if (depth > 64) fail("nesting too deep");
    const char c = peek();
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Value{string()};
    if (literal("true")) return Value{true};
    if (literal("false")) return Value{false};
    if (literal("null")) return Value{nullptr};
    return Value{number()};
  }

  Value object(int depth) {
    expect('{');
    auto o = std::make_shared<Object>();
    if (peek() == '}') {
      ++i_;
      return Value{o};
    }
    for (;;) {
      if (peek() != '"') fail("expected a member name");
      std::string k = string();
      expect(':');
      if (!o->emplace(k, value(depth + 1)).second) fail("duplicate member '" + k + "'");
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return Value{o};
    }
  }

  Value array(int depth) {
    expect('[');
    auto a = std::make_shared<Array>();
    if (peek() == ']') {
      ++i_;
      return Value{a};
    }
    for (;;) {
      a->push_back(value(depth + 1));
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return Value{a};
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      const char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unexpected end in an escape");
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("a short \\u escape");
          const unsigned cp = unsigned(std::stoul(std::string(s_.substr(i_, 4)), nullptr, 16));
          i_ += 4;
          if (cp < 0x80) out += char(cp);
          else if (cp < 0x800) out += char(0xc0 | (cp >> 6)), out += char(0x80 | (cp & 0x3f));
          else out += char(0xe0 | (cp >> 12)), out += char(0x80 | ((cp >> 6) & 0x3f)), out += char(0x80 | (cp & 0x3f));
          break;
        }
        default: fail("a bad escape");
      }
    }
    expect('"');
    return out;
  }

  double number() {
    const size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    auto digits = [&] {
      const size_t d = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == d) fail("expected a digit");
    };
    if (i_ < s_.size() && s_[i_] == '0') ++i_;
    else digits();
    if (i_ < s_.size() && s_[i_] == '.') ++i_, digits();
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits();
    }
    return std::stod(std::string(s_.substr(start, i_ - start)));
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace detail

/// Parses a whole JSON document (std::runtime_error with the offset when malformed).
inline Value parse(std::string_view text) { return detail::Parser(text).document(); }

}  // namespace json
