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

// The collectives for one reshard of a value of global shape `global` (see the header).
Array lower_reshard(const Array& x, const Sharding& from, const Sharding& to, const Shape& global,
                    const Mesh& mesh, const std::string& what, SL loc) {
  auto fail = [&](const std::string& why) -> ShardingError {
    return ShardingError(what + " " + from.str() + " -> " + to.str() + " of shape " + shape_str(global) +
                             ": " + why,
                         loc);
  };
  if (from.memory_kind != to.memory_kind) {
    // A memory move (an out_sharding in another memory kind): the layout changes in device
    // memory (before the move off the device, after the move onto it), then device_put moves
    // each local shard; between two host kinds the layout changes in the source's kind.
    Sharding mid = to;
    mid.memory_kind = from.memory_kind;
    if (to.memory_kind == MemoryKind::device) {
      Sharding on_dev = from;
      on_dev.memory_kind = MemoryKind::device;
      return lower_reshard(lax::device_put(x, MemoryKind::device, loc), on_dev, to, global, mesh, what, loc);
    }
    return lax::device_put(lower_reshard(x, from, mid, global, mesh, what, loc), to.memory_kind, loc);
  }
  Shape from_local = local_shape(from, global, mesh, what, loc);
  Shape to_local = local_shape(to, global, mesh, what, loc);
  if (from.unreduced != to.unreduced) {
    if (!to.unreduced.empty()) throw fail("cannot turn values into partial sums");
    if (std::vector<AxisRef> merged = merged_unreduced(from.unreduced, mesh); merged != from.unreduced) {
      Sharding canonical = from;
      canonical.unreduced = std::move(merged);
      return lower_reshard(x, canonical, to, global, mesh, what, loc);
    }
    const auto& u = from.unreduced;
    for (auto& a : u)
      if (a.is_sub_axis()) throw fail("partial sums over a sub-axis");
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
  const size_t rank = global.size();
  // A dim that both releases and acquires axes (e.g. [{"x"}] -> [{"y"}], [{"x","y"}] ->
  // [{"y","x"}]) has no structured lowering here.
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
  // Such reshards, and sub-axes changing dims, follow the plan: one ragged_all_to_all (or a
  // collective_permute) over the whole mesh (sharding/lower_reshard_ragged.h).
  if (split || ragged) return lower_reshard_ragged(x, from, to, global, mesh, loc);
  // Here each dim only releases or only acquires whole axes (the cases above went ragged).
  std::vector<std::vector<AxisRef>> rel(rank), acq(rank);
  for (size_t d = 0; d < rank; ++d) {
    const auto& f = from.dims[d].axes;
    const auto& t = to.dims[d].axes;
    size_t k = 0;
    while (k < f.size() && k < t.size() && f[k] == t[k]) ++k;
    rel[d].assign(f.begin() + k, f.end());
    acq[d].assign(t.begin() + k, t.end());
  }
  std::set<std::string> released, acquired;
  for (size_t d = 0; d < rank; ++d) {
    for (auto& a : rel[d]) released.insert(a.name);
    for (auto& a : acq[d]) acquired.insert(a.name);
  }
  std::vector<AxisRef> moved, dropped;
  for (size_t d = 0; d < rank; ++d)
    for (auto& a : acq[d])
      if (released.count(a.name)) moved.push_back(a);
  for (size_t d = 0; d < rank; ++d)
    for (auto& a : rel[d])
      if (!acquired.count(a.name)) dropped.push_back(a);

  // The working array: per dim, acquired axis coordinates (major first) then the base block.
  std::vector<WDim> w;
  for (size_t d = 0; d < rank; ++d) {
    int64_t base = from_local[d];
    for (auto& a : acq[d]) {
      int64_t n = a.resolved_size(mesh);
      w.push_back({WDim::acquired, d, a.name, n});
      base /= n;
    }
    w.push_back({WDim::base, d, "", base});
  }
  Array y = reshape_to(x, sizes_of(w));
  // Acquired axes released nowhere: each device keeps its own block (axis_index).
  std::vector<Array> starts;
  Shape slice_sizes;
  bool any_new = false;
  for (auto& wd : w) {
    bool is_new = wd.kind == WDim::acquired && !released.count(wd.axis);
    starts.push_back(is_new ? lax::axis_index({wd.axis}) : lax::scalar(0, DType::i32));
    slice_sizes.push_back(is_new ? 1 : wd.size);
    if (is_new) wd.size = 1;
    any_new = any_new || is_new;
  }
  if (any_new) y = lax::dynamic_slice(y, starts, slice_sizes);
  // Moved axes: one all_to_all over all of them; block j (the target's coordinates) goes to
  // rank j, and the received blocks stack by the sender's coordinates (its released blocks).
  if (!moved.empty()) {
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
    y = reshape_to(y, sizes_of(w));
  }
  // Released axes acquired nowhere: one untiled all_gather stacks every block of them.
  if (!dropped.empty()) {
    int64_t n = size_of(dropped, mesh);
    y = lax::all_gather(y, names_of(dropped), n, 0, /*tiled=*/false);
    std::vector<WDim> nw;
    for (auto& a : dropped) nw.push_back({WDim::released, 0, a.name, a.resolved_size(mesh)});
    nw.insert(nw.end(), w.begin(), w.end());
    w = nw;
    y = reshape_to(y, sizes_of(w));
  }
  // Arrange: per dim, released coordinates (major first), leftover acquired dims, base block.
  std::vector<size_t> order;
  for (size_t d = 0; d < rank; ++d) {
    for (auto& a : rel[d])
      for (size_t i = 0; i < w.size(); ++i)
        if (w[i].kind == WDim::released && w[i].axis == a.name) order.push_back(i);
    for (size_t i = 0; i < w.size(); ++i)
      if (w[i].kind == WDim::acquired && w[i].dim == d) order.push_back(i);
    for (size_t i = 0; i < w.size(); ++i)
      if (w[i].kind == WDim::base && w[i].dim == d) order.push_back(i);
  }
  if (order.size() != w.size()) throw fail("internal: working dims do not match");
  y = permute(y, w, order);
  return reshape_to(y, to_local);
}

// iota along a sharded dim: the local iota plus the device's first global index there, i.e. its
// shard index along the dim (mixed radix over the dim's axes, major first; a sub-axis
// "a":(pre)k is (axis_index(a) / (n / (pre k))) % k) times the local size.
Array offset_iota(const Array& local, const Sharding& s, size_t dim, const Mesh& mesh) {
  const auto& axes = s.dims.at(dim).axes;
  if (axes.empty()) return local;
  auto i32 = [](int64_t v) { return lax::scalar(double(v), DType::i32); };
  Array shard = i32(0);
  for (auto& a : axes) {
    Array c = lax::axis_index({a.name});
    if (a.is_sub_axis())
      c = lax::rem(lax::div(c, i32(mesh.axis_size(a.name) / (a.pre_size * a.size))), i32(a.size));
    shard = lax::add(lax::mul(shard, i32(a.resolved_size(mesh))), c);
  }
  Array off = lax::convert_element_type(lax::mul(shard, i32(local.shape().at(dim))), local.dtype());
  return lax::add(local, lax::broadcast_in_dim(off, local.shape(), {}));
}

// Checks that the shardings an equation runs with agree with its factor rule (see the header).
void check_agreement(const Jaxpr& j, size_t i, const FactorRule& rule,
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
  bool linear = e.primitive->name == "add" || e.primitive->name == "sub" || e.primitive->name == "neg";
  std::vector<AxisRef> in_unreduced = ins.empty() ? std::vector<AxisRef>{} : ins[0].unreduced;
  for (auto& s : ins) {
    if (s.unreduced.empty()) continue;
    if (!linear || s.unreduced != in_unreduced)
      throw fail("an operand holds partial sums (unreduced) that this equation cannot consume");
  }
  std::vector<AxisRef> want = red;
  if (linear) want.insert(want.end(), in_unreduced.begin(), in_unreduced.end());
  for (auto& s : outs)
    if (merged_unreduced(s.unreduced, *s.mesh) != merged_unreduced(want, *s.mesh))
      throw fail("result unreduced axes differ from the sharded reduction factors' axes");
}

}  // namespace

