// minijax tests: optimizers (SGD with momentum/Nesterov, Adam, AdamW) over pytrees.
// Oracles: PyTorch's documented rules by hand (inline) or as a double loop; jitted vs eager steps.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "autodiff/grad.h"
#include "autodiff/optimizers.h"
#include "core/api.h"
#include "core/random.h"

namespace {

namespace optim = minijax::optim;
using Tree = std::map<std::string, mj::Array>;

mj::Array f64(std::vector<double> v) {
  int64_t n = int64_t(v.size());
  return mj::array(v, {n}, mj::f64);
}
double at(const mj::Array& a, int i = 0) { return a.data<double>()[i]; }
int step_of(const mj::Array& step) { return step.item<int>(); }

// One step that replaces the state, for the tests that follow a trajectory.
template <class O, class P, class S>
P advance(const O& opt, const P& grads, S& state, const P& params) {
  auto [p2, s2] = opt.update(grads, state, params);
  state = s2;
  return p2;
}

// The elements of a concrete array as doubles (any float dtype), for element-wise comparisons.
std::vector<double> values(const mj::Array& a) {
  mj::Array d = mj::astype(a, mj::f64);
  const double* p = d.data<double>();
  return std::vector<double>(p, p + d.size());
}

// Every element of `got` within `rel` relative of `want` (same dtypes and shapes).
void expect_close_rel(const mj::Array& got, const mj::Array& want, double rel, const std::string& what) {
  ASSERT_EQ(got.aval().str(), want.aval().str()) << what;
  auto g = values(got), w = values(want);
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_LE(std::fabs(g[i] - w[i]), rel * std::fabs(w[i])) << what << " element " << i << ": " << g[i]
                                                             << " vs " << w[i];
}

// Uniform f32 arrays from key `seed` (tests use positive ranges so relative comparisons are
// well conditioned: no value of the trajectories below comes near zero).
mj::Array uniform(int seed, mj::Shape shape, double lo, double hi) {
  return mj::random::uniform(mj::random::PRNGKey(seed), shape, mj::f32, lo, hi);
}

// Constant gradient g: mu_t = g (1 - b1^t) and nu_t = g^2 (1 - b2^t), so the bias-corrected
// update is lr * g / (|g| + eps) = lr * sign(g) (up to eps) at every step.
TEST(Adam, ConstantGradientMovesByLrPerStep) {
  optim::Adam opt;
  opt.lr = 0.1;
  mj::Array p = f64({1.0, -2.0});
  auto st = opt.init(p);
  EXPECT_EQ(st.step.aval().str(), "i32[]");
  EXPECT_FALSE(st.step.weak_type());
  EXPECT_EQ(st.step.item<int>(), 0);
  mj::Array g = f64({0.5, -3.0});
  for (int t = 1; t <= 5; ++t) {
    p = advance(opt, g, st, p);
    EXPECT_EQ(st.step.item<int>(), t);
    EXPECT_FALSE(st.step.weak_type());
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
  p = advance(opt, f64({1.0}), st, p);
  EXPECT_NEAR(at(p), -0.1, 1e-8);
  p = advance(opt, f64({-2.0}), st, p);
  EXPECT_NEAR(at(p), -0.0633896, 1e-6);
  p = advance(opt, f64({0.5}), st, p);
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
  p = advance(opt, f64({0.0}), st, p);
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
  p = advance(opt, f64({0.0}), st, p);
  EXPECT_NEAR(at(p), 0.999, 1e-12);
  p = advance(opt, f64({0.0}), st, p);
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
    p = advance(opt, f64({1.0}), st, p);
    EXPECT_NEAR(at(p), expect[t], 1e-12);
  }
  EXPECT_NEAR(at(st.momentum), 2.71, 1e-12);
  EXPECT_EQ(st.step.item<int>(), 3);
}

// Nesterov: step uses g + momentum * buf. t=1: buf=1, step 1.9 -> p=0.81; t=2: buf=1.9,
// step 1+0.9*1.9=2.71 -> p=0.539.
TEST(SGD, Nesterov) {
  optim::SGD opt{.lr = 0.1, .momentum = 0.9, .nesterov = true};
  mj::Array p = f64({1.0});
  auto st = opt.init(p);
  p = advance(opt, f64({1.0}), st, p);
  EXPECT_NEAR(at(p), 0.81, 1e-12);
  p = advance(opt, f64({1.0}), st, p);
  EXPECT_NEAR(at(p), 0.539, 1e-12);
}

// Plain SGD on a map pytree: p - lr*g per leaf; an empty (symbolic-zero) gradient leaf leaves
// its parameter unchanged.
TEST(SGD, PlainStepOverMapPytreeAndSymbolicZero) {
  optim::SGD opt{.lr = 0.5};
  Tree p{{"a", f64({1.0, 2.0})}, {"b", f64({3.0})}};
  auto st = opt.init(p);
  Tree g{{"a", f64({2.0, -2.0})}, {"b", mj::Array()}};
  auto [q, st2] = opt.update(g, st, p);
  EXPECT_DOUBLE_EQ(at(q["a"], 0), 0.0);
  EXPECT_DOUBLE_EQ(at(q["a"], 1), 3.0);
  EXPECT_DOUBLE_EQ(at(q["b"]), 3.0);
  EXPECT_EQ(st2.step.item<int>(), 1);
}

// The fused loop (concrete f32 leaves) and the op-by-op path (the same update traced by jit and
// evaluated equation by equation) compute the same expressions: they agree to f32 rounding on
// random data, for Adam with L2 decay and for AdamW, over three steps.
TEST(Adam, FusedLoopMatchesTracedOps) {
  mj::Array p0 = uniform(70, {300}, -1.0, 1.0);
  std::vector<mj::Array> gs{uniform(71, {300}, -2.0, 2.0), uniform(72, {300}, -0.1, 0.1),
                            uniform(73, {300}, -1.0, 1.0)};
  for (bool decoupled : {false, true}) {
    optim::Adam opt;
    opt.lr = 0.05;
    opt.weight_decay = 0.1;
    opt.decoupled = decoupled;
    // Under jit the leaves are tracers, so the update is staged op by op.
    auto staged = mj::jit([opt](const mj::Array& g, const optim::AdamState<mj::Array>& s,
                                const mj::Array& p) { return opt.update(g, s, p); });
    mj::Array pf = p0, pt = p0;
    auto sf = opt.init(pf), st = opt.init(pt);
    for (int t = 0; t < 3; ++t) {
      pf = advance(opt, gs[size_t(t)], sf, pf);
      auto out = staged(gs[size_t(t)], st, pt);
      pt = out.params;
      st = out.state;
    }
    EXPECT_EQ(staged.trace_count(), 1);
    // p is O(1) (absolute 1e-6); nu is a sum of squares, free of cancellation (relative 1e-6).
    for (int i = 0; i < 300; ++i)
      EXPECT_NEAR(pf.data<float>()[i], pt.data<float>()[i], 1e-6f) << "element " << i;
    expect_close_rel(sf.nu, st.nu, 1e-6, "nu");
    EXPECT_EQ(pf.dtype(), mj::f32);
    EXPECT_EQ(st.step.item<int>(), 3);
  }
}

// Five steps of a jitted update equal five eager steps (the eager Adam runs the fused loop, the
// jitted one the traced ops), element by element within 1e-5 relative, and the jitted function is
// traced once: the step count is an i32[] operand, not a constant baked into the trace.
template <class O>
void expect_jit_matches_eager(const O& opt) {
  Tree p0{{"w", uniform(1, {4, 3}, 1.0, 2.0)}, {"b", uniform(2, {3}, 1.0, 2.0)}};
  auto step = mj::jit([opt](const Tree& g, const auto& s, const Tree& p) { return opt.update(g, s, p); });
  Tree pe = p0, pj = p0;
  auto se = opt.init(p0), sj = opt.init(p0);
  for (int t = 0; t < 5; ++t) {
    Tree g{{"w", uniform(10 + t, {4, 3}, 0.5, 1.5)}, {"b", uniform(20 + t, {3}, 0.5, 1.5)}};
    pe = advance(opt, g, se, pe);
    auto [p2, s2] = step(g, sj, pj);
    pj = p2;
    sj = s2;
  }
  EXPECT_EQ(step.trace_count(), 1);
  EXPECT_EQ(step_of(se.step), 5);
  EXPECT_EQ(step_of(sj.step), 5);
  auto le = mj::tree_flatten(se), lj = mj::tree_flatten(sj);
  ASSERT_EQ(le.size(), lj.size());
  for (size_t i = 0; i < le.size(); ++i) expect_close_rel(lj[i], le[i], 1e-5, "state leaf " + std::to_string(i));
  for (auto& [k, v] : pe) expect_close_rel(pj.at(k), v, 1e-5, "param " + k);
}

TEST(Optimizers, AdamUnderJitMatchesEagerOverFiveStepsWithOneTrace) {
  optim::Adam opt;
  opt.lr = 0.01;
  expect_jit_matches_eager(opt);
}

TEST(Optimizers, SGDMomentumUnderJitMatchesEagerOverFiveStepsWithOneTrace) {
  expect_jit_matches_eager(optim::SGD{.lr = 0.01, .momentum = 0.9, .weight_decay = 0.01});
}

// update is pure: the parameters, gradients and state it was given hold the same elements
// afterwards (the fused Adam loop writes fresh buffers, the SGD select builds new arrays).
TEST(Optimizers, UpdateDoesNotModifyItsInputs) {
  auto snapshot = [](const auto& tree) {
    std::vector<std::vector<double>> r;
    for (auto& l : mj::tree_flatten(tree)) r.push_back(values(l));
    return r;
  };
  Tree p{{"w", uniform(3, {5}, -1.0, 1.0)}, {"b", uniform(4, {2}, -1.0, 1.0)}};
  Tree g{{"w", uniform(5, {5}, -1.0, 1.0)}, {"b", uniform(6, {2}, -1.0, 1.0)}};
  optim::Adam adam;
  auto [as, ast] = adam.update(g, adam.init(p), p);  // nonzero moments, step 1
  const auto before_p = snapshot(as), before_g = snapshot(g), before_s = snapshot(ast);
  auto [ap, ast2] = adam.update(g, ast, as);
  EXPECT_EQ(snapshot(as), before_p);
  EXPECT_EQ(snapshot(g), before_g);
  EXPECT_EQ(snapshot(ast), before_s);
  EXPECT_EQ(ast.step.item<int>(), 1);
  EXPECT_EQ(ast2.step.item<int>(), 2);
  EXPECT_NE(snapshot(ap), before_p);  // the update did move the parameters

  optim::SGD sgd{.lr = 0.1, .momentum = 0.9, .nesterov = true};
  auto sst = sgd.init(p);
  sst = sgd.update(g, sst, p).state;
  const auto before_sp = snapshot(p), before_ss = snapshot(sst);
  auto [sp, sst2] = sgd.update(g, sst, p);
  EXPECT_EQ(snapshot(p), before_sp);
  EXPECT_EQ(snapshot(sst), before_ss);
  EXPECT_EQ(sst.step.item<int>(), 1);
  EXPECT_NE(snapshot(sst2), before_ss);
}

// The states are pytrees: AdamState flattens to the mu leaves, the nu leaves, then step; SGDState
// to the momentum leaves, then step; OptimizerUpdate to the params leaves, then the state's.
TEST(Optimizers, StatesArePytreesInDocumentedLeafOrder) {
  std::vector<mj::Array> p{f64({1.0}), f64({2.0, 3.0})};
  optim::Adam adam;
  auto as = adam.init(p);
  as.nu = {f64({4.0}), f64({5.0, 6.0})};  // distinguishable from mu
  auto leaves = mj::tree_flatten(as);
  ASSERT_EQ(leaves.size(), 5u);
  EXPECT_EQ(leaves[0].impl(), as.mu[0].impl());
  EXPECT_EQ(leaves[1].impl(), as.mu[1].impl());
  EXPECT_EQ(leaves[2].impl(), as.nu[0].impl());
  EXPECT_EQ(leaves[3].impl(), as.nu[1].impl());
  EXPECT_EQ(leaves[4].impl(), as.step.impl());
  EXPECT_EQ(mj::tree_structure(as), "AdamState([*, *], [*, *], *)");
  auto back = mj::tree_unflatten(as, leaves);
  EXPECT_EQ(back.nu[1].impl(), as.nu[1].impl());
  EXPECT_EQ(back.step.impl(), as.step.impl());

  optim::SGD sgd{.momentum = 0.5};
  auto ss = sgd.init(p);
  auto sl = mj::tree_flatten(ss);
  ASSERT_EQ(sl.size(), 3u);
  EXPECT_EQ(sl[1].impl(), ss.momentum[1].impl());
  EXPECT_EQ(sl[2].impl(), ss.step.impl());
  EXPECT_EQ(mj::tree_structure(ss), "SGDState([*, *], *)");

  auto u = sgd.update(p, ss, p);
  auto ul = mj::tree_flatten(u);
  ASSERT_EQ(ul.size(), 5u);
  EXPECT_EQ(ul[0].impl(), u.params[0].impl());
  EXPECT_EQ(ul[4].impl(), u.state.step.impl());
  EXPECT_EQ(mj::tree_structure(u), "OptimizerUpdate([*, *], SGDState([*, *], *))");
  // Different momentum structures are a pytree mismatch.
  auto other = sgd.init(std::vector<mj::Array>{f64({1.0})});
  EXPECT_THROW(mj::tree_check_same(ss, other), mj::TypeError);
}

// Bias corrections in the parameter's dtype: an f64 leaf's trajectory matches PyTorch's formulas
// evaluated in double by this loop (std::pow for b^t) to 1e-12 relative — corrections rounded to
// f32 would be off by ~1e-8 — eagerly (fused loop) and under jit (traced ops). An f32 leaf in
// the same tree gets f32 corrections and stays within f32 rounding of the same loop.
TEST(Adam, BiasCorrectionsInParameterDtype) {
  optim::Adam opt;
  opt.lr = 0.05;
  opt.b1 = 0.85;
  opt.b2 = 0.995;
  const std::vector<double> p0{0.3, -1.7, 2.2};
  const std::vector<std::vector<double>> gs{{1.0, -0.25, 3.0}, {-2.0, 0.5, 0.125}, {0.75, 1.5, -1.0}};
  // Oracle: PyTorch's _single_tensor_adam in double.
  std::vector<double> p = p0, m(3, 0.0), v(3, 0.0);
  for (size_t t = 1; t <= gs.size(); ++t)
    for (size_t i = 0; i < 3; ++i) {
      const double g = gs[t - 1][i];
      m[i] = opt.b1 * m[i] + (1 - opt.b1) * g;
      v[i] = opt.b2 * v[i] + (1 - opt.b2) * g * g;
      const double bc1 = 1 - std::pow(opt.b1, double(t)), bc2 = 1 - std::pow(opt.b2, double(t));
      p[i] -= (opt.lr / bc1) * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + opt.eps);
    }
  auto jstep = mj::jit([opt](const Tree& g, const optim::AdamState<Tree>& s, const Tree& q) {
    return opt.update(g, s, q);
  });
  auto tree = [](const std::vector<double>& x) {
    return Tree{{"a", mj::array(x, {3}, mj::f64)}, {"b", mj::array(x, {3}, mj::f32)}};
  };
  Tree pe = tree(p0), pj = pe;
  auto se = opt.init(pe), sj = se;
  for (auto& g : gs) {
    pe = advance(opt, tree(g), se, pe);
    auto [p2, s2] = jstep(tree(g), sj, pj);
    pj = p2;
    sj = s2;
  }
  for (const Tree* r : {&pe, &pj}) {
    auto a = values(r->at("a")), b = values(r->at("b"));
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_LE(std::fabs(a[i] - p[i]), 1e-12 * std::fabs(p[i])) << "f64 element " << i;
      EXPECT_LE(std::fabs(b[i] - p[i]), 1e-5 * std::fabs(p[i])) << "f32 element " << i;
    }
    EXPECT_EQ(r->at("a").dtype(), mj::f64);
    EXPECT_EQ(r->at("b").dtype(), mj::f32);
  }
  EXPECT_EQ(jstep.trace_count(), 1);
}

