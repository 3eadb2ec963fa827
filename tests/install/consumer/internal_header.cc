// minijax consumer check: a program naming an internal header must not compile (run.cmake expects
// the compiler to report <minijax/core/jaxpr.h> missing: internals are installed under minijax/detail/).
#include <minijax/core/jaxpr.h>

int main() { return 0; }
