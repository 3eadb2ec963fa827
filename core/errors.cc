// minijax error types: the exceptions every layer throws for bad input.
// Owns the formatting of call sites into messages.
#include "core/errors.h"

#include <optional>
#include <string_view>
#include <typeinfo>

namespace minijax {

std::string format_location(const std::source_location& loc) {
  std::string f = loc.file_name();
  return f + ":" + std::to_string(loc.line()) + " (" + loc.function_name() + ")";
}

Error::Error(const std::string& msg, std::source_location loc)
    : std::runtime_error(msg + "\n  at " + format_location(loc)), msg_(msg), loc_(loc) {}

namespace detail {

namespace {

// Throws an E carrying msg at loc when e is exactly an E (a subclass declared elsewhere is left to
// the caller, which rethrows it unchanged).
template <class E>
void rethrow_as(const Error& e, const std::string& msg, std::source_location loc) {
  if (typeid(e) == typeid(E)) throw E(msg, loc);
}

}  // namespace

bool is_library_location(const std::source_location& loc) {
  auto in_library_folder = [](std::string_view f) {
    for (std::string_view dir : {"core/", "autodiff/", "sharding/", "memory/", "jit/", "io/"})
      if (f.starts_with(dir)) return true;
    return false;
  };
  // This file is <root>core/errors.cc as the build named it (absolute, relative to the build
  // folder, or empty when compiled from the source folder): every library source shares <root>.
  static const std::optional<std::string_view> root = []() -> std::optional<std::string_view> {
    std::string_view self = __FILE__;
    constexpr std::string_view tail = "core/errors.cc";
    if (!self.ends_with(tail)) return std::nullopt;
    return self.substr(0, self.size() - tail.size());
  }();
  std::string_view f = loc.file_name();
  if (root && f.starts_with(*root) && in_library_folder(f.substr(root->size()))) return true;
  // An installed header (<prefix>/include/minijax/<folder>/...), compiled into the user's program.
  constexpr std::string_view installed = "include/minijax/";
  const size_t k = f.find(installed);
  return k != std::string_view::npos && in_library_folder(f.substr(k + installed.size()));
}

void rethrow_at(const Error& e, const std::string& prefix, std::source_location loc) {
  const std::string msg = prefix + e.message();
  rethrow_as<ShapeError>(e, msg, loc);
  rethrow_as<TypeError>(e, msg, loc);
  rethrow_as<ValueError>(e, msg, loc);
  rethrow_as<IndexError>(e, msg, loc);
  rethrow_as<ConcretizationError>(e, msg, loc);
  rethrow_as<UnexpectedTracerError>(e, msg, loc);
  rethrow_as<NotDifferentiableError>(e, msg, loc);
  rethrow_as<IOError>(e, msg, loc);
  rethrow_as<ShardingError>(e, msg, loc);
  rethrow_as<DistributedError>(e, msg, loc);
  rethrow_as<ResourceExhaustedError>(e, msg, loc);
  rethrow_as<Error>(e, msg, loc);
}

}  // namespace detail

}  // namespace minijax
