// minijax's sharding_constraint primitive (jax.lax.with_sharding_constraint): registration of its
// shape rule, eager implementation, JVP/transpose/batching rules and its (pointwise) sharding rule.
#include <string>

#include "core/primitive.h"
#include "core/views/memory_ops.h"
#include "core/trace.h"
#include "sharding/boxes.h"
#include "sharding/rules/rule_builder.h"
#include "sharding/sharded_array.h"
#include "sharding/sharding_param.h"
#include "sharding/sharding_rule.h"
#include "core/lax.h"
#include "sharding/partition_rule.h"

namespace minijax {
namespace {

using Outs = std::pair<std::vector<Array>, std::vector<Array>>;
using BOuts = std::pair<std::vector<Array>, std::vector<int64_t>>;

const Sharding& param_sharding(const Params& p) {
  const ShardingConstraintParams v = ShardingConstraintParams::from(p);
  // Text (a parsed jaxpr: a printed sharding has no reader, core/parser.h) is not a sharding.
  if (v.text) throw ValueError("parameter 'sharding' is not of type object");
  // The object stays alive in `p`, which the view's pointer shares.
  return sharding_of_param(v.sharding, "sharding_constraint's `sharding` param");
}

Params with_sharding(Sharding s) {
  ShardingConstraintParams v;
  v.sharding = sharding_param(std::move(s));
  return v.to_params();
}

// sharding_constraint[sharding=S](x): x's aval in S's memory kind. ShardingError when S does not
// fit x's shape (Sharding::check: rank, unknown axis, axis used twice, invalid sub-axis).
std::vector<ShapedArray> shape_rule(const std::vector<ShapedArray>& in, const Params& p) {
  if (in.size() != 1)
    throw ValueError("sharding_constraint takes one operand, got " + std::to_string(in.size()));
  if (in[0].is_token()) throw TypeError("a token cannot be sharded");
  const Sharding& s = param_sharding(p);
  s.check(in[0].shape);
  ShapedArray o = in[0];
  o.memory_kind = s.memory_kind;
  return {o};
}

// Eager: the operand laid out as S (sharded Array; uneven shards allowed).
std::vector<Array> impl(const std::vector<Array>& a, const Params& p,
                        const std::vector<ShapedArray>& out) {
  const Sharding& s = param_sharding(p);
  return {make_sharded_array(out[0], s, local_shards(a[0], s))};
}

// Linear: the tangent gets the same constraint (JAX registers it with ad.deflinear2).
Outs jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& p) {
  const Primitive& prim = ShardingConstraintParams::primitive();
  Array out = minijax::bind1(prim, primals, p);
  Array t;
  if (tangents.at(0).defined() && is_floating(out.dtype())) t = minijax::bind1(prim, {tangents[0]}, p);
  return {{out}, {t}};
}

// The cotangent gets the same constraint (JAX's _sharding_constraint_transpose_rule), in the
// operand's memory kind.
std::vector<Array> transpose(const std::vector<Array>& cts, const std::vector<Array>&,
                             const std::vector<ShapedArray>& avals, const Params& p) {
  if (!cts[0].defined()) return {Array()};
  Sharding s = param_sharding(p);
  s.memory_kind = avals[0].memory_kind;
  return {minijax::bind1(ShardingConstraintParams::primitive(), {cts[0]}, with_sharding(std::move(s)))};
}

// vmap: the batch dim is inserted as an open dim with no axes (unconstrained), as JAX's
// _sharding_constraint_batcher with spmd_axis_name=None.
BOuts batch(const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& p) {
  if (dims[0] == kNotMapped) return {{minijax::bind1(ShardingConstraintParams::primitive(), args, p)}, dims};
  int64_t d = dims[0] < 0 ? dims[0] + args[0].ndim() : dims[0];
  Sharding s = param_sharding(p);
  DimSharding open;
  open.closed = false;
  s.dims.insert(s.dims.begin() + d, open);
  return {{minijax::bind1(ShardingConstraintParams::primitive(), args, with_sharding(std::move(s)))}, {d}};
}

Registrar reg([] {
  auto& p = get_or_create_primitive("sharding_constraint");
  set_classes(p, OpClass::other, CostClass::data_movement, FusionClass::normal);
  p.shape_rule = shape_rule;
  p.impl = impl;
  p.jvp = jvp;
  p.transpose = transpose;
  p.batch = batch;
  // Pointwise: every dim of the operand and the result is one shared factor (a constraint does
  // not move data by itself; propagation fixes its result and reshards the operand to it).
  sharding_rules()["sharding_constraint"] = [](const std::vector<ShapedArray>& in,
                                               const std::vector<ShapedArray>& out,
                                               const Params&) {
    return sharding_rules_detail::elementwise_rule(in, out);
  };
});

// Partition rule: the identity on the local value (its reshard is already placed), moved to the
// constraint's memory kind when it names another one (device_put of a concrete value under jit
// binds the constraint alone, with no device_put equation before it).
Registrar reg_partition([] {
  PartitionRule r;
  r.bind_local = [](const Eqn&, const std::vector<Array>& ops, const std::vector<ShapedArray>& want,
                    std::source_location loc) {
    std::vector<Array> res{ops[0]};
    if (res[0].memory_kind() != want[0].memory_kind) res[0] = lax::device_put(res[0], want[0].memory_kind, loc);
    return res;
  };
  partition_rules()["sharding_constraint"] = r;
});

}  // namespace
}  // namespace minijax
