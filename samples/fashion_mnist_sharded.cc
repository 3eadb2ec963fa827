// minijax samples: the Fashion-MNIST MLP trained on 8 virtual devices, mesh (4, 2) ("data", "model"),
// in one process or several (mpirun), next to the same steps on one device; prints the losses and
// each step's collectives and bytes.
// Usage: [mpirun -np P] fashion_mnist_sharded [--devices-per-process L] [--steps N] [--limit N]
//                              [--batch B] [--hidden H] [--lr LR] [--seed S]
//                              [--data-dir DIR] [--no-single] [--save DIR] [--resume DIR]
//                              [--trace FILE [--trace-steps N]]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include "samples/common/idx_reader.h"
#include "samples/common/options.h"
#include "samples/common/progress.h"
#include "samples/common/stop_signals.h"
#include "samples/common/trace_window.h"
#include "samples/fashion_mnist_sharded_lib.h"

namespace {

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: [mpirun -np P] %s [--devices-per-process L (8 / P)]\n"
               "          [--steps N (20)] [--limit N (all 60000)] [--batch B (128)] [--hidden H (512)]\n"
               "          [--lr LR (0.1)] [--seed S (0)] [--data-dir DIR] [--no-single]\n"
               "          [--save DIR] [--resume DIR]\n"
               "          [--trace FILE] [--trace-steps N (5)]\n"
               "Runs on P x L virtual devices (mesh (P*L/2, 2): batch over 'data', hidden dims over\n"
               "'model'), one compiled step run on every device at once; under mpirun each of the P\n"
               "processes drives L devices and holds only its rows of the data. --no-single skips the\n"
               "single-device comparison run (one process only). --save DIR writes DIR/checkpoint.safetensors (the parameters and the\n"
               "steps taken) after the last step; --resume DIR continues from it up to --steps in all.\n"
               "SIGINT or SIGTERM ends the step, writes the checkpoint (--save) and exits with 130\n"
               "or 143; a second one exits at once (the previous checkpoint stays intact).\n"
               "--trace FILE writes a profiler trace (Chrome\n"
               "trace-event JSON: ui.perfetto.dev, chrome://tracing) of the first N steps: a track\n"
               "per device, the communicator's collectives, the first step's compilation.\n"
               "Data: --data-dir, else $MINIJAX_FASHION_MNIST, else /usr/share/datasets/fashion-mnist\n"
               "(Debian package dataset-fashion-mnist).\n",
               prog);
}

}  // namespace

int main(int argc, char** argv) {
  // SIGINT / SIGTERM: the step finishes, the checkpoint is written (--save), exit 128 + signal.
  // First: the runtime's threads, started later, inherit the blocked signals.
  minijax::samples::install_stop_handlers();
  fmnist::ShardedConfig cfg;
  int64_t limit = -1;
  std::string data_dir, trace_path;
  int64_t trace_steps = minijax::samples::TraceWindow::kDefaultSteps;
  int64_t devices_per_process = 0;
  try {
    for (minijax::samples::OptionReader o(argc, argv); o.next();) {
      if (o.is("--devices-per-process")) devices_per_process = o.integer(1, 1024);
      else if (o.is("--steps")) cfg.steps = o.integer(0);
      else if (o.is("--limit")) limit = o.integer(1);
      else if (o.is("--batch")) cfg.batch = o.integer(1);
      else if (o.is("--hidden")) cfg.hidden = o.integer(1);
      else if (o.is("--seed")) cfg.seed = uint32_t(o.integer(0, 0xffffffffLL));
      else if (o.is("--lr")) cfg.lr = o.real(true);
      else if (o.is("--data-dir")) data_dir = o.value();
      else if (o.is("--no-single")) { o.flag(); cfg.single_device = false; }
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
    // One process, or the processes mpirun started, each with L devices (8 in all by default).
    mj::distributed::initialize();
    const int np = mj::process_count(), me = mj::process_index();
    if (devices_per_process == 0) devices_per_process = std::max(1, 8 / np);
    mj::set_num_devices(int(devices_per_process));
    const int64_t total = np * devices_per_process;
    if (total % 2 != 0 || (np > 1 && devices_per_process % 2 != 0))
      throw mj::ValueError("fashion_mnist_sharded: the mesh (devices / 2, 2) needs an even device count, and an "
                           "even --devices-per-process over several processes (each process's rows of the "
                           "mesh whole); got " + std::to_string(np) + " x " + std::to_string(devices_per_process));
    auto mesh = std::make_shared<const mj::Mesh>(mj::make_mesh({total / 2, 2}, {"data", "model"}));
    const std::string dir = minijax::samples::fashion_mnist_dir(data_dir);
    // The IDX files are gzip streams, read whole; each process keeps only its rows.
    auto full_set = fmnist::load_split(dir, "train", limit);
    cfg.total_examples = full_set.n;
    auto train_set = np > 1 ? fmnist::process_rows(full_set, cfg.batch, me, np) : std::move(full_set);
    full_set = {};
    if (me != 0 && !std::freopen("/dev/null", "w", stdout)) return 1;  // one process reports; errors reach stderr
    std::printf("Fashion-MNIST from %s: %lld training images; MLP 784-%lld-%lld-10, SGD lr %g, "
                "batch %lld, seed %u, %lld steps on %s\n",
                dir.c_str(), (long long)cfg.total_examples, (long long)cfg.hidden, (long long)cfg.hidden,
                cfg.lr, (long long)cfg.batch, cfg.seed, (long long)cfg.steps, mesh->str().c_str());
    if (np > 1) std::printf("%d processes of %lld devices\n", np, (long long)devices_per_process);
    std::fflush(stdout);
    double max_diff = 0;
    std::string last_collectives;
    minijax::samples::TraceWindow trace(trace_path, trace_steps);
    // On a terminal, a progress line (steps, ms/step, running loss) under the step lines while
    // the next step runs; erased before each step's lines, so a log or a pipe sees only those.
    minijax::samples::ProgressLine progress;
    progress.begin(1, cfg.steps);
    cfg.on_step = [&](const fmnist::StepReport& r) {
      progress.end();
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
      trace.after_step(r.step - 1);
      progress.step(r.loss_sharded);
    };
    cfg.on_checkpoint = [&progress](const std::string& line) {
      progress.end();
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
    cfg.should_stop = [] { return minijax::samples::stop_signal() != 0; };
    auto reports = fmnist::train_sharded(train_set, cfg, mesh);
    progress.end();
    trace.finish();
    if (const int sig = minijax::samples::stop_signal()) {
      return minijax::samples::report_stop(sig, !cfg.save_dir.empty());
    }
    if (!reports.empty()) {
      std::printf("loss %.6f -> %.6f", reports.front().loss_sharded, reports.back().loss_sharded);
      if (cfg.single_device && np == 1) std::printf("; largest |sharded - single-device| loss difference %.2e", max_diff);
      std::printf("\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
