// memory_analysis() against the allocator over a corpus of compiled programs of at least 1 MiB:
// every program's predicted peaks within 5% of the measured ones, or listed below with its gap.
//
// Below 1 MiB the allocator's size classes (up to 25% slack per block, jit/runtime/allocator.h)
// decide the gap, not the planner, so the corpus holds programs of 1 MiB and more, where blocks
// are page-rounded (slack under 0.4%). The programs the offload tests derive by hand (the seed at
// width 4096, grad of scan over a constant, the named carry) are in test_offload_memory.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>

#include <minijax/minijax.h>

#include <autodiff/optimizers.h>

#include "core/config.h"
#include "tests/memory/memory_helpers.h"

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;
using memtest::Peaks;

/// Programs whose prediction misses the measured peak by more than 5%, with the gap measured
/// (|measured - predicted| / measured, device or host, whichever is larger) and the reason.
/// Empty: every program of the corpus is within 5%. A program listed here that comes within 5%
/// fails the test too, so the list stays true.
const std::map<std::string, std::string>& known_gaps() {
  static const std::map<std::string, std::string> gaps = {};
  return gaps;
}

struct Program {
  std::string name;
  std::function<Peaks(Peaks* predicted)> run;  // measured peaks; sets the prediction
};

Array normal(uint64_t seed, mj::Shape shape, double scale) {
  return mj::random::normal(mj::random::PRNGKey(seed), shape) * scale;
}

// A 784-512-512-10 MLP's Adam step on a batch of 128, params and optimizer state donated.
Peaks mlp_adam_step(Peaks* predicted) {
  using Params = std::vector<Array>;
  Params params{normal(1, {784, 512}, 0.05), mj::zeros({512}), normal(2, {512, 512}, 0.05), mj::zeros({512}),
                normal(3, {512, 10}, 0.05), mj::zeros({10})};
  const Array x = normal(4, {128, 784}, 1.0), y = mj::one_hot(mj::arange(128, mj::i32) % 10, 10);
  auto loss = [](const Params& p, const Array& xb, const Array& yb) {
    Array h = mj::maximum(mj::matmul(xb, p[0]) + p[1], 0.0);
    h = mj::maximum(mj::matmul(h, p[2]) + p[3], 0.0);
    Array logits = mj::matmul(h, p[4]) + p[5];
    return -mj::mean(mj::sum(yb * mj::log_softmax(logits, 1), 1));
  };
  mj::optim::Adam adam{.lr = 1e-3};
  auto state = adam.init(params);
  auto step = [&](const Params& p, const decltype(state)& s, const Array& xb, const Array& yb) {
    auto [l, g] = mj::value_and_grad(loss)(p, xb, yb);
    auto [np, ns] = adam.update(g, s, p);
    return std::tuple{np, ns, l};
  };
  auto jstep = mj::jit(step, {.donate_argnums = {0, 1}});
  auto compiled = jstep.lower(params, state, x, y).compile();
  *predicted = memtest::predicted(compiled.memory_analysis());
  int64_t inputs = x.aval().nbytes() + y.aval().nbytes();
  for (const Array& a : params) inputs += 3 * a.aval().nbytes();  // params, Adam's two moments
  inputs += 4;                                                      // Adam's step counter
  auto out = compiled(params, state, x, y);  // warms the pools; its results are donated next
  return memtest::measure([&] { out = compiled(std::get<0>(out), std::get<1>(out), x, y); mj::block_until_ready(std::get<2>(out)); },
                          inputs, 0);
}

// A recurrent scan of 28 steps over a batch of 128, hidden 256, under a remat policy:
// h' = tanh(name(h @ Wh, "gates") + x_t @ Wx), loss = sum of the last h.
Peaks recurrent(mj::PolicyPtr policy, Peaks* predicted) {
  const Array wh = normal(5, {256, 256}, 0.05), wx = normal(6, {64, 256}, 0.1), xs = normal(7, {28, 128, 64}, 1.0);
  auto loss = [policy](const Array& whp, const Array& wxp, const Array& xsp) {
    auto cell = [](const Array& h, const Array& w1, const Array& w2, const Array& x) {
      return mj::tanh(mj::checkpoint_name(mj::matmul(h, w1), "gates") + mj::matmul(x, w2));
    };
    auto body = [&](const Array& h, const Array& x) {
      Array next = policy ? mj::checkpoint(cell, {.policy = policy})(h, whp, wxp, x) : cell(h, whp, wxp, x);
      return std::pair{next, mj::None{}};
    };
    return mj::sum(mj::scan(body, mj::zeros({128, 256}), xsp).first);
  };
  auto f = mj::jit(mj::grad(loss, mj::argnums<0, 1>));
  auto compiled = f.lower(wh, wx, xs).compile();
  *predicted = memtest::predicted(compiled.memory_analysis());
  // The inputs: the arguments and the closed-over zeros (a hoisted constant), all allocated before.
  const int64_t inputs = compiled.memory_analysis().argument_size_in_bytes;
  return memtest::measure([&] { mj::block_until_ready(compiled(wh, wx, xs)); }, inputs, 0);
}

