// minijax JVP of primitives with bodies under direct linearize.
// Owns tracing the pure JVP and evaluating its known/staged halves on the right traces.
#include "autodiff/jvp_split.h"

#include "autodiff/jvp.h"
#include "autodiff/partial_eval.h"
#include "core/pjit.h"
#include "core/staging.h"

namespace minijax {

std::pair<std::vector<Array>, std::vector<Array>> jvp_by_partial_eval(
    const JvpRule& pure_jvp, const std::vector<Array>& primals, const std::vector<Array>& tangents,
    const Params& params, const SaveablePolicy& policy) {
  const size_t n = primals.size();
  std::vector<size_t> nz;
  std::vector<ShapedArray> in_avals;
  for (auto& p : primals) in_avals.push_back(p.aval());
  for (size_t i = 0; i < n; ++i)
    if (tangents[i].defined()) {
      nz.push_back(i);
      in_avals.push_back(tangents[i].aval());
    }
  std::vector<bool> out_zero;
  size_t nout = 0;
  ClosedJaxpr jj = trace_to_jaxpr(
      [&](const std::vector<Array>& xs) {
        std::vector<Array> ps(xs.begin(), xs.begin() + std::ptrdiff_t(n));
        std::vector<Array> ts(n);
        for (size_t k = 0; k < nz.size(); ++k) ts[nz[k]] = xs[n + k];
        auto [po, to] = pure_jvp(ps, ts, params);
        nout = po.size();
        out_zero.clear();
        std::vector<Array> outs = po;
        for (size_t j = 0; j < po.size(); ++j) {
          bool z = j >= to.size() || !to[j].defined();
          out_zero.push_back(z);
          if (!z) outs.push_back(to[j]);
        }
        return outs;
      },
      in_avals);
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
  for (size_t i : nz) sargs.push_back(tangents[i]);
  // The staged half runs on the tangents' trace (the linear jaxpr's, under linearize), so its
  // constant-only equations are recomputed there rather than captured as array constants.
  std::vector<Array> tangent_args;
  for (size_t i : nz) tangent_args.push_back(tangents[i]);
  auto floor = tangent_args.empty() ? TraceStack::dynamic() : find_top_trace(tangent_args, std::source_location::current());
  std::vector<Array> touts_nz = eval_jaxpr_at(pe.staged, {}, sargs, floor);
  std::vector<Array> touts(nout);
  size_t k = 0;
  for (size_t j = 0; j < nout; ++j)
    if (!out_zero[j]) touts[j] = touts_nz[k++];
  return {primal_outs, touts};
}

JvpRule split_jvp_rule(JvpRule pure_jvp, SaveablePolicy policy) {
  return [pure_jvp = std::move(pure_jvp), policy = std::move(policy)](
             const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& params) {
    return jvp_by_partial_eval(pure_jvp, primals, tangents, params, policy);
  };
}

}  // namespace minijax
