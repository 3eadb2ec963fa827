// minijax rematerialization API: checkpoint_name and binding the `checkpoint` equation.
// Owns the conversion of a traced body into checkpoint params (jaxpr, policy, prevent_cse).
#include "autodiff/checkpoint.h"

#include <memory>

#include "core/pjit.h"
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
                                   const std::vector<Array>& args, const CheckpointOptions& opts,
                                   std::source_location loc) {
  std::vector<Array> operands = consts;
  operands.insert(operands.end(), args.begin(), args.end());
  Params params;
  params.set("jaxpr", ClosedJaxprPtr(body));
  params.set("prevent_cse", opts.prevent_cse);
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
