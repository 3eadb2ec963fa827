// minijax remat primitives: `checkpoint` (a body jaxpr evaluated as one equation) and `name`
// (checkpoint_name, an identity that tags a value). Owns their shape rules, impls and DCE rule.
#include "core/dce.h"
#include "core/primitive.h"
#include "core/staging.h"
#include "core/trace.h"

namespace minijax {
namespace {

// checkpoint: operands must match the body's invars (count, shape, dtype, memory kind); the
// outputs are the body's out avals. The body has no constvars (closed-over values are operands).
std::vector<ShapedArray> checkpoint_shape_rule(const std::vector<ShapedArray>& in, const Params& params) {
  const ClosedJaxprPtr& cj = params.get_jaxpr("jaxpr");
  if (!cj || !cj->jaxpr) throw ValueError("parameter 'jaxpr' is empty");
  const Jaxpr& j = *cj->jaxpr;
  if (!j.constvars.empty() || !cj->consts.empty())
    throw ValueError("the checkpointed jaxpr has " + std::to_string(j.constvars.size()) +
                     " constvars (closed-over values must be leading operands)");
  if (in.size() != j.invars.size())
    throw TypeError("called with " + std::to_string(in.size()) + " operands, the jaxpr takes " +
                    std::to_string(j.invars.size()));
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].same_type(j.invars[i].aval()))
      throw TypeError("operand " + std::to_string(i) + " is " + in[i].str() +
                      " but the jaxpr expects " + j.invars[i].aval().str());
  return j.out_avals();
}

// DCE (JAX's remat dce rule): the body keeps only what the used outputs need; the equation is
// dropped when no output is used and the body has no effects.
std::pair<std::vector<bool>, std::optional<Eqn>> checkpoint_dce(const std::vector<bool>& used_outs,
                                                                const Eqn& e) {
  const ClosedJaxprPtr& cj = e.params.get_jaxpr("jaxpr");
  bool any = false;
  for (bool b : used_outs) any |= b;
  if (!any && !eqn_has_effects(e)) return {std::vector<bool>(e.inputs.size(), false), std::nullopt};
  auto [inner, used_ins] = dce_jaxpr(*cj->jaxpr, used_outs);
  Eqn ne = e;
  auto ncj = std::make_shared<ClosedJaxpr>();
  ncj->jaxpr = std::make_shared<Jaxpr>(std::move(inner));
  ne.params.set("jaxpr", ClosedJaxprPtr(ncj));
  ne.inputs.clear();
  ne.outputs.clear();
  for (size_t i = 0; i < e.inputs.size(); ++i)
    if (used_ins[i]) ne.inputs.push_back(e.inputs[i]);
  for (size_t i = 0; i < e.outputs.size(); ++i)
    if (used_outs[i]) ne.outputs.push_back(e.outputs[i]);
  return {used_ins, std::move(ne)};
}

Registrar reg([] {
  {
    auto& p = get_or_create_primitive("checkpoint");
    p.multiple_results = true;
    p.shape_rule = checkpoint_shape_rule;
    p.impl = [](const std::vector<Array>& args, const Params& params, const std::vector<ShapedArray>&) {
      return eval_jaxpr(*params.get_jaxpr("jaxpr"), args);
    };
    p.dce = checkpoint_dce;
  }
  {
    auto& p = get_or_create_primitive("name");
    p.shape_rule = [](const std::vector<ShapedArray>& in, const Params& params) {
      if (in.size() != 1) throw TypeError("name takes one operand, got " + std::to_string(in.size()));
      if (!params.has("name")) throw ValueError("name needs a string parameter 'name'");
      (void)params.get_string("name");
      return std::vector<ShapedArray>{in[0]};
    };
    p.impl = [](const std::vector<Array>& args, const Params&, const std::vector<ShapedArray>&) {
      return std::vector<Array>{args[0]};
    };
  }
});

}  // namespace
}  // namespace minijax
