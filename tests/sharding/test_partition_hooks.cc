// minijax partition hooks (sharding/partition_rule.h): the primitives whose shape params the
// partitioner once rewrote by name each have a hook beside their factor rule that does it.
#include <gtest/gtest.h>

#include <minijax/minijax.h>

#include "core/lax.h"
#include "core/gather_scatter.h"
#include "core/views/array_ops.h"
#include "sharding/partition_rule.h"

namespace {

using mj::Array;

// The only equation of the jaxpr of `f` on `args`.
mj::Eqn only_eqn(const std::function<Array(const std::vector<Array>&)>& f, const std::vector<Array>& args) {
  mj::FlatFn g = [&](const std::vector<Array>& a) { return std::vector<Array>{f(a)}; };
  mj::ClosedJaxpr cj = mj::make_jaxpr(g)(args);
  EXPECT_EQ(cj.jaxpr->eqns.size(), 1u);
  return cj.jaxpr->eqns.at(0);
}

// The local params of `e` from its partition hook, for a local operand of shape `local` (if the
// equation has operands) and a local result of shape `want`.
mj::Params local_params(const mj::Eqn& e, const mj::Shape& local, const mj::Shape& want) {
  const mj::PartitionRule* r = mj::partition_rule_of(e);
  EXPECT_TRUE(r && r->local_params) << e.primitive->name;
  if (!r || !r->local_params) return {};
  std::vector<Array> ops;
  if (!e.inputs.empty()) ops.push_back(mj::lax::full(local, 0.0, mj::atom_aval(e.inputs[0]).dtype));
  mj::ShapedArray w = e.outputs.at(0).aval();
  w.shape = want;
  return r->local_params(e, ops, {w});
}

}  // namespace

// The six primitives partition_spmd rewrote by name before the hooks: each has a local_params
// hook (iota also completes its local result with the shard's offset).
TEST(PartitionHooks, CoverEveryPrimitiveThePartitionerRewrote) {
  for (const char* n : {"broadcast_in_dim", "iota", "reshape", "slice", "dynamic_slice", "gather"}) {
    auto it = mj::partition_rules().find(n);
    ASSERT_NE(it, mj::partition_rules().end()) << n;
    EXPECT_TRUE(it->second.local_params) << n;
  }
  EXPECT_TRUE(mj::partition_rules().at("iota").finish_local);
  // The partial-sum check's linear primitives (once add/sub/neg by name in partition_spmd).
  for (const char* n : {"add", "sub", "neg"}) {
    auto it = mj::partition_rules().find(n);
    ASSERT_NE(it, mj::partition_rules().end()) << n;
    EXPECT_TRUE(it->second.sums_partial_sums) << n;
  }
  auto mul = mj::partition_rules().find("mul");
  EXPECT_TRUE(mul == mj::partition_rules().end() || !mul->second.sums_partial_sums);
}

// Each hook rewrites its global sizes to local ones (x: [8, 4] sharded 4 ways on dim 0 -> [2, 4]).
TEST(PartitionHooks, RewriteGlobalSizesToLocal) {
  Array x = mj::lax::full({8, 4}, 1.0, mj::f32);
  // slice: a dim kept whole gets the local size as its limit; a sliced dim keeps its limit.
  mj::Eqn s = only_eqn([](const std::vector<Array>& a) { return mj::lax::slice(a[0], {0, 1}, {8, 3}); }, {x});
  mj::SliceParams sp = mj::SliceParams::from(local_params(s, {2, 4}, {2, 2}));
  EXPECT_EQ(sp.limit_indices, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(sp.start_indices, (std::vector<int64_t>{0, 1}));
  EXPECT_FALSE(sp.strides.has_value());
  // dynamic_slice: slice sizes likewise.
  mj::Eqn ds = only_eqn(
      [](const std::vector<Array>& a) {
        return mj::lax::dynamic_slice(a[0], {mj::lax::scalar(0, mj::DType::i32), mj::lax::scalar(1, mj::DType::i32)}, {8, 2});
      },
      {x});
  EXPECT_EQ(mj::DynamicSliceParams::from(local_params(ds, {2, 4}, {2, 2})).slice_sizes, (std::vector<int64_t>{2, 2}));
  // gather: rows of x [8, 4] sharded on dim 1 (2 ways): slice_sizes (1, 4) -> (1, 2); mode kept.
  Array idx = mj::lax::full({3, 1}, 0.0, mj::DType::i32);
  mj::Eqn g = only_eqn(
      [](const std::vector<Array>& a) {
        mj::lax::GatherOptions o;
        o.mode = mj::lax::GatherScatterMode::CLIP;
        return mj::lax::gather(a[0], a[1], {{1}, {0}, {0}, {}, {}}, {1, 4}, o);
      },
      {x, idx});
  mj::GatherParams gp = mj::GatherParams::from(local_params(g, {8, 2}, {3, 2}));
  EXPECT_EQ(gp.slice_sizes, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(gp.mode, mj::lax::GatherScatterMode::CLIP);
  // broadcast_in_dim, reshape and iota: the local result shape.
  mj::Eqn b = only_eqn([](const std::vector<Array>& a) { return mj::lax::broadcast_in_dim(a[0], {3, 8, 4}, {1, 2}); }, {x});
  mj::BroadcastInDimParams bp = mj::BroadcastInDimParams::from(local_params(b, {2, 4}, {3, 2, 4}));
  EXPECT_EQ(bp.shape, (std::vector<int64_t>{3, 2, 4}));
  EXPECT_EQ(bp.broadcast_dimensions, (std::vector<int64_t>{1, 2}));
  mj::Eqn r = only_eqn([](const std::vector<Array>& a) { return mj::lax::reshape(a[0], {8, 2, 2}); }, {x});
  EXPECT_EQ(mj::ReshapeParams::from(local_params(r, {2, 4}, {2, 2, 2})).new_sizes, (std::vector<int64_t>{2, 2, 2}));
  mj::Eqn io;  // iota has no operands: built by hand, as the tracer would stage it
  io.primitive = &mj::primitive("iota");
  io.params = mj::IotaParams{0, mj::DType::i32, {8, 4}}.to_params();
  io.outputs = {mj::Var(mj::ShapedArray{{8, 4}, mj::DType::i32})};
  mj::IotaParams ip = mj::IotaParams::from(local_params(io, {}, {2, 4}));
  EXPECT_EQ(ip.shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(ip.dimension, 0);
}
