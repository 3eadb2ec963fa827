// minijax forward-mode and batching rules of the `scan` primitive (JAX's _scan_jvp and
// _scan_batching_rule); the partial-eval and transpose rules live in scan_partial_eval.cc/scan_transpose.cc.
//
// JVP: a fixpoint decides which carries have nonzero tangents, then ONE scan over the JVP'd body
// computes primals and tangents together, with JAX's operand order
// [consts, nonzero const tangents, carry, nonzero carry tangents, xs, nonzero xs tangents] and
// outputs [carry, nonzero carry tangents, ys, nonzero ys tangents]. Registered through
// split_jvp_rule so that linearize keeps primals known (the split needs scan's pe rule).
#include <memory>

#include "autodiff/batching.h"
#include "autodiff/batching_util.h"
#include "autodiff/jvp.h"
#include "autodiff/jvp_split.h"
#include "autodiff/vmap.h"
#include "core/lax.h"
#include "core/pjit.h"
#include "core/staging.h"
#include "core/views/control_flow.h"

namespace minijax {
namespace {

bool nonzero(const Array& t) { return t.defined() && t.dtype() != DType::float0; }

struct ScanInfo {
  ClosedJaxprPtr body;
  size_t nc, ncar, nx;
};

ScanInfo scan_info(const Params& params, size_t n_operands) {
  const ScanParams sp = ScanParams::from(params);
  ScanInfo s;
  s.body = sp.jaxpr;
  s.nc = size_t(sp.num_consts);
  s.ncar = size_t(sp.num_carry);
  s.nx = n_operands - s.nc - s.ncar;
  return s;
}

/// The JVP of the scan body traced with nonzero tangents for the inputs in `nz_in` (body input
/// order), carry output tangents instantiated where `carry_nz`; inputs ordered
/// [consts, consts_dot, carry, carry_dot, xs, xs_dot] (dots only where nonzero) and outputs
/// [carry, carry_dot (carry_nz), ys, ys_dot (nonzero)]. Reports which output tangents came out
/// nonzero before instantiation.
struct JvpBody {
  ClosedJaxpr jaxpr;
  std::vector<bool> out_nz;  // per body output
};

JvpBody trace_jvp_body(const ScanInfo& s, const std::vector<bool>& nz_in, const std::vector<bool>& carry_nz) {
  const Jaxpr& body = *s.body->jaxpr;
  const size_t n = body.invars.size();
  const size_t groups[3][2] = {{0, s.nc}, {s.nc, s.ncar}, {s.nc + s.ncar, s.nx}};
  std::vector<ShapedArray> in_avals;
  std::vector<int> slot;  // input position -> (body input index, or -1 - index for a tangent)
  for (auto& g : groups) {
    for (size_t i = g[0]; i < g[0] + g[1]; ++i) {
      in_avals.push_back(body.invars[i].aval());
      slot.push_back(int(i));
    }
    for (size_t i = g[0]; i < g[0] + g[1]; ++i)
      if (nz_in[i]) {
        in_avals.push_back(tangent_aval(body.invars[i].aval()));
        slot.push_back(-1 - int(i));
      }
  }
  JvpBody r;
  r.out_nz.assign(body.outvars.size(), false);
  ClosedJaxprPtr bp = s.body;
  r.jaxpr = trace_to_jaxpr(
      [&](const std::vector<Array>& ins) {
        std::vector<Array> primals(n), tangents(n);
        for (size_t k = 0; k < ins.size(); ++k) {
          if (slot[k] >= 0) primals[size_t(slot[k])] = ins[k];
          else tangents[size_t(-1 - slot[k])] = ins[k];
        }
        FlatFn f = [bp](const std::vector<Array>& a) { return eval_jaxpr(*bp, a); };
        auto [po, to] = jvp_flat(f, primals, tangents);
        std::vector<Array> outs(po.begin(), po.begin() + std::ptrdiff_t(s.ncar));
        for (size_t i = 0; i < po.size(); ++i) r.out_nz[i] = i < to.size() && nonzero(to[i]);
        for (size_t i = 0; i < s.ncar; ++i)
          if (carry_nz[i]) outs.push_back(instantiate_zero(r.out_nz[i] ? to[i] : Array(), po[i].aval()));
        outs.insert(outs.end(), po.begin() + std::ptrdiff_t(s.ncar), po.end());
        for (size_t i = s.ncar; i < po.size(); ++i)
          if (r.out_nz[i]) outs.push_back(to[i]);
        return outs;
      },
      in_avals);
  return r;
}

// JAX's _scan_jvp.
std::pair<std::vector<Array>, std::vector<Array>> scan_jvp_pure(const std::vector<Array>& primals,
                                                                const std::vector<Array>& tangents,
                                                                const Params& params) {
  const ScanInfo s = scan_info(params, primals.size());
  std::vector<bool> nz_in(primals.size());
  for (size_t i = 0; i < primals.size(); ++i) nz_in[i] = i < tangents.size() && nonzero(tangents[i]);
  std::vector<bool> carry_nz(nz_in.begin() + std::ptrdiff_t(s.nc), nz_in.begin() + std::ptrdiff_t(s.nc + s.ncar));
  // Fixpoint: a carry's tangent is nonzero if its init tangent is, or if the body makes it
  // nonzero from nonzero const/carry/xs tangents. At most num_carry + 1 traces.
  JvpBody jb;
  for (;;) {
    for (size_t i = 0; i < s.ncar; ++i) nz_in[s.nc + i] = carry_nz[i];
    jb = trace_jvp_body(s, nz_in, carry_nz);
    bool changed = false;
    for (size_t i = 0; i < s.ncar; ++i)
      if (jb.out_nz[i] && !carry_nz[i]) carry_nz[i] = changed = true;
    if (!changed) break;
  }
  const size_t nbc = jb.jaxpr.consts.size();
  auto body = std::make_shared<ClosedJaxpr>();
  body->jaxpr = std::make_shared<Jaxpr>(convert_constvars_jaxpr(*jb.jaxpr.jaxpr));
  std::vector<Array> ops = jb.jaxpr.consts;
  std::vector<int64_t> linear(nbc, 0);
  const size_t groups[3][2] = {{0, s.nc}, {s.nc, s.ncar}, {s.nc + s.ncar, s.nx}};
  size_t new_nc = 0, new_ncar = 0;
  for (int g = 0; g < 3; ++g) {
    const size_t b = groups[g][0], len = groups[g][1];
    size_t count = 0;
    for (size_t i = b; i < b + len; ++i) {
      ops.push_back(primals[i]);
      linear.push_back(0);
      ++count;
    }
    for (size_t i = b; i < b + len; ++i)
      if (nz_in[i]) {
        ops.push_back(instantiate_zero(nonzero(tangents[i]) ? tangents[i] : Array(), primals[i].aval()));
        linear.push_back(1);
        ++count;
      }
    if (g == 0) new_nc = nbc + count;
    if (g == 1) new_ncar = count;
  }
  ScanParams p = ScanParams::from(params);
  p.jaxpr = ClosedJaxprPtr(body);
  p.num_consts = int64_t(new_nc);
  p.num_carry = int64_t(new_ncar);
  p.linear = linear;
  std::vector<Array> outs = minijax::bind(ScanParams::primitive(), ops, p.to_params());

  const size_t nout = s.body->jaxpr->outvars.size(), ny = nout - s.ncar;
  std::vector<Array> primal_out, tangent_out(nout);
  size_t k = 0;
  for (size_t i = 0; i < s.ncar; ++i) primal_out.push_back(outs[k++]);
  for (size_t i = 0; i < s.ncar; ++i)
    if (carry_nz[i]) tangent_out[i] = outs[k++];
  for (size_t j = 0; j < ny; ++j) primal_out.push_back(outs[k++]);
  for (size_t j = 0; j < ny; ++j)
    if (jb.out_nz[s.ncar + j]) tangent_out[s.ncar + j] = outs[k++];
  return {primal_out, tangent_out};
}

/// The scan body batched along axis 0 of the inputs marked in `in_bat` (others unbatched), with
/// the carry outputs in `force_out` materialized as batched. Returns the traced jaxpr (its
/// constvars still to be converted) and which outputs are batched.
std::pair<ClosedJaxpr, std::vector<bool>> batch_body(const ClosedJaxprPtr& body, int64_t size,
                                                     const std::vector<bool>& in_bat,
                                                     const std::vector<bool>& force_out) {
  const Jaxpr& j = *body->jaxpr;
  std::vector<ShapedArray> in_avals;
  for (size_t i = 0; i < j.invars.size(); ++i) {
    ShapedArray a = j.invars[i].aval();
    if (in_bat[i]) a.shape.insert(a.shape.begin(), size);
    in_avals.push_back(a);
  }
  std::vector<bool> out_bat(j.outvars.size(), false);
  ClosedJaxpr cj = trace_to_jaxpr(
      [&](const std::vector<Array>& ins) {
        std::vector<Array> vals;
        std::vector<int64_t> dims;
        {
          TraceScope<BatchTrace> scope(/*dynamic=*/false, size);
          std::vector<Array> bins;
          for (size_t i = 0; i < ins.size(); ++i)
            bins.push_back(in_bat[i] ? Array(std::make_shared<BatchTracer>(scope.get(), ins[i], 0)) : ins[i]);
          for (const Array& o : eval_jaxpr(*body, bins)) {
            auto [v, d] = batch_unpack(*scope, o);
            vals.push_back(v);
            dims.push_back(d);
          }
        }
        std::vector<Array> outs;
        for (size_t i = 0; i < vals.size(); ++i) {
          out_bat[i] = dims[i] != kNotMapped;
          const bool force = i < force_out.size() && force_out[i];
          outs.push_back(out_bat[i] || force ? materialize_batch(vals[i], dims[i], size, 0) : vals[i]);
        }
        return outs;
      },
      in_avals);
  return {cj, out_bat};
}

// JAX's _scan_batching_rule: fixpoint over batched carries; consts and carries batched at 0,
// xs at 1 (axis 0 is the scan axis); outputs: carries at 0, ys at 1 (kNotMapped if unbatched).
std::pair<std::vector<Array>, std::vector<int64_t>> scan_batch(const std::vector<Array>& args,
                                                               const std::vector<int64_t>& dims,
                                                               const Params& params) {
  const ScanInfo s = scan_info(params, args.size());
  const int64_t size = batch_axis_size(args, dims);
  std::vector<bool> in_bat(args.size());
  for (size_t i = 0; i < args.size(); ++i) in_bat[i] = dims[i] != kNotMapped;
  std::vector<bool> carry_bat(in_bat.begin() + std::ptrdiff_t(s.nc), in_bat.begin() + std::ptrdiff_t(s.nc + s.ncar));
  std::pair<ClosedJaxpr, std::vector<bool>> traced;
  for (;;) {
    for (size_t i = 0; i < s.ncar; ++i) in_bat[s.nc + i] = carry_bat[i];
    traced = batch_body(s.body, size, in_bat, carry_bat);
    bool changed = false;
    for (size_t i = 0; i < s.ncar; ++i)
      if (traced.second[i] && !carry_bat[i]) carry_bat[i] = changed = true;
    if (!changed) break;
  }
  const ClosedJaxpr& cj = traced.first;
  const std::vector<bool>& out_bat = traced.second;
  auto body = std::make_shared<ClosedJaxpr>();
  body->jaxpr = std::make_shared<Jaxpr>(convert_constvars_jaxpr(*cj.jaxpr));
  std::vector<Array> ops = cj.consts;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i < s.nc) ops.push_back(in_bat[i] ? move_batch_dim(args[i], dims[i], 0) : args[i]);
    else if (i < s.nc + s.ncar) ops.push_back(in_bat[i] ? materialize_batch(args[i], dims[i], size, 0) : args[i]);
    else ops.push_back(in_bat[i] ? move_batch_dim(args[i], dims[i], 1) : args[i]);
  }
  ScanParams p = ScanParams::from(params);
  p.jaxpr = ClosedJaxprPtr(body);
  p.num_consts = int64_t(cj.consts.size() + s.nc);
  std::vector<int64_t> linear(cj.consts.size(), 0);
  if (p.linear) linear.insert(linear.end(), p.linear->begin(), p.linear->end());
  else linear.resize(ops.size(), 0);
  p.linear = linear;
  std::vector<Array> outs = minijax::bind(ScanParams::primitive(), ops, p.to_params());
  std::vector<int64_t> out_dims;
  for (size_t i = 0; i < outs.size(); ++i)
    out_dims.push_back(!out_bat[i] && !(i < s.ncar && carry_bat[i]) ? kNotMapped : (i < s.ncar ? 0 : 1));
  return {outs, out_dims};
}

Registrar reg([] {
  Primitive& p = get_or_create_primitive("scan");
  p.jvp = split_jvp_rule(scan_jvp_pure);
  p.batch = scan_batch;
});

}  // namespace
}  // namespace minijax
