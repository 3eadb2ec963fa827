// Tests of the SPMD partitioner (sharding/partition_spmd): the partitioned program runs under
// run_spmd on shards of the inputs and gives the shards of the unsharded program's results.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/api.h"
#include "core/errors.h"
#include "core/lax.h"
#include "jit/reference/reference_executor.h"
#include "sharding/boxes.h"
#include "sharding/partition_spec.h"
#include "sharding/partition_spmd.h"
#include "sharding/propagate_shardings.h"
#include "tests/sharding/spmd_helpers.h"

namespace mj = minijax;
using minijax::Array;
using minijax::ShapedArray;
using minijax::Sharding;

namespace {

using minijax::testing::mesh42;
using minijax::testing::named;
using minijax::testing::ramp;
using minijax::testing::cut;

struct Partitioned {
  mj::Jaxpr program;
  std::vector<std::vector<Array>> per_device;
  mj::SpmdStats stats;
  std::vector<Array> expected;
  mj::PropagationResult prop;
};

// Propagates, partitions, runs on the shards of `args` and evaluates the unsharded program.
Partitioned run(const mj::ClosedJaxpr& cj, const std::vector<Array>& args,
        const std::vector<std::optional<Sharding>>& in, const std::vector<std::optional<Sharding>>& out,
        const std::shared_ptr<const mj::Mesh>& m) {
  Partitioned r;
  r.prop = mj::propagate_shardings(*cj.jaxpr, in, out, *m);
  r.program = mj::partition_spmd(*cj.jaxpr, r.prop, *m);
  std::vector<std::vector<Array>> dev(m->num_devices());
  for (size_t k = 0; k < args.size(); ++k) {
    auto pieces = cut(args[k], r.prop.of(cj.jaxpr->invars[k]));
    for (size_t p = 0; p < dev.size(); ++p) dev[p].push_back(pieces[p]);
  }
  r.per_device = mj::run_spmd(r.program, *m, dev, &r.stats);
  r.expected = mj::eval_jaxpr(cj, args);
  return r;
}

// Every device's output k equals its block of the unsharded result under the output sharding.
void expect_shards(const Partitioned& r, const mj::Jaxpr& j) {
  for (size_t k = 0; k < r.expected.size(); ++k) {
    const Sharding& s = r.prop.of(std::get<mj::Var>(j.outvars[k]));
    auto want = cut(r.expected[k], s);
    for (size_t p = 0; p < want.size(); ++p) {
      const Array& got = r.per_device[p][k];
      ASSERT_EQ(got.shape(), want[p].shape()) << "device " << p;
      for (int64_t i = 0; i < got.aval().size(); ++i)
        ASSERT_FLOAT_EQ(got.data<float>()[i], want[p].data<float>()[i]) << "device " << p << " at " << i;
    }
  }
}

size_t count(const mj::SpmdStats& s, const std::string& prim) {
  size_t n = 0;
  for (auto& c : s.collectives) n += c.primitive == prim;
  return n;
}

Array matmul(const Array& x, const Array& y) {
  return mj::lax::dot_general(x, y, mj::lax::DotDimensionNumbers{{1}, {0}, {}, {}});
}

}  // namespace

TEST(PartitionSpmd, ElementwiseChainHasLocalShapesAndNoCollectives) {
  auto m = mesh42();
  auto f = [](Array x, Array y) { return mj::lax::mul(mj::lax::sin(mj::lax::add(x, y)), x); };
  Array x = ramp({8, 4}, 0.1f), y = ramp({8, 4}, -0.2f, 3);
  auto cj = mj::make_jaxpr(f)(x, y);
  Sharding s = named(m, mj::P("x", "y"), 2);
  Partitioned r = run(cj, {x, y}, {s, s}, {s}, m);
  // Local shape: 8/4 rows, 4/2 columns.
  EXPECT_EQ(r.program.invars[0].aval().shape, (mj::Shape{2, 2}));
  EXPECT_TRUE(r.stats.collectives.empty());
  expect_shards(r, *cj.jaxpr);
}

TEST(PartitionSpmd, BatchShardedMatmulNeedsNoCollective) {
  auto m = mesh42();
  Array a = ramp({8, 6}, 0.5f), b = ramp({6, 4}, -0.25f, 1);
  auto cj = mj::make_jaxpr(matmul)(a, b);
  Partitioned r = run(cj, {a, b}, {named(m, mj::P("x", mj::None{}), 2), named(m, mj::P(), 2)},
              {named(m, mj::P("x", mj::None{}), 2)}, m);
  EXPECT_TRUE(r.stats.collectives.empty());
  EXPECT_EQ(mj::to_string(r.program).find("all_"), std::string::npos) << mj::to_string(r.program);
  expect_shards(r, *cj.jaxpr);
}

TEST(PartitionSpmd, ShardedContractingDimIsAllReduced) {
  auto m = mesh42();
  Array a = ramp({8, 16}, 0.5f), b = ramp({16, 4}, -0.25f, 1);
  auto cj = mj::make_jaxpr(matmul)(a, b);
  Partitioned r = run(cj, {a, b}, {named(m, mj::P(mj::None{}, "x"), 2), named(m, mj::P("x", mj::None{}), 2)},
              {named(m, mj::P(), 2)}, m);
  // Each device multiplies its [8,4] x [4,4] blocks: partial sums over "x", summed by one
  // all_reduce over "x" (the propagation chose it: 48 received per device, test_propagation).
  ASSERT_EQ(r.stats.collectives.size(), 1u) << mj::to_string(r.program);
  EXPECT_EQ(r.stats.collectives[0].primitive, "all_reduce");
  expect_shards(r, *cj.jaxpr);
}

