// minijax compile-fail case (tests/compile_fail/run.cmake): grad and value_and_grad of functions
// returning a C++ float or double must stop at one static_assert each, saying to return an Array.
#include <minijax/minijax.h>

float f_float(const mj::Array& x) { return x.item<float>(); }
double f_double(const mj::Array& x) { return double(x.item<float>()); }

int main() {
  mj::Array x = mj::scalar(1.0);
#ifdef MJ_COMPILE_FAIL_CONTROL
  // The control: the same calls on a function returning an mj::Array compile.
  (void)mj::grad([](const mj::Array& a) { return a * a; })(x);
  (void)mj::value_and_grad([](const mj::Array& a) { return a * a; })(x);
#else
  (void)mj::grad(f_float)(x);
  (void)mj::value_and_grad(f_double)(x);
#endif
  return 0;
}
