// minijax typed view of custom_lin (core/views/custom_lin.h): reads and writes its params.
// Owns the custom_lin primitive's params check.
#include "core/views/custom_lin.h"
#include "core/param_reads.h"

#include "core/primitive.h"
#include "core/views/param_keys.h"
#include "core/views/view.h"

namespace minijax {

namespace {
const Primitive* custom_lin_p() {
  static const Primitive* p = &get_or_create_primitive("custom_lin");
  return p;
}
}  // namespace

bool CustomLinParams::is(const Eqn& e) { return e.primitive == custom_lin_p(); }

CustomLinParams CustomLinParams::from(const Params& p) {
  return views::read_view("custom_lin", [&] {
    views::check_known_keys(p, {"bwd", "num_res", "out_avals", "symbolic_zeros", "in_zeros"});
    CustomLinParams c;
    c.bwd = param_object(p, "bwd");
    c.num_res = param_int(p, "num_res");
    if (c.num_res < 0) throw ValueError("num_res must be >= 0, got " + std::to_string(c.num_res));
    c.out_avals = param_object(p, "out_avals");
    c.symbolic_zeros = param_bool(p, "symbolic_zeros");
    if (p.has("in_zeros")) c.in_zeros = param_ints(p, "in_zeros");
    return c;
  });
}

Params CustomLinParams::to_params() const {
  Params p{{"bwd", bwd}, {"num_res", num_res}, {"out_avals", out_avals}, {"symbolic_zeros", symbolic_zeros}};
  if (in_zeros) p.set("in_zeros", *in_zeros);
  return p;
}

namespace {
Registrar reg([] {
  get_or_create_primitive("custom_lin").check_params = [](const Params& p) { return CustomLinParams::from(p).to_params(); };
});
}  // namespace

}  // namespace minijax
