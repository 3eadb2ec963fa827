// minijax rematerialization API: checkpoint_name and binding the `checkpoint` equation.
// Owns the conversion of a traced body into checkpoint params (jaxpr, policy, prevent_cse).
#include "autodiff/checkpoint.h"

#include <memory>

#include "core/pjit.h"
#include "core/prevent_cse.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/control_flow.h"

namespace minijax {

Array checkpoint_name(const Array& x, const std::string& name, std::source_location loc) {
  if (!x.defined())
    throw TypeError("checkpoint_name(x, '" + name + "'): x must be an array, got an empty Array", loc);
  CheckpointNameParams p;
  p.name = name;
  return minijax::bind1(CheckpointNameParams::primitive(), {x}, p.to_params(), loc);
}

namespace detail {

std::vector<Array> bind_checkpoint(const ClosedJaxprPtr& body, const std::vector<Array>& consts,
                                   const std::vector<Array>& args, const std::vector<size_t>& leaves_per_arg,
                                   const CheckpointOptions& opts, std::source_location loc) {
  std::vector<Array> operands = consts;
  operands.insert(operands.end(), args.begin(), args.end());
  CallParams params;
  params.body_key = checkpoint_primitive().body_params.at(0);
  params.jaxpr = body;
  const PreventCse& pc = opts.prevent_cse;
  if (!pc.per_argument()) {
    params.prevent_cse = pc.all();
  } else {
    // JAX's checkpoint: False for each closed-over value, then each argument's flag broadcast to
    // its leaves (broadcast_prefix).
    if (pc.flags().size() != leaves_per_arg.size())
      throw ValueError("checkpoint: prevent_cse lists " + std::to_string(pc.flags().size()) +
                           " flags for a call with " + std::to_string(leaves_per_arg.size()) +
                           " traced arguments (one flag per argument that is not static)",
                       loc);
    std::vector<bool> per_operand(consts.size(), false);
    for (size_t i = 0; i < leaves_per_arg.size(); ++i) per_operand.insert(per_operand.end(), leaves_per_arg[i], pc.flags()[i]);
    params.prevent_cse = prevent_cse_param(per_operand);
  }
  params.differentiated = false;
  params.policy = ParamObjectPtr(opts.policy);
  return minijax::bind(checkpoint_primitive(), operands, params.to_params(), loc);
}

std::vector<bool> static_mask(const std::vector<int>& static_argnums, size_t nargs,
                              std::source_location loc) {
  std::vector<bool> m(nargs, false);
  for (int i : static_argnums) {
    long k = i < 0 ? long(nargs) + i : long(i);
    if (k < 0 || k >= long(nargs))
      throw ValueError("checkpoint: static_argnums entry " + std::to_string(i) +
                           " is out of range for a call with " + std::to_string(nargs) + " arguments",
                       loc);
    m[size_t(k)] = true;
  }
  return m;
}

}  // namespace detail
}  // namespace minijax
