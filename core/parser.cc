// minijax jaxpr parser (recursive descent over the printer's text).
// Owns tokenization by position, variable scopes per jaxpr, shared jaxprs and param typing.
#include "core/parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "core/primitive.h"
#include "core/verify.h"

namespace minijax {

namespace {

std::vector<ParamObjectParser>& object_parsers() {
  static std::vector<ParamObjectParser> v;
  return v;
}
std::mutex& object_parsers_mu() {
  static std::mutex m;
  return m;
}

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Parser {
 public:
  Parser(const std::string& s, std::source_location loc, const ParamObjectParser* reader = nullptr)
      : s_(s), loc_(loc), reader_(reader) {}

  ClosedJaxpr top(const std::vector<Array>& consts) {
    ws();
    while (word_ahead("let")) {
      size_t save = pos_;
      pos_ += 3;
      ws();
      if (!ident_start(peek())) { pos_ = save; break; }
      std::string name = ident();
      ws();
      expect('=');
      ws();
      if (shared_.count(name)) fail("shared jaxpr '" + name + "' defined twice");
      shared_[name] = nested_jaxpr();
      ws();
      expect_word("in");
      ws();
    }
    auto j = jaxpr();
    ws();
    if (pos_ != s_.size()) fail("unexpected text after the jaxpr");
    ClosedJaxpr cj;
    if (consts.size() != j->constvars.size())
      throw ValueError("parse_jaxpr: the jaxpr has " + std::to_string(j->constvars.size()) +
                       " constvars but " + std::to_string(consts.size()) + " consts were given",
                       loc_);
    for (size_t i = 0; i < consts.size(); ++i)
      if (!consts[i].defined() || !consts[i].aval().same_type(j->constvars[i].aval()))
        throw ValueError("parse_jaxpr: const " + std::to_string(i) + " is " +
                         (consts[i].defined() ? consts[i].aval().str() : std::string("empty")) +
                         " but its constvar is " + j->constvars[i].aval().str(),
                         loc_);
    cj.jaxpr = j;
    cj.consts = consts;
    return cj;
  }

  /// Throws the ValueError of the first param a typed view does not know (its line and column).
  void refuse_unknown_params() const {
    if (!unknown_param_.empty()) throw ValueError(unknown_param_, loc_);
  }

 private:
  using Scope = std::unordered_map<std::string, Var>;

  // "parse_jaxpr: line L, column C: <msg> (near '<text>')" for the text at `at`.
  std::string message_at(const std::string& msg, size_t at) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    std::string near = s_.substr(std::min(at, s_.size()), 20);
    for (auto& c : near)
      if (c == '\n') c = ' ';
    return "parse_jaxpr: line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + msg +
           (near.empty() ? " (at end of text)" : " (near '" + near + "')");
  }

  [[noreturn]] void fail(const std::string& msg, size_t at = std::string::npos) const {
    throw ValueError(message_at(msg, at == std::string::npos ? pos_ : at), loc_);
  }

