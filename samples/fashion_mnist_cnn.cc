// minijax samples: trains a CNN (two 5x5 convolutions with max pooling, dense 1024-128-10) on
// Fashion-MNIST, one compiled step each. Usage: as fashion_mnist_mlp's (--help).
#include "samples/common/train_main.h"
#include "samples/fashion_mnist_cnn_lib.h"

int main(int argc, char** argv) {
  return fmnist::train_main(argc, argv,
                            {"CNN conv5x5x32-pool2-conv5x5x64-pool2-1024-128-10",
                             [](const fmnist::Dataset& train_set, const fmnist::Dataset& test_set,
                                const fmnist::TrainConfig& cfg) {
                               auto params = fmnist::cnn::init_cnn(cfg.seed);
                               return fmnist::cnn::train(params, train_set, test_set, cfg);
                             }});
}
