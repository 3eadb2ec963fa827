// minijax call primitives pjit and closed_call.
// Owns their registration: shape rule (operands checked against the body), impl, DCE rule.
#include "core/pjit.h"
#include "core/param_reads.h"

#include "core/dce.h"
#include "core/staging.h"
#include "core/trace.h"

namespace minijax {

namespace {

std::vector<ShapedArray> call_shape_rule(const CallSpec& spec, const std::vector<ShapedArray>& in,
                                         const Params& params) {
  const std::string& key = spec.body_param;
  const ClosedJaxprPtr& cj = param_jaxpr(params, key);
  if (!cj || !cj->jaxpr) throw ValueError("parameter '" + key + "' is empty");
  const Jaxpr& j = *cj->jaxpr;
  if (!spec.closed_name.empty()) {
    if (!j.constvars.empty() || !cj->consts.empty())
      throw ValueError("the " + spec.closed_name + " has " + std::to_string(j.constvars.size()) +
                       " constvars (" + spec.closed_hint + ")");
  } else if (cj->consts.size() != j.constvars.size()) {
    throw ValueError("the called jaxpr has " + std::to_string(j.constvars.size()) +
                     " constvars but " + std::to_string(cj->consts.size()) + " consts");
  }
  if (in.size() != j.invars.size())
    throw TypeError("called with " + std::to_string(in.size()) + " operands, the " + spec.body_name +
                    " takes " + std::to_string(j.invars.size()));
  if (spec.check) spec.check(params, in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].same_type(j.invars[i].aval()))
      throw TypeError("operand " + std::to_string(i) + " is " + in[i].str() + " but the " + spec.body_name +
                      " expects " + j.invars[i].aval().str());
  return j.out_avals();
}

// DCE (JAX's dce rules of pjit, closed_call and remat): the body keeps only what the used
// outputs need; the equation is dropped when no output is used and the body has no effects.
std::pair<std::vector<bool>, std::optional<Eqn>> call_dce_rule(const CallSpec& spec,
                                                               const std::vector<bool>& used_outs,
                                                               const Eqn& e) {
  const ClosedJaxprPtr& cj = param_jaxpr(e.params, spec.body_param);
  bool any = false;
  for (bool b : used_outs) any |= b;
  if (!any && !eqn_has_effects(e)) return {std::vector<bool>(e.inputs.size(), false), std::nullopt};
  auto [inner, used_ins] = dce_jaxpr(*cj->jaxpr, used_outs);
  Eqn ne = e;
  ne.inputs.clear();
  ne.outputs.clear();
  auto ncj = std::make_shared<ClosedJaxpr>();
  ncj->jaxpr = std::make_shared<Jaxpr>(std::move(inner));
  ncj->consts = cj->consts;
  ne.params.set(spec.body_param, ClosedJaxprPtr(ncj));
  if (spec.prune_params) spec.prune_params(ne.params, e.params, used_ins);
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

Registrar reg([] {
  CallSpec pjit;
  pjit.impl = [](const std::vector<Array>& args, const Params& params, const std::vector<ShapedArray>&) {
    if (executor()) return executor()(param_jaxpr(params, "jaxpr"), param_string(params, "name"), args);
    return eval_jaxpr(*param_jaxpr(params, "jaxpr"), args);
  };
  register_call_primitive("pjit", pjit);
  CallSpec closed_call;
  closed_call.body_param = "call_jaxpr";
  register_call_primitive("closed_call", closed_call);
  // The custom-derivative calls keep their rules in autodiff/custom_derivatives.cc; their body
  // fact is declared here with the other plain calls'.
  for (const char* n : {"custom_jvp_call", "custom_vjp_call"}) {
    Primitive& p = get_or_create_primitive(n);
    p.body_params = {"call_jaxpr"};
    p.body_form = BodyForm::call;
  }
});

}  // namespace

Primitive& register_call_primitive(const std::string& name, const CallSpec& spec) {
  Primitive& p = get_or_create_primitive(name);
  p.multiple_results = true;
  p.body_params = {spec.body_param};
  p.body_form = BodyForm::call;
  p.shape_rule = [spec](const std::vector<ShapedArray>& in, const Params& params) {
    return call_shape_rule(spec, in, params);
  };
  const std::string key = spec.body_param;
  p.impl = spec.impl ? spec.impl
                     : ImplRule([key](const std::vector<Array>& args, const Params& params,
                                      const std::vector<ShapedArray>&) {
                         return eval_jaxpr(*param_jaxpr(params, key), args);
                       });
  p.dce = [spec](const std::vector<bool>& used, const Eqn& e) { return call_dce_rule(spec, used, e); };
  return p;
}

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
  params.set(p.body_params.at(0), jaxpr);
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
