// minijax offload stage place_copies (memory/place_copies.h): every copy's start and done placed
// among the equations that compute, by a constant-rate time model of both.
#include "memory/place_copies.h"

#include <algorithm>
#include <unordered_map>
#include <variant>

#include "core/config.h"
#include "core/lax_params.h"
#include "core/verify.h"
#include "core/views/array_ops.h"
#include "core/views/control_flow.h"
#include "core/views/memory_ops.h"
#include "memory/offload_loops.h"

namespace minijax {

namespace {

using offload::copy_destination_kind;
using offload::is_copy_start;
using offload::with_bodies;

constexpr double kFlopsPerSecond = 100e9;  // one device (two cores, AVX2/AVX-512 GEMM): the estimate
constexpr double kBytesPerSecond = 10e9;  // memory traffic, and a copy without an emulated link

bool is_var(const Atom& a) { return std::holds_alternative<Var>(a); }

// Slots: slot s is just before the s-th computing equation of the scope (slot n: the end).
class Placer {
 public:
  Placer(const Jaxpr& j, const OffloadOptions& opts) : j_(j), opts_(opts) {}
  Jaxpr run();

 private:
  size_t operand_slot(const Eqn& e) const;
  size_t first_reader(const Var& v) const;
  size_t place_start(size_t k, const Eqn& e);
  size_t place_done(const Eqn& e);
  size_t prefetch_budget_slot(size_t from, size_t done, int64_t bytes) const;

  double copy_seconds(int64_t bytes) const {
    return double(bytes) / (opts_.host_link_bytes_per_s > 0 ? opts_.host_link_bytes_per_s : kBytesPerSecond);
  }

