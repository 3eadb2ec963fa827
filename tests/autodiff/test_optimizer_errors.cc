// minijax optimizer misuse: a gradient (or state) leaf of another shape than its parameter, or a
// gradient pytree of another structure, names the parameter's path and the user's update line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <minijax/minijax.h>

struct OptLayer {
  mj::Array w, b;
};
MJ_REGISTER_PYTREE(OptLayer, w, b)
struct OptModel {
  std::vector<OptLayer> layers;
  mj::Array head;
};
MJ_REGISTER_PYTREE(OptModel, layers, head)

namespace {

using mj::Array;
namespace optim = mj::optim;

// Two layers of w f32[3], b f32[1], and head f32[2]: paths layers.0.w, layers.0.b, layers.1.w,
// layers.1.b, head.
OptModel model() {
  return OptModel{{OptLayer{mj::ones({3}), mj::ones({1})}, OptLayer{mj::ones({3}), mj::ones({1})}}, mj::ones({2})};
}

// The gradients of model() with layers.1.w of shape [4] instead of [3].
OptModel misshapen_grads() {
  OptModel g = model();
  g.layers[1].w = mj::ones({4});
  return g;
}

// The error f throws: type E (exactly), each part in its message, and `line` of this file as its site.
template <class E, class F>
void expect_error(F&& f, const std::vector<std::string>& parts, int line) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const E& e) {
    EXPECT_EQ(typeid(e), typeid(E)) << e.what();
    for (const std::string& p : parts)
      EXPECT_NE(e.message().find(p), std::string::npos) << "message lacks \"" << p << "\": " << e.message();
    EXPECT_NE(std::string(e.where().file_name()).find("test_optimizer_errors.cc"), std::string::npos) << e.what();
    EXPECT_EQ(int(e.where().line()), line) << e.what();
  }
}

TEST(OptimizerErrors, AdamGradientOfAnotherShapeNamesThePathBothShapesAndTheLine) {
  const OptModel p = model(), g = misshapen_grads();
  optim::Adam adam;
  const auto st = adam.init(p);
  const int line = __LINE__ + 1;
  expect_error<mj::ShapeError>([&] { (void)adam.update(g, st, p); },
                               {"Adam.update", "layers.1.w", "f32[4]", "f32[3]", "gradient"}, line);
}

TEST(OptimizerErrors, AdamWAndSgdGradientsOfAnotherShapeNameThePath) {
  const OptModel p = model(), g = misshapen_grads();
  optim::AdamW adamw;
  const auto st = adamw.init(p);
  int line = __LINE__ + 1;
  expect_error<mj::ShapeError>([&] { (void)adamw.update(g, st, p); }, {"AdamW.update", "layers.1.w", "f32[4]", "f32[3]"}, line);
  for (double momentum : {0.0, 0.9}) {
    optim::SGD sgd{.lr = 0.1, .momentum = momentum};
    const auto ss = sgd.init(p);
    line = __LINE__ + 1;
    expect_error<mj::ShapeError>([&] { (void)sgd.update(g, ss, p); }, {"SGD.update", "layers.1.w", "f32[4]", "f32[3]"}, line);
  }
}

// Under jit the same check runs at trace time, at the line of the update call inside the step.
TEST(OptimizerErrors, AJittedUpdateNamesThePathAndTheLineInTheStep) {
  const OptModel p = model(), g = misshapen_grads();
  optim::Adam adam;
  const auto st = adam.init(p);
  const int line = __LINE__ + 2;
  auto step = mj::jit([adam](const OptModel& gr, const optim::AdamState<OptModel>& s, const OptModel& q) {
    return adam.update(gr, s, q);
  });
  expect_error<mj::ShapeError>([&] { (void)step(g, st, p); }, {"Adam.update", "layers.1.w", "f32[4]", "f32[3]"}, line);
}

// A state leaf of another shape (a state made for other parameters) names state.mu / momentum.
TEST(OptimizerErrors, StateOfAnotherShapeNamesTheStateAndThePath) {
  const OptModel p = model();
  optim::Adam adam;
  auto st = adam.init(p);
  st.mu.head = mj::zeros({5});
  int line = __LINE__ + 1;
  expect_error<mj::ShapeError>([&] { (void)adam.update(p, st, p); }, {"Adam.update", "state.mu", "head", "f32[5]", "f32[2]"}, line);
  optim::SGD sgd{.momentum = 0.5};
  auto ss = sgd.init(p);
  ss.momentum.layers[0].b = mj::zeros({2});
  line = __LINE__ + 1;
  expect_error<mj::ShapeError>([&] { (void)sgd.update(p, ss, p); }, {"SGD.update", "state.momentum", "layers.0.b", "f32[2]", "f32[1]"}, line);
}

// Gradients with one layer for parameters with two: a TypeError naming the paths of both trees
// and the first that differs (layers.1.w of the parameters against head of the gradients).
TEST(OptimizerErrors, AGradientOfAnotherStructureNamesThePaths) {
  const OptModel p = model();
  OptModel g = model();
  g.layers.pop_back();
  optim::Adam adam;
  const auto st = adam.init(p);
  int line = __LINE__ + 1;
  expect_error<mj::TypeError>([&] { (void)adam.update(g, st, p); },
                              {"Adam.update", "layers.1.w", "layers.0.w", "head", "structure"}, line);
  optim::SGD sgd;
  const auto ss = sgd.init(p);
  line = __LINE__ + 1;
  expect_error<mj::TypeError>([&] { (void)sgd.update(g, ss, p); }, {"SGD.update", "layers.1.w", "structure"}, line);
}

// A right-shaped update is unchanged by the checks: one Adam step from zero moments moves every
// parameter by -lr * g / (|g| + eps) = -lr for g = 1 (Adam's first step, by hand).
TEST(OptimizerErrors, ARightShapedUpdateStillSteps) {
  const OptModel p = model();
  optim::Adam adam;
  auto [q, st] = adam.update(model(), adam.init(p), p);
  EXPECT_NEAR(q.layers[1].w.data<float>()[2], 1.0f - 1e-3f, 1e-6f);
  EXPECT_NEAR(q.head.data<float>()[1], 1.0f - 1e-3f, 1e-6f);
}

}  // namespace
