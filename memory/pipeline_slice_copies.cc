// minijax host offload, pipelining: stacked host xs become loop constants read one slice ahead
// (prefetch), stacked host ys loop-carried buffers written one slice behind (deferred done).
#include "memory/pipeline_slice_copies.h"

#include <algorithm>

#include "core/views/control_flow.h"
#include "memory/offload_loops.h"

namespace minijax {

using namespace offload;

namespace {

const ShapedArray kIndexAval{{}, DType::i32, false, MemoryKind::device};

bool contains(const std::vector<size_t>& v, size_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The rewrite of one scan: the new scan's operands and body invars are gathered in groups (its
// consts, then carries, then xs), the body's new equations before and after the original ones.
class Pipeline {
 public:
  Pipeline(const Eqn& scan, SliceCopies found)
      : scan_(scan), s_(scan_parts(scan)), found_(std::move(found)), core_(strip_slice_copies(*s_.body, s_, found_)),
        ncc_(s_.nc + s_.ncar), row0_(index_literal(s_.reverse ? s_.length - 1 : 0)), row_(kIndexAval),
        next_(kIndexAval), prev_(kIndexAval) {}

  std::vector<Eqn> run() {
    consts_.insert(consts_.end(), scan_.inputs.begin(), scan_.inputs.begin() + long(s_.nc));
    const_vars_.assign(core_.invars.begin(), core_.invars.begin() + long(s_.nc));
    carries_.insert(carries_.end(), scan_.inputs.begin() + long(s_.nc), scan_.inputs.begin() + long(ncc_));
    carry_vars_.assign(core_.invars.begin() + long(s_.nc), core_.invars.begin() + long(ncc_));
    carry_outs_.assign(core_.outvars.begin(), core_.outvars.begin() + long(s_.ncar));
    carry_results_.assign(scan_.outputs.begin(), scan_.outputs.begin() + long(s_.ncar));
    add_row();
    add_reloads();
    add_offloads();
    return assemble();
  }

 private:
  // The stacked row of the current iteration, carried; the next one computed first.
  void add_row() {
    carries_.push_back(row0_);
    carry_vars_.push_back(row_);
    head_.push_back(add_to_index(row_, next_, s_.reverse ? -1 : 1));
    carry_outs_.push_back(next_);
    carry_results_.push_back(Var::dropvar(kIndexAval));
  }

  // Each reloaded stack R: a loop constant; the current slice carried, the next one prefetched
  // (the first before the loop).
  void add_reloads() {
    for (size_t m = 0; m < found_.reload_xs.size(); ++m) {
      const Atom& r = scan_.inputs[ncc_ + found_.reload_xs[m]];
      const Var& cur = core_.invars[ncc_ + found_.reload_xs[m]];  // the device slice the body reads
      CopyParams p = CopyParams::slice_start(MemoryKind::device, 0, found_.reload_slices[m]);
      Var rb(atom_aval(r)), h0(cur.aval()), b0(cur.aval()), hn(cur.aval()), nb(cur.aval());
      consts_.push_back(r);
      const_vars_.push_back(rb);
      before_.push_back(copy_eqn(p, {r, row0_}, h0));
      before_.push_back(copy_done(h0, {r}, b0));
      carries_.push_back(b0);
      carry_vars_.push_back(cur);
      p.pipelined = true;  // its index is past the loop's end in the last iteration
      head_.push_back(copy_eqn(p, {rb, next_}, hn));
      tail_.push_back(copy_done(hn, {rb}, nb));
      carry_outs_.push_back(nb);
      carry_results_.push_back(Var::dropvar(cur.aval()));
    }
  }

  // Each offloaded ys: a loop-carried host buffer R (no bytes before the loop). The slice an
  // iteration computes is carried into the next, which copies it from the carry's buffer (alive
  // until the copy is done) while it computes; the last one is copied after the loop.
  void add_offloads() {
    if (found_.offload_ys.empty()) return;
    head_.push_back(add_to_index(row_, prev_, s_.reverse ? 1 : -1));
    const Literal last_row = index_literal(s_.reverse ? 0 : s_.length - 1);
    for (size_t k = 0; k < found_.offload_ys.size(); ++k) {
      const Var& ys = scan_.outputs[s_.ncar + found_.offload_ys[k]];
      const Atom& r = core_.outvars[s_.ncar + found_.offload_ys[k]];  // the device slice, as stripped
      const ShapedArray& ra = atom_aval(r);
      CopyParams p = CopyParams::update_start(0, found_.offload_slices[k]);
      Var r0(ys.aval()), p0(ra), rc(ys.aval()), pc(ra), rs(ys.aval()), rd(ys.aval());
      before_.push_back(allocate_buffer(r0));
      before_.push_back(allocate_buffer(p0));
      carries_.insert(carries_.end(), {r0, p0});
      carry_vars_.insert(carry_vars_.end(), {rc, pc});
      CopyParams pp = p;
      pp.pipelined = true;  // its index is before the loop's start in the first iteration
      head_.push_back(copy_eqn(pp, {rc, pc, prev_}, rs));
      tail_.push_back(copy_done(rs, {pc}, rd));
      carry_outs_.insert(carry_outs_.end(), {rd, r});
      Var rf(ys.aval()), pf(ra), rl(ys.aval());
      carry_results_.insert(carry_results_.end(), {rf, pf});
      after_.push_back(copy_eqn(p, {rf, pf, last_row}, rl));
      after_.push_back(copy_done(rl, {pf}, ys));
    }
  }

  std::vector<Eqn> assemble() {
    Jaxpr b;
    std::vector<Atom> in = consts_;
    b.invars = const_vars_;
    in.insert(in.end(), carries_.begin(), carries_.end());
    b.invars.insert(b.invars.end(), carry_vars_.begin(), carry_vars_.end());
    for (size_t x = 0; x < s_.num_xs(); ++x)
      if (!contains(found_.reload_xs, x)) {
        in.push_back(scan_.inputs[ncc_ + x]);
        b.invars.push_back(core_.invars[ncc_ + x]);
      }
    b.eqns = head_;
    b.eqns.insert(b.eqns.end(), core_.eqns.begin(), core_.eqns.end());
    b.eqns.insert(b.eqns.end(), tail_.begin(), tail_.end());
    b.outvars = carry_outs_;
    std::vector<Var> outs = carry_results_;
    for (size_t y = 0; y < s_.num_ys(); ++y)
      if (!contains(found_.offload_ys, y)) {
        b.outvars.push_back(core_.outvars[s_.ncar + y]);
        outs.push_back(scan_.outputs[s_.ncar + y]);
      }
    std::vector<Eqn> r = before_;
    r.push_back(make_scan(scan_, b, std::move(in), std::move(outs), const_vars_.size(), carry_vars_.size(), s_.length));
    r.insert(r.end(), after_.begin(), after_.end());
    return r;
  }

  const Eqn& scan_;
  const ScanParts s_;
  const SliceCopies found_;
  const Jaxpr core_;
  const size_t ncc_;
  const Literal row0_;
  Var row_, next_, prev_;
  std::vector<Atom> consts_, carries_, carry_outs_;
  std::vector<Var> const_vars_, carry_vars_, carry_results_;
  std::vector<Eqn> before_, after_, head_, tail_;
};

}  // namespace

std::vector<Eqn> pipeline_slice_copies(const Eqn& scan) {
  SliceCopies found = find_slice_copies(scan);
  // A loop of no iterations copies nothing: nothing to pipeline.
  if (found.empty() || scan_params(scan).length == 0) return {scan};
  return Pipeline(scan, std::move(found)).run();
}

Jaxpr pipeline_slice_copies(const Jaxpr& j) {
  Jaxpr r = j;
  r.eqns.clear();
  for (const Eqn& e : j.eqns) {
    Eqn n = with_bodies(e, [](const Jaxpr& b) { return pipeline_slice_copies(b); });
    if (!ScanParams::is(n)) {
      r.eqns.push_back(std::move(n));
      continue;
    }
    for (Eqn& p : pipeline_slice_copies(n)) r.eqns.push_back(std::move(p));
  }
  return r;
}

}  // namespace minijax
