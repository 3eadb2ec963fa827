// Tests of sharded Arrays (sharding/sharded_array.h): device_put to a sharding, shards and
// gathering, with_sharding_constraint and its primitive under transforms, propagation and SPMD;
// and the sharding API's bad input (jit's and reshard_plan's specs, meshes, uneven shards, the
// device count): a ShardingError naming the spec, the shape and the user's call site.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <minijax/minijax.h>

#include "sharding/sharding_values.h"

#include "sharding/partition_spmd.h"
#include "sharding/propagate_shardings.h"

using minijax::Array;
using minijax::NamedSharding;
using minijax::P;
using minijax::ShapedArray;
using minijax::Sharding;

namespace {

using sharding_values::mesh42;
using sharding_values::ramp;

std::shared_ptr<const mj::Mesh> mesh8() {
  return std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, mj::Shape{8},
                                          std::vector<std::string>{"data"});
}

// i32 array with element [i, j] = 100 * i + j (the expected value of every element below is
// this formula, not anything minijax computed).
Array grid_i32(int64_t rows, int64_t cols) {
  Array a = Array::allocate(ShapedArray{{rows, cols}, mj::DType::i32});
  int32_t* p = a.mutable_data<int32_t>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) p[i * cols + j] = int32_t(100 * i + j);
  return a;
}

// f32 array with element k (row-major) = 0.5 * k - 3.
Array ramp_f32(mj::Shape shape) {
  Array a = Array::allocate(ShapedArray{shape, mj::DType::f32});
  float* p = a.mutable_data<float>();
  for (int64_t k = 0; k < a.size(); ++k) p[k] = 0.5f * float(k) - 3.f;
  return a;
}

const mj::ConcreteArray& impl_of(const Array& a) { return a.concrete_impl(); }

// Every shard's data equals the formula 100*i + j at its global indices.
void expect_grid_shards(const Array& x) {
  for (auto& sh : x.addressable_shards()) {
    ASSERT_EQ(sh.index.size(), 2u);
    int64_t r0 = sh.index[0].first, c0 = sh.index[1].first;
    int64_t nc = sh.index[1].second - c0;
    ASSERT_EQ(sh.data.shape(), (mj::Shape{sh.index[0].second - r0, nc}));
    const int32_t* p = sh.data.data<int32_t>();
    for (int64_t k = 0; k < sh.data.size(); ++k)
      ASSERT_EQ(p[k], 100 * (r0 + k / nc) + c0 + k % nc) << "device " << sh.device << " at " << k;
  }
}

// The error's call site is this file at `line`, and its message contains each of `parts`.
template <class F>
void expect_sharding_error(int line, F f, std::vector<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no ShardingError";
  } catch (const mj::ShardingError& e) {
    EXPECT_EQ(int(e.where().line()), line) << e.what();
    EXPECT_NE(std::string(e.where().file_name()).find("test_sharded_arrays.cc"), std::string::npos)
        << e.what();
    for (auto& s : parts) EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << s << " not in: " << e.what();
  }
}

}  // namespace