TEST(Optimizers, StructureMismatchIsTypeError) {
  optim::Adam opt;
  Tree p{{"a", f64({1.0})}, {"b", f64({1.0})}};
  auto st = opt.init(p);
  Tree g{{"a", f64({1.0})}};
  EXPECT_THROW(opt.update(g, st, p), mj::TypeError);
  optim::SGD sgd{.lr = 0.1, .momentum = 0.5};
  std::vector<mj::Array> pv{f64({1.0})};
  auto sst = sgd.init(pv);
  std::vector<mj::Array> gv{f64({1.0}), f64({2.0})};
  EXPECT_THROW(sgd.update(gv, sst, pv), mj::TypeError);
}

// The step must be the i32[] count, and the parameters floating point.
TEST(Optimizers, BadStepOrIntegerParametersAreTypeErrors) {
  optim::Adam opt;
  mj::Array p = f64({1.0});
  auto st = opt.init(p);
  st.step = mj::scalar(0, mj::f32);
  EXPECT_THROW(opt.update(p, st, p), mj::TypeError);
  st.step = mj::zeros({2}, mj::i32);
  EXPECT_THROW(opt.update(p, st, p), mj::TypeError);
  optim::SGD sgd;
  auto ss = sgd.init(p);
  ss.step = mj::Array();
  EXPECT_THROW(sgd.update(p, ss, p), mj::TypeError);
  mj::Array ip = mj::zeros({2}, mj::i32);
  EXPECT_THROW(sgd.update(ip, sgd.init(ip), ip), mj::TypeError);
  EXPECT_THROW(opt.update(ip, opt.init(ip), ip), mj::TypeError);
}

