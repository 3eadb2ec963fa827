// minijax typed views of the sorting primitives' params (core/views/sorting.h).
// Owns the name literals of sort and top_k outside their registrations, and their checks.
#include "core/views/sorting.h"

#include "core/param_reads.h"

namespace minijax {
namespace {

const Primitive* prim(const char* name) { return &get_or_create_primitive(name); }

}  // namespace

bool SortParams::is(const Primitive& p) {
  static const Primitive* q = prim("sort");
  return &p == q;
}
bool SortParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
SortParams SortParams::from(const Params& p) {
  return views::read_view("sort", [&] {
    return SortParams{param_int(p, "dimension"), param_bool(p, "is_stable"), param_int(p, "num_keys")};
  });
}
Params SortParams::to_params() const {
  return Params{{"dimension", dimension}, {"is_stable", is_stable}, {"num_keys", num_keys}};
}
SortParams sort_params(const Eqn& e) {
  if (!SortParams::is(e)) views::wrong_primitive("SortParams", e);
  return SortParams::from(e.params);
}

bool TopKParams::is(const Primitive& p) {
  static const Primitive* q = prim("top_k");
  return &p == q;
}
bool TopKParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
TopKParams TopKParams::from(const Params& p) {
  return views::read_view("top_k", [&] { return TopKParams{param_int(p, "k")}; });
}
Params TopKParams::to_params() const { return Params{{"k", k}}; }
TopKParams top_k_params(const Eqn& e) {
  if (!TopKParams::is(e)) views::wrong_primitive("TopKParams", e);
  return TopKParams::from(e.params);
}

namespace {

Registrar reg_checks([] {
  get_or_create_primitive("sort").check_params = [](const Params& p) {
    return SortParams::from(p).to_params();
  };
  get_or_create_primitive("top_k").check_params = [](const Params& p) {
    return TopKParams::from(p).to_params();
  };
});

}  // namespace
}  // namespace minijax
