// minijax typed view of custom_lin: the linear part of a custom_vjp function between linearize
// and transpose. Owns CustomLinParams (its bwd rule, residual count, output avals, in_zeros).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "core/jaxpr.h"
#include "core/params.h"

namespace minijax {

/// custom_lin's params (autodiff/custom_derivatives.cc binds it): `bwd` (the custom_vjp's bwd
/// rule object), `num_res` (the leading residual operands), `out_avals` (the primal outputs'
/// tangent avals, an object), `symbolic_zeros`, and `in_zeros` (one 0/1 per argument of the
/// function: 1 where its tangent is float0 and so not an operand; absent means all 0).
struct CustomLinParams {
  ParamObjectPtr bwd;
  int64_t num_res = 0;
  ParamObjectPtr out_avals;
  bool symbolic_zeros = false;
  std::optional<std::vector<int64_t>> in_zeros;

  static bool is(const Eqn& e);
  /// Throws ValueError "custom_lin: missing parameter 'num_res'" (or of another type).
  static CustomLinParams from(const Params& p);
  Params to_params() const;
};

}  // namespace minijax
