// minijax tests: the GRU sample's compiled training step under --remat=offload_gates against
// none and everything_saveable: equal step losses and parameters, measured and predicted peaks.
#include <gtest/gtest.h>

#include <cstring>
#include <iomanip>
#include <map>
#include <string>
#include <vector>

#include "samples/common/idx_reader.h"
#include "samples/fashion_mnist_rnn_lib.h"

namespace {

namespace ms = minijax::samples;
namespace rnn = fmnist::rnn;

constexpr int64_t kBatch = 128, kHidden = 128;

// What one compiled training run of the sample leaves: every step's loss, the final parameters
// and the first step's memory (TrainConfig::on_step_memory).
struct TrainedRun {
  std::vector<double> losses;
  std::vector<mj::Array> params;
  rnn::StepMemory memory;
};

// One epoch of rnn::train on the first 256 training images (2 steps of 128, hidden 128, seed 0),
// compiled, per policy; each policy is trained once for all tests of the suite.
class RnnOffloadGates : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto train_set = fmnist::load_split(ms::fashion_mnist_dir(), "train", 2 * kBatch);
    for (const char* policy : {"none", "everything_saveable", "offload_gates"}) {
      TrainedRun run;
      rnn::GRU params = rnn::init_gru(0, kHidden);
      rnn::TrainConfig cfg;
      cfg.epochs = 1;
      cfg.batch = kBatch;
      cfg.skip_eval = true;
      cfg.remat = rnn::parse_remat(policy);
      cfg.on_step = [&run](int64_t, double loss) { run.losses.push_back(loss); };
      cfg.on_step_memory = [&run](const rnn::StepMemory& m) { run.memory = m; };
      rnn::train(params, train_set, train_set, cfg);
      run.params = mj::tree_flatten(params);
      runs()[policy] = run;
    }
  }
  static void TearDownTestSuite() { runs().clear(); }
  static std::map<std::string, TrainedRun>& runs() {
    static std::map<std::string, TrainedRun> r;
    return r;
  }
};

// Bitwise equality, derived from what the policies change. A remat policy only changes where the
// backward loop finds a residual: kept on the device (none, everything_saveable), recomputed
// from the saved carry h (the sigmoids and tanh under offload_gates), or copied back from the
// pinned_host stack (the gates h @ w_hh + b_hh). A copy is a memcpy, bit for bit. A recomputed
// value is the same primitive on the same operand bits: the compiler contracts no multiply-add
// into an FMA and reassociates nothing (jit/codegen/emit_llvm.cc: FPOpFusion::Strict, no fast math),
// so a fusion rounds each operation as the forward pass did, whatever it is fused with; the
// GEMMs are the same single-threaded oneDNN sgemm calls on the same shapes (split into tasks by
// shape only, jit/runtime/gemm.h). The cotangent equations are the
// same in every policy. So every gradient, hence every Adam update and every later loss, is the
// same float32 value: EXPECT_EQ on the losses (float32 values held in doubles) and memcmp on
// the parameters, not a tolerance.
TEST_F(RnnOffloadGates, CompiledStepLossesAndParametersEqualNoRematBitwise) {
  const TrainedRun& none = runs().at("none");
  const TrainedRun& offload = runs().at("offload_gates");
  ASSERT_EQ(none.losses.size(), 2u);
  ASSERT_EQ(offload.losses.size(), 2u);
  // The untrained loss is near ln(10) = 2.303 (small logits), and the first update changed it.
  EXPECT_NEAR(none.losses[0], 2.303, 0.1);
  EXPECT_NE(none.losses[1], none.losses[0]);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(offload.losses[i], none.losses[i])
        << "step " << i << ": " << std::setprecision(9) << offload.losses[i] << " vs " << none.losses[i];

  ASSERT_EQ(offload.params.size(), none.params.size());
  const char* names[] = {"w_ih", "w_hh", "b_ih", "b_hh", "w_out", "b_out"};
  for (size_t i = 0; i < none.params.size(); ++i) {
    const mj::Array &a = none.params[i], &b = offload.params[i];
    ASSERT_EQ(a.shape(), b.shape()) << names[i];
    EXPECT_EQ(std::memcmp(a.data<float>(), b.data<float>(), size_t(a.size()) * sizeof(float)), 0)
        << names[i] << " after two Adam steps differs from remat none";
  }
}

// The host peak: offload_gates stacks the gates gh = h @ w_hh + b_hh, f32[B, 3H] per row, over
// the 28 rows: 28 x 128 x 384 x 4 B = 5505024 B in pinned_host. That is the step's only host
// buffer, one arena block of 1344 pages (a page multiple, so the allocator's rounding of large
// blocks adds nothing) and the planner's host peak. none and everything_saveable keep every
// residual on the device: no host bytes, planned or measured.
TEST_F(RnnOffloadGates, OffloadedGatesAreTheHostPeakAndLowerTheDevicePeak) {
  const rnn::StepMemory& none = runs().at("none").memory;
  const rnn::StepMemory& every = runs().at("everything_saveable").memory;
  const rnn::StepMemory& offload = runs().at("offload_gates").memory;
  EXPECT_EQ(offload.policy, "offload_gates");
  const int64_t gates_bytes = 28 * kBatch * 3 * kHidden * 4;
  ASSERT_EQ(gates_bytes, 5505024);
  EXPECT_GE(offload.host_peak, gates_bytes) << offload.predicted.str();
  EXPECT_EQ(offload.host_peak, offload.predicted.host_peak_memory_in_bytes) << offload.predicted.str();
  for (const rnn::StepMemory* m : {&none, &every}) {
    EXPECT_EQ(m->host_peak, 0) << m->policy;
    EXPECT_EQ(m->predicted.host_peak_memory_in_bytes, 0) << m->policy;
  }
  // everything_saveable keeps the gates stack (and more) on the device; offload_gates moves it
  // out, holding one slice of it at a time in the backward loop.
  EXPECT_LT(offload.device_peak, every.device_peak);
  EXPECT_LT(offload.predicted.peak_memory_in_bytes, every.predicted.peak_memory_in_bytes);

  // Measured against planned, device: the inputs (parameters, Adam state, batch, the constant
  // h0) are the same 1211004 B in all three. Counted by hand: params 28*384 + 128*384 + 384 +
  // 384 + 128*10 + 10 = 61962 floats = 247848 B, times 3 with Adam's mu and nu, plus the i32
  // step: 743548 B; x 28*128*28*4 = 401408 B, y 128*4 = 512 B, h0 128*128*4 = 65536 B.
  // The allocator counts every block the call obtains at its size class
  // (jit/runtime/allocator.h): the device arena, above 1 MiB, page-rounded (< 4096 B more); each
  // of the 20 outputs (19 parameter and state leaves, the loss) not written into a donated input
  // rounded to a multiple of 64 up to 512 B (< 64 B more) and above that to one of 4 classes per
  // power of two (less than a quarter of itself more). So measured - planned lies in
  // [0, 4096 + 20 * 64 + outputs / 4].
  for (const rnn::StepMemory* m : {&none, &every, &offload}) {
    EXPECT_EQ(m->param_state_bytes, 743548) << m->policy;
    EXPECT_EQ(m->input_bytes, 743548 + 401408 + 512 + 65536) << m->policy;
    const int64_t excess = m->device_peak - m->predicted.peak_memory_in_bytes;
    EXPECT_GE(excess, 0) << m->policy << ": " << m->predicted.str();
    EXPECT_LE(excess, 4096 + 20 * 64 + m->predicted.output_size_in_bytes / 4) << m->policy;
  }
}

}  // namespace
