// minijax liveness: live intervals of one jaxpr scope, in equation positions.
// Owns analyze_liveness.
#include "memory/analyze_liveness.h"

#include "core/errors.h"

namespace minijax {

const LiveInterval& Liveness::at(const Var& v) const {
  auto it = intervals.find(v);
  if (it == intervals.end()) throw ValueError("liveness: variable not defined in this scope");
  return it->second;
}

Liveness analyze_liveness(const Jaxpr& j) {
  Liveness L;
  for (auto& v : j.constvars) L.intervals[v] = {-1, -1};
  for (auto& v : j.invars) L.intervals[v] = {-1, -1};
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    for (auto& in : e.inputs)
      if (auto* v = std::get_if<Var>(&in)) {
        auto it = L.intervals.find(*v);
        if (it != L.intervals.end()) it->second.last_use = int64_t(i);
      }
    for (auto& o : e.outputs) L.intervals[o] = {int64_t(i), int64_t(i)};
  }
  for (auto& o : j.outvars)
    if (auto* v = std::get_if<Var>(&o)) {
      auto it = L.intervals.find(*v);
      if (it != L.intervals.end()) it->second.last_use = int64_t(j.eqns.size());
    }
  return L;
}

}  // namespace minijax
