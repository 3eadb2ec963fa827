// minijax samples: trains a GRU (hidden 128) on Fashion-MNIST read as 28 rows of 28 pixels.
// Usage: fashion_mnist_rnn [--epochs N] [--limit N] [--remat POLICY] [--data-dir DIR] [--seed S] ...
//        [--save DIR] [--resume DIR]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "samples/common/idx_reader.h"
#include "samples/common/options.h"
#include "samples/common/progress.h"
#include "samples/common/stop_signals.h"
#include "samples/common/trace_window.h"
#include "samples/fashion_mnist_rnn_lib.h"

namespace {

void usage(const char* prog) {
  std::fprintf(
      stderr,
      "usage: %s [--epochs N (5)] [--limit N (all 60000)] [--remat POLICY (none)]\n"
      "          [--data-dir DIR] [--seed S (0)] [--batch B (128)] [--lr LR (1e-3)]\n"
      "          [--hidden H (128)] [--print-steps] [--no-eval] [--eager] [--memory-report]\n"
      "          [--save DIR] [--resume DIR]\n"
      "          [--trace FILE] [--trace-steps N (5)]\n"
      "POLICY: none | nothing_saveable | dots_saveable | everything_saveable | offload_gates\n"
      "  (the scan body wrapped in mj::checkpoint with that policy; offload_gates keeps the\n"
      "  recurrent gate pre-activations in pinned_host and recomputes the rest)\n"
      "--print-steps prints every step's loss; --no-eval skips the accuracy evaluations;\n"
      "--eager runs each step op by op instead of one compiled step. A compiled run prints the\n"
      "first step's measured device and pinned_host peaks next to memory_analysis()'s.\n"
      "--save DIR writes DIR/checkpoint.safetensors after each epoch (parameters, Adam's state,\n"
      "the data order's key, the epoch); --resume DIR continues from it up to --epochs epochs\n"
      "in all, with the losses of an uninterrupted run.\n"
      "SIGINT or SIGTERM ends the step, writes the checkpoint (--save) and exits with 130 or\n"
      "143; a second one exits at once (the previous checkpoint stays intact).\n"
      "--memory-report: compiles the step under every POLICY, runs one step of each on the\n"
      "first batch, prints the measured and predicted peaks, and exits (no training).\n"
      "--trace FILE writes a profiler trace (Chrome trace-event JSON: ui.perfetto.dev,\n"
      "chrome://tracing) of the first N training steps, the first step's tracing and\n"
      "compilation included (with offload_gates: the copy engine's copies too).\n"
      "Data: --data-dir, else $MINIJAX_FASHION_MNIST, else /usr/share/datasets/fashion-mnist\n"
      "(Debian package dataset-fashion-mnist).\n",
      prog);
}

// --memory-report: one compiled step under every policy on the first batch, as a table.
int print_memory_report(const std::string& dir, const fmnist::rnn::TrainConfig& cfg, int64_t hidden) {
  auto train_set = fmnist::load_split(dir, "train", cfg.batch);
  std::printf("one training step (GRU hidden %lld, batch %lld, seed %u): peak bytes, measured by the "
              "allocator around one call and predicted by memory_analysis()\n",
              (long long)hidden, (long long)train_set.n, cfg.seed);
  std::vector<fmnist::rnn::StepMemory> rows;
  for (const char* name :
       {"none", "nothing_saveable", "dots_saveable", "everything_saveable", "offload_gates"})
    rows.push_back(fmnist::rnn::measure_step_memory(fmnist::rnn::parse_remat(name), train_set,
                                                    cfg.batch, hidden, cfg.seed, cfg.lr));
  std::printf("%s", fmnist::rnn::format_memory_table(rows).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // SIGINT / SIGTERM: the step finishes, the checkpoint is written (--save), exit 128 + signal.
  // First: the runtime's threads, started later, inherit the blocked signals.
  minijax::samples::install_stop_handlers();
  fmnist::rnn::TrainConfig cfg;
  int64_t limit = -1, hidden = 128;
  bool print_steps = false, memory_report = false;
  std::string data_dir, trace_path;
  int64_t trace_steps = minijax::samples::TraceWindow::kDefaultSteps;
  try {
    for (minijax::samples::OptionReader o(argc, argv); o.next();) {
      if (o.is("--epochs")) cfg.epochs = int(o.integer(0, 1 << 30));
      else if (o.is("--limit")) limit = o.integer(1);
      else if (o.is("--data-dir")) data_dir = o.value();
      else if (o.is("--seed")) cfg.seed = uint32_t(o.integer(0, 0xffffffffLL));
      else if (o.is("--batch")) cfg.batch = o.integer(1);
      else if (o.is("--lr")) cfg.lr = o.real(true);
      else if (o.is("--hidden")) hidden = o.integer(1);
      else if (o.is("--remat")) {
        try {
          cfg.remat = fmnist::rnn::parse_remat(o.value());
        } catch (const mj::ValueError& e) {
          throw minijax::samples::OptionError(e.what());
        }
      } else if (o.is("--print-steps")) { o.flag(); print_steps = true; }
      else if (o.is("--no-eval")) { o.flag(); cfg.skip_eval = true; }
      else if (o.is("--eager")) { o.flag(); cfg.eager = true; }
      else if (o.is("--memory-report")) { o.flag(); memory_report = true; }
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
    if (memory_report) return print_memory_report(dir, cfg, hidden);
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
    // On a terminal, a progress line while an epoch runs (nothing extra in a log or a pipe,
    // and none with --print-steps, whose lines it would interleave with).
    minijax::samples::ProgressLine progress(stdout, !print_steps && minijax::samples::is_terminal(stdout));
    cfg.on_epoch_begin = [&progress](int epoch, int64_t steps) { progress.begin(epoch, steps); };
    cfg.on_epoch = [&progress](const fmnist::EpochReport& r) {
      progress.end();
      std::printf("%s\n", fmnist::format_report(r).c_str());
      std::fflush(stdout);
    };
    cfg.on_checkpoint = [&progress](const std::string& line) {
      progress.end();
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
    cfg.on_step_memory = [&progress](const fmnist::rnn::StepMemory& m) {
      progress.end();
      std::printf("first step's memory (allocator, measured around the call; planner):\n%s",
                  fmnist::rnn::format_memory_table({m}).c_str());
      std::fflush(stdout);
    };
    minijax::samples::TraceWindow trace(trace_path, trace_steps);
    cfg.on_step = [&](int64_t step, double loss) {
      if (print_steps) {
        std::printf("step %lld  loss %.9g\n", (long long)step, loss);
        std::fflush(stdout);
      }
      if (trace.recording()) progress.end();  // the trace's "written" line, not over the progress line
      trace.after_step(step);
      progress.step(loss);
    };
    cfg.should_stop = [] { return minijax::samples::stop_signal() != 0; };
    auto reports = fmnist::rnn::train(params, train_set, test_set, cfg);
    if (const int sig = minijax::samples::stop_signal()) {
      progress.end();
      trace.finish();
      return minijax::samples::report_stop(sig, !cfg.save_dir.empty());
    }
    trace.finish();
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
