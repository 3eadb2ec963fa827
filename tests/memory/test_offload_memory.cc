// Measured against predicted memory of compiled host-offload programs: the seed program scaled up
// (docs/offload.md), with and without its carry offloaded, grad of scan over a large constant, and
// a device capacity between the offload policy's peak and everything_saveable's; and
// memory_analysis() against the allocator over a corpus of compiled programs of at least 1 MiB.
//
// "Measured" is what the runtime's allocator counted while the call ran (mj::memory_stats: the
// peak of bytes in use, minus what was in use before the call, plus the call's inputs, which were
// allocated before it); "predicted" is Compiled::memory_analysis(); "by hand" is derived in each
// test from the program's buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>

#include <minijax/minijax.h>

#include <autodiff/optimizers.h>

#include "core/config.h"
#include "jit/runtime/copy_engine.h"
#include "tests/memory/memory_helpers.h"

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;
using memtest::Peaks;

constexpr int kWidth = 4096;                     // the seed's carry, scaled up: f32[4096]
constexpr int64_t kRow = kWidth * 4;             // 16 KiB: one carry, one named residual
constexpr double kHandTolerance = 0.01;          // measured within 1% of the hand derivation
constexpr double kPredictionTolerance = 0.05;    // memory_analysis() within 5% of measured

// The seed's step (docs/cases/seed-offload-in-scan.md): y = sin(y);
// y = checkpoint_name(y, "save_remat"); y = sin(y). With `name_carry`, its output is named
// "carry" too (the rule of docs/cases/offload-named-carry.md: the backward pass's stacked carry
// is then offloaded as well).
auto seed_loss(int length, bool name_carry) {
  const std::vector<std::string> offloaded = name_carry ? std::vector<std::string>{"save_remat", "carry"}
                                                        : std::vector<std::string>{"save_remat"};
  auto policy = cp::save_and_offload_only_these_names({}, offloaded, "device", "pinned_host");
  auto step = [name_carry](const Array& y, const Array&) {
    Array a = mj::checkpoint_name(mj::sin(y), "save_remat");
    Array b = mj::sin(a);
    return std::pair{name_carry ? mj::checkpoint_name(b, "carry") : b, mj::None{}};
  };
  const Array xs = mj::zeros({length, 0}, mj::f32);  // only its length matters
  return [=](const Array& p) { return mj::sum(mj::scan(mj::checkpoint(step, {.policy = policy}), p, xs).first); };
}

struct SeedResult {
  Peaks measured, predicted;
  Array grad;
};

SeedResult run_seed(int length, bool name_carry) {
  const Array p = mj::ones({kWidth}, mj::f32);
  auto f = mj::jit(mj::grad(seed_loss(length, name_carry)));
  auto compiled = f.lower(p).compile();
  SeedResult r;
  r.predicted = memtest::predicted(compiled.memory_analysis());
  r.measured = memtest::measure([&] { r.grad = compiled(p); mj::block_until_ready(r.grad); }, kRow, 0);
  return r;
}

void expect_within(int64_t got, int64_t want, double tol, const std::string& what) {
  EXPECT_LE(std::fabs(double(got - want)), tol * double(want)) << what << ": " << got << " B vs " << want << " B";
}

// Device: the input p and the gradient (a row each), the carry stacked by the forward loop (length
// rows: the backward pass needs cos(y) of each step's input, and the policy is never asked about
// inputs), and at the forward loop's peak four rows more: the carry, the next carry (computed
// while the carry is still read, for its slice of the stack), the named residual whose offload
// the iteration is overlapping (carried from the previous iteration), and this iteration's named
// residual; and the loop's row index and its next value (an i32 each, 64 B in the arena). The
// backward loop holds less: the stack, the current reloaded row and the prefetched next one.
// Host: the offloaded residual, length rows.
int64_t seed_device_by_hand(int length) { return (int64_t(length) + 6) * kRow + 2 * 64; }
int64_t seed_host_by_hand(int length) { return int64_t(length) * kRow; }

class SeedOffloadMemory : public ::testing::TestWithParam<int> {};

TEST_P(SeedOffloadMemory, MeasuredPeaksAreTheHandDerivationAndThePrediction) {
  const int length = GetParam();
  mj::config().host_link_bytes_per_s = 8e9;  // the emulated link, as the offload tests run
  SeedResult r = run_seed(length, false);
  mj::config().host_link_bytes_per_s = 0;
  expect_within(r.measured.device, seed_device_by_hand(length), kHandTolerance, "device, measured vs by hand");
  expect_within(r.measured.host, seed_host_by_hand(length), kHandTolerance, "host, measured vs by hand");
  expect_within(r.predicted.device, r.measured.device, kPredictionTolerance, "device, predicted vs measured");
  expect_within(r.predicted.host, r.measured.host, kPredictionTolerance, "host, predicted vs measured");
  // The gradient is eager's.
  Array want = mj::grad(seed_loss(length, false))(mj::ones({kWidth}, mj::f32));
  for (int i = 0; i < kWidth; ++i) ASSERT_NEAR(r.grad.data<float>()[i], want.data<float>()[i], 1e-6) << i;
}

