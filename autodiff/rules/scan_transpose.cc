// minijax transpose rule of `scan` (JAX's _scan_transpose): a scan running the other way whose
// carry accumulates the cotangents of the linear loop constants. Owns that rule only.
#include <memory>

#include "autodiff/jvp.h"
#include "autodiff/transpose.h"
#include "core/lax.h"
#include "core/pjit.h"
#include "core/staging.h"

namespace minijax {
namespace {

ShapedArray unstacked(const ShapedArray& a) {
  ShapedArray s = a;
  s.shape.erase(s.shape.begin());
  return s;
}

// The staged scan is linear in its undefined operands (tangent consts, carries, tangent xs) and
// non-linear in the defined ones (residual consts and xs). Transposed scan (reverse flipped):
//   consts = [non-linear consts], carry = [accumulators of the linear consts' cotangents (zeros
//   at the start, only for consts whose cotangent is not symbolically zero), carry cotangents],
//   xs = [nonzero ys cotangents, non-linear xs];
//   body = backward_pass of the scan body w.r.t. its linear inputs, adding the consts'
//   cotangents to the accumulators and emitting the linear xs' cotangents as ys.
// Every carry is treated as linear, as JAX does: a defined carry operand (instantiated zeros)
// gets no cotangent.
std::vector<Array> scan_transpose(const std::vector<Array>& cts_out, const std::vector<Array>& args,
                                  const std::vector<ShapedArray>& avals, const Params& params) {
  const ClosedJaxprPtr& cj = params.get_jaxpr("jaxpr");
  const Jaxpr& body = *cj->jaxpr;
  const size_t nc = size_t(params.get_int("num_consts"));
  const size_t ncar = size_t(params.get_int("num_carry"));
  const int64_t length = params.get_int("length");
  const bool reverse = params.get_bool("reverse");
  const size_t nin = args.size(), nx = nin - nc - ncar;
  const size_t ny = body.outvars.size() - ncar;

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

  Params p = params;
  auto tjp = std::make_shared<ClosedJaxpr>();
  tjp->jaxpr = std::make_shared<Jaxpr>(convert_constvars_jaxpr(*tj.jaxpr));
  p.set("jaxpr", ClosedJaxprPtr(tjp));
  p.set("num_consts", int64_t(t_nc));
  p.set("num_carry", int64_t(t_ncar));
  p.set("reverse", !reverse);
  p.set("linear", std::vector<int64_t>(ops.size(), 0));
  p.set("length", length);
  std::vector<Array> res = minijax::bind(primitive("scan"), ops, p);

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
