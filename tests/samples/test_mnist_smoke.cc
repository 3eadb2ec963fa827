// minijax tests: smoke test of the Fashion-MNIST sample's training code on a slice of the data,
// and the IDX reader's error paths (missing file, bad magic, truncated data) on files made here.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "samples/common/idx_reader.h"
#include "samples/fashion_mnist_mlp_lib.h"
#include "samples/step_losses.h"

namespace {

namespace fs = std::filesystem;
namespace ms = minijax::samples;

// Writes `bytes` gzip-compressed to path.
void write_gz(const fs::path& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  if (!bytes.empty()) ASSERT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
  gzclose(f);
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("minijax_idx_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// An IDX header: magic 00 00 08 ndim, then big-endian sizes.
std::vector<uint8_t> header(std::vector<uint32_t> dims) {
  std::vector<uint8_t> h{0, 0, 8, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) h.push_back(uint8_t(d >> s));
  return h;
}

TEST(IdxReader, ReadsAHandMadeFileAndHonoursLimit) {
  auto d = temp_dir("ok");
  auto bytes = header({3, 2, 2});
  for (int i = 0; i < 12; ++i) bytes.push_back(uint8_t(10 * i));
  write_gz(d / "x.gz", bytes);
  auto all = ms::read_idx_gz((d / "x.gz").string());
  EXPECT_EQ(all.dims, (std::vector<int64_t>{3, 2, 2}));
  ASSERT_EQ(all.bytes.size(), 12u);
  EXPECT_EQ(all.bytes[11], 110);
  auto two = ms::read_idx_gz((d / "x.gz").string(), 2);
  EXPECT_EQ(two.dims, (std::vector<int64_t>{2, 2, 2}));
  ASSERT_EQ(two.bytes.size(), 8u);
  EXPECT_EQ(two.bytes[7], 70);
  fs::remove_all(d);
}

TEST(IdxReader, MissingFileNamesTheFileAndThePackage) {
  try {
    fmnist::load_split("/nonexistent/minijax-data", "train", 10);
    FAIL() << "expected mj::IOError";
  } catch (const mj::IOError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("/nonexistent/minijax-data/train-images-idx3-ubyte.gz"), std::string::npos) << m;
    EXPECT_NE(m.find("dataset-fashion-mnist"), std::string::npos) << m;
  }
}

TEST(IdxReader, BadMagicIsValueErrorNamingTheFile) {
  auto d = temp_dir("magic");
  auto bytes = header({2});
  bytes[2] = 0x0D;  // float data, not unsigned bytes
  bytes.push_back(1);
  bytes.push_back(2);
  write_gz(d / "bad.gz", bytes);
  try {
    ms::read_idx_gz((d / "bad.gz").string());
    FAIL() << "expected mj::ValueError";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find((d / "bad.gz").string()), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos);
  }
  fs::remove_all(d);
}

TEST(IdxReader, TruncatedDataAndWrongRankAreValueErrors) {
  auto d = temp_dir("trunc");
  auto bytes = header({4, 28, 28});
  bytes.resize(bytes.size() + 100);  // 4*784 promised, 100 present
  write_gz(d / "train-images-idx3-ubyte.gz", bytes);
  EXPECT_THROW(ms::read_idx_gz((d / "train-images-idx3-ubyte.gz").string()), mj::ValueError);
  // A labels file read where images (3 dims) are expected.
  auto lab = header({4});
  lab.insert(lab.end(), {0, 1, 2, 3});
  write_gz(d / "l.gz", lab);
  EXPECT_THROW(ms::read_idx_gz((d / "l.gz").string(), -1, 3), mj::ValueError);
  // An empty file: no header.
  write_gz(d / "empty.gz", {});
  EXPECT_THROW(ms::read_idx_gz((d / "empty.gz").string()), mj::ValueError);
  fs::remove_all(d);
}

TEST(IdxReader, DataDirOverride) {
  EXPECT_EQ(ms::fashion_mnist_dir("/some/dir"), "/some/dir");
}

// The sample's training loop on the first 1024 training images (8 steps of 128 per epoch,
// 3 epochs) and the first 1000 test images. Before training the logits are small (weights are
// U(+-1/sqrt(fan_in))), so the loss is near ln(10) = 2.303 and accuracy near chance (0.1);
// after 24 Adam steps the loss must have fallen and both accuracies must be well above chance.
TEST(FashionMnistSmoke, LossFallsAndAccuracyBeatsChance) {
  const std::string dir = ms::fashion_mnist_dir();
  auto train_set = fmnist::load_split(dir, "train", 1024);
  auto test_set = fmnist::load_split(dir, "t10k", 1000);
  ASSERT_EQ(train_set.n, 1024);
  ASSERT_EQ(test_set.n, 1000);
  ASSERT_EQ(train_set.images.size(), 1024u * 784u);

  auto params = fmnist::init_mlp(0);
  ASSERT_EQ(params.w1.shape(), (mj::Shape{784, 512}));
  ASSERT_EQ(params.b3.shape(), (mj::Shape{10}));
  // PyTorch's Linear init: every weight of layer 1 lies within 1/sqrt(784) = 1/28.
  const float* w1 = params.w1.data<float>();
  float wmax = 0;
  for (int64_t i = 0; i < 784 * 512; ++i) wmax = std::max(wmax, std::fabs(w1[i]));
  EXPECT_LE(wmax, 1.0f / 28.0f);
  EXPECT_GT(wmax, 0.9f / 28.0f);

  const double loss0 = fmnist::mean_loss(params, train_set);
  EXPECT_NEAR(loss0, std::log(10.0), 0.25);

  fmnist::TrainConfig cfg;
  cfg.epochs = 3;
  auto reports = fmnist::train(params, train_set, test_set, cfg);
  ASSERT_EQ(reports.size(), 3u);
  for (auto& r : reports) EXPECT_EQ(r.steps, 8);
  const double loss1 = fmnist::mean_loss(params, train_set);
  EXPECT_LT(loss1, 0.6 * loss0);
  EXPECT_LT(reports.back().mean_loss, reports.front().mean_loss);
  EXPECT_GT(reports.back().train_acc, 0.6);
  EXPECT_GT(reports.back().test_acc, 0.5);
}

// The main job's compiled step (one jitted value_and_grad + Adam, state donated) against the same
// steps run op by op (cfg.eager: the eager reference): the first 20 step losses within 1e-4
// relative, on the same shuffled batches (same seed).
TEST(FashionMnistSmoke, CompiledStepLossesEqualEagerForTwentySteps) {
  const std::string dir = ms::fashion_mnist_dir();
  auto train_set = fmnist::load_split(dir, "train", 20 * 128);
  auto test_set = fmnist::load_split(dir, "t10k", 100);
  auto train = [&](const fmnist::TrainConfig& cfg) {
    auto params = fmnist::init_mlp(0);
    fmnist::train(params, train_set, test_set, cfg);
  };
  expect_losses_match(step_losses(train, false), step_losses(train, true), 20, 1e-4);
}

}  // namespace
