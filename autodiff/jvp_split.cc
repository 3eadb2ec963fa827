// minijax JVP of primitives with bodies under direct linearize.
// Owns tracing the pure JVP and evaluating its known/staged halves on the right traces.
#include "autodiff/jvp_split.h"

#include "autodiff/jvp.h"
#include "autodiff/partial_eval.h"
#include "core/pjit.h"
#include "core/staging.h"

namespace minijax {

TracedJvp trace_jvp(const JvpRule& rule, const std::vector<Array>& primals,
                    const std::vector<Array>& tangents, const Params& params) {
  const size_t n = primals.size();
  TracedJvp t;
  std::vector<ShapedArray> in_avals;
  for (auto& p : primals) in_avals.push_back(p.aval());
  // float0 tangents (of int/bool values) are symbolic zeros: never operands or results.
  auto nonzero = [](const Array& t) { return t.defined() && t.dtype() != DType::float0; };
  for (size_t i = 0; i < n; ++i)
    if (nonzero(tangents[i])) {
      t.nonzero_in.push_back(i);
      in_avals.push_back(tangents[i].aval());
    }
  t.jaxpr = trace_to_jaxpr(
      [&](const std::vector<Array>& xs) {
        std::vector<Array> ps(xs.begin(), xs.begin() + std::ptrdiff_t(n));
        std::vector<Array> ts(n);
        for (size_t k = 0; k < t.nonzero_in.size(); ++k) ts[t.nonzero_in[k]] = xs[n + k];
        auto [po, to] = rule(ps, ts, params);
        t.num_out = po.size();
        t.out_zero.clear();
        std::vector<Array> outs = po;
        for (size_t j = 0; j < po.size(); ++j) {
          bool z = j >= to.size() || !nonzero(to[j]);
          t.out_zero.push_back(z);
          if (!z) outs.push_back(to[j]);
        }
        return outs;
      },
      in_avals);
  return t;
}

std::pair<std::vector<Array>, std::vector<Array>> split_jvp_outputs(const TracedJvp& t,
                                                                    const std::vector<Array>& outs) {
  std::vector<Array> po(outs.begin(), outs.begin() + std::ptrdiff_t(t.num_out));
  std::vector<Array> to(t.num_out);
  size_t k = t.num_out;
  for (size_t j = 0; j < t.num_out; ++j)
    if (!t.out_zero[j]) to[j] = outs[k++];
  return {po, to};
}

std::pair<std::vector<Array>, std::vector<Array>> jvp_by_partial_eval(
    const JvpRule& pure_jvp, const std::vector<Array>& primals, const std::vector<Array>& tangents,
    const Params& params, const SaveablePolicy& policy) {
  const size_t n = primals.size();
  TracedJvp t = trace_jvp(pure_jvp, primals, tangents, params);
  const ClosedJaxpr& jj = t.jaxpr;
  const std::vector<size_t>& nz = t.nonzero_in;
  const size_t nout = t.num_out;
  Jaxpr flat = convert_constvars_jaxpr(*jj.jaxpr);
  const size_t nc = jj.consts.size(), m = flat.outvars.size() - nout;
  std::vector<bool> unknown(nc + n + nz.size(), false);
  for (size_t k = 0; k < nz.size(); ++k) unknown[nc + n + k] = true;
  std::vector<bool> out_unk(nout + m, false);
  for (size_t j = 0; j < m; ++j) out_unk[nout + j] = true;
  PartialEvalResult pe = partial_eval_jaxpr_custom(flat, unknown, unknown, out_unk, out_unk, policy);

  std::vector<Array> kargs = jj.consts;
  kargs.insert(kargs.end(), primals.begin(), primals.end());
  std::vector<Array> kouts = eval_jaxpr(pe.known, {}, kargs);
  size_t nknown = kouts.size() - size_t(pe.num_res);
  std::vector<Array> primal_outs(kouts.begin(), kouts.begin() + std::ptrdiff_t(nout));
  std::vector<Array> sargs(kouts.begin() + std::ptrdiff_t(nknown), kouts.end());
  for (size_t r = 0; r < sargs.size() && r < pe.residuals.size(); ++r) ResidualNotes::note(sargs[r], pe.residuals[r]);
  for (size_t i : nz) sargs.push_back(tangents[i]);
  // The staged half runs on the tangents' trace (the linear jaxpr's, under linearize), so its
  // constant-only equations are recomputed there rather than captured as array constants.
  std::vector<Array> tangent_args;
  for (size_t i : nz) tangent_args.push_back(tangents[i]);
  auto floor = tangent_args.empty() ? TraceStack::dynamic() : find_top_trace(tangent_args, std::source_location::current());
  std::vector<Array> outs = primal_outs;
  for (auto& x : eval_jaxpr_at(pe.staged, {}, sargs, floor)) outs.push_back(x);
  return split_jvp_outputs(t, outs);
}

JvpRule split_jvp_rule(JvpRule pure_jvp, SaveablePolicy policy) {
  return [pure_jvp = std::move(pure_jvp), policy = std::move(policy)](
             const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& params) {
    // On an unsplit JVP trace (a checkpoint's body) the equation stays whole: partial
    // evaluation splits it later, under the checkpoint's policy.
    if (detail::jvp_rules_unsplit()) return pure_jvp(primals, tangents, params);
    return jvp_by_partial_eval(pure_jvp, primals, tangents, params, policy);
  };
}

}  // namespace minijax
