// minijax bench: what config().verify_jaxprs costs — tracing grad of a checkpointed scan and
// lowering it under jit, verification off (release builds' default) and on; one JSON line.
//
// Usage: minijax_bench_verify [--reps R (40)]
// Program: a recurrent scan of 28 steps (h f32[8,64], tanh(name(h @ w, "g") + x_t)), the cell in
// mj::checkpoint with the gates offloaded to pinned_host; loss = sum of the last h.
//   make_jaxpr_grad  mj::make_jaxpr(mj::grad(loss)) (linearize, partial eval, transpose, every
//                    jaxpr they produce verified when on);
//   jit_lower        mj::jit(mj::grad(loss)).lower(...) of a fresh jit (signature cache miss).
// Medians over R calls, off and on interleaved; ratio = on / off.
#include <cstdio>

#include "bench/bench_common.h"
#include "core/config.h"
#include "jit/jit.h"
#include "minijax/minijax.h"

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;

Array loss(const Array& w, const Array& xs) {
  auto cell = [](const Array& h, const Array& w1, const Array& xt) {
    return mj::tanh(mj::checkpoint_name(mj::matmul(h, w1), "g") + xt);
  };
  auto policy = cp::save_and_offload_only_these_names({}, {"g"}, "device", "pinned_host");
  auto body = [&](const Array& h, const Array& xt) {
    return std::pair{mj::checkpoint(cell, {.policy = policy})(h, w, xt), mj::None{}};
  };
  return mj::sum(mj::scan(body, mj::zeros({8, 64}), xs).first);
}

}  // namespace

int main(int argc, char** argv) {
  mjbench::Args args(argc, argv, "usage: minijax_bench_verify [--reps R]");
  const int reps = args.integer("reps", 40);
  args.check();
  mjbench::Environment env;
  try {
    const Array w = mj::ones({64, 64}) * 0.01, xs = mj::ones({28, 8, 64});
    std::vector<double> trace[2], lower[2];
    for (int r = 0; r < reps; ++r)
      for (int v : {0, 1}) {
        mj::config().verify_jaxprs = v == 1;
        auto t0 = mjbench::clock_type::now();
        (void)mj::make_jaxpr(mj::grad(loss))(w, xs);
        trace[v].push_back(mjbench::seconds_since(t0));
        t0 = mjbench::clock_type::now();
        (void)mj::jit(mj::grad(loss), "verify_bench").lower(w, xs);
        lower[v].push_back(mjbench::seconds_since(t0));
      }
    mjbench::Json j;
    j.str("name", "verify").integer("reps", reps);
    const double t_off = mjbench::stats(trace[0]).median, t_on = mjbench::stats(trace[1]).median;
    const double l_off = mjbench::stats(lower[0]).median, l_on = mjbench::stats(lower[1]).median;
    j.num("make_jaxpr_grad_off_ms", t_off * 1e3).num("make_jaxpr_grad_on_ms", t_on * 1e3);
    j.num("make_jaxpr_grad_ratio", t_on / t_off);
    j.num("jit_lower_off_ms", l_off * 1e3).num("jit_lower_on_ms", l_on * 1e3).num("jit_lower_ratio", l_on / l_off);
    env.add_to(j);
    std::printf("%s\n", j.text().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_verify: %s\n", e.what());
    return 1;
  }
  return 0;
}
