// minijax linearize: JAX's direct linearize — JVP with concrete primals while the tangent
// equations are staged into a linear jaxpr. Owns linearize_flat.
#pragma once
#include <source_location>
#include <vector>

#include "core/staging.h"

namespace minijax {

/// Result of linearizing f at primals: f(primals) and the linear map primal tangents -> output
/// tangents as a closed jaxpr whose constants are the residuals (concrete values eagerly, tracers
/// of enclosing traces under jit/grad).
struct LinearizeResult {
  std::vector<Array> primal_outs;
  /// invars: one tangent per primal input (float0 for int/bool inputs, unused);
  /// outvars: one tangent per output (zeros staged for outputs with a symbolic-zero tangent).
  ClosedJaxpr linear;
  /// out_zero[i]: output i's tangent is identically zero.
  std::vector<bool> out_zero;
};

/// Linearizes a flat function (Autodidax "linearize"; JAX's direct linearize): primals stay as
/// given, so under eager evaluation user code may branch on values. Throws what f throws, and
/// NotDifferentiableError for primitives without a JVP rule on a differentiated path.
LinearizeResult linearize_flat(const FlatFn& f, const std::vector<Array>& primals,
                               std::source_location loc = std::source_location::current());

}  // namespace minijax
