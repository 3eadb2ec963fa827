// minijax rematerialization API: checkpoint_name and binding the `checkpoint` equation.
// Owns the conversion of a traced body into checkpoint params (jaxpr, policy, prevent_cse).
#include "autodiff/checkpoint.h"

#include <memory>

#include "core/pjit.h"
#include "core/prevent_cse.h"
#include "core/primitive.h"
#include "core/trace.h"

namespace minijax {

Array checkpoint_name(const Array& x, const std::string& name, std::source_location loc) {
  if (!x.defined())
    throw TypeError("checkpoint_name(x, '" + name + "'): x must be an array, got an empty Array", loc);
  return minijax::bind1(primitive("name"), {x}, Params{{"name", name}}, loc);
}

namespace detail {

std::vector<Array> bind_checkpoint(const ClosedJaxprPtr& body, const std::vector<Array>& consts,
                                   const std::vector<Array>& args, const std::vector<size_t>& leaves_per_arg,
                                   const CheckpointOptions& opts, std::source_location loc) {
  std::vector<Array> operands = consts;
  operands.insert(operands.end(), args.begin(), args.end());
  Params params;
  params.set("jaxpr", ClosedJaxprPtr(body));
  const PreventCse& pc = opts.prevent_cse;
  if (!pc.per_argument()) {
    params.set("prevent_cse", pc.all());
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
    params.set("prevent_cse", prevent_cse_param(per_operand));
  }
  params.set("differentiated", false);
  params.set("policy", ParamObjectPtr(opts.policy));
  return minijax::bind(primitive("checkpoint"), operands, params, loc);
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
