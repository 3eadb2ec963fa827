// minijax samples: trains a GRU (hidden 128) on Fashion-MNIST read as 28 rows of 28 pixels.
// Usage: fashion_mnist_rnn [--epochs N] [--limit N] [--remat POLICY] [--data-dir DIR] [--seed S] ...
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "samples/common/idx_reader.h"
#include "samples/fashion_mnist_rnn_lib.h"

namespace {

void usage(const char* prog) {
  std::fprintf(
      stderr,
      "usage: %s [--epochs N (5)] [--limit N (all 60000)] [--remat POLICY (none)]\n"
      "          [--data-dir DIR] [--seed S (0)] [--batch B (128)] [--lr LR (1e-3)]\n"
      "          [--hidden H (128)] [--print-steps] [--no-eval]\n"
      "POLICY: none | nothing_saveable | dots_saveable | everything_saveable | offload_gates\n"
      "  (the scan body wrapped in mj::checkpoint with that policy; offload_gates keeps the\n"
      "  recurrent gate pre-activations in pinned_host and recomputes the rest)\n"
      "--print-steps prints every step's loss; --no-eval skips the accuracy evaluations.\n"
      "Data: --data-dir, else $MINIJAX_FASHION_MNIST, else /usr/share/datasets/fashion-mnist\n"
      "(Debian package dataset-fashion-mnist).\n",
      prog);
}

}  // namespace

int main(int argc, char** argv) {
  fmnist::rnn::TrainConfig cfg;
  int64_t limit = -1, hidden = 128;
  bool print_steps = false;
  std::string data_dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // --name=value is accepted as well as --name value.
    std::string inline_value;
    bool has_inline = false;
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
      inline_value = a.substr(a.find('=') + 1);
      a = a.substr(0, a.find('='));
      has_inline = true;
    }
    auto value = [&]() -> std::string {
      if (has_inline) return inline_value;
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
      else if (a == "--hidden") hidden = number(to_ll);
      else if (a == "--remat") {
        try {
          cfg.remat = fmnist::rnn::parse_remat(value());
        } catch (const mj::ValueError& e) {
          std::fprintf(stderr, "%s\n", e.what());
          return 2;
        }
      } else if (a == "--print-steps" && !has_inline) print_steps = true;
      else if (a == "--no-eval" && !has_inline) cfg.skip_eval = true;
      else if (a == "--help" || a == "-h") { usage(argv[0]); return 0; }
      else { std::fprintf(stderr, "unknown option %s\n", argv[i]); usage(argv[0]); return 2; }
    } catch (const std::logic_error&) {
      std::fprintf(stderr, "bad value for %s\n", a.c_str());
      return 2;
    }
  }
  if (cfg.epochs < 0 || cfg.batch <= 0 || !(cfg.lr > 0) || hidden <= 0) {
    std::fprintf(stderr, "--epochs must be >= 0, --batch > 0, --lr > 0, --hidden > 0\n");
    return 2;
  }
  try {
    const std::string dir = minijax::samples::fashion_mnist_dir(data_dir);
    auto train_set = fmnist::load_split(dir, "train", limit);
    auto test_set = fmnist::load_split(dir, "t10k");
    std::printf("Fashion-MNIST from %s: %lld training, %lld test images; GRU 28 -> %lld over 28 "
                "rows (scan), linear %lld -> 10, remat %s, Adam lr %g, batch %lld, seed %u, "
                "%d epochs\n",
                dir.c_str(), (long long)train_set.n, (long long)test_set.n, (long long)hidden,
                (long long)hidden, cfg.remat.enabled() ? cfg.remat.policy->str().c_str() : "none",
                cfg.lr, (long long)cfg.batch, cfg.seed, cfg.epochs);
    std::fflush(stdout);
    auto params = fmnist::rnn::init_gru(cfg.seed, hidden);
    cfg.on_epoch = [](const fmnist::EpochReport& r) {
      std::printf("%s\n", fmnist::format_report(r).c_str());
      std::fflush(stdout);
    };
    if (print_steps)
      cfg.on_step = [](int64_t step, double loss) {
        std::printf("step %lld  loss %.9g\n", (long long)step, loss);
        std::fflush(stdout);
      };
    auto reports = fmnist::rnn::train(params, train_set, test_set, cfg);
    if (!reports.empty() && !cfg.skip_eval) {
      double best = 0;
      for (auto& r : reports) best = std::max(best, r.test_acc);
      std::printf("final test accuracy %.4f (best %.4f)\n", reports.back().test_acc, best);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