// docs/cases/uneven-shards.md, eager half: int32[17,16] with P("data", None) on 8 devices.
TEST(ShardedArrays, UnevenDevicePutHoldsPaddedRowsWithRightValues) {
  auto m = mesh8();
  Array x = grid_i32(17, 16);
  Array y = mj::device_put(x, mj::NamedSharding{m, mj::P("data", mj::None{})});
  ASSERT_TRUE(y.is_sharded());
  EXPECT_EQ(y.shape(), (mj::Shape{17, 16}));
  EXPECT_FALSE(impl_of(y).is_gathered());
  auto shards = y.addressable_shards();
  ASSERT_EQ(shards.size(), 8u);
  // ceil(17/8) = 3 rows per shard: devices 0-4 hold 3, device 5 holds 17 - 15 = 2, 6 and 7 none.
  const int64_t rows[8] = {3, 3, 3, 3, 3, 2, 0, 0};
  for (int d = 0; d < 8; ++d) {
    EXPECT_EQ(shards[size_t(d)].device, d);
    EXPECT_EQ(shards[size_t(d)].data.shape(), (mj::Shape{rows[d], 16})) << "device " << d;
    int64_t start = std::min<int64_t>(3 * d, 17);
    EXPECT_EQ(shards[size_t(d)].index[0], (std::pair<int64_t, int64_t>{start, start + rows[d]}));
    EXPECT_EQ(shards[size_t(d)].index[1], (std::pair<int64_t, int64_t>{0, 16}));
  }
  expect_grid_shards(y);
  EXPECT_FALSE(impl_of(y).is_gathered()) << "looking at shards must not gather";
  // The sharding is the one asked for, never replaced by replication.
  EXPECT_TRUE(y.sharding() == (mj::NamedSharding{m, mj::P("data")}));
  EXPECT_EQ(y.sharding().spec(), mj::P("data"));
  // Reading gathers (once) and sees the global value.
  const int32_t* p = y.data<int32_t>();
  EXPECT_TRUE(impl_of(y).is_gathered());
  for (int64_t i = 0; i < 17; ++i)
    for (int64_t j = 0; j < 16; ++j) ASSERT_EQ(p[i * 16 + j], 100 * i + j);
  EXPECT_EQ(y.data<int32_t>(), p) << "the global buffer is assembled once";
}

TEST(ShardedArrays, ConcurrentReadersGatherOnce) {
  Array y = mj::device_put(grid_i32(17, 16), mj::NamedSharding{mesh8(), mj::P("data")});
  std::vector<const int32_t*> seen(4, nullptr);
  std::vector<std::thread> readers;
  for (size_t t = 0; t < seen.size(); ++t) readers.emplace_back([&, t] { seen[t] = y.data<int32_t>(); });
  for (auto& r : readers) r.join();
  for (auto* p : seen) EXPECT_EQ(p, seen[0]) << "one global buffer for every reader";
  for (int64_t k = 0; k < 17 * 16; ++k) ASSERT_EQ(seen[0][k], 100 * (k / 16) + k % 16);
}

TEST(ShardedArrays, TwoAxisMeshWithPermutedDevicesAndUnevenColumns) {
  auto m = std::make_shared<const mj::Mesh>(std::vector<int>{7, 6, 5, 4, 3, 2, 1, 0}, mj::Shape{4, 2},
                                            std::vector<std::string>{"x", "y"});
  Array y = mj::device_put(grid_i32(8, 6), mj::NamedSharding{m, mj::P("y", "x")});
  auto shards = y.addressable_shards();
  ASSERT_EQ(shards.size(), 8u);
  for (size_t p = 0; p < 8; ++p) {
    int64_t cx = int64_t(p) / 2, cy = int64_t(p) % 2;  // row-major mesh coordinates
    EXPECT_EQ(shards[p].device, 7 - int(p));
    // rows: 8 over "y" (2) -> 4 each; columns: 6 over "x" (4) -> ceil = 2: [0,2) [2,4) [4,6) [6,6).
    EXPECT_EQ(shards[p].index[0], (std::pair<int64_t, int64_t>{4 * cy, 4 * cy + 4}));
    int64_t c0 = std::min<int64_t>(2 * cx, 6), c1 = std::min<int64_t>(2 * cx + 2, 6);
    EXPECT_EQ(shards[p].index[1], (std::pair<int64_t, int64_t>{c0, c1}));
  }
  expect_grid_shards(y);
}

TEST(ShardedArrays, EagerOpsSeeTheGlobalValueAndReturnUnshardedArrays) {
  auto m = mesh8();
  Array x = ramp_f32({12, 3});
  Array xs = mj::device_put(x, mj::NamedSharding{m, mj::P("data")});
  Array z = mj::sin(xs) * 2.0f;
  EXPECT_FALSE(z.is_sharded());
  const float* pz = z.data<float>();
  for (int64_t k = 0; k < 36; ++k) EXPECT_FLOAT_EQ(pz[k], 2.0f * std::sin(0.5f * float(k) - 3.f));
  // Printing shows the global value, the same text as the unsharded original.
  EXPECT_EQ(mj::device_put(x, mj::NamedSharding{m, mj::P("data")}).str(), x.str());
  // item() of a sharded scalar-sized array.
  Array one = mj::device_put(ramp_f32({1}), mj::NamedSharding{m, mj::P("data")});
  EXPECT_FLOAT_EQ(one.item<float>(), -3.f);
}

