// minijax samples: the Fashion-MNIST MLP trained on 8 virtual devices, mesh (4, 2) ("data", "model"),
// next to the same steps on one device; prints the losses and each step's collectives and bytes.
// Usage: fashion_mnist_sharded [--steps N] [--limit N] [--batch B] [--hidden H] [--lr LR] [--seed S]
//                              [--data-dir DIR] [--no-single]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include "samples/common/idx_reader.h"
#include "samples/fashion_mnist_sharded_lib.h"

namespace {

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--steps N (20)] [--limit N (all 60000)] [--batch B (128)] [--hidden H (512)]\n"
               "          [--lr LR (0.1)] [--seed S (0)] [--data-dir DIR] [--no-single]\n"
               "Runs on 8 virtual devices (mesh (4, 2): batch over 'data', hidden dims over 'model')\n"
               "with the eager reference executor (slow: keep --steps small). --no-single skips the\n"
               "single-device comparison run.\n"
               "Data: --data-dir, else $MINIJAX_FASHION_MNIST, else /usr/share/datasets/fashion-mnist\n"
               "(Debian package dataset-fashion-mnist).\n",
               prog);
}

}  // namespace

int main(int argc, char** argv) {
  fmnist::ShardedConfig cfg;
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
    // A number that spans the whole argument ("5x" and "" are rejected).
    auto integer = [&]() {
      std::string v = value();
      size_t used = 0;
      long long r = std::stoll(v, &used);
      if (used != v.size()) throw std::invalid_argument(v);
      return r;
    };
    try {
      if (a == "--steps") cfg.steps = integer();
      else if (a == "--limit") limit = integer();
      else if (a == "--batch") cfg.batch = integer();
      else if (a == "--hidden") cfg.hidden = integer();
      else if (a == "--seed") {
        long long s = integer();
        if (s < 0 || s > 0xffffffffLL) throw std::out_of_range("seed");
        cfg.seed = uint32_t(s);
      } else if (a == "--lr") {
        std::string v = value();
        size_t used = 0;
        cfg.lr = std::stod(v, &used);
        if (used != v.size()) throw std::invalid_argument(v);
      } else if (a == "--data-dir") data_dir = value();
      else if (a == "--no-single") cfg.single_device = false;
      else if (a == "--help" || a == "-h") { usage(argv[0]); return 0; }
      else { std::fprintf(stderr, "unknown option %s\n", a.c_str()); usage(argv[0]); return 2; }
    } catch (const std::logic_error&) {
      std::fprintf(stderr, "bad value for %s\n", a.c_str());
      return 2;
    }
  }
  if (cfg.steps < 0 || (limit != -1 && limit <= 0) || !(cfg.lr > 0)) {
    std::fprintf(stderr, "--steps must be >= 0, --limit > 0, --lr > 0\n");
    return 2;
  }
  try {
    mj::set_num_devices(8);
    auto mesh = std::make_shared<const mj::Mesh>(mj::devices(), mj::Shape{4, 2},
                                                 std::vector<std::string>{"data", "model"});
    const std::string dir = minijax::samples::fashion_mnist_dir(data_dir);
    auto train_set = fmnist::load_split(dir, "train", limit);
    std::printf("Fashion-MNIST from %s: %lld training images; MLP 784-%lld-%lld-10, SGD lr %g, "
                "batch %lld, seed %u, %lld steps on %s\n",
                dir.c_str(), (long long)train_set.n, (long long)cfg.hidden, (long long)cfg.hidden,
                cfg.lr, (long long)cfg.batch, cfg.seed, (long long)cfg.steps, mesh->str().c_str());
    std::fflush(stdout);
    double max_diff = 0;
    std::string last_collectives;
    cfg.on_step = [&](const fmnist::StepReport& r) {
      std::printf("step %lld  loss %.6f", (long long)r.step, r.loss_sharded);
      if (!std::isnan(r.loss_single)) {
        const double d = std::fabs(r.loss_sharded - r.loss_single);
        max_diff = std::max(max_diff, d);
        std::printf("  single-device %.6f  |diff| %.2e", r.loss_single, d);
      }
      // The full list when it changes (the first step, or a new program), else a summary.
      const bool same = r.collectives == last_collectives;
      std::printf("  %zu collectives, %lld B received per device%s\n%s", r.num_collectives,
                  (long long)r.max_bytes_received, same ? " (same as the step before)" : "",
                  same ? "" : r.collectives.c_str());
      last_collectives = r.collectives;
      std::fflush(stdout);
    };
    auto reports = fmnist::train_sharded(train_set, cfg, mesh);
    if (!reports.empty()) {
      std::printf("loss %.6f -> %.6f", reports.front().loss_sharded, reports.back().loss_sharded);
      if (cfg.single_device) std::printf("; largest |sharded - single-device| loss difference %.2e", max_diff);
      std::printf("\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