INSTANTIATE_TEST_SUITE_P(Lengths, SeedOffloadMemory, ::testing::Values(100, 1000));

// From length 100 to 1000 the device peak grows by the stacked carry only (900 rows), the host
// peak by the offloaded residual (900 rows). With the carry offloaded too, the device peak does
// not grow at all and the host holds both stacks.
TEST(SeedOffloadMemory, DevicePeakGrowsOnlyByTheStackedCarryAndIsFlatWithTheCarryOffloaded) {
  mj::config().host_link_bytes_per_s = 8e9;
  const SeedResult a = run_seed(100, false), b = run_seed(1000, false);
  const SeedResult ca = run_seed(100, true), cb = run_seed(1000, true);
  mj::config().host_link_bytes_per_s = 0;
  const int64_t rows = 900 * kRow, page = 4096;  // the allocator rounds large blocks to pages
  EXPECT_NEAR(double(b.measured.device - a.measured.device), double(rows), page);
  EXPECT_NEAR(double(b.measured.host - a.measured.host), double(rows), page);
  EXPECT_NEAR(double(cb.measured.device - ca.measured.device), 0.0, page) << "carry offloaded: flat";
  EXPECT_NEAR(double(cb.measured.host - ca.measured.host), double(2 * rows), 2 * page);
  // And the offloaded carry is what is saved: the device peak is far below the stacked carry's.
  EXPECT_LT(cb.measured.device, b.measured.device - rows);
}

}  // namespace