TEST(ShardedArrays, ReshardingAShardedArrayNeverGathersIt) {
  auto m = mesh8();
  auto m42 = std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, mj::Shape{4, 2},
                                              std::vector<std::string>{"a", "b"});
  Array xs = mj::device_put(grid_i32(17, 16), mj::NamedSharding{m, mj::P("data")});
  // Same mesh: rows -> columns (plan_reshard + execute_reshard).
  Array ys = mj::device_put(xs, mj::NamedSharding{m, mj::P(mj::None{}, "data")});
  EXPECT_TRUE(ys.sharding() == (mj::NamedSharding{m, mj::P(mj::None{}, "data")}));
  for (auto& sh : ys.addressable_shards()) EXPECT_EQ(sh.data.shape(), (mj::Shape{17, 2}));
  expect_grid_shards(ys);
  // Another mesh: boxes copied from the intersecting source shards.
  Array zs = mj::device_put(ys, mj::NamedSharding{m42, mj::P("b", "a")});
  expect_grid_shards(zs);
  EXPECT_FALSE(impl_of(xs).is_gathered());
  EXPECT_FALSE(impl_of(ys).is_gathered());
  // The inverse of make_sharded_array: local shards, then rebuilt.
  Sharding s = mj::to_sharding(mj::NamedSharding{m42, mj::P("a")}, 2);
  auto local = mj::local_shards(zs, s);
  ASSERT_EQ(local.size(), 8u);
  Array back = mj::make_sharded_array(zs.aval(), s, local);
  expect_grid_shards(back);
  EXPECT_FALSE(impl_of(zs).is_gathered());
}

TEST(ShardedArrays, MakeShardedArrayAcceptsPaddedShardsAndChecksThem) {
  auto m = mesh8();
  Sharding s = mj::to_sharding(mj::NamedSharding{m, mj::P("data")}, 2);
  ShapedArray global{{17, 16}, mj::DType::i32};
  // Padded shards of 3 rows each (as an SPMD program with padding would produce): shard d holds
  // rows 3d..3d+2 of the formula, the padding rows past 17 filled with -1.
  std::vector<Array> padded;
  for (int d = 0; d < 8; ++d) {
    Array a = Array::allocate(ShapedArray{{3, 16}, mj::DType::i32});
    int32_t* p = a.mutable_data<int32_t>();
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 16; ++j) p[i * 16 + j] = 3 * d + i < 17 ? int32_t(100 * (3 * d + i) + j) : -1;
    padded.push_back(a);
  }
  Array x = mj::make_sharded_array(global, s, padded);
  expect_grid_shards(x);
  const int32_t* g = x.data<int32_t>();
  for (int64_t k = 0; k < 17 * 16; ++k) ASSERT_EQ(g[k], 100 * (k / 16) + k % 16);
  padded.pop_back();
  EXPECT_THROW(mj::make_sharded_array(global, s, padded), mj::ShardingError);
  std::vector<Array> small(8, Array::allocate(ShapedArray{{1, 16}, mj::DType::i32}));
  EXPECT_THROW(mj::make_sharded_array(global, s, small), mj::ShapeError);
}

