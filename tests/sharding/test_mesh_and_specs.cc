// Tests of Mesh, the Shardy-style Sharding (validation, printing) and PartitionSpec/NamedSharding.
// Expected values are derived by hand in comments (row-major coordinates, JAX's and Shardy's text).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <minijax/minijax.h>

#include "core/device.h"

namespace {

using namespace minijax;

std::shared_ptr<const Mesh> mesh42() {
  return std::make_shared<const Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, Shape{4, 2},
                                      std::vector<std::string>{"x", "y"});
}

bool contains(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

// ---------------- Mesh ----------------

// collective_groups on Mesh('x': 2, 'y': 3, 'z': 2) over ('z', 'x'): a group is the devices
// sharing a y coordinate (3 groups of 2*2); the rank is z*2 + x (row-major in the named order).
// Checked against the row-major coordinates spelled out: position p = x*6 + y*2 + z.
TEST(Mesh, CollectiveGroupsRankRowMajorOverTheNamedAxes) {
  Mesh m({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2}, {"x", "y", "z"});
  CollectiveGroups g = collective_groups(m, {"z", "x"});
  EXPECT_EQ(g.size, 4);
  ASSERT_EQ(g.members.size(), 3u);
  ASSERT_EQ(g.rank.size(), 12u);
  for (int64_t x = 0; x < 2; ++x)
    for (int64_t y = 0; y < 3; ++y)
      for (int64_t z = 0; z < 2; ++z) {
        const size_t p = size_t(x * 6 + y * 2 + z);
        EXPECT_EQ(g.rank[p], z * 2 + x) << p;
        // groups are numbered by their first member: y = 0, 1, 2 in turn
        EXPECT_EQ(g.members[size_t(y)][size_t(z * 2 + x)], p) << p;
      }
  // Over no axes every device is its own group of one; an unknown axis is a ShardingError.
  EXPECT_EQ(collective_groups(m, {}).members.size(), 12u);
  EXPECT_THROW(collective_groups(m, {"w"}), ShardingError);
}

TEST(Mesh, WrongDeviceCountNamesShapeCountAndCallSite) {
  int line = 0;
  try {
    line = __LINE__ + 1;
    Mesh m({0, 1, 2, 3, 4, 5}, {4, 2}, {"x", "y"});
    FAIL() << "expected ShardingError";
  } catch (const ShardingError& e) {
    std::string w = e.what();
    EXPECT_TRUE(contains(w, "[4,2]")) << w;        // mesh shape
    EXPECT_TRUE(contains(w, "6 devices")) << w;    // the device count given
    EXPECT_TRUE(contains(w, "holds 8")) << w;      // what the shape needs
    EXPECT_EQ(e.where().line(), unsigned(line));   // the user's call site
    EXPECT_TRUE(contains(e.where().file_name(), "test_mesh_and_specs.cc"));
  }
}

TEST(Mesh, OtherValidationErrors) {
  EXPECT_THROW(Mesh({0, 1}, {2}, {"x", "y"}), ShardingError);        // names vs axes
  EXPECT_THROW(Mesh({0, 1, 2, 3}, {2, 2}, {"x", "x"}), ShardingError);  // duplicate name
  EXPECT_THROW(Mesh({0, 1}, {2}, {""}), ShardingError);               // empty name
  EXPECT_THROW(Mesh({0, 0}, {2}, {"x"}), ShardingError);              // duplicate device
  EXPECT_THROW(Mesh({0, -1}, {2}, {"x"}), ShardingError);             // negative id
  EXPECT_THROW(Mesh({}, {0}, {"x"}), ShardingError);                  // axis size 0
  try {
    Mesh({0, 1, 2, 3}, {2, 2}, {"x", "x"});
  } catch (const ShardingError& e) {
    EXPECT_TRUE(contains(e.what(), "'x' appears twice")) << e.what();
  }
}

TEST(Mesh, AxisSizesAndIndices) {
  auto m = mesh42();
  EXPECT_EQ(m->axis_size("x"), 4);
  EXPECT_EQ(m->axis_size("y"), 2);
  EXPECT_EQ(m->axis_index("y"), 1);
  EXPECT_EQ(m->num_devices(), 8u);
  EXPECT_TRUE(m->has_axis("x"));
  EXPECT_FALSE(m->has_axis("z"));
  try {
    m->axis_size("z");
    FAIL();
  } catch (const ShardingError& e) {
    EXPECT_TRUE(contains(e.what(), "'z'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "['x', 'y']")) << e.what();
  }
}

TEST(Mesh, CoordsRoundTripWithPermutedDevices) {
  // Mesh (2,2,2) over devices in reverse order: position p has row-major coords of p
  // (p = 4a + 2b + c) and holds device 7 - p.
  Mesh m({7, 6, 5, 4, 3, 2, 1, 0}, {2, 2, 2}, {"a", "b", "c"});
  for (size_t p = 0; p < 8; ++p) {
    auto c = m.coords_of(p);
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[0], int64_t(p) / 4);
    EXPECT_EQ(c[1], (int64_t(p) / 2) % 2);
    EXPECT_EQ(c[2], int64_t(p) % 2);
    EXPECT_EQ(m.position_of(c), p);
    EXPECT_EQ(m.device_at(c), 7 - int(p));
    EXPECT_EQ(m.position_of_device(7 - int(p)), int64_t(p));
  }
  EXPECT_EQ(m.position_of_device(8), -1);
  EXPECT_THROW(m.coords_of(8), IndexError);
  EXPECT_THROW(m.device_at({0, 2, 0}), IndexError);
  EXPECT_THROW(m.device_at({0, 0}), IndexError);
}

TEST(Mesh, Printing) {
  EXPECT_EQ(mesh42()->str(), "Mesh('x': 4, 'y': 2)");
  Mesh m({1, 0}, {2}, {"d"});
  EXPECT_EQ(m.str(), "Mesh('d': 2, devices=[1, 0])");
}

TEST(Mesh, VirtualDevices) {
  // The count is fixed at first use (other tests of this binary may fix it first): after
  // that, setting the same count is allowed and a different one is refused.
  int n = num_devices();
  ASSERT_GE(n, 1);
  std::vector<int> expected;
  for (int i = 0; i < n; ++i) expected.push_back(i);
  EXPECT_EQ(devices(), expected);
  EXPECT_NO_THROW(set_num_devices(n));
  EXPECT_THROW(set_num_devices(n + 1), ShardingError);
  EXPECT_THROW(set_num_devices(0), ShardingError);
  EXPECT_EQ(num_devices(), n);
}

// tests/main.cc configures 8 devices; each descriptor names its id, process, memories and the
// capacities configured now (0 = unlimited), and an id outside 0..7 is refused naming the count.
TEST(Mesh, DeviceDescriptors) {
  ASSERT_EQ(num_devices(), 8);
  const Device d = device(5);
  EXPECT_EQ(d.id, 5);
  EXPECT_EQ(d.process_index, 0);
  EXPECT_EQ(d.str(), "CpuDevice(id=5)");
  ASSERT_EQ(d.memories.size(), 3u);
  EXPECT_EQ(d.memories[0].kind, MemoryKind::device);
  EXPECT_FALSE(d.memories[0].shared_by_process);
  EXPECT_TRUE(d.memories[1].shared_by_process);
  EXPECT_EQ(d.capacity_bytes(MemoryKind::device), 0);
  const int64_t saved_dev = config().device_memory_bytes, saved_host = config().host_memory_bytes;
  config().device_memory_bytes = 1 << 20;
  config().host_memory_bytes = 3 << 20;
  const Device e = device(7);
  config().device_memory_bytes = saved_dev;
  config().host_memory_bytes = saved_host;
  EXPECT_EQ(e.capacity_bytes(MemoryKind::device), 1 << 20);
  EXPECT_EQ(e.capacity_bytes(MemoryKind::pinned_host), 3 << 20);
  EXPECT_EQ(e.capacity_bytes(MemoryKind::unpinned_host), 3 << 20);
  try {
    device(8);
    ADD_FAILURE() << "device(8) did not throw";
  } catch (const ValueError& err) {
    EXPECT_NE(std::string(err.what()).find("device(8)"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("8 devices"), std::string::npos) << err.what();
  }
  EXPECT_THROW(device(-1), ValueError);
}

// ---------------- Sharding ----------------

TEST(Sharding, PrintedForm) {
  auto m = std::make_shared<const Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                                          13, 14, 15},
                                        Shape{4, 2, 2}, std::vector<std::string>{"x", "y", "z"});
  Sharding s;
  s.mesh = m;
  s.dims = {DimSharding{{AxisRef::axis("y")}},
            DimSharding{{AxisRef::sub("x", 1, 2)}, false, 1},
            DimSharding{{}, false},
            DimSharding{}};
  s.replicated = {AxisRef::axis("z")};
  s.unreduced = {AxisRef::sub("x", 2, 2)};
  EXPECT_EQ(s.str(),
            "[{\"y\"}, {\"x\":(1)2, ?}p1, {?}, {}], replicated={\"z\"}, unreduced={\"x\":(2)2}");
  EXPECT_NO_THROW(s.check({8, 8, 8, 8}));
  s.replicated.clear();
  s.unreduced.clear();
  s.memory_kind = MemoryKind::pinned_host;
  EXPECT_EQ(s.str(), "[{\"y\"}, {\"x\":(1)2, ?}p1, {?}, {}], memory_kind=pinned_host");
}

Sharding make(std::shared_ptr<const Mesh> m, std::vector<std::vector<AxisRef>> dims) {
  Sharding s;
  s.mesh = std::move(m);
  for (auto& d : dims) s.dims.push_back(DimSharding{d});
  return s;
}

void expect_invalid(const Sharding& s, const Shape& shape, const std::string& fragment) {
  try {
    s.check(shape);
    ADD_FAILURE() << "expected ShardingError for " << s.str();
  } catch (const ShardingError& e) {
    EXPECT_TRUE(contains(e.what(), fragment)) << e.what();
    EXPECT_TRUE(contains(e.what(), shape_str(shape))) << e.what();
  }
}

TEST(Sharding, SubAxisValidity) {
  auto m8 = std::make_shared<const Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, Shape{8},
                                         std::vector<std::string>{"x"});
  // Valid: x of size 8 = [2,2,2]; (1)2, (2)2, (4)2, (1)4, (2)4.
  EXPECT_NO_THROW(make(m8, {{AxisRef::sub("x", 1, 2)}, {AxisRef::sub("x", 2, 4)}}).check({4, 4}));
  EXPECT_NO_THROW(make(m8, {{AxisRef::sub("x", 4, 2)}, {AxisRef::sub("x", 1, 4)}}).check({4, 4}));
  // Invalid: 3 does not divide 8; (4)4 -> 16 > 8; size 1; the whole axis as a sub-axis.
  expect_invalid(make(m8, {{AxisRef::sub("x", 1, 3)}}), {6}, "does not split axis 'x'");
  expect_invalid(make(m8, {{AxisRef::sub("x", 4, 4)}}), {6}, "does not split axis 'x'");
  expect_invalid(make(m8, {{AxisRef::sub("x", 1, 1)}}), {6}, "does not split axis 'x'");
  expect_invalid(make(m8, {{AxisRef::sub("x", 1, 8)}}), {6}, "is the whole axis");
  // Overlap: (1)4 covers factors [1,4), (2)4 covers [2,8): they share (2)2.
  expect_invalid(make(m8, {{AxisRef::sub("x", 1, 4)}, {AxisRef::sub("x", 2, 4)}}), {4, 4},
                 "overlap");
  // A whole axis and any of its sub-axes overlap.
  expect_invalid(make(m8, {{AxisRef::axis("x")}, {AxisRef::sub("x", 4, 2)}}), {4, 4}, "overlap");
  // Adjacent mergeable sub-axes: (1)2 then (2)4 is (1)8 = "x".
  expect_invalid(make(m8, {{AxisRef::sub("x", 1, 2), AxisRef::sub("x", 2, 4)}}), {8},
                 "must be merged");
  // Not adjacent in factor order (minor before major) is allowed: (2)4 then (1)2.
  EXPECT_NO_THROW(make(m8, {{AxisRef::sub("x", 2, 4), AxisRef::sub("x", 1, 2)}}).check({8}));
}

