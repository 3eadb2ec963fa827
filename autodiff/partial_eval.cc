// minijax jaxpr-level partial evaluation (JAX's pe.partial_eval_jaxpr_custom).
// Owns the known/staged split, residual bookkeeping (forwarding, memory kinds) and policy calls.
#include "autodiff/partial_eval.h"

#include <unordered_map>
#include <unordered_set>

#include "core/config.h"
#include "core/dce.h"
#include "core/verify.h"
#include "core/views/control_flow.h"
#include "core/views/memory_ops.h"

namespace minijax {

const char* residual_placement_name(ResidualPlacement p) {
  switch (p) {
    case ResidualPlacement::computed: return "computed";
    case ResidualPlacement::forwarded: return "forwarded";
    case ResidualPlacement::stacked: return "stacked";
    case ResidualPlacement::hoisted: return "hoisted";
  }
  return "?";
}

namespace {
thread_local ResidualNotes* innermost_notes = nullptr;
}  // namespace

ResidualNotes::ResidualNotes() : outer_(innermost_notes) { innermost_notes = this; }
ResidualNotes::~ResidualNotes() { innermost_notes = outer_; }

void ResidualNotes::note(const Array& value, const ResidualInfo& info) {
  if (innermost_notes && value.defined() && !info.forwards_input)
    innermost_notes->notes_.emplace_back(value.impl_ptr(), info);
}

const ResidualInfo* ResidualNotes::find(const Array& value) const {
  for (auto it = notes_.rbegin(); it != notes_.rend(); ++it)
    if (value.defined() && it->first.get() == value.impl()) return &it->second;
  return nullptr;
}

std::map<std::string, PeCustomRule>& pe_custom_rules() {
  static std::map<std::string, PeCustomRule> t;
  return t;
}

PolicyDecision everything_saveable_policy(const Primitive&, const std::vector<ShapedArray>&,
                                          const Params&) {
  return Saveable{};
}

namespace {
thread_local int pe_depth = 0;  // partial_eval_jaxpr_custom calls open on this thread
constexpr int kMaxPeRuleDepth = 32;

// What partial_eval_jaxpr_custom knows while it walks the equations: each value's side (known or
// unknown) and whether the staged side has it, the residuals, and the two equation lists.
struct PeWalk {
  struct State {
    bool unknown;
    bool inst;
  };
  std::unordered_map<Var, State, VarHash> env;
  std::unordered_map<Var, int, VarHash> known_invar_index;
  std::unordered_map<Var, std::string, VarHash> made_by;
  std::unordered_map<Var, std::string, VarHash> names;  // checkpoint_name of a value
  std::unordered_map<Var, ResidualInfo, VarHash> rule_res_info;
  std::vector<Var> residuals;
  std::unordered_set<Var, VarHash> res_set;
  std::vector<Eqn> known_eqns, staged_eqns;

  State read(const Atom& a) const {
    if (auto* v = std::get_if<Var>(&a)) return env.at(*v);
    return {false, true};  // literals are available on both sides
  }
  void add_residual(const Var& v) {
    if (res_set.insert(v).second) residuals.push_back(v);
  }
  void ensure_inst(const Atom& a) {
    auto* v = std::get_if<Var>(&a);
    if (!v) return;
    State& s = env.at(*v);
    if (!s.unknown && !s.inst) {
      add_residual(*v);
      s.inst = true;
    }
  }
  void write(const Var& v, bool unknown, bool inst) {
    if (!v.is_dropvar()) env[v] = {unknown, inst};
  }

  // An equation with a custom rule (call, loop and branch primitives): the rule splits it.
  void apply_rule(const Eqn& e, const PeCustomRule& rule, const SaveablePolicy& policy) {
    std::vector<bool> unk, inst;
    for (auto& a : e.inputs) {
      State st = read(a);
      unk.push_back(st.unknown);
      inst.push_back(st.inst);
    }
    PeCustomResult pr = rule(e, unk, inst, policy);
    known_eqns.insert(known_eqns.end(), pr.known_eqns.begin(), pr.known_eqns.end());
    staged_eqns.insert(staged_eqns.end(), pr.staged_eqns.begin(), pr.staged_eqns.end());
    // Known inputs of the equation that the staged side reads become (forwarded) residuals.
    std::unordered_set<Var, VarHash> ins;
    for (auto& a : e.inputs)
      if (auto* v = std::get_if<Var>(&a)) ins.insert(*v);
    for (auto& se : pr.staged_eqns)
      for (auto& a : se.inputs)
        if (auto* v = std::get_if<Var>(&a); v && ins.count(*v)) ensure_inst(a);
    for (size_t i = 0; i < pr.residuals.size(); ++i) {
      add_residual(pr.residuals[i]);
      env[pr.residuals[i]] = {false, true};
      if (i < pr.residual_info.size()) rule_res_info[pr.residuals[i]] = pr.residual_info[i];
    }
    for (size_t i = 0; i < e.outputs.size(); ++i) write(e.outputs[i], pr.out_unknowns[i], pr.out_inst[i]);
  }