TEST(ShardedArrays, PinnedHostShardingKeepsItsMemoryKind) {
  auto m = mesh8();
  Array y = mj::device_put(grid_i32(16, 4),
                           mj::NamedSharding{m, mj::P("data"), mj::MemoryKind::pinned_host});
  EXPECT_EQ(y.memory_kind(), mj::MemoryKind::pinned_host);
  EXPECT_EQ(y.sharding().memory_kind(), mj::MemoryKind::pinned_host);
  for (auto& sh : y.addressable_shards()) {
    EXPECT_EQ(sh.data.memory_kind(), mj::MemoryKind::pinned_host);
    EXPECT_EQ(sh.data.concrete_impl().buffer()->memory_kind(), mj::MemoryKind::pinned_host);
  }
  expect_grid_shards(y);
  // Sharded -> other sharding and memory kind: moved shard by shard, the source never gathered.
  Array ys = mj::device_put(grid_i32(16, 4), mj::NamedSharding{m, mj::P("data")});
  Array yh = mj::device_put(ys, mj::NamedSharding{m, mj::P(mj::None{}, "data"), mj::MemoryKind::pinned_host});
  EXPECT_EQ(yh.memory_kind(), mj::MemoryKind::pinned_host);
  expect_grid_shards(yh);
  EXPECT_FALSE(impl_of(ys).is_gathered());
  // Staged: a memory-kind device_put, then the constraint.
  auto cj = mj::make_jaxpr([&](Array a) {
    return mj::device_put(a, mj::NamedSharding{m, mj::P("data"), mj::MemoryKind::pinned_host});
  })(grid_i32(16, 4));
  std::string t = mj::to_string(cj);
  EXPECT_NE(t.find("device_put[memory_kind=pinned_host]"), std::string::npos) << t;
  EXPECT_NE(t.find("sharding_constraint"), std::string::npos) << t;
}

TEST(ShardedArrays, UnshardedArrayReportsASingleDeviceSharding) {
  Array x = ramp_f32({2, 3});
  EXPECT_FALSE(x.is_sharded());
  auto s = x.sharding();
  EXPECT_EQ(s.mesh().num_devices(), 1u);
  EXPECT_TRUE(s.sharding.is_fully_replicated());
  EXPECT_EQ(s.spec(), mj::P());
  auto shards = x.addressable_shards();
  ASSERT_EQ(shards.size(), 1u);
  EXPECT_EQ(shards[0].index[0], (std::pair<int64_t, int64_t>{0, 2}));
  EXPECT_EQ(shards[0].index[1], (std::pair<int64_t, int64_t>{0, 3}));
}

TEST(ShardedArrays, SubAxisShardingHasNoPartitionSpec) {
  auto m = std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3}, mj::Shape{4},
                                            std::vector<std::string>{"x"});
  Sharding s = Sharding::replicated_on(m, 2);
  s.dims[0].axes = {mj::AxisRef::sub("x", 1, 2)};
  Array y = mj::device_put(grid_i32(4, 2), s);
  EXPECT_FALSE(y.sharding().is_named());
  EXPECT_TRUE(y.sharding() == s);
  EXPECT_THROW(y.sharding().spec(), mj::ShardingError);
  // "x":(1)2 is the major half of "x": devices 0, 1 hold rows [0, 2), devices 2, 3 rows [2, 4).
  auto shards = y.addressable_shards();
  for (size_t p = 0; p < 4; ++p)
    EXPECT_EQ(shards[p].index[0], (std::pair<int64_t, int64_t>{2 * int64_t(p / 2), 2 * int64_t(p / 2) + 2}));
  expect_grid_shards(y);
}

TEST(ShardingConstraint, PrintsInJaxprsAndDifferentiates) {
  auto m = mesh8();
  mj::NamedSharding ns{m, mj::P("data", mj::None{})};
  auto f = [&](Array x) { return mj::sum(mj::with_sharding_constraint(x, ns) * x); };
  Array x = ramp_f32({8, 2});
  std::string t = mj::to_string(mj::make_jaxpr(f)(x));
  EXPECT_NE(t.find("sharding_constraint[sharding=[{\"data\"}, {}]]"), std::string::npos) << t;
  // d/dx sum(x * x) = 2x; the cotangent passes through the transposed constraint.
  Array g = mj::grad(f)(x);
  for (int64_t k = 0; k < 16; ++k) EXPECT_FLOAT_EQ(g.data<float>()[k], 2.f * (0.5f * float(k) - 3.f));
  std::string tg = mj::to_string(mj::make_jaxpr(mj::grad(f))(x));
  size_t n = 0;
  for (size_t pos = 0; (pos = tg.find("sharding_constraint[", pos)) != std::string::npos; ++pos) ++n;
  EXPECT_GE(n, 2u) << "the primal and the cotangent are constrained:\n" << tg;
  // JVP: the tangent gets the same constraint.
  auto [out, tan] = mj::jvp([&](Array v) { return mj::with_sharding_constraint(v, ns); }, x, x);
  for (int64_t k = 0; k < 16; ++k) EXPECT_FLOAT_EQ(tan.data<float>()[k], 0.5f * float(k) - 3.f);
}

