// minijax bench: the jitted CNN training step (the sample's fmnist::cnn::train_step, batch 128,
// Adam) next to its oneDNN floor measured in the same run, and the eager step; one JSON line.
//
// Usage: minijax_bench_cnn_step [--steps N (200)] [--warmup W (20)] [--eager-steps E (10), 0: skip]
//                               [--floor-reps R (100)] [--random] [--data-dir DIR] [--as-text FILE]
// Timed per step: one call of the jitted step (state donated) and mj::block_until_ready on the new
// state and the loss; 16 batches [128, 28, 28, 1] are assembled before the timed loop and cycled.
// Floor (binding target: step <= 1.3x floor): the median time of one run of oneDNN's primitives on
// the step's shapes, called directly in the order a step runs them (bench/dnnl_floor.h,
// cnn_step_ops: conv1 forward and backward-weights, conv2 forward, backward-data and
// backward-weights, max pooling forward and backward of both pooling layers reading the forward's
// workspace; convolutions with their bias), in the fastest of three layouts measured here, plus the
// median time of dnnl_sgemm (the library's own OpenMP threads) on the GEMMs of the compiled step
// (read off its program: the two dense layers' 6 products). The layouts: plain NHWC data and HWIO
// kernels ("floor_plain_ms"), NHWC data with the kernels in oneDNN's own format (what the compiled
// step passes; "floor_weights_any_ms"), every format oneDNN's (format_tag::any; "floor_any_ms");
// reorders are not timed, so the floor is below what any program reading NHWC data could reach.
// Each primitive's own median is in "floor_ops" (per layout).
// "program" lists the as_text() lines naming the oneDNN forms, loop nests and reorders of the
// compiled step; --as-text writes the whole Compiled::as_text() to FILE.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "bench/bench_common.h"
#include "bench/bench_data.h"
#include "bench/dnnl_floor.h"
#include "jit/jit.h"
#include "samples/fashion_mnist_cnn_lib.h"

namespace {

using mjbench::Json;
namespace cnn = fmnist::cnn;

constexpr int64_t kBatch = 128;
constexpr double kTargetRatio = 1.3;

// 16 batches of the bench data (bench/bench_data.h), assembled before timing.
std::vector<std::pair<mj::Array, mj::Array>> make_batches(bool random, const std::string& dir,
                                                          std::string& source) {
  fmnist::Dataset d = mjbench::bench_dataset(16 * kBatch, random, dir, source);
  std::vector<std::pair<mj::Array, mj::Array>> out;
  for (int64_t b = 0; b < 16; ++b) out.push_back(cnn::make_image_batch(d, {}, b * kBatch, kBatch));
  return out;
}

// Per run: every op of `ops` once, in order; the per-run times in seconds.
std::vector<double> time_ops(const std::vector<mjbench::NamedOp>& ops, int warmup, int reps) {
  return mjbench::time_calls(warmup, reps, [&] {
    for (const auto& o : ops) o.op->run();
  });
}

// [{"name": .., "impl": .., "median_ms": ..}, ...]: each op timed on its own.
std::string ops_json(const std::vector<mjbench::NamedOp>& ops, int warmup, int reps) {
  std::string s = "[";
  for (size_t i = 0; i < ops.size(); ++i) {
    Json o;
    o.str("name", ops[i].name).str("impl", ops[i].op->impl());
    o.num("median_ms",
          mjbench::stats(mjbench::time_calls(warmup, reps, [&] { ops[i].op->run(); })).median * 1e3);
    s += (i ? ", " : "") + o.text();
  }
  return s + "]";
}

// {"conv_general_dilated": 5, ...}: the program's equations of the windowed and convolution
// primitives (top level), by name.
std::string window_equation_counts(const minijax::Jaxpr& program) {
  std::map<std::string, int64_t> n;
  for (const minijax::Eqn& e : program.eqns) {
    const std::string& name = e.primitive->name;
    if (name.find("conv") != std::string::npos || name.find("window") != std::string::npos ||
        name.find("select_and") != std::string::npos)
      ++n[name];
  }
  Json j;
  for (const auto& [k, v] : n) j.integer(k, v);
  return j.text();
}

}  // namespace

