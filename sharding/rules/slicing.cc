// minijax sharding rules of slicing and indexing: slice, dynamic_slice, dynamic_update_slice,
// concatenate, pad, gather and the scatter family.
#include <algorithm>

#include "core/lax.h"
#include "core/lax_params.h"
#include "core/primitive.h"
#include "core/views/array_ops.h"
#include "core/views/gather_scatter.h"
#include "sharding/partition_rule.h"
#include "sharding/rules/rule_builder.h"

namespace minijax::sharding_rules_detail {
namespace {

// Operand 0 and result 0 dim by dim: a dim kept whole (`keep(d)`) is one shared factor; any
// other dim changes size or content position, so the operand dim and the result dim each get a
// need-replication factor of their own. Operands past the first (start indices, padding value)
// are rank 0 and have no dims.
FactorRule window_rule(const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                       const std::function<bool(size_t)>& keep) {
  RuleBuilder b(in, out);
  const Shape& s = in.at(0).shape;
  const Shape& r = out.at(0).shape;
  for (size_t d = 0; d < s.size(); ++d) {
    if (keep(d) && s[d] == r.at(d)) {
      int f = b.factor(s[d]);
      b.operand(0, d, f);
      b.result(0, d, f);
    } else {
      b.own_operand(0, d, s[d]);
      b.own_result(0, d, r.at(d));
    }
  }
  return b.take();
}

// gather (general): an operand window dim whose slice is the whole dim and that no index
// starts is one factor with its output offset dim; every other operand dim needs replication
// (any part may be asked for anywhere); the indices' batch dims pass through to the output's
// batch dims, and a batching pair (operand, indices, output) is one shared factor.
FactorRule gather_rule(const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                       const Params& p) {
  RuleBuilder b(in, out);
  const GatherParams g = GatherParams::from(p);
  const auto& d = g.dimension_numbers;
  const Shape& x = in.at(0).shape;
  const Shape& idx = in.at(1).shape;
  const Shape& o = out.at(0).shape;
  auto has = [](const std::vector<int64_t>& v, int64_t e) {
    return std::find(v.begin(), v.end(), e) != v.end();
  };
  std::vector<size_t> out_batch, out_window;
  for (size_t j = 0; j < o.size(); ++j)
    (has(d.offset_dims, int64_t(j)) ? out_window : out_batch).push_back(j);
  std::vector<int> batch_factor(idx.size() - 1, -1);
  for (size_t j = 0; j + 1 < idx.size(); ++j) {
    batch_factor[j] = b.factor(idx[j]);
    b.operand(1, j, batch_factor[j]);
    b.result(0, out_batch.at(j), batch_factor[j]);
  }
  b.own_operand(1, idx.size() - 1, idx.back());
  size_t w = 0;
  for (size_t od = 0; od < x.size(); ++od) {
    auto bi = std::find(d.operand_batching_dims.begin(), d.operand_batching_dims.end(), int64_t(od));
    if (bi != d.operand_batching_dims.end()) {
      b.operand(0, od,
                batch_factor.at(
                    size_t(d.start_indices_batching_dims[size_t(bi - d.operand_batching_dims.begin())])));
      continue;
    }
    if (has(d.collapsed_slice_dims, int64_t(od))) {
      b.own_operand(0, od, x[od]);
      continue;
    }
    const size_t oj = out_window.at(w++);
    if (g.slice_sizes[od] == x[od] && !has(d.start_index_map, int64_t(od))) {
      int f = b.factor(x[od]);
      b.operand(0, od, f);
      b.result(0, oj, f);
    } else {
      b.own_operand(0, od, x[od]);
      b.own_result(0, oj, o[oj]);
    }
  }
  return b.take();
}

// The scatter family (general): an operand window dim that an update window covers whole and
// that no index starts is one factor of operand, updates and result; every other operand dim
// needs replication. The indices' batch dims and the updates' scatter dims share a factor that
// needs replication too (as reduction factors each device would combine x with its share of the
// updates, and combining those partial results counts x once per shard), except a batching pair
// (operand, indices, updates, result): each shard scatters into its own batch.
auto scatter_rule = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                       const Params& p) {
  RuleBuilder b(in, out);
  const ScatterParams s = ScatterParams::from(p);
  const auto& d = s.dimension_numbers;
  const Shape& x = in.at(0).shape;
  const Shape& idx = in.at(1).shape;
  const Shape& u = in.at(2).shape;
  auto has = [](const std::vector<int64_t>& v, int64_t e) {
    return std::find(v.begin(), v.end(), e) != v.end();
  };
  std::vector<size_t> u_batch, u_window;
  for (size_t j = 0; j < u.size(); ++j)
    (has(d.update_window_dims, int64_t(j)) ? u_window : u_batch).push_back(j);
  std::vector<int> batch_factor(idx.size() - 1, -1);
  for (size_t j = 0; j + 1 < idx.size(); ++j) {
    batch_factor[j] = b.factor(idx[j]);
    b.operand(1, j, batch_factor[j]);
    b.operand(2, u_batch.at(j), batch_factor[j]);
    if (!has(d.scatter_indices_batching_dims, int64_t(j))) b.need_replication(batch_factor[j]);
  }
  b.own_operand(1, idx.size() - 1, idx.back());
  size_t w = 0;
  for (size_t od = 0; od < x.size(); ++od) {
    auto bi = std::find(d.operand_batching_dims.begin(), d.operand_batching_dims.end(), int64_t(od));
    if (bi != d.operand_batching_dims.end()) {
      int f = batch_factor.at(
          size_t(d.scatter_indices_batching_dims[size_t(bi - d.operand_batching_dims.begin())]));
      b.operand(0, od, f);
      b.result(0, od, f);
      continue;
    }
    const bool inserted = has(d.inserted_window_dims, int64_t(od));
    const int64_t uj = inserted ? -1 : int64_t(u_window.at(w++));
    int f = b.factor(x[od]);
    b.operand(0, od, f);
    b.result(0, od, f);
    if (!inserted && u[size_t(uj)] == x[od] && !has(d.scatter_dims_to_operand_dims, int64_t(od))) {
      b.operand(2, size_t(uj), f);
    } else {
      b.need_replication(f);
      if (!inserted) b.own_operand(2, size_t(uj), u[size_t(uj)]);
    }
  }
  return b.take();
};

Registrar reg([] {
  auto& t = sharding_rules();
  // slice / dynamic_slice: a dim kept whole passes through; a sliced dim needs replication.
  t["slice"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out, const Params&) {
    return window_rule(in, out, [&](size_t d) { return in[0].shape[d] == out[0].shape[d]; });
  };
  t["dynamic_slice"] = t["slice"];
  // dynamic_update_slice(operand, update, *starts): a dim the update covers whole is one factor
  // of operand, update and result; otherwise operand and result share a need-replication factor
  // and the update dim has one of its own.
  t["dynamic_update_slice"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                                 const Params&) {
    RuleBuilder b(in, out);
    const Shape& s = in.at(0).shape;
    const Shape& u = in.at(1).shape;
    for (size_t d = 0; d < s.size(); ++d) {
      int f = b.factor(s[d]);
      b.operand(0, d, f);
      b.result(0, d, f);
      if (u.at(d) == s[d]) {
        b.operand(1, d, f);
      } else {
        b.need_replication(f);
        b.own_operand(1, d, u[d]);
      }
    }
    return b.take();
  };
  // concatenate: the other dims are shared by all operands and the result; the concatenated
  // dim needs replication (one factor per operand and one for the result).
  t["concatenate"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                        const Params& p) {
    RuleBuilder b(in, out);
    const Shape& r = out.at(0).shape;
    const size_t cd = norm_axis(ConcatenateParams::from(p).dimension, r.size());
    for (size_t d = 0; d < r.size(); ++d) {
      if (d == cd) {
        for (size_t i = 0; i < in.size(); ++i) b.own_operand(i, d, in[i].shape.at(d));
        b.own_result(0, d, r[d]);
        continue;
      }
      int f = b.factor(r[d]);
      b.result(0, d, f);
      for (size_t i = 0; i < in.size(); ++i) b.operand(i, d, f);
    }
    return b.take();
  };
  // pad(operand, padding_value): a dim with (0, 0, 0) padding passes through; a padded (or
  // cropped) dim needs replication.
  t["pad"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out, const Params& p) {
    const auto cfg = PadParams::from(p).padding_config;
    return window_rule(in, out, [&](size_t d) {
      const auto& c = cfg.at(d);
      return c.low == 0 && c.high == 0 && c.interior == 0;
    });
  };
  t["gather"] = gather_rule;
  for (const char* n : scatter_primitive_names()) t[n] = scatter_rule;
});

// slice's limits and dynamic_slice's/gather's slice sizes on the dims the factor rule lets be
// sharded (kept whole: the size is the operand's) become the local operand sizes. `field` picks
// the sizes out of the primitive's view (View, read by `view_of`).
template <class View>
PartitionRule local_slice_sizes(View (*view_of)(const Eqn&), std::vector<int64_t> View::* field) {
  PartitionRule r;
  r.local_params = [view_of, field](const Eqn& e, const std::vector<Array>& ops,
                                    const std::vector<ShapedArray>&) {
    View view = view_of(e);
    const Shape& global = atom_aval(e.inputs[0]).shape;
    std::vector<int64_t>& v = view.*field;
    for (size_t d = 0; d < v.size() && d < global.size(); ++d)
      if (v[d] == global[d]) v[d] = ops[0].shape()[d];
    return view.to_params();
  };
  return r;
}

Registrar reg_partition([] {
  partition_rules()["slice"] = local_slice_sizes(&slice_params, &SliceParams::limit_indices);
  partition_rules()["dynamic_slice"] = local_slice_sizes(&dynamic_slice_params,
                                                         &DynamicSliceParams::slice_sizes);
  partition_rules()["gather"] = local_slice_sizes(&gather_params, &GatherParams::slice_sizes);
});

}  // namespace
}  // namespace minijax::sharding_rules_detail
