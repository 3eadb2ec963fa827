// minijax samples: the command-line reader the sample programs share.
// Owns OptionReader's parsing of option names, values and numbers.
#include "samples/common/options.h"

namespace minijax::samples {

bool OptionReader::next() {
  if (++i_ >= argc_) return false;
  name_ = argv_[i_];
  has_inline_ = false;
  inline_value_.clear();
  const size_t eq = name_.find('=');
  if (name_.rfind("--", 0) == 0 && eq != std::string::npos) {
    inline_value_ = name_.substr(eq + 1);
    name_ = name_.substr(0, eq);
    has_inline_ = true;
  }
  return true;
}

std::string OptionReader::value() {
  if (has_inline_) return inline_value_;
  if (i_ + 1 >= argc_) throw OptionError(name_ + " needs a value");
  return argv_[++i_];
}

int64_t OptionReader::integer(int64_t lo, int64_t hi) {
  const std::string v = value();
  size_t used = 0;
  long long r = 0;
  try {
    r = std::stoll(v, &used);
  } catch (const std::logic_error&) {
    used = std::string::npos;
  }
  if (used != v.size() || r < lo || r > hi)
    throw OptionError("bad value for " + name_ + ": '" + v + "' (an integer in [" +
                      std::to_string(lo) + ", " + std::to_string(hi) + "])");
  return r;
}

double OptionReader::real(bool positive) {
  const std::string v = value();
  size_t used = 0;
  double r = 0;
  try {
    r = std::stod(v, &used);
  } catch (const std::logic_error&) {
    used = std::string::npos;
  }
  if (used != v.size() || (positive && !(r > 0)))
    throw OptionError("bad value for " + name_ + ": '" + v + "'" + (positive ? " (a number > 0)" : ""));
  return r;
}

void OptionReader::flag() const {
  if (has_inline_) throw OptionError(name_ + " takes no value");
}

void OptionReader::unknown() const { throw OptionError("unknown option " + std::string(argv_[i_])); }

}  // namespace minijax::samples
