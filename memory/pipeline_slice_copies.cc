// minijax host offload, pipelining: stacked host xs become loop constants read one slice ahead
// (prefetch), stacked host ys loop-carried buffers written one slice behind (deferred done).
#include "memory/pipeline_slice_copies.h"

#include "memory/offload_loops.h"

namespace minijax {

using namespace offload;

std::vector<Eqn> pipeline_slice_copies(const Eqn& scan) {
  const SliceCopies found = find_slice_copies(scan);
  if (found.empty()) return {scan};
  const ScanParts s = scan_parts(scan);
  const size_t ncc = s.nc + s.ncar;
  const Jaxpr core = strip_slice_copies(*s.body, s, found);
  const ShapedArray index_aval{{}, DType::i32, false, MemoryKind::device};
  const Literal row0 = index_literal(s.reverse ? s.length - 1 : 0);
  auto is_reload = [&](size_t x) {
    for (size_t r : found.reload_xs)
      if (r == x) return true;
    return false;
  };
  auto is_offload = [&](size_t y) {
    for (size_t o : found.offload_ys)
      if (o == y) return true;
    return false;
  };
  std::vector<Eqn> before, after;
  Jaxpr b;
  std::vector<Eqn> head, tail;  // the body's new equations before and after the original ones
  std::vector<Atom> in(scan.inputs.begin(), scan.inputs.begin() + long(s.nc));
  b.invars.assign(core.invars.begin(), core.invars.begin() + long(s.nc));
  // Reloads: R a loop constant.
  std::vector<Var> stacks;  // per reload, R's body invar
  for (size_t m = 0; m < found.reload_xs.size(); ++m) {
    const Atom& r = scan.inputs[ncc + found.reload_xs[m]];
    Var rb(atom_aval(r));
    in.push_back(r);
    b.invars.push_back(rb);
    stacks.push_back(rb);
  }
  // Carries: the original ones, the row, the current reloaded slices, the offload buffers.
  in.insert(in.end(), scan.inputs.begin() + long(s.nc), scan.inputs.begin() + long(ncc));
  b.invars.insert(b.invars.end(), core.invars.begin() + long(s.nc), core.invars.begin() + long(ncc));
  Var row(index_aval), next(index_aval);
  in.push_back(row0);
  b.invars.push_back(row);
  head.push_back(add_to_index(row, next, s.reverse ? -1 : 1));
  std::vector<Atom> new_carries{next};
  std::vector<Var> carry_outs{Var::dropvar(index_aval)};
  for (size_t m = 0; m < found.reload_xs.size(); ++m) {
    const Var& cur = core.invars[ncc + found.reload_xs[m]];  // the device slice the body reads
    const Params p{{"memory_kind", MemoryKind::device}, {"axis", int64_t(0)}, {"slices", found.reload_slices[m]}};
    const Atom& r = scan.inputs[ncc + found.reload_xs[m]];
    Var h0(cur.aval()), b0(cur.aval()), hn(cur.aval()), nb(cur.aval());
    before.push_back(copy_eqn("copy_slice_start", {r, row0}, h0, p));
    before.push_back(copy_done(h0, {r}, b0));
    in.push_back(b0);
    b.invars.push_back(cur);
    Params pp = p;
    pp.set("pipelined", true);  // its index is past the loop's end in the last iteration
    head.push_back(copy_eqn("copy_slice_start", {stacks[m], next}, hn, pp));
    tail.push_back(copy_done(hn, {stacks[m]}, nb));
    new_carries.push_back(nb);
    carry_outs.push_back(Var::dropvar(cur.aval()));
  }
  // Offloads: the slice computed in iteration i is carried into iteration i + 1, whose body copies
  // it from the carry's buffer (alive until the copy is done) while it computes; the last one is
  // copied after the loop.
  Var prev(index_aval);
  if (!found.offload_ys.empty()) head.push_back(add_to_index(row, prev, s.reverse ? 1 : -1));
  const Literal last_row = index_literal(s.reverse ? 0 : s.length - 1);
  for (size_t k = 0; k < found.offload_ys.size(); ++k) {
    const Var& ys = scan.outputs[s.ncar + found.offload_ys[k]];
    const Var& r = found.offload_src[k];
    const Params p{{"axis", int64_t(0)}, {"slices", found.offload_slices[k]}};
    Var r0(ys.aval()), p0(r.aval()), rc(ys.aval()), pc(r.aval()), rs(ys.aval()), rd(ys.aval());
    before.push_back(allocate_buffer(r0));
    before.push_back(allocate_buffer(p0));
    in.push_back(r0);
    in.push_back(p0);
    b.invars.push_back(rc);
    b.invars.push_back(pc);
    Params pp = p;
    pp.set("pipelined", true);  // its index is before the loop's start in the first iteration
    head.push_back(copy_eqn("copy_update_start", {rc, pc, prev}, rs, pp));
    tail.push_back(copy_done(rs, {pc}, rd));
    new_carries.push_back(rd);
    new_carries.push_back(r);
    Var rf(ys.aval()), pf(r.aval()), rl(ys.aval());
    carry_outs.push_back(rf);
    carry_outs.push_back(pf);
    after.push_back(copy_eqn("copy_update_start", {rf, pf, last_row}, rl, p));
    after.push_back(copy_done(rl, {pf}, ys));
  }
  // xs: all but the reloaded ones.
  for (size_t x = 0; x < s.num_xs(); ++x)
    if (!is_reload(x)) {
      in.push_back(scan.inputs[ncc + x]);
      b.invars.push_back(core.invars[ncc + x]);
    }
  b.eqns = head;
  b.eqns.insert(b.eqns.end(), core.eqns.begin(), core.eqns.end());
  b.eqns.insert(b.eqns.end(), tail.begin(), tail.end());
  b.outvars.assign(core.outvars.begin(), core.outvars.begin() + long(s.ncar));
  b.outvars.insert(b.outvars.end(), new_carries.begin(), new_carries.end());
  std::vector<Var> outs(scan.outputs.begin(), scan.outputs.begin() + long(s.ncar));
  outs.insert(outs.end(), carry_outs.begin(), carry_outs.end());
  for (size_t y = 0; y < s.num_ys(); ++y)
    if (!is_offload(y)) {
      b.outvars.push_back(core.outvars[s.ncar + y]);
      outs.push_back(scan.outputs[s.ncar + y]);
    }
  const size_t nc = s.nc + stacks.size(), ncar = b.invars.size() - nc - (s.num_xs() - found.reload_xs.size());
  before.push_back(make_scan(scan, b, std::move(in), std::move(outs), nc, ncar, s.length));
  before.insert(before.end(), after.begin(), after.end());
  return before;
}

}  // namespace minijax
