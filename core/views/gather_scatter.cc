// minijax typed views of gather's and the scatter family's params (core/views/gather_scatter.h).
// Owns the name literals of these primitives outside their registrations, and their checks.
#include "core/views/gather_scatter.h"

#include <algorithm>

#include "core/param_reads.h"

namespace minijax {

namespace {
bool flag(const Params& p, const char* key) { return p.has(key) && param_bool(p, key); }
}  // namespace

const std::vector<const char*>& scatter_primitive_names() {
  static const std::vector<const char*> names{"scatter_add", "scatter", "scatter_mul", "scatter_min",
                                              "scatter_max"};
  return names;
}

bool GatherParams::is(const Primitive& p) {
  static const Primitive* q = &get_or_create_primitive("gather");
  return &p == q;
}
bool GatherParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
GatherParams gather_params(const Eqn& e) {
  if (!GatherParams::is(e)) views::wrong_primitive("GatherParams", e);
  return GatherParams::from(e.params);
}
GatherParams GatherParams::from(const Params& p) {
  return views::read_view("gather", [&] {
    GatherParams g;
    g.dimension_numbers = lax::gather_dimension_numbers(p);
    g.slice_sizes = param_ints(p, "slice_sizes");
    g.indices_are_sorted = flag(p, "indices_are_sorted");
    g.unique_indices = flag(p, "unique_indices");
    g.mode = lax::gather_scatter_mode(p);
    g.fill_value = lax::gather_fill_value(p);
    return g;
  });
}
Params GatherParams::to_params() const {
  return lax::gather_params(dimension_numbers, slice_sizes, options());
}

bool ScatterParams::is(const Primitive& p) {
  static const std::vector<const Primitive*> q = [] {
    std::vector<const Primitive*> v;
    for (const char* n : scatter_primitive_names()) v.push_back(&get_or_create_primitive(n));
    return v;
  }();
  return std::find(q.begin(), q.end(), &p) != q.end();
}
bool ScatterParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
ScatterParams scatter_params(const Eqn& e) {
  if (!ScatterParams::is(e)) views::wrong_primitive("ScatterParams", e);
  return ScatterParams::from(e.params);
}
ScatterParams ScatterParams::from(const Params& p) {
  return views::read_view("scatter", [&] {
    ScatterParams s;
    s.dimension_numbers = lax::scatter_dimension_numbers(p);
    s.indices_are_sorted = flag(p, "indices_are_sorted");
    s.unique_indices = flag(p, "unique_indices");
    s.mode = lax::gather_scatter_mode(p);
    return s;
  });
}
Params ScatterParams::to_params() const { return lax::scatter_params(dimension_numbers, options()); }

namespace {
Registrar reg_checks([] {
  get_or_create_primitive("gather").check_params = [](const Params& p) {
    return GatherParams::from(p).to_params();
  };
  for (const char* n : scatter_primitive_names())
    get_or_create_primitive(n).check_params = [](const Params& p) {
      return ScatterParams::from(p).to_params();
    };
});
}  // namespace

}  // namespace minijax