namespace {

// ---- docs/cases/grad-of-scan-memory.md (docs/offload.md): a scan closing over z = ones(3000,3000)

constexpr int kSide = 3000;
constexpr int64_t kBig = int64_t(kSide) * kSide * 4;  // one f32[3000,3000]: 36,000,000 B

auto scan_over_constant_loss(int n, bool checkpointed) {
  return [n, checkpointed](const Array& x) {
    static const Array z = mj::ones({kSide, kSide}, mj::f32);
    static const Array c0 = mj::zeros({kSide, kSide}, mj::f32);
    const Array ys = mj::ones({n}, mj::f32);
    auto body = [&](const Array& c, const Array& y) { return std::pair{c + x * (y + z), mj::None{}}; };
    if (checkpointed)
      return mj::mean(mj::scan(mj::checkpoint(body, {.policy = cp::nothing_saveable()}), c0, ys).first);
    return mj::mean(mj::scan(body, c0, ys).first);
  };
}

class GradOfScanMemory : public ::testing::TestWithParam<int> {};

// By hand. The program's inputs: z and the initial carry c0 (closed-over constants), ys (4n B)
// and x (4 B); its output: the gradient (4 B). Without checkpoint the backward loop reads the
// stacked residual y + z (n big arrays), and carries the cotangent of the carry (one big array,
// computed in place of its initial value) and the scalar accumulator (64 B in the arena). With
// checkpoint(nothing_saveable) the backward loop recomputes y + z inside its fused reduction:
// nothing is stacked, only the carried cotangent and the accumulator remain, whatever n.
TEST_P(GradOfScanMemory, MeasuredPeaksAreTheHandDerivationAndThePrediction) {
  const int n = GetParam();
  const int64_t inputs = 2 * kBig + 4 * n + 4, output = 4;
  for (bool ckpt : {false, true}) {
    const Array x = mj::scalar(0.5f);
    auto compiled = mj::jit(mj::grad(scan_over_constant_loss(n, ckpt))).lower(x).compile();
    Array g;
    const Peaks measured = memtest::measure([&] { g = compiled(x); mj::block_until_ready(g); }, inputs, 0);
    const Peaks predicted = memtest::predicted(compiled.memory_analysis());
    const int64_t by_hand = inputs + output + (ckpt ? 1 : n + 1) * kBig + 64;
    const std::string what = std::string(ckpt ? "checkpoint(nothing_saveable)" : "no checkpoint") + ", n=" + std::to_string(n);
    expect_within(measured.device, by_hand, kHandTolerance, what + ", measured vs by hand");
    expect_within(predicted.device, measured.device, kPredictionTolerance, what + ", predicted vs measured");
    EXPECT_EQ(measured.host, 0) << what;
    EXPECT_NEAR(g.item<float>(), 2.0 * n, 1e-2) << what;  // d loss/dx = 2n (the case's closed form)
  }
}

INSTANTIATE_TEST_SUITE_P(Lengths, GradOfScanMemory, ::testing::Values(5, 10));

// ---- docs/cases/offload-named-carry.md (docs/offload.md): the stacked carry of a scan over layers

constexpr int kBatch = 64, kFeatures = 256;

// A scan over `layers` blocks tanh(h @ W) named "carry" (h f32[64,256], W f32[256,256]), the
// block checkpointed with the named carry offloaded; the gradient with respect to the weights.
Peaks named_carry_temporaries(int layers, Peaks* predicted) {
  auto policy = cp::save_and_offload_only_these_names({}, {"carry"}, "device", "pinned_host");
  auto block = [](const Array& h, const Array& w) { return mj::checkpoint_name(mj::tanh(mj::matmul(h, w)), "carry"); };
  auto loss = [&](const Array& ws, const Array& h0) {
    auto body = [&](const Array& c, const Array& w) {
      return std::pair{mj::checkpoint(block, {.policy = policy})(c, w), mj::None{}};
    };
    return mj::sum(mj::scan(body, h0, ws).first);
  };
  const Array ws = mj::random::normal(mj::random::PRNGKey(uint64_t(layers)), {layers, kFeatures, kFeatures}) * (1.0 / 16.0);
  const Array h0 = mj::random::normal(mj::random::PRNGKey(7), {kBatch, kFeatures});
  auto compiled = mj::jit(mj::grad(loss)).lower(ws, h0).compile();
  const mj::CompiledMemoryStats m = compiled.memory_analysis();
  *predicted = Peaks{m.temp_size_in_bytes, m.host_temp_size_in_bytes};
  // Temporaries: what the call allocated at its peak (its inputs, the weights and h0, were
  // allocated before it) minus the output (the weights' gradient).
  Array g;
  Peaks p = memtest::measure([&] { g = compiled(ws, h0); mj::block_until_ready(g); }, 0, 0);
  p.device -= m.output_size_in_bytes;
  return p;
}

// Device temporaries are the same at 16 and 32 layers, host memory doubles: the stacked carry
// (layers x 64 x 256 x 4 B) lives in pinned_host.
TEST(OffloadNamedCarryMemory, DeviceIsFlatInTheLayersAndHostDoubles) {
  mj::config().host_link_bytes_per_s = 8e9;
  Peaks p16, p32;
  const Peaks t16 = named_carry_temporaries(16, &p16), t32 = named_carry_temporaries(32, &p32);
  mj::config().host_link_bytes_per_s = 0;
  const int64_t page = 4096, carry = int64_t(kBatch) * kFeatures * 4;
  EXPECT_NEAR(double(t32.device), double(t16.device), page) << "device temporaries, 16 vs 32 layers";
  EXPECT_EQ(t16.host, 16 * carry);
  EXPECT_EQ(t32.host, 32 * carry);
  EXPECT_EQ(p16.host, 16 * carry);
  EXPECT_EQ(p32.host, 32 * carry);
  EXPECT_NEAR(double(p32.device), double(p16.device), page) << "predicted device temporaries";
}

// ---- capacity: the offload policy fits where everything_saveable does not --------------------

// With the device capacity between the two policies' predicted peaks, the offload policy compiles
// and trains (its measured peak stays under the capacity); everything_saveable, which keeps the
// named residual on the device too (1000 more rows), is refused at compile() with
// ResourceExhaustedError naming its peak and its largest buffer (the stacked rows).
TEST(OffloadCapacity, OffloadTrainsWhereEverythingSaveableIsRefusedAtCompile) {
  const int length = 1000;
  const Array p = mj::ones({kWidth}, mj::f32);
  auto step = [](const Array& y, const Array&) {
    return std::pair{mj::sin(mj::checkpoint_name(mj::sin(y), "save_remat")), mj::None{}};
  };
  auto loss_with = [&](mj::PolicyPtr policy) {
    const Array xs = mj::zeros({length, 0}, mj::f32);
    return [=](const Array& q) { return mj::sum(mj::scan(mj::checkpoint(step, {.policy = policy}), q, xs).first); };
  };
  auto offload = mj::jit(mj::grad(loss_with(cp::save_and_offload_only_these_names({}, {"save_remat"}, "device", "pinned_host"))));
  auto everything = mj::jit(mj::grad(loss_with(cp::everything_saveable())));
  const int64_t offload_peak = offload.lower(p).compile().memory_analysis().peak_memory_in_bytes;
  const int64_t everything_peak = everything.lower(p).compile().memory_analysis().peak_memory_in_bytes;
  ASSERT_GT(everything_peak, offload_peak + int64_t(length - 10) * kRow);  // about 1000 rows more
  const int64_t capacity = (offload_peak + everything_peak) / 2;
  struct Restore {
    ~Restore() { mj::config().device_memory_bytes = 0; }
  } restore;
  mj::config().device_memory_bytes = capacity;
  Array q = p;
  for (int k = 0; k < 3; ++k) {  // a few SGD steps under the capacity
    Array g;
    const Peaks used = memtest::measure([&] { g = offload(q); mj::block_until_ready(g); }, kRow, 0);
    EXPECT_LE(used.device, capacity);
    q = q - 0.1 * g;
  }
  try {
    (void)everything.lower(p).compile();
    FAIL() << "everything_saveable compiled under a capacity of " << capacity << " B";
  } catch (const mj::ResourceExhaustedError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(std::to_string(everything_peak)), std::string::npos) << what;
    EXPECT_NE(what.find("f32[1000,4096]"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(capacity)), std::string::npos) << what;
  }
}

}  // namespace

