// minijax remat policy decisions: what partial evaluation does with a known equation.
// Owns Saveable / Recompute / Offloadable and the policy callback type (JAX's `saveable`).
#pragma once
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "core/aval.h"
#include "core/params.h"
#include "core/primitive.h"

namespace minijax {

/// The output is kept as a residual for the backward (staged) side.
struct Saveable {};
/// The equation is recomputed on the staged side from its (residual) inputs.
struct Recompute {};
/// The output is kept as a residual in memory kind `dst` (a device_put on the known side) and
/// brought back to `src` on the staged side.
struct Offloadable {
  MemoryKind src = MemoryKind::device;
  MemoryKind dst = MemoryKind::pinned_host;
};
using PolicyDecision = std::variant<Recompute, Saveable, Offloadable>;

/// A policy: asked, for every equation whose inputs are all known, what to do with its outputs
/// (JAX's `saveable(prim, *avals, **params)`). The default saves everything.
using SaveablePolicy = std::function<PolicyDecision(const Primitive&, const std::vector<ShapedArray>&,
                                                    const Params&)>;

/// JAX's everything_saveable (the default of partial_eval_jaxpr_custom under plain grad).
PolicyDecision everything_saveable_policy(const Primitive&, const std::vector<ShapedArray>&,
                                          const Params&);

}  // namespace minijax
