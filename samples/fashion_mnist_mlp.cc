// minijax samples: the main job — trains an MLP 784-512-512-10 on Fashion-MNIST, one compiled step each.
// Usage: fashion_mnist_mlp [--epochs N] [--limit N] [--data-dir DIR] [--seed S] [--batch B] [--lr LR] [--eager]
//        [--save DIR] [--resume DIR]
//        [--trace FILE [--trace-steps N]]
#include "samples/common/train_main.h"
#include "samples/fashion_mnist_mlp_lib.h"

int main(int argc, char** argv) {
  return fmnist::train_main(argc, argv,
                            {"MLP 784-512-512-10",
                             [](const fmnist::Dataset& train_set, const fmnist::Dataset& test_set,
                                const fmnist::TrainConfig& cfg) {
                               auto params = fmnist::init_mlp(cfg.seed);
                               return fmnist::train(params, train_set, test_set, cfg);
                             }});
}
