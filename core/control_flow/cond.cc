// minijax `cond` primitive (JAX's cond_p: an index selecting one of several branch jaxprs).
// Owns its shape rule, eager implementation, DCE rule, bind_cond and cond_flat.
#include <algorithm>
#include <memory>
#include <unordered_map>

#include "core/control_flow.h"
#include "core/param_reads.h"
#include "core/dce.h"
#include "core/pjit.h"
#include "core/trace.h"

namespace minijax {
namespace {

std::vector<ShapedArray> cond_shape_rule(const std::vector<ShapedArray>& in, const Params& params) {
  const auto& branches = param_jaxprs(params, "branches");
  if (branches.empty()) throw ValueError("cond has no branches");
  if (in.empty() || in[0].ndim() != 0 || in[0].dtype != DType::i32)
    throw TypeError("the index operand must be an i32 scalar, got " +
                    (in.empty() ? std::string("no operands") : in[0].str()));
  std::vector<ShapedArray> outs;
  for (size_t b = 0; b < branches.size(); ++b) {
    const ClosedJaxprPtr& cj = branches[b];
    if (!cj || !cj->jaxpr) throw ValueError("branch " + std::to_string(b) + " is empty");
    const Jaxpr& j = *cj->jaxpr;
    if (!j.constvars.empty())
      throw ValueError("branch " + std::to_string(b) + " has constvars (pass them as operands)");
    if (j.invars.size() != in.size() - 1)
      throw TypeError("branch " + std::to_string(b) + " takes " + std::to_string(j.invars.size()) +
                      " operands, the equation passes " + std::to_string(in.size() - 1));
    for (size_t i = 0; i < j.invars.size(); ++i)
      if (!in[i + 1].same_type(j.invars[i].aval()))
        throw TypeError("operand " + std::to_string(i) + " is " + in[i + 1].str() + " but branch " +
                        std::to_string(b) + " expects " + j.invars[i].aval().str());
    auto o = j.out_avals();
    if (b == 0) {
      outs = o;
      continue;
    }
    if (o.size() != outs.size())
      throw TypeError("branch 0 returns " + std::to_string(outs.size()) + " outputs but branch " +
                      std::to_string(b) + " returns " + std::to_string(o.size()));
    for (size_t k = 0; k < o.size(); ++k) {
      if (!o[k].same_type(outs[k]))
        throw TypeError("branch outputs must have identical types: output " + std::to_string(k) +
                        " is " + outs[k].str() + " in branch 0 but " + o[k].str() + " in branch " +
                        std::to_string(b));
      outs[k].weak_type = outs[k].weak_type && o[k].weak_type;
    }
  }
  return outs;
}

std::vector<Array> cond_impl(const std::vector<Array>& args, const Params& params,
                             const std::vector<ShapedArray>&) {
  const auto& branches = param_jaxprs(params, "branches");
  int64_t idx = args[0].item<int64_t>();
  idx = std::clamp<int64_t>(idx, 0, int64_t(branches.size()) - 1);
  std::vector<Array> ops(args.begin() + 1, args.end());
  return eval_jaxpr(*branches[size_t(idx)], ops);
}

// DCE (JAX's _cond_dce_rule): outputs nobody uses are removed from every branch, and operands
// no branch reads are removed from the equation.
std::pair<std::vector<bool>, std::optional<Eqn>> cond_dce(const std::vector<bool>& used_outs,
                                                          const Eqn& e) {
  bool any = std::find(used_outs.begin(), used_outs.end(), true) != used_outs.end();
  if (!any && !eqn_has_effects(e)) return {std::vector<bool>(e.inputs.size(), false), std::nullopt};
  const auto& branches = param_jaxprs(e.params, "branches");
  const size_t nops = e.inputs.size() - 1;
  std::vector<bool> used_ops(nops, false);
  for (auto& b : branches) {
    auto used = dce_jaxpr(*b->jaxpr, used_outs).second;
    for (size_t i = 0; i < nops; ++i) used_ops[i] = used_ops[i] || used[i];
  }
  std::vector<ClosedJaxprPtr> nb;
  for (auto& b : branches) {
    auto cj = std::make_shared<ClosedJaxpr>();
    cj->jaxpr = std::make_shared<Jaxpr>(dce_jaxpr(*b->jaxpr, used_outs, used_ops).first);
    nb.push_back(cj);
  }
  Eqn ne;
  ne.primitive = e.primitive;
  ne.effects = e.effects;
  ne.params = e.params;
  ne.params.set("branches", nb);
  ne.inputs.push_back(e.inputs[0]);
  std::vector<bool> used_ins{true};
  for (size_t i = 0; i < nops; ++i) {
    used_ins.push_back(used_ops[i]);
    if (used_ops[i]) ne.inputs.push_back(e.inputs[i + 1]);
  }
  for (size_t i = 0; i < e.outputs.size(); ++i)
    if (used_outs[i]) ne.outputs.push_back(e.outputs[i]);
  return {used_ins, std::move(ne)};
}

Registrar reg([] {
  auto& p = get_or_create_primitive("cond");
  p.body_params = {"branches"};
  p.body_form = BodyForm::cond;
  p.multiple_results = true;
  p.shape_rule = cond_shape_rule;
  p.impl = cond_impl;
  p.dce = cond_dce;
});

}  // namespace

std::vector<Array> bind_cond(const Array& index, const std::vector<ClosedJaxpr>& branches,
                             const std::vector<Array>& operands, std::source_location loc) {
  if (branches.empty()) throw ValueError("cond: no branches", loc);
  Array idx = index;
  if (!idx.defined() || idx.ndim() != 0 ||
      !(idx.dtype() == DType::bool_ || idx.dtype() == DType::i32 || idx.dtype() == DType::u32))
    throw TypeError("cond: the index must be a scalar bool or integer, got " +
                        (idx.defined() ? idx.aval().str() : std::string("an empty Array")),
                    loc);
  if (idx.dtype() != DType::i32) idx = lax::convert_element_type(idx, DType::i32, false, loc);
  // Common constants: every branch takes all branches' constants (deduplicated by identity) as
  // leading operands, ignoring the others' (JAX's _initial_style_jaxprs_with_common_consts).
  std::vector<Array> consts;
  std::vector<std::vector<int>> slot_of(branches.size());
  for (size_t b = 0; b < branches.size(); ++b) {
    std::vector<bool> taken(consts.size(), false);
    for (auto& c : branches[b].consts) {
      int g = -1;
      for (size_t k = 0; k < consts.size(); ++k)
        if (!taken[k] && consts[k].impl() == c.impl()) {
          g = int(k);
          break;
        }
      if (g < 0) {
        g = int(consts.size());
        consts.push_back(c);
        taken.push_back(false);
      }
      taken[size_t(g)] = true;
      slot_of[b].push_back(g);
    }
  }
  std::vector<ClosedJaxprPtr> jaxprs;
  for (size_t b = 0; b < branches.size(); ++b) {
    const Jaxpr& src = *branches[b].jaxpr;
    Jaxpr j = src;
    j.constvars.clear();
    std::vector<Var> cvars(consts.size());
    for (size_t k = 0; k < src.constvars.size(); ++k) cvars[size_t(slot_of[b][k])] = src.constvars[k];
    for (size_t g = 0; g < consts.size(); ++g)
      if (!cvars[g].defined()) cvars[g] = Var(consts[g].aval());
    j.invars = cvars;
    j.invars.insert(j.invars.end(), src.invars.begin(), src.invars.end());
    auto cj = std::make_shared<ClosedJaxpr>();
    cj->jaxpr = std::make_shared<Jaxpr>(std::move(j));
    jaxprs.push_back(cj);
  }
  std::vector<Array> args{idx};
  args.insert(args.end(), consts.begin(), consts.end());
  args.insert(args.end(), operands.begin(), operands.end());
  Params params;
  params.set("branches", jaxprs);
  return minijax::bind(primitive("cond"), args, params, loc);
}

std::vector<Array> cond_flat(const Array& index, const std::vector<FlatFn>& branches,
                             const std::vector<Array>& operands, std::source_location loc) {
  std::vector<ShapedArray> avals;
  for (auto& a : operands) avals.push_back(a.aval());
  std::vector<ClosedJaxpr> jaxprs;
  for (auto& f : branches) jaxprs.push_back(trace_to_jaxpr(f, avals, loc));
  return bind_cond(index, jaxprs, operands, loc);
}

namespace {

// Classes: cost_analysis counts the branch of most flops and transcendentals.
Registrar reg_cond_classes([] {
  auto& p = get_or_create_primitive("cond");
  set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
  p.cost = [](const Eqn& e, bool, const JaxprCost& cost) {
    CostEstimate c;
    for (auto& br : param_jaxprs(e.params, "branches")) {
      CostEstimate b = cost(*br->jaxpr, true);
      if (b.flops + b.transcendentals > c.flops + c.transcendentals) c = b;
    }
    return c;
  };
});

}  // namespace

}  // namespace minijax
