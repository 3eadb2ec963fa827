// minijax autodiff and batching rules of the call primitives `pjit` and `closed_call`.
// Owns their JVP (split into a known and a staged call), transpose and batching rules.
#include <algorithm>
#include <memory>

#include "autodiff/batching_util.h"
#include "autodiff/jvp.h"
#include "autodiff/linearize.h"
#include "autodiff/partial_eval.h"
#include "autodiff/transpose.h"
#include "autodiff/vmap.h"
#include "core/pjit.h"
#include "core/staging.h"

namespace minijax {
namespace {

const char* jaxpr_key(const Primitive& p) { return p.name == "pjit" ? "jaxpr" : "call_jaxpr"; }

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
    ClosedJaxprPtr body = params.get_jaxpr(jaxpr_key(p));
    std::string name = params.has("name") ? params.get_string("name") : std::string("call");
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

// Transpose: the body (linear in the undefined operands) is transposed into a new call taking
// the non-linear operands and the output cotangents.
TransposeRule call_transpose(const Primitive& p) {
  return [&p](const std::vector<Array>& cts_out, const std::vector<Array>& args,
              const std::vector<ShapedArray>& avals, const Params& params) {
    ClosedJaxprPtr body = params.get_jaxpr(jaxpr_key(p));
    std::string name = params.has("name") ? params.get_string("name") : std::string("call");
    std::vector<bool> linear;
    std::vector<Array> call_args;
    std::vector<ShapedArray> call_avals;
    for (size_t i = 0; i < args.size(); ++i) {
      linear.push_back(!args[i].defined());
      if (args[i].defined()) {
        call_args.push_back(args[i]);
        call_avals.push_back(args[i].aval());
      }
    }
    const size_t nres = call_args.size();
    auto out_avals = body->jaxpr->out_avals();
    for (size_t j = 0; j < cts_out.size(); ++j) {
      call_args.push_back(instantiate_zero(cts_out[j], out_avals[j]));
      call_avals.push_back(call_args.back().aval());
    }
    ClosedJaxpr tj = trace_to_jaxpr(
        [&](const std::vector<Array>& xs) {
          std::vector<Array> a(args.size());
          size_t r = 0;
          for (size_t i = 0; i < args.size(); ++i)
            if (!linear[i]) a[i] = xs[r++];
          std::vector<Array> cts(xs.begin() + std::ptrdiff_t(nres), xs.end());
          auto g = backward_pass(*body->jaxpr, body->consts, a, linear, cts);
          std::vector<Array> outs;
          for (size_t i = 0; i < args.size(); ++i)
            if (linear[i]) outs.push_back(instantiate_zero(g[i], avals[i]));
          return outs;
        },
        call_avals);
    auto tjp = std::make_shared<ClosedJaxpr>(
        ClosedJaxpr{std::make_shared<Jaxpr>(convert_constvars_jaxpr(*tj.jaxpr)), {}});
    std::vector<Array> targs = tj.consts;
    targs.insert(targs.end(), call_args.begin(), call_args.end());
    auto g = bind_call(p, tjp, "transpose(" + name + ")", targs);
    std::vector<Array> res(args.size());
    size_t k = 0;
    for (size_t i = 0; i < args.size(); ++i)
      if (linear[i]) res[i] = g[k++];
    return res;
  };
}

// Batching: the body is vmapped and staged as a new call (batch dims moved to the front).
BatchRule call_batch(const Primitive& p) {
  return [&p](const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& params) {
    ClosedJaxprPtr body = params.get_jaxpr(jaxpr_key(p));
    std::string name = params.has("name") ? params.get_string("name") : std::string("call");
    auto [batched, call_args] = batch_body_at_front(body, args, dims);
    auto bj = std::make_shared<ClosedJaxpr>(ClosedJaxpr{std::make_shared<Jaxpr>(batched), {}});
    auto outs = bind_call(p, bj, "vmap(" + name + ")", call_args);
    return std::pair{outs, std::vector<int64_t>(outs.size(), 0)};
  };
}

Registrar reg([] {
  for (const char* n : {"pjit", "closed_call"}) {
    Primitive& p = get_or_create_primitive(n);
    p.jvp = call_jvp(p);
    p.transpose = call_transpose(p);
    p.batch = call_batch(p);
  }
});

}  // namespace
}  // namespace minijax
