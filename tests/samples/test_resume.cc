// minijax tests: the samples' --save / --resume — a resumed run takes the steps of an uninterrupted one.
// 256 images, batch 128: two epochs straight vs one epoch, a checkpoint, and the second epoch resumed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "samples/common/checkpoint.h"
#include "samples/common/idx_reader.h"
#include "samples/fashion_mnist_mlp_lib.h"
#include "samples/fashion_mnist_rnn_lib.h"

namespace {

namespace fs = std::filesystem;
namespace ms = minijax::samples;

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("minijax_resume_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string str() const { return path.string(); }
};

// The float32 bits of each recorded loss (the losses are f32 scalars read as double).
std::vector<uint32_t> bits(const std::vector<double>& losses) {
  std::vector<uint32_t> out;
  for (double l : losses) {
    const float f = float(l);
    EXPECT_EQ(double(f), l);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    out.push_back(u);
  }
  return out;
}

::testing::AssertionResult same_leaves(const std::vector<mj::Array>& a, const std::vector<mj::Array>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << a.size() << " vs " << b.size() << " leaves";
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].aval() != b[i].aval()) return ::testing::AssertionFailure() << "leaf " << i << ": avals differ";
    if (std::memcmp(a[i].raw_data(), b[i].raw_data(), size_t(a[i].aval().nbytes())) != 0)
      return ::testing::AssertionFailure() << "leaf " << i << ": values differ";
  }
  return ::testing::AssertionSuccess();
}

// The data order continues because the checkpoint holds the shuffling key after epoch 1's split
// (epoch 2 splits it as the uninterrupted run does) and Adam's step count; the parameters and
// moments are their exact f32 bits. So epoch 2's two losses and the final parameters are
// bitwise those of the run that never stopped.
TEST(SampleResume, MlpResumedEpochTakesTheUninterruptedSteps) {
  const std::string dir = ms::fashion_mnist_dir();
  auto train_set = fmnist::load_split(dir, "train", 256);
  auto test_set = fmnist::load_split(dir, "t10k", 100);
  fmnist::TrainConfig cfg;
  cfg.epochs = 2;
  std::vector<double> straight;
  cfg.on_step = [&](int64_t step, double loss) {
    EXPECT_EQ(step, int64_t(straight.size()));
    straight.push_back(loss);
  };
  fmnist::MLP p_straight = fmnist::init_mlp(cfg.seed);
  fmnist::train(p_straight, train_set, test_set, cfg);
  ASSERT_EQ(straight.size(), 4u);

  TempDir ckpt("mlp");
  cfg.epochs = 1;
  cfg.save_dir = ckpt.str();
  std::vector<double> first;
  cfg.on_step = [&](int64_t, double loss) { first.push_back(loss); };
  fmnist::MLP p_first = fmnist::init_mlp(cfg.seed);
  fmnist::train(p_first, train_set, test_set, cfg);
  EXPECT_EQ(bits(first), bits({straight[0], straight[1]}));

  // What was saved: every leaf by path, the step count and the epoch.
  const auto saved = mj::load_safetensors(ms::checkpoint_path(ckpt.str()));
  for (const char* key : {"params.w1", "params.b3", "opt.mu.w1", "opt.nu.b3", "opt.step", "key", "epoch"})
    EXPECT_TRUE(saved.count(key)) << key;
  EXPECT_EQ(saved.at("opt.step").item<int>(), 2);
  EXPECT_EQ(saved.at("epoch").item<int>(), 1);
  EXPECT_EQ(saved.at("key").aval().str(), "u32[2]");
  EXPECT_EQ(mj::load_safetensors_metadata(ms::checkpoint_path(ckpt.str())).at("sample"), "fashion_mnist_mlp");

  cfg.epochs = 2;
  cfg.save_dir.clear();
  cfg.resume_dir = ckpt.str();
  std::vector<int64_t> resumed_steps;
  std::vector<double> resumed;
  cfg.on_step = [&](int64_t step, double loss) {
    resumed_steps.push_back(step);
    resumed.push_back(loss);
  };
  fmnist::MLP p_resumed = fmnist::init_mlp(cfg.seed + 7);  // overwritten by the checkpoint
  auto reports = fmnist::train(p_resumed, train_set, test_set, cfg);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].epoch, 2);
  EXPECT_EQ(resumed_steps, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(bits(resumed), bits({straight[2], straight[3]}));
  EXPECT_TRUE(same_leaves(mj::tree_flatten(p_resumed), mj::tree_flatten(p_straight)));

  // A run of other settings or another model is refused by name, before any step.
  cfg.batch = 64;
  EXPECT_THROW(fmnist::train(p_resumed, train_set, test_set, cfg), mj::ValueError);
  cfg.batch = 128;
  fmnist::MLP wide = fmnist::init_mlp(cfg.seed, 256);
  try {
    fmnist::train(wide, train_set, test_set, cfg);
    ADD_FAILURE() << "expected mj::IOError";
  } catch (const mj::IOError& e) {
    EXPECT_NE(std::string(e.what()).find("key 'params.w1'"), std::string::npos) << e.what();
  }
  cfg.resume_dir = ckpt.str() + "/missing";
  EXPECT_THROW(fmnist::train(p_resumed, train_set, test_set, cfg), mj::IOError);
}

TEST(SampleResume, RnnResumedEpochTakesTheUninterruptedSteps) {
  namespace rnn = fmnist::rnn;
  const std::string dir = ms::fashion_mnist_dir();
  auto train_set = fmnist::load_split(dir, "train", 256);
  auto test_set = fmnist::load_split(dir, "t10k", 10);
  rnn::TrainConfig cfg;
  cfg.epochs = 2;
  cfg.skip_eval = true;
  const int64_t hidden = 32;
  std::vector<double> straight;
  cfg.on_step = [&](int64_t, double loss) { straight.push_back(loss); };
  rnn::GRU p_straight = rnn::init_gru(cfg.seed, hidden);
  rnn::train(p_straight, train_set, test_set, cfg);
  ASSERT_EQ(straight.size(), 4u);

  TempDir ckpt("rnn");
  cfg.epochs = 1;
  cfg.save_dir = ckpt.str();
  cfg.on_step = [](int64_t, double) {};
  rnn::GRU p_first = rnn::init_gru(cfg.seed, hidden);
  rnn::train(p_first, train_set, test_set, cfg);

  cfg.epochs = 2;
  cfg.save_dir.clear();
  cfg.resume_dir = ckpt.str();
  cfg.remat = rnn::parse_remat("nothing_saveable");  // a policy changes no step's bits (README)
  std::vector<double> resumed;
  cfg.on_step = [&](int64_t step, double loss) {
    EXPECT_EQ(step, int64_t(2 + resumed.size()));
    resumed.push_back(loss);
  };
  rnn::GRU p_resumed = rnn::init_gru(cfg.seed, hidden);
  rnn::train(p_resumed, train_set, test_set, cfg);
  EXPECT_EQ(bits(resumed), bits({straight[2], straight[3]}));
  EXPECT_TRUE(same_leaves(mj::tree_flatten(p_resumed), mj::tree_flatten(p_straight)));

  rnn::GRU other = rnn::init_gru(cfg.seed, 16);
  EXPECT_THROW(rnn::train(other, train_set, test_set, cfg), mj::ValueError);  // hidden 16 vs 32
}

}  // namespace
