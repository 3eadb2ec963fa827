// minijax partial evaluation of `scan` (JAX's _scan_partial_eval_custom plus loop-invariant hoisting).
// Owns the carry fixpoint, residual placement (forwarded, hoisted, stacked, offloaded) and the two scans.
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "autodiff/rules/scan_partial_eval.h"

#include "autodiff/checkpoint_policies.h"
#include "autodiff/partial_eval.h"
#include "core/dce.h"
#include "core/errors.h"
#include "core/views/control_flow.h"
#include "core/views/memory_ops.h"

namespace minijax {
namespace {

ClosedJaxprPtr make_closed(Jaxpr j) {
  auto c = std::make_shared<ClosedJaxpr>();
  j.effects.clear();
  for (auto& e : j.eqns) j.effects.insert(e.effects.begin(), e.effects.end());
  c->jaxpr = std::make_shared<Jaxpr>(std::move(j));
  return c;
}

ShapedArray stacked_aval(const ShapedArray& a, int64_t length) {
  ShapedArray s = a;
  s.shape.insert(s.shape.begin(), length);
  return s;
}

Effects effects_of(const Jaxpr& j) {
  Effects fx;
  for (auto& e : j.eqns) fx.insert(e.effects.begin(), e.effects.end());
  return fx;
}

// A scan equation with the parameters of `base` and a new body and operand split.
Eqn make_scan_eqn(const Eqn& base, Jaxpr body, int64_t num_consts, int64_t num_carry,
                  std::vector<int64_t> linear, std::vector<Atom> inputs, std::vector<Var> outputs) {
  Eqn e;
  e.primitive = &ScanParams::primitive();
  ScanParams p = scan_params(base);
  e.effects = effects_of(body);
  p.jaxpr = make_closed(std::move(body));
  p.num_consts = num_consts;
  p.num_carry = num_carry;
  p.linear = std::move(linear);
  e.params = p.to_params();
  e.inputs = std::move(inputs);
  e.outputs = std::move(outputs);
  return e;
}

// The value an atom of `j` carries back through identity-like equations: either the `name`
// equation that produced it (found) or invar `invar` of j.
struct NameTrace {
  const Eqn* name_eqn = nullptr;
  std::optional<size_t> invar;
  const Params* checkpoint_params = nullptr;  ///< innermost checkpoint around name_eqn
};

NameTrace trace_name(const Jaxpr& j, const Atom& a, int depth = 0) {
  NameTrace r;
  auto* v = std::get_if<Var>(&a);
  if (!v || depth > 16) return r;
  for (size_t i = 0; i < j.invars.size(); ++i)
    if (j.invars[i] == *v) {
      r.invar = i;
      return r;
    }
  for (const Eqn& e : j.eqns) {
    for (size_t k = 0; k < e.outputs.size(); ++k) {
      if (!(e.outputs[k] == *v)) continue;
      if (CheckpointNameParams::is(e)) {
        r.name_eqn = &e;
        return r;
      }
      if (OptimizationBarrierParams::is(e) && k < e.inputs.size()) return trace_name(j, e.inputs[k], depth + 1);
      if (DevicePutParams::is(e) && e.inputs.size() == 1) return trace_name(j, e.inputs[0], depth + 1);
      const bool call = is_pjit(*e.primitive) || is_closed_call(*e.primitive) || is_checkpoint(*e.primitive);
      if (call) {
        const Jaxpr& inner = *call_params(e).jaxpr->jaxpr;
        if (!inner.constvars.empty() || k >= inner.outvars.size()) return r;
        NameTrace in = trace_name(inner, inner.outvars[k], depth + 1);
        if (in.name_eqn) {
          if (is_checkpoint(*e.primitive) && !in.checkpoint_params) in.checkpoint_params = &e.params;
          return in;
        }
        if (in.invar && *in.invar < e.inputs.size()) return trace_name(j, e.inputs[*in.invar], depth + 1);
      }
      return r;
    }
  }
  return r;
}

// Where a residual of the split body comes from in the outer program: a known const or x operand
// forwarded as is, a loop-invariant value hoisted before the loop, or a value stacked by the known
// scan ([length, ...]).
enum class ResKind { fwd_const, fwd_xs, hoisted, stacked };

// What the phases of scan_partial_eval share: the scan's operand layout, the split body and where
// each residual goes. The phases fill it in the order scan_partial_eval calls them.
struct ScanSplit {
  const Eqn& e;
  const Jaxpr& body;
  const SaveablePolicy& policy;
  const bool recarry;  ///< KnownCarries::recompute: the staged body takes every input, yields every carry
  const size_t nc, ncar;
  const int64_t length;
  const size_t nin, ny;
  std::vector<int64_t> lin_param;  ///< the scan's `linear`, one flag per operand
  std::vector<bool> unk;           ///< which operands are unknown (after the carry fixpoint)
  PartialEvalResult pe;            ///< the split body
  size_t nres = 0, nko = 0;        ///< residuals, and the known body's outputs before them
  std::vector<size_t> known_pos;   ///< body input position of each known input
  std::vector<ResKind> kind;       ///< per residual
  std::vector<size_t> fwd_pos;     ///< per forwarding residual: the operand it forwards
  std::vector<Atom> hoisted_outer, stacked_outer;  ///< per hoisted / stacked residual: its outer value
  std::vector<std::optional<Offloadable>> carry_offload;  ///< per stacked named carry the policy offloads
  std::vector<std::string> carry_name;                    ///< per stacked named carry: its name
  std::vector<ShapedArray> res_slice_aval;  ///< per stacked residual: one iteration's aval (after offload)