Jaxpr partition_spmd(const Jaxpr& jaxpr, const PropagationResult& shardings, const Mesh& mesh, SL loc) {
  std::vector<Var> inputs = jaxpr.constvars;
  inputs.insert(inputs.end(), jaxpr.invars.begin(), jaxpr.invars.end());
  // A body input resharded at the body's start (partition_bodies.h) arrives in `from`.
  std::map<size_t, const ReshardPlacement*> at_input;
  for (auto& r : shardings.reshards_in(jaxpr))
    if (r.on_input) at_input[jaxpr.constvars.size() + r.index] = &r;
  std::vector<ShapedArray> in_avals;
  for (size_t k = 0; k < inputs.size(); ++k) {
    ShapedArray a = inputs[k].aval();
    auto it = at_input.find(k);
    a.shape = local_shape(it != at_input.end() ? it->second->from : shardings.of(inputs[k]), a.shape, mesh,
                          "input " + std::to_string(k) + " (its given or propagated sharding)", loc);
    in_avals.push_back(a);
  }
  // Reshards by position: (eqn, operand) before, (eqn, result) after, output index.
  std::map<std::pair<size_t, size_t>, const ReshardPlacement*> before, after;
  std::map<size_t, const ReshardPlacement*> at_output;
  for (auto& r : shardings.reshards_in(jaxpr)) {
    if (r.on_input) continue;
    if (r.on_output) at_output[r.index] = &r;
    else if (r.on_result) after[{r.eqn, r.index}] = &r;
    else before[{r.eqn, r.index}] = &r;
  }
  auto reshard_name = [&](const ReshardPlacement& r) {
    std::string where = r.on_output ? "at output " + std::to_string(r.index)
                        : r.on_result ? "after result " + std::to_string(r.index) + " of equation " +
                                            std::to_string(r.eqn)
                                      : "before operand " + std::to_string(r.index) + " of equation " +
                                            std::to_string(r.eqn);
    return "reshard " + where;
  };
  FlatFn body = [&](const std::vector<Array>& args) {
    std::unordered_map<Var, Array, VarHash> env;
    std::map<std::pair<uint64_t, std::string>, Array> resharded;  // (variable, target) -> value
    for (size_t k = 0; k < inputs.size(); ++k) env[inputs[k]] = args[k];
    for (auto& [k, r] : at_input)
      env[inputs[k]] = lower_reshard(args[k], r->from, r->to, inputs[k].aval().shape, mesh,
                                     "reshard at body input " + std::to_string(r->index), loc);
    auto read = [&](const Atom& a) -> Array {
      if (auto* l = std::get_if<Literal>(&a)) return l->value;
      return env.at(std::get<Var>(a));
    };
    for (size_t i = 0; i < jaxpr.eqns.size(); ++i) {
      const Eqn& e = jaxpr.eqns[i];
      std::vector<Array> ops;
      std::vector<Sharding> in_sh, out_sh;
      for (size_t k = 0; k < e.inputs.size(); ++k) {
        Array v = read(e.inputs[k]);
        Var var = atom_var(e.inputs[k]);
        Sharding s = var.defined() ? shardings.of(var)
                         : Sharding::replicated_on(
                               std::shared_ptr<const Mesh>(std::shared_ptr<const Mesh>{}, &mesh),
                               int64_t(atom_aval(e.inputs[k]).shape.size()));
        auto it = before.find({i, k});
        if (it != before.end()) {
          // A value resharded to the same target before an earlier operand is reused.
          auto [at, fresh] = resharded.try_emplace({var.defined() ? var.id() : 0, it->second->to.str()});
          if (fresh || !var.defined())
            at->second = lower_reshard(v, it->second->from, it->second->to, atom_aval(e.inputs[k]).shape, mesh,
                                       reshard_name(*it->second), loc);
          v = at->second;
          s = it->second->to;
        }
        ops.push_back(v);
        in_sh.push_back(s);
      }
      for (size_t k = 0; k < e.outputs.size(); ++k) {
        auto it = after.find({i, k});
        out_sh.push_back(it != after.end() ? it->second->from : shardings.of(e.outputs[k]));
      }
      if (!partitions_bodies(e)) check_agreement(jaxpr, i, sharding_rule_of(e), in_sh, out_sh, loc);
      std::vector<ShapedArray> want;
      for (size_t k = 0; k < e.outputs.size(); ++k) {
        ShapedArray a = e.outputs[k].aval();
        a.shape = local_shape(out_sh[k], a.shape, mesh, "equation " + std::to_string(i), loc);
        want.push_back(a);
      }
      Params params = e.params;
      const std::string& name = e.primitive->name;
      if (name == "broadcast_in_dim" || name == "iota")
        params.set("shape", std::vector<int64_t>(want[0].shape));
      if (name == "reshape") params.set("new_sizes", std::vector<int64_t>(want[0].shape));
      // slice's limits and dynamic_slice's/gather's slice sizes on the dims the rule lets be
      // sharded (kept whole: the size is the operand's) become the local operand sizes.
      if (name == "slice" || name == "dynamic_slice" || name == "gather") {
        const std::string key = name == "slice" ? "limit_indices" : "slice_sizes";
        const Shape& global = atom_aval(e.inputs[0]).shape;
        std::vector<int64_t> v = e.params.get_ints(key);
        for (size_t d = 0; d < v.size() && d < global.size(); ++d)
          if (v[d] == global[d]) v[d] = ops[0].shape()[d];
        params.set(key, v);
      }
      // sharding_constraint: identity on the local value (its reshard is already placed), moved
      // to the constraint's memory kind when it names another one (device_put of a concrete
      // value under jit binds the constraint alone, with no device_put equation before it).
      std::vector<Array> res = name == "sharding_constraint" ? std::vector<Array>{ops[0]}
                               : partitions_bodies(e) ? partition_body_eqn(e, ops, shardings, mesh, loc)
                                                      : minijax::bind(*e.primitive, ops, params, loc);
      if (name == "sharding_constraint" && res[0].memory_kind() != want[0].memory_kind)
        res[0] = lax::device_put(res[0], want[0].memory_kind, loc);
      if (name == "iota")
        res[0] = offset_iota(res[0], out_sh[0], size_t(e.params.get_int("dimension")), mesh);
      for (size_t k = 0; k < res.size(); ++k) {
        if (res[k].aval().shape != want[k].shape || res[k].aval().dtype != want[k].dtype)
          throw ShardingError("equation " + std::to_string(i) + " (" + eqn_to_string(jaxpr, i) +
                                  "): local result " + res[k].aval().str() + " differs from the shard " +
                                  want[k].str() + " of " + out_sh[k].str(),
                              loc);
        auto it = after.find({i, k});
        if (it != after.end())
          res[k] = lower_reshard(res[k], it->second->from, it->second->to, e.outputs[k].aval().shape,
                                 mesh, reshard_name(*it->second), loc);
        env[e.outputs[k]] = res[k];
      }
    }
    std::vector<Array> outs;
    for (size_t k = 0; k < jaxpr.outvars.size(); ++k) {
      Array v = read(jaxpr.outvars[k]);
      auto it = at_output.find(k);
      if (it != at_output.end())
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
