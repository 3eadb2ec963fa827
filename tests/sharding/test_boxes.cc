// Tests of device_boxes: brute force over every element (who must hold it, derived by decomposing
// its shard index into axis coordinates), uneven shards by hand, sub-axes via equivalent meshes.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>

#include <minijax/minijax.h>

namespace {

using namespace minijax;

std::shared_ptr<const Mesh> mk(std::vector<int> ids, Shape shape, std::vector<std::string> names) {
  return std::make_shared<const Mesh>(std::move(ids), std::move(shape), std::move(names));
}

// The devices that must hold element `idx` under a sharding of whole axes, found the other way
// round from device_boxes: the element's shard index along dim d is idx[d] / ceil(dim/n); its
// mixed-radix digits (minor axis last) fix the coordinate of each axis of the dim; every mesh
// position whose coordinates match all fixed ones holds the element.
std::set<int> expected_holders(const Sharding& s, const Shape& shape,
                               const std::vector<int64_t>& idx) {
  const Mesh& m = *s.mesh;
  std::map<std::string, int64_t> fixed;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t n = 1;
    for (auto& a : s.dims[d].axes) n *= m.axis_size(a.name);
    int64_t chunk = (shape[d] + n - 1) / n;
    int64_t j = idx[d] / chunk;
    for (size_t i = s.dims[d].axes.size(); i-- > 0;) {
      int64_t k = m.axis_size(s.dims[d].axes[i].name);
      fixed[s.dims[d].axes[i].name] = j % k;
      j /= k;
    }
  }
  std::set<int> out;
  for (size_t p = 0; p < m.num_devices(); ++p) {
    auto c = m.coords_of(p);
    bool ok = true;
    for (auto& [name, v] : fixed) ok = ok && c[size_t(m.axis_index(name))] == v;
    if (ok) out.insert(m.device_ids[p]);
  }
  return out;
}

// Every element is held by exactly the expected devices.
void brute_force(const NamedSharding& ns, const Shape& shape) {
  Sharding s = to_sharding(ns, int64_t(shape.size()));
  auto boxes = device_boxes(s, shape);
  ASSERT_EQ(boxes.size(), ns.mesh->num_devices());
  int64_t total = 0;
  for (auto& b : boxes) total += b.volume();
  // Each element is held replication_factor times: the volumes add up to that many copies.
  EXPECT_EQ(total, shape_size(shape) * s.replication_factor()) << s.str();
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < shape_size(shape); ++e) {
    int64_t r = e;
    for (size_t d = shape.size(); d-- > 0;) {
      idx[d] = r % shape[d];
      r /= shape[d];
    }
    std::set<int> got;
    for (size_t p = 0; p < boxes.size(); ++p)
      if (boxes[p].contains(idx)) got.insert(ns.mesh->device_ids[p]);
    ASSERT_EQ(got, expected_holders(s, shape, idx))
        << ns.str() << " shape " << shape_str(shape) << " element " << e;
  }
}

TEST(DeviceBoxes, BruteForceOneAxisMesh) {
  for (auto ids : {std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, std::vector<int>{3, 7, 1, 5, 0, 2, 6, 4}}) {
    auto m = mk(ids, {8}, {"x"});
    brute_force({m, P("x")}, {8});
    brute_force({m, P("x")}, {16, 3});
    brute_force({m, P(None{}, "x")}, {3, 8});
    brute_force({m, P("x")}, {5, 2});   // uneven: 1 row each on 5 devices, 3 empty
    brute_force({m, P()}, {4, 4});      // replicated
  }
}

