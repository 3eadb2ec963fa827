// minijax bench: the jitted GRU training step of the scan sample (28 rows of 28 pixels, hidden 128,
// linear head, Adam, batch 128; fmnist::rnn) next to its own GEMM floor; one JSON line.
//
// Usage: minijax_bench_gru_step [--steps N (200)] [--warmup W (10)] [--floor-reps R (100)]
//                               [--random] [--data-dir DIR] [--as-text FILE]
// Timed per step: one call of the jitted step (parameters and Adam state donated, as the sample's
// fmnist::rnn::train compiles it) and mj::block_until_ready on its outputs; 16 batches assembled
// before timing, cycled. Floor: the median time of dnnl_sgemm (library threads) on every GEMM of
// the compiled step, read off its program (the scan body's multiplied by its 28 iterations).
// --as-text writes the compiled step's Compiled::as_text() to FILE.
#include <cstdio>
#include <fstream>
#include <tuple>

#include "autodiff/grad.h"
#include "bench/bench_common.h"
#include "bench/bench_data.h"
#include "jit/jit.h"
#include "samples/fashion_mnist_rnn_lib.h"

int main(int argc, char** argv) {
  mjbench::Args args(argc, argv,
                     "usage: minijax_bench_gru_step [--steps N] [--warmup W] [--floor-reps R] [--random] "
                     "[--data-dir DIR] [--as-text FILE]");
  const int steps = args.integer("steps", 200), warmup = args.integer("warmup", 10);
  const int floor_reps = args.integer("floor-reps", 100);
  const bool random = args.flag("random");
  const std::string dir = args.string("data-dir", ""), as_text = args.string("as-text", "");
  args.check();
  mjbench::Environment env;
  constexpr int64_t kBatch = 128, kHidden = 128;
  try {
    std::string source;
    fmnist::Dataset d = mjbench::bench_dataset(16 * kBatch, random, dir, source);
    std::vector<std::pair<mj::Array, mj::Array>> batches;
    for (int64_t b = 0; b < 16; ++b) batches.push_back(fmnist::rnn::make_row_batch(d, {}, b * kBatch, kBatch));

    // The step exactly as fmnist::rnn::train builds it (no remat).
    namespace rnn = fmnist::rnn;
    minijax::optim::Adam opt;
    auto grad_fn = mj::value_and_grad(
        [](const rnn::GRU& p, const mj::Array& x, const mj::Array& y) { return rnn::loss_fn(p, x, y); });
    using State = minijax::optim::AdamState<rnn::GRU>;
    auto step = [&opt, grad_fn](const rnn::GRU& p, const State& s, const mj::Array& x, const mj::Array& y) {
      auto [loss, grads] = grad_fn(p, x, y);
      auto [np, ns] = opt.update(grads, s, p);
      return std::tuple{np, ns, loss};
    };
    auto jstep = mj::jit(step, mj::JitOptions{.name = "gru_train_step", .donate_argnums = {0, 1}});
    rnn::GRU params = rnn::init_gru(0, kHidden);
    State state = opt.init(params);

    auto t0 = mjbench::clock_type::now();
    size_t bi = 0;
    mj::Array last_loss;
    auto one_step = [&] {
      const auto& [x, y] = batches[bi++ % batches.size()];
      auto [np, ns, loss] = jstep(params, state, x, y);
      mj::block_until_ready(np);
      mj::block_until_ready(ns);
      mj::block_until_ready(loss);
      params = std::move(np);
      state = std::move(ns);
      last_loss = loss;
    };
    one_step();
    const double first_call = mjbench::seconds_since(t0);
    auto compiled = jstep.lower(params, state, batches[0].first, batches[0].second).compile();
    if (!as_text.empty()) std::ofstream(as_text) << compiled.as_text();
    const auto gemms = mjbench::program_gemms(compiled.executable()->program);
    int64_t gemm_calls = 0;
    double gemm_flop = 0;
    for (auto& g : gemms) {
      gemm_calls += g.repeat * g.layout.batch;
      gemm_flop += 2.0 * double(g.repeat * g.layout.batch * g.layout.m * g.layout.n * g.layout.k);
    }

    for (int i = 0; i < warmup; ++i) one_step();
    const double loss_first = last_loss.item<double>();
    auto jit_s = mjbench::stats(mjbench::time_calls(0, steps, one_step));
    const double loss_last = last_loss.item<double>();
    auto gemm_s = mjbench::stats(mjbench::time_gemms(gemms, 5, floor_reps));

    mjbench::Json j;
    j.str("name", "gru_step").str("model", "GRU(28->128) over 28 rows, linear 128->10").integer("batch", kBatch);
    j.str("data", source).integer("steps", steps).integer("warmup", warmup);
    j.stats_ms("jit", jit_s);
    j.stats_ms("floor_gemm_dnnl", gemm_s).integer("floor_gemm_calls", gemm_calls);
    j.num("floor_gemm_gflop", gemm_flop * 1e-9);
    j.num("ratio_to_gemm_floor", jit_s.median / gemm_s.median).num("target_ratio", 3.0);
    j.boolean("target_met", jit_s.median <= 3.0 * gemm_s.median);
    j.num("first_call_ms", first_call * 1e3);
    j.num("loss_after_warmup", loss_first).num("loss_last", loss_last);
    j.raw("gemms", mjbench::gemms_json(gemms));
    env.add_to(j);
    std::printf("%s\n", j.text().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_gru_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