TEST(Sharding, AxisErrors) {
  auto m = mesh42();
  expect_invalid(make(m, {{AxisRef::axis("x")}, {AxisRef::axis("x")}}), {4, 4},
                 "\"x\" is used twice");
  expect_invalid(make(m, {{AxisRef::axis("x"), AxisRef::axis("x")}}), {4}, "used twice");
  expect_invalid(make(m, {{AxisRef::axis("q")}}), {4}, "axis 'q'");
  expect_invalid(make(m, {{AxisRef::axis("x")}, {}}), {4}, "rank 1");
  Sharding r = make(m, {{AxisRef::axis("x")}});
  r.replicated = {AxisRef::axis("x")};
  expect_invalid(r, {4}, "used twice");
  // Uneven: 4*2 shards over 17 is valid (device_boxes gives the shards).
  EXPECT_NO_THROW(make(m, {{AxisRef::axis("x"), AxisRef::axis("y")}}).check({17}));
}

TEST(Sharding, CountsAndReplication) {
  auto m = mesh42();
  Sharding s = make(m, {{AxisRef::axis("y")}, {}});
  EXPECT_EQ(s.dims[0].num_shards(*m), 2);
  EXPECT_EQ(s.replication_factor(), 4);  // 8 devices / 2 shards
  EXPECT_FALSE(s.is_fully_replicated());
  EXPECT_TRUE(Sharding::replicated_on(m, 2).is_fully_replicated());
  EXPECT_EQ(Sharding::replicated_on(m, 2).replication_factor(), 8);
}