// A scan over 8 layers of tanh(name(h @ W_l, "act")), h and W_l f32[256,256], under a policy.
Peaks layer_stack(mj::PolicyPtr policy, Peaks* predicted) {
  const Array ws = normal(8, {8, 256, 256}, 1.0 / 16), h0 = normal(9, {256, 256}, 1.0);
  auto loss = [policy](const Array& w, const Array& h) {
    auto layer = [](const Array& c, const Array& wl) { return mj::tanh(mj::checkpoint_name(mj::matmul(c, wl), "act")); };
    auto body = [&](const Array& c, const Array& wl) {
      return std::pair{mj::checkpoint(layer, {.policy = policy})(c, wl), mj::None{}};
    };
    return mj::sum(mj::scan(body, h, w).first);
  };
  auto compiled = mj::jit(mj::grad(loss)).lower(ws, h0).compile();
  *predicted = memtest::predicted(compiled.memory_analysis());
  const int64_t inputs = ws.aval().nbytes() + h0.aval().nbytes();
  return memtest::measure([&] { mj::block_until_ready(compiled(ws, h0)); }, inputs, 0);
}

// vmap of a per-example gradient over 64 examples of a 512 x 512 layer.
Peaks per_example_gradients(Peaks* predicted) {
  const Array w = normal(10, {512, 512}, 0.05), xs = normal(11, {64, 512}, 1.0);
  auto per_example = [](const Array& wp, const Array& x) { return mj::sum(mj::tanh(mj::matmul(x, wp))); };
  auto f = mj::jit(mj::vmap(mj::grad(per_example), {.in_axes = {mj::kNotMapped, 0}}));
  auto compiled = f.lower(w, xs).compile();
  *predicted = memtest::predicted(compiled.memory_analysis());
  const int64_t inputs = w.aval().nbytes() + xs.aval().nbytes();
  return memtest::measure([&] { mj::block_until_ready(compiled(w, xs)); }, inputs, 0);
}

std::vector<Program> corpus() {
  auto offload = [](const char* name) {
    return cp::save_and_offload_only_these_names({}, {name}, "device", "pinned_host");
  };
  return {
      {"mlp_adam_step", mlp_adam_step},
      {"recurrent/no_checkpoint", [](Peaks* p) { return recurrent(nullptr, p); }},
      {"recurrent/nothing_saveable", [](Peaks* p) { return recurrent(cp::nothing_saveable(), p); }},
      {"recurrent/dots_saveable", [](Peaks* p) { return recurrent(cp::dots_saveable(), p); }},
      {"recurrent/everything_saveable", [](Peaks* p) { return recurrent(cp::everything_saveable(), p); }},
      {"recurrent/offload_gates", [=](Peaks* p) { return recurrent(offload("gates"), p); }},
      {"layer_stack/offload_act", [=](Peaks* p) { return layer_stack(offload("act"), p); }},
      {"layer_stack/everything_saveable", [](Peaks* p) { return layer_stack(cp::everything_saveable(), p); }},
      {"layer_stack/nothing_saveable", [](Peaks* p) { return layer_stack(cp::nothing_saveable(), p); }},
      {"per_example_gradients", per_example_gradients},
  };
}

double gap(int64_t measured, int64_t predicted) {
  if (measured == 0) return predicted == 0 ? 0.0 : 1.0;
  return std::fabs(double(measured - predicted)) / double(measured);
}

TEST(MemoryPredictionGaps, EveryProgramIsWithinFivePercentOrListed) {
  mj::config().host_link_bytes_per_s = 8e9;
  int checked = 0;
  for (const Program& prog : corpus()) {
    Peaks predicted;
    const Peaks measured = prog.run(&predicted);
    ASSERT_GE(measured.device + measured.host, int64_t(1) << 20) << prog.name << ": the corpus is programs of 1 MiB and more";
    const double worst = std::max(gap(measured.device, predicted.device), gap(measured.host, predicted.host));
    const bool listed = known_gaps().count(prog.name) != 0;
    EXPECT_EQ(worst > 0.05, listed) << prog.name << ": device measured " << measured.device << " B, predicted "
                                    << predicted.device << " B; host measured " << measured.host << " B, predicted "
                                    << predicted.host << " B; gap " << worst;
    std::printf("  %-34s device %11lld B measured, %11lld B predicted; host %10lld / %10lld B; gap %.4f\n",
                prog.name.c_str(), (long long)measured.device, (long long)predicted.device, (long long)measured.host,
                (long long)predicted.host, worst);
    ++checked;
  }
  mj::config().host_link_bytes_per_s = 0;
  std::printf("memory predictions checked: %d programs, %zu listed gaps\n", checked, known_gaps().size());
}

}  // namespace
