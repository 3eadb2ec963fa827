// minijax remat primitives: `checkpoint` (a body jaxpr evaluated as one equation) and `name`
// (checkpoint_name, an identity that tags a value). Owns their shape rules, impls, DCE rule and
// the per-operand `prevent_cse` param (core/prevent_cse.h).
#include "core/prevent_cse.h"

#include <string>

#include "core/dce.h"
#include "core/parser.h"
#include "core/primitive.h"
#include "core/staging.h"
#include "core/trace.h"

namespace minijax {
namespace {

// prevent_cse as a tuple of bools: one flag per operand of the checkpoint equation.
class PreventCseParam : public ParamObject {
 public:
  explicit PreventCseParam(std::vector<bool> flags) : flags_(std::move(flags)) {}
  std::string str() const override {
    std::string s = "(";
    for (size_t i = 0; i < flags_.size(); ++i) s += std::string(i ? ", " : "") + (flags_[i] ? "True" : "False");
    return s + (flags_.size() == 1 ? ",)" : ")");
  }
  bool equals(const ParamObject& o) const override {
    auto* p = dynamic_cast<const PreventCseParam*>(&o);
    return p && p->flags_ == flags_;
  }
  const std::vector<bool>& flags() const { return flags_; }

 private:
  std::vector<bool> flags_;
};

// Reads back PreventCseParam::str() for param prevent_cse: `(True, False)`, `(True,)`, `()`.
ParamObjectPtr parse_prevent_cse(const std::string& key, const std::string& text) {
  if (key != "prevent_cse" || text.size() < 2 || text.front() != '(' || text.back() != ')') return nullptr;
  std::vector<bool> flags;
  size_t at = 1;
  const size_t end = text.size() - 1;
  while (at < end) {
    if (text.compare(at, 4, "True") == 0) flags.push_back(true), at += 4;
    else if (text.compare(at, 5, "False") == 0) flags.push_back(false), at += 5;
    else return nullptr;
    if (at < end && text[at] == ',') ++at;
    while (at < end && text[at] == ' ') ++at;
  }
  return std::make_shared<PreventCseParam>(std::move(flags));
}

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
  (void)prevent_cse_flags(params, in.size());  // a tuple must have one flag per operand
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
  const std::vector<bool> cse = prevent_cse_flags(e.params, e.inputs.size());
  std::vector<bool> kept_cse;
  for (size_t i = 0; i < e.inputs.size(); ++i)
    if (used_ins[i]) {
      ne.inputs.push_back(e.inputs[i]);
      kept_cse.push_back(cse[i]);
    }
  set_prevent_cse(ne.params, e.params, kept_cse);
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
    register_param_object_parser(parse_prevent_cse);
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

Param prevent_cse_param(const std::vector<bool>& per_operand) {
  return ParamObjectPtr(std::make_shared<PreventCseParam>(per_operand));
}

bool prevent_cse_per_operand(const Params& params) {
  if (!params.has("prevent_cse")) return false;
  const Param& v = params.at("prevent_cse");
  if (auto* ints = std::get_if<std::vector<int64_t>>(&v)) return ints->empty();  // `()` as parsed
  auto* o = std::get_if<ParamObjectPtr>(&v);
  return o && dynamic_cast<const PreventCseParam*>(o->get());
}

std::vector<bool> prevent_cse_flags(const Params& params, size_t n) {
  if (!params.has("prevent_cse")) return std::vector<bool>(n, true);
  const Param& v = params.at("prevent_cse");
  if (auto* b = std::get_if<bool>(&v)) return std::vector<bool>(n, *b);
  if (auto* ints = std::get_if<std::vector<int64_t>>(&v); ints && ints->empty() && n == 0) return {};
  auto* o = std::get_if<ParamObjectPtr>(&v);
  auto* t = o ? dynamic_cast<const PreventCseParam*>(o->get()) : nullptr;
  if (!t) throw TypeError("parameter 'prevent_cse' must be a bool or a tuple of bools");
  if (t->flags().size() != n)
    throw TypeError("parameter 'prevent_cse' has " + std::to_string(t->flags().size()) + " flags for " +
                    std::to_string(n) + " operands (one per operand)");
  return t->flags();
}

void set_prevent_cse(Params& out, const Params& in, const std::vector<bool>& per_operand) {
  if (prevent_cse_per_operand(in)) out.set("prevent_cse", prevent_cse_param(per_operand));
  else if (in.has("prevent_cse")) out.set("prevent_cse", in.at("prevent_cse"));
}

namespace {

// Classes: checkpoint is a call that costs its body; `name` is a tag that moves nothing. Both
// are removed by inline_calls before lowering.
Registrar reg_checkpoint_classes([] {
  auto& p = get_or_create_primitive("checkpoint");
  set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
  p.cost = call_cost;
  p.inlined = true;
  auto& n = get_or_create_primitive("name");
  set_classes(n, OpClass::other, CostClass::data_movement, FusionClass::normal);
  n.inlined = true;
});

}  // namespace

}  // namespace minijax
