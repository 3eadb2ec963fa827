// minijax autodiff and batching rules of the call primitives `pjit` and `closed_call`.
// Owns their JVP (split into a known and a staged call), transpose and batching rules, and
// transpose_call_body, the body transposition every plain call's transpose shares.
#include <algorithm>
#include <memory>

#include "autodiff/batching.h"
#include "autodiff/batching_util.h"
#include "autodiff/jvp.h"
#include "autodiff/jvp_split.h"
#include "autodiff/linearize.h"
#include "autodiff/partial_eval.h"
#include "autodiff/rules/call_transpose.h"
#include "autodiff/transpose.h"
#include "autodiff/vmap.h"
#include "core/dce.h"
#include "core/pjit.h"
#include "core/staging.h"
#include "core/views/control_flow.h"

namespace minijax {
namespace {

// The tangents a call's JVP passes and returns (JAX's _pjit_jvp, jvp_jaxpr with
// instantiate=False): symbolic zeros and float0 tangents (of int/bool values) are never operands
// or results of the staged call, so no float0 value reaches a jaxpr or a compiled program.
struct CallTangents {
  std::vector<bool> in_nz, out_nz;  // per primal input / output: its tangent is passed / returned
  static bool nonzero(const Array& t) { return t.defined() && t.dtype() != DType::float0; }
  explicit CallTangents(const std::vector<Array>& tangents) {
    for (auto& t : tangents) in_nz.push_back(nonzero(t));
  }
  size_t num_in() const { return size_t(std::count(in_nz.begin(), in_nz.end(), true)); }
  size_t num_out() const { return size_t(std::count(out_nz.begin(), out_nz.end(), true)); }
  // The nonzero entries of `all` (one per input, or per output).
  static std::vector<Array> filter(const std::vector<bool>& nz, const std::vector<Array>& all) {
    std::vector<Array> r;
    for (size_t i = 0; i < all.size(); ++i)
      if (nz[i]) r.push_back(all[i]);
    return r;
  }
  // One entry per input (or output) from the nonzero ones: empty Arrays (zeros) elsewhere.
  static std::vector<Array> expand(const std::vector<bool>& nz, const std::vector<Array>& some) {
    std::vector<Array> r(nz.size());
    for (size_t i = 0, k = 0; i < nz.size(); ++i)
      if (nz[i]) r[i] = some.at(k++);
    return r;
  }
  // Called once while the body's JVP is traced: records which output tangents are nonzero and
  // returns them.
  std::vector<Array> outputs(const std::vector<Array>& to) {
    out_nz.clear();
    for (auto& t : to) out_nz.push_back(nonzero(t));
    return filter(out_nz, to);
  }
};

// JVP (JAX's pjit partial-eval structure): the body's JVP is traced and split by
// partial_eval_jaxpr_custom into a known call (primals -> primal outputs + residuals), bound on
// the primals' trace so they stay concrete eagerly, and a staged call (residuals, tangents ->
// tangents), which is what lands in a linear jaxpr under linearize.
JvpRule call_jvp(const Primitive& p) {
  return [&p](const std::vector<Array>& primals, const std::vector<Array>& tangents,
              const Params& params) {
    const CallParams cp = CallParams::from(p, params);
    ClosedJaxprPtr body = cp.jaxpr;
    std::string name = cp.name_or("call");
    const size_t n = primals.size();
    CallTangents ct(tangents);
    std::vector<ShapedArray> in_avals;
    for (auto& x : primals) in_avals.push_back(x.aval());
    for (size_t i = 0; i < n; ++i)
      if (ct.in_nz[i]) in_avals.push_back(tangent_aval(primals[i].aval()));
    ClosedJaxpr jj = trace_to_jaxpr(
        [&](const std::vector<Array>& xs) {
          std::vector<Array> ps(xs.begin(), xs.begin() + std::ptrdiff_t(n));
          std::vector<Array> ts = CallTangents::expand(ct.in_nz, {xs.begin() + std::ptrdiff_t(n), xs.end()});
          FlatFn fn = [body](const std::vector<Array>& a) { return eval_jaxpr(*body, a); };
          auto [po, to] = jvp_flat(fn, ps, ts);
          std::vector<Array> nz_to = ct.outputs(to);
          po.insert(po.end(), nz_to.begin(), nz_to.end());
          return po;
        },
        in_avals);
    Jaxpr flat = convert_constvars_jaxpr(*jj.jaxpr);
    const size_t nc = jj.consts.size(), nout = body->jaxpr->outvars.size();
    const size_t nt_in = ct.num_in(), nt_out = ct.num_out();
    std::vector<bool> unknown(nc + n + nt_in, false), inst(nc + n + nt_in, false);
    for (size_t i = 0; i < nt_in; ++i) unknown[nc + n + i] = inst[nc + n + i] = true;
    std::vector<bool> out_unk(nout + nt_out, false), out_inst(nout + nt_out, false);
    for (size_t i = 0; i < nt_out; ++i) out_unk[nout + i] = out_inst[nout + i] = true;
    // No enclosing policy: ordinary equations are saved, and a checkpoint inside the call applies
    // its own policy (as outside a call).
    PartialEvalResult pe = partial_eval_jaxpr_custom(flat, unknown, inst, out_unk, out_inst, SaveablePolicy{});
    // Residuals that merely forward an input are passed directly, not returned by the call.
    std::vector<Array> kargs = jj.consts;
    kargs.insert(kargs.end(), primals.begin(), primals.end());
    Jaxpr known_j = pe.known;
    const size_t nknown_out = known_j.outvars.size() - size_t(pe.num_res);
    std::vector<Atom> kept_outs(known_j.outvars.begin(), known_j.outvars.begin() + std::ptrdiff_t(nknown_out));
    for (int r = 0; r < pe.num_res; ++r)
      if (!pe.residuals[size_t(r)].forwards_input) kept_outs.push_back(known_j.outvars[nknown_out + size_t(r)]);
    known_j.outvars = kept_outs;
    auto known = std::make_shared<ClosedJaxpr>(ClosedJaxpr{std::make_shared<Jaxpr>(known_j), {}});
    auto staged = std::make_shared<ClosedJaxpr>(ClosedJaxpr{std::make_shared<Jaxpr>(pe.staged), {}});
    std::vector<Array> kouts = bind_call(p, known, name, kargs);
    std::vector<Array> primal_outs(kouts.begin(), kouts.begin() + std::ptrdiff_t(nout));
    std::vector<Array> sargs;
    size_t k = nout;
    for (int r = 0; r < pe.num_res; ++r) {
      const auto& fwd = pe.residuals[size_t(r)].forwards_input;
      sargs.push_back(fwd ? kargs[size_t(*fwd)] : kouts[k++]);
      ResidualNotes::note(sargs.back(), pe.residuals[size_t(r)]);
    }
    for (auto& t : CallTangents::filter(ct.in_nz, tangents)) sargs.push_back(t);
    if (nt_out == 0) return std::pair{primal_outs, std::vector<Array>(nout)};
    std::vector<Array> touts = bind_call(p, staged, "jvp(" + name + ")", sargs);
    return std::pair{primal_outs, CallTangents::expand(ct.out_nz, touts)};
  };
}

// Unsplit JVP (JAX's _pjit_jvp): one call over the JVP of the body, taking the primals and the
// nonzero tangents and returning the primal outputs and the nonzero output tangents. Used on an
// unsplit JVP trace (inside a checkpoint's JVP), where call_pe splits it later under the policy.
std::pair<std::vector<Array>, std::vector<Array>> call_unsplit_jvp(const Primitive& p,
                                                                   const std::vector<Array>& primals,
                                                                   const std::vector<Array>& tangents,
                                                                   const Params& params) {
  const CallParams cp = CallParams::from(p, params);
  ClosedJaxprPtr body = cp.jaxpr;
  std::string name = cp.name_or("call");
  JvpRule body_jvp = [body](const std::vector<Array>& ps, const std::vector<Array>& ts, const Params&) {
    FlatFn fn = [body](const std::vector<Array>& a) { return eval_jaxpr(*body, a); };
    return jvp_flat(fn, ps, ts);  // unsplit too: the rule runs for an unsplit trace
  };
  TracedJvp t = trace_jvp(body_jvp, primals, tangents, params);
  std::vector<Array> args = t.jaxpr.consts;
  args.insert(args.end(), primals.begin(), primals.end());
  for (size_t i : t.nonzero_in) args.push_back(tangents[i]);
  auto cj = std::make_shared<ClosedJaxpr>(
      ClosedJaxpr{std::make_shared<Jaxpr>(convert_constvars_jaxpr(*t.jaxpr.jaxpr)), {}});
  return split_jvp_outputs(t, bind_call(p, cj, name, args));
}

// Partial evaluation (JAX's closed_call_partial_eval_custom_rule for pjit and closed_call): the
// body is split under the enclosing policy into a known call (known inputs -> known outputs and
// residuals) and a staged call (residuals and inputs -> the other outputs). A residual that is
// also a known output is read from that output rather than returned twice; the staged call
// reads inputs directly (the enclosing split forwards known ones). Both calls keep the name.
PeCustomResult call_pe(const Primitive& p, const Eqn& e, const std::vector<bool>& unk,
                       const SaveablePolicy& policy) {
  const CallParams cp = CallParams::from(p, e.params);
  const ClosedJaxprPtr& cj = cp.jaxpr;
  const Jaxpr& B = *cj->jaxpr;
  const size_t n = e.inputs.size(), nout = e.outputs.size();
  bool any_unknown = false, all_unknown = true;
  for (bool u : unk) any_unknown |= u, all_unknown &= u;
  PeCustomResult r;
  const bool whole = !B.constvars.empty() || (!any_unknown && !policy) || (all_unknown && n > 0);
  if (whole) {
    // Nothing to split inside: the call goes to one side as a whole (a call over constants only
    // is put to the policy like any equation).
    bool recompute = false;
    if (!any_unknown && policy && e.effects.empty()) {
      std::vector<ShapedArray> avals;
      for (auto& a : e.inputs) avals.push_back(atom_aval(a));
      recompute = std::holds_alternative<Recompute>(policy(*e.primitive, avals, e.params));
    }
    if (!any_unknown) r.known_eqns.push_back(e);
    if (any_unknown || recompute) r.staged_eqns.push_back(e);
    r.out_unknowns.assign(nout, any_unknown);
    r.out_inst.assign(nout, any_unknown || recompute);
    return r;
  }
  // Every output is also an output of the staged call (JAX's inst_out): one the policy recomputes
  // is recomputed there rather than saved; a saved one passes through (the known call's output,
  // forwarded below), and the enclosing DCE drops what the staged side does not read.
  PartialEvalResult pe = partial_eval_jaxpr_custom(B, unk, std::vector<bool>(n, true),
                                                   std::vector<bool>(nout, false),
                                                   std::vector<bool>(nout, bool(policy)), policy);
  r.out_unknowns = pe.out_unknowns;
  r.out_inst = pe.out_inst;
  std::vector<size_t> known_out_index;  // output index of each known output
  for (size_t i = 0; i < nout; ++i)
    if (!pe.out_unknowns[i]) known_out_index.push_back(i);
  const size_t nres = size_t(pe.num_res);
  const size_t nko = pe.known.outvars.size() - nres;
  // Known outputs by inner atom, to forward residuals that are also (kept) known outputs.
  std::vector<Var> known_binders;
  for (size_t i = 0; i < nout; ++i)
    if (!pe.out_unknowns[i]) known_binders.push_back(e.outputs[i]);
  Jaxpr K = pe.known;
  K.outvars.resize(nko);
  std::vector<Atom> res_atoms;
  Eqn known{e.primitive, {}, known_binders, e.params, e.effects};
  for (size_t i = 0; i < n; ++i)
    if (!unk[i]) known.inputs.push_back(e.inputs[i]);
  for (size_t q = 0; q < nres; ++q) {
    const Atom& a = pe.known.outvars[nko + q];
    std::optional<Var> fwd;
    if (auto* av = std::get_if<Var>(&a))
      for (size_t j = 0; j < nko && !fwd; ++j)
        if (auto* kv = std::get_if<Var>(&pe.known.outvars[j]); kv && *kv == *av && !known_binders[j].is_dropvar())
          fwd = known_binders[j];
    if (fwd) {
      res_atoms.push_back(*fwd);
      r.residuals.push_back(*fwd);
      // The staged call reads it: it is not also one of its outputs.
      for (size_t j = 0; j < nko; ++j)
        if (known_binders[j] == *fwd) r.out_inst[known_out_index[j]] = false;
    } else {
      Var rv(atom_aval(a));
      K.outvars.push_back(a);
      known.outputs.push_back(rv);
      res_atoms.push_back(rv);
      r.residuals.push_back(rv);
    }
    ResidualInfo info = pe.residuals[q];
    info.forwards_input.reset();
    if (info.placement == ResidualPlacement::forwarded) info.placement = ResidualPlacement::computed;
    r.residual_info.push_back(std::move(info));
  }
  CallParams kp = cp;
  kp.jaxpr = std::make_shared<ClosedJaxpr>(ClosedJaxpr{std::make_shared<Jaxpr>(std::move(K)), {}});
  known.params = kp.to_params();
  if (!known.outputs.empty() || !known.effects.empty()) r.known_eqns.push_back(std::move(known));

  bool any_staged = false;
  for (bool b : r.out_inst) any_staged |= b;
  if (!any_staged) return r;
  // The staged call: [residuals..., inputs...] pruned to what the staged body reads.
  Jaxpr S0 = pe.staged;
  S0.outvars.clear();
  Eqn staged{e.primitive, {}, {}, e.params, e.effects};
  for (size_t i = 0, k = 0; i < nout; ++i) {
    if (!pe.out_inst[i]) continue;
    if (r.out_inst[i]) {
      S0.outvars.push_back(pe.staged.outvars[k]);
      staged.outputs.push_back(e.outputs[i]);
    }
    ++k;
  }
  auto [S, used] = dce_jaxpr(S0, std::vector<bool>(S0.outvars.size(), true));
  for (size_t q = 0; q < used.size(); ++q)
    if (used[q]) staged.inputs.push_back(q < nres ? res_atoms[q] : e.inputs[q - nres]);
  CallParams sp = cp;
  sp.jaxpr = std::make_shared<ClosedJaxpr>(ClosedJaxpr{std::make_shared<Jaxpr>(std::move(S)), {}});
  staged.params = sp.to_params();
  r.staged_eqns.push_back(std::move(staged));
  return r;
}

// Transpose: the body (linear in the undefined operands) is transposed into a new call taking
// the non-linear operands and the output cotangents.
TransposeRule call_transpose(const Primitive& p) {
  return [&p](const std::vector<Array>& cts_out, const std::vector<Array>& args,
              const std::vector<ShapedArray>& avals, const Params& params) {
    const CallParams cp = CallParams::from(p, params);
    rules::TransposedCall t = rules::transpose_call_body(
        *cp.jaxpr, cts_out, args, avals, /*instantiate=*/true,
        [](const ClosedJaxpr& body, const std::vector<Array>& a, const std::vector<bool>& linear,
           const std::vector<Array>& cts) { return backward_pass(*body.jaxpr, body.consts, a, linear, cts); });
    return t.scatter(bind_call(p, t.jaxpr, "transpose(" + cp.name_or("call") + ")", t.args));
  };
}

// Batching: the body is vmapped and staged as a new call (batch dims moved to the front).
BatchRule call_batch(const Primitive& p) {
  return [&p](const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& params) {
    const CallParams cp = CallParams::from(p, params);
    ClosedJaxprPtr body = cp.jaxpr;
    std::string name = cp.name_or("call");
    auto [batched, call_args] = batch_body_at_front(body, args, dims);
    auto bj = std::make_shared<ClosedJaxpr>(ClosedJaxpr{std::make_shared<Jaxpr>(batched), {}});
    auto outs = bind_call(p, bj, "vmap(" + name + ")", call_args);
    return std::pair{outs, std::vector<int64_t>(outs.size(), 0)};
  };
}

Registrar reg([] {
  for (const char* n : {"pjit", "closed_call"}) {
    Primitive& p = get_or_create_primitive(n);
    JvpRule split = call_jvp(p);
    p.jvp = [&p, split](const std::vector<Array>& primals, const std::vector<Array>& tangents,
                        const Params& params) {
      if (detail::jvp_rules_unsplit()) return call_unsplit_jvp(p, primals, tangents, params);
      return split(primals, tangents, params);
    };
    pe_custom_rules()[n] = [&p](const Eqn& e, const std::vector<bool>& unk, const std::vector<bool>&,
                                const SaveablePolicy& policy) { return call_pe(p, e, unk, policy); };
    p.transpose = call_transpose(p);
    p.batch = call_batch(p);
  }
});

}  // namespace

rules::TransposedCall rules::transpose_call_body(const ClosedJaxpr& body, const std::vector<Array>& cts_out,
                                                 const std::vector<Array>& args,
                                                 const std::vector<ShapedArray>& avals, bool instantiate,
                                                 const BodyBackward& backward) {
  TransposedCall t;
  std::vector<Array> call_args;
  std::vector<ShapedArray> call_avals;
  for (size_t i = 0; i < args.size(); ++i) {
    t.linear.push_back(!args[i].defined());
    if (args[i].defined()) {
      call_args.push_back(args[i]);
      call_avals.push_back(args[i].aval());
    }
  }
  const size_t nres = call_args.size();
  const auto out_avals = body.jaxpr->out_avals();
  std::vector<size_t> ct_at;  // the output of each cotangent operand
  for (size_t j = 0; j < cts_out.size(); ++j) {
    if (!instantiate && !cts_out[j].defined()) continue;
    ct_at.push_back(j);
    call_args.push_back(instantiate ? instantiate_zero(cts_out[j], out_avals[j]) : cts_out[j]);
    call_avals.push_back(call_args.back().aval());
  }
  if (!instantiate && ct_at.empty()) return t;
  const std::vector<bool>& linear = t.linear;
  ClosedJaxpr tj = trace_to_jaxpr(
      [&](const std::vector<Array>& xs) {
        std::vector<Array> a(args.size());
        size_t r = 0;
        for (size_t i = 0; i < args.size(); ++i)
          if (!linear[i]) a[i] = xs[r++];
        std::vector<Array> cts(cts_out.size());
        for (size_t k = 0; k < ct_at.size(); ++k) cts[ct_at[k]] = xs[nres + k];
        auto g = backward(body, a, linear, cts);
        std::vector<Array> outs;
        t.zero.clear();
        for (size_t i = 0; i < args.size(); ++i) {
          if (!linear[i]) continue;
          if (instantiate) {
            t.zero.push_back(false);
            outs.push_back(instantiate_zero(g[i], avals[i]));
          } else {
            t.zero.push_back(!g[i].defined());
            if (g[i].defined()) outs.push_back(g[i]);
          }
        }
        return outs;
      },
      call_avals);
  t.jaxpr = std::make_shared<ClosedJaxpr>(
      ClosedJaxpr{std::make_shared<Jaxpr>(convert_constvars_jaxpr(*tj.jaxpr)), {}});
  t.num_consts = tj.consts.size();
  t.args = tj.consts;
  t.args.insert(t.args.end(), call_args.begin(), call_args.end());
  return t;
}

std::vector<Array> rules::TransposedCall::scatter(const std::vector<Array>& results) const {
  std::vector<Array> res(linear.size());
  size_t k = 0, l = 0;
  for (size_t i = 0; i < linear.size(); ++i)
    if (linear[i] && !zero.at(l++)) res[i] = results.at(k++);
  return res;
}

}  // namespace minijax