// ---------------- PartitionSpec / NamedSharding ----------------

TEST(PartitionSpec, Construction) {
  P p("x", None{}, {"y", "z"}, P::UNCONSTRAINED);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p.dims[0].kind, PDim::Kind::axes);
  EXPECT_EQ(p.dims[0].axes, (std::vector<std::string>{"x"}));
  EXPECT_TRUE(p.dims[1].is_none());
  EXPECT_EQ(p.dims[2].axes, (std::vector<std::string>{"y", "z"}));
  EXPECT_TRUE(p.dims[3].is_unconstrained());
  EXPECT_EQ(p.str(), "P('x', None, ('y', 'z'), UNCONSTRAINED)");
  EXPECT_EQ(P().str(), "P()");
  // A one-element tuple is the single axis; the empty tuple is None.
  EXPECT_EQ(P(PDim{"x"}), P("x"));
  EXPECT_EQ(P(std::vector<PDim>{std::string("x"), None{}}), P("x", None{}));
  EXPECT_TRUE(PDim(std::vector<std::string>{}).is_none());
  EXPECT_NE(P("x"), P("x", None{}));
  EXPECT_TRUE(P("x").equivalent(P("x", None{}, None{})));
  EXPECT_FALSE(P("x").equivalent(P(None{}, "x")));
}