  const Jaxpr& j_;
  const OffloadOptions& opts_;
  std::vector<size_t> compute_;                              // indices of computing equations
  std::vector<double> secs_;                                 // their estimated seconds
  std::unordered_map<Var, size_t, VarHash> avail_;           // the first slot a value exists in
  std::unordered_map<Var, size_t, VarHash> reader_;          // the first computing reader's slot,
                                                             // through copies of the value
  std::unordered_map<Var, std::vector<Var>, VarHash> copied_into_;  // value -> copies reading it
  std::unordered_map<Var, size_t, VarHash> started_;         // copy handle -> its start's slot
  std::vector<std::pair<size_t, size_t>> prefetch_spans_;    // placed reloads: [start, done) slots
  std::vector<int64_t> prefetch_bytes_;
};

size_t Placer::operand_slot(const Eqn& e) const {
  size_t s = 0;
  for (const Atom& a : e.inputs)
    if (is_var(a))
      if (auto it = avail_.find(std::get<Var>(a)); it != avail_.end()) s = std::max(s, it->second);
  return s;
}

// The first computing equation that reads v or a copy made from v (a copy is placed before its
// own readers, so a value must exist before the first of them).
size_t Placer::first_reader(const Var& v) const {
  auto it = reader_.find(v);
  size_t first = it == reader_.end() ? compute_.size() : it->second;
  if (auto c = copied_into_.find(v); c != copied_into_.end())
    for (const Var& w : c->second) first = std::min(first, first_reader(w));
  return first;
}

// The earliest slot >= `from` such that no slot in [s, done) would hold more than the budget of
// reload bytes in flight with this one added.
size_t Placer::prefetch_budget_slot(size_t from, size_t done, int64_t bytes) const {
  const int64_t budget = opts_.prefetch_bytes;
  if (budget <= 0) return from;
  size_t s = done;
  while (s > from) {
    int64_t in_flight = bytes;
    for (size_t p = 0; p < prefetch_spans_.size(); ++p)
      if (prefetch_spans_[p].first <= s - 1 && s - 1 < prefetch_spans_[p].second) in_flight += prefetch_bytes_[p];
    if (in_flight > budget) break;
    --s;
  }
  return s;
}

// A start: an offload right after its operands exist; a reload as late as the computing
// equations before its first reader still cover the copy, under the prefetch budget.
size_t Placer::place_start(size_t k, const Eqn& e) {
  const size_t from = operand_slot(e);
  const bool to_host = copy_destination_kind(e) != MemoryKind::device;
  const int64_t bytes = CopyParams::is(e, CopyParams::Kind::update_start) ? atom_aval(e.inputs.at(1)).nbytes()
                                                                         : e.outputs[0].aval().nbytes();
  if (to_host) return from;
  // The reload's done goes before the first computing reader of its value.
  size_t done = compute_.size();
  for (size_t d = k + 1; d < j_.eqns.size(); ++d) {
    const Eqn& f = j_.eqns[d];
    if (CopyDoneParams::is(f) && is_var(f.inputs[0]) && std::get<Var>(f.inputs[0]) == e.outputs[0]) {
      done = std::max(from, first_reader(f.outputs[0]));
      break;
    }
  }
  const double need = copy_seconds(bytes);
  double covered = 0;
  size_t s = done;
  while (s > from && covered < need) covered += secs_[--s];
  s = std::max(s, prefetch_budget_slot(from, done, bytes));
  prefetch_spans_.push_back({s, done});
  prefetch_bytes_.push_back(bytes);
  return s;
}

// A done: a reload's right before its value's first computing reader; an offload's (or a copy
// started outside this scope, in a previous iteration or a loop) once the computing equations
// after its start cover the copy, but no later than its value's first computing reader.
size_t Placer::place_done(const Eqn& e) {
  const size_t from = operand_slot(e);
  const Var& h = std::get<Var>(e.inputs[0]);
  const size_t limit = std::max(from, first_reader(e.outputs[0]));
  if (h.aval().memory_kind == MemoryKind::device && started_.count(h)) return limit;
  const double need = copy_seconds(h.aval().nbytes());
  size_t s = started_.count(h) ? started_.at(h) : from;
  double covered = 0;
  while (s < limit && covered < need) covered += secs_[s++];
  return std::max(s, from);
}

Jaxpr Placer::run() {
  std::vector<size_t> copies;
  for (size_t k = 0; k < j_.eqns.size(); ++k) {
    const Eqn& e = j_.eqns[k];
    if (is_copy_start(e) || CopyDoneParams::is(e)) {
      copies.push_back(k);
      for (const Atom& a : e.inputs)
        if (is_var(a)) copied_into_[std::get<Var>(a)].push_back(e.outputs[0]);
      continue;
    }
    for (const Atom& a : e.inputs)
      if (is_var(a)) reader_.emplace(std::get<Var>(a), compute_.size());
    compute_.push_back(k);
    secs_.push_back(offload_estimate_seconds(e));
    for (const Var& o : e.outputs) avail_[o] = compute_.size();
  }
  const size_t n = compute_.size();
  std::vector<std::vector<size_t>> at(n + 1);  // copies per slot, in program order
  for (size_t k : copies) {
    const Eqn& e = j_.eqns[k];
    const size_t slot = is_copy_start(e) ? place_start(k, e) : place_done(e);
    if (is_copy_start(e)) started_[e.outputs[0]] = slot;
    avail_[e.outputs[0]] = slot;
    at[slot].push_back(k);
  }
  Jaxpr r = j_;
  r.eqns.clear();
  for (size_t s = 0; s <= n; ++s) {
    for (size_t k : at[s]) r.eqns.push_back(j_.eqns[k]);
    if (s < n) r.eqns.push_back(j_.eqns[compute_[s]]);
  }
  return r;
}

Jaxpr place_in_scope(const Jaxpr& j, const OffloadOptions& opts) {
  Jaxpr bodies = j;
  for (Eqn& e : bodies.eqns) e = with_bodies(e, [&](const Jaxpr& b) { return place_in_scope(b, opts); });
  return Placer(bodies, opts).run();
}

double bytes_of(const Atom& a) { return double(atom_aval(a).nbytes()); }

}  // namespace

double offload_estimate_seconds(const Eqn& e) {
  if (AllocateBufferParams::is(e) || ReshapeParams::is(e) || SqueezeParams::is(e) || ExpandDimsParams::is(e) ||
      OptimizationBarrierParams::is(e) || is_copy_start(e) || CopyDoneParams::is(e))
    return 0;  // no work on the device (views, allocations, copies on the engine)
  if (ScanParams::is(e)) {
    const ScanParams sp = scan_params(e);
    double body = 0;
    for (const Eqn& b : sp.jaxpr->jaxpr->eqns) body += offload_estimate_seconds(b);
    return body * double(sp.length);
  }
  if (DotGeneralParams::is(e) && e.inputs.size() == 2) {
    // 2 M N K: twice the output's elements times the contracted extent.
    const ShapedArray& lhs = atom_aval(e.inputs[0]);
    const ShapedArray& out = e.outputs.at(0).aval();
    double k = 1;
    for (int64_t d : dot_general_params(e).dimension_numbers.lhs_contracting) k *= double(lhs.shape.at(size_t(d)));
    return 2.0 * double(out.size()) * k / kFlopsPerSecond;
  }
  double bytes = 0;
  for (const Atom& a : e.inputs) bytes += bytes_of(a);
  for (const Var& v : e.outputs) bytes += double(v.aval().nbytes());
  return bytes / kBytesPerSecond;
}

Jaxpr place_copies(const Jaxpr& j, const OffloadOptions& opts) {
  Jaxpr r = place_in_scope(j, opts);
  if (config().verify_jaxprs) verify_jaxpr(r);  // every value bound before its use, bodies too
  return r;
}

}  // namespace minijax

