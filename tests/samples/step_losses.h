// minijax samples tests: the step losses of one sample training run, compiled or eager, and their
// step-by-step comparison — shared by the MLP's and the CNN's smoke tests.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "samples/fashion_mnist_mlp_lib.h"

/// The losses of every step of `train(cfg)` (a sample's train on fixed data and a fresh init)
/// with cfg.epochs = `epochs` and cfg.eager = `eager`, the other settings TrainConfig's defaults.
template <class Train>
std::vector<double> step_losses(const Train& train, bool eager, int epochs = 1) {
  fmnist::TrainConfig cfg;
  cfg.epochs = epochs;
  cfg.eager = eager;
  std::vector<double> out;
  cfg.on_step = [&](int64_t, double loss) { out.push_back(loss); };
  train(cfg);
  return out;
}

/// Expects `steps` losses in each run and each compiled loss within `rel` (relative) of the
/// eager one, naming the step; and that the compiled run trains (its last loss below its first).
inline void expect_losses_match(const std::vector<double>& compiled, const std::vector<double>& eager,
                                size_t steps, double rel) {
  ASSERT_EQ(compiled.size(), steps);
  ASSERT_EQ(eager.size(), steps);
  for (size_t i = 0; i < steps; ++i)
    EXPECT_LE(std::fabs(compiled[i] - eager[i]), rel * std::fabs(eager[i]))
        << "step " << i << ": compiled " << compiled[i] << " eager " << eager[i];
  EXPECT_LT(compiled.back(), compiled.front());  // and it trains
}
