// minijax tests (io): pytree leaf paths, the keys the savers write (flatten_with_path).
// Expected paths follow flax/torch state-dict keys: fields, indices and map keys joined by '.'.
#include <gtest/gtest.h>

#include <minijax/minijax.h>

namespace {

struct PathLayer {
  mj::Array w, b;
};
struct PathNet {
  mj::Array w1;
  std::vector<PathLayer> layers;
  std::map<std::string, mj::Array> extra;
  std::pair<mj::Array, mj::Array> pair;
};

// A node registered by hand without flatten_with_path: its leaves are numbered.
struct Opaque {
  mj::Array a, b;
};

}  // namespace

MJ_REGISTER_PYTREE(PathLayer, w, b)
MJ_REGISTER_PYTREE(PathNet, w1, layers, extra, pair)

template <>
struct minijax::pytree<Opaque> {
  static void flatten(const Opaque& o, std::vector<minijax::Array>& out) {
    out.push_back(o.a);
    out.push_back(o.b);
  }
  static Opaque unflatten(const Opaque&, const minijax::Array*& next) {
    Opaque o{next[0], next[1]};
    next += 2;
    return o;
  }
  static std::string structure(const Opaque&) { return "Opaque(*, *)"; }
  static void check_same(const Opaque&, const Opaque&, std::source_location) {}
};

namespace {

std::vector<std::string> paths(const mj::PathLeaves& leaves) {
  std::vector<std::string> p;
  for (auto& [k, _] : leaves) p.push_back(k);
  return p;
}

PathNet small_net() {
  auto v = [](float x) { return mj::full({1}, x); };
  return PathNet{v(1), {PathLayer{v(2), v(3)}, PathLayer{v(4), v(5)}}, {{"z", v(7)}, {"a", v(6)}}, {v(8), v(9)}};
}

TEST(FlattenWithPath, StructFieldsIndicesAndMapKeysJoinedByDots) {
  const PathNet net = small_net();
  const mj::PathLeaves leaves = mj::flatten_with_path(net);
  EXPECT_EQ(paths(leaves), (std::vector<std::string>{"w1", "layers.0.w", "layers.0.b", "layers.1.w", "layers.1.b",
                                                     "extra.a", "extra.z", "pair.0", "pair.1"}));
  // The leaves are tree_flatten's, in its order (values 1, 2, 3, 4, 5, then the map's a=6, z=7, 8, 9).
  const std::vector<mj::Array> flat = mj::tree_flatten(net);
  ASSERT_EQ(flat.size(), leaves.size());
  const std::vector<float> expect{1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (size_t i = 0; i < flat.size(); ++i) {
    EXPECT_EQ(leaves[i].second.impl(), flat[i].impl()) << leaves[i].first;
    EXPECT_EQ(leaves[i].second.item<float>(), expect[i]) << leaves[i].first;
  }
  EXPECT_EQ(paths(mj::tree_flatten_with_path(net)), paths(leaves));
}

TEST(FlattenWithPath, ContainersAtTheRoot) {
  EXPECT_EQ(paths(mj::flatten_with_path(mj::ones({2}))), (std::vector<std::string>{""}));
  EXPECT_EQ(paths(mj::flatten_with_path(std::vector<mj::Array>{mj::ones({1}), mj::ones({1})})),
            (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(paths(mj::flatten_with_path(std::tuple{mj::ones({1}), mj::None{}, std::array<mj::Array, 2>{mj::ones({1}), mj::ones({1})}})),
            (std::vector<std::string>{"0", "2.0", "2.1"}));
  EXPECT_EQ(paths(mj::flatten_with_path(std::map<std::string, std::vector<PathLayer>>{
                {"enc", {PathLayer{mj::ones({1}), mj::ones({1})}}}})),
            (std::vector<std::string>{"enc.0.w", "enc.0.b"}));
  EXPECT_TRUE(mj::flatten_with_path(mj::None{}).empty());
}

TEST(FlattenWithPath, OptimizerStatesSpelledByHand) {
  const PathLayer p{mj::ones({2}), mj::zeros({1})};
  mj::optim::Adam adam;
  const auto adam_state = adam.init(p);
  EXPECT_EQ(paths(mj::flatten_with_path(adam_state)),
            (std::vector<std::string>{"mu.w", "mu.b", "nu.w", "nu.b", "step"}));
  mj::optim::SGD sgd;
  sgd.momentum = 0.9;
  EXPECT_EQ(paths(mj::flatten_with_path(sgd.init(p))), (std::vector<std::string>{"momentum.w", "momentum.b", "step"}));
  const auto update = adam.update(p, adam_state, p);
  EXPECT_EQ(paths(mj::flatten_with_path(update)),
            (std::vector<std::string>{"params.w", "params.b", "state.mu.w", "state.mu.b", "state.nu.w",
                                      "state.nu.b", "state.step"}));
  // The step leaf is the state's i32[] count.
  EXPECT_EQ(mj::flatten_with_path(update).back().second.item<int>(), 1);
}

TEST(FlattenWithPath, NodeWithoutPathsNumbersItsLeaves) {
  std::map<std::string, Opaque> m{{"o", Opaque{mj::ones({1}), mj::zeros({1})}}};
  EXPECT_EQ(paths(mj::flatten_with_path(m)), (std::vector<std::string>{"o.0", "o.1"}));
}

TEST(FlattenWithPath, ShapeDtypeStructLeaves) {
  std::map<std::string, mj::ShapeDtypeStruct> m{{"x", mj::ShapeDtypeStruct{{2, 3}, mj::bf16}}};
  const auto leaves = mj::flatten_with_path(m);
  ASSERT_EQ(leaves.size(), 1u);
  EXPECT_EQ(leaves[0].first, "x");
  EXPECT_EQ(leaves[0].second.aval().str(), "bf16[2,3]");
}

}  // namespace
