// Tests of memory kinds with jit's shardings (JAX's tests/memories_test.py): out_shardings place
// results in their memory kind, closed-over host constants moved by device_put, in_shardings.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <minijax/minijax.h>

#include "sharding/partition_spmd.h"
#include "sharding/propagate_shardings.h"

using minijax::Array;
using mj::MemoryKind;

namespace {

// np.arange(16).reshape(8, 2) as i32: element [i, j] = 2 i + j (the expected value of every
// element below is this formula).
Array arange_8x2() { return mj::reshape(mj::arange(0, 16, 1, mj::i32), {8, 2}); }

// Each addressable shard of `x` is in memory kind `kind` and holds scale * (2 i + j) at its
// global indices [i, j]; the array's own aval is in `kind` too.
void expect_shards(const Array& x, MemoryKind kind, int32_t scale = 1) {
  EXPECT_EQ(x.memory_kind(), kind);
  for (auto& sh : x.addressable_shards()) {
    EXPECT_EQ(sh.data.memory_kind(), kind) << "device " << sh.device;
    EXPECT_EQ(sh.data.concrete_impl().buffer()->memory_kind(), kind) << "device " << sh.device;
    ASSERT_EQ(sh.index.size(), 2u);
    const int64_t r0 = sh.index[0].first, c0 = sh.index[1].first, nc = sh.index[1].second - c0;
    Array local = mj::device_put(sh.data, MemoryKind::device);
    const int32_t* p = local.data<int32_t>();
    for (int64_t k = 0; k < local.size(); ++k)
      ASSERT_EQ(p[k], scale * (2 * (r0 + k / nc) + c0 + k % nc)) << "device " << sh.device << " at " << k;
  }
}

struct Shardings {
  mj::NamedSharding host, dev;
};

// JAX's _create_inputs: a (2, 2) mesh ("x", "y") and P("x", "y") in pinned_host and device.
Shardings mesh22_xy() {
  mj::Mesh mesh = mj::make_mesh({2, 2}, {"x", "y"});
  mj::NamedSharding host(mesh, mj::P("x", "y"), MemoryKind::pinned_host);
  return {host, mj::NamedSharding(host.mesh, host.spec, MemoryKind::device)};
}

}  // namespace

// memories_test.py's test_identity_jit_host_to_device_and_vice_versa: the identity with an
// out_sharding in the other memory kind returns the value there, laid out as asked. Before the
// fix propagation gave the returned input the out_sharding's layout but kept its memory kind, so
// the result stayed where the argument was.
TEST(MemoryKindsJit, IdentityJitHostToDeviceAndViceVersa) {
  Shardings s = mesh22_xy();
  Array arr_host = mj::device_put(arange_8x2(), s.host);
  Array arr_dev = mj::device_put(arange_8x2(), s.dev);

  auto f = mj::jit([](const Array& x) { return x; }, {.name = "to_dev", .out_shardings = {s.dev}});
  Array out_dev = f(arr_host);
  EXPECT_TRUE(out_dev.sharding() == s.dev) << out_dev.sharding().str();
  expect_shards(out_dev, MemoryKind::device);

  auto g = mj::jit([](const Array& x) { return x; }, {.name = "to_host", .out_shardings = {s.host}});
  Array out_host = g(arr_dev);
  EXPECT_TRUE(out_host.sharding() == s.host) << out_host.sharding().str();
  expect_shards(out_host, MemoryKind::pinned_host);
  // The argument is untouched.
  expect_shards(arr_host, MemoryKind::pinned_host);
}

// On one device: a one-device mesh with P(), and the layout changing with the memory kind
// (P("x", "y") on the host -> replicated on the device: the gather runs in device memory).
TEST(MemoryKindsJit, OutShardingMovesMemoryOnOneDeviceAndWithALayoutChange) {
  mj::Mesh one = mj::make_mesh({1}, {"x"});
  mj::NamedSharding s_dev(one, mj::P(), MemoryKind::device);
  Array h = mj::device_put(arange_8x2(), mj::NamedSharding(one, mj::P(), MemoryKind::pinned_host));
  auto f = mj::jit([](const Array& x) { return x; }, {.out_shardings = {s_dev}});
  Array o = f(h);
  EXPECT_TRUE(o.sharding() == s_dev) << o.sharding().str();
  expect_shards(o, MemoryKind::device);

  Shardings s = mesh22_xy();
  mj::NamedSharding replicated_dev(s.dev.mesh, mj::P(), MemoryKind::device);
  auto gather = mj::jit([](const Array& x) { return x * 3; }, {.out_shardings = {replicated_dev}});
  Array r = gather(mj::device_put(arange_8x2(), s.host));
  EXPECT_TRUE(r.sharding() == replicated_dev) << r.sharding().str();
  expect_shards(r, MemoryKind::device, 3);
}

