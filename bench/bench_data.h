// minijax bench: the training benchmarks' data — the first n Fashion-MNIST training examples, or
// uniform random pixels and labels of the same shapes when the dataset is missing or not wanted.
#pragma once
#include <cstdio>
#include <random>
#include <string>

#include "samples/common/idx_reader.h"
#include "samples/fashion_mnist_mlp_lib.h"

namespace mjbench {

/// The first `n` examples of Fashion-MNIST's training split (from `dir`, else
/// $MINIJAX_FASHION_MNIST, else /usr/share/datasets/fashion-mnist), or, with `random` or when it
/// cannot be read (the reason printed to stderr), n random images (uniform bytes, fixed seed) and
/// labels. `source` receives "fashion-mnist" or "random".
inline fmnist::Dataset bench_dataset(int64_t n, bool random, const std::string& dir, std::string& source) {
  fmnist::Dataset d;
  if (!random) {
    try {
      d = fmnist::load_split(minijax::samples::fashion_mnist_dir(dir), "train", n);
      source = "fashion-mnist";
      return d;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench: %s; using random data\n", e.what());
    }
  }
  std::mt19937 rng(0);
  d.n = n;
  d.images.resize(size_t(n) * 784);
  d.labels.resize(size_t(n));
  for (auto& p : d.images) p = uint8_t(rng() & 0xff);
  for (auto& l : d.labels) l = uint8_t(rng() % 10);
  source = "random";
  return d;
}

}  // namespace mjbench
