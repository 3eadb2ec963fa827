// minijax SPMD partitioner: local avals, rule-agreement checks, shape params, and the lowering
// of reshards to all_reduce / reduce_scatter / all_to_all / all_gather / dynamic_slice.
#include "sharding/partition_spmd.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/collectives.h"
#include "core/dce.h"
#include "core/errors.h"
#include "core/lax.h"
#include "core/staging.h"
#include "core/trace.h"
#include "sharding/factor_projection.h"
#include "sharding/partition_bodies.h"
#include "sharding/partition_rule.h"
#include "sharding/lower_reshard_ragged.h"
#include "sharding/plan_reshard.h"
#include "sharding/propagate_detail.h"
#include "sharding/sharding_rule.h"

namespace minijax {
namespace {

using SL = std::source_location;

Shape local_shape(const Sharding& s, const Shape& global, const Mesh& mesh, const std::string& what,
                  SL loc) {
  if (s.dims.size() != global.size())
    throw ShardingError(what + ": sharding " + s.str() + " does not match shape " + shape_str(global),
                        loc);
  Shape out(global.size());
  for (size_t d = 0; d < global.size(); ++d) {
    int64_t n = s.dims[d].num_shards(mesh);
    if (global[d] % n != 0)
      throw ShardingError(what + ": dim " + std::to_string(d) + " of shape " + shape_str(global) +
                              " does not divide evenly into " + std::to_string(n) + " shards of " +
                              s.str() + " on " + mesh.str() + " (" +
                              std::to_string(mesh.num_devices()) +
                              " devices; uneven shards are not supported by partition_spmd)",
                          loc);
    out[d] = global[d] / n;
  }
  return out;
}

AxisNames names_of(const std::vector<AxisRef>& axes) {
  AxisNames out;
  for (auto& a : axes) out.push_back(a.name);
  return out;
}

int64_t size_of(const std::vector<AxisRef>& axes, const Mesh& mesh) {
  int64_t n = 1;
  for (auto& a : axes) n *= a.resolved_size(mesh);
  return n;
}

// One dim of the working array during a reshard: the block of global dim `dim` (base), or the
// coordinate along `axis` (acquired: the target's split, released: the source's blocks).
struct WDim {
  enum Kind { base, acquired, released } kind;
  size_t dim;
  std::string axis;
  int64_t size;
};

Shape sizes_of(const std::vector<WDim>& w) {
  Shape s;
  for (auto& d : w) s.push_back(d.size);
  return s;
}

Array permute(const Array& x, std::vector<WDim>& w, const std::vector<size_t>& order) {
  std::vector<int64_t> perm(order.begin(), order.end());
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  std::vector<WDim> nw;
  for (size_t i : order) nw.push_back(w[i]);
  w = nw;
  return identity ? x : lax::transpose(x, perm);
}

Array reshape_to(const Array& x, const Shape& s) { return x.shape() == s ? x : lax::reshape(x, s); }

// Unreduced axes in a canonical order (by axis, then major sub-axis first) with adjacent sub-axes
// of one axis merged: partial sums over "x":(1)2 and "x":(2)2 are partial sums over "x" (a sum
// does not depend on the order its parts are added in), so they are reduced over the whole axis.
std::vector<AxisRef> merged_unreduced(std::vector<AxisRef> v, const Mesh& mesh) {
  std::sort(v.begin(), v.end(), [](const AxisRef& a, const AxisRef& b) {
    return std::tie(a.name, a.pre_size, a.size) < std::tie(b.name, b.pre_size, b.size);
  });
  return prop_detail::normalize(v, mesh);
}

Array lower_reshard(const Array& x, const Sharding& from, const Sharding& to, const Shape& global,
                    const Mesh& mesh, const std::string& what, SL loc);

// The error of the reshard `from` -> `to` of `what`, saying why it cannot be lowered.
ShardingError reshard_error(const Sharding& from, const Sharding& to, const Shape& global,
                            const std::string& what, const std::string& why, SL loc) {
  return ShardingError(what + " " + from.str() + " -> " + to.str() + " of shape " + shape_str(global) +
                           ": " + why,
                       loc);
}

// A reshard between memory kinds (an out_sharding in another memory kind): the layout changes in
// device memory (before the move off the device, after the move onto it), then device_put moves
// each local shard; between two host kinds the layout changes in the source's kind.
Array lower_memory_move(const Array& x, const Sharding& from, const Sharding& to, const Shape& global,
                        const Mesh& mesh, const std::string& what, SL loc) {
  Sharding mid = to;
  mid.memory_kind = from.memory_kind;
  if (to.memory_kind == MemoryKind::device) {
    Sharding on_dev = from;
    on_dev.memory_kind = MemoryKind::device;
    return lower_reshard(lax::device_put(x, MemoryKind::device, loc), on_dev, to, global, mesh, what, loc);
  }
  return lax::device_put(lower_reshard(x, from, mid, global, mesh, what, loc), to.memory_kind, loc);
}

// A reshard whose unreduced axes change (partial sums reduced): all_reduce to the same dims,
// reduce_scatter onto one dim, else the planner's cheapest reduction and then the rest.
Array lower_partial_sums(const Array& x, const Sharding& from, const Sharding& to, const Shape& global,
                         const Shape& from_local, const Mesh& mesh, const std::string& what, SL loc) {
  if (!to.unreduced.empty()) throw reshard_error(from, to, global, what, "cannot turn values into partial sums", loc);
  if (std::vector<AxisRef> merged = merged_unreduced(from.unreduced, mesh); merged != from.unreduced) {
    Sharding canonical = from;
    canonical.unreduced = std::move(merged);
    return lower_reshard(x, canonical, to, global, mesh, what, loc);
  }
  const auto& u = from.unreduced;
  for (auto& a : u)
    if (a.is_sub_axis()) throw reshard_error(from, to, global, what, "partial sums over a sub-axis", loc);
  std::vector<size_t> differing;
  for (size_t d = 0; d < global.size(); ++d)
    if (from.dims[d].axes != to.dims[d].axes) differing.push_back(d);
  if (differing.empty()) return lax::all_reduce(x, names_of(u), size_of(u, mesh), "sum");
  if (differing.size() == 1) {
    size_t d = differing[0];
    auto expect = from.dims[d].axes;
    expect.insert(expect.end(), u.begin(), u.end());
    if (to.dims[d].axes == expect)
      return lax::reduce_scatter(x, names_of(u), size_of(u, mesh), int64_t(d));
  }
  // Otherwise the planner's cheapest reduction (sharding/plan_reshard.h): a reduce_scatter onto
  // an intermediate (when it divides evenly) or the all_reduce, then the move to `to`.
  const ReshardStep s0 = plan_reshard(from, to, ShapedArray{global, x.dtype()}, loc).steps.at(0);
  const int64_t k = size_of(s0.axes, mesh);
  if (s0.kind == ReshardKind::reduce_scatter && from_local[size_t(s0.split_dim)] % k == 0)
    return lower_reshard(lax::reduce_scatter(x, names_of(s0.axes), k, s0.split_dim), s0.to, to, global,
                         mesh, what, loc);
  Sharding reduced = from;
  reduced.unreduced.clear();
  return lower_reshard(lax::all_reduce(x, names_of(u), size_of(u, mesh), "sum"), reduced, to, global, mesh,
                       what, loc);
}

// Whether the reshard needs the ragged lowering: a dim that both releases and acquires axes
// (e.g. [{"x"}] -> [{"y"}], [{"x","y"}] -> [{"y","x"}]) has no structured lowering here, nor
// do sub-axes changing dims.
bool needs_ragged(const Sharding& from, const Sharding& to, size_t rank) {
  bool split = false, ragged = false;
  for (size_t d = 0; d < rank; ++d) {
    const auto& f = from.dims[d].axes;
    const auto& t = to.dims[d].axes;
    size_t k = 0;
    while (k < f.size() && k < t.size() && f[k] == t[k]) ++k;
    if (k < f.size() && k < t.size()) split = true;
    for (size_t i = k; i < f.size(); ++i) ragged = ragged || f[i].is_sub_axis();
    for (size_t i = k; i < t.size(); ++i) ragged = ragged || t[i].is_sub_axis();
  }
  return split || ragged;
}

// Per dim, the axes after the common prefix that the source releases and the target acquires;
// the axes that move between dims (acquired and released somewhere) and those dropped
// (released and acquired nowhere).
struct AxisMoves {
  std::vector<std::vector<AxisRef>> rel, acq;
  std::set<std::string> released, acquired;
  std::vector<AxisRef> moved, dropped;
};

AxisMoves axis_moves(const Sharding& from, const Sharding& to, size_t rank) {
  AxisMoves mv;
  mv.rel.resize(rank);
  mv.acq.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    const auto& f = from.dims[d].axes;
    const auto& t = to.dims[d].axes;
    size_t k = 0;
    while (k < f.size() && k < t.size() && f[k] == t[k]) ++k;
    mv.rel[d].assign(f.begin() + k, f.end());
    mv.acq[d].assign(t.begin() + k, t.end());
  }
  for (size_t d = 0; d < rank; ++d) {
    for (auto& a : mv.rel[d]) mv.released.insert(a.name);
    for (auto& a : mv.acq[d]) mv.acquired.insert(a.name);
  }
  for (size_t d = 0; d < rank; ++d)
    for (auto& a : mv.acq[d])
      if (mv.released.count(a.name)) mv.moved.push_back(a);
  for (size_t d = 0; d < rank; ++d)
    for (auto& a : mv.rel[d])
      if (!mv.acquired.count(a.name)) mv.dropped.push_back(a);
  return mv;
}

// Acquired axes released nowhere: each device keeps its own block (a dynamic_slice at
// axis_index); their working dims shrink to 1.
Array slice_new_axes(const Array& y, std::vector<WDim>& w, const AxisMoves& mv) {
  std::vector<Array> starts;
  Shape slice_sizes;
  bool any_new = false;
  for (auto& wd : w) {
    bool is_new = wd.kind == WDim::acquired && !mv.released.count(wd.axis);
    starts.push_back(is_new ? lax::axis_index({wd.axis}) : lax::scalar(0, DType::i32));
    slice_sizes.push_back(is_new ? 1 : wd.size);
    if (is_new) wd.size = 1;
    any_new = any_new || is_new;
  }
  return any_new ? lax::dynamic_slice(y, starts, slice_sizes) : y;
}

// Moved axes: one all_to_all over all of them; block j (the target's coordinates) goes to rank
// j, and the received blocks stack by the sender's coordinates (its released blocks).
Array exchange_moved_axes(Array y, std::vector<WDim>& w, const AxisMoves& mv, const Mesh& mesh) {
  const auto& moved = mv.moved;
  std::vector<size_t> order;
  for (auto& m : moved)
    for (size_t i = 0; i < w.size(); ++i)
      if (w[i].kind == WDim::acquired && w[i].axis == m.name) order.push_back(i);
  for (size_t i = 0; i < w.size(); ++i)
    if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  y = permute(y, w, order);
  std::vector<WDim> rest(w.begin() + int64_t(moved.size()), w.end());
  int64_t n = size_of(moved, mesh);
  Shape merged{n};
  for (auto& r : rest) merged.push_back(r.size);
  y = reshape_to(y, merged);
  y = lax::all_to_all(y, names_of(moved), n, 0, 0);
  w.clear();
  for (auto& m : moved) w.push_back({WDim::released, 0, m.name, m.resolved_size(mesh)});
  w.insert(w.end(), rest.begin(), rest.end());
  return reshape_to(y, sizes_of(w));
}

// Released axes acquired nowhere: one untiled all_gather stacks every block of them.
Array gather_dropped_axes(Array y, std::vector<WDim>& w, const AxisMoves& mv, const Mesh& mesh) {
  int64_t n = size_of(mv.dropped, mesh);
  y = lax::all_gather(y, names_of(mv.dropped), n, 0, /*tiled=*/false);
  std::vector<WDim> nw;
  for (auto& a : mv.dropped) nw.push_back({WDim::released, 0, a.name, a.resolved_size(mesh)});
  nw.insert(nw.end(), w.begin(), w.end());
  w = nw;
  return reshape_to(y, sizes_of(w));
}

// A reshard where each dim only releases or only acquires whole axes: the working array (per
// dim, acquired axis coordinates, major first, then the base block) is sliced, exchanged,
// gathered, then arranged into the target's local shape.
Array lower_whole_axes(const Array& x, const Sharding& from, const Sharding& to, const Shape& global,
                       const Shape& from_local, const Shape& to_local, const Mesh& mesh,
                       const std::string& what, SL loc) {
  const size_t rank = global.size();
  const AxisMoves mv = axis_moves(from, to, rank);
  std::vector<WDim> w;
  for (size_t d = 0; d < rank; ++d) {
    int64_t base = from_local[d];
    for (auto& a : mv.acq[d]) {
      int64_t n = a.resolved_size(mesh);
      w.push_back({WDim::acquired, d, a.name, n});
      base /= n;
    }
    w.push_back({WDim::base, d, "", base});
  }
  Array y = slice_new_axes(reshape_to(x, sizes_of(w)), w, mv);
  if (!mv.moved.empty()) y = exchange_moved_axes(y, w, mv, mesh);
  if (!mv.dropped.empty()) y = gather_dropped_axes(y, w, mv, mesh);
  // Arrange: per dim, released coordinates (major first), leftover acquired dims, base block.
  std::vector<size_t> order;
  for (size_t d = 0; d < rank; ++d) {
    for (auto& a : mv.rel[d])
      for (size_t i = 0; i < w.size(); ++i)
        if (w[i].kind == WDim::released && w[i].axis == a.name) order.push_back(i);
    for (size_t i = 0; i < w.size(); ++i)
      if (w[i].kind == WDim::acquired && w[i].dim == d) order.push_back(i);
    for (size_t i = 0; i < w.size(); ++i)
      if (w[i].kind == WDim::base && w[i].dim == d) order.push_back(i);
  }
  if (order.size() != w.size())
    throw reshard_error(from, to, global, what, "internal: working dims do not match", loc);
  y = permute(y, w, order);
  return reshape_to(y, to_local);
}

// The collectives for one reshard of a value of global shape `global` (see the header).
Array lower_reshard(const Array& x, const Sharding& from, const Sharding& to, const Shape& global,
                    const Mesh& mesh, const std::string& what, SL loc) {
  if (from.memory_kind != to.memory_kind) return lower_memory_move(x, from, to, global, mesh, what, loc);
  Shape from_local = local_shape(from, global, mesh, what, loc);
  Shape to_local = local_shape(to, global, mesh, what, loc);
  if (from.unreduced != to.unreduced) return lower_partial_sums(x, from, to, global, from_local, mesh, what, loc);
  // Such reshards, and sub-axes changing dims, follow the plan: one ragged_all_to_all (or a
  // collective_permute) over the whole mesh (sharding/lower_reshard_ragged.h).
  if (needs_ragged(from, to, global.size())) return lower_reshard_ragged(x, from, to, global, mesh, loc);
  // Here each dim only releases or only acquires whole axes (the cases above went ragged).
  return lower_whole_axes(x, from, to, global, from_local, to_local, mesh, what, loc);
}

// Checks that the shardings an equation runs with agree with its factor rule (see the header).
// Returns the axes its sharded reduction factors hold.
std::vector<AxisRef> check_agreement(const Jaxpr& j, size_t i, const FactorRule& rule,
                                     const std::vector<Sharding>& ins, const std::vector<Sharding>& outs, SL loc) {
  const Eqn& e = j.eqns[i];
  auto fail = [&](const std::string& why) -> ShardingError {
    std::string s = "equation " + std::to_string(i) + " (" + eqn_to_string(j, i) + "): " + why +
                    "; rule " + rule.str() + "; operands";
    for (auto& x : ins) s += " " + x.str();
    s += "; results";
    for (auto& x : outs) s += " " + x.str();
    return ShardingError(s, loc);
  };
  // Each dim's axes are dealt to its factors as propagation projects them (major first, sub-axes
  // by gcd); a minor factor may hold axes only when every factor before it is fully sharded
  // (else the dim's shards are not contiguous blocks of the reshaped array).
  std::map<int, std::vector<AxisRef>> assigned;
  auto visit = [&](const std::vector<std::vector<std::vector<int>>>& dims,
                   const std::vector<Sharding>& shs) {
    for (size_t t = 0; t < shs.size() && t < dims.size(); ++t)
      for (size_t d = 0; d < dims[t].size(); ++d) {
        const auto& fs = dims[t][d];
        const auto& axes = shs[t].dims[d].axes;
        if (fs.empty()) {
          if (!axes.empty()) throw fail("a dim without factors is sharded");
          continue;
        }
        const Mesh& m = *shs[t].mesh;
        auto parts = project_dim_axes(axes, fs, rule.factor_sizes, m);
        int64_t dealt = 1;
        bool full = true;  // every factor before k is fully sharded
        for (size_t k = 0; k < fs.size(); ++k) {
          if (!parts[k].empty() && !full)
            throw fail("a reshaped dim is sharded on a minor factor while a major one is not fully sharded");
          int64_t n = 1;
          for (auto& a : parts[k]) n *= a.resolved_size(m);
          full = n == rule.factor_sizes[size_t(fs[k])];
          dealt *= n;
          auto it = assigned.find(fs[k]);
          if (it == assigned.end()) assigned[fs[k]] = parts[k];
          else if (it->second != parts[k])
            throw fail("factor " + std::to_string(fs[k]) + " is sharded differently in two places");
        }
        if (dealt != shs[t].dims[d].num_shards(m)) throw fail("the axes of a dim do not divide among its factors");
      }
  };
  visit(rule.operand_dims, ins);
  visit(rule.result_dims, outs);
  for (int f : rule.need_replication_factors)
    if (!assigned[f].empty()) throw fail("a need-replication factor is sharded");
  std::vector<AxisRef> red;
  for (int f : rule.reduction_factors) red.insert(red.end(), assigned[f].begin(), assigned[f].end());
  const PartitionRule* prule = partition_rule_of(e);
  const bool linear = prule && prule->sums_partial_sums;
  std::vector<AxisRef> in_unreduced = ins.empty() ? std::vector<AxisRef>{} : ins[0].unreduced;
  for (auto& s : ins) {
    if (s.unreduced.empty()) continue;
    if (!linear || s.unreduced != in_unreduced)
      throw fail("an operand holds partial sums (unreduced) that this equation cannot consume");
  }
  // A rule completed in place (reduce_and/or/xor) leaves no partial sums.
  std::vector<AxisRef> want = rule.completed_by.empty() ? red : std::vector<AxisRef>{};
  if (linear) want.insert(want.end(), in_unreduced.begin(), in_unreduced.end());
  for (auto& s : outs)
    if (merged_unreduced(s.unreduced, *s.mesh) != merged_unreduced(want, *s.mesh))
      throw fail("result unreduced axes differ from the sharded reduction factors' axes");
  for (auto& a : red)
    if (!rule.completed_by.empty() && a.is_sub_axis())
      throw fail("a reduction completed by all_reduce(" + rule.completed_by + ") over a sub-axis");
  return red;
}

// The reshards of one jaxpr by position: (eqn, operand) before, (eqn, result) after, output
// index, and body input (arriving in `from`, resharded at the body's start: partition_bodies.h).
struct PlacedReshards {
  std::map<size_t, const ReshardPlacement*> at_input;  // by position in constvars then invars
  std::map<std::pair<size_t, size_t>, const ReshardPlacement*> before, after;
  std::map<size_t, const ReshardPlacement*> at_output;
};

PlacedReshards index_reshards(const Jaxpr& jaxpr, const PropagationResult& shardings) {
  PlacedReshards pr;
  for (auto& r : shardings.reshards_in(jaxpr))
    if (r.on_input) pr.at_input[jaxpr.constvars.size() + r.index] = &r;
  for (auto& r : shardings.reshards_in(jaxpr)) {
    if (r.on_input) continue;
    if (r.on_output) pr.at_output[r.index] = &r;
    else if (r.on_result) pr.after[{r.eqn, r.index}] = &r;
    else pr.before[{r.eqn, r.index}] = &r;
  }
  return pr;
}

// The local avals of the partitioned program's inputs (constvars then invars): each shard of
// its given or propagated sharding, or of the sharding a body input arrives in.
std::vector<ShapedArray> local_input_avals(const std::vector<Var>& inputs, const PlacedReshards& pr,
                                           const PropagationResult& shardings, const Mesh& mesh, SL loc) {
  std::vector<ShapedArray> in_avals;
  for (size_t k = 0; k < inputs.size(); ++k) {
    ShapedArray a = inputs[k].aval();
    auto it = pr.at_input.find(k);
    a.shape = local_shape(it != pr.at_input.end() ? it->second->from : shardings.of(inputs[k]), a.shape, mesh,
                          "input " + std::to_string(k) + " (its given or propagated sharding)", loc);
    in_avals.push_back(a);
  }
  return in_avals;
}

// The name of a reshard in errors: where it is placed.
std::string reshard_name(const ReshardPlacement& r) {
  std::string where = r.on_output ? "at output " + std::to_string(r.index)
                      : r.on_result ? "after result " + std::to_string(r.index) + " of equation " +
                                          std::to_string(r.eqn)
                                    : "before operand " + std::to_string(r.index) + " of equation " +
                                          std::to_string(r.eqn);
  return "reshard " + where;
}

// What partitioning one jaxpr reads (the program, its shardings and reshards) and the values
// traced so far.
struct Partitioner {
  const Jaxpr& jaxpr;
  const PropagationResult& shardings;
  const Mesh& mesh;
  SL loc;
  const PlacedReshards& pr;
  std::unordered_map<Var, Array, VarHash> env;
  std::map<std::pair<uint64_t, std::string>, Array> resharded;  // (variable, target) -> value