TEST(PartitionSpmd, ReduceSumOverAShardedDimToReplicated) {
  auto m = mesh42();
  Array x = ramp({8, 4}, 0.5f, -2);
  auto cj = mj::make_jaxpr([](Array v) { return mj::lax::reduce_sum(v, {0}); })(x);
  Partitioned r = run(cj, {x}, {named(m, mj::P("x", mj::None{}), 2)}, {named(m, mj::P(), 1)}, m);
  ASSERT_EQ(r.stats.collectives.size(), 1u) << mj::to_string(r.program);
  EXPECT_EQ(r.stats.collectives[0].primitive, "all_reduce");
  expect_shards(r, *cj.jaxpr);
}

// docs/cases/seed-involuntary-full-remat.md on mesh (4, 2): d = a + b in P("y", None, "x"),
// c + d in P(None, ("x","y"), None). The reshard of d is one all_to_all over ("x", "y").
TEST(PartitionSpmd, SeedCaseIsOneAllToAllWithoutGather) {
  auto m = mesh42();
  Array a = ramp({16, 16, 16}), b = ramp({16, 16, 16}), c = ramp({16, 16, 16});
  auto cj = mj::make_jaxpr([](Array x, Array y, Array z) { return mj::lax::add(z, mj::lax::add(x, y)); })(
      a, b, c);
  Sharding s1 = named(m, mj::P("y", mj::None{}, "x"), 3);
  Sharding s2 = named(m, mj::P(mj::None{}, {"x", "y"}, mj::None{}), 3);
  Partitioned r = run(cj, {a, b, c}, {s1, s1, s2}, {s2}, m);
  std::string text = mj::to_string(r.program);
  ASSERT_EQ(r.stats.collectives.size(), 1u) << text;
  EXPECT_EQ(r.stats.collectives[0].primitive, "all_to_all");
  EXPECT_EQ(count(r.stats, "all_gather"), 0u);
  // Each device keeps 1 of the 8 blocks of 64 elements it holds and receives 7 (f32: 4 bytes):
  // 448 elements = 1792 bytes, the case's lower bound.
  for (auto v : r.stats.collectives[0].bytes_received) EXPECT_EQ(v, 1792);
  // Element k of the result is 3k.
  for (size_t p = 0; p < 8; ++p) {
    auto box = mj::device_boxes(s2, {16, 16, 16})[p];
    const float* got = r.per_device[p][0].data<float>();
    int64_t i = 0;
    for (int64_t u = box.lo[0]; u < box.hi[0]; ++u)
      for (int64_t v = box.lo[1]; v < box.hi[1]; ++v)
        for (int64_t w = box.lo[2]; w < box.hi[2]; ++w) ASSERT_EQ(got[i++], 3.0f * float(u * 256 + v * 16 + w));
  }
  expect_shards(r, *cj.jaxpr);
  // One program for all devices: the only device-dependent values would be literals; an
  // all_to_all-only reshard has no axis_index and no integer literal other than zero indices.
  EXPECT_EQ(text.find("axis_index"), std::string::npos) << text;
}

// A reshard that gathers one axis and slices in another: all_gather + dynamic_slice at
// axis_index, whose printed program names no device.
TEST(PartitionSpmd, GatherAndSliceUseAxisIndexNotDeviceConstants) {
  auto m = mesh42();
  Array x = ramp({8, 4}, 1, 1);
  auto cj = mj::make_jaxpr([](Array v) { return mj::lax::sin(v); })(x);
  Partitioned r = run(cj, {x}, {named(m, mj::P("x", mj::None{}), 2)}, {named(m, mj::P(mj::None{}, "y"), 2)}, m);
  std::string text = mj::to_string(r.program);
  EXPECT_EQ(count(r.stats, "all_gather"), 1u) << text;
  EXPECT_NE(text.find("axis_index"), std::string::npos) << text;
  // No literal other than the zero start index appears: positions come from axis_index.
  for (int d = 1; d < 8; ++d)
    EXPECT_EQ(text.find(std::to_string(d) + ":i32[]"), std::string::npos) << text;
  expect_shards(r, *cj.jaxpr);
}

TEST(PartitionSpmd, UnevenShardsThrowShardingError) {
  auto m = mesh42();
  Array x = ramp({6, 4});
  auto cj = mj::make_jaxpr([](Array v) { return mj::lax::sin(v); })(x);
  Sharding s = named(m, mj::P("x", mj::None{}), 2);
  auto prop = mj::propagate_shardings(*cj.jaxpr, {s}, {s}, *m);
  try {
    mj::partition_spmd(*cj.jaxpr, prop, *m);
    FAIL() << "expected ShardingError";
  } catch (const mj::ShardingError& e) {
    EXPECT_NE(std::string(e.what()).find("uneven"), std::string::npos) << e.what();
  }
}
