// minijax dead-code elimination (JAX's pe.dce_jaxpr / _default_dce_rule).
// Owns the backward liveness pass over equations and the effect test.
#include "core/dce.h"

#include <unordered_map>
#include <unordered_set>

#include "core/errors.h"
#include "core/primitive.h"

namespace minijax {

namespace {

// Whether an equation of `eqns` or of a jaxpr nested in them (each visited once, from a
// worklist: a 10,000-deep nest costs no stack) has effects, or a nested jaxpr declares some.
bool any_effects(const std::vector<const Eqn*>& eqns) {
  std::vector<const Eqn*> work = eqns;
  std::unordered_set<const Jaxpr*> seen;
  auto nested = [&](const ClosedJaxprPtr& cj) {
    if (!cj || !cj->jaxpr || !seen.insert(cj->jaxpr.get()).second) return false;
    if (!cj->jaxpr->effects.empty()) return true;
    for (auto& e : cj->jaxpr->eqns) work.push_back(&e);
    return false;
  };
  while (!work.empty()) {
    const Eqn& e = *work.back();
    work.pop_back();
    if (!e.effects.empty()) return true;
    for (auto& [k, v] : e.params.items()) {
      if (auto* cj = std::get_if<ClosedJaxprPtr>(&v)) {
        if (nested(*cj)) return true;
      } else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&v)) {
        for (auto& c : *cjs)
          if (nested(c)) return true;
      }
    }
  }
  return false;
}

// The depth of dce_jaxpr calls on this thread (DCE rules of call, loop and branch primitives
// call it on their bodies).
thread_local int dce_depth = 0;
constexpr int kMaxDceRuleDepth = 32;

}  // namespace

bool jaxpr_has_effects(const Jaxpr& j) {
  if (!j.effects.empty()) return true;
  std::vector<const Eqn*> eqns;
  for (auto& e : j.eqns) eqns.push_back(&e);
  return any_effects(eqns);
}

bool eqn_has_effects(const Eqn& e) { return any_effects({&e}); }

std::pair<Jaxpr, std::vector<bool>> dce_jaxpr(const Jaxpr& j, const std::vector<bool>& used_outputs,
                                              bool instantiate) {
  return dce_jaxpr(j, used_outputs, std::vector<bool>(j.invars.size(), instantiate));
}

std::pair<Jaxpr, std::vector<bool>> dce_jaxpr(const Jaxpr& j, const std::vector<bool>& used_outputs,
                                              const std::vector<bool>& instantiate) {
  if (used_outputs.size() != j.outvars.size())
    throw ValueError("dce_jaxpr: " + std::to_string(used_outputs.size()) +
                     " used_outputs flags for a jaxpr with " + std::to_string(j.outvars.size()) +
                     " outputs");
  if (instantiate.size() != j.invars.size())
    throw ValueError("dce_jaxpr: " + std::to_string(instantiate.size()) +
                     " instantiate flags for a jaxpr with " + std::to_string(j.invars.size()) +
                     " inputs");
  struct Depth {
    Depth() { ++dce_depth; }
    ~Depth() { --dce_depth; }
  } depth;
  // Beyond kMaxDceRuleDepth nested bodies, equations are kept whole (no rule prunes their
  // bodies): the recursion through DCE rules stays bounded however deep the nest.
  const bool use_rules = dce_depth <= kMaxDceRuleDepth;
  std::unordered_map<Var, bool, VarHash> live;
  auto read = [&](const Var& v) {
    auto it = live.find(v);
    return it != live.end() && it->second;
  };
  auto write = [&](const Atom& a, bool b) {
    if (auto* v = std::get_if<Var>(&a)) live[*v] = read(*v) || b;
  };
  for (size_t i = 0; i < j.outvars.size(); ++i) write(j.outvars[i], used_outputs[i]);

  std::vector<Eqn> kept;
  for (auto e = j.eqns.rbegin(); e != j.eqns.rend(); ++e) {
    std::vector<bool> used_outs;
    bool any = false;
    for (auto& v : e->outputs) {
      bool u = !v.is_dropvar() && read(v);
      used_outs.push_back(u);
      any |= u;
    }
    std::vector<bool> used_ins;
    std::optional<Eqn> ne;
    if (e->primitive && e->primitive->dce && use_rules) {
      std::tie(used_ins, ne) = e->primitive->dce(used_outs, *e);
      if (used_ins.size() != e->inputs.size())
        throw ValueError("dce rule of '" + e->primitive->name + "' returned " +
                         std::to_string(used_ins.size()) + " input flags for " +
                         std::to_string(e->inputs.size()) + " inputs");
    } else if (!any && !eqn_has_effects(*e)) {
      used_ins.assign(e->inputs.size(), false);
    } else {
      used_ins.assign(e->inputs.size(), true);
      ne = *e;
    }
    if (ne) kept.push_back(std::move(*ne));
    for (size_t i = 0; i < e->inputs.size(); ++i) write(e->inputs[i], used_ins[i]);
  }

  Jaxpr out;
  out.constvars = j.constvars;
  std::vector<bool> used_inputs;
  for (size_t i = 0; i < j.invars.size(); ++i) {
    bool u = read(j.invars[i]) || instantiate[i];
    used_inputs.push_back(u);
    if (u) out.invars.push_back(j.invars[i]);
  }
  for (size_t i = 0; i < j.outvars.size(); ++i)
    if (used_outputs[i]) out.outvars.push_back(j.outvars[i]);
  out.eqns.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
  for (auto& e : out.eqns) out.effects.insert(e.effects.begin(), e.effects.end());
  return {std::move(out), std::move(used_inputs)};
}

}  // namespace minijax