  Array read(const Atom& a) const {
    if (auto* l = std::get_if<Literal>(&a)) return l->value;
    return env.at(std::get<Var>(a));
  }
};

// The local operands of equation `i` (after the reshards placed before it; a value resharded
// to the same target before an earlier operand is reused) and the shardings they hold.
void local_operands(Partitioner& p, size_t i, std::vector<Array>& ops, std::vector<Sharding>& in_sh) {
  const Eqn& e = p.jaxpr.eqns[i];
  for (size_t k = 0; k < e.inputs.size(); ++k) {
    Array v = p.read(e.inputs[k]);
    Var var = atom_var(e.inputs[k]);
    Sharding s = var.defined() ? p.shardings.of(var)
                     : Sharding::replicated_on(
                           std::shared_ptr<const Mesh>(std::shared_ptr<const Mesh>{}, &p.mesh),
                           int64_t(atom_aval(e.inputs[k]).shape.size()));
    auto it = p.pr.before.find({i, k});
    if (it != p.pr.before.end()) {
      // A value resharded to the same target before an earlier operand is reused.
      auto [at, fresh] = p.resharded.try_emplace({var.defined() ? var.id() : 0, it->second->to.str()});
      if (fresh || !var.defined())
        at->second = lower_reshard(v, it->second->from, it->second->to, atom_aval(e.inputs[k]).shape, p.mesh,
                                   reshard_name(*it->second), p.loc);
      v = at->second;
      s = it->second->to;
    }
    ops.push_back(v);
    in_sh.push_back(s);
  }
}

// Binds equation `i` on local values: its operands resharded, its shardings checked against its
// rule, re-bound (bodies partitioned recursively), its local results checked against the
// sharded avals and resharded after it; the results go to the environment.
void partition_eqn(Partitioner& p, size_t i) {
  const Eqn& e = p.jaxpr.eqns[i];
  std::vector<Array> ops;
  std::vector<Sharding> in_sh, out_sh;
  local_operands(p, i, ops, in_sh);
  for (size_t k = 0; k < e.outputs.size(); ++k) {
    auto it = p.pr.after.find({i, k});
    out_sh.push_back(it != p.pr.after.end() ? it->second->from : p.shardings.of(e.outputs[k]));
  }
  std::string completed_by;  // the all_reduce completing the local results (FactorRule::completed_by)
  std::vector<AxisRef> reduced;
  if (!partitions_bodies(e)) {
    const FactorRule rule = sharding_rule_of(e);
    reduced = check_agreement(p.jaxpr, i, rule, in_sh, out_sh, p.loc);
    completed_by = rule.completed_by;
  }
  std::vector<ShapedArray> want;
  for (size_t k = 0; k < e.outputs.size(); ++k) {
    ShapedArray a = e.outputs[k].aval();
    a.shape = local_shape(out_sh[k], a.shape, p.mesh, "equation " + std::to_string(i), p.loc);
    want.push_back(a);
  }
  // The primitive's partition rule (sharding/partition_rule.h) says what depends on the global
  // shape: its params' sizes, a bind of its own, a completion of the local result.
  const PartitionRule* rule = partition_rule_of(e);
  std::vector<Array> res;
  if (rule && rule->bind_local)
    res = rule->bind_local(e, ops, want, p.loc);
  else if (partitions_bodies(e))
    res = partition_body_eqn(e, ops, p.shardings, p.mesh, p.loc);
  else
    res = minijax::bind(*e.primitive, ops, rule && rule->local_params ? rule->local_params(e, ops, want) : e.params,
                        p.loc);
  if (rule && rule->finish_local)
    for (size_t k = 0; k < res.size(); ++k) res[k] = rule->finish_local(e, k, res[k], out_sh[k], p.mesh);
  if (!completed_by.empty() && !reduced.empty())
    for (Array& r : res) r = lax::all_reduce(r, names_of(reduced), size_of(reduced, p.mesh), completed_by, p.loc);
  for (size_t k = 0; k < res.size(); ++k) {
    if (res[k].aval().shape != want[k].shape || res[k].aval().dtype != want[k].dtype)
      throw ShardingError("equation " + std::to_string(i) + " (" + eqn_to_string(p.jaxpr, i) +
                              "): local result " + res[k].aval().str() + " differs from the shard " +
                              want[k].str() + " of " + out_sh[k].str(),
                          p.loc);
    auto it = p.pr.after.find({i, k});
    if (it != p.pr.after.end())
      res[k] = lower_reshard(res[k], it->second->from, it->second->to, e.outputs[k].aval().shape,
                             p.mesh, reshard_name(*it->second), p.loc);
    p.env[e.outputs[k]] = res[k];
  }
}

}  // namespace

