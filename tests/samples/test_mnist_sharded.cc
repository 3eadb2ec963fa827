// minijax tests: the sharded Fashion-MNIST sample's training loop on a slice of the data: the
// losses on the (4, 2) mesh, compiled and run on 8 devices, equal the single-device losses, and
// the loss falls.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "jit/runtime/communicator.h"
#include "samples/common/idx_reader.h"
#include "samples/fashion_mnist_sharded_lib.h"

namespace {

namespace ms = minijax::samples;

// 256 images in 4 batches of 64, 8 SGD steps: steps 5..8 see the batches of steps 1..4 again.
TEST(FashionMnistSharded, ShardedLossesEqualSingleDeviceAndFall) {
  mj::set_num_devices(8);
  auto mesh = std::make_shared<const mj::Mesh>(mj::devices(), mj::Shape{4, 2},
                                               std::vector<std::string>{"data", "model"});
  auto train_set = fmnist::load_split(ms::fashion_mnist_dir(), "train", 256);
  ASSERT_EQ(train_set.n, 256);
  fmnist::ShardedConfig cfg;
  cfg.steps = 8;
  cfg.batch = 64;
  cfg.hidden = 64;
  cfg.lr = 0.1;
  mj::reset_collective_stats();
  auto reports = fmnist::train_sharded(train_set, cfg, mesh);
  ASSERT_EQ(reports.size(), 8u);
  // The sharded steps ran compiled on the multi-device executor: its communicator moved the
  // collectives' bytes on every device (the reference executor run_spmd does not use it).
  for (int id : mesh->device_ids) EXPECT_GT(mj::collective_stats(id).bytes_received, 0) << "device " << id;
  for (auto& r : reports) {
    // Sharding reorders the batch and hidden-dim sums: equal up to f32 rounding.
    EXPECT_NEAR(r.loss_sharded, r.loss_single, 1e-5 + 1e-4 * std::fabs(r.loss_single)) << "step " << r.step;
    // Batch over "data": the loss and the weight gradients are all-reduced over it every step.
    EXPECT_NE(r.collectives.find("all_reduce over data"), std::string::npos) << r.collectives;
    // w2 row-parallel over "model": the forward matmul's partial sums are reduced over it.
    EXPECT_NE(r.collectives.find("all_reduce over model"), std::string::npos) << r.collectives;
    EXPECT_GT(r.max_bytes_received, 0);
  }
  // Near ln(10) at the start (small initial weights), and lower on the same batch 4 steps later.
  EXPECT_NEAR(reports[0].loss_sharded, std::log(10.0), 0.3);
  for (size_t k = 0; k < 4; ++k)
    EXPECT_LT(reports[k + 4].loss_sharded, reports[k].loss_sharded) << "batch " << k;
  EXPECT_THROW(
      {
        fmnist::ShardedConfig bad = cfg;
        bad.batch = 30;  // not a multiple of the 4 "data" devices
        fmnist::train_sharded(train_set, bad, mesh);
      },
      mj::ValueError);
}

}  // namespace
