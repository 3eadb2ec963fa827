// minijax error types: the exceptions every layer throws for bad input.
// Owns the formatting of call sites into messages.
#include "core/errors.h"

namespace minijax {

std::string format_location(const std::source_location& loc) {
  std::string f = loc.file_name();
  return f + ":" + std::to_string(loc.line()) + " (" + loc.function_name() + ")";
}

Error::Error(const std::string& msg, std::source_location loc)
    : std::runtime_error(msg + "\n  at " + format_location(loc)), msg_(msg), loc_(loc) {}

}  // namespace minijax