TEST(PartitionSpec, ToShardingAndBack) {
  auto m = std::make_shared<const Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, Shape{2, 2, 2},
                                        std::vector<std::string>{"x", "y", "z"});
  NamedSharding ns{m, P({"x", "z"}, P::UNCONSTRAINED, "y"), MemoryKind::pinned_host};
  Sharding s = to_sharding(ns, 4);
  // Expected by hand: dim0 {"x","z"} closed, dim1 open empty, dim2 {"y"}, dim3 padded None.
  EXPECT_EQ(s.str(), "[{\"x\", \"z\"}, {?}, {\"y\"}, {}], memory_kind=pinned_host");
  EXPECT_NO_THROW(s.check({4, 3, 2, 5}));
  auto back = to_named(s);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, ns);  // ns has no trailing None, so the round trip is exact
  // Trailing None entries are dropped on the way back: equivalent, not equal.
  NamedSharding ns2{m, P("x", None{}), MemoryKind::device};
  auto back2 = to_named(to_sharding(ns2, 2));
  ASSERT_TRUE(back2.has_value());
  EXPECT_EQ(back2->spec, P("x"));
  EXPECT_TRUE(back2->spec.equivalent(ns2.spec));
  // Sharding -> NamedSharding -> Sharding is exact when expressible.
  Sharding t = make(m, {{}, {AxisRef::axis("z"), AxisRef::axis("x")}});
  auto tn = to_named(t);
  ASSERT_TRUE(tn.has_value());
  EXPECT_EQ(tn->spec, P(None{}, {"z", "x"}));
  EXPECT_EQ(to_sharding(*tn, 2), t);
}

