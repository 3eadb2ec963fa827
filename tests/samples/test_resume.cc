// minijax tests: the samples' --save / --resume — a resumed run takes the steps of an uninterrupted one.
// 256 images, batch 128: two epochs straight vs one epoch, a checkpoint, and the second epoch resumed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "samples/common/checkpoint.h"
#include "samples/common/idx_reader.h"
#include "samples/fashion_mnist_mlp_lib.h"
#include "samples/fashion_mnist_rnn_lib.h"
#include "samples/temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace ms = minijax::samples;


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

// A run stopped mid-epoch (should_stop, as a SIGINT does) saves the epochs completed, the key the
// unfinished epoch split and Adam's step count; the resumed run skips the batches taken and its
// steps are bitwise those of the run that never stopped. 256 images, batch 64: 4 steps an epoch,
// stopped after step 5 (the second of epoch 2).
TEST(SampleResume, MlpStoppedMidEpochResumesWithTheUninterruptedSteps) {
  const std::string dir = ms::fashion_mnist_dir();
  auto train_set = fmnist::load_split(dir, "train", 256);
  auto test_set = fmnist::load_split(dir, "t10k", 10);
  fmnist::TrainConfig cfg;
  cfg.epochs = 3;
  cfg.batch = 64;
  std::vector<double> straight;
  cfg.on_step = [&](int64_t, double loss) { straight.push_back(loss); };
  fmnist::MLP p_straight = fmnist::init_mlp(cfg.seed, 64);
  fmnist::train(p_straight, train_set, test_set, cfg);
  ASSERT_EQ(straight.size(), 12u);

  TempDir ckpt("mlp_mid");
  cfg.save_dir = ckpt.str();
  int64_t last = -1;
  cfg.on_step = [&](int64_t step, double) { last = step; };
  cfg.should_stop = [&] { return last == 5; };
  fmnist::MLP p_first = fmnist::init_mlp(cfg.seed, 64);
  auto reports = fmnist::train(p_first, train_set, test_set, cfg);
  EXPECT_EQ(last, 5);
  EXPECT_EQ(reports.size(), 1u);  // epoch 1's; the stopped epoch has none
  const auto saved = mj::load_safetensors(ms::checkpoint_path(ckpt.str()));
  EXPECT_EQ(saved.at("opt.step").item<int>(), 6);
  EXPECT_EQ(saved.at("epoch").item<int>(), 1);
  EXPECT_TRUE(mj::load_safetensors_metadata(ms::checkpoint_path(ckpt.str())).count("crc32:params.w1"));

  cfg.save_dir.clear();
  cfg.should_stop = nullptr;
  cfg.resume_dir = ckpt.str();
  std::vector<int64_t> steps;
  std::vector<double> resumed;
  cfg.on_step = [&](int64_t step, double loss) {
    steps.push_back(step);
    resumed.push_back(loss);
  };
  fmnist::MLP p_resumed = fmnist::init_mlp(cfg.seed, 64);
  fmnist::train(p_resumed, train_set, test_set, cfg);
  EXPECT_EQ(steps, (std::vector<int64_t>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(bits(resumed), bits(std::vector<double>(straight.begin() + 6, straight.end())));
  EXPECT_TRUE(same_leaves(mj::tree_flatten(p_resumed), mj::tree_flatten(p_straight)));

  // A step count that is no step of the next epoch (a file from elsewhere) is refused.
  const std::string file = ms::checkpoint_path(ckpt.str());
  auto c = mj::load_safetensors(file);
  c.at("opt.step") = mj::full({}, 13, mj::i32);
  auto meta = mj::load_safetensors_metadata(file);
  std::erase_if(meta, [](auto& kv) { return kv.first.rfind("crc32:", 0) == 0; });
  mj::save_safetensors(file, c, meta, {.crc32 = true});
  EXPECT_THROW(fmnist::train(p_resumed, train_set, test_set, cfg), mj::ValueError);
}

// check_finite: the first NaN or ±Inf of a floating leaf (f32, f64, bf16), by key and index;
// integer leaves are not read as floats (0x7f800000 is an ordinary i32).
TEST(SampleResume, CheckFiniteNamesTheTensorAndTheElement) {
  auto expect_refused = [](const mj::PathLeaves& leaves, const std::string& what) {
    try {
      ms::check_finite("f.safetensors", leaves);
      ADD_FAILURE() << "expected mj::ValueError for " << what;
    } catch (const mj::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("'f.safetensors'"), std::string::npos) << e.what();
    }
  };
  const float inf = std::numeric_limits<float>::infinity();
  const mj::Array ok = mj::array({1.f, -2.f, 3e38f});
  const mj::Array big_int = mj::full({2}, 0x7f800000, mj::i32);
  EXPECT_NO_THROW(ms::check_finite("f.safetensors", {{"a", ok}, {"n", big_int}}));
  expect_refused({{"a", ok}, {"b", mj::array({0.f, -inf})}}, "-inf in the tensor 'b' (f32[2], element 1");
  expect_refused({{"d", mj::astype(mj::array({inf, 0.f}), mj::f64)}}, "inf in the tensor 'd' (f64[2], element 0");
  expect_refused({{"h", mj::astype(mj::array({1.f, std::nanf("")}), mj::bf16)}}, "NaN in the tensor 'h' (bf16[2], element 1");
}

TEST(SampleResume, RnnStoppedMidEpochResumesWithTheUninterruptedSteps) {
  namespace rnn = fmnist::rnn;
  const std::string dir = ms::fashion_mnist_dir();
  auto train_set = fmnist::load_split(dir, "train", 192);
  auto test_set = fmnist::load_split(dir, "t10k", 10);
  rnn::TrainConfig cfg;
  cfg.epochs = 2;
  cfg.batch = 64;
  cfg.skip_eval = true;
  std::vector<double> straight;
  cfg.on_step = [&](int64_t, double loss) { straight.push_back(loss); };
  rnn::GRU p_straight = rnn::init_gru(cfg.seed, 16);
  rnn::train(p_straight, train_set, test_set, cfg);
  ASSERT_EQ(straight.size(), 6u);

  TempDir ckpt("rnn_mid");
  cfg.save_dir = ckpt.str();
  int64_t last = -1;
  cfg.on_step = [&](int64_t step, double) { last = step; };
  cfg.should_stop = [&] { return last == 3; };
  rnn::GRU p_first = rnn::init_gru(cfg.seed, 16);
  rnn::train(p_first, train_set, test_set, cfg);
  EXPECT_EQ(last, 3);

  cfg.save_dir.clear();
  cfg.should_stop = nullptr;
  cfg.resume_dir = ckpt.str();
  std::vector<double> resumed;
  cfg.on_step = [&](int64_t, double loss) { resumed.push_back(loss); };
  rnn::GRU p_resumed = rnn::init_gru(cfg.seed, 16);
  rnn::train(p_resumed, train_set, test_set, cfg);
  EXPECT_EQ(bits(resumed), bits({straight[4], straight[5]}));
  EXPECT_TRUE(same_leaves(mj::tree_flatten(p_resumed), mj::tree_flatten(p_straight)));
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
