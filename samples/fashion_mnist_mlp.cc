// minijax samples: the main job — trains an MLP 784-512-512-10 on Fashion-MNIST, eagerly.
// Usage: fashion_mnist_mlp [--epochs N] [--limit N] [--data-dir DIR] [--seed S] [--batch B] [--lr LR]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "samples/common/idx_reader.h"
#include "samples/fashion_mnist_mlp_lib.h"

namespace {

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--epochs N (5)] [--limit N (all 60000)] [--data-dir DIR] [--seed S (0)]\n"
               "          [--batch B (128)] [--lr LR (1e-3)]\n"
               "Data: --data-dir, else $MINIJAX_FASHION_MNIST, else /usr/share/datasets/fashion-mnist\n"
               "(Debian package dataset-fashion-mnist).\n",
               prog);
}

}  // namespace

int main(int argc, char** argv) {
  fmnist::TrainConfig cfg;
  int64_t limit = -1;
  std::string data_dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        usage(argv[0]);
        std::exit(2);
      }
      return argv[++i];
    };
    // A number that spans the whole argument ("5x" and "" are rejected, not read as 5 / 0).
    auto number = [&](auto parse) {
      std::string v = value();
      size_t used = 0;
      auto r = parse(v, &used);
      if (used != v.size()) throw std::invalid_argument(v);
      return r;
    };
    auto to_ll = [](const std::string& v, size_t* used) { return std::stoll(v, used); };
    auto to_d = [](const std::string& v, size_t* used) { return std::stod(v, used); };
    try {
      if (a == "--epochs") cfg.epochs = int(number(to_ll));
      else if (a == "--limit") {
        limit = number(to_ll);
        if (limit <= 0) throw std::invalid_argument("limit");
      } else if (a == "--data-dir") data_dir = value();
      else if (a == "--seed") {
        long long s = number(to_ll);
        if (s < 0 || s > 0xffffffffLL) throw std::out_of_range("seed");
        cfg.seed = uint32_t(s);
      } else if (a == "--batch") cfg.batch = number(to_ll);
      else if (a == "--lr") cfg.lr = number(to_d);
      else if (a == "--help" || a == "-h") { usage(argv[0]); return 0; }
      else { std::fprintf(stderr, "unknown option %s\n", a.c_str()); usage(argv[0]); return 2; }
    } catch (const std::logic_error&) {
      std::fprintf(stderr, "bad value for %s\n", a.c_str());
      return 2;
    }
  }
  if (cfg.epochs < 0 || cfg.batch <= 0 || !(cfg.lr > 0)) {
    std::fprintf(stderr, "--epochs must be >= 0, --batch > 0, --lr > 0\n");
    return 2;
  }
  try {
    const std::string dir = minijax::samples::fashion_mnist_dir(data_dir);
    auto train_set = fmnist::load_split(dir, "train", limit);
    auto test_set = fmnist::load_split(dir, "t10k");
    std::printf("Fashion-MNIST from %s: %lld training, %lld test images; MLP 784-512-512-10, "
                "Adam lr %g, batch %lld, seed %u, %d epochs\n",
                dir.c_str(), (long long)train_set.n, (long long)test_set.n, cfg.lr,
                (long long)cfg.batch, cfg.seed, cfg.epochs);
    std::fflush(stdout);
    auto params = fmnist::init_mlp(cfg.seed);
    cfg.on_epoch = [](const fmnist::EpochReport& r) {
      std::printf("%s\n", fmnist::format_report(r).c_str());
      std::fflush(stdout);
    };
    auto reports = fmnist::train(params, train_set, test_set, cfg);
    double best = 0;
    for (auto& r : reports) best = std::max(best, r.test_acc);
    if (!reports.empty())
      std::printf("final test accuracy %.4f (best %.4f)\n", reports.back().test_acc, best);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
