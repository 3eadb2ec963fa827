// minijax partial evaluation of one `scan` equation, for the pe rule and for scan's transpose.
// Owns the declaration of scan_partial_eval and its choice for known carries.
#pragma once
#include <vector>

#include "autodiff/partial_eval.h"

namespace minijax {

/// What the staged scan does with a known carry its body needs.
enum class KnownCarries {
  stack,      ///< the known scan stacks it [length, ...] as a residual (linearize, transpose)
  recompute,  ///< the staged scan carries it again, recomputing it from the residuals (JAX's
              ///< _scan_partial_eval_custom under a policy: nothing per iteration is kept for it)
};

/// Splits scan equation `e` with the operands in `in_unknowns` unknown, under `policy` (empty:
/// save everything) for the equations of its body: a known scan over the known operands that
/// yields the known outputs and the stacked residuals (plus the residuals hoisted before it), and
/// a staged scan over the residuals and the operands it reads. Residual placements:
/// docs/design.md ("Scan residuals"). Throws ValueError if the body has constvars.
/// Source: jax/_src/lax/control_flow/loops.py (_scan_partial_eval_custom, _scan_partial_eval).
PeCustomResult scan_partial_eval(const Eqn& e, const std::vector<bool>& in_unknowns, const SaveablePolicy& policy,
                                 KnownCarries carries);

}  // namespace minijax