TEST(DeviceBoxes, BruteForceTwoAxisMesh) {
  for (auto ids : {std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, std::vector<int>{6, 0, 4, 2, 7, 1, 5, 3}}) {
    auto m = mk(ids, {4, 2}, {"x", "y"});
    brute_force({m, P("x", "y")}, {8, 4});
    brute_force({m, P("y", "x")}, {4, 8});
    brute_force({m, P({"x", "y"})}, {8, 3});
    brute_force({m, P({"y", "x"})}, {16});
    brute_force({m, P(None{}, "x")}, {3, 6});  // uneven 6 over 4: shards of 2, 2, 2, 0
    brute_force({m, P("y")}, {7, 2});          // uneven 7 over 2: 4 and 3 rows
    brute_force({m, P({"x", "y"})}, {17});
  }
}

TEST(DeviceBoxes, BruteForceThreeAxisMesh) {
  for (auto ids : {std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, std::vector<int>{5, 4, 7, 6, 1, 0, 3, 2}}) {
    auto m = mk(ids, {2, 2, 2}, {"a", "b", "c"});
    brute_force({m, P("a", "b", "c")}, {2, 4, 6});
    brute_force({m, P({"c", "a"}, None{}, "b")}, {4, 3, 2});
    brute_force({m, P("b", {"c", "a"})}, {5, 7});
    brute_force({m, P(None{}, {"a", "b", "c"})}, {2, 9});
  }
}

TEST(DeviceBoxes, ReplicatedDimsAreWhole) {
  auto m = mk({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2}, {"x", "y"});
  auto boxes = device_boxes(to_sharding({m, P(None{}, "y")}, 3), {5, 6, 7});
  for (size_t p = 0; p < 8; ++p) {
    EXPECT_EQ(boxes[p].lo[0], 0);
    EXPECT_EQ(boxes[p].hi[0], 5);
    EXPECT_EQ(boxes[p].lo[2], 0);
    EXPECT_EQ(boxes[p].hi[2], 7);
    // y coordinate = p % 2 -> columns [3*y, 3*y + 3).
    EXPECT_EQ(boxes[p].lo[1], 3 * int64_t(p % 2));
    EXPECT_EQ(boxes[p].hi[1], 3 * int64_t(p % 2) + 3);
  }
  for (auto& b : device_boxes(Sharding::replicated_on(m, 2), {3, 4}))
    EXPECT_EQ(b, (Box{{0, 0}, {3, 4}}));
  // Rank 0: one element, every device holds it.
  for (auto& b : device_boxes(Sharding::replicated_on(m, 0), {})) EXPECT_EQ(b.volume(), 1);
}

