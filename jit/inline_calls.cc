// minijax compiler pass inline_calls (declared in jit/inline_calls.h).
// Owns the table of call primitives and identities, and the substitution of bodies.
#include "jit/inline_calls.h"

#include <map>
#include <string>
#include <unordered_map>

#include "core/primitive.h"
#include "jit/map_bodies.h"

namespace minijax {
namespace {

/// Call primitives and the param holding the body they evaluate (the primal body for the
/// custom-derivative calls: their rules only matter to autodiff, which has run).
const std::map<std::string, std::string>& call_bodies() {
  static const std::map<std::string, std::string> t = {{"pjit", "jaxpr"},
                                                       {"closed_call", "call_jaxpr"},
                                                       {"checkpoint", "jaxpr"},
                                                       {"custom_jvp_call", "call_jaxpr"},
                                                       {"custom_vjp_call", "call_jaxpr"}};
  return t;
}

/// Primitives that are the identity on their single operand and only tag it.
bool is_identity_tag(const Primitive& p) { return p.name == "name"; }

using Env = std::unordered_map<Var, Atom, VarHash>;

Atom subst(const Env& env, const Atom& a) {
  if (auto* v = std::get_if<Var>(&a)) {
    auto it = env.find(*v);
    if (it != env.end()) return it->second;
  }
  return a;
}

struct Inliner {
  // Where array constants of inlined call bodies go (the top level of a ClosedJaxpr), or null.
  std::vector<Var>* constvars = nullptr;
  std::vector<Array>* consts = nullptr;

  /// Binds the body's constvars to atoms: rank-0 concrete values as literals, others hoisted
  /// into the sink. False if some constant can be neither.
  bool bind_consts(const ClosedJaxpr& cj, Env& inner) {
    const Jaxpr& b = *cj.jaxpr;
    if (cj.consts.size() != b.constvars.size()) return false;
    std::vector<std::pair<Var, Atom>> bound;
    for (size_t k = 0; k < b.constvars.size(); ++k) {
      const Array& c = cj.consts[k];
      if (c.is_concrete() && c.ndim() == 0) {
        bound.emplace_back(b.constvars[k], Literal{c});
      } else if (constvars && c.is_concrete()) {
        bound.emplace_back(b.constvars[k], Atom{});  // hoisted below, once all are known to fit
      } else {
        return false;
      }
    }
    for (size_t k = 0; k < bound.size(); ++k) {
      if (std::holds_alternative<Var>(bound[k].second) && !std::get<Var>(bound[k].second).defined()) {
        Var v(cj.consts[k].aval());
        constvars->push_back(v);
        consts->push_back(cj.consts[k]);
        bound[k].second = v;
      }
      inner[bound[k].first] = bound[k].second;
    }
    return true;
  }

  /// Appends the equations of `b` (with `env` binding its inputs) to `out`; `fresh` gives every
  /// output a new variable (an inlined body may be inlined more than once). Returns the outvars.
  std::vector<Atom> emit(const Jaxpr& b, Env& env, bool fresh, std::vector<Eqn>& out) {
    for (const Eqn& e : b.eqns) {
      std::vector<Atom> ins;
      for (auto& a : e.inputs) ins.push_back(subst(env, a));
      auto cb = call_bodies().find(e.primitive->name);
      if (cb != call_bodies().end() && e.params.has(cb->second)) {
        const ClosedJaxprPtr& cj = e.params.get_jaxpr(cb->second);
        Env inner;
        if (cj && cj->jaxpr && cj->jaxpr->invars.size() == ins.size() && bind_consts(*cj, inner)) {
          for (size_t i = 0; i < ins.size(); ++i) inner[cj->jaxpr->invars[i]] = ins[i];
          auto res = emit(*cj->jaxpr, inner, true, out);
          for (size_t i = 0; i < e.outputs.size() && i < res.size(); ++i)
            if (!e.outputs[i].is_dropvar()) env[e.outputs[i]] = res[i];
          continue;
        }
      }
      if (is_identity_tag(*e.primitive) && ins.size() == 1 && e.outputs.size() == 1) {
        if (!e.outputs[0].is_dropvar()) env[e.outputs[0]] = ins[0];
        continue;
      }
      Eqn n = e;
      n.inputs = std::move(ins);
      if (has_bodies(e.params))
        n.params = map_bodies(e.params, [](const Jaxpr& body) { return Inliner{}.run(body); });
      if (fresh) {
        for (auto& o : n.outputs) {
          Var nv = o.is_dropvar() ? Var::dropvar(o.aval()) : Var(o.aval());
          if (!o.is_dropvar()) env[o] = nv;
          o = nv;
        }
      }
      out.push_back(std::move(n));
    }
    std::vector<Atom> res;
    for (auto& a : b.outvars) res.push_back(subst(env, a));
    return res;
  }

  Jaxpr run(const Jaxpr& j) {
    Jaxpr r;
    r.constvars = j.constvars;
    r.invars = j.invars;
    r.effects = j.effects;
    Env env;
    r.outvars = emit(j, env, false, r.eqns);
    return r;
  }
};

}  // namespace

Jaxpr inline_calls(const Jaxpr& j) { return Inliner{}.run(j); }

ClosedJaxpr inline_calls(const ClosedJaxpr& j) {
  std::vector<Var> extra_vars;
  std::vector<Array> extra_consts;
  Inliner in{&extra_vars, &extra_consts};
  auto r = std::make_shared<Jaxpr>(in.run(*j.jaxpr));
  r->constvars.insert(r->constvars.end(), extra_vars.begin(), extra_vars.end());
  ClosedJaxpr out;
  out.consts = j.consts;
  out.consts.insert(out.consts.end(), extra_consts.begin(), extra_consts.end());
  out.jaxpr = r;
  return out;
}

}  // namespace minijax