  // A known equation: the policy decides whether its outputs are saved, recomputed or offloaded.
  void apply_policy(const Eqn& e, const SaveablePolicy& policy, std::source_location loc) {
    std::vector<ShapedArray> avals;
    for (auto& a : e.inputs) avals.push_back(atom_aval(a));
    // An equation of literals only (a broadcast zero, an iota) is recomputed wherever it is
    // needed rather than kept as a residual: it costs nothing to rematerialize, while saving it
    // would keep a whole array alive (e.g. the zero tangent a scan's carry starts from).
    bool constant_only = e.effects.empty() && !e.inputs.empty();
    for (auto& a : e.inputs) constant_only &= std::holds_alternative<Literal>(a);
    if (e.inputs.empty() && e.effects.empty()) constant_only = true;
    PolicyDecision d = constant_only ? PolicyDecision{Recompute{}}
                       : (e.effects.empty() && policy) ? policy(*e.primitive, avals, e.params)
                                                       : PolicyDecision{Saveable{}};
    for (auto& o : e.outputs) made_by[o] = e.primitive->name;
    if (CheckpointNameParams::is(e)) {
      const std::string name = checkpoint_name_params(e).name;
      for (auto& o : e.outputs) names[o] = name;
      // The named value itself bears the name too (a dot saved by dots_saveable whose output
      // is named; jax PR #20285), unless it already has one.
      if (auto* in = e.inputs.empty() ? nullptr : std::get_if<Var>(&e.inputs[0]))
        names.emplace(*in, name);
    }
    if (std::holds_alternative<Saveable>(d)) {
      known_eqns.push_back(e);
      for (auto& o : e.outputs) write(o, false, false);
    } else if (std::holds_alternative<Recompute>(d)) {
      // The staged copy needs the inputs; residuals it turns out not to need are pruned below.
      for (auto& a : e.inputs) ensure_inst(a);
      known_eqns.push_back(e);
      staged_eqns.push_back(e);
      for (auto& o : e.outputs) write(o, false, true);
    } else {
      offload(e, std::get<Offloadable>(d), loc);
    }
  }

  // An Offloadable decision: each output is saved in the policy's destination memory kind
  // (a device_put on the known side) and brought back on the staged side.
  void offload(const Eqn& e, const Offloadable& off, std::source_location loc) {
    const Primitive& device_put = DevicePutParams::primitive();
    known_eqns.push_back(e);
    for (auto& o : e.outputs) {
      if (o.is_dropvar()) continue;
      if (o.aval().memory_kind != off.src)
        throw ValueError(std::string("offload policy: the output of ") + e.primitive->name + " is " +
                             o.aval().str() + ", not in the policy's source memory kind " +
                             memory_kind_name(off.src),
                         loc);
      ShapedArray host = o.aval();
      host.memory_kind = off.dst;
      Var h(host);
      known_eqns.push_back(Eqn{&device_put, {o}, {h}, DevicePutParams{off.dst}.to_params(), {}});
      staged_eqns.push_back(Eqn{&device_put, {h}, {o}, DevicePutParams{off.src}.to_params(), {}});
      add_residual(h);
      made_by[h] = e.primitive->name;
      if (names.count(o)) names[h] = names[o];
      env[h] = {false, true};
      write(o, false, true);
    }
  }