// Printed text with a constraint does not parse back: the sharding param has no reader (the text
// lacks the mesh), so the equation cannot be type-checked and parse_jaxpr refuses it, naming the
// param, rather than trusting declared types that compiled code would use as buffer sizes.
TEST(ShardingConstraint, PrintedTextIsRefusedByTheParserNamingTheParam) {
  auto m = mesh8();
  mj::NamedSharding ns{m, mj::P("data", mj::None{})};
  auto f = [&](Array x) { return mj::sin(mj::with_sharding_constraint(x, ns)); };
  std::string t = mj::to_string(mj::make_jaxpr(f)(ramp_f32({8, 2})));
  try {
    (void)mj::parse_jaxpr(t);
    ADD_FAILURE() << "parse_jaxpr accepted a constraint it cannot type-check:\n" << t;
  } catch (const mj::ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("sharding"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sharding_constraint"), std::string::npos) << msg;
  }
}

TEST(ShardingConstraint, VmapInsertsAnOpenBatchDim) {
  auto m = mesh8();
  mj::NamedSharding ns{m, mj::P("data")};
  auto f = [&](Array v) { return mj::with_sharding_constraint(v, ns); };
  Array xs = ramp_f32({3, 8, 2});
  std::string t = mj::to_string(mj::make_jaxpr(mj::vmap(f))(xs));
  EXPECT_NE(t.find("sharding=[{?}, {\"data\"}, {}]"), std::string::npos) << t;
  Array ys = mj::vmap(f)(xs);
  for (int64_t k = 0; k < 48; ++k) EXPECT_FLOAT_EQ(ys.data<float>()[k], 0.5f * float(k) - 3.f);
}

TEST(ShardingConstraint, PropagationKeepsItAndSpmdMatchesEager) {
  auto m = std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3}, mj::Shape{4},
                                            std::vector<std::string>{"x"});
  mj::NamedSharding cols{m, mj::P(mj::None{}, "x")};
  auto f = [&](Array v) { return mj::cos(mj::with_sharding_constraint(mj::sin(v), cols)); };
  Array x = ramp_f32({8, 4});
  auto cj = mj::make_jaxpr(f)(x);
  Sharding rows = mj::to_sharding(mj::NamedSharding{m, mj::P("x")}, 2);
  auto prop = mj::propagate_shardings(*cj.jaxpr, {rows}, {}, *m);
  const mj::Jaxpr& j = *cj.jaxpr;
  size_t ci = 0;
  while (j.eqns[ci].primitive->name != "sharding_constraint") ++ci;
  Sharding want = mj::to_sharding(cols, 2);
  EXPECT_EQ(prop.of(j.eqns[ci].outputs[0]), want) << prop.text;
  EXPECT_EQ(prop.of(j.invars[0]), rows) << prop.text;
  ASSERT_EQ(prop.reshards.size(), 1u) << prop.text;
  EXPECT_EQ(prop.reshards[0].to, want);
  mj::Jaxpr prog = mj::partition_spmd(j, prop, *m);
  std::vector<std::vector<Array>> args;
  for (auto& a : mj::local_shards(x, rows)) args.push_back({a});
  auto outs = mj::run_spmd(prog, *m, args);
  std::vector<Array> shards;
  for (auto& o : outs) shards.push_back(o[0]);
  Array got = mj::make_sharded_array(x.aval(), prop.of(std::get<mj::Var>(j.outvars[0])), shards);
  // Expected: cos(sin(x)) elementwise, computed here in float.
  const float* g = got.data<float>();
  for (int64_t k = 0; k < 32; ++k) EXPECT_NEAR(g[k], std::cos(std::sin(0.5f * float(k) - 3.f)), 1e-6f);
}

