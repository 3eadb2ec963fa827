// minijax global configuration (the only mutable globals besides the registries).
// Owns switches such as jaxpr verification after every transformation.
#pragma once

namespace minijax {

/// Process-wide settings. Read/written from the main thread before transformations run.
struct Config {
  /// Run verify_jaxpr on every jaxpr a transformation produces. On in debug builds and tests.
#ifdef NDEBUG
  bool verify_jaxprs = false;
#else
  bool verify_jaxprs = true;
#endif
};

/// The process-wide configuration.
Config& config();

}  // namespace minijax
