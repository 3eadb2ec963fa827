// minijax autodiff and batching rules of `checkpoint` (remat) and `name` (checkpoint_name).
// Owns checkpoint's pure JVP, its policy-aware partial-eval rule, transpose and batching.
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "autodiff/batching.h"
#include "autodiff/batching_util.h"
#include "autodiff/checkpoint_policies.h"
#include "autodiff/jvp.h"
#include "autodiff/jvp_split.h"
#include "autodiff/partial_eval.h"
#include "autodiff/rules/call_transpose.h"
#include "autodiff/transpose.h"
#include "autodiff/vmap.h"
#include "core/dce.h"
#include "core/pjit.h"
#include "core/prevent_cse.h"
#include "core/staging.h"
#include "core/views/control_flow.h"
#include "core/views/memory_ops.h"

namespace minijax {
namespace {

ClosedJaxprPtr closed(Jaxpr j) {
  auto c = std::make_shared<ClosedJaxpr>();
  c->jaxpr = std::make_shared<Jaxpr>(std::move(j));
  return c;
}

// A checkpoint equation rebuilt from one with `params`: `cse` are the per-operand prevent_cse
// flags of `args` (used when prevent_cse is a tuple; a bool stays as it is).
std::vector<Array> bind_checkpoint_with(const Params& params, Jaxpr body, const std::vector<Array>& args,
                                        bool differentiated, const std::vector<bool>& cse) {
  CallParams cp = checkpoint_params(params);
  cp.jaxpr = closed(std::move(body));
  cp.differentiated = differentiated;
  Params np = cp.to_params();
  set_prevent_cse(np, params, cse);
  return minijax::bind(checkpoint_primitive(), args, np);
}

// Pure JVP (JAX's remat_jvp): one checkpoint equation over the JVP of the body, taking the
// primals and the nonzero tangents and returning primal and nonzero tangent outputs; same
// policy; a per-operand prevent_cse gets False for the JVP's constants and True per tangent.
std::pair<std::vector<Array>, std::vector<Array>> checkpoint_pure_jvp(const std::vector<Array>& primals,
                                                                      const std::vector<Array>& tangents,
                                                                      const Params& params) {
  ClosedJaxprPtr body = checkpoint_params(params).jaxpr;
  // The body's JVP is unsplit: its scans, conds and calls stay one equation each, so that
  // checkpoint_pe's policy reaches the equations inside them (JAX's remat_jvp: jvp_jaxpr).
  JvpRule body_jvp = [body](const std::vector<Array>& ps, const std::vector<Array>& ts, const Params&) {
    FlatFn fn = [body](const std::vector<Array>& a) { return eval_jaxpr(*body, a); };
    return detail::jvp_flat_unsplit(fn, ps, ts);
  };
  TracedJvp t = trace_jvp(body_jvp, primals, tangents, params);
  std::vector<Array> args = t.jaxpr.consts;
  args.insert(args.end(), primals.begin(), primals.end());
  for (size_t i : t.nonzero_in) args.push_back(tangents[i]);
  std::vector<bool> cse(t.jaxpr.consts.size(), false);
  for (bool f : prevent_cse_flags(params, primals.size())) cse.push_back(f);
  cse.resize(args.size(), true);
  bool diff = checkpoint_params(params).is_differentiated();
  return split_jvp_outputs(t, bind_checkpoint_with(params, convert_constvars_jaxpr(*t.jaxpr.jaxpr), args, diff, cse));
}

// The staged side of checkpoint_pe: a differentiated checkpoint over [residuals..., inputs...]
// (`res_atoms` on the enclosing known side) computing the outputs r.out_inst marks, its known
// inputs read through an optimization_barrier where prevent_cse says so. Nothing when no output
// is staged.
void stage_checkpoint(const Eqn& e, const PartialEvalResult& pe, const std::vector<bool>& in_unknowns,
                      const std::vector<Atom>& res_atoms, PeCustomResult& r) {
  const size_t nout = e.outputs.size();
  Jaxpr S = pe.staged;
  S.outvars.clear();
  for (size_t i = 0, k = 0; i < nout; ++i) {
    if (!pe.out_inst[i]) continue;
    if (r.out_inst[i]) S.outvars.push_back(pe.staged.outvars[k]);
    ++k;
  }
  if (S.outvars.empty()) return;
  auto [Sd, used] = dce_jaxpr(S, std::vector<bool>(S.outvars.size(), true));
  std::vector<Atom> sin;
  std::vector<bool> known_in;  // per kept invar of Sd
  // prevent_cse per kept invar of Sd (JAX's remat partial eval: a tuple gets True for every
  // residual and the input's own flag for an input; a bool holds for all).
  std::vector<bool> cse;
  const std::vector<bool> in_cse = prevent_cse_flags(e.params, e.inputs.size());
  const bool res_cse = prevent_cse_per_operand(e.params) || prevent_cse_flags(e.params, 1)[0];
  const size_t nres = size_t(pe.num_res);
  for (size_t q = 0; q < S.invars.size(); ++q) {
    if (!used[q]) continue;
    if (q < nres) {
      sin.push_back(res_atoms[q]);
      known_in.push_back(true);
      cse.push_back(res_cse);
    } else {
      sin.push_back(e.inputs[q - nres]);
      known_in.push_back(!in_unknowns[q - nres]);
      cse.push_back(in_cse[q - nres]);
    }
  }
  {
    // The recomputation reads the known inputs whose prevent_cse flag is set through an
    // optimization_barrier.
    Eqn bar{&primitive("optimization_barrier"), {}, {}, {}, {}};
    std::vector<Var> inv = Sd.invars;
    for (size_t q = 0; q < inv.size(); ++q)
      if (known_in[q] && cse[q]) {
        Var fresh(inv[q].aval());
        bar.inputs.push_back(fresh);
        bar.outputs.push_back(inv[q]);
        inv[q] = fresh;
      }
    if (!bar.inputs.empty()) {
      Sd.invars = inv;
      Sd.eqns.insert(Sd.eqns.begin(), bar);
    }
  }
  Eqn se;
  se.primitive = e.primitive;
  se.inputs = sin;
  for (size_t i = 0; i < nout; ++i)
    if (r.out_inst[i]) se.outputs.push_back(e.outputs[i]);
  CallParams sp = call_params(e);
  sp.jaxpr = closed(std::move(Sd));
  sp.differentiated = true;
  se.params = sp.to_params();
  set_prevent_cse(se.params, e.params, cse);
  se.effects = e.effects;
  r.staged_eqns.push_back(std::move(se));
}

// Partial evaluation (JAX's remat partial eval): the body is split by partial_eval_jaxpr_custom
// under the received policy (or, with no enclosing policy, the checkpoint's own) with every
// input instantiated; the known half is inlined into the enclosing known side, the staged half
// becomes a differentiated checkpoint equation reading the residuals and the inputs. Nested in
// an enclosing policy's split (JAX's remat rule of partial_eval_jaxpr_custom), a known output the
// policy recomputes is also an output of the staged checkpoint rather than a residual.
// Under an enclosing policy's split: the known outputs the staged side recomputes (or passes
// through from an input), not those the policy saved, which the enclosing split reads as residuals.
void mark_recomputed_outputs(const Eqn& e, const PartialEvalResult& pe, PeCustomResult& r) {
  const size_t nres = size_t(pe.num_res), nk = pe.known.outvars.size() - nres;
  std::unordered_set<Var, VarHash> saved;
  for (size_t q = nk; q < pe.known.outvars.size(); ++q)
    if (auto* v = std::get_if<Var>(&pe.known.outvars[q])) saved.insert(*v);
  for (size_t i = 0, j = 0; i < pe.out_unknowns.size(); ++i) {
    if (pe.out_unknowns[i]) continue;
    auto* v = std::get_if<Var>(&pe.known.outvars[j++]);
    r.out_inst[i] = !e.outputs[i].is_dropvar() && !(v && saved.count(*v));
  }
}

// The known side's residuals as outer atoms (through `subst`); each one the known equations
// compute (not an input of `e`) is recorded once in r.residuals with its info.
std::vector<Atom> collect_residuals(const Eqn& e, const PartialEvalResult& pe,
                                    const std::function<Atom(const Atom&)>& subst, PeCustomResult& r) {
  const Jaxpr& K = pe.known;
  const size_t nknown_out = K.outvars.size() - size_t(pe.num_res);
  std::vector<Atom> res_atoms;
  for (int q = 0; q < pe.num_res; ++q) {
    Atom a = subst(K.outvars[nknown_out + size_t(q)]);
    res_atoms.push_back(a);
    auto* v = std::get_if<Var>(&a);
    bool computed = false;
    if (v) {
      bool is_input = false;
      for (auto& in : e.inputs)
        if (auto* iv = std::get_if<Var>(&in); iv && *iv == *v) is_input = true;
      computed = !is_input;
    }
    if (computed) {
      bool seen = false;
      for (auto& rv : r.residuals) seen |= rv == *v;
      if (!seen) {
        r.residuals.push_back(*v);
        r.residual_info.push_back(pe.residuals[size_t(q)]);
      }
    }
  }
  return res_atoms;
}

PeCustomResult checkpoint_pe(const Eqn& e, const std::vector<bool>& in_unknowns,
                             const std::vector<bool>&, const SaveablePolicy& received) {
  ClosedJaxprPtr body = call_params(e).jaxpr;
  const Jaxpr& B = *body->jaxpr;
  PolicyPtr own = detail::policy_from_params(e.params);
  SaveablePolicy pol = received ? received : own->saveable_for(B);
  const bool nested = bool(received);
  const size_t n = B.invars.size(), nout = B.outvars.size();
  PartialEvalResult pe = partial_eval_jaxpr_custom(B, in_unknowns, std::vector<bool>(n, true),
                                                   std::vector<bool>(nout, false),
                                                   std::vector<bool>(nout, nested), pol);
  PeCustomResult r;
  r.out_unknowns = pe.out_unknowns;
  r.out_inst = pe.out_unknowns;
  if (nested) mark_recomputed_outputs(e, pe, r);

  // ---- known side, inlined with fresh variables.
  const Jaxpr& K = pe.known;
  std::unordered_map<Var, Atom, VarHash> sub;
  {
    size_t k = 0;
    for (size_t i = 0; i < n; ++i)
      if (!in_unknowns[i]) sub.emplace(K.invars[k++], e.inputs[i]);
  }
  std::unordered_set<Var, VarHash> defined_in_k;
  for (auto& ke : K.eqns)
    for (auto& o : ke.outputs) defined_in_k.insert(o);
  std::unordered_map<Var, Var, VarHash> rename;  // inner var -> the checkpoint's own output
  std::vector<std::pair<size_t, Atom>> leftovers;  // known outputs needing an identity
  {
    size_t j = 0;
    for (size_t i = 0; i < nout; ++i) {
      if (pe.out_unknowns[i]) continue;
      const Atom& a = K.outvars[j++];
      const Var& outer = e.outputs[i];
      if (outer.is_dropvar()) continue;
      auto* v = std::get_if<Var>(&a);
      if (v && defined_in_k.count(*v) && !rename.count(*v)) rename.emplace(*v, outer);
      else leftovers.push_back({i, a});
    }
  }
  auto subst = [&](const Atom& a) -> Atom {
    if (auto* v = std::get_if<Var>(&a)) {
      auto it = sub.find(*v);
      if (it != sub.end()) return it->second;
      return a;
    }
    return a;
  };
  for (const Eqn& ke : K.eqns) {
    // prevent_cse's barriers guard recomputations; on the known (forward) side they serve no
    // purpose, and dropping them keeps primals concrete when the known side runs under an outer
    // JVP (the barrier's JVP rule puts primals and tangents through one equation).
    if (OptimizationBarrierParams::is(ke) && ke.effects.empty()) {
      bool renamed = false;
      for (auto& o : ke.outputs) renamed |= rename.count(o) > 0;
      if (!renamed) {
        for (size_t q = 0; q < ke.outputs.size(); ++q) sub[ke.outputs[q]] = subst(ke.inputs[q]);
        continue;
      }
    }
    Eqn ne = ke;
    for (auto& in : ne.inputs) in = subst(in);
    for (auto& o : ne.outputs) {
      Var old = o;
      auto rn = rename.find(old);
      o = rn != rename.end() ? rn->second : (old.is_dropvar() ? Var::dropvar(old.aval()) : Var(old.aval()));
      sub[old] = o;
    }
    r.known_eqns.push_back(std::move(ne));
  }
  for (auto& [i, a] : leftovers) {
    // A known output that is an input, a literal or another output: an identity call defines it.
    Atom src = subst(a);
    Var x(atom_aval(src));
    Jaxpr id;
    id.invars = {x};
    id.outvars = {x};
    CallParams idp;
    idp.body_key = pjit_p().body_params.at(0);
    idp.jaxpr = closed(id);
    idp.name = "checkpoint_output";
    Eqn ce{&pjit_p(), {src}, {e.outputs[i]}, idp.to_params(), {}};
    r.known_eqns.push_back(std::move(ce));
  }
  const std::vector<Atom> res_atoms = collect_residuals(e, pe, subst, r);
  stage_checkpoint(e, pe, in_unknowns, res_atoms, r);
  return r;
}

// The cotangents of a checkpoint body's linear inputs (JAX's remat_transpose): partial
// evaluation with the linear inputs unknown splits off the non-linear part (the
// rematerialization), which is evaluated forward; the linear rest is transposed by backward_pass.
// Splitting first is what lets a scan that carries recomputed primals next to tangents (the
// staged scan of KnownCarries::recompute) become a forward loop and a linear one.
std::vector<Array> transpose_body(const Jaxpr& B, const std::vector<Array>& args, const std::vector<bool>& linear,
                                  const std::vector<Array>& cts) {
  const size_t n = B.invars.size(), nout = B.outvars.size();
  PartialEvalResult pe = partial_eval_jaxpr_custom(B, linear, linear, std::vector<bool>(nout, false),
                                                   std::vector<bool>(nout, false), SaveablePolicy{});
  std::vector<Array> kargs;
  for (size_t i = 0; i < n; ++i)
    if (!linear[i]) kargs.push_back(args[i]);
  std::vector<Array> kouts = eval_jaxpr(pe.known, {}, kargs);
  const size_t nres = size_t(pe.num_res);
  std::vector<Array> sargs(kouts.end() - std::ptrdiff_t(nres), kouts.end());
  std::vector<bool> slin(nres, false);
  for (size_t i = 0; i < n; ++i)
    if (linear[i]) {
      sargs.emplace_back();
      slin.push_back(true);
    }
  // Outputs computed on the known side are not linear in the inputs (constants): no cotangent.
  std::vector<Array> scts;
  for (size_t j = 0; j < nout; ++j)
    if (pe.out_inst[j]) scts.push_back(cts[j]);
  std::vector<Array> gs = backward_pass(pe.staged, {}, sargs, slin, scts);
  std::vector<Array> g(n);
  size_t k = nres;
  for (size_t i = 0; i < n; ++i)
    if (linear[i]) g[i] = gs[k++];
  return g;
}

// Transpose (JAX's remat_transpose): the body, linear in the undefined operands, is transposed
// by transpose_body — its non-linear (recomputing) part is evaluated forward there, which is the
// rematerialization — and staged as a new checkpoint equation with the same params (a
// per-operand prevent_cse: False for its constants, the non-linear operands' flags, True per
// cotangent).
std::vector<Array> checkpoint_transpose(const std::vector<Array>& cts_out, const std::vector<Array>& args,
                                        const std::vector<ShapedArray>& avals, const Params& params) {
  rules::TransposedCall t = rules::transpose_call_body(
      *checkpoint_params(params).jaxpr, cts_out, args, avals, /*instantiate=*/false,
      [](const ClosedJaxpr& body, const std::vector<Array>& a, const std::vector<bool>& linear,
         const std::vector<Array>& cts) {
        return body.consts.empty() ? transpose_body(*body.jaxpr, a, linear, cts)
                                   : backward_pass(*body.jaxpr, body.consts, a, linear, cts);
      });
  if (!t.jaxpr) return std::vector<Array>(args.size());
  std::vector<bool> cse(t.num_consts, false);
  const std::vector<bool> in_cse = prevent_cse_flags(params, args.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (!t.linear[i]) cse.push_back(in_cse[i]);
  cse.resize(t.args.size(), true);
  bool diff = checkpoint_params(params).is_differentiated();
  return t.scatter(bind_checkpoint_with(params, *t.jaxpr->jaxpr, t.args, diff, cse));
}

// Batching: a checkpoint of the vmapped body (batch dims moved to the front), same params.
std::pair<std::vector<Array>, std::vector<int64_t>> checkpoint_batch(const std::vector<Array>& args,
                                                                     const std::vector<int64_t>& dims,
                                                                     const Params& params) {
  auto [batched, call_args] = batch_body_at_front(checkpoint_params(params).jaxpr, args, dims);
  // The batched body's constants lead the operands (prevent_cse False), then the arguments.
  std::vector<bool> cse(call_args.size() - args.size(), false);
  for (bool f : prevent_cse_flags(params, args.size())) cse.push_back(f);
  bool diff = checkpoint_params(params).is_differentiated();
  auto outs = bind_checkpoint_with(params, batched, call_args, diff, cse);
  return {outs, std::vector<int64_t>(outs.size(), 0)};
}

// Partial evaluation of optimization_barrier (needed by prevent_cse under higher-order
// differentiation: the JVP of a recomputing body puts primals and tangents through one barrier).
// The barrier is an identity per operand, so the known operands get a known barrier and the
// unknown ones a staged barrier; staging the whole equation would make the primals downstream
// look linear to backward_pass. An all-known barrier is put to the policy like any equation.
PeCustomResult barrier_pe(const Eqn& e, const std::vector<bool>& in_unknowns, const std::vector<bool>&,
                          const SaveablePolicy& policy) {
  PeCustomResult r;
  Eqn known{e.primitive, {}, {}, e.params, e.effects}, staged{e.primitive, {}, {}, e.params, e.effects};
  bool any_unknown = false;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    Eqn& dst = in_unknowns[i] ? staged : known;
    dst.inputs.push_back(e.inputs[i]);
    dst.outputs.push_back(e.outputs[i]);
    r.out_unknowns.push_back(in_unknowns[i]);
    r.out_inst.push_back(in_unknowns[i]);
    any_unknown |= in_unknowns[i];
  }
  if (!known.inputs.empty()) {
    r.known_eqns.push_back(known);
    bool recompute = false;
    if (!any_unknown && policy && e.effects.empty()) {
      std::vector<ShapedArray> avals;
      for (auto& a : e.inputs) avals.push_back(atom_aval(a));
      recompute = std::holds_alternative<Recompute>(policy(*e.primitive, avals, e.params));
    }
    if (recompute) {
      r.staged_eqns.push_back(known);
      for (size_t i = 0; i < r.out_inst.size(); ++i) r.out_inst[i] = true;
    }
  }
  if (!staged.inputs.empty()) r.staged_eqns.push_back(staged);
  return r;
}

Registrar reg([] {
  pe_custom_rules()["optimization_barrier"] = barrier_pe;
  {
    Primitive& p = get_or_create_primitive("checkpoint");
    // Under linearize the split uses the checkpoint's own policy: the empty enclosing policy
    // makes checkpoint_pe apply it (with save_anything_except_these_names' pre-pass).
    p.jvp = [](const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& params) {
      // Inside an enclosing checkpoint's JVP the equation stays whole (the enclosing policy
      // applies to it when that checkpoint is split).
      if (detail::jvp_rules_unsplit()) return checkpoint_pure_jvp(primals, tangents, params);
      return jvp_by_partial_eval(checkpoint_pure_jvp, primals, tangents, params, SaveablePolicy{});
    };
    p.transpose = checkpoint_transpose;
    p.batch = checkpoint_batch;
    pe_custom_rules()["checkpoint"] = checkpoint_pe;
  }
  {
    Primitive& p = get_or_create_primitive("name");
    p.jvp = [](const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& params) {
      return std::pair{minijax::bind(CheckpointNameParams::primitive(), {primals[0]}, params),
                       std::vector<Array>{tangents[0]}};
    };
    p.transpose = [](const std::vector<Array>& cts, const std::vector<Array>&, const std::vector<ShapedArray>&,
                     const Params&) { return std::vector<Array>{cts[0]}; };
    p.batch = [](const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& params) {
      return std::pair{minijax::bind(CheckpointNameParams::primitive(), {args[0]}, params),
                       std::vector<int64_t>{dims[0]}};
    };
  }
});

}  // namespace
}  // namespace minijax
