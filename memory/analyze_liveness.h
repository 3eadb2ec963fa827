// minijax liveness: for one jaxpr (a program or a body), where each variable is defined and last
// used, in equation positions. Compile time only; includes only core/.
//
// Takes a jaxpr after fusion (values inside fusion bodies are not variables of the jaxpr).
// Guarantees: every invar has def = -1; every equation output def = its equation's position;
// last_use = the position of the last equation reading it, or eqns.size() for outvars (live to
// the end), or def for values nobody reads. Nested bodies are separate scopes (their own
// analyze_liveness); a body's use of an outer value counts as a use by the enclosing equation.
// Source: the classic linear-scan live interval (Poletto & Sarkar, "Linear scan register
// allocation", TOPLAS 1999) over a straight-line schedule.
#pragma once
#include <cstdint>
#include <unordered_map>

#include "core/jaxpr.h"

namespace minijax {

/// [def, last_use] of one variable, in equation positions (see the file comment).
struct LiveInterval {
  int64_t def = -1;
  int64_t last_use = -1;
};

/// The live interval of every variable of one jaxpr scope.
struct Liveness {
  std::unordered_map<Var, LiveInterval, VarHash> intervals;
  const LiveInterval& at(const Var& v) const;
};

/// Live intervals of j's invars and equation outputs (see the file comment).
Liveness analyze_liveness(const Jaxpr& j);

}  // namespace minijax
