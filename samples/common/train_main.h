// minijax samples: the main() the Fashion-MNIST MLP and CNN programs share — their options, the
// data, the progress line, --trace, SIGINT/SIGTERM, one report line per epoch.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "samples/fashion_mnist_mlp_lib.h"

namespace fmnist {

/// The model a train_main program trains.
struct TrainProgram {
  /// Named on the first line, e.g. "MLP 784-512-512-10".
  std::string model;
  /// Initialises the parameters from cfg.seed and trains them with `cfg` (fmnist::train's
  /// contract), returning one report per epoch run.
  std::function<std::vector<EpochReport>(const Dataset& train_set, const Dataset& test_set,
                                         const TrainConfig& cfg)>
      train;
};

/// The whole program: installs the stop handlers (first, before any thread starts), reads the
/// options (--epochs N, --limit N, --data-dir DIR, --seed S, --batch B, --lr LR, --eager,
/// --print-steps, --save DIR, --resume DIR, --trace FILE, --trace-steps N, --help), loads the
/// training and test splits, prints a line naming the run, trains with a progress line on a
/// terminal, one report line per epoch (format_report) and the final test accuracy. Returns the
/// exit status: 0, 2 for a command-line mistake (with the usage text), 1 for an error (printed),
/// 128 + the signal after a SIGINT or SIGTERM.
int train_main(int argc, char** argv, const TrainProgram& program);

}  // namespace fmnist
