// minijax dead-code elimination of jaxprs (JAX's pe.dce_jaxpr).
// Owns dce_jaxpr, the default per-equation rule and the effect test that keeps equations alive.
#pragma once
#include <utility>
#include <vector>

#include "core/jaxpr.h"

namespace minijax {

/// Removes the equations of `j` whose outputs are not needed for the outputs marked in
/// `used_outputs` (one flag per outvar), as JAX's pe.dce_jaxpr. Equations with effects (their
/// own or those of a nested jaxpr) are always kept. Primitives with a `dce` rule (pjit,
/// closed_call, scan, ...) prune their bodies; the others keep an equation whole when any output
/// is used. Rules prune bodies nested up to 32 levels deep; deeper equations are kept whole
/// (nothing is recomputed wrongly, a later DCE of the inlined program prunes them), so the
/// recursion stays bounded however deep the nest. Returns the pruned jaxpr — outvars restricted to the used ones, invars restricted to
/// the used ones (or all, where `instantiate`), constvars unchanged — and one flag per original
/// invar saying whether it is used (or instantiated).
/// Throws ValueError if used_outputs.size() != j.outvars.size() (or instantiate's size differs
/// from the number of invars).
std::pair<Jaxpr, std::vector<bool>> dce_jaxpr(const Jaxpr& j, const std::vector<bool>& used_outputs,
                                              bool instantiate = false);
/// As above with one instantiate flag per invar.
std::pair<Jaxpr, std::vector<bool>> dce_jaxpr(const Jaxpr& j, const std::vector<bool>& used_outputs,
                                              const std::vector<bool>& instantiate);

/// Whether an equation must be kept for its effects: its own effects or any equation's effects
/// in its nested jaxprs (at any depth; walked from a worklist, without recursion).
bool eqn_has_effects(const Eqn& e);
/// Whether any equation of j (recursively) has effects.
bool jaxpr_has_effects(const Jaxpr& j);

}  // namespace minijax