  char peek(size_t k = 0) const { return pos_ + k < s_.size() ? s_[pos_ + k] : '\0'; }
  void ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool word_ahead(const char* w) const {
    size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) != 0) return false;
    return pos_ + n >= s_.size() || !ident_char(s_[pos_ + n]);
  }
  void expect_word(const char* w) {
    if (!word_ahead(w)) fail(std::string("expected '") + w + "'");
    pos_ += std::strlen(w);
  }
  std::string ident() {
    if (!ident_start(peek())) fail("expected a name");
    size_t b = pos_;
    while (pos_ < s_.size() && ident_char(s_[pos_])) ++pos_;
    return s_.substr(b, pos_ - b);
  }
  // The `in` keyword: `in` followed by `(` (a variable may also be called `in`).
  bool at_in_keyword() const {
    if (!word_ahead("in")) return false;
    size_t p = pos_ + 2;
    while (p < s_.size() && std::isspace(static_cast<unsigned char>(s_[p]))) ++p;
    return p < s_.size() && s_[p] == '(';
  }
  size_t column(size_t p) const {
    size_t b = s_.rfind('\n', p == 0 ? 0 : p - 1);
    return b == std::string::npos ? p : p - b - 1;
  }
  bool first_on_line(size_t p) const {
    for (size_t i = p; i-- > 0;) {
      if (s_[i] == '\n') return true;
      if (!std::isspace(static_cast<unsigned char>(s_[i]))) return false;
    }
    return true;
  }

  int64_t integer() {
    size_t b = pos_;
    if (peek() == '-') ++pos_;
    if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("expected an integer", b);
    while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    return to_int64(s_.substr(b, pos_ - b), b);
  }

  // The int64 that `digits` (an optional '-', then decimal digits) spells; fail() when it does not
  // fit (std::stoll threw std::out_of_range there, an untyped error the parser fuzzer found).
  int64_t to_int64(const std::string& digits, size_t at) const {
    int64_t v = 0;
    const char* end = digits.data() + digits.size();
    auto [ptr, ec] = std::from_chars(digits.data(), end, v);
    if (ec != std::errc() || ptr != end)
      fail("integer " + (digits.size() > 24 ? digits.substr(0, 24) + "..." : digits) +
               " is out of the range of int64",
           at);
    return v;
  }

  ShapedArray aval() {
    size_t b = pos_;
    if (word_ahead("Tok")) {
      pos_ += 3;
      return ShapedArray::token();
    }
    std::string dt = ident();
    ShapedArray a;
    try {
      a.dtype = dtype_from_name(dt);
    } catch (const ValueError&) {
      fail("unknown dtype '" + dt + "'", b);
    }
    if (peek() == '<') {
      ++pos_;
      size_t mb = pos_;
      std::string mk = ident();
      try {
        a.memory_kind = memory_kind_from_name(mk);
      } catch (const ValueError&) {
        fail("unknown memory kind '" + mk + "' (expected device, pinned_host or unpinned_host)", mb);
      }
      expect('>');
    }
    expect('[');
    while (peek() != ']') {
      int64_t d = integer();
      if (d < 0) fail("negative dimension");
      a.shape.push_back(d);
      if (peek() == ',') ++pos_;
      else if (peek() != ']') fail("expected ',' or ']' in a shape");
    }
    ++pos_;
    // Refused when the bytes of its leading dimensions, multiplied in order, overflow int64: no
    // array could hold them, and with a zero dimension after them (no bytes in all) the strides
    // and leading sizes that code computes in order would still overflow (undefined behaviour).
    int64_t bytes = int64_t(itemsize(a.dtype));
    for (int64_t d : a.shape)
      if (__builtin_mul_overflow(bytes, d, &bytes)) fail("the aval's size overflows int64 bytes", b);
    return a;
  }

  // `name:aval` or `_:aval`, bound in scope.
  Var binder(Scope& scope) {
    size_t b = pos_;
    std::string n = ident();
    ws();
    expect(':');
    ws();
    ShapedArray a = aval();
    if (n == "_") return Var::dropvar(a);
    if (scope.count(n)) fail("variable '" + n + "' is bound twice", b);
    Var v(a);
    scope.emplace(n, v);
    return v;
  }
  bool binder_ahead() const {
    if (!ident_start(peek())) return false;
    size_t p = pos_;
    while (p < s_.size() && ident_char(s_[p])) ++p;
    while (p < s_.size() && std::isspace(static_cast<unsigned char>(s_[p]))) ++p;
    return p < s_.size() && s_[p] == ':';
  }

  Literal literal(const std::string& val, size_t at) {
    ShapedArray a = aval();
    if (a.size() != 1 || a.is_token())
      fail("a literal must be a single element of a numeric, bool or float0 dtype, got " + a.str(), at);
    if (a.dtype == DType::float0) {  // its one value, the zero (printed `0:float0[]`)
      if (val != "0") fail("bad literal value '" + val + "' for " + a.str() + " (float0's one value is 0)", at);
      return Literal{Array::allocate(a)};
    }
    Array arr = Array::empty(a);
    void* p = const_cast<void*>(arr.raw_data());
    bool ok = true;
    dispatch_dtype(a.dtype, [&]<class T>() {
      if constexpr (std::is_same_v<T, bool>) {
        if (val == "True") *static_cast<bool*>(p) = true;
        else if (val == "False") *static_cast<bool*>(p) = false;
        else ok = false;
      } else {
        char* end = nullptr;
        if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, bfloat16>) {
          double d = std::strtod(val.c_str(), &end);
          if constexpr (std::is_same_v<T, bfloat16>) *static_cast<T*>(p) = bfloat16(float(d));
          else *static_cast<T*>(p) = T(d);
        } else {
          long long x = std::strtoll(val.c_str(), &end, 10);
          *static_cast<T*>(p) = T(x);
        }
        ok = end && *end == '\0' && !val.empty();
      }
    });
    if (!ok) fail("bad literal value '" + val + "' for " + a.str(), at);
    return Literal{arr};
  }

  Atom atom(Scope& scope) {
    size_t b = pos_;
    char c = peek();
    // Literal: a number, True/False, nan/inf, followed by `:aval`.
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.' ||
        ((word_ahead("True") || word_ahead("False") || word_ahead("nan") || word_ahead("inf")) &&
         binder_ahead())) {
      while (pos_ < s_.size() && s_[pos_] != ':' && !std::isspace(static_cast<unsigned char>(s_[pos_])))
        ++pos_;
      std::string val = s_.substr(b, pos_ - b);
      if (peek() != ':') fail("expected ':' and the literal's type after '" + val + "'", b);
      ++pos_;
      return literal(val, b);
    }
    std::string n = ident();
    if (n == "_") fail("`_` (a dropped variable) cannot be used", b);
    auto it = scope.find(n);
    if (it == scope.end()) fail("unbound variable '" + n + "'", b);
    return it->second;
  }

  ClosedJaxprPtr nested_jaxpr() {
    size_t b = pos_;
    // Inline nesting is bounded (so is the recursion reading it); a deeper nest is written as
    // `let` shared jaxprs, as the printer writes it (every 16th level), each read at depth 0.
    if (inline_depth_ >= kMaxInlineNesting)
      fail("jaxprs nested more than " + std::to_string(kMaxInlineNesting) +
           " levels deep inline: write deeper levels as `let name = { lambda ... } in` shared jaxprs", b);
    struct Depth {
      int& d;
      explicit Depth(int& x) : d(++x) {}
      ~Depth() { --d; }
    } depth(inline_depth_);
    auto j = jaxpr();
    if (!j->constvars.empty())
      fail("a nested jaxpr has constvars: their values are not part of the text", b);
    auto cj = std::make_shared<ClosedJaxpr>();
    cj->jaxpr = j;
    return cj;
  }

  // A shared jaxpr's name at pos_ (not followed by more name characters).
  const ClosedJaxprPtr* shared_ahead() const {
    if (!ident_start(peek())) return nullptr;
    size_t p = pos_;
    while (p < s_.size() && ident_char(s_[p])) ++p;
    auto it = shared_.find(s_.substr(pos_, p - pos_));
    return it == shared_.end() ? nullptr : &it->second;
  }

  Param raw_param(const std::string& key, const std::string& t, size_t at) {
    if (key == "name") return t;
    if (t == "True") return true;
    if (t == "False") return false;
    if (t == "None") return ParamObjectPtr();
    auto is_int = [](const std::string& x) {
      size_t i = (x.size() > 1 && x[0] == '-') ? 1 : 0;
      if (i >= x.size()) return false;
      for (; i < x.size(); ++i)
        if (!std::isdigit(static_cast<unsigned char>(x[i]))) return false;
      return true;
    };
    if (is_int(t)) return to_int64(t, at);
    if (t == "nan" || t == "inf" || t == "-inf") return std::strtod(t.c_str(), nullptr);
    if (!t.empty() && (std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '-')) {
      char* end = nullptr;
      double d = std::strtod(t.c_str(), &end);
      if (end && *end == '\0') return d;
    }
    if (t.size() >= 2 && t.front() == '(' && t.back() == ')') {
      std::vector<int64_t> v;
      std::string inner = t.substr(1, t.size() - 2);
      bool ok = true;
      size_t i = 0;
      while (ok && i < inner.size()) {
        while (i < inner.size() && inner[i] == ' ') ++i;
        size_t e = inner.find(',', i);
        std::string item = inner.substr(i, e == std::string::npos ? std::string::npos : e - i);
        while (!item.empty() && item.back() == ' ') item.pop_back();
        if (item.empty() && e == std::string::npos) break;
        if (!is_int(item)) ok = false;
        else v.push_back(to_int64(item, at));
        if (e == std::string::npos) break;
        i = e + 1;
      }
      if (ok) return v;
    }
    static const std::map<std::string, DType> np_dtypes = {
        {"bool", DType::bool_},  {"int32", DType::i32},   {"uint32", DType::u32},
        {"bfloat16", DType::bf16}, {"float32", DType::f32}, {"float64", DType::f64},
        {"float0", DType::float0}, {"token", DType::token}};
    if (auto it = np_dtypes.find(t); it != np_dtypes.end()) return it->second;
    if (t == "device" || t == "pinned_host" || t == "unpinned_host") return memory_kind_from_name(t);
    if (reader_ && *reader_) {  // this text's own reader (detail::parse_jaxpr_with), before the registry
      try {
        if (auto o = (*reader_)(key, t)) return o;
      } catch (const ValueError& e) {
        fail(e.message(), at);
      }
    }
    std::vector<ParamObjectParser> parsers;
    {
      std::lock_guard<std::mutex> g(object_parsers_mu());
      parsers = object_parsers();
    }
    for (auto& p : parsers) {
      try {
        if (auto o = p(key, t)) return o;
      } catch (const std::out_of_range&) {  // a registered reader's std::stoll on an integer beyond int64
        fail("parameter '" + key + "' holds an integer out of the range of int64: " + t.substr(0, 60), at);
      } catch (const std::invalid_argument&) {
        fail("parameter '" + key + "' holds a malformed number: " + t.substr(0, 60), at);
      }
    }
    return t;
  }

  // The raw text of a param value: up to `]` or whitespace followed by `key=` at depth 0, unless
  // a ',' comes before the whitespace: a printed sharding's `[{"x"}, {}], memory_kind=pinned_host`
  // goes on after its comma (no printed value ends with one).
  std::string raw_value() {
    size_t b = pos_;
    int depth = 0;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (depth == 0 && c == ']') break;
      if (depth == 0 && std::isspace(static_cast<unsigned char>(c)) && !(pos_ > b && s_[pos_ - 1] == ',')) {
        size_t p = pos_;
        while (p < s_.size() && std::isspace(static_cast<unsigned char>(s_[p]))) ++p;
        if (p >= s_.size() || s_[p] == ']') break;
        size_t q = p;
        while (q < s_.size() && ident_char(s_[q])) ++q;
        if (q > p && ident_start(s_[p]) && q < s_.size() && s_[q] == '=') break;
      }
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') --depth;
      ++pos_;
    }
    if (depth != 0) fail("unbalanced brackets in a param value", b);
    return s_.substr(b, pos_ - b);
  }

  Param param_value(const std::string& key) {
    size_t b = pos_;
    if (key != "name") {
      if (peek() == '{') return nested_jaxpr();
      if (auto* sj = shared_ahead()) {
        ClosedJaxprPtr r = *sj;
        ident();
        return r;
      }
      if (peek() == '(') {
        size_t save = pos_;
        ++pos_;
        ws();
        if (peek() == '{' || shared_ahead()) {
          std::vector<ClosedJaxprPtr> v;
          while (true) {
            ws();
            if (peek() == ')') { ++pos_; break; }
            if (peek() == '{') v.push_back(nested_jaxpr());
            else if (auto* sj = shared_ahead()) { v.push_back(*sj); ident(); }
            else fail("expected a jaxpr or ')' in a tuple of jaxprs");
          }
          return v;
        }
        pos_ = save;
      }
    }
    return raw_param(key, raw_value(), b);
  }

  Params params() {
    Params ps;
    expect('[');
    ws();
    while (peek() != ']') {
      size_t kb = pos_;
      std::string key = ident();
      expect('=');
      if (ps.has(key)) fail("param '" + key + "' given twice", kb);
      ps.set(key, param_value(key));
      ws();
      if (pos_ >= s_.size()) fail("expected ']'");
    }
    ++pos_;
    return ps;
  }

  Eqn eqn(Scope& scope) {
    size_t start = pos_;
    size_t col = column(start);
    Eqn e;
    std::vector<Var> outs;
    Scope pending;  // outputs are bound after the equation (its operands cannot use them)
    while (binder_ahead()) {
      outs.push_back(binder(pending));
      ws();
    }
    if (!outs.empty()) {
      expect('=');
      ws();
    }
    size_t pb = pos_;
    std::string pname = ident();
    try {
      e.primitive = &primitive(pname);
    } catch (const ValueError&) {
      fail("unknown primitive '" + pname + "'", pb);
    }
    if (peek() == '[') e.params = params();
    if (e.primitive->check_params) {
      Params known;
      try {
        known = e.primitive->check_params(e.params);
      } catch (const ValueError& err) {
        fail(err.message(), pb);  // the typed view's "<primitive>: missing parameter 'x'", at its line
      }
      // A param the view does not know would be dropped by the next pass that rebuilds the
      // equation from its view: refused, where the params come from the user's text, after the
      // type check (an ill-typed equation is a ShapeError or TypeError whatever its params say).
      for (const auto& [k, v] : e.params.items())
        if (!known.has(k) && unknown_param_.empty())
          unknown_param_ = message_at(pname + ": unexpected parameter '" + k + "'", pb);
    }
    while (true) {
      size_t before = pos_;
      ws();
      if (pos_ >= s_.size()) break;
      char c = peek();
      if (c == ';' || c == '}' || c == ')' || at_in_keyword()) break;
      if (pos_ > before && first_on_line(pos_) && column(pos_) <= col) break;
      e.inputs.push_back(atom(scope));
    }
    for (auto& [n, v] : pending) {
      if (scope.count(n)) fail("variable '" + n + "' is bound twice", start);
      scope.emplace(n, v);
    }
    e.outputs = std::move(outs);
    e.effects = e.primitive->effects;
    return e;
  }

  std::shared_ptr<Jaxpr> jaxpr() {
    auto j = std::make_shared<Jaxpr>();
    Scope scope;
    expect('{');
    ws();
    expect_word("lambda");
    ws();
    while (peek() != ';') {
      if (!binder_ahead()) fail("expected a constvar binder or ';'");
      j->constvars.push_back(binder(scope));
      ws();
    }
    ++pos_;
    ws();
    while (peek() != '.') {
      if (!binder_ahead()) fail("expected an input binder or '.'");
      j->invars.push_back(binder(scope));
      ws();
    }
    ++pos_;
    ws();
    expect_word("let");
    while (true) {
      ws();
      if (at_in_keyword()) break;
      if (peek() == ';') { ++pos_; continue; }
      if (pos_ >= s_.size()) fail("expected 'in'");
      j->eqns.push_back(eqn(scope));
    }
    expect_word("in");
    ws();
    expect('(');
    ws();
    while (peek() != ')') {
      j->outvars.push_back(atom(scope));
      ws();
      if (peek() == ',') { ++pos_; ws(); }
      else if (peek() != ')') fail("expected ',' or ')' in the outputs");
    }
    ++pos_;
    ws();
    expect('}');
    for (auto& e : j->eqns) j->effects.insert(e.effects.begin(), e.effects.end());
    return j;
  }

  const std::string& s_;
  std::source_location loc_;  // the user's call of parse_jaxpr, named by every error
  const ParamObjectParser* reader_;  // detail::parse_jaxpr_with's reader, or null
  std::string unknown_param_;  // the first param a typed view does not know, thrown after parsing
  size_t pos_ = 0;
  std::map<std::string, ClosedJaxprPtr> shared_;
  static constexpr int kMaxInlineNesting = 64;
  int inline_depth_ = 0;  // `{ lambda` jaxprs open around pos_, the top one not counted
};

}  // namespace

ClosedJaxpr parse_jaxpr(const std::string& text, const std::vector<Array>& consts, std::source_location loc) {
  Parser p(text, loc);
  ClosedJaxpr j = p.top(consts);
  verify_jaxpr(j, loc);
  p.refuse_unknown_params();
  return j;
}

namespace detail {
ClosedJaxpr parse_jaxpr_with(const std::string& text, const ParamObjectParser& reader, std::source_location loc) {
  Parser p(text, loc, &reader);
  ClosedJaxpr j = p.top({});
  verify_jaxpr(j, loc);
  p.refuse_unknown_params();
  return j;
}

ClosedJaxpr parse_jaxpr_unchecked(const std::string& text, const std::vector<Array>& consts,
                                  std::source_location loc) {
  Parser p(text, loc);
  ClosedJaxpr j = p.top(consts);
  p.refuse_unknown_params();
  return j;
}
}  // namespace detail

void register_param_object_parser(ParamObjectParser p) {
  std::lock_guard<std::mutex> g(object_parsers_mu());
  object_parsers().push_back(std::move(p));
}

}  // namespace minijax
