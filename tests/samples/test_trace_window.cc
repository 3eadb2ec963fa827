// minijax tests: the samples' --trace window (samples/common/trace_window.h) over the MLP sample's
// training: the first steps' calls, their tracing, compilation and GEMMs, and nothing after.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "profiler/trace_reader.h"
#include "samples/common/idx_reader.h"
#include "samples/common/trace_window.h"
#include "samples/fashion_mnist_mlp_lib.h"

namespace {

namespace ms = minijax::samples;

bool has_gemm(const trace_reader::Trace& t, int64_t m, int64_t n, int64_t k) {
  for (auto& g : t.select("gemm"))
    if (g.args["m"].num() == double(m) && g.args["n"].num() == double(n) && g.args["k"].num() == double(k)) return true;
  return false;
}

}  // namespace

// Six steps of batch 128 with a window of three: the trace holds exactly the first three calls of
// the compiled step, the step's tracing and compilation before them, and the first layer's GEMM
// (batch 128 x 784 inputs -> 512 units).
TEST(TraceWindow, TracesTheFirstStepsOfTheMlpSample) {
  const std::string dir = ms::fashion_mnist_dir();
  auto train_set = fmnist::load_split(dir, "train", 6 * 128);
  auto test_set = fmnist::load_split(dir, "t10k", 100);
  const std::string path = trace_reader::temp_path("mlp_window");
  auto params = fmnist::init_mlp(0);
  fmnist::TrainConfig cfg;
  cfg.epochs = 1;
  int steps = 0;
  {
    ms::TraceWindow window(path, 3);
    EXPECT_TRUE(window.recording());
    cfg.on_step = [&](int64_t step, double) {
      window.after_step(step);
      ++steps;
      EXPECT_EQ(window.recording(), step < 2) << "step " << step;
    };
    fmnist::train(params, train_set, test_set, cfg);
    window.finish();  // already stopped: nothing to do
  }
  EXPECT_EQ(steps, 6);
  EXPECT_FALSE(mj::profiler::is_tracing());
  trace_reader::Trace t = trace_reader::read(path);
  std::vector<trace_reader::Event> calls;
  for (auto& c : t.select("call"))
    if (c.name == "jit 'train_step'") calls.push_back(c);
  EXPECT_EQ(calls.size(), 3u);
  ASSERT_FALSE(calls.empty());
  bool traced = false, compiled = false;
  for (auto& e : t.select("tracing")) traced |= e.name == "trace jit 'train_step'" && e.end() <= calls[0].ts;
  for (auto& e : t.select("compile")) compiled |= e.name == "compile train_step" && e.end() <= calls[0].ts;
  EXPECT_TRUE(traced);
  EXPECT_TRUE(compiled);
  EXPECT_TRUE(has_gemm(t, 128, 512, 784));
  EXPECT_FALSE(t.select("kernel").empty());
  std::filesystem::remove(path);
}

// A run shorter than the window is written by finish(); an empty path records nothing.
TEST(TraceWindow, AShortRunIsWrittenByFinishAndAnEmptyPathTracesNothing) {
  const std::string path = trace_reader::temp_path("short_window");
  {
    ms::TraceWindow none("", 5);
    EXPECT_FALSE(none.recording());
    EXPECT_FALSE(mj::profiler::is_tracing());
    none.after_step(0);
    none.finish();
  }
  {
    ms::TraceWindow window(path, 5);
    auto f = mj::jit([](const mj::Array& a) { return a * 2.0; });
    mj::block_until_ready(f(mj::ones({4})));
    window.after_step(0);
    EXPECT_TRUE(window.recording());
    window.finish();
    EXPECT_FALSE(window.recording());
  }
  EXPECT_FALSE(mj::profiler::is_tracing());
  trace_reader::Trace t = trace_reader::read(path);
  EXPECT_EQ(t.select("call").size(), 1u);
  std::filesystem::remove(path);
}
