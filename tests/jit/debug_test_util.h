// minijax debugging tests: the helpers test_debug.cc and test_debug_nans.cc share (an error's
// text, a substring check).
#pragma once
#include <exception>
#include <functional>
#include <string>

namespace debug_test {

/// The what() of the exception f throws, or "" when it throws none.
inline std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

inline bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace debug_test
