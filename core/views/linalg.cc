// minijax typed views of the linear-algebra primitives' params (core/views/linalg.h).
// Owns the name literal of triangular_solve outside its registration, and its params check.
#include "core/views/linalg.h"

#include "core/param_reads.h"

namespace minijax {

bool TriangularSolveParams::is(const Primitive& p) {
  static const Primitive* q = &get_or_create_primitive("triangular_solve");
  return &p == q;
}
bool TriangularSolveParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
TriangularSolveParams TriangularSolveParams::from(const Params& p) {
  return views::read_view("triangular_solve", [&] {
    return TriangularSolveParams{param_bool(p, "left_side"), param_bool(p, "lower"),
                                 param_bool(p, "transpose_a"), param_bool(p, "conjugate_a"),
                                 param_bool(p, "unit_diagonal")};
  });
}
Params TriangularSolveParams::to_params() const {
  return Params{{"left_side", left_side},
                {"lower", lower},
                {"transpose_a", transpose_a},
                {"conjugate_a", conjugate_a},
                {"unit_diagonal", unit_diagonal}};
}
TriangularSolveParams triangular_solve_params(const Eqn& e) {
  if (!TriangularSolveParams::is(e)) views::wrong_primitive("TriangularSolveParams", e);
  return TriangularSolveParams::from(e.params);
}

namespace {

Registrar reg_checks([] {
  get_or_create_primitive("triangular_solve").check_params = [](const Params& p) {
    return TriangularSolveParams::from(p).to_params();
  };
});

}  // namespace
}  // namespace minijax
