// minijax autodiff and batching rules of `while` (JAX's jax/_src/lax/control_flow/loops.py).
// Owns while's pure JVP (split by partial eval), partial-eval rule, batching and no-transpose.
#include <memory>
#include <unordered_map>

#include "autodiff/batching_util.h"
#include "autodiff/jvp.h"
#include "autodiff/jvp_split.h"
#include "autodiff/partial_eval.h"
#include "autodiff/vmap.h"
#include "core/control_flow.h"
#include "core/dce.h"
#include "core/lax.h"
#include "core/staging.h"
#include "core/views/control_flow.h"

namespace minijax {
namespace {

constexpr const char* kWhileNoTranspose =
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
    "start/stop values. Try using lax.scan, or using fori_loop with constant start/stop.";

ClosedJaxprPtr closed(Jaxpr j) {
  auto cj = std::make_shared<ClosedJaxpr>();
  cj->jaxpr = std::make_shared<Jaxpr>(std::move(j));
  return cj;
}

struct WhileParts {
  ClosedJaxprPtr cond, body;
  size_t cn, bn, nc;
};
WhileParts parts(const Params& params, size_t nargs) {
  const WhileParams p = WhileParams::from(params);
  WhileParts w{p.cond_jaxpr, p.body_jaxpr, size_t(p.cond_nconsts), size_t(p.body_nconsts), 0};
  w.nc = nargs - w.cn - w.bn;
  return w;
}

// Which carry outputs of the body have nonzero tangents, given which body inputs (consts and
// carry) do.
std::vector<bool> body_tangent_nonzero(const ClosedJaxprPtr& body, const std::vector<bool>& nz_in) {
  std::vector<ShapedArray> avals = body->jaxpr->in_avals();
  const size_t n = avals.size();
  for (size_t i = 0; i < n; ++i)
    if (nz_in[i]) avals.push_back(tangent_aval(avals[i]));
  std::vector<bool> found;
  trace_to_jaxpr(
      [&](const std::vector<Array>& xs) {
        std::vector<Array> ps(xs.begin(), xs.begin() + std::ptrdiff_t(n)), ts(n);
        size_t k = n;
        for (size_t i = 0; i < n; ++i)
          if (nz_in[i]) ts[i] = xs[k++];
        FlatFn fn = [body](const std::vector<Array>& a) { return eval_jaxpr(*body, a); };
        auto [po, to] = jvp_flat(fn, ps, ts);
        found.assign(po.size(), false);
        for (size_t j = 0; j < to.size(); ++j) found[j] = to[j].defined();
        return po;
      },
      avals);
  return found;
}

// Pure JVP (JAX's _while_loop_jvp): a while over (carry, nonzero carry tangents) whose body is
// the body's JVP; the nonzero carry tangents are found by a fixpoint, as scan's.
std::pair<std::vector<Array>, std::vector<Array>> while_pure_jvp(const std::vector<Array>& primals,
                                                                 const std::vector<Array>& tangents,
                                                                 const Params& params) {
  const WhileParts w = parts(params, primals.size());
  std::vector<Array> cc(primals.begin(), primals.begin() + std::ptrdiff_t(w.cn));
  std::vector<Array> bc(primals.begin() + std::ptrdiff_t(w.cn),
                        primals.begin() + std::ptrdiff_t(w.cn + w.bn));
  std::vector<Array> bct(tangents.begin() + std::ptrdiff_t(w.cn),
                         tangents.begin() + std::ptrdiff_t(w.cn + w.bn));
  std::vector<bool> nz(w.bn + w.nc, false);
  for (size_t i = 0; i < w.bn + w.nc; ++i) nz[i] = tangents[w.cn + i].defined();
  for (size_t iter = 0; iter <= w.nc; ++iter) {
    auto out = body_tangent_nonzero(w.body, nz);
    bool changed = false;
    for (size_t j = 0; j < w.nc; ++j)
      if (out[j] && !nz[w.bn + j]) nz[w.bn + j] = changed = true;
    if (!changed) break;
  }
  std::vector<size_t> nz_carry;
  for (size_t j = 0; j < w.nc; ++j)
    if (nz[w.bn + j]) nz_carry.push_back(j);
  std::vector<Array> init(primals.begin() + std::ptrdiff_t(w.cn + w.bn), primals.end());
  for (size_t j : nz_carry) init.push_back(instantiate_zero(tangents[w.cn + w.bn + j], init[j].aval()));
  const size_t nc = w.nc;
  FlatFn cond_fn = [&](const std::vector<Array>& xs) {
    std::vector<Array> a = cc;
    a.insert(a.end(), xs.begin(), xs.begin() + std::ptrdiff_t(nc));
    return eval_jaxpr(*w.cond, a);
  };
  FlatFn body_fn = [&](const std::vector<Array>& xs) {
    std::vector<Array> ps = bc, ts = bct;
    ps.insert(ps.end(), xs.begin(), xs.begin() + std::ptrdiff_t(nc));
    ts.resize(w.bn + nc);
    for (size_t k = 0; k < nz_carry.size(); ++k) ts[w.bn + nz_carry[k]] = xs[nc + k];
    FlatFn fn = [&](const std::vector<Array>& a) { return eval_jaxpr(*w.body, a); };
    auto [po, to] = jvp_flat(fn, ps, ts);
    std::vector<Array> outs = po;
    for (size_t j : nz_carry) outs.push_back(instantiate_zero(to[j], po[j].aval()));
    return outs;
  };
  auto outs = while_flat(cond_fn, body_fn, init);
  std::vector<Array> po(outs.begin(), outs.begin() + std::ptrdiff_t(nc)), to(nc);
  for (size_t k = 0; k < nz_carry.size(); ++k) to[nz_carry[k]] = outs[nc + k];
  return {po, to};
}

// Partial evaluation (JAX's _while_partial_eval / _while_partial_eval_custom): carries that
// depend on unknowns are found by a fixpoint. If the predicate is unknown, or every carry is,
// the whole loop is staged. Otherwise a known while computes the known carries, and the staged
// side reruns the whole loop (recomputing the known part: a while keeps no per-iteration
// residuals), reading the known inputs as forwarded residuals.
PeCustomResult while_pe_rule(const Eqn& e, const std::vector<bool>& unk, const std::vector<bool>&,
                             const SaveablePolicy& policy) {
  PeCustomResult r;
  const WhileParts w = parts(e.params, e.inputs.size());
  bool any = false, all = true;
  for (bool u : unk) any = any || u;
  std::vector<bool> cc_uk(unk.begin(), unk.begin() + std::ptrdiff_t(w.cn));
  std::vector<bool> body_uk(unk.begin() + std::ptrdiff_t(w.cn), unk.end());
  if (!any) {
    r.known_eqns.push_back(e);
    std::vector<ShapedArray> avals;
    for (auto& a : e.inputs) avals.push_back(atom_aval(a));
    bool recompute = e.effects.empty() && policy &&
                     std::holds_alternative<Recompute>(policy(*e.primitive, avals, e.params));
    if (recompute) r.staged_eqns.push_back(e);
    r.out_unknowns.assign(w.nc, false);
    r.out_inst.assign(w.nc, recompute);
    return r;
  }
  const Jaxpr& bj = *w.body->jaxpr;
  const Jaxpr& cj = *w.cond->jaxpr;
  for (size_t iter = 0; iter <= w.nc; ++iter) {
    std::vector<bool> carry_uk(body_uk.begin() + std::ptrdiff_t(w.bn), body_uk.end());
    auto pe = partial_eval_jaxpr_custom(bj, body_uk, body_uk, carry_uk,
                                        std::vector<bool>(w.nc, false), everything_saveable_policy);
    bool changed = false;
    for (size_t j = 0; j < w.nc; ++j)
      if (pe.out_unknowns[j] && !body_uk[w.bn + j]) body_uk[w.bn + j] = changed = true;
    if (!changed) break;
  }
  std::vector<bool> carry_uk(body_uk.begin() + std::ptrdiff_t(w.bn), body_uk.end());
  std::vector<bool> cond_uk = cc_uk;
  cond_uk.insert(cond_uk.end(), carry_uk.begin(), carry_uk.end());
  auto cpe = partial_eval_jaxpr_custom(cj, cond_uk, cond_uk, {false}, {false}, everything_saveable_policy);
  for (bool u : carry_uk) all = all && u;
  if (cpe.out_unknowns[0] || all) {
    r.staged_eqns.push_back(e);
    r.out_unknowns.assign(w.nc, true);
    r.out_inst.assign(w.nc, true);
    return r;
  }
  auto bpe = partial_eval_jaxpr_custom(bj, body_uk, body_uk, carry_uk, std::vector<bool>(w.nc, false),
                                       everything_saveable_policy);
  size_t nk = 0;
  for (bool u : carry_uk) nk += u ? 0 : 1;
  std::vector<bool> keep_body(bpe.known.outvars.size(), false), keep_cond(cpe.known.outvars.size(), false);
  for (size_t j = 0; j < nk; ++j) keep_body[j] = true;
  keep_cond[0] = true;
  Jaxpr body_known = dce_jaxpr(bpe.known, keep_body, true).first;
  Jaxpr cond_known = dce_jaxpr(cpe.known, keep_cond, true).first;
  Eqn known;
  known.primitive = e.primitive;
  known.effects = e.effects;
  known.params = e.params;
  int64_t kcn = 0, kbn = 0;
  for (size_t i = 0; i < w.cn; ++i)
    if (!unk[i]) known.inputs.push_back(e.inputs[i]), ++kcn;
  for (size_t i = 0; i < w.bn; ++i)
    if (!unk[w.cn + i]) known.inputs.push_back(e.inputs[w.cn + i]), ++kbn;
  for (size_t j = 0; j < w.nc; ++j)
    if (!carry_uk[j]) {
      known.inputs.push_back(e.inputs[w.cn + w.bn + j]);
      known.outputs.push_back(e.outputs[j]);
    }
  WhileParams kp = WhileParams::from(e.params);
  kp.cond_jaxpr = closed(std::move(cond_known));
  kp.body_jaxpr = closed(std::move(body_known));
  kp.cond_nconsts = kcn;
  kp.body_nconsts = kbn;
  known.params = kp.to_params();
  Eqn staged = e;
  for (size_t j = 0; j < w.nc; ++j)
    if (!carry_uk[j]) staged.outputs[j] = Var::dropvar(e.outputs[j].aval());
  r.known_eqns.push_back(std::move(known));
  r.staged_eqns.push_back(std::move(staged));
  r.out_unknowns = carry_uk;
  r.out_inst = carry_uk;
  return r;
}

// Which outputs of j depend on the inputs marked in `in` (conservatively: every output of an
// equation depends on all its inputs). A value that depends on no batched input stays unbatched
// under vmap, so this decides batchedness without tracing.
std::vector<bool> depends_on(const Jaxpr& j, const std::vector<bool>& in) {
  std::unordered_map<Var, bool, VarHash> dep;
  for (size_t i = 0; i < j.invars.size(); ++i) dep[j.invars[i]] = in[i];
  auto rd = [&](const Atom& a) {
    auto* v = std::get_if<Var>(&a);
    if (!v) return false;
    auto f = dep.find(*v);
    return f != dep.end() && f->second;
  };
  for (auto& e : j.eqns) {
    bool d = false;
    for (auto& a : e.inputs) d = d || rd(a);
    for (auto& o : e.outputs) dep[o] = d;
  }
  std::vector<bool> out;
  for (auto& o : j.outvars) out.push_back(rd(o));
  return out;
}

// Batching (JAX's _while_loop_batching_rule). Batched carries are found by a fixpoint. With an
// unbatched predicate the loop runs the vmapped body; with a batched predicate every carry is
// batched, the loop runs while any example's predicate holds, and each iteration keeps the old
// carry of the examples whose predicate is false (select_n).
std::pair<std::vector<Array>, std::vector<int64_t>> while_batch(const std::vector<Array>& args,
                                                                 const std::vector<int64_t>& dims,
                                                                 const Params& params) {
  const WhileParts w = parts(params, args.size());
  const int64_t size = batch_axis_size(args, dims);
  std::vector<bool> bat(args.size());
  for (size_t i = 0; i < args.size(); ++i) bat[i] = dims[i] != kNotMapped;
  std::vector<bool> body_in(bat.begin() + std::ptrdiff_t(w.cn), bat.end());
  for (size_t iter = 0; iter <= w.nc; ++iter) {
    auto out = depends_on(*w.body->jaxpr, body_in);
    bool changed = false;
    for (size_t j = 0; j < w.nc; ++j)
      if (out[j] && !body_in[w.bn + j]) body_in[w.bn + j] = changed = true;
    if (!changed) break;
  }
  std::vector<bool> cond_in(bat.begin(), bat.begin() + std::ptrdiff_t(w.cn));
  cond_in.insert(cond_in.end(), body_in.begin() + std::ptrdiff_t(w.bn), body_in.end());
  const bool pred_bat = depends_on(*w.cond->jaxpr, cond_in)[0];
  if (pred_bat)
    for (size_t j = 0; j < w.nc; ++j) body_in[w.bn + j] = cond_in[w.cn + j] = true;
  std::vector<Array> cc, bc, init;
  std::vector<int64_t> cc_ax, bc_ax, carry_ax;
  for (size_t i = 0; i < args.size(); ++i) {
    const bool is_carry = i >= w.cn + w.bn;
    const bool want = is_carry ? body_in[i - w.cn] : bat[i];
    Array v = !want ? args[i] : materialize_batch(args[i], dims[i], size, 0);
    int64_t ax = want ? 0 : kNotMapped;
    if (i < w.cn) cc.push_back(v), cc_ax.push_back(ax);
    else if (!is_carry) bc.push_back(v), bc_ax.push_back(ax);
    else init.push_back(v), carry_ax.push_back(ax);
  }
  // f applied to consts + carry, vmapped with the given axes (or directly if nothing is mapped).
  auto apply = [](const ClosedJaxprPtr& jp, const std::vector<Array>& consts,
                  const std::vector<int64_t>& c_ax, const std::vector<Array>& carry,
                  const std::vector<int64_t>& k_ax, const std::vector<int64_t>& out_ax) {
    std::vector<Array> a = consts;
    a.insert(a.end(), carry.begin(), carry.end());
    std::vector<int64_t> ax = c_ax;
    ax.insert(ax.end(), k_ax.begin(), k_ax.end());
    bool mapped = false;
    for (auto x : ax) mapped = mapped || x != kNotMapped;
    FlatFn fn = [jp](const std::vector<Array>& xs) { return eval_jaxpr(*jp, xs); };
    if (!mapped) return fn(a);
    return vmap_flat(fn, a, ax, out_ax);
  };
  FlatFn cond_fn, body_fn;
  if (!pred_bat) {
    cond_fn = [&](const std::vector<Array>& carry) {
      return apply(w.cond, cc, cc_ax, carry, carry_ax, {kNotMapped});
    };
    body_fn = [&](const std::vector<Array>& carry) {
      return apply(w.body, bc, bc_ax, carry, carry_ax, carry_ax);
    };
  } else {
    auto preds = [&](const std::vector<Array>& carry) {
      return apply(w.cond, cc, cc_ax, carry, carry_ax, {0})[0];
    };
    cond_fn = [&, preds](const std::vector<Array>& carry) {
      Array p = lax::convert_element_type(preds(carry), DType::i32);
      return std::vector<Array>{lax::gt(lax::reduce_max(p, {0}), lax::scalar(0, DType::i32))};
    };
    body_fn = [&, preds](const std::vector<Array>& carry) {
      Array p = preds(carry);
      auto next = apply(w.body, bc, bc_ax, carry, carry_ax, carry_ax);
      for (size_t j = 0; j < next.size(); ++j) {
        const Shape& s = carry[j].shape();
        Array which = s.size() == 1 ? p : lax::broadcast_in_dim(p, s, {0});
        next[j] = lax::select_n(which, {carry[j], next[j]});
      }
      return next;
    };
  }
  auto outs = while_flat(cond_fn, body_fn, init);
  return {outs, carry_ax};
}

Registrar reg([] {
  Primitive& p = get_or_create_primitive("while");
  p.jvp = split_jvp_rule(while_pure_jvp);
  p.no_transpose_reason = kWhileNoTranspose;
  p.batch = while_batch;
  pe_custom_rules()["while"] = while_pe_rule;
});

}  // namespace
}  // namespace minijax
