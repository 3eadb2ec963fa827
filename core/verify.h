// minijax jaxpr verifier (JAX's core.check_jaxpr, for our IR).
// Owns the well-formedness and typing checks run after transformations when config().verify_jaxprs.
#pragma once
#include <source_location>

#include "core/jaxpr.h"

namespace minijax {

/// Checks that j is well formed and well typed:
///  - every variable is bound once (constvars, invars, equation outputs) before it is used;
///  - every equation's primitive exists and its output avals equal the primitive's shape rule
///    applied to its input avals (shape, dtype and memory kind; weak types are ignored); nested
///    jaxprs in params are checked recursively;
///  - every outvar is bound.
/// Throws TypeError (unbound or rebound variables, wrong output count, dtype or memory kind
/// mismatch, or the shape rule's TypeError) or ShapeError (shape mismatch, or the shape rule's
/// ShapeError/ValueError) whose message names the equation as printed, at `loc`.
/// Source: jax._src.core.check_jaxpr.
void verify_jaxpr(const Jaxpr& j, std::source_location loc = std::source_location::current());
/// verify_jaxpr of the jaxpr; also checks that consts match the constvars' avals.
void verify_jaxpr(const ClosedJaxpr& j, std::source_location loc = std::source_location::current());

}  // namespace minijax