TEST(PartitionSpec, InexpressibleShardings) {
  auto m = mesh42();
  EXPECT_FALSE(to_named(make(m, {{AxisRef::sub("x", 1, 2)}})).has_value());
  Sharding pr = make(m, {{AxisRef::axis("x")}});
  pr.dims[0].priority = 0;
  EXPECT_FALSE(to_named(pr).has_value());
  Sharding open = make(m, {{AxisRef::axis("x")}});
  open.dims[0].closed = false;
  EXPECT_FALSE(to_named(open).has_value());
  Sharding un = make(m, {{}});
  un.unreduced = {AxisRef::axis("x")};
  EXPECT_FALSE(to_named(un).has_value());
  // Explicitly replicated axes are dropped: NamedSharding replicates over unused axes anyway.
  Sharding rep = make(m, {{AxisRef::axis("x")}});
  rep.replicated = {AxisRef::axis("y")};
  auto rn = to_named(rep);
  ASSERT_TRUE(rn.has_value());
  EXPECT_EQ(rn->spec, P("x"));
}

TEST(PartitionSpec, Errors) {
  auto m = mesh42();
  int line = 0;
  try {
    line = __LINE__ + 1;
    to_sharding(NamedSharding{m, P("x", "y", None{})}, 2);
    FAIL();
  } catch (const ShardingError& e) {
    EXPECT_TRUE(contains(e.what(), "3 entries, more than the rank 2")) << e.what();
    EXPECT_TRUE(contains(e.what(), "P('x', 'y', None)")) << e.what();
    EXPECT_EQ(e.where().line(), unsigned(line));
  }
  try {
    to_sharding(NamedSharding{m, P("x", {"y", "x"})}, 2);
    FAIL();
  } catch (const ShardingError& e) {
    EXPECT_TRUE(contains(e.what(), "'x' appears twice (dimensions 0 and 1)")) << e.what();
  }
  try {
    to_sharding(NamedSharding{m, P("w")}, 1);
    FAIL();
  } catch (const ShardingError& e) {
    EXPECT_TRUE(contains(e.what(), "axis 'w'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "Mesh('x': 4, 'y': 2)")) << e.what();
  }
  EXPECT_THROW(to_sharding(NamedSharding{nullptr, P()}, 1), ShardingError);
}

TEST(PartitionSpec, NamedShardingPrinting) {
  NamedSharding ns{mesh42(), P("x", None{}), MemoryKind::device};
  EXPECT_EQ(ns.str(), "NamedSharding(mesh=Mesh('x': 4, 'y': 2), spec=P('x', None), "
                      "memory_kind=device)");
}

}  // namespace
