// minijax pass rename_body_variables: fresh variables for every nested jaxpr, so that a body
// reached through several equations no longer shares its values' names with the others.
#include "jit/passes/rename_body_variables.h"

#include <unordered_map>

#include "core/bodies.h"

namespace minijax {

namespace {

// `j` with every variable it binds (constvars, invars, equation outputs) replaced by a fresh one
// of the same aval, and its nested jaxprs likewise.
Jaxpr fresh_copy(const Jaxpr& j) {
  std::unordered_map<uint64_t, Var> env;
  auto bind = [&](const Var& v) {
    if (v.is_dropvar()) return Var::dropvar(v.aval());
    Var n(v.aval());
    env.emplace(v.id(), n);
    return n;
  };
  auto use = [&](const Atom& a) -> Atom {
    if (auto* v = std::get_if<Var>(&a)) {
      auto it = env.find(v->id());
      return it == env.end() ? a : Atom(it->second);
    }
    return a;
  };
  Jaxpr r;
  r.effects = j.effects;
  for (const Var& v : j.constvars) r.constvars.push_back(bind(v));
  for (const Var& v : j.invars) r.invars.push_back(bind(v));
  r.eqns.reserve(j.eqns.size());
  for (const Eqn& e : j.eqns) {
    Eqn n = e;
    for (auto& a : n.inputs) a = use(a);
    if (has_bodies(n.params)) n.params = map_bodies(n.params, fresh_copy);
    for (auto& o : n.outputs) o = bind(o);
    r.eqns.push_back(std::move(n));
  }
  for (const Atom& a : j.outvars) r.outvars.push_back(use(a));
  return r;
}

}  // namespace

Jaxpr rename_body_variables(const Jaxpr& j) {
  Jaxpr r = j;
  for (Eqn& e : r.eqns)
    if (has_bodies(e.params)) e.params = map_bodies(e.params, fresh_copy);
  return r;
}

}  // namespace minijax