Jaxpr partition_spmd(const Jaxpr& jaxpr, const PropagationResult& shardings, const Mesh& mesh, SL loc) {
  std::vector<Var> inputs = jaxpr.constvars;
  inputs.insert(inputs.end(), jaxpr.invars.begin(), jaxpr.invars.end());
  const PlacedReshards pr = index_reshards(jaxpr, shardings);
  std::vector<ShapedArray> in_avals = local_input_avals(inputs, pr, shardings, mesh, loc);
  FlatFn body = [&](const std::vector<Array>& args) {
    Partitioner p{jaxpr, shardings, mesh, loc, pr, {}, {}};
    for (size_t k = 0; k < inputs.size(); ++k) p.env[inputs[k]] = args[k];
    for (auto& [k, r] : pr.at_input)
      p.env[inputs[k]] = lower_reshard(args[k], r->from, r->to, inputs[k].aval().shape, mesh,
                                       "reshard at body input " + std::to_string(r->index), loc);
    for (size_t i = 0; i < jaxpr.eqns.size(); ++i) partition_eqn(p, i);
    std::vector<Array> outs;
    for (size_t k = 0; k < jaxpr.outvars.size(); ++k) {
      Array v = p.read(jaxpr.outvars[k]);
      auto it = pr.at_output.find(k);
      if (it != pr.at_output.end())
        v = lower_reshard(v, it->second->from, it->second->to, atom_aval(jaxpr.outvars[k]).shape, mesh,
                          reshard_name(*it->second), loc);
      outs.push_back(v);
    }
    return outs;
  };
  ClosedJaxpr cj = trace_to_jaxpr(body, in_avals, loc);
  if (!cj.consts.empty())
    throw ShardingError("partition_spmd: the partitioned program captured constants", loc);
  // The trace records every bound equation, including those whose results nothing reads (e.g. a
  // dead equation of the input left at its propagated, possibly replicated, shape): drop them so
  // no device allocates them. All inputs stay (the caller passes every argument).
  return dce_jaxpr(*cj.jaxpr, std::vector<bool>(cj.jaxpr->outvars.size(), true), true).first;
}

}  // namespace minijax
