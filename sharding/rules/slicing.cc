// minijax sharding rules of slicing and indexing: slice, dynamic_slice, dynamic_update_slice,
// concatenate, pad, gather and scatter_add.
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/primitive.h"
#include "core/views/array_ops.h"
#include "sharding/rules/rule_builder.h"
#include "sharding/partition_rule.h"

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

Registrar reg([] {
  auto& t = sharding_rules();
  // slice / dynamic_slice: a dim kept whole passes through; a sliced dim needs replication.
  t["slice"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                  const Params&) {
    return window_rule(in, out, [&](size_t d) { return in[0].shape[d] == out[0].shape[d]; });
  };
  t["dynamic_slice"] = t["slice"];
  // dynamic_update_slice(operand, update, *starts): a dim the update covers whole is one factor
  // of operand, update and result; otherwise operand and result share a need-replication factor
  // and the update dim has one of its own.
  t["dynamic_update_slice"] = [](const std::vector<ShapedArray>& in,
                                 const std::vector<ShapedArray>& out, const Params&) {
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
  t["pad"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                const Params& p) {
    const auto cfg = PadParams::from(p).padding_config;
    return window_rule(in, out, [&](size_t d) {
      const auto& c = cfg.at(d);
      return c.low == 0 && c.high == 0 && c.interior == 0;
    });
  };
  // gather(x, indices) -> indices.shape + x.shape[1:]: the row dim of x needs replication (any
  // row may be asked for anywhere); index dims and the row's feature dims pass through.
  t["gather"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                   const Params&) {
    RuleBuilder b(in, out);
    const Shape& x = in.at(0).shape;
    const Shape& idx = in.at(1).shape;
    b.own_operand(0, 0, x.at(0));
    for (size_t d = 0; d < idx.size(); ++d) {
      int f = b.factor(idx[d]);
      b.operand(1, d, f);
      b.result(0, d, f);
    }
    for (size_t d = 1; d < x.size(); ++d) {
      int f = b.factor(x[d]);
      b.operand(0, d, f);
      b.result(0, idx.size() + d - 1, f);
    }
    return b.take();
  };
  // scatter_add(x, indices, updates) with updates.shape = indices.shape + x.shape[1:]: the row dim
  // of x and the result needs replication; feature dims are shared by x, updates and the result;
  // the index dims (indices and the leading dims of updates) need replication too: as reduction
  // factors each device would compute x + its share of the updates, and summing those partial
  // results counts x once per shard (found by tests/conformance/sharded_check.cc).
  t["scatter_add"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                        const Params&) {
    RuleBuilder b(in, out);
    const Shape& x = in.at(0).shape;
    const Shape& idx = in.at(1).shape;
    int row = b.factor(x.at(0));
    b.operand(0, 0, row);
    b.result(0, 0, row);
    b.need_replication(row);
    for (size_t d = 0; d < idx.size(); ++d) {
      int f = b.factor(idx[d]);
      b.operand(1, d, f);
      b.operand(2, d, f);
      b.need_replication(f);
    }
    for (size_t d = 1; d < x.size(); ++d) {
      int f = b.factor(x[d]);
      b.operand(0, d, f);
      b.operand(2, idx.size() + d - 1, f);
      b.result(0, d, f);
    }
    return b.take();
  };
});

// slice's limits and dynamic_slice's/gather's slice sizes on the dims the factor rule lets be
// sharded (kept whole: the size is the operand's) become the local operand sizes. `field` picks
// the sizes out of the primitive's view (View, read by `view_of`).
template <class View>
PartitionRule local_slice_sizes(View (*view_of)(const Eqn&), std::vector<int64_t> View::*field) {
  PartitionRule r;
  r.local_params = [view_of, field](const Eqn& e, const std::vector<Array>& ops, const std::vector<ShapedArray>&) {
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
  partition_rules()["dynamic_slice"] = local_slice_sizes(&dynamic_slice_params, &DynamicSliceParams::slice_sizes);
  partition_rules()["gather"] = local_slice_sizes(&gather_params, &GatherParams::slice_sizes);
});

}  // namespace
}  // namespace minijax::sharding_rules_detail