// An unsharded pinned_host argument (no mesh of its own) returned with an out_sharding on a
// one-device mesh. Before the fix the out_sharding's device memory kind overwrote the argument's
// own in propagation, so the argument was moved to device memory before the call and then
// refused: "does not match the compiled program's i32<pinned_host>[4]".
TEST(MemoryKindsJit, UnshardedHostArgumentWithOutShardings) {
  mj::Mesh one = mj::make_mesh({1}, {"x"});
  mj::NamedSharding s_dev(one, mj::P(), MemoryKind::device);
  Array h = mj::device_put(mj::arange(0, 4, 1, mj::i32), MemoryKind::pinned_host);
  auto f = mj::jit([](const Array& x) { return x; }, {.out_shardings = {s_dev}});
  Array o = f(h);
  EXPECT_EQ(o.memory_kind(), MemoryKind::device);
  Array v = mj::device_put(o, MemoryKind::device);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(v.data<int32_t>()[k], k);
  EXPECT_EQ(h.memory_kind(), MemoryKind::pinned_host);

  // The lowered program keeps the argument on the host and moves it inside.
  auto low = f.lower(h);
  ASSERT_EQ(low.in_shardings.size(), 1u);
  EXPECT_EQ(low.in_shardings[0].memory_kind, MemoryKind::pinned_host);
  ASSERT_EQ(low.out_shardings.size(), 1u);
  EXPECT_EQ(low.out_shardings[0].memory_kind, MemoryKind::device);
  EXPECT_NE(mj::to_string(low.program).find("device_put[memory_kind=device]"), std::string::npos)
      << mj::to_string(low.program);
}

// memories_test.py's test_close_over_host_constant_and_stream: a pinned_host constant closed
// over by the jitted function, device_put to the device and doubled, with out_shardings. Before
// the fix the partitioner treated the constraint as the identity and kept the constant on the
// host: "mul(i32<pinned_host>[4,1], i32[]): operands must share a memory kind".
TEST(MemoryKindsJit, CloseOverHostConstantAndStream) {
  Shardings s = mesh22_xy();
  Array inp_host = mj::device_put(arange_8x2(), s.host);
  auto f = mj::jit(
      [&]() {
        Array y = mj::device_put(inp_host, s.dev);
        return y * 2;
      },
      {.out_shardings = {s.dev}});
  Array out = f();
  EXPECT_TRUE(out.sharding() == s.dev) << out.sharding().str();
  expect_shards(out, MemoryKind::device, 2);
  // Without out_shardings (the unpartitioned compiler) the same value, in device memory.
  auto g = mj::jit([&]() { return mj::device_put(inp_host, s.dev) * 2; });
  Array plain = g();
  EXPECT_EQ(plain.memory_kind(), MemoryKind::device);
  Array v = mj::device_put(plain, MemoryKind::device);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(v.data<int32_t>()[k], 2 * k);
}

// One value returned twice in two memory kinds, and a literal output with a host out_sharding
// (memories_test.py's test_parameter_and_output_streaming_with_scalar returns (x, x) on the host).
TEST(MemoryKindsJit, OutputsTakeEachTheirOutShardingsMemoryKind) {
  Shardings s = mesh22_xy();
  mj::NamedSharding host_all(s.dev.mesh, mj::P(), MemoryKind::pinned_host);
  auto f = mj::jit([](const Array& x) { return std::pair{x, x * 2}; },
                   {.out_shardings = {host_all, s.dev}});
  auto [a, b] = f(mj::device_put(arange_8x2(), s.dev));
  EXPECT_TRUE(a.sharding() == host_all) << a.sharding().str();
  expect_shards(a, MemoryKind::pinned_host);
  EXPECT_TRUE(b.sharding() == s.dev) << b.sharding().str();
  expect_shards(b, MemoryKind::device, 2);

  auto g = mj::jit([](const Array& x) { return std::pair{x, x}; }, {.out_shardings = {host_all, host_all}});
  auto [c, d] = g(mj::scalar(1, mj::i32));
  EXPECT_EQ(c.memory_kind(), MemoryKind::pinned_host);
  EXPECT_EQ(d.memory_kind(), MemoryKind::pinned_host);
  EXPECT_EQ(mj::device_put(d, MemoryKind::device).item<int32_t>(), 1);

  auto lit = mj::jit([](const Array& x) { return std::pair{x, mj::scalar(3.0, mj::f32)}; },
                     {.out_shardings = {s.dev, host_all}});
  auto [e, three] = lit(mj::device_put(arange_8x2(), s.dev));
  expect_shards(e, MemoryKind::device);
  EXPECT_EQ(three.memory_kind(), MemoryKind::pinned_host);
  for (auto& sh : three.addressable_shards()) EXPECT_EQ(sh.data.memory_kind(), MemoryKind::pinned_host);
  EXPECT_EQ(mj::device_put(three, MemoryKind::device).item<float>(), 3.f);
}