// docs/cases/uneven-shards.md, partitioning half: the SPMD partitioner rejects the uneven
// constraint with an error naming 17, the 8 devices and the spec.
TEST(ShardingConstraint, UnevenConstraintIsRejectedByPartitionSpmd) {
  auto m = mesh8();
  auto cj = mj::make_jaxpr([&](Array v) {
    return mj::with_sharding_constraint(v, mj::NamedSharding{m, mj::P("data", mj::None{})});
  })(grid_i32(17, 16));
  auto prop = mj::propagate_shardings(*cj.jaxpr, {}, {}, *m);
  expect_sharding_error(__LINE__, [&] { mj::partition_spmd(*cj.jaxpr, prop, *m); },
                        {"17", "8 devices", "{\"data\"}", "[17,16]"});
}

TEST(ShardingBadInput, EachThrowsShardingErrorNamingSpecShapeAndCallSite) {
  auto m = mesh8();
  Array x = grid_i32(17, 16);
  // (Each call under test is on the line of its __LINE__: the error must point there.)
  // A mesh shape that does not match the device count.
  expect_sharding_error(__LINE__, [&] { mj::Mesh(std::vector<int>{0, 1, 2}, mj::Shape{2, 2}, {"a", "b"}); },
                        {"[2,2]", "3 devices"});
  // An unknown axis name.
  expect_sharding_error(__LINE__, [&] { mj::device_put(x, mj::NamedSharding{m, mj::P("model")}); },
                        {"P('model')", "i32[17,16]", "Mesh('data': 8)"});
  // An axis used twice in one spec.
  expect_sharding_error(__LINE__, [&] { mj::with_sharding_constraint(x, mj::NamedSharding{m, mj::P("data", "data")}); },
                        {"P('data', 'data')", "i32[17,16]"});
  // A spec longer than the rank.
  expect_sharding_error(__LINE__, [&] { mj::device_put(x, mj::NamedSharding{m, mj::P("data", mj::None{}, mj::None{})}); },
                        {"P('data', None, None)", "i32[17,16]"});
  // The same under a trace (a staged constraint).
  expect_sharding_error(__LINE__, [&] { mj::make_jaxpr([&](Array v) { return mj::with_sharding_constraint(v, mj::NamedSharding{m, mj::P("zz")}); })(x); },
                        {"P('zz')", "i32[17,16]"});
  // Shardings on different meshes in one program: a constraint on mesh (8) in a program
  // propagated on mesh (4, 2).
  auto m42 = std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, mj::Shape{4, 2},
                                              std::vector<std::string>{"a", "b"});
  auto cj = mj::make_jaxpr([&](Array v) {
    return mj::with_sharding_constraint(v, mj::NamedSharding{m, mj::P("data")});
  })(ramp_f32({8, 4}));
  expect_sharding_error(__LINE__, [&] { mj::propagate_shardings(*cj.jaxpr, {}, {}, *m42); },
                        {"[{\"data\"}, {}]", "f32[8,4]", "Mesh('data': 8)", "Mesh('a': 4, 'b': 2)"});
}

// Bad specs given to jit and reshard_plan: the error names the spec, the array's shape (not only
// its rank) and the user's call site (the jit(...) line for jit, as the jit's documentation says).
TEST(ShardingBadInput, JitAndReshardPlanSpecErrorsNameTheShape) {
  auto m = mesh42();
  Array a = ramp({8, 64}, 1.f);
  auto twice = [](const Array& x) { return x * 2.0; };
  expect_sharding_error(
      __LINE__, [&] { auto jf = mj::jit(twice, {.in_shardings = {NamedSharding{m, P("z")}}});
                          jf(a); },
      {"P('z')", "f32[8,64]", "in_shardings entry 0", "'z'"});
  expect_sharding_error(
      __LINE__, [&] { auto jf = mj::jit(twice, {.in_shardings = {NamedSharding{m, P("x", "y", mj::None{})}}});
                          jf(a); },
      {"P('x', 'y', None)", "f32[8,64]", "more than the rank"});
  expect_sharding_error(
      __LINE__, [&] { auto jf = mj::jit(twice, {.out_shardings = {NamedSharding{m, P("y", "y")}}});
                          jf.lower(a); },
      {"P('y', 'y')", "f32[8,64]", "out_shardings entry 0", "twice"});
  expect_sharding_error(
      __LINE__, [&] { mj::reshard_plan(NamedSharding{m, P("x")}, NamedSharding{m, P("w")},
                                           mj::ShapedArray{{8, 8}, mj::DType::f32}); },
      {"P('w')", "f32[8,8]", "target"});
}

