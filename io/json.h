// minijax io: the JSON the safetensors header and npz's __minijax_dtypes__.json member are written in.
// Owns detail::json: a strict RFC 8259 parser (values kept in file order) and string quoting.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace minijax::detail::json {

/// Malformed JSON; what() says what was expected and at which byte offset.
class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A parsed JSON value. Numbers keep their text (the readers need exact integers only).
struct Value {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  std::string text;                                    ///< a string's value or a number's text
  std::vector<Value> items;                            ///< an array's elements
  std::vector<std::pair<std::string, Value>> members;  ///< an object's members, in file order

  /// The member named `key` of an object, or nullptr.
  const Value* find(const std::string& key) const;
  /// A number written as a non-negative integer below 2^64 (digits only: no sign, fraction or
  /// exponent) into `out`; false otherwise.
  bool to_u64(uint64_t& out) const;
  /// "null", "a boolean", "a number", "a string", "an array", "an object".
  const char* kind_name() const;
};

/// Parses one JSON text (RFC 8259: whitespace around one value, nothing after it). Strings must
/// be valid UTF-8 with valid escapes (\uXXXX surrogates paired); an object's keys must be unique;
/// nesting is limited to 64 levels. Throws ParseError naming the byte offset and what was expected.
Value parse(std::string_view text);

/// `s` as a JSON string literal: quotes, `\"`, `\\`, and control characters escaped (\n, \t, ...,
/// \u00XX); other bytes (UTF-8) are kept as they are.
std::string quote(const std::string& s);

}  // namespace minijax::detail::json
