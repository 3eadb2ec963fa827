// minijax autodiff and batching rules of `cond` (JAX's jax/_src/lax/control_flow/conditionals.py).
// Owns cond's pure JVP (split by partial eval), its partial-eval rule, transpose and batching.
#include <memory>

#include "autodiff/batching_util.h"
#include "autodiff/jvp.h"
#include "autodiff/jvp_split.h"
#include "autodiff/partial_eval.h"
#include "autodiff/transpose.h"
#include "autodiff/vmap.h"
#include "core/control_flow.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/staging.h"
#include "core/views/control_flow.h"

namespace minijax {
namespace {

ClosedJaxprPtr closed(Jaxpr j) {
  auto cj = std::make_shared<ClosedJaxpr>();
  cj->jaxpr = std::make_shared<Jaxpr>(std::move(j));
  return cj;
}

// The JVP of one branch over [operands..., nonzero tangents...] -> [primal outs..., tangents of
// the outputs marked in out_nz (zeros instantiated)...]. Records which output tangents the
// branch itself makes nonzero in `nz_found` when given.
FlatFn branch_jvp_fn(ClosedJaxprPtr branch, const std::vector<bool>& nz_in,
                     const std::vector<bool>* out_nz, std::vector<bool>* nz_found) {
  return [branch, nz_in, out_nz, nz_found](const std::vector<Array>& xs) {
    const size_t n = nz_in.size();
    std::vector<Array> ps(xs.begin(), xs.begin() + std::ptrdiff_t(n)), ts(n);
    size_t k = n;
    for (size_t i = 0; i < n; ++i)
      if (nz_in[i]) ts[i] = xs[k++];
    FlatFn fn = [branch](const std::vector<Array>& a) { return eval_jaxpr(*branch, a); };
    auto [po, to] = jvp_flat(fn, ps, ts);
    if (nz_found) {
      nz_found->assign(po.size(), false);
      for (size_t j = 0; j < to.size(); ++j) (*nz_found)[j] = to[j].defined();
    }
    std::vector<Array> outs = po;
    if (out_nz)
      for (size_t j = 0; j < po.size(); ++j)
        if ((*out_nz)[j]) outs.push_back(instantiate_zero(to[j], po[j].aval()));
    return outs;
  };
}

// Pure JVP (JAX's _cond_jvp): one cond over the JVPs of the branches; an output's tangent is
// nonzero if it is nonzero in any branch (zeros instantiated in the others).
std::pair<std::vector<Array>, std::vector<Array>> cond_pure_jvp(const std::vector<Array>& primals,
                                                                const std::vector<Array>& tangents,
                                                                const Params& params) {
  const std::vector<ClosedJaxprPtr> branches = CondParams::from(params).branches;
  const size_t n = primals.size() - 1, nout = branches[0]->jaxpr->outvars.size();
  std::vector<Array> args(primals.begin() + 1, primals.end());
  std::vector<ShapedArray> avals;
  for (auto& a : args) avals.push_back(a.aval());
  std::vector<bool> nz_in(n, false);
  for (size_t i = 0; i < n; ++i)
    if (tangents[i + 1].defined()) {
      nz_in[i] = true;
      args.push_back(tangents[i + 1]);
      avals.push_back(tangents[i + 1].aval());
    }
  std::vector<bool> out_nz(nout, false), found;
  for (auto& b : branches) {
    trace_to_jaxpr(branch_jvp_fn(b, nz_in, nullptr, &found), avals);
    for (size_t j = 0; j < nout; ++j) out_nz[j] = out_nz[j] || found[j];
  }
  std::vector<FlatFn> fns;
  for (auto& b : branches) fns.push_back(branch_jvp_fn(b, nz_in, &out_nz, nullptr));
  std::vector<Array> outs = cond_flat(primals[0], fns, args);
  std::vector<Array> po(outs.begin(), outs.begin() + std::ptrdiff_t(nout)), to(nout);
  size_t k = nout;
  for (size_t j = 0; j < nout; ++j)
    if (out_nz[j]) to[j] = outs[k++];
  return {po, to};
}

// A jaxpr computing zeros of `aval` (no inputs), spliced into joined known branches.
Jaxpr zeros_jaxpr(const ShapedArray& aval) {
  ClosedJaxpr z = trace_to_jaxpr([aval](const std::vector<Array>&) {
    return std::vector<Array>{lax::zeros_like_aval(aval)};
  }, {});
  if (!z.jaxpr->constvars.empty()) {
    // Not expected (zeros are a broadcast literal); keep the rule total by rejecting it loudly.
    throw ValueError("cond partial eval: zeros of " + aval.str() + " captured constants");
  }
  return *z.jaxpr;
}

// Residual slots (JAX's _merge_branch_residuals): a slot per residual aval, shared across
// branches. Appends each slot's aval and info (made by the first branch that needs it) to `slots`
// and `slot_info`; returns, per branch, the slot of each of its residuals.
std::vector<std::vector<size_t>> merge_branch_residuals(const std::vector<PartialEvalResult>& pes,
                                                        size_t nknown_out, std::vector<ShapedArray>& slots,
                                                        std::vector<ResidualInfo>& slot_info) {
  std::vector<std::vector<size_t>> slot_of(pes.size());
  for (size_t b = 0; b < pes.size(); ++b) {
    std::vector<bool> taken(slots.size(), false);
    for (int i = 0; i < pes[b].num_res; ++i) {
      const ShapedArray a = atom_aval(pes[b].known.outvars[nknown_out + size_t(i)]);
      size_t s = slots.size();
      for (size_t k = 0; k < slots.size(); ++k)
        if (!taken[k] && slots[k] == a) {
          s = k;
          break;
        }
      if (s == slots.size()) {
        slots.push_back(a);
        ResidualInfo info = pes[b].residuals[size_t(i)];
        info.aval = a;
        info.memory_kind = a.memory_kind;
        info.forwards_input.reset();
        if (info.made_by.empty()) info.made_by = CondParams::primitive().name;
        info.placement = ResidualPlacement::computed;
        slot_info.push_back(info);
        taken.push_back(false);
      }
      taken[s] = true;
      slot_of[b].push_back(s);
    }
  }
  return slot_of;
}

// Partial evaluation (JAX's _cond_partial_eval_custom). If the index is unknown the whole cond
// is staged. Otherwise every branch is split with the same unknowns (and the enclosing policy),
// out_unknowns is the union across branches (branches re-split with ensure_out_unknowns), and
// the residuals are unioned: every known branch outputs all branches' residuals (zeros in the
// slots of the others, in each residual's aval and memory kind), the staged cond reads them
// with the (known, forwarded) index.
PeCustomResult cond_pe_rule(const Eqn& e, const std::vector<bool>& unk, const std::vector<bool>&,
                            const SaveablePolicy& policy) {
  PeCustomResult r;
  const size_t nout = e.outputs.size(), nops = e.inputs.size() - 1;
  bool any_unknown = false;
  for (bool u : unk) any_unknown = any_unknown || u;
  if (unk[0]) {
    r.staged_eqns.push_back(e);
    r.out_unknowns.assign(nout, true);
    r.out_inst.assign(nout, true);
    return r;
  }
  if (!any_unknown && !policy) {
    r.known_eqns.push_back(e);
    r.out_unknowns.assign(nout, false);
    r.out_inst.assign(nout, false);
    return r;
  }
  // With everything known (and a policy to apply inside the branches), the staged cond
  // recomputes what the policy does not save; it reads only known values, so it stays non-linear.
  const bool inst_all = !any_unknown;
  const std::vector<ClosedJaxprPtr> branches = cond_params(e).branches;
  std::vector<bool> ops_uk(unk.begin() + 1, unk.end()), all_inst(nops, true);
  std::vector<bool> unks_out(nout, false);
  for (auto& b : branches) {
    auto pe = partial_eval_jaxpr_custom(*b->jaxpr, ops_uk, all_inst, std::vector<bool>(nout, false),
                                        std::vector<bool>(nout, inst_all), policy);
    for (size_t j = 0; j < nout; ++j) unks_out[j] = unks_out[j] || pe.out_unknowns[j];
  }
  std::vector<bool> ensure_inst = inst_all ? std::vector<bool>(nout, true) : unks_out;
  std::vector<PartialEvalResult> pes;
  for (auto& b : branches)
    pes.push_back(partial_eval_jaxpr_custom(*b->jaxpr, ops_uk, all_inst, unks_out, ensure_inst, policy));
  size_t nknown_out = 0;
  for (bool u : unks_out) nknown_out += u ? 0 : 1;
  // Residual slots (JAX's _merge_branch_residuals).
  std::vector<ShapedArray> slots;
  std::vector<ResidualInfo> slot_info;
  std::vector<std::vector<size_t>> slot_of = merge_branch_residuals(pes, nknown_out, slots, slot_info);
  // Joined branches.
  std::vector<ClosedJaxprPtr> known_br, staged_br;
  for (size_t b = 0; b < branches.size(); ++b) {
    const PartialEvalResult& pe = pes[b];
    Jaxpr kj = pe.known;
    std::vector<Atom> outs(kj.outvars.begin(), kj.outvars.begin() + std::ptrdiff_t(nknown_out));
    std::vector<Atom> slot_atoms(slots.size());
    for (int i = 0; i < pe.num_res; ++i) slot_atoms[slot_of[b][size_t(i)]] = kj.outvars[nknown_out + size_t(i)];
    for (size_t s = 0; s < slots.size(); ++s) {
      if (std::holds_alternative<Var>(slot_atoms[s]) && std::get<Var>(slot_atoms[s]).defined()) continue;
      Jaxpr z = zeros_jaxpr(slots[s]);
      kj.eqns.insert(kj.eqns.end(), z.eqns.begin(), z.eqns.end());
      slot_atoms[s] = z.outvars[0];
    }
    outs.insert(outs.end(), slot_atoms.begin(), slot_atoms.end());
    kj.outvars = outs;
    known_br.push_back(closed(std::move(kj)));

    Jaxpr sj = pe.staged;
    std::vector<Var> res_in(slots.size());
    for (int i = 0; i < pe.num_res; ++i) res_in[slot_of[b][size_t(i)]] = sj.invars[size_t(i)];
    for (size_t s = 0; s < slots.size(); ++s)
      if (!res_in[s].defined()) res_in[s] = Var(slots[s]);
    std::vector<Var> ins = res_in;
    ins.insert(ins.end(), sj.invars.begin() + pe.num_res, sj.invars.end());
    sj.invars = ins;
    staged_br.push_back(closed(std::move(sj)));
  }
  std::vector<Var> res_vars;
  for (auto& a : slots) res_vars.push_back(Var(a));

  Eqn known;
  known.primitive = e.primitive;
  CondParams kp = cond_params(e);
  kp.branches = known_br;
  known.params = kp.to_params();
  known.inputs.push_back(e.inputs[0]);
  for (size_t i = 0; i < nops; ++i)
    if (!ops_uk[i]) known.inputs.push_back(e.inputs[i + 1]);
  for (size_t j = 0; j < nout; ++j)
    if (!unks_out[j]) known.outputs.push_back(e.outputs[j]);
  known.outputs.insert(known.outputs.end(), res_vars.begin(), res_vars.end());
  for (auto& b : known_br) known.effects.insert(b->jaxpr->effects.begin(), b->jaxpr->effects.end());

  Eqn staged;
  staged.primitive = e.primitive;
  CondParams sp = cond_params(e);
  sp.branches = staged_br;
  staged.params = sp.to_params();
  staged.inputs.push_back(e.inputs[0]);
  staged.inputs.insert(staged.inputs.end(), res_vars.begin(), res_vars.end());
  staged.inputs.insert(staged.inputs.end(), e.inputs.begin() + 1, e.inputs.end());
  for (size_t j = 0; j < nout; ++j)
    if (ensure_inst[j]) staged.outputs.push_back(e.outputs[j]);
  for (auto& b : staged_br) staged.effects.insert(b->jaxpr->effects.begin(), b->jaxpr->effects.end());

  r.known_eqns.push_back(std::move(known));
  r.staged_eqns.push_back(std::move(staged));
  r.out_unknowns = unks_out;
  r.out_inst = ensure_inst;
  r.residuals = res_vars;
  r.residual_info = slot_info;
  return r;
}

// Transpose (JAX's _cond_transpose): a cond over the branches' transposes with respect to the
// linear operands; the index and the residual (defined) operands are non-linear.
std::vector<Array> cond_transpose(const std::vector<Array>& cts_out, const std::vector<Array>& args,
                                  const std::vector<ShapedArray>& avals, const Params& params) {
  const std::vector<ClosedJaxprPtr> branches = CondParams::from(params).branches;
  if (!args[0].defined())
    throw NotDifferentiableError("cond: the branch index cannot be a linear input of a transposed cond");
  const size_t n = args.size() - 1;
  std::vector<bool> linear(n);
  std::vector<Array> ops;
  for (size_t i = 0; i < n; ++i) {
    linear[i] = !args[i + 1].defined();
    if (!linear[i]) ops.push_back(args[i + 1]);
  }
  const size_t nres = ops.size();
  auto out_avals = branches[0]->jaxpr->out_avals();
  for (size_t j = 0; j < cts_out.size(); ++j) ops.push_back(instantiate_zero(cts_out[j], out_avals[j]));
  std::vector<FlatFn> fns;
  for (auto& br : branches) {
    ClosedJaxprPtr b = br;
    fns.push_back([b, n, nres, linear, avals](const std::vector<Array>& xs) {
      std::vector<Array> a(n);
      size_t r = 0;
      for (size_t i = 0; i < n; ++i)
        if (!linear[i]) a[i] = xs[r++];
      std::vector<Array> cts(xs.begin() + std::ptrdiff_t(nres), xs.end());
      auto g = backward_pass(*b->jaxpr, b->consts, a, linear, cts);
      std::vector<Array> outs;
      for (size_t i = 0; i < n; ++i)
        if (linear[i]) outs.push_back(instantiate_zero(g[i], avals[i + 1]));
      return outs;
    });
  }
  auto g = cond_flat(args[0], fns, ops);
  std::vector<Array> res(args.size());
  size_t k = 0;
  for (size_t i = 0; i < n; ++i)
    if (linear[i]) res[i + 1] = g[k++];
  return res;
}

// Batching (JAX's _cond_batching_rule): with a batched index every branch is evaluated (vmapped)
// and the outputs selected per example with select_n; otherwise a cond of vmapped branches.
std::pair<std::vector<Array>, std::vector<int64_t>> cond_batch(const std::vector<Array>& args,
                                                                const std::vector<int64_t>& dims,
                                                                const Params& params) {
  const std::vector<ClosedJaxprPtr> branches = CondParams::from(params).branches;
  const int64_t size = batch_axis_size(args, dims);
  std::vector<Array> ops;
  std::vector<int64_t> in_axes;
  for (size_t i = 1; i < args.size(); ++i) {
    if (dims[i] == kNotMapped) {
      ops.push_back(args[i]);
      in_axes.push_back(kNotMapped);
    } else {
      ops.push_back(move_batch_dim(args[i], dims[i], 0));
      in_axes.push_back(0);
    }
  }
  const size_t nout = branches[0]->jaxpr->outvars.size();
  auto vmapped = [&](const ClosedJaxprPtr& b) -> FlatFn {
    return [b, in_axes, nout](const std::vector<Array>& xs) {
      FlatFn fn = [b](const std::vector<Array>& a) { return eval_jaxpr(*b, a); };
      return vmap_flat(fn, xs, in_axes, std::vector<int64_t>(nout, 0));
    };
  };
  if (dims[0] != kNotMapped) {
    Array idx = move_batch_dim(args[0], dims[0], 0);
    idx = lax::clamp(lax::scalar(0, DType::i32), idx,
                     lax::scalar(double(branches.size() - 1), DType::i32));
    std::vector<std::vector<Array>> outs;
    for (auto& b : branches) outs.push_back(vmapped(b)(ops));
    std::vector<Array> res;
    for (size_t j = 0; j < nout; ++j) {
      std::vector<Array> cases;
      for (auto& o : outs) cases.push_back(o[j]);
      const Shape& shape = cases[0].shape();
      Array which = shape.size() == 1 ? idx : lax::broadcast_in_dim(idx, shape, {0});
      res.push_back(lax::select_n(which, cases));
    }
    (void)size;
    return {res, std::vector<int64_t>(nout, 0)};
  }
  std::vector<FlatFn> fns;
  for (auto& b : branches) fns.push_back(vmapped(b));
  auto res = cond_flat(args[0], fns, ops);
  return {res, std::vector<int64_t>(res.size(), 0)};
}

Registrar reg([] {
  Primitive& p = get_or_create_primitive("cond");
  p.jvp = split_jvp_rule(cond_pure_jvp);
  p.transpose = cond_transpose;
  p.batch = cond_batch;
  pe_custom_rules()["cond"] = cond_pe_rule;
});

}  // namespace
}  // namespace minijax