int main(int argc, char** argv) {
  mjbench::Args args(
      argc, argv,
      "usage: minijax_bench_cnn_step [--steps N] [--warmup W] [--eager-steps E] [--floor-reps R] "
      "[--random] [--data-dir DIR] [--as-text FILE]");
  const int steps = args.integer("steps", 200), warmup = args.integer("warmup", 20);
  const int eager_steps = args.integer("eager-steps", 10), floor_reps = args.integer("floor-reps", 100);
  const bool random = args.flag("random");
  const std::string dir = args.string("data-dir", ""), as_text = args.string("as-text", "");
  args.check();
  mjbench::Environment env;
  try {
    std::string source;
    auto batches = make_batches(random, dir, source);
    minijax::optim::Adam opt;
    auto step = [&opt](const cnn::TrainState& s, const mj::Array& x, const mj::Array& y) {
      return cnn::train_step(opt, s, x, y);
    };
    auto jstep = mj::jit(step, mj::JitOptions{.name = "cnn_train_step", .donate_argnums = {0}});
    cnn::CNN params = cnn::init_cnn(0);
    cnn::TrainState state{params, opt.init(params)};

    // First call: trace + compile + run.
    auto t0 = mjbench::clock_type::now();
    {
      auto [next, loss] = jstep(state, batches[0].first, batches[0].second);
      mj::block_until_ready(next);
      mj::block_until_ready(loss);
      state = std::move(next);
    }
    const double first_call = mjbench::seconds_since(t0);
    auto compiled = jstep.lower(state, batches[0].first, batches[0].second).compile();
    const auto& exe = *compiled.executable();
    const std::string text = compiled.as_text();
    if (!as_text.empty()) std::ofstream(as_text) << text;
    const auto gemms = mjbench::program_gemms(exe.program);

    // The jitted step.
    size_t bi = 0;
    mj::Array last_loss;
    auto one_step = [&] {
      const auto& [x, y] = batches[bi++ % batches.size()];
      auto [next, loss] = jstep(state, x, y);
      mj::block_until_ready(next);
      mj::block_until_ready(loss);
      state = std::move(next);
      last_loss = loss;
    };
    for (int i = 0; i < warmup; ++i) one_step();
    const double loss_first = last_loss.item<double>();
    const double cpu0 = mjbench::thread_cpu_seconds();
    auto jit_s = mjbench::stats(mjbench::time_calls(0, steps, one_step));
    const double cpu_per_step = (mjbench::thread_cpu_seconds() - cpu0) / steps;
    const double loss_last = last_loss.item<double>();

    // The eager step (same function, op by op).
    std::vector<double> eager_times;
    if (eager_steps > 0) {
      cnn::CNN p2 = cnn::init_cnn(0);  // params' buffers were donated to the jitted step
      cnn::TrainState es{p2, opt.init(p2)};
      eager_times = mjbench::time_calls(1, eager_steps, [&] {
        const auto& [x, y] = batches[bi++ % batches.size()];
        auto [next, loss] = step(es, x, y);
        mj::block_until_ready(next);
        mj::block_until_ready(loss);
        es = std::move(next);
      });
    }

    // The floor, in the same process and environment.
    const auto plain = mjbench::cnn_step_ops(kBatch, mjbench::DnnlLayout::plain);
    const auto weights_any = mjbench::cnn_step_ops(kBatch, mjbench::DnnlLayout::weights_any);
    const auto any = mjbench::cnn_step_ops(kBatch, mjbench::DnnlLayout::any);
    auto prims_s = mjbench::stats(time_ops(plain, 5, floor_reps));
    auto prims_wany_s = mjbench::stats(time_ops(weights_any, 5, floor_reps));
    auto prims_any_s = mjbench::stats(time_ops(any, 5, floor_reps));
    auto gemm_s = mjbench::stats(mjbench::time_gemms(gemms, 10, floor_reps));
    const double floor_plain = prims_s.median + gemm_s.median;
    const double floor_wany = prims_wany_s.median + gemm_s.median,
                 floor_any = prims_any_s.median + gemm_s.median;
    const double floor = std::min({floor_plain, floor_wany, floor_any});
    const char* floor_layout = floor == floor_any ? "format_any" : floor == floor_wany ? "weights_any" : "plain";

    Json j;
    j.str("name", "cnn_step").str("model", "conv5x5x32-pool2-conv5x5x64-pool2-1024-128-10");
    j.integer("batch", kBatch).str("data", source).str("onednn", mjbench::dnnl_version());
    j.integer("steps", steps).integer("warmup", warmup);
    j.stats_ms("jit", jit_s).num("jit_main_thread_cpu_ms_per_step", cpu_per_step * 1e3);
    if (!eager_times.empty()) {
      auto e = mjbench::stats(eager_times);
      j.stats_ms("eager", e).num("eager_over_jit", e.median / jit_s.median);
    }
    j.stats_ms("floor_dnnl_primitives", prims_s).integer("floor_primitive_count", int64_t(plain.size()));
    j.stats_ms("floor_gemm_dnnl", gemm_s).integer("floor_gemm_count", int64_t(gemms.size()));
    j.num("floor_ms", floor * 1e3).str("floor_layout", floor_layout)
        .num("ratio_to_floor", jit_s.median / floor)
        .num("target_ratio", kTargetRatio);
    j.num("floor_plain_ms", floor_plain * 1e3).num("ratio_to_floor_plain", jit_s.median / floor_plain);
    j.boolean("target_met", jit_s.median <= kTargetRatio * floor);
    j.stats_ms("floor_dnnl_primitives_weights_any", prims_wany_s);
    j.num("floor_weights_any_ms", floor_wany * 1e3)
        .num("ratio_to_floor_weights_any", jit_s.median / floor_wany);
    j.stats_ms("floor_dnnl_primitives_format_any", prims_any_s);
    j.num("floor_any_ms", floor_any * 1e3).num("ratio_to_floor_any", jit_s.median / floor_any);
    j.raw("floor_ops", ops_json(plain, 5, floor_reps));
    j.raw("floor_ops_weights_any", ops_json(weights_any, 5, floor_reps));
    j.raw("floor_ops_format_any", ops_json(any, 5, floor_reps));
    j.num("first_call_ms", first_call * 1e3);
    Json ct;
    ct.num("passes", exe.times.passes * 1e3).num("lower", exe.times.lower * 1e3);
    ct.num("translate", exe.times.translate * 1e3).num("optimize", exe.times.optimize * 1e3);
    ct.num("codegen", exe.times.codegen * 1e3).num("load", exe.times.load * 1e3);
    j.raw("compile_ms", ct.text());
    j.num("loss_after_warmup", loss_first).num("loss_last", loss_last);
    j.raw("gemms", mjbench::gemms_json(gemms));
    j.raw("program_equations", window_equation_counts(exe.program));
    j.raw("program", mjbench::lines_containing_json(text, {"oneDNN", "loop nest", "reorder"}));
    env.add_to(j);
    std::printf("%s\n", j.text().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_cnn_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
