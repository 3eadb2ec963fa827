// Tests of JAX's spellings of meshes and shardings: mj::make_mesh (jax.make_mesh), NamedSharding
// from a mesh value as well as a shared mesh, and mj::PartitionSpec (the alias of mj::P).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <minijax/minijax.h>

namespace {

// The ShardingError's call site is this file at `line`, and its message contains each of `parts`.
template <class F>
void expect_sharding_error(int line, F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no ShardingError";
  } catch (const mj::ShardingError& e) {
    EXPECT_EQ(int(e.where().line()), line) << e.what();
    EXPECT_NE(std::string(e.where().file_name()).find("test_jax_spellings.cc"), std::string::npos)
        << e.what();
    for (auto& s : parts)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << s << " not in: " << e.what();
  }
}

}  // namespace

// The tests' main runs 8 virtual devices (tests/main.cc).
TEST(JaxSpellings, MakeMeshUsesTheFirstDevicesRowMajor) {
  mj::Mesh m = mj::make_mesh({4, 2}, {"data", "model"});
  EXPECT_EQ(m.shape, (mj::Shape{4, 2}));
  EXPECT_EQ(m.axis_names, (std::vector<std::string>{"data", "model"}));
  EXPECT_EQ(m.device_ids, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(m.device_at({2, 1}), 5);  // row-major: 2 * 2 + 1
  EXPECT_EQ(m.str(), "Mesh('data': 4, 'model': 2)");

  mj::Mesh small = mj::make_mesh({3}, {"x"});  // fewer than all 8: the first three
  EXPECT_EQ(small.device_ids, (std::vector<int>{0, 1, 2}));
  mj::Mesh scalar = mj::make_mesh({}, {});      // a zero-axis mesh holds one device
  EXPECT_EQ(scalar.device_ids, (std::vector<int>{0}));
}

TEST(JaxSpellings, MakeMeshBadInputNamesShapeAndDeviceCount) {
  expect_sharding_error(__LINE__, [] { mj::make_mesh({4, 4}, {"data", "model"}); },
                        {"make_mesh", "[4,4]", "'data', 'model'", "needs 16 devices", "has 8 devices",
                         "set_num_devices"});
  expect_sharding_error(__LINE__, [] { mj::make_mesh({1LL << 40, 1LL << 40}, {"a", "b"}); },
                        {"make_mesh", "more than 2^63", "has 8 devices"});
  expect_sharding_error(__LINE__, [] { mj::make_mesh({4, 2}, {"data"}); },
                        {"make_mesh", "2 axis sizes but 1 axis names"});
  expect_sharding_error(__LINE__, [] { mj::make_mesh({2, 0}, {"a", "b"}); },
                        {"make_mesh", "axis 'b' has size 0"});
  expect_sharding_error(__LINE__, [] { mj::make_mesh({2, 2}, {"a", "a"}); },
                        {"axis name 'a' appears twice"});
}

TEST(JaxSpellings, PartitionSpecIsP) {
  static_assert(std::is_same_v<mj::PartitionSpec, mj::P>);
  mj::PartitionSpec spec("data", mj::None{}, {"x", "y"});
  EXPECT_EQ(spec.str(), "P('data', None, ('x', 'y'))");
  EXPECT_EQ(spec, mj::P("data", mj::None{}, {"x", "y"}));
}

TEST(JaxSpellings, NamedShardingFromAMeshValueOrPointer) {
  mj::Mesh m = mj::make_mesh({4, 2}, {"data", "model"});
  mj::NamedSharding by_value(m, mj::P("data"));
  auto shared = std::make_shared<const mj::Mesh>(m);
  mj::NamedSharding by_pointer{shared, mj::PartitionSpec("data")};
  ASSERT_NE(by_value.mesh, nullptr);
  EXPECT_NE(by_value.mesh.get(), shared.get());  // a copy of the value
  EXPECT_EQ(*by_value.mesh, m);
  EXPECT_EQ(by_pointer.mesh.get(), shared.get());  // the pointer is shared, not copied
  EXPECT_TRUE(by_value == by_pointer);             // meshes compare by value
  EXPECT_EQ(by_value.memory_kind, mj::MemoryKind::device);
  mj::NamedSharding host(m, mj::P(), mj::MemoryKind::pinned_host);
  EXPECT_EQ(host.str(),
            "NamedSharding(mesh=Mesh('data': 4, 'model': 2), spec=P(), memory_kind=pinned_host)");
  EXPECT_FALSE(host == by_value);
  // A temporary mesh (JAX's NamedSharding(jax.make_mesh(...), P(...))) is copied too.
  mj::NamedSharding tmp(mj::make_mesh({8}, {"x"}), mj::P("x"));
  EXPECT_EQ(tmp.mesh->shape, (mj::Shape{8}));
}

// Both forms put data on the same devices, and one jit call mixes them (one mesh by value).
TEST(JaxSpellings, MeshValueShardingsWorkWithDevicePutAndJit) {
  mj::Mesh m = mj::make_mesh({4, 2}, {"data", "model"});
  mj::Array x = mj::reshape(mj::arange(0, 16, 1, mj::f32), {8, 2});  // x[i, j] = 2 i + j
  mj::Array xs = mj::device_put(x, mj::NamedSharding(m, mj::P("data", "model")));
  ASSERT_TRUE(xs.is_sharded());
  auto shards = xs.addressable_shards();
  ASSERT_EQ(shards.size(), 8u);
  // Device 3 is at mesh coordinates (1, 1): rows [2, 4) and column 1: values 5 and 7.
  for (auto& s : shards) {
    if (s.device != 3) continue;
    EXPECT_EQ(s.index, (std::vector<std::pair<int64_t, int64_t>>{{2, 4}, {1, 2}}));
    EXPECT_EQ(s.data.data<float>()[0], 5.f);
    EXPECT_EQ(s.data.data<float>()[1], 7.f);
  }
  auto f = mj::jit([](const mj::Array& a) { return a * 2.0; },
                   mj::JitOptions{.in_shardings = {mj::NamedSharding(m, mj::P("data"))},
                                  .out_shardings = {mj::NamedSharding{
                                      std::make_shared<const mj::Mesh>(m), mj::P(mj::None{}, "model")}}});
  mj::Array y = f(x);
  EXPECT_TRUE(y.sharding() == mj::NamedSharding(m, mj::P(mj::None{}, "model")));
  const float* p = y.data<float>();
  for (int k = 0; k < 16; ++k) EXPECT_EQ(p[k], 2.f * float(k)) << k;
}