  ScanSplit(const Eqn& eqn, const Jaxpr& b, const SaveablePolicy& p, KnownCarries carries)
      : e(eqn), body(b), policy(p), recarry(carries == KnownCarries::recompute),
        nc(size_t(scan_params(eqn).num_consts)), ncar(size_t(scan_params(eqn).num_carry)),
        length(scan_params(eqn).length), nin(eqn.inputs.size()), ny(b.outvars.size() - ncar) {
    lin_param = scan_params(e).linear.value_or(std::vector<int64_t>{});
    if (lin_param.size() != nin) lin_param.assign(nin, 0);
  }
  bool is_const(size_t pos) const { return pos < nc; }
  bool is_carry(size_t pos) const { return pos >= nc && pos < nc + ncar; }
};

// The scan's body, checked to have no constvars (scan passes its constants as leading operands).
const Jaxpr& scan_body(const Eqn& e) {
  const ClosedJaxprPtr cj = scan_params(e).jaxpr;
  if (!cj->jaxpr->constvars.empty() || !cj->consts.empty())
    throw ValueError("scan partial evaluation: the body jaxpr has constvars (they must be leading operands)");
  return *cj->jaxpr;
}

// An all-known scan is put to the enclosing policy like any equation: Recompute copies it to the
// staged side (the whole loop is rematerialized, e.g. under nothing_saveable); otherwise its
// outputs are kept.
PeCustomResult keep_or_recompute_known_scan(const Eqn& e, const SaveablePolicy& policy) {
  PeCustomResult out;
  bool recompute = false;
  if (policy && e.effects.empty()) {
    std::vector<ShapedArray> avals;
    for (auto& a : e.inputs) avals.push_back(atom_aval(a));
    recompute = std::holds_alternative<Recompute>(policy(*e.primitive, avals, e.params));
  }
  out.known_eqns.push_back(e);
  if (recompute) out.staged_eqns.push_back(e);
  out.out_unknowns.assign(e.outputs.size(), false);
  out.out_inst.assign(e.outputs.size(), recompute);
  return out;
}

// (a)+(b): splits the body under the policy, marking a carry unknown whenever its body output is,
// until the carries' knownness is a fixed point. Recomputing known carries, the staged body takes
// every input and yields every carry.
void split_body_to_carry_fixpoint(ScanSplit& s, const std::vector<bool>& in_unknowns) {
  s.unk = in_unknowns;
  for (;;) {
    std::vector<bool> ensure(s.ncar + s.ny, false), ensure_inst(s.ncar + s.ny, false);
    for (size_t c = 0; c < s.ncar; ++c) {
      ensure[c] = s.unk[s.nc + c];
      ensure_inst[c] = s.recarry || s.unk[s.nc + c];
    }
    s.pe = partial_eval_jaxpr_custom(s.body, s.unk, s.recarry ? std::vector<bool>(s.nin, true) : s.unk, ensure,
                                     ensure_inst, s.policy);
    bool changed = false;
    for (size_t c = 0; c < s.ncar; ++c)
      if (s.pe.out_unknowns[c] && !s.unk[s.nc + c]) s.unk[s.nc + c] = changed = true;
    if (!changed) break;
  }
  s.nres = size_t(s.pe.num_res);
  s.nko = s.pe.known.outvars.size() - s.nres;
  for (size_t i = 0; i < s.nin; ++i)
    if (!s.unk[i]) s.known_pos.push_back(i);
}

// (c) places each residual: forwarded (a known const or x operand), hoisted (loop-invariant: it
// depends on no carry, x or effect of the known body) or stacked. Returns, per equation of the
// known body, whether it is loop-invariant.
std::vector<bool> classify_residuals(ScanSplit& s) {
  const Jaxpr& K = s.pe.known;
  std::unordered_set<Var, VarHash> variant;
  for (size_t k = 0; k < K.invars.size(); ++k)
    if (!s.is_const(s.known_pos[k])) variant.insert(K.invars[k]);
  std::vector<bool> eqn_invariant;
  for (const Eqn& q : K.eqns) {
    bool var = !q.effects.empty();
    for (auto& a : q.inputs)
      if (auto* v = std::get_if<Var>(&a); v && variant.count(*v)) var = true;
    if (var)
      for (auto& o : q.outputs) variant.insert(o);
    eqn_invariant.push_back(!var);
  }
  s.kind.assign(s.nres, ResKind::fwd_const);
  s.fwd_pos.assign(s.nres, 0);
  for (size_t r = 0; r < s.nres; ++r) {
    const ResidualInfo& info = s.pe.residuals[r];
    const Atom& rv = K.outvars[s.nko + r];
    if (info.forwards_input) {
      size_t pos = s.known_pos[size_t(*info.forwards_input)];
      s.fwd_pos[r] = pos;
      s.kind[r] = s.is_const(pos) ? ResKind::fwd_const : s.is_carry(pos) ? ResKind::stacked : ResKind::fwd_xs;
      continue;
    }
    auto* v = std::get_if<Var>(&rv);
    s.kind[r] = (v && variant.count(*v)) ? ResKind::stacked : ResKind::hoisted;
  }
  return eqn_invariant;
}

// Hoisted residuals: inlines the loop-invariant equations they need before the loop (into
// out.known_eqns), with the known consts substituted and fresh variables.
void hoist_invariant_residuals(ScanSplit& s, const std::vector<bool>& eqn_invariant, PeCustomResult& out) {
  const Jaxpr& K = s.pe.known;
  std::unordered_map<Var, Atom, VarHash> subst;
  for (size_t k = 0; k < K.invars.size(); ++k)
    if (s.is_const(s.known_pos[k])) subst[K.invars[k]] = s.e.inputs[s.known_pos[k]];
  s.hoisted_outer.assign(s.nres, Atom{});
  Jaxpr hj;
  hj.invars = K.invars;
  for (size_t i = 0; i < K.eqns.size(); ++i)
    if (eqn_invariant[i]) hj.eqns.push_back(K.eqns[i]);
  for (size_t r = 0; r < s.nres; ++r)
    if (s.kind[r] == ResKind::hoisted) hj.outvars.push_back(K.outvars[s.nko + r]);
  if (hj.outvars.empty()) return;
  Jaxpr pruned = dce_jaxpr(hj, std::vector<bool>(hj.outvars.size(), true), true).first;
  auto sub = [&](const Atom& a) -> Atom {
    if (auto* v = std::get_if<Var>(&a)) return subst.at(*v);
    return a;
  };
  for (const Eqn& q : pruned.eqns) {
    Eqn n = q;
    for (auto& a : n.inputs) a = sub(a);
    for (auto& o : n.outputs) {
      Var fresh = o.is_dropvar() ? Var::dropvar(o.aval()) : Var(o.aval());
      if (!o.is_dropvar()) subst[o] = fresh;
      o = fresh;
    }
    out.known_eqns.push_back(std::move(n));
  }
  for (size_t r = 0; r < s.nres; ++r)
    if (s.kind[r] == ResKind::hoisted) s.hoisted_outer[r] = sub(K.outvars[s.nko + r]);
}

// Named-carry offload (docs/cases/offload-named-carry.md): finds each stacked known carry whose
// body output was named, and whose name the policy offloads; it is stacked in the destination memory.
void find_offloaded_named_carries(ScanSplit& s) {
  const Jaxpr& K = s.pe.known;
  s.carry_offload.assign(s.nres, std::nullopt);
  s.carry_name.assign(s.nres, std::string{});
  for (size_t r = 0; r < s.nres; ++r) {
    if (s.kind[r] != ResKind::stacked || !s.pe.residuals[r].forwards_input || !s.is_carry(s.fwd_pos[r])) continue;
    size_t c = s.fwd_pos[r] - s.nc;
    NameTrace t = trace_name(s.body, s.body.outvars[c]);
    if (!t.name_eqn) continue;
    s.carry_name[r] = checkpoint_name_params(*t.name_eqn).name;
    // The enclosing policy applies inside the body; without one, a checkpoint around the name
    // applies its own (docs/design.md: policies nest).
    // Under linearize a checkpoint in the body has already been split (its known half inlined),
    // so its policy is found on the checkpoint equations left in the body.
    std::vector<SaveablePolicy> asks;
    if (s.policy) {
      asks.push_back(s.policy);
    } else {
      std::vector<const Params*> cps;
      if (t.checkpoint_params) cps.push_back(t.checkpoint_params);
      for (const Eqn& q : s.body.eqns)
        if (is_checkpoint(*q.primitive)) cps.push_back(&q.params);
      for (const Params* cp : cps)
        if (PolicyPtr own = detail::policy_from_params(*cp)) asks.push_back(own->saveable());
    }
    std::vector<ShapedArray> avals;
    for (auto& a : t.name_eqn->inputs) avals.push_back(atom_aval(a));
    for (auto& ask : asks) {
      PolicyDecision d = ask(*t.name_eqn->primitive, avals, t.name_eqn->params);
      if (auto* off = std::get_if<Offloadable>(&d))
        if (atom_aval(K.outvars[s.nko + r]).memory_kind == off->src) {
          s.carry_offload[r] = *off;
          break;
        }
    }
  }
}

// (d) the known scan: known consts, carries, xs -> known carry outs, known ys, stacked residuals
// (an offloaded one moved to its memory in the body). Appended to out.known_eqns unless it has no
// outputs.
void build_known_scan(ScanSplit& s, PeCustomResult& out) {
  const Primitive& device_put = get_or_create_primitive("device_put");
  const Jaxpr& K = s.pe.known;
  const Eqn& e = s.e;
  Jaxpr Kb = K;
  Kb.outvars.assign(K.outvars.begin(), K.outvars.begin() + std::ptrdiff_t(s.nko));
  s.stacked_outer.assign(s.nres, Atom{});
  s.res_slice_aval.assign(s.nres, ShapedArray{});
  std::vector<Var> known_outs;
  for (size_t c = 0; c < s.ncar; ++c)
    if (!s.unk[s.nc + c]) known_outs.push_back(e.outputs[c]);
  for (size_t j = 0; j < s.ny; ++j)
    if (!s.pe.out_unknowns[s.ncar + j]) known_outs.push_back(e.outputs[s.ncar + j]);
  for (size_t r = 0; r < s.nres; ++r) {
    if (s.kind[r] != ResKind::stacked) continue;
    Atom rv = K.outvars[s.nko + r];
    if (s.carry_offload[r]) {
      ShapedArray host = atom_aval(rv);
      host.memory_kind = s.carry_offload[r]->dst;
      Var h(host);
      Kb.eqns.push_back(Eqn{&device_put, {rv}, {h}, Params{{"memory_kind", s.carry_offload[r]->dst}}, {}});
      rv = h;
    }
    s.res_slice_aval[r] = atom_aval(rv);
    Kb.outvars.push_back(rv);
    Var st(stacked_aval(atom_aval(rv), s.length));
    known_outs.push_back(st);
    s.stacked_outer[r] = st;
  }
  Kb = dce_jaxpr(Kb, std::vector<bool>(Kb.outvars.size(), true), true).first;
  size_t nkc = 0, nkcar = 0;
  std::vector<Atom> known_ins;
  for (size_t pos : s.known_pos) {
    known_ins.push_back(e.inputs[pos]);
    nkc += s.is_const(pos);
    nkcar += s.is_carry(pos);
  }
  if (!known_outs.empty())
    out.known_eqns.push_back(make_scan_eqn(e, std::move(Kb), int64_t(nkc), int64_t(nkcar),
                                           std::vector<int64_t>(known_ins.size(), 0), known_ins, known_outs));
}

// The staged scan: consts [hoisted, forwarded consts, unknown consts], carries [unknown],
// xs [stacked, forwarded xs, unknown xs]; an offloaded stacked residual is moved back to its
// memory at the top of the body. Appended to out.staged_eqns unless it has no outputs.
void build_staged_scan(const ScanSplit& s, PeCustomResult& out) {
  const Primitive& device_put = get_or_create_primitive("device_put");
  const Jaxpr& S = s.pe.staged;
  const Eqn& e = s.e;
  Jaxpr Sb;
  Sb.eqns = S.eqns;
  Sb.outvars = S.outvars;
  std::vector<Atom> s_ins;
  std::vector<int64_t> s_lin;
  std::vector<Eqn> reloads;
  auto add_res = [&](ResKind k) {
    for (size_t r = 0; r < s.nres; ++r) {
      if (s.kind[r] != k) continue;
      Var inner = S.invars[r];
      if (s.carry_offload[r]) {
        Var h(s.res_slice_aval[r]);
        reloads.push_back(Eqn{&device_put, {h}, {inner}, Params{{"memory_kind", s.carry_offload[r]->src}}, {}});
        inner = h;
      }
      Sb.invars.push_back(inner);
      s_ins.push_back(k == ResKind::hoisted ? s.hoisted_outer[r]
                      : k == ResKind::stacked ? s.stacked_outer[r]
                                              : e.inputs[s.fwd_pos[r]]);
      s_lin.push_back(0);
    }
  };
  std::vector<size_t> unk_pos;  // the operand of each input invar of S after the residuals
  for (size_t i = 0; i < s.nin; ++i)
    if (s.recarry || s.unk[i]) unk_pos.push_back(i);
  auto add_unknown = [&](size_t lo, size_t hi) {
    for (size_t k = 0; k < unk_pos.size(); ++k)
      if (unk_pos[k] >= lo && unk_pos[k] < hi) {
        Sb.invars.push_back(S.invars[s.nres + k]);
        s_ins.push_back(e.inputs[unk_pos[k]]);
        s_lin.push_back(s.unk[unk_pos[k]] ? s.lin_param[unk_pos[k]] : 0);
      }
  };
  add_res(ResKind::hoisted);
  add_res(ResKind::fwd_const);
  add_unknown(0, s.nc);
  const size_t s_nc = Sb.invars.size();
  add_unknown(s.nc, s.nc + s.ncar);
  const size_t s_ncar = Sb.invars.size() - s_nc;
  add_res(ResKind::stacked);
  add_res(ResKind::fwd_xs);
  add_unknown(s.nc + s.ncar, s.nin);
  Sb.eqns.insert(Sb.eqns.begin(), reloads.begin(), reloads.end());
  std::vector<Var> staged_outs;
  for (size_t c = 0; c < s.ncar; ++c)
    if (s.pe.out_inst[c]) staged_outs.push_back(e.outputs[c]);
  for (size_t j = 0; j < s.ny; ++j)
    if (s.pe.out_inst[s.ncar + j]) staged_outs.push_back(e.outputs[s.ncar + j]);
  if (!staged_outs.empty())
    out.staged_eqns.push_back(make_scan_eqn(e, std::move(Sb), int64_t(s_nc), int64_t(s_ncar), s_lin, s_ins,
                                            staged_outs));
}

// Lists the residuals defined by the known equations (hoisted and stacked, in residual order) with
// their placement and name; forwarded consts/xs are outer operands, which the caller instantiates itself.
void list_defined_residuals(const ScanSplit& s, PeCustomResult& out) {
  const Jaxpr& K = s.pe.known;
  for (size_t r = 0; r < s.nres; ++r) {
    if (s.kind[r] != ResKind::hoisted && s.kind[r] != ResKind::stacked) continue;
    const Atom& a = s.kind[r] == ResKind::hoisted ? s.hoisted_outer[r] : s.stacked_outer[r];
    auto* v = std::get_if<Var>(&a);
    if (!v) continue;  // a literal: nothing to pass
    ResidualInfo info = s.pe.residuals[r];
    info.aval = v->aval();
    info.memory_kind = v->aval().memory_kind;
    info.forwards_input.reset();
    if (info.name.empty()) {
      // A name given inside an already-split checkpoint (e.g. the value an offloading
      // device_put moved to the host).
      NameTrace t = trace_name(K, K.outvars[s.nko + r]);
      if (t.name_eqn) info.name = checkpoint_name_params(*t.name_eqn).name;
    }
    if (s.kind[r] == ResKind::stacked) {
      info.placement = ResidualPlacement::stacked;
      if (!s.carry_name[r].empty()) info.name = s.carry_name[r];
    } else {
      info.placement = ResidualPlacement::hoisted;
    }
    out.residuals.push_back(*v);
    out.residual_info.push_back(std::move(info));
  }
}

}  // namespace

// JAX's _scan_partial_eval_custom, with the residual placements of docs/design.md ("Scan
// residuals"): (a) fixpoint over which carries are unknown; (b) partial_eval_jaxpr_custom of the
// body under the enclosing policy; (c) residuals forwarding consts/xs are passed as the outer
// operands, residuals depending only on known consts are hoisted before the loop, the others are
// stacked [length, ...] by the known scan; (d) a known scan and a staged scan. A known carry the
// staged body needs is stacked too (KnownCarries::stack), or carried again by the staged scan,
// recomputed from the residuals (KnownCarries::recompute: JAX's in_inst=True).
PeCustomResult scan_partial_eval(const Eqn& e, const std::vector<bool>& in_unknowns, const SaveablePolicy& policy,
                                 KnownCarries carries) {
  ScanSplit s(e, scan_body(e), policy, carries);
  bool any_unknown = false;
  for (bool b : in_unknowns) any_unknown |= b;
  if (!any_unknown) return keep_or_recompute_known_scan(e, policy);

  PeCustomResult out;
  split_body_to_carry_fixpoint(s, in_unknowns);
  std::vector<bool> eqn_invariant = classify_residuals(s);
  hoist_invariant_residuals(s, eqn_invariant, out);
  find_offloaded_named_carries(s);
  build_known_scan(s, out);
  build_staged_scan(s, out);
  for (size_t c = 0; c < s.ncar; ++c) out.out_unknowns.push_back(s.unk[s.nc + c]);
  for (size_t j = 0; j < s.ny; ++j) out.out_unknowns.push_back(s.pe.out_unknowns[s.ncar + j]);
  out.out_inst = s.pe.out_inst;
  list_defined_residuals(s, out);
  return out;
}

namespace {
// Under a policy (inside a checkpoint), known carries are carried again by the staged scan, as
// JAX's _scan_partial_eval_custom does: the forward pass keeps only what the policy saves (the
// seed case's form 2 keeps the offloaded host stack alone), and the backward pass recomputes the
// carries (scan_transpose). Without one (linearize), they are stacked.
Registrar reg([] {
  pe_custom_rules()["scan"] = [](const Eqn& e, const std::vector<bool>& in_unknowns, const std::vector<bool>&,
                                 const SaveablePolicy& policy) {
    return scan_partial_eval(e, in_unknowns, policy, policy ? KnownCarries::recompute : KnownCarries::stack);
  };
});

}  // namespace
}  // namespace minijax