// Propagation keeps every variable in its aval's memory kind and places the memory move as a
// reshard at the output (no collective: 0 elements received).
TEST(MemoryKindsJit, PropagationMovesMemoryAtTheOutputOnly) {
  Shardings s = mesh22_xy();
  Array h = mj::device_put(arange_8x2(), s.host);
  mj::ClosedJaxpr cj = mj::make_jaxpr([](const Array& x) { return x + x; })(h);
  const mj::Jaxpr& j = *cj.jaxpr;
  mj::Sharding dev = mj::to_sharding(s.dev, 2);
  mj::PropagationResult r = mj::propagate_shardings(j, {}, {dev}, *s.dev.mesh);
  EXPECT_EQ(r.of(j.invars[0]).memory_kind, MemoryKind::pinned_host);
  const mj::Var out = std::get<mj::Var>(j.outvars[0]);
  EXPECT_EQ(r.of(out).memory_kind, MemoryKind::pinned_host);
  EXPECT_EQ(r.of(out).str(), "[{\"x\"}, {\"y\"}], memory_kind=pinned_host");
  ASSERT_EQ(r.reshards.size(), 1u);
  EXPECT_TRUE(r.reshards[0].on_output);
  EXPECT_EQ(r.reshards[0].to.memory_kind, MemoryKind::device);
  EXPECT_EQ(r.reshards[0].max_received, 0);
  mj::Jaxpr local = mj::partition_spmd(j, r, *s.dev.mesh);
  EXPECT_EQ(local.out_avals()[0].str(), "i32[4,1]");
  // An input sharding in another memory kind than its input's is refused, naming both.
  mj::Sharding dev_given = mj::to_sharding(s.dev, 2);
  try {
    (void)mj::propagate_shardings(j, {dev_given}, {}, *s.dev.mesh);
    ADD_FAILURE() << "no error";
  } catch (const mj::ShardingError& e) {
    EXPECT_NE(std::string(e.what()).find("is in device memory, but the input i32<pinned_host>[8,2] is in "
                                         "pinned_host memory"),
              std::string::npos)
        << e.what();
  }
}

// memories_test.py's test_jit_in_shardings: in_shardings in another memory kind than the
// argument's is a ValueError (JAX: "Memory kinds passed to jax.jit does not match memory kind on
// the respective arg"), for a committed and an uncommitted argument, naming the function, the
// argument, both kinds and the call site. Before the fix the argument was moved to the sharding's
// memory, and the call failed with a TypeError naming neither the sharding nor in_shardings.
TEST(MemoryKindsJit, InShardingsInAnotherMemoryKindIsAValueError) {
  Shardings s = mesh22_xy();
  const int line = __LINE__ + 1;
  auto f = mj::jit([](const Array& x) { return x * 2; }, {.name = "twice", .in_shardings = {s.host}});
  for (const Array& arg : {mj::device_put(arange_8x2(), s.dev), arange_8x2()}) {
    try {
      (void)f(arg);
      ADD_FAILURE() << "no error";
    } catch (const mj::ValueError& e) {
      const std::string m = e.what();
      for (const char* part : {"jit 'twice'", "in_shardings entry 0", "argument 0", "pinned_host memory",
                               "i32[8,2] in device memory"})
        EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
      EXPECT_EQ(int(e.where().line()), line) << m;
    }
  }
  // Under a trace (jit inside jit) the same error.
  auto outer = mj::jit([&](const Array& x) { return f(x); });
  EXPECT_THROW((void)outer(arange_8x2()), mj::ValueError);
  // In the matching memory kind it runs (test_jit_in_shardings's g).
  auto g = mj::jit([](const Array& x) { return x * 2; }, {.in_shardings = {s.dev}});
  expect_shards(g(mj::device_put(arange_8x2(), s.dev)), MemoryKind::device, 2);
}
