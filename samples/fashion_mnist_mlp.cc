// minijax samples: the main job — trains an MLP 784-512-512-10 on Fashion-MNIST, one compiled step each.
// Usage: fashion_mnist_mlp [--epochs N] [--limit N] [--data-dir DIR] [--seed S] [--batch B] [--lr LR] [--eager]
//        [--save DIR] [--resume DIR]
//        [--trace FILE [--trace-steps N]]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "samples/common/idx_reader.h"
#include "samples/common/options.h"
#include "samples/common/progress.h"
#include "samples/common/stop_signals.h"
#include "samples/common/trace_window.h"
#include "samples/fashion_mnist_mlp_lib.h"

namespace {

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--epochs N (5)] [--limit N (all 60000)] [--data-dir DIR] [--seed S (0)]\n"
               "          [--batch B (128)] [--lr LR (1e-3)] [--eager] [--print-steps]\n"
               "          [--save DIR] [--resume DIR]\n"
               "          [--trace FILE] [--trace-steps N (5)]\n"
               "--save DIR writes DIR/checkpoint.safetensors after each epoch (parameters, Adam's\n"
               "state, the data order's key, the epoch); --resume DIR continues from it up to\n"
               "--epochs epochs in all, with the losses of an uninterrupted run.\n"
               "SIGINT or SIGTERM ends the step, writes the checkpoint (--save) and exits with\n"
               "130 or 143; a second one exits at once (the previous checkpoint stays intact).\n"
               "--trace FILE writes a profiler trace (Chrome trace-event JSON: ui.perfetto.dev,\n"
               "chrome://tracing) of the first N training steps, the first step's tracing and\n"
               "compilation included.\n"
               "Data: --data-dir, else $MINIJAX_FASHION_MNIST, else /usr/share/datasets/fashion-mnist\n"
               "(Debian package dataset-fashion-mnist).\n",
               prog);
}

}  // namespace

int main(int argc, char** argv) {
  // SIGINT / SIGTERM: the step finishes, the checkpoint is written (--save), exit 128 + signal.
  // First: the runtime's threads, started later, inherit the blocked signals.
  minijax::samples::install_stop_handlers();
  fmnist::TrainConfig cfg;
  int64_t limit = -1;
  std::string data_dir;
  bool print_steps = false;
  std::string trace_path;
  int64_t trace_steps = minijax::samples::TraceWindow::kDefaultSteps;
  try {
    for (minijax::samples::OptionReader o(argc, argv); o.next();) {
      if (o.is("--epochs")) cfg.epochs = int(o.integer(0, 1 << 30));
      else if (o.is("--limit")) limit = o.integer(1);
      else if (o.is("--data-dir")) data_dir = o.value();
      else if (o.is("--seed")) cfg.seed = uint32_t(o.integer(0, 0xffffffffLL));
      else if (o.is("--batch")) cfg.batch = o.integer(1);
      else if (o.is("--lr")) cfg.lr = o.real(true);
      else if (o.is("--eager")) { o.flag(); cfg.eager = true; }
      else if (o.is("--print-steps")) { o.flag(); print_steps = true; }
      else if (o.is("--save")) cfg.save_dir = o.value();
      else if (o.is("--resume")) cfg.resume_dir = o.value();
      else if (o.is("--trace")) trace_path = o.value();
      else if (o.is("--trace-steps")) trace_steps = o.integer(1);
      else if (o.is("--help") || o.is("-h")) { usage(argv[0]); return 0; }
      else o.unknown();
    }
  } catch (const minijax::samples::OptionError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    usage(argv[0]);
    return 2;
  }
  try {
    const std::string dir = minijax::samples::fashion_mnist_dir(data_dir);
    auto train_set = fmnist::load_split(dir, "train", limit);
    auto test_set = fmnist::load_split(dir, "t10k");
    std::printf("Fashion-MNIST from %s: %lld training, %lld test images; MLP 784-512-512-10, "
                "Adam lr %g, batch %lld, seed %u, %d epochs, %s\n",
                dir.c_str(), (long long)train_set.n, (long long)test_set.n, cfg.lr,
                (long long)cfg.batch, cfg.seed, cfg.epochs, cfg.eager ? "eager steps" : "compiled steps");
    std::fflush(stdout);
    auto params = fmnist::init_mlp(cfg.seed);
    // On a terminal, a progress line while an epoch runs (nothing extra in a log or a pipe,
    // and none with --print-steps, whose lines it would interleave with).
    minijax::samples::ProgressLine progress(stdout, !print_steps && minijax::samples::is_terminal(stdout));
    cfg.on_epoch_begin = [&progress](int epoch, int64_t steps) { progress.begin(epoch, steps); };
    cfg.on_checkpoint = [&progress](const std::string& line) {
      progress.end();
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
    minijax::samples::TraceWindow trace(trace_path, trace_steps);
    cfg.on_step = [&](int64_t step, double loss) {
      if (print_steps) {
        std::printf("step %lld loss %.9g\n", (long long)step, loss);
        std::fflush(stdout);
      }
      if (trace.recording()) progress.end();  // the trace's "written" line, not over the progress line
      trace.after_step(step);
      progress.step(loss);
    };
    cfg.on_epoch = [&progress](const fmnist::EpochReport& r) {
      progress.end();
      std::printf("%s\n", fmnist::format_report(r).c_str());
      std::fflush(stdout);
    };
    cfg.should_stop = [] { return minijax::samples::stop_signal() != 0; };
    auto reports = fmnist::train(params, train_set, test_set, cfg);
    if (const int sig = minijax::samples::stop_signal()) {
      progress.end();
      trace.finish();
      return minijax::samples::report_stop(sig, !cfg.save_dir.empty());
    }
    trace.finish();
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
