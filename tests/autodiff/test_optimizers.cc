// minijax tests: optimizers (SGD with momentum/Nesterov, Adam, AdamW) over pytrees.
// Expected values are derived by hand from PyTorch's documented update rules (derivations inline).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <minijax/minijax.h>

#include "autodiff/grad.h"
#include "autodiff/optimizers.h"
#include "core/api.h"
#include "core/random.h"

namespace {

namespace optim = minijax::optim;

mj::Array f64(std::vector<double> v) {
  int64_t n = int64_t(v.size());
  return mj::array(v, {n}, mj::f64);
}
double at(const mj::Array& a, int i = 0) { return a.data<double>()[i]; }

// Constant gradient g: mu_t = g (1 - b1^t) and nu_t = g^2 (1 - b2^t), so the bias-corrected
// update is lr * g / (|g| + eps) = lr * sign(g) (up to eps) at every step.
TEST(Adam, ConstantGradientMovesByLrPerStep) {
  optim::Adam opt;
  opt.lr = 0.1;
  mj::Array p = f64({1.0, -2.0});
  auto st = opt.init(p);
  EXPECT_EQ(st.step, 0);
  mj::Array g = f64({0.5, -3.0});
  for (int t = 1; t <= 5; ++t) {
    p = opt.update(g, st, p);
    EXPECT_EQ(st.step, t);
    EXPECT_NEAR(at(p, 0), 1.0 - 0.1 * t, 1e-7);
    EXPECT_NEAR(at(p, 1), -2.0 + 0.1 * t, 1e-7);
  }
}

// Varying gradients 1, -2, 0.5 from p = 0, lr 0.1 (betas 0.9/0.999):
// t=1: mu=0.1, nu=0.001, mhat=1, vhat=1            -> p = -0.1 (minus 1e-9 from eps)
// t=2: mu=-0.11, nu=0.004999; mhat=-0.11/0.19=-0.578947, vhat=0.004999/0.001999=2.500750
//      p = -0.1 + 0.1*0.578947/1.581376 = -0.0633896
// t=3: mu=-0.049, nu=0.005244001; mhat=-0.049/0.271=-0.180812, vhat=0.005244001/0.002997001=1.749749
//      p = -0.0633896 + 0.1*0.180812/1.322781 = -0.0497206
TEST(Adam, VaryingGradientsMatchHandComputation) {
  optim::Adam opt;
  opt.lr = 0.1;
  mj::Array p = f64({0.0});
  auto st = opt.init(p);
  p = opt.update(f64({1.0}), st, p);
  EXPECT_NEAR(at(p), -0.1, 1e-8);
  p = opt.update(f64({-2.0}), st, p);
  EXPECT_NEAR(at(p), -0.0633896, 1e-6);
  p = opt.update(f64({0.5}), st, p);
  EXPECT_NEAR(at(p), -0.0497206, 1e-6);
  EXPECT_NEAR(at(st.mu), -0.049, 1e-12);
  EXPECT_NEAR(at(st.nu), 0.005244001, 1e-12);
}

// Adam's L2 weight decay: g' = g + wd * p. With g = 0, p = 2, wd = 0.5: g' = 1, so the first
// step moves by lr * sign(g') = -0.1.
TEST(Adam, L2WeightDecayEntersTheGradient) {
  optim::Adam opt;
  opt.lr = 0.1;
  opt.weight_decay = 0.5;
  mj::Array p = f64({2.0});
  auto st = opt.init(p);
  p = opt.update(f64({0.0}), st, p);
  EXPECT_NEAR(at(p), 1.9, 1e-7);
}

// AdamW with zero gradient: the moments stay 0 (update 0 / (0 + eps) = 0), and the decoupled
// decay multiplies p by (1 - lr*wd) each step: 1 -> 0.999 -> 0.998001 with lr 0.1, wd 0.01.
TEST(AdamW, DecoupledDecayWithPyTorchDefaults) {
  optim::AdamW opt(0.1);
  EXPECT_DOUBLE_EQ(opt.weight_decay, 0.01);
  EXPECT_DOUBLE_EQ(opt.b1, 0.9);
  EXPECT_DOUBLE_EQ(opt.b2, 0.999);
  EXPECT_DOUBLE_EQ(opt.eps, 1e-8);
  mj::Array p = f64({1.0});
  auto st = opt.init(p);
  p = opt.update(f64({0.0}), st, p);
  EXPECT_NEAR(at(p), 0.999, 1e-12);
  p = opt.update(f64({0.0}), st, p);
  EXPECT_NEAR(at(p), 0.998001, 1e-12);
}

// SGD, momentum 0.9, lr 0.1, constant gradient 1 from p = 1:
// buf: 1, 1.9, 2.71 (buf_1 = g, then 0.9 buf + g)  ->  p: 0.9, 0.71, 0.439.
TEST(SGD, MomentumMatchesPyTorchRecursion) {
  optim::SGD opt{.lr = 0.1, .momentum = 0.9};
  mj::Array p = f64({1.0});
  auto st = opt.init(p);
  const double expect[3] = {0.9, 0.71, 0.439};
  for (int t = 0; t < 3; ++t) {
    p = opt.update(f64({1.0}), st, p);
    EXPECT_NEAR(at(p), expect[t], 1e-12);
  }
  EXPECT_NEAR(at(st.momentum), 2.71, 1e-12);
}

// Nesterov: step uses g + momentum * buf. t=1: buf=1, step 1.9 -> p=0.81; t=2: buf=1.9,
// step 1+0.9*1.9=2.71 -> p=0.539.
TEST(SGD, Nesterov) {
  optim::SGD opt{.lr = 0.1, .momentum = 0.9, .nesterov = true};
  mj::Array p = f64({1.0});
  auto st = opt.init(p);
  p = opt.update(f64({1.0}), st, p);
  EXPECT_NEAR(at(p), 0.81, 1e-12);
  p = opt.update(f64({1.0}), st, p);
  EXPECT_NEAR(at(p), 0.539, 1e-12);
}

// Plain SGD on a map pytree: p - lr*g per leaf; an empty (symbolic-zero) gradient leaf leaves
// its parameter unchanged.
TEST(SGD, PlainStepOverMapPytreeAndSymbolicZero) {
  optim::SGD opt{.lr = 0.5};
  std::map<std::string, mj::Array> p{{"a", f64({1.0, 2.0})}, {"b", f64({3.0})}};
  auto st = opt.init(p);
  std::map<std::string, mj::Array> g{{"a", f64({2.0, -2.0})}, {"b", mj::Array()}};
  auto q = opt.update(g, st, p);
  EXPECT_DOUBLE_EQ(at(q["a"], 0), 0.0);
  EXPECT_DOUBLE_EQ(at(q["a"], 1), 3.0);
  EXPECT_DOUBLE_EQ(at(q["b"]), 3.0);
}

// The fused loop (concrete f32 leaves) and the op-by-op path (the same update traced by jit and
// evaluated equation by equation) compute the same expressions: they agree to f32 rounding on
// random data, for Adam with L2 decay and for AdamW, over three steps.
TEST(Adam, FusedLoopMatchesTracedOps) {
  mj::Array key = mj::random::PRNGKey(7);
  mj::Array ks = mj::random::split(key, 4);
  auto k = [&](int i) { return mj::reshape(mj::lax::slice(ks, {i, 0}, {i + 1, 2}), {2}); };
  mj::Array p0 = mj::random::uniform(k(0), {300}, mj::f32, -1.0, 1.0);
  std::vector<mj::Array> gs{mj::random::uniform(k(1), {300}, mj::f32, -2.0, 2.0),
                            mj::random::uniform(k(2), {300}, mj::f32, -0.1, 0.1),
                            mj::random::uniform(k(3), {300}, mj::f32, -1.0, 1.0)};
  for (bool decoupled : {false, true}) {
    optim::Adam opt;
    opt.lr = 0.05;
    opt.weight_decay = 0.1;
    opt.decoupled = decoupled;
    mj::Array pf = p0, pt = p0;
    auto sf = opt.init(pf), st = opt.init(pt);
    for (int t = 0; t < 3; ++t) {
      pf = opt.update(gs[size_t(t)], sf, pf);
      // Under jit the leaves are tracers, so the update is staged op by op.
      int64_t step = st.step;
      auto staged = mj::jit([&](const mj::Array& g, const mj::Array& p, const mj::Array& mu,
                                const mj::Array& nu) {
        optim::AdamState<mj::Array> s{mu, nu, step};
        mj::Array q = opt.update(g, s, p);
        return std::vector<mj::Array>{q, s.mu, s.nu};
      });
      auto out = staged(gs[size_t(t)], pt, st.mu, st.nu);
      pt = out[0];
      st.mu = out[1];
      st.nu = out[2];
      st.step += 1;
    }
    for (int i = 0; i < 300; ++i) {
      EXPECT_NEAR(pf.data<float>()[i], pt.data<float>()[i], 1e-6f) << "element " << i;
      EXPECT_NEAR(sf.nu.data<float>()[i], st.nu.data<float>()[i], 1e-6f) << "element " << i;
    }
    EXPECT_EQ(pf.dtype(), mj::f32);
  }
}

TEST(Optimizers, StructureMismatchIsTypeError) {
  optim::Adam opt;
  std::map<std::string, mj::Array> p{{"a", f64({1.0})}, {"b", f64({1.0})}};
  auto st = opt.init(p);
  std::map<std::string, mj::Array> g{{"a", f64({1.0})}};
  EXPECT_THROW(opt.update(g, st, p), mj::TypeError);
  optim::SGD sgd{.lr = 0.1, .momentum = 0.5};
  std::vector<mj::Array> pv{f64({1.0})};
  auto sst = sgd.init(pv);
  std::vector<mj::Array> gv{f64({1.0}), f64({2.0})};
  EXPECT_THROW(sgd.update(gv, sst, pv), mj::TypeError);
}

// End to end with value_and_grad: minimise sum((w - 3)^2) + (b + 1)^2 over a map pytree with
// Adam; the minimiser is w = 3, b = -1.
TEST(Optimizers, AdamMinimisesAQuadraticThroughValueAndGrad) {
  using P = std::map<std::string, mj::Array>;
  P p{{"w", f64({0.0, 10.0})}, {"b", f64({5.0})}};
  auto loss = [](const P& q) {
    return mj::sum(mj::square(q.at("w") - 3.0)) + mj::sum(mj::square(q.at("b") + 1.0));
  };
  optim::Adam opt;
  opt.lr = 0.1;
  auto st = opt.init(p);
  auto vg = mj::value_and_grad(loss);
  double first = -1, last = -1;
  for (int i = 0; i < 600; ++i) {
    auto [v, g] = vg(p);
    if (i == 0) first = v.item<double>();
    last = v.item<double>();
    p = opt.update(g, st, p);
  }
  EXPECT_NEAR(first, 9.0 + 49.0 + 36.0, 1e-12);
  EXPECT_LT(last, 1e-3);
  EXPECT_NEAR(at(p["w"], 0), 3.0, 0.05);
  EXPECT_NEAR(at(p["w"], 1), 3.0, 0.05);
  EXPECT_NEAR(at(p["b"]), -1.0, 0.05);
}

}  // namespace
