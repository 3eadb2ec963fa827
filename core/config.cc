// minijax global configuration.
// Owns the single Config instance.
#include "core/config.h"

namespace minijax {
Config& config() {
  static Config c;
  return c;
}
}  // namespace minijax