// The sharding API's bad input through the public API (a mesh shape that does not match its
// devices, an unknown axis, an axis used twice, a spec longer than the rank, shardings on two
// meshes, uneven shards under jit), each naming the spec, the shape (where there is an array) and
// this file's line.
TEST(ShardingBadInput, BadInputListNamesSpecShapeAndCallSite) {
  auto m = mesh42();
  auto m8 = std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, mj::Shape{8},
                                             std::vector<std::string>{"d"});
  Array a = ramp({8, 64}, 1.f);
  expect_sharding_error(__LINE__, [&] { mj::Mesh(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, mj::Shape{4, 4}, {"x", "y"}); },
                        {"[4,4]", "8"});
  expect_sharding_error(__LINE__, [&] { mj::device_put(a, NamedSharding{m, P("q")}); },
                        {"P('q')", "f32[8,64]", "'q'"});
  expect_sharding_error(__LINE__, [&] { mj::device_put(a, NamedSharding{m, P({"x", "x"})}); },
                        {"P(('x', 'x'))", "f32[8,64]", "twice"});
  expect_sharding_error(__LINE__, [&] { mj::with_sharding_constraint(a, NamedSharding{m, P("x", "y", "x")}); },
                        {"P('x', 'y', 'x')", "f32[8,64]"});
  expect_sharding_error(
      __LINE__, [&] { auto jf = mj::jit([](const Array& u, const Array& w) { return u + w; },
                                            {.in_shardings = {NamedSharding{m, P("x")}, NamedSharding{m8, P("d")}}});
                          jf(a, a); },
      {"Mesh('d': 8)", "Mesh('x': 4, 'y': 2)", "P('d')"});
  // docs/cases/uneven-shards.md under jit: 17 rows over 8 devices are rejected, naming 17, 8
  // and the spec.
  Array u = mj::reshape(mj::arange(17 * 16), {17, 16});
  expect_sharding_error(
      __LINE__, [&] { auto jf = mj::jit([](const Array& t) { return t + 1; }, {.in_shardings = {NamedSharding{m8, P("d")}}});
                          jf(u); },
      {"17", "8", "\"d\"", "input 0"});
  // The same uneven sharding asked by a constraint inside the function: propagation moves it back
  // to the argument (t * 2 is elementwise), and the error says which input and why it has it.
  expect_sharding_error(
      __LINE__, [&] { auto jf = mj::jit([&](const Array& t) { return mj::with_sharding_constraint(t * 2, NamedSharding{m8, P("d")}); },
                                        {.out_shardings = {NamedSharding{m8, P()}}});
                      jf(u); },
      {"17", "8", "\"d\"", "input 0 (its given or propagated sharding)"});
}

// The device count N is set by MINIJAX_NUM_DEVICES or mj::config before first use. Here N is
// already fixed (this binary's other tests use devices()), so a different config count must throw
// at the next devices() call, naming the call site, and the same count must not.
TEST(ShardingBadInput, ConfigDeviceCountCannotChangeAfterFirstUse) {
  const int n = mj::num_devices();
  mj::config().num_cpu_devices = n;
  EXPECT_EQ(mj::devices().size(), size_t(n));
  mj::config().num_cpu_devices = n + 1;
  expect_sharding_error(__LINE__, [&] { mj::devices(); },
                        {"num_cpu_devices = " + std::to_string(n + 1), std::to_string(n) + " devices"});
  mj::config().num_cpu_devices = 0;
  EXPECT_EQ(mj::num_devices(), n);
}
