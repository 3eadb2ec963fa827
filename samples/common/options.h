// minijax samples: the command-line reader the sample programs share.
// Owns OptionReader ("--name value" or "--name=value", whole-argument numbers) and OptionError.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace minijax::samples {

/// A command-line mistake; what() is the line to print before the usage text.
class OptionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Reads argv one option at a time: `for (OptionReader o(argc, argv); o.next();) { if
/// (o.is("--steps")) steps = o.integer(); ... else o.unknown(); }`. An option's value is the
/// text after '=' ("--lr=0.1") or the next argument ("--lr 0.1"). Numbers must span the whole
/// value ("5x" and "" are rejected, not read as 5 or 0).
/// Throws OptionError naming the option for: a missing value, a value that is not a number of
/// the asked kind or is out of its range, a value given to a flag, an unknown option.
class OptionReader {
 public:
  OptionReader(int argc, char** argv) : argc_(argc), argv_(argv) {}

  /// Moves to the next option; false when there is none left.
  bool next();
  /// Whether the current option is `name` (e.g. "--steps").
  bool is(const char* name) const { return name_ == name; }
  /// The current option's value (string).
  std::string value();
  /// The value as an integer; OptionError outside [lo, hi].
  int64_t integer(int64_t lo = INT64_MIN, int64_t hi = INT64_MAX);
  /// The value as a floating-point number; OptionError unless > 0 when `positive`.
  double real(bool positive = false);
  /// A flag takes no value: OptionError for "--flag=value".
  void flag() const;
  /// Throws OptionError "unknown option ...".
  [[noreturn]] void unknown() const;

 private:
  int argc_;
  char** argv_;
  int i_ = 0;
  std::string name_, inline_value_;
  bool has_inline_ = false;
};

}  // namespace minijax::samples
