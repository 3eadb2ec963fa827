// minijax reverse mode: transposition of linear jaxprs (JAX's backward_pass) and the flat vjp.
// Owns backward_pass and vjp_flat.
#pragma once
#include <functional>
#include <source_location>
#include <vector>

#include "core/staging.h"

namespace minijax {

/// Transposes a jaxpr that is linear in the invars marked in `linear` (Autodidax/JAX
/// backward_pass): equations that depend only on constants and non-linear inputs are evaluated
/// forward; the linear ones are walked in reverse, each through its primitive's transpose rule,
/// cotangents accumulated with add_any. `args` holds values for the non-linear invars (empty
/// Arrays at linear positions). cts_out: one cotangent per outvar (empty = zero).
/// Returns one cotangent per invar (empty = zero or non-linear).
/// Throws NotDifferentiableError for a linear equation whose primitive has no transpose rule.
std::vector<Array> backward_pass(const Jaxpr& j, const std::vector<Array>& consts,
                                 const std::vector<Array>& args, const std::vector<bool>& linear,
                                 const std::vector<Array>& cts_out,
                                 std::source_location loc = std::source_location::current());

/// f(primals) and its pullback: cotangents of the outputs -> cotangents of the primals
/// (zeros instantiated; float0 for integer primals).
/// vjp_flat's pullback: cotangents (one per output, f's output avals' tangent avals; an empty
/// Array is a zero) -> one cotangent per input. TypeError at the pullback's call site for a
/// wrong count, shape or dtype.
struct Pullback {
  std::function<std::vector<Array>(const std::vector<Array>&, std::source_location)> fn;
  std::vector<Array> operator()(const std::vector<Array>& cts,
                                std::source_location loc = std::source_location::current()) const {
    return fn(cts, loc);
  }
};

struct VjpResult {
  std::vector<Array> primal_outs;
  Pullback pullback;
};

/// Reverse-mode derivative = linearize + transpose. The pullback may be called several times.
VjpResult vjp_flat(const FlatFn& f, const std::vector<Array>& primals,
                   std::source_location loc = std::source_location::current());

}  // namespace minijax
