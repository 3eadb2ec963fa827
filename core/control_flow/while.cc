// minijax `while` primitive (JAX's while_p: cond_jaxpr/body_jaxpr over a carry).
// Owns its shape rule, eager implementation, DCE rule and while_flat.
#include <algorithm>
#include <memory>

#include "core/control_flow.h"
#include "core/param_reads.h"
#include "core/dce.h"
#include "core/pjit.h"
#include "core/trace.h"

namespace minijax {
namespace {

std::vector<ShapedArray> while_shape_rule(const std::vector<ShapedArray>& in, const Params& params) {
  const ClosedJaxprPtr& cj = param_jaxpr(params, "cond_jaxpr");
  const ClosedJaxprPtr& bj = param_jaxpr(params, "body_jaxpr");
  const int64_t cn = param_int(params, "cond_nconsts"), bn = param_int(params, "body_nconsts");
  if (!cj || !bj) throw ValueError("cond_jaxpr/body_jaxpr is empty");
  if (cn < 0 || bn < 0 || size_t(cn + bn) > in.size())
    throw ValueError("cond_nconsts=" + std::to_string(cn) + " body_nconsts=" + std::to_string(bn) +
                     " do not fit " + std::to_string(in.size()) + " operands");
  const size_t nc = in.size() - size_t(cn + bn);
  std::vector<ShapedArray> carry(in.begin() + cn + bn, in.end());
  auto check_ins = [&](const Jaxpr& j, const char* what, size_t off, size_t nconsts) {
    if (!j.constvars.empty()) throw ValueError(std::string(what) + " has constvars");
    if (j.invars.size() != nconsts + nc)
      throw TypeError(std::string(what) + " takes " + std::to_string(j.invars.size()) +
                      " inputs, expected " + std::to_string(nconsts + nc));
    for (size_t i = 0; i < nconsts; ++i)
      if (!in[off + i].same_type(j.invars[i].aval()))
        throw TypeError(std::string(what) + " constant " + std::to_string(i) + " is " +
                        in[off + i].str() + " but the jaxpr expects " + j.invars[i].aval().str());
    for (size_t i = 0; i < nc; ++i)
      if (!carry[i].same_type(j.invars[nconsts + i].aval()))
        throw TypeError(std::string(what) + " carry " + std::to_string(i) + " is " +
                        carry[i].str() + " but the jaxpr expects " +
                        j.invars[nconsts + i].aval().str());
  };
  check_ins(*cj->jaxpr, "cond_jaxpr", 0, size_t(cn));
  check_ins(*bj->jaxpr, "body_jaxpr", size_t(cn), size_t(bn));
  auto co = cj->jaxpr->out_avals();
  if (co.size() != 1 || co[0].ndim() != 0 || co[0].dtype != DType::bool_)
    throw TypeError("cond_jaxpr must return one bool scalar");
  auto bo = bj->jaxpr->out_avals();
  if (bo.size() != nc) throw TypeError("body_jaxpr returns " + std::to_string(bo.size()) +
                                       " values for a carry of " + std::to_string(nc));
  for (size_t i = 0; i < nc; ++i)
    if (!bo[i].same_type(carry[i]))
      throw TypeError("body_jaxpr output " + std::to_string(i) + " is " + bo[i].str() +
                      " but the carry is " + carry[i].str());
  return carry;
}

std::vector<Array> while_impl(const std::vector<Array>& args, const Params& params,
                              const std::vector<ShapedArray>&) {
  const ClosedJaxprPtr& cj = param_jaxpr(params, "cond_jaxpr");
  const ClosedJaxprPtr& bj = param_jaxpr(params, "body_jaxpr");
  const auto cn = std::ptrdiff_t(param_int(params, "cond_nconsts"));
  const auto bn = std::ptrdiff_t(param_int(params, "body_nconsts"));
  std::vector<Array> cc(args.begin(), args.begin() + cn), bc(args.begin() + cn, args.begin() + cn + bn);
  std::vector<Array> carry(args.begin() + cn + bn, args.end());
  for (;;) {
    std::vector<Array> cin = cc;
    cin.insert(cin.end(), carry.begin(), carry.end());
    if (!eval_jaxpr(*cj, cin)[0].item<bool>()) break;
    std::vector<Array> bin = bc;
    bin.insert(bin.end(), carry.begin(), carry.end());
    carry = eval_jaxpr(*bj, bin);
  }
  return carry;
}

ClosedJaxprPtr with_jaxpr(Jaxpr j) {
  auto cj = std::make_shared<ClosedJaxpr>();
  cj->jaxpr = std::make_shared<Jaxpr>(std::move(j));
  return cj;
}

// DCE (JAX's _while_dce_rule idea): a carry is live if its output is used, the predicate reads
// it, or the body computes a live carry from it (fixpoint). Dead carries are removed from both
// jaxprs; constants neither jaxpr reads are removed from the equation.
std::pair<std::vector<bool>, std::optional<Eqn>> while_dce(const std::vector<bool>& used_outs,
                                                           const Eqn& e) {
  bool any = std::find(used_outs.begin(), used_outs.end(), true) != used_outs.end();
  if (!any && !eqn_has_effects(e)) return {std::vector<bool>(e.inputs.size(), false), std::nullopt};
  const Jaxpr& cj = *param_jaxpr(e.params, "cond_jaxpr")->jaxpr;
  const Jaxpr& bj = *param_jaxpr(e.params, "body_jaxpr")->jaxpr;
  const size_t cn = size_t(param_int(e.params, "cond_nconsts"));
  const size_t bn = size_t(param_int(e.params, "body_nconsts"));
  const size_t nc = e.outputs.size();
  std::vector<bool> live = used_outs;
  auto cond_used = dce_jaxpr(cj, {true}).second;
  for (size_t i = 0; i < nc; ++i) live[i] = live[i] || cond_used[cn + i];
  if (eqn_has_effects(e)) live.assign(nc, true);
  for (;;) {
    auto body_used = dce_jaxpr(bj, live).second;
    bool changed = false;
    for (size_t i = 0; i < nc; ++i)
      if (body_used[bn + i] && !live[i]) live[i] = changed = true;
    if (!changed) break;
  }
  std::vector<bool> cond_inst(cn, false), body_inst(bn, false);
  cond_inst.insert(cond_inst.end(), live.begin(), live.end());
  body_inst.insert(body_inst.end(), live.begin(), live.end());
  auto [cnew, cused] = dce_jaxpr(cj, {true}, cond_inst);
  auto [bnew, bused] = dce_jaxpr(bj, live, body_inst);
  Eqn ne;
  ne.primitive = e.primitive;
  ne.effects = e.effects;
  ne.params = e.params;
  std::vector<bool> used_ins;
  int64_t ncn = 0, nbn = 0;
  for (size_t i = 0; i < cn; ++i) {
    used_ins.push_back(cused[i]);
    if (cused[i]) ne.inputs.push_back(e.inputs[i]), ++ncn;
  }
  for (size_t i = 0; i < bn; ++i) {
    used_ins.push_back(bused[i]);
    if (bused[i]) ne.inputs.push_back(e.inputs[cn + i]), ++nbn;
  }
  for (size_t i = 0; i < nc; ++i) {
    used_ins.push_back(live[i]);
    if (live[i]) {
      ne.inputs.push_back(e.inputs[cn + bn + i]);
      ne.outputs.push_back(used_outs[i] ? e.outputs[i] : Var::dropvar(e.outputs[i].aval()));
    }
  }
  ne.params.set("cond_jaxpr", with_jaxpr(std::move(cnew)));
  ne.params.set("body_jaxpr", with_jaxpr(std::move(bnew)));
  ne.params.set("cond_nconsts", ncn);
  ne.params.set("body_nconsts", nbn);
  return {used_ins, std::move(ne)};
}

Registrar reg([] {
  auto& p = get_or_create_primitive("while");
  p.body_params = {"cond_jaxpr", "body_jaxpr"};
  p.body_form = BodyForm::while_loop;
  p.multiple_results = true;
  p.shape_rule = while_shape_rule;
  p.impl = while_impl;
  p.dce = while_dce;
});

}  // namespace

std::vector<Array> while_flat(const FlatFn& cond_fn, const FlatFn& body_fn,
                              const std::vector<Array>& init, const std::string& structure,
                              std::source_location loc) {
  std::vector<ShapedArray> avals;
  for (auto& a : init) avals.push_back(a.aval());
  ClosedJaxpr cj = trace_to_jaxpr(cond_fn, avals, loc);
  auto co = cj.out_avals();
  if (co.size() != 1 || co[0].ndim() != 0 || co[0].dtype != DType::bool_) {
    std::string got;
    for (size_t i = 0; i < co.size(); ++i) got += (i ? ", " : "") + co[i].str();
    throw TypeError("while_loop: cond_fun must return a boolean scalar, but got output type(s) [" +
                        got + "]",
                    loc);
  }
  ClosedJaxpr bj = trace_to_jaxpr(body_fn, avals, loc);
  auto bo = bj.out_avals();
  if (bo.size() != avals.size())
    throw TypeError("while_loop: body_fun returns " + std::to_string(bo.size()) +
                        " leaves for a carry of " + std::to_string(avals.size()) +
                        (structure.empty() ? std::string() : " (carry structure " + structure + ")"),
                    loc);
  for (size_t i = 0; i < bo.size(); ++i)
    if (!bo[i].same_type(avals[i]))
      throw TypeError("while_loop: body_fun output and input must have identical types: carry leaf " +
                          std::to_string(i) +
                          (structure.empty() ? std::string() : " of " + structure) + " is " +
                          avals[i].str() + " on input but " + bo[i].str() + " on output",
                      loc);
  std::vector<Array> args = cj.consts;
  args.insert(args.end(), bj.consts.begin(), bj.consts.end());
  args.insert(args.end(), init.begin(), init.end());
  Params params;
  params.set("cond_jaxpr", with_jaxpr(convert_constvars_jaxpr(*cj.jaxpr)));
  params.set("body_jaxpr", with_jaxpr(convert_constvars_jaxpr(*bj.jaxpr)));
  params.set("cond_nconsts", int64_t(cj.consts.size()));
  params.set("body_nconsts", int64_t(bj.consts.size()));
  return minijax::bind(primitive("while"), args, params, loc);
}

namespace {

// Classes: cost_analysis counts the predicate and the body once each (the trip count is unknown).
Registrar reg_while_classes([] {
  auto& p = get_or_create_primitive("while");
  set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
  p.cost = [](const Eqn& e, bool, const JaxprCost& cost) {
    CostEstimate c = cost(*param_jaxpr(e.params, "cond_jaxpr")->jaxpr, true);
    c += cost(*param_jaxpr(e.params, "body_jaxpr")->jaxpr, true);
    return c;
  };
});

}  // namespace

}  // namespace minijax
