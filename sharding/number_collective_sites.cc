// minijax collective site ids: the pre-order numbering of an SPMD program's collective and
// axis_index equations (Eqn::site) and the top-level equation holding each.
#include "sharding/number_collective_sites.h"

#include "core/bodies.h"
#include "core/collective_params.h"
#include "core/views/collectives.h"

namespace minijax {

namespace {

bool is_collective(const Eqn& e) { return CollectiveParams::kind_of(e).has_value(); }

// Whether `j` or a body nested in it holds a collective (bodies without one are left shared).
bool holds_collective(const Jaxpr& j) {
  for (const Eqn& e : j.eqns) {
    if (is_collective(e)) return true;
    for (const SubJaxpr& s : subjaxprs(e))
      if (holds_collective(*s.jaxpr->jaxpr)) return true;
  }
  return false;
}

void number_in(Jaxpr& j, bool top, size_t top_index, std::vector<size_t>& where) {
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    Eqn& e = j.eqns[i];
    const size_t at = top ? i : top_index;
    if (is_collective(e)) {
      e.site = int32_t(where.size());
      where.push_back(at);
    }
    bool any = false;
    for (const SubJaxpr& s : subjaxprs(e)) any = any || holds_collective(*s.jaxpr->jaxpr);
    if (!any) continue;
    e.params = map_bodies(e.params, [&](const Jaxpr& body) {
      if (!holds_collective(body)) return body;
      Jaxpr copy = body;
      number_in(copy, false, at, where);
      return copy;
    });
  }
}

}  // namespace

std::vector<size_t> number_collective_sites(Jaxpr& program) {
  std::vector<size_t> where;
  number_in(program, true, 0, where);
  return where;
}

}  // namespace minijax