namespace {

// ---- predictions over a corpus -----------------------------------------------------------------
//
// memory_analysis() against the allocator over a corpus of compiled programs of at least 1 MiB:
// every program's predicted peaks within 5% of the measured ones, or listed below with its gap.
//
// Below 1 MiB the allocator's size classes (up to 25% slack per block, jit/runtime/allocator.h)
// decide the gap, not the planner, so the corpus holds programs of 1 MiB and more, where blocks
// are page-rounded (slack under 0.4%). The programs derived by hand (the seed at width 4096, grad
// of scan over a constant, the named carry) are the tests above.

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

namespace {

// ---- bad input ---------------------------------------------------------------------------------

// A host capacity below the offload plan's host peak: compile() refuses it with
// ResourceExhaustedError naming the peak and the stacked host buffer, before anything runs.
TEST(OffloadBadInput, AHostPoolOverTheHostCapacityIsRefusedBeforeTheRun) {
  const int length = 100;
  const Array p = mj::ones({kWidth}, mj::f32);
  auto f = mj::jit(mj::grad(seed_loss(length, false)));
  const int64_t host_peak = f.lower(p).compile().memory_analysis().host_peak_memory_in_bytes;
  ASSERT_EQ(host_peak, seed_host_by_hand(length));
  struct Restore {
    ~Restore() { mj::config().host_memory_bytes = 0; }
  } restore;
  mj::config().host_memory_bytes = host_peak / 2;
  const mj::CopyEngineStats before = mj::copy_engine(0).stats();
  try {
    (void)f(p);
    FAIL() << "a plan of " << host_peak << " B of host memory ran under a capacity of " << host_peak / 2 << " B";
  } catch (const mj::ResourceExhaustedError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(std::to_string(host_peak)), std::string::npos) << what;
    EXPECT_NE(what.find("f32<pinned_host>[100,4096]"), std::string::npos) << what;
    EXPECT_NE(what.find("host_memory_bytes"), std::string::npos) << what;
  }
  EXPECT_EQ(mj::copy_engine(0).stats().copies, before.copies) << "nothing ran";
}

// A policy offloading to a memory kind the devices do not have is refused while the program is
// traced for compilation (lower), naming the policy, the kind, the device's memories and the
// equation; a device_put to an unknown memory kind names the kind and the kinds available.
TEST(OffloadBadInput, UnknownMemoryKindsAreNamedWithTheKindsAvailable) {
  auto policy = cp::custom("to_hbm2", [](const mj::Primitive& prim, const std::vector<mj::ShapedArray>&,
                                         const mj::Params&) -> mj::PolicyDecision {
    if (prim.name == "sin") return mj::Offloadable{mj::MemoryKind::device, mj::MemoryKind(7)};
    return mj::Recompute{};
  });
  auto loss = [&](const Array& v) { return mj::sum(mj::checkpoint([](const Array& u) { return mj::sin(mj::cos(u)); }, {.policy = policy})(v)); };
  try {
    (void)mj::jit(mj::grad(loss)).lower(mj::ones({5}, mj::f32));
    FAIL() << "an offload to memory kind 7 was accepted";
  } catch (const mj::ValueError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("to_hbm2"), std::string::npos) << what;
    EXPECT_NE(what.find("does not have (its memories: device, pinned_host, unpinned_host)"), std::string::npos) << what;
    EXPECT_NE(what.find("sin(f32[5])"), std::string::npos) << what;
  }
  try {
    (void)mj::jit([](const Array& v) { return mj::device_put(v, "pinned_hots"); })(mj::ones({5}, mj::f32));
    FAIL() << "device_put to 'pinned_hots' was accepted";
  } catch (const mj::ValueError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'pinned_hots'"), std::string::npos) << what;
    EXPECT_NE(what.find("\"device\", \"pinned_host\" or \"unpinned_host\""), std::string::npos) << what;
  }
}

}  // namespace
