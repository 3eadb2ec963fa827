// minijax jaxpr pictures with shardings: core's to_dot with each variable's propagated sharding.
// Owns the to_dot overload over a PropagationResult (jit/jit.h adds one over a Lowered program).
#pragma once
#include <string>

#include "core/to_dot.h"
#include "sharding/propagate_shardings.h"

namespace minijax {

/// to_dot (core/to_dot.h) of a jaxpr that `propagation` was computed for: each variable's edges
/// carry its propagated sharding under its type, as Shardy prints it (`[{"data"}, {}]`, with
/// `, memory_kind=pinned_host` when not on the device), bodies' variables included; a variable
/// propagation has no sharding for gets no extra line. `opts.annotate`, if set, is called too
/// and its line follows the sharding's. Throws nothing beyond what to_dot throws.
std::string to_dot(const Jaxpr& jaxpr, const PropagationResult& propagation, DotOptions opts = {});

}  // namespace minijax