// A whole training step under jit (value_and_grad, then Adam), as a compiled training loop
// writes it: three jitted steps equal three eager ones within 1e-5 relative, from one trace.
TEST(Optimizers, JittedTrainStepMatchesEagerSteps) {
  auto loss = [](const Tree& q, const mj::Array& x) {
    return mj::sum(mj::square(mj::matmul(x, q.at("w")) + q.at("b") - 1.0));
  };
  optim::Adam opt;
  opt.lr = 0.01;
  auto train_step = mj::jit([opt, loss](const Tree& q, const optim::AdamState<Tree>& s, const mj::Array& x) {
    auto [v, g] = mj::value_and_grad(loss)(q, x);
    return std::pair{v, opt.update(g, s, q)};
  });
  mj::Array x = uniform(30, {4, 3}, 0.5, 1.5);
  Tree pe{{"w", uniform(31, {3, 2}, 1.0, 2.0)}, {"b", uniform(32, {2}, 1.0, 2.0)}};
  Tree pj = pe;
  auto se = opt.init(pe), sj = se;
  for (int t = 0; t < 3; ++t) {
    auto [ve, ge] = mj::value_and_grad(loss)(pe, x);
    pe = advance(opt, ge, se, pe);
    auto [vj, next] = train_step(pj, sj, x);
    pj = next.params;
    sj = next.state;
    EXPECT_LE(std::fabs(vj.item<double>() - ve.item<double>()), 1e-5 * std::fabs(ve.item<double>()))
        << "step " << t;
  }
  EXPECT_EQ(train_step.trace_count(), 1);
  EXPECT_EQ(sj.step.item<int>(), 3);
  for (auto& [k, v] : pe) expect_close_rel(pj.at(k), v, 1e-5, "param " + k);
}

// End to end with value_and_grad: minimise sum((w - 3)^2) + (b + 1)^2 over a map pytree with
// Adam; the minimiser is w = 3, b = -1.
TEST(Optimizers, AdamMinimisesAQuadraticThroughValueAndGrad) {
  Tree p{{"w", f64({0.0, 10.0})}, {"b", f64({5.0})}};
  auto loss = [](const Tree& q) {
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
    p = advance(opt, g, st, p);
  }
  EXPECT_NEAR(first, 9.0 + 49.0 + 36.0, 1e-12);
  EXPECT_LT(last, 1e-3);
  EXPECT_NEAR(at(p["w"], 0), 3.0, 0.05);
  EXPECT_NEAR(at(p["w"], 1), 3.0, 0.05);
  EXPECT_NEAR(at(p["b"]), -1.0, 0.05);
}

}  // namespace
