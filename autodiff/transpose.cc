// minijax reverse mode: backward_pass over linear jaxprs and vjp_flat.
// Owns cotangent accumulation and the forward evaluation of non-linear equations.
#include "autodiff/transpose.h"

#include <unordered_map>
#include <unordered_set>

#include "autodiff/jvp.h"
#include "autodiff/linearize.h"
#include "core/lax.h"

namespace minijax {

std::vector<Array> backward_pass(const Jaxpr& j, const std::vector<Array>& consts,
                                 const std::vector<Array>& args, const std::vector<bool>& linear,
                                 const std::vector<Array>& cts_out, std::source_location loc) {
  std::unordered_map<Var, Array, VarHash> env;       // non-linear values
  std::unordered_set<Var, VarHash> lin;              // linear variables
  for (size_t i = 0; i < j.constvars.size(); ++i) env[j.constvars[i]] = consts.at(i);
  for (size_t i = 0; i < j.invars.size(); ++i) {
    if (linear.at(i)) lin.insert(j.invars[i]);
    else env[j.invars[i]] = args.at(i);
  }
  auto is_lin = [&](const Atom& a) {
    auto* v = std::get_if<Var>(&a);
    return v && lin.count(*v);
  };
  auto read = [&](const Atom& a) -> Array {
    if (auto* v = std::get_if<Var>(&a)) return env.at(*v);
    return std::get<Literal>(a).value;
  };
  // Forward: evaluate the non-linear equations, mark the linear ones.
  std::vector<const Eqn*> linear_eqns;
  for (auto& e : j.eqns) {
    bool any = false;
    for (auto& a : e.inputs) any |= is_lin(a);
    if (any) {
      for (auto& o : e.outputs) lin.insert(o);
      linear_eqns.push_back(&e);
    } else {
      std::vector<Array> ins;
      for (auto& a : e.inputs) ins.push_back(read(a));
      auto outs = minijax::bind(*e.primitive, ins, e.params, loc);
      for (size_t k = 0; k < e.outputs.size(); ++k) env[e.outputs[k]] = outs[k];
    }
  }
  // Backward.
  std::unordered_map<Var, Array, VarHash> ct;
  auto add_ct = [&](const Var& v, const Array& c) {
    if (!c.defined() || v.is_dropvar() || !lin.count(v)) return;
    auto it = ct.find(v);
    if (it == ct.end()) ct.emplace(v, c);
    else it->second = lax::add_any(it->second, c, loc);
  };
  for (size_t i = 0; i < j.outvars.size(); ++i)
    if (auto* v = std::get_if<Var>(&j.outvars[i])) add_ct(*v, cts_out.at(i));
  for (auto it = linear_eqns.rbegin(); it != linear_eqns.rend(); ++it) {
    const Eqn& e = **it;
    std::vector<Array> couts;
    bool any = false;
    for (auto& o : e.outputs) {
      auto f = ct.find(o);
      if (f != ct.end()) {
        couts.push_back(f->second);
        ct.erase(f);
        any = true;
      } else {
        couts.push_back(Array());
      }
    }
    if (!any) continue;
    const Primitive& p = *e.primitive;
    if (!p.transpose)
      throw NotDifferentiableError(
          "primitive '" + p.name + "' has no transpose rule" +
              (p.no_transpose_reason.empty() ? std::string() : " (" + p.no_transpose_reason + ")") +
              " but appears linearly in a reverse-mode computation",
          loc);
    std::vector<Array> args_in;
    std::vector<ShapedArray> avals;
    for (auto& a : e.inputs) {
      avals.push_back(atom_aval(a));
      args_in.push_back(is_lin(a) ? Array() : read(a));
    }
    auto cts_in = p.transpose(couts, args_in, avals, e.params);
    for (size_t k = 0; k < e.inputs.size() && k < cts_in.size(); ++k)
      if (auto* v = std::get_if<Var>(&e.inputs[k]); v && is_lin(e.inputs[k])) add_ct(*v, cts_in[k]);
  }
  std::vector<Array> res;
  for (size_t i = 0; i < j.invars.size(); ++i) {
    auto f = ct.find(j.invars[i]);
    res.push_back(f == ct.end() ? Array() : f->second);
  }
  return res;
}

VjpResult vjp_flat(const FlatFn& f, const std::vector<Array>& primals, std::source_location loc) {
  LinearizeResult lr = linearize_flat(f, primals, loc);
  VjpResult r;
  r.primal_outs = lr.primal_outs;
  std::vector<ShapedArray> in_avals;
  for (auto& p : primals) in_avals.push_back(p.aval());
  std::vector<ShapedArray> out_avals;
  for (auto& o : lr.primal_outs) out_avals.push_back(o.aval());
  ClosedJaxpr lin = lr.linear;
  r.pullback.fn = [lin, in_avals, out_avals](const std::vector<Array>& cts, std::source_location loc) {
    if (cts.size() != out_avals.size())
      throw TypeError("vjp: the function has " + std::to_string(out_avals.size()) +
                          " outputs, got " + std::to_string(cts.size()) + " cotangents",
                      loc);
    for (size_t i = 0; i < cts.size(); ++i) {
      if (!cts[i].defined()) continue;
      ShapedArray want = tangent_aval(out_avals[i]);
      if (cts[i].shape() != want.shape || cts[i].dtype() != want.dtype)
        throw TypeError("vjp: output " + std::to_string(i) + " is " + out_avals[i].str() +
                            " so its cotangent must be " + want.str() + ", got " + cts[i].aval().str(),
                        loc);
    }
    std::vector<bool> linear(in_avals.size(), true);
    std::vector<Array> args(in_avals.size());
    auto res = backward_pass(*lin.jaxpr, lin.consts, args, linear, cts, loc);
    for (size_t i = 0; i < res.size(); ++i) res[i] = instantiate_zero(res[i], in_avals[i]);
    return res;
  };
  return r;
}

}  // namespace minijax
