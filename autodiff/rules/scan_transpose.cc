// minijax transpose rule of `scan` (JAX's _scan_transpose): a scan running the other way whose
// carry accumulates the cotangents of the linear loop constants. Owns that rule only.
#include <memory>
#include <unordered_set>

#include "autodiff/jvp.h"
#include "autodiff/rules/scan_partial_eval.h"
#include "autodiff/transpose.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/pjit.h"
#include "core/staging.h"
#include "core/views/control_flow.h"

namespace minijax {
namespace {

ShapedArray unstacked(const ShapedArray& a) {
  ShapedArray s = a;
  s.shape.erase(s.shape.begin());
  return s;
}

// Carries that stay known through the loop: defined operands whose new value never depends on
// an undefined (linear) operand, by a fixpoint over the body (an equation with an unknown input
// makes all its outputs unknown).
std::vector<bool> known_carries(const Jaxpr& body, const std::vector<Array>& args, size_t nc, size_t ncar) {
  std::vector<bool> unk(args.size());
  for (size_t i = 0; i < args.size(); ++i) unk[i] = !args[i].defined();
  for (bool changed = true; changed;) {
    changed = false;
    std::unordered_set<Var, VarHash> unknown;
    for (size_t i = 0; i < body.invars.size(); ++i)
      if (unk[i]) unknown.insert(body.invars[i]);
    for (const Eqn& q : body.eqns) {
      bool any = false;
      for (auto& a : q.inputs)
        if (auto* v = std::get_if<Var>(&a); v && unknown.count(*v)) any = true;
      if (any)
        for (auto& o : q.outputs) unknown.insert(o);
    }
    for (size_t c = 0; c < ncar; ++c) {
      auto* v = std::get_if<Var>(&body.outvars[c]);
      if (!unk[nc + c] && v && unknown.count(*v)) unk[nc + c] = changed = true;
    }
  }
  std::vector<bool> known(ncar);
  for (size_t c = 0; c < ncar; ++c) known[c] = !unk[nc + c];
  return known;
}

// A scan with known carries (the staged scan of a checkpoint recomputes them: KnownCarries::
// recompute) is split first, as JAX's remat_transpose partial-evaluates before transposing: the
// known scan runs forward, stacking the carries the linear part needs (everything else is
// recomputed per iteration in the reversed loop), and the linear scan left is transposed.
std::vector<Array> transpose_after_split(const std::vector<Array>& cts_out, const std::vector<Array>& args,
                                         const std::vector<ShapedArray>& avals, const Params& params) {
  Eqn e;
  e.primitive = &ScanParams::primitive();
  e.params = params;
  std::vector<bool> unknown(args.size());
  std::vector<Var> ins;
  for (size_t i = 0; i < args.size(); ++i) {
    ins.emplace_back(avals[i]);
    e.inputs.push_back(ins.back());
    unknown[i] = !args[i].defined();
  }
  for (const ShapedArray& a : abstract_eval(*e.primitive, avals, params, std::source_location::current())) e.outputs.emplace_back(a);
  for (auto& q : ScanParams::from(params).jaxpr->jaxpr->eqns) e.effects.insert(q.effects.begin(), q.effects.end());
  SaveablePolicy recompute_all = [](const Primitive&, const std::vector<ShapedArray>&, const Params&) {
    return PolicyDecision{Recompute{}};
  };
  PeCustomResult pr = scan_partial_eval(e, unknown, recompute_all, KnownCarries::stack);
  Jaxpr known;
  std::vector<Array> kargs;
  for (size_t i = 0; i < args.size(); ++i)
    if (!unknown[i]) {
      known.invars.push_back(ins[i]);
      kargs.push_back(args[i]);
    }
  known.eqns = pr.known_eqns;
  for (const Var& r : pr.residuals) known.outvars.push_back(r);
  std::vector<Array> sargs = eval_jaxpr(known, {}, kargs);
  Jaxpr staged;
  staged.invars = pr.residuals;
  staged.invars.insert(staged.invars.end(), ins.begin(), ins.end());
  staged.eqns = pr.staged_eqns;
  std::vector<Array> cts;
  for (size_t k = 0; k < e.outputs.size(); ++k)
    if (pr.out_unknowns[k]) {
      staged.outvars.push_back(e.outputs[k]);
      cts.push_back(cts_out[k]);
    }
  std::vector<bool> linear(pr.residuals.size(), false);
  linear.insert(linear.end(), unknown.begin(), unknown.end());
  sargs.insert(sargs.end(), args.begin(), args.end());
  std::vector<Array> g = backward_pass(staged, {}, sargs, linear, cts);
  return std::vector<Array>(g.begin() + std::ptrdiff_t(pr.residuals.size()), g.end());
}

// The staged scan is linear in its undefined operands (tangent consts, carries, tangent xs) and
// non-linear in the defined ones (residual consts and xs). Transposed scan (reverse flipped):
//   consts = [non-linear consts], carry = [accumulators of the linear consts' cotangents (zeros
//   at the start, only for consts whose cotangent is not symbolically zero), carry cotangents],
//   xs = [nonzero ys cotangents, non-linear xs];
//   body = backward_pass of the scan body w.r.t. its linear inputs, adding the consts'
//   cotangents to the accumulators and emitting the linear xs' cotangents as ys.
// Every carry is treated as linear, as JAX does: a defined carry operand (instantiated zeros)
// gets no cotangent. A carry that stays known through the loop is split off first
// (transpose_after_split).
std::vector<Array> scan_transpose(const std::vector<Array>& cts_out, const std::vector<Array>& args,
                                  const std::vector<ShapedArray>& avals, const Params& params) {
  const ScanParams sp = ScanParams::from(params);
  const ClosedJaxprPtr& cj = sp.jaxpr;
  const Jaxpr& body = *cj->jaxpr;
  const size_t nc = size_t(sp.num_consts);
  const size_t ncar = size_t(sp.num_carry);
  const int64_t length = sp.length;
  const bool reverse = sp.reverse;
  const size_t nin = args.size(), nx = nin - nc - ncar;
  const size_t ny = body.outvars.size() - ncar;

  {
    std::vector<bool> known = known_carries(body, args, nc, ncar);
    for (bool k : known)
      if (k) return transpose_after_split(cts_out, args, avals, params);
  }
  std::vector<bool> lin(nin);
  for (size_t i = 0; i < nin; ++i) lin[i] = (i >= nc && i < nc + ncar) || !args[i].defined();
  std::vector<size_t> c_nl, c_lin, x_nl, x_lin, y_nz;
  for (size_t i = 0; i < nc; ++i) (lin[i] ? c_lin : c_nl).push_back(i);
  for (size_t i = nc + ncar; i < nin; ++i) (lin[i] ? x_lin : x_nl).push_back(i);
  for (size_t j = 0; j < ny; ++j)
    if (cts_out[ncar + j].defined()) y_nz.push_back(j);
  std::vector<ShapedArray> body_in = body.in_avals(), body_out = body.out_avals();

  // One body trace; `acc_of` lists the linear consts that get an accumulator (nullptr: all, and
  // record which ones have a nonzero cotangent; `xs_nz` likewise for the linear xs).
  auto trace_body = [&](const std::vector<size_t>& acc, std::vector<bool>* c_nz_out,
                        std::vector<bool>* x_nz_out, const std::vector<size_t>& x_emit) {
    std::vector<ShapedArray> in_avals;
    for (size_t i : c_nl) in_avals.push_back(body_in[i]);
    for (size_t i : acc) in_avals.push_back(avals[i]);
    for (size_t c = 0; c < ncar; ++c) in_avals.push_back(tangent_aval(body_out[c]));
    for (size_t j : y_nz) in_avals.push_back(unstacked(cts_out[ncar + j].aval()));
    for (size_t i : x_nl) in_avals.push_back(body_in[i]);
    return trace_to_jaxpr(
        [&](const std::vector<Array>& v) {
          size_t k = 0;
          std::vector<Array> a(nin);
          for (size_t i : c_nl) a[i] = v[k++];
          std::vector<Array> accs(v.begin() + std::ptrdiff_t(k), v.begin() + std::ptrdiff_t(k + acc.size()));
          k += acc.size();
          std::vector<Array> cts(ncar + ny);
          for (size_t c = 0; c < ncar; ++c) cts[c] = v[k++];
          for (size_t j : y_nz) cts[ncar + j] = v[k++];
          for (size_t i : x_nl) a[i] = v[k++];
          std::vector<Array> g = backward_pass(body, cj->consts, a, lin, cts);
          if (c_nz_out)
            for (size_t t = 0; t < c_lin.size(); ++t) (*c_nz_out)[t] = g[c_lin[t]].defined();
          if (x_nz_out)
            for (size_t t = 0; t < x_lin.size(); ++t) (*x_nz_out)[t] = g[x_lin[t]].defined();
          std::vector<Array> outs;
          for (size_t t = 0; t < acc.size(); ++t)
            outs.push_back(g[acc[t]].defined() ? lax::add_any(accs[t], g[acc[t]]) : accs[t]);
          for (size_t c = 0; c < ncar; ++c) outs.push_back(instantiate_zero(g[nc + c], body_in[nc + c]));
          for (size_t i : x_emit) outs.push_back(instantiate_zero(g[i], body_in[i]));
          return outs;
        },
        in_avals);
  };

  // Probe: which linear consts and xs receive a nonzero cotangent at all.
  std::vector<bool> c_nz(c_lin.size()), x_nz(x_lin.size());
  trace_body(c_lin, &c_nz, &x_nz, {});
  std::vector<size_t> acc, x_emit;
  for (size_t t = 0; t < c_lin.size(); ++t)
    if (c_nz[t]) acc.push_back(c_lin[t]);
  for (size_t t = 0; t < x_lin.size(); ++t)
    if (x_nz[t]) x_emit.push_back(x_lin[t]);
  ClosedJaxpr tj = trace_body(acc, nullptr, nullptr, x_emit);

  std::vector<Array> ops = tj.consts;
  for (size_t i : c_nl) ops.push_back(args[i]);
  const size_t t_nc = ops.size();
  for (size_t i : acc) ops.push_back(lax::zeros_like_aval(avals[i]));
  for (size_t c = 0; c < ncar; ++c) ops.push_back(instantiate_zero(cts_out[c], body_out[c]));
  const size_t t_ncar = acc.size() + ncar;
  for (size_t j : y_nz) ops.push_back(cts_out[ncar + j]);
  for (size_t i : x_nl) ops.push_back(args[i]);

  ScanParams p = sp;
  auto tjp = std::make_shared<ClosedJaxpr>();
  tjp->jaxpr = std::make_shared<Jaxpr>(convert_constvars_jaxpr(*tj.jaxpr));
  p.jaxpr = ClosedJaxprPtr(tjp);
  p.num_consts = int64_t(t_nc);
  p.num_carry = int64_t(t_ncar);
  p.reverse = !reverse;
  p.linear = std::vector<int64_t>(ops.size(), 0);
  p.length = length;
  std::vector<Array> res = minijax::bind(ScanParams::primitive(), ops, p.to_params());

  std::vector<Array> cts(nin);
  size_t k = 0;
  for (size_t i : acc) cts[i] = res[k++];
  for (size_t c = 0; c < ncar; ++c, ++k)
    if (!args[nc + c].defined()) cts[nc + c] = res[k];
  for (size_t i : x_emit) cts[i] = res[k++];
  (void)nx;
  return cts;
}

Registrar reg([] { get_or_create_primitive("scan").transpose = scan_transpose; });

}  // namespace
}  // namespace minijax
