// minijax samples: the main() the Fashion-MNIST MLP and CNN programs share (train_main.h): option
// parsing, the usage text, the progress line, --trace and the stop signals around fmnist::train.
#include "samples/common/train_main.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "samples/common/idx_reader.h"
#include "samples/common/options.h"
#include "samples/common/progress.h"
#include "samples/common/stop_signals.h"
#include "samples/common/trace_window.h"

namespace fmnist {

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

// What the command line asks for beyond TrainConfig.
struct RunOptions {
  int64_t limit = -1;
  std::string data_dir, trace_path;
  bool print_steps = false;
  int64_t trace_steps = minijax::samples::TraceWindow::kDefaultSteps;
};

// Reads the options into cfg and run; throws OptionError; returns false for --help.
bool parse_options(int argc, char** argv, TrainConfig& cfg, RunOptions& run) {
  for (minijax::samples::OptionReader o(argc, argv); o.next();) {
    if (o.is("--epochs")) cfg.epochs = int(o.integer(0, 1 << 30));
    else if (o.is("--limit")) run.limit = o.integer(1);
    else if (o.is("--data-dir")) run.data_dir = o.value();
    else if (o.is("--seed")) cfg.seed = uint32_t(o.integer(0, 0xffffffffLL));
    else if (o.is("--batch")) cfg.batch = o.integer(1);
    else if (o.is("--lr")) cfg.lr = o.real(true);
    else if (o.is("--eager")) { o.flag(); cfg.eager = true; }
    else if (o.is("--print-steps")) { o.flag(); run.print_steps = true; }
    else if (o.is("--save")) cfg.save_dir = o.value();
    else if (o.is("--resume")) cfg.resume_dir = o.value();
    else if (o.is("--trace")) run.trace_path = o.value();
    else if (o.is("--trace-steps")) run.trace_steps = o.integer(1);
    else if (o.is("--help") || o.is("-h")) return false;
    else o.unknown();
  }
  return true;
}

// Loads the data, trains with the callbacks wired to the progress line, the trace window and the
// stop signals, and prints the report lines; returns the exit status.
int run_training(const TrainProgram& program, TrainConfig cfg, const RunOptions& run) {
  namespace ms = minijax::samples;
  const std::string dir = ms::fashion_mnist_dir(run.data_dir);
  auto train_set = load_split(dir, "train", run.limit);
  auto test_set = load_split(dir, "t10k");
  std::printf("Fashion-MNIST from %s: %lld training, %lld test images; %s, "
              "Adam lr %g, batch %lld, seed %u, %d epochs, %s\n",
              dir.c_str(), (long long)train_set.n, (long long)test_set.n, program.model.c_str(), cfg.lr,
              (long long)cfg.batch, cfg.seed, cfg.epochs, cfg.eager ? "eager steps" : "compiled steps");
  std::fflush(stdout);
  // On a terminal, a progress line while an epoch runs (nothing extra in a log or a pipe,
  // and none with --print-steps, whose lines it would interleave with).
  ms::ProgressLine progress(stdout, !run.print_steps && ms::is_terminal(stdout));
  cfg.on_epoch_begin = [&progress](int epoch, int64_t steps) { progress.begin(epoch, steps); };
  cfg.on_checkpoint = [&progress](const std::string& line) {
    progress.end();
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  ms::TraceWindow trace(run.trace_path, run.trace_steps);
  cfg.on_step = [&](int64_t step, double loss) {
    if (run.print_steps) {
      std::printf("step %lld loss %.9g\n", (long long)step, loss);
      std::fflush(stdout);
    }
    if (trace.recording()) progress.end();  // the trace's "written" line, not over the progress line
    trace.after_step(step);
    progress.step(loss);
  };
  cfg.on_epoch = [&progress](const EpochReport& r) {
    progress.end();
    std::printf("%s\n", format_report(r).c_str());
    std::fflush(stdout);
  };
  cfg.should_stop = [] { return ms::stop_signal() != 0; };
  auto reports = program.train(train_set, test_set, cfg);
  if (const int sig = ms::stop_signal()) {
    progress.end();
    trace.finish();
    return ms::report_stop(sig, !cfg.save_dir.empty());
  }
  trace.finish();
  double best = 0;
  for (auto& r : reports) best = std::max(best, r.test_acc);
  if (!reports.empty())
    std::printf("final test accuracy %.4f (best %.4f)\n", reports.back().test_acc, best);
  return 0;
}

}  // namespace

int train_main(int argc, char** argv, const TrainProgram& program) {
  // SIGINT / SIGTERM: the step finishes, the checkpoint is written (--save), exit 128 + signal.
  // First: the runtime's threads, started later, inherit the blocked signals.
  minijax::samples::install_stop_handlers();
  TrainConfig cfg;
  RunOptions run;
  try {
    if (!parse_options(argc, argv, cfg, run)) {
      usage(argv[0]);
      return 0;
    }
  } catch (const minijax::samples::OptionError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    usage(argv[0]);
    return 2;
  }
  try {
    return run_training(program, cfg, run);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace fmnist
