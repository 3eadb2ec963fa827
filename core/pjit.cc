// minijax call primitives pjit and closed_call.
// Owns their registration: shape rule (operands checked against the body), impl, DCE rule.
#include "core/pjit.h"

#include "core/dce.h"
#include "core/staging.h"
#include "core/trace.h"

namespace minijax {

namespace {

const char* jaxpr_key(const Primitive& p) { return p.name == "pjit" ? "jaxpr" : "call_jaxpr"; }

std::vector<ShapedArray> call_shape_rule(const char* key, const std::vector<ShapedArray>& in,
                                         const Params& params) {
  const ClosedJaxprPtr& cj = params.get_jaxpr(key);
  if (!cj || !cj->jaxpr) throw ValueError(std::string("parameter '") + key + "' is empty");
  const Jaxpr& j = *cj->jaxpr;
  if (cj->consts.size() != j.constvars.size())
    throw ValueError("the called jaxpr has " + std::to_string(j.constvars.size()) +
                     " constvars but " + std::to_string(cj->consts.size()) + " consts");
  if (in.size() != j.invars.size())
    throw TypeError("called with " + std::to_string(in.size()) + " operands, the jaxpr takes " +
                    std::to_string(j.invars.size()));
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].same_type(j.invars[i].aval()))
      throw TypeError("operand " + std::to_string(i) + " is " + in[i].str() +
                      " but the jaxpr expects " + j.invars[i].aval().str());
  return j.out_avals();
}

std::pair<std::vector<bool>, std::optional<Eqn>> call_dce_rule(const char* key,
                                                               const std::vector<bool>& used_outs,
                                                               const Eqn& e) {
  const ClosedJaxprPtr& cj = e.params.get_jaxpr(key);
  bool any = false;
  for (bool b : used_outs) any |= b;
  if (!any && !eqn_has_effects(e)) return {std::vector<bool>(e.inputs.size(), false), std::nullopt};
  auto [inner, used_ins] = dce_jaxpr(*cj->jaxpr, used_outs);
  Eqn ne;
  ne.primitive = e.primitive;
  ne.effects = e.effects;
  ne.params = e.params;
  auto ncj = std::make_shared<ClosedJaxpr>();
  ncj->jaxpr = std::make_shared<Jaxpr>(std::move(inner));
  ncj->consts = cj->consts;
  ne.params.set(key, ClosedJaxprPtr(ncj));
  for (size_t i = 0; i < e.inputs.size(); ++i)
    if (used_ins[i]) ne.inputs.push_back(e.inputs[i]);
  for (size_t i = 0; i < e.outputs.size(); ++i)
    if (used_outs[i]) ne.outputs.push_back(e.outputs[i]);
  return {used_ins, std::move(ne)};
}

PjitExecutor& executor() {
  static PjitExecutor e = nullptr;
  return e;
}

void register_call(const char* name, const char* key) {
  auto& p = get_or_create_primitive(name);
  p.multiple_results = true;
  p.shape_rule = [key](const std::vector<ShapedArray>& in, const Params& params) {
    return call_shape_rule(key, in, params);
  };
  const bool is_pjit = std::string(name) == "pjit";
  p.impl = [key, is_pjit](const std::vector<Array>& args, const Params& params,
                          const std::vector<ShapedArray>&) {
    if (is_pjit && executor()) return executor()(params.get_jaxpr(key), params.get_string("name"), args);
    return eval_jaxpr(*params.get_jaxpr(key), args);
  };
  p.dce = [key](const std::vector<bool>& used, const Eqn& e) { return call_dce_rule(key, used, e); };
}

Registrar reg([] {
  register_call("pjit", "jaxpr");
  register_call("closed_call", "call_jaxpr");
});

}  // namespace

void set_pjit_executor(PjitExecutor e) { executor() = e; }
PjitExecutor pjit_executor() { return executor(); }

const Primitive& pjit_p() { return primitive("pjit"); }
const Primitive& closed_call_p() { return primitive("closed_call"); }

Jaxpr convert_constvars_jaxpr(const Jaxpr& j) {
  Jaxpr r = j;
  r.invars = j.constvars;
  r.invars.insert(r.invars.end(), j.invars.begin(), j.invars.end());
  r.constvars.clear();
  return r;
}

std::vector<Array> bind_call(const Primitive& p, const ClosedJaxprPtr& jaxpr, const std::string& name,
                             const std::vector<Array>& args, std::source_location loc) {
  Params params;
  params.set(jaxpr_key(p), jaxpr);
  params.set("name", name);
  return minijax::bind(p, args, params, loc);
}

namespace {

// Classes: a call costs its body; inline_calls removes it before lowering.
Registrar reg_call_classes([] {
  for (const char* name : {"pjit", "closed_call"}) {
    auto& p = get_or_create_primitive(name);
    set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
    p.cost = call_cost;
    p.inlined = true;
  }
});

}  // namespace

}  // namespace minijax
