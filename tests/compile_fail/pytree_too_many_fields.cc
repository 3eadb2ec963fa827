// minijax compile-fail case (tests/compile_fail/run.cmake): MJ_REGISTER_PYTREE of 343 fields, one
// past its limit, must fail with the static_assert naming the limit as its first error; the
// control, 342 fields (the limit itself), must preprocess to all 342 member pointers.
#include <minijax/minijax.h>

#define MJ_TEN(p) p##0, p##1, p##2, p##3, p##4, p##5, p##6, p##7, p##8, p##9
#define MJ_HUNDRED(p) \
  MJ_TEN(p##0), MJ_TEN(p##1), MJ_TEN(p##2), MJ_TEN(p##3), MJ_TEN(p##4), MJ_TEN(p##5), MJ_TEN(p##6), \
      MJ_TEN(p##7), MJ_TEN(p##8), MJ_TEN(p##9)
#ifdef MJ_COMPILE_FAIL_CONTROL
#define FIELDS MJ_HUNDRED(a), MJ_HUNDRED(b), MJ_HUNDRED(c), MJ_TEN(d0), MJ_TEN(d1), MJ_TEN(d2), MJ_TEN(d3), d40, d41
#else
#define FIELDS MJ_HUNDRED(a), MJ_HUNDRED(b), MJ_HUNDRED(c), MJ_TEN(d0), MJ_TEN(d1), MJ_TEN(d2), MJ_TEN(d3), d40, d41, d42
#endif
// As a user writes them: the field names themselves in the macro's arguments.
#define REGISTER(...) MJ_REGISTER_PYTREE(__VA_ARGS__)

struct Big {
  mj::Array FIELDS;
};
REGISTER(Big, FIELDS)

int main() { return int(mj::tree_flatten(Big{}).size()) == 342 ? 0 : 1; }