  // What the caller learns of each residual: its rule's info, else its aval, the known input it
  // forwards, its checkpoint_name and the primitive that made it.
  ResidualInfo residual_info(const Var& v) const {
    auto ri = rule_res_info.find(v);
    if (ri != rule_res_info.end()) return ri->second;
    ResidualInfo info;
    info.aval = v.aval();
    info.memory_kind = v.aval().memory_kind;
    auto f = known_invar_index.find(v);
    if (f != known_invar_index.end()) {
      info.forwards_input = f->second;
      info.placement = ResidualPlacement::forwarded;
    }
    auto nm = names.find(v);
    if (nm != names.end()) info.name = nm->second;
    auto m = made_by.find(v);
    if (m != made_by.end()) info.made_by = m->second;
    return info;
  }
};

void check_pe_masks(const Jaxpr& jaxpr, const std::vector<bool>& in_unknowns, const std::vector<bool>& in_inst,
                    const std::vector<bool>& ensure_out_unknowns, const std::vector<bool>& ensure_out_inst,
                    std::source_location loc) {
  if (!jaxpr.constvars.empty())
    throw ValueError("partial_eval_jaxpr_custom: the jaxpr has constvars (convert them first)", loc);
  if (in_unknowns.size() != jaxpr.invars.size() || in_inst.size() != jaxpr.invars.size() ||
      ensure_out_unknowns.size() != jaxpr.outvars.size() ||
      ensure_out_inst.size() != jaxpr.outvars.size())
    throw ValueError("partial_eval_jaxpr_custom: mask lengths do not match the jaxpr's " +
                         std::to_string(jaxpr.invars.size()) + " inputs and " +
                         std::to_string(jaxpr.outvars.size()) + " outputs",
                     loc);
}

}  // namespace

PartialEvalResult partial_eval_jaxpr_custom(const Jaxpr& jaxpr, const std::vector<bool>& in_unknowns,
                                            const std::vector<bool>& in_inst,
                                            const std::vector<bool>& ensure_out_unknowns,
                                            const std::vector<bool>& ensure_out_inst,
                                            const SaveablePolicy& policy, std::source_location loc) {
  check_pe_masks(jaxpr, in_unknowns, in_inst, ensure_out_unknowns, ensure_out_inst, loc);
  // Custom rules (call, loop and branch primitives) partially evaluate their bodies by calling
  // this function: beyond kMaxPeRuleDepth nested bodies an equation is treated as any other
  // primitive (staged whole when an input is unknown), so the recursion stays bounded however
  // deep the nest.
  struct Depth {
    Depth() { ++pe_depth; }
    ~Depth() { --pe_depth; }
  } depth;
  const bool use_rules = pe_depth <= kMaxPeRuleDepth;
  PeWalk w;
  int k = 0;
  for (size_t i = 0; i < jaxpr.invars.size(); ++i) {
    w.env[jaxpr.invars[i]] = {in_unknowns[i], in_unknowns[i] || in_inst[i]};
    if (!in_unknowns[i]) w.known_invar_index[jaxpr.invars[i]] = k++;
  }
  for (const Eqn& e : jaxpr.eqns) {
    bool any_unknown = false;
    for (auto& a : e.inputs) any_unknown |= w.read(a).unknown;
    auto rule = pe_custom_rules().find(e.primitive->name);
    if (rule != pe_custom_rules().end() && use_rules) {
      w.apply_rule(e, rule->second, policy);
    } else if (any_unknown) {
      for (auto& a : e.inputs) w.ensure_inst(a);
      w.staged_eqns.push_back(e);
      for (auto& o : e.outputs) w.write(o, true, true);
    } else {
      w.apply_policy(e, policy, loc);
    }
  }

  PartialEvalResult r;
  for (size_t i = 0; i < jaxpr.outvars.size(); ++i) {
    const Atom& o = jaxpr.outvars[i];
    PeWalk::State s = w.read(o);
    bool unk = s.unknown || ensure_out_unknowns[i];
    if ((ensure_out_unknowns[i] || ensure_out_inst[i]) && !s.unknown) w.ensure_inst(o);
    r.out_unknowns.push_back(unk);
    r.out_inst.push_back(s.unknown || ensure_out_unknowns[i] || ensure_out_inst[i] ||
                         (std::holds_alternative<Literal>(o) && unk));
  }

  // Staged jaxpr: [residuals..., inputs with in_inst] -> outputs with out_inst. Residuals the
  // staged side does not use after DCE are pruned from both sides.
  std::vector<Var>& residuals = w.residuals;
  Jaxpr staged;
  staged.invars = residuals;
  for (size_t i = 0; i < jaxpr.invars.size(); ++i)
    if (in_unknowns[i] || in_inst[i]) staged.invars.push_back(jaxpr.invars[i]);
  staged.eqns = w.staged_eqns;
  for (size_t i = 0; i < jaxpr.outvars.size(); ++i)
    if (r.out_inst[i]) staged.outvars.push_back(jaxpr.outvars[i]);
  std::vector<bool> keep_in(staged.invars.size(), true);
  for (size_t i = 0; i < residuals.size(); ++i) keep_in[i] = false;
  auto [staged_dce, used_in] =
      dce_jaxpr(staged, std::vector<bool>(staged.outvars.size(), true), keep_in);
  std::vector<Var> kept;
  for (size_t i = 0; i < residuals.size(); ++i)
    if (used_in[i]) kept.push_back(residuals[i]);
  residuals = kept;
  r.staged = staged_dce;

  // Known jaxpr: known inputs -> [known outputs..., residuals...].
  Jaxpr known;
  for (size_t i = 0; i < jaxpr.invars.size(); ++i)
    if (!in_unknowns[i]) known.invars.push_back(jaxpr.invars[i]);
  known.eqns = w.known_eqns;
  for (size_t i = 0; i < jaxpr.outvars.size(); ++i)
    if (!r.out_unknowns[i]) known.outvars.push_back(jaxpr.outvars[i]);
  for (auto& v : residuals) known.outvars.push_back(v);
  r.known = dce_jaxpr(known, std::vector<bool>(known.outvars.size(), true), /*instantiate=*/true).first;
  for (auto* j : {&r.known, &r.staged})
    for (auto& e : j->eqns) j->effects.insert(e.effects.begin(), e.effects.end());
  if (config().verify_jaxprs) {
    verify_jaxpr(r.known, loc);
    verify_jaxpr(r.staged, loc);
  }
  r.num_res = int(residuals.size());
  for (auto& v : residuals) r.residuals.push_back(w.residual_info(v));
  return r;
}

}  // namespace minijax