TEST(DeviceBoxes, UnevenShardsCase) {
  // docs/cases/uneven-shards.md: int32[17, 16], P("data", None), 8 devices. Shard size
  // ceil(17/8) = 3: devices 0-4 hold rows [3i, 3i+3), device 5 rows [15, 17), 6 and 7 none.
  auto m = mk({0, 1, 2, 3, 4, 5, 6, 7}, {8}, {"data"});
  auto boxes = device_boxes(to_sharding({m, P("data", None{})}, 2), {17, 16});
  ASSERT_EQ(boxes.size(), 8u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(boxes[size_t(i)], (Box{{3 * i, 0}, {3 * i + 3, 16}}));
  EXPECT_EQ(boxes[5], (Box{{15, 0}, {17, 16}}));
  EXPECT_EQ(boxes[5].volume(), 32);
  EXPECT_EQ(boxes[6].volume(), 0);
  EXPECT_EQ(boxes[7].volume(), 0);
  EXPECT_EQ(boxes[0].str(), "[0:3, 0:16]");
}

TEST(DeviceBoxes, SubAxesAreMajorAndMinorHalves) {
  // Axis x of size 4 over devices [0, 1, 2, 3] (coordinate = device id here).
  auto m = mk({0, 1, 2, 3}, {4}, {"x"});
  Sharding major;
  major.mesh = m;
  major.dims = {DimSharding{{AxisRef::sub("x", 1, 2)}}};
  auto b = device_boxes(major, {4});
  // "x":(1)2 is the major half: coordinates 0,1 -> shard 0 = [0,2); 2,3 -> [2,4).
  EXPECT_EQ(b[0], (Box{{0}, {2}}));
  EXPECT_EQ(b[1], (Box{{0}, {2}}));
  EXPECT_EQ(b[2], (Box{{2}, {4}}));
  EXPECT_EQ(b[3], (Box{{2}, {4}}));
  Sharding minor = major;
  minor.dims = {DimSharding{{AxisRef::sub("x", 2, 2)}}};
  b = device_boxes(minor, {4});
  // "x":(2)2 is the minor half: even coordinates -> [0,2), odd -> [2,4).
  EXPECT_EQ(b[0], (Box{{0}, {2}}));
  EXPECT_EQ(b[1], (Box{{2}, {4}}));
  EXPECT_EQ(b[2], (Box{{0}, {2}}));
  EXPECT_EQ(b[3], (Box{{2}, {4}}));
}

TEST(DeviceBoxes, SubAxesMatchTheSplitMesh) {
  // Shardy: <"devices"=8> with {"devices":(1)4}, {"devices":(4)2} is <"x"=4, "y"=2> with
  // {"x"}, {"y"}. Likewise sub-axes of a size-8 axis equal the axes of a (2,2,2) mesh over the
  // same device order. Compared box by box, with a permuted device order.
  std::vector<int> ids{3, 7, 1, 5, 0, 2, 6, 4};
  auto full = mk(ids, {8}, {"d"});
  auto xy = mk(ids, {4, 2}, {"x", "y"});
  auto abc = mk(ids, {2, 2, 2}, {"a", "b", "c"});
  auto sub = [&](std::vector<std::vector<AxisRef>> dims) {
    Sharding s;
    s.mesh = full;
    for (auto& d : dims) s.dims.push_back(DimSharding{d});
    return s;
  };
  auto named = [&](std::shared_ptr<const Mesh> m, P p, int64_t rank) {
    return to_sharding({m, std::move(p)}, rank);
  };
  Shape sh{4, 6};
  EXPECT_EQ(device_boxes(sub({{AxisRef::sub("d", 1, 4)}, {AxisRef::sub("d", 4, 2)}}), sh),
            device_boxes(named(xy, P("x", "y"), 2), sh));
  EXPECT_EQ(device_boxes(sub({{AxisRef::sub("d", 4, 2)}, {AxisRef::sub("d", 1, 4)}}), sh),
            device_boxes(named(xy, P("y", "x"), 2), sh));
  EXPECT_EQ(device_boxes(sub({{AxisRef::sub("d", 2, 2)}, {}}), sh),
            device_boxes(named(abc, P("b"), 2), sh));
  // Minor before major within one dim: ("c", "a") on the split mesh.
  EXPECT_EQ(device_boxes(sub({{AxisRef::sub("d", 4, 2), AxisRef::sub("d", 1, 2)}, {}}), sh),
            device_boxes(named(abc, P({"c", "a"}), 2), sh));
  // Uneven along a sub-axis dim (5 rows over (1)4: shards of 2, 2, 1, 0).
  Shape un{5, 6};
  EXPECT_EQ(device_boxes(sub({{AxisRef::sub("d", 1, 4)}, {}}), un),
            device_boxes(named(xy, P("x"), 2), un));
}

TEST(DeviceBoxes, IntersectAndErrors) {
  Box a{{0, 2}, {4, 6}}, b{{3, 0}, {8, 3}};
  EXPECT_EQ(intersect(a, b), (Box{{3, 2}, {4, 3}}));
  EXPECT_EQ(intersect(a, Box{{5, 0}, {6, 1}}).volume(), 0);
  auto m = mk({0, 1}, {2}, {"x"});
  Sharding s = to_sharding({m, P("x")}, 1);
  EXPECT_THROW(device_boxes(s, {4, 4}), ShardingError);  // rank mismatch
}

}  // namespace
