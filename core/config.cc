// minijax global configuration.
// Owns the single Config instance.
#include "core/config.h"

namespace minijax {
bool default_verify_jaxprs() {
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

Config& config() {
  static Config c;
  return c;
}
}  // namespace minijax
