// minijax host offload, coalescing: strip mining of a scan whose host copies are smaller than
// config().offload_coalesce_bytes (the outer scan over chunks, the inner scan over k iterations).
#include "memory/coalesce_slice_copies.h"

#include "core/views/control_flow.h"
#include "memory/offload_loops.h"

namespace minijax {

using namespace offload;

namespace {

ShapedArray stacked(ShapedArray a, int64_t n) {
  a.shape.insert(a.shape.begin(), n);
  return a;
}

}  // namespace

int64_t coalesce_factor(int64_t length, int64_t slice_bytes, int64_t coalesce_bytes) {
  if (length < 2 || slice_bytes <= 0 || coalesce_bytes <= 0 || slice_bytes >= coalesce_bytes) return 1;
  const int64_t need = (coalesce_bytes + slice_bytes - 1) / slice_bytes;
  if (need >= length) return length;
  int64_t d = need;
  while (length % d != 0) ++d;
  if (d <= 4 * need) return d;
  for (d = need; d > 1; --d)
    if (length % d == 0) return d;
  return 1;
}

std::vector<Eqn> coalesce_slice_copies(const Eqn& scan, int64_t coalesce_bytes) {
  const SliceCopies found = find_slice_copies(scan);
  if (found.empty()) return {scan};
  const ScanParts s = scan_parts(scan);
  const int64_t k = coalesce_factor(s.length, found.min_slice_bytes(scan), coalesce_bytes);
  if (k <= 1) return {scan};
  const int64_t q = s.length / k;
  const size_t ncc = s.nc + s.ncar;
  const Jaxpr inner = strip_slice_copies(*s.body, s, found);
  auto is_reload = [&](size_t x) {
    for (size_t r : found.reload_xs)
      if (r == x) return true;
    return false;
  };
  auto offload_index = [&](size_t y) -> int {
    for (size_t i = 0; i < found.offload_ys.size(); ++i)
      if (found.offload_ys[i] == y) return int(i);
    return -1;
  };
  // The outer body: consts and carries as the original's, xs chunks of k slices.
  Jaxpr ob;
  std::vector<Atom> inner_in;
  for (size_t i = 0; i < ncc; ++i) {
    Var v(s.body->invars[i].aval());
    ob.invars.push_back(v);
    inner_in.push_back(v);
  }
  for (size_t x = 0; x < s.num_xs(); ++x) {
    const ShapedArray chunk = stacked(s.body->invars[ncc + x].aval(), k);
    Var xo(chunk);
    ob.invars.push_back(xo);
    if (!is_reload(x)) {
      inner_in.push_back(xo);
      continue;
    }
    ShapedArray dev = chunk;
    dev.memory_kind = MemoryKind::device;
    Var h(dev), d(dev);
    ob.eqns.push_back(copy_eqn(CopyParams::start(MemoryKind::device, k),
                               {xo}, h));
    ob.eqns.push_back(copy_done(h, {xo}, d));
    inner_in.push_back(d);
  }
  std::vector<Var> inner_out;
  for (size_t o = 0; o < inner.outvars.size(); ++o) {
    const ShapedArray& a = atom_aval(inner.outvars[o]);
    inner_out.push_back(Var(o < s.ncar ? a : stacked(a, k)));
  }
  ob.eqns.push_back(make_scan(scan, inner, inner_in, inner_out, s.nc, s.ncar, k));
  for (size_t o = 0; o < inner_out.size(); ++o) {
    const int off = o < s.ncar ? -1 : offload_index(o - s.ncar);
    if (off < 0) {
      ob.outvars.push_back(inner_out[o]);
      continue;
    }
    ShapedArray host = inner_out[o].aval();
    host.memory_kind = atom_aval(s.body->outvars[o]).memory_kind;
    Var h(host), y(host);
    ob.eqns.push_back(copy_eqn(
        CopyParams::start(host.memory_kind, k), {inner_out[o]}, h));
    ob.eqns.push_back(copy_done(h, {inner_out[o]}, y));
    ob.outvars.push_back(y);
  }
  // The outer scan over the chunks, xs reshaped to [q, k, ...] before it and ys back after it.
  std::vector<Eqn> out;
  std::vector<Atom> in(scan.inputs.begin(), scan.inputs.begin() + long(ncc));
  for (size_t x = 0; x < s.num_xs(); ++x) {
    Var xr(stacked(ob.invars[ncc + x].aval(), q));
    out.push_back(reshape_to(scan.inputs[ncc + x], xr));
    in.push_back(xr);
  }
  std::vector<Var> outs(scan.outputs.begin(), scan.outputs.begin() + long(s.ncar));
  std::vector<Eqn> after;
  for (size_t y = 0; y < s.num_ys(); ++y) {
    Var yq(stacked(atom_aval(ob.outvars[s.ncar + y]), q));
    outs.push_back(yq);
    after.push_back(reshape_to(yq, scan.outputs[s.ncar + y]));
  }
  out.push_back(make_scan(scan, ob, std::move(in), std::move(outs), s.nc, s.ncar, q));
  // The scan's unroll (iterations per compiled trip) applies to the inner scan, which runs the
  // iterations; the loop over chunks stays rolled (unrolling it too would make unroll^2 copies).
  out.back().params.set("unroll", int64_t(1));
  out.insert(out.end(), after.begin(), after.end());
  return out;
}

Jaxpr coalesce_slice_copies(const Jaxpr& j, int64_t coalesce_bytes) {
  Jaxpr r = j;
  r.eqns.clear();
  for (const Eqn& e : j.eqns) {
    Eqn n = offload::with_bodies(e, [&](const Jaxpr& b) { return coalesce_slice_copies(b, coalesce_bytes); });
    if (!ScanParams::is(n)) {
      r.eqns.push_back(std::move(n));
      continue;
    }
    for (Eqn& c : coalesce_slice_copies(n, coalesce_bytes)) r.eqns.push_back(std::move(c));
  }
  return r;
}

}  // namespace minijax
