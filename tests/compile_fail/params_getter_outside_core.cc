// minijax compile-fail case (tests/compile_fail/run.cmake): outside core/, a parameter is read
// through its primitive's typed view; Params' string-keyed getters are private (a renamed key
// would otherwise fail only at run time).
#include "core/params.h"
#include "core/views/control_flow.h"

int main() {
  minijax::Params p{{"num_carry", int64_t(1)}};
#ifdef MJ_COMPILE_FAIL_CONTROL
  // The control: the public part of Params compiles (storage, printing order, equality).
  return p.has("num_carry") && !p.empty() && p == p ? 0 : 1;
#else
  return int(p.get_int("num_carry"));
#endif
}
