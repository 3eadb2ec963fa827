// minijax tool: prints the name of every registered primitive, one per line (primitive_names()).
// Owns nothing else; tools/primitive_name_literals.sh reads its output (target minijax_primitive_names).
#include <cstdio>

#include "core/primitive.h"

int main() {
  for (const auto& n : minijax::primitive_names()) std::printf("%s\n", n.c_str());
  return 0;
}
