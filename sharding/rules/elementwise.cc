// minijax sharding rules of pointwise primitives: unary/binary math, comparisons, bit ops,
// select_n, clamp, casts, pass-through ops (device_put, name, stop_gradient...), threefry, iotas.
#include <algorithm>
#include <map>

#include "core/primitive.h"
#include "sharding/rules/rule_builder.h"
#include "core/collectives.h"
#include "core/lax.h"
#include "core/views/array_ops.h"
#include "sharding/partition_rule.h"

namespace minijax::sharding_rules_detail {

FactorRule elementwise_rule(const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out) {
  RuleBuilder b(in, out);
  if (out.empty()) return b.take();
  const Shape& rs = out[0].shape;
  const size_t R = rs.size();
  std::vector<int> f(R);
  for (size_t d = 0; d < R; ++d) f[d] = b.factor(rs[d]);
  for (size_t j = 0; j < out.size(); ++j)
    if (out[j].shape == rs)
      for (size_t d = 0; d < R; ++d) b.result(j, d, f[d]);
  for (size_t j = 1; j < out.size(); ++j)  // results of another shape: their own factors
    if (out[j].shape != rs)
      for (size_t d = 0; d < out[j].shape.size(); ++d) b.result(j, d, b.factor(out[j].shape[d]));
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    if (s.size() > R) {  // not a broadcast of the result: every dim on its own, replicated
      for (size_t d = 0; d < s.size(); ++d) b.own_operand(i, d, s[d]);
      continue;
    }
    for (size_t k = 0; k < s.size(); ++k) {
      const size_t d = R - s.size() + k;
      if (s[k] == rs[d]) b.operand(i, k, f[d]);
      else if (s[k] != 1) b.own_operand(i, k, s[k]);
    }
  }
  return b.take();
}

namespace {

Registrar reg([] {
  auto& t = sharding_rules();
  ShardingRuleFn ew = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                         const Params&) { return elementwise_rule(in, out); };
  // Pointwise math, comparisons, bit ops, casts and value-preserving ops: every dim of every
  // operand and result is one shared factor (Shardy's pointwise rule).
  for (const char* n :
       {"abs", "add", "add_any", "and", "atan2", "ceil", "clamp", "convert_element_type", "cos",
        "device_put", "div", "eq", "erf", "erf_inv", "exp", "expm1", "floor", "ge", "gt",
        "integer_pow", "le", "log", "log1p", "logistic", "lt", "max", "min", "mul", "name", "ne",
        "neg", "not", "or", "pow", "rem", "round", "rsqrt", "select_n", "shift_left",
        "shift_right_logical", "sign", "sin", "sqrt", "stop_gradient", "sub", "tan", "tanh",
        "threefry2x32", "xor"})
    t[n] = ew;
  // The elementwise functions of core/primitives/elementwise_special.cc: pointwise as well.
  for (const char* n : {"is_finite", "nextafter", "population_count", "clz", "sinh", "cosh", "asin", "acos",
                        "atan", "asinh", "acosh", "atanh", "cbrt", "erfc"})
    t[n] = ew;
  // iota: no operands; every result dim is a factor of its own (the values depend on the
  // position, but each shard adds its offset: partition_spmd, from axis_index).
  t["iota"] = ew;
  // iota_2x32_shape: the (hi, lo) words of each element's row-major linear index over the
  // WHOLE shape; a shard would need its global linear indices, so its dims need replication
  // (a sharded consumer takes its block by a local slice, which moves no data).
  t["iota_2x32_shape"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                            const Params&) {
    RuleBuilder b(in, out);
    for (size_t i = 0; i < out.size(); ++i)
      for (size_t d = 0; d < out[i].shape.size(); ++d) b.own_result(i, d, out[i].shape[d]);
    return b.take();
  };
  // optimization_barrier(*xs): operand i passes through to result i.
  t["optimization_barrier"] = [](const std::vector<ShapedArray>& in,
                                 const std::vector<ShapedArray>& out, const Params&) {
    RuleBuilder b(in, out);
    for (size_t i = 0; i < in.size() && i < out.size(); ++i)
      for (size_t d = 0; d < in[i].shape.size(); ++d) {
        int f = b.factor(in[i].shape[d]);
        b.operand(i, d, f);
        b.result(i, d, f);
      }
    return b.take();
  };
  // debug_callback(*xs) (debug::print, debug::callback): no results; the host function sees whole
  // values (JAX's partitioned=False), so every operand dim needs replication, and one device of
  // the mesh calls it (jit/runtime/execute_spmd.cc).
  t["debug_callback"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out, const Params&) {
    RuleBuilder b(in, out);
    for (size_t i = 0; i < in.size(); ++i)
      for (size_t d = 0; d < in[i].shape.size(); ++d) b.own_operand(i, d, in[i].shape[d]);
    return b.take();
  };
  // bitcast_convert_type: dims shared; a 4<->8-byte cast adds or drops a trailing dim of size 2
  // (the two halves of one element) that must stay whole on the side that has it.
  t["bitcast_convert_type"] = [](const std::vector<ShapedArray>& in,
                                 const std::vector<ShapedArray>& out, const Params&) {
    RuleBuilder b(in, out);
    const Shape& s = in.at(0).shape;
    const Shape& r = out.at(0).shape;
    const size_t common = std::min(s.size(), r.size());
    for (size_t d = 0; d < common; ++d) {
      int f = b.factor(s[d]);
      b.operand(0, d, f);
      b.result(0, d, f);
    }
    if (s.size() > common) b.own_operand(0, common, s[common]);
    if (r.size() > common) b.own_result(0, common, r[common]);
    return b.take();
  };
});

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

// Partition rule: iota's local shape, offset by the shard's first index along its dimension.
Registrar reg_partition([] {
  PartitionRule r;
  r.local_params = [](const Eqn& e, const std::vector<Array>&, const std::vector<ShapedArray>& want) {
    IotaParams v = iota_params(e);
    v.shape = want[0].shape;
    return v.to_params();
  };
  r.finish_local = [](const Eqn& e, size_t, const Array& local, const Sharding& out, const Mesh& mesh) {
    return offset_iota(local, out, size_t(iota_params(e).dimension), mesh);
  };
  partition_rules()["iota"] = r;
  // add, sub and neg are linear in every operand: partial sums in, partial sums out.
  for (const char* n : {"add", "sub", "neg"}) partition_rules()[n].sums_partial_sums = true;
});

}  // namespace
}  // namespace minijax::sharding_rules_detail
