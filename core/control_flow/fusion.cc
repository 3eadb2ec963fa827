// minijax `fusion` primitive (declared in core/fusion.h): a fused kernel as one equation.
// Owns its shape rule (operands checked against the body), eager impl, DCE rule and absences.
#include "core/fusion.h"

#include <algorithm>

#include "core/dce.h"
#include "core/staging.h"

namespace minijax {
namespace {

const char* kInternal = "compiler-internal: fuse runs after autodiff and batching";

std::vector<ShapedArray> fusion_shape_rule(const std::vector<ShapedArray>& in, const Params& params) {
  const ClosedJaxprPtr& cj = params.get_jaxpr("jaxpr");
  if (!cj || !cj->jaxpr) throw ValueError("parameter 'jaxpr' is empty");
  const Jaxpr& j = *cj->jaxpr;
  if (!j.constvars.empty() || !cj->consts.empty())
    throw ValueError("the fused jaxpr has " + std::to_string(j.constvars.size()) +
                     " constvars (a fusion's values are all operands)");
  const std::string& kind = params.get_string("kind");
  if (kind != "loop" && kind != "reduction")
    throw ValueError("fusion kind must be 'loop' or 'reduction', got '" + kind + "'");
  (void)params.get_string("name");
  if (in.size() != j.invars.size())
    throw TypeError("called with " + std::to_string(in.size()) + " operands, the fused jaxpr takes " +
                    std::to_string(j.invars.size()));
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].same_type(j.invars[i].aval()))
      throw TypeError("operand " + std::to_string(i) + " is " + in[i].str() +
                      " but the fused jaxpr expects " + j.invars[i].aval().str());
  return j.out_avals();
}

// Unused results are dropped and the body pruned to what the used ones need (every body input
// kept only if read). The equation goes when no result is used.
std::pair<std::vector<bool>, std::optional<Eqn>> fusion_dce(const std::vector<bool>& used_outs,
                                                            const Eqn& e) {
  const ClosedJaxprPtr& cj = e.params.get_jaxpr("jaxpr");
  bool any = std::find(used_outs.begin(), used_outs.end(), true) != used_outs.end();
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
  auto& p = get_or_create_primitive("fusion");
  p.multiple_results = true;
  p.shape_rule = fusion_shape_rule;
  p.impl = [](const std::vector<Array>& args, const Params& params, const std::vector<ShapedArray>&) {
    return eval_jaxpr(*params.get_jaxpr("jaxpr"), args);
  };
  p.dce = fusion_dce;
  p.no_jvp_reason = kInternal;
  p.no_transpose_reason = kInternal;
  p.no_batch_reason = kInternal;
});

}  // namespace

const Primitive& fusion_p() { return primitive("fusion"); }

namespace {

// Classes: a fusion's inner values never reach memory, so its body counts without bytes and the
// kernel's own operands and results are its bytes accessed.
Registrar reg_fusion_classes([] {
  auto& p = get_or_create_primitive("fusion");
  set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
  p.cost = [](const Eqn& e, bool count_bytes, const JaxprCost& cost) {
    CostEstimate c = cost(*e.params.get_jaxpr("jaxpr")->jaxpr, false);
    c.bytes = operand_and_result_bytes(e, count_bytes).bytes;
    return c;
  };
});

}  // namespace

}  // namespace minijax
