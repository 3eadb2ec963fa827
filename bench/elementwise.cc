// minijax bench: a jitted chain of 10 elementwise ops over 16M f32 (one input, donated, so the
// output overwrites it) against a 2-thread memcpy of 64 MiB; the same with transcendentals.
//
// Usage: minijax_bench_elementwise [--reps R (50)] [--warmup W (5)] [--n N (16777216)]
// chain:          add, mul, max, min, sub, abs, neg, select_n (its predicate an lt), clamp, mul —
//                 one fused loop kernel expected; values stay in [-1, 1] when iterated.
// transcendental: abs, neg, exp, log1p, tanh, logistic, sin, cos, sqrt, log1p (reported, no target).
// Timed per call: x = f(x) with x donated, then mj::block_until_ready(x). Floor: the median of a
// 2-thread memcpy of the same bytes (64 MiB for 16M f32) between pre-faulted buffers. Target:
// chain ≤ 1.25 × floor.
#include <cstdio>
#include <fstream>

#include "bench/bench_common.h"
#include "core/lax.h"
#include "jit/jit.h"
#include "minijax/minijax.h"

namespace {

namespace lax = mj::lax;

mj::Array s(double v) { return lax::scalar(v, mj::f32); }

mj::Array chain(const mj::Array& x) {
  mj::Array a = lax::add(x, s(0.75));
  mj::Array b = lax::mul(a, s(0.999));
  mj::Array c = lax::max(b, s(-3.0));
  mj::Array d = lax::min(c, s(3.0));
  mj::Array e = lax::sub(d, s(0.5));
  mj::Array f = lax::abs(e);
  mj::Array g = lax::neg(f);
  mj::Array h = lax::select_n(lax::lt(g, s(-1.0)), {g, f});
  mj::Array i = lax::clamp(s(-2.0), h, s(2.0));
  return lax::mul(i, s(0.5));
}

mj::Array transcendental(const mj::Array& x) {
  mj::Array a = lax::neg(lax::abs(x));
  mj::Array b = lax::exp(a);
  mj::Array c = lax::log1p(b);
  mj::Array d = lax::tanh(c);
  mj::Array e = lax::logistic(d);
  mj::Array f = lax::sin(e);
  mj::Array g = lax::cos(f);
  mj::Array h = lax::sqrt(g);
  return lax::log1p(h);
}

// Median seconds of x = jf(x) (x donated) over reps calls.
template <class J>
mjbench::Stats time_donated(const J& jf, mj::Array& x, int warmup, int reps) {
  return mjbench::stats(mjbench::time_calls(warmup, reps, [&] {
    mj::Array y = jf(x);
    mj::block_until_ready(y);
    x = y;
  }));
}

}  // namespace

int main(int argc, char** argv) {
  mjbench::Args args(argc, argv, "usage: minijax_bench_elementwise [--reps R] [--warmup W] [--n N] [--as-text FILE]");
  const int reps = args.integer("reps", 50), warmup = args.integer("warmup", 5);
  const int64_t n = args.integer("n", 16 << 20);
  const std::string as_text = args.string("as-text", "");
  args.check();
  mjbench::Environment env;
  try {
    mj::Array x = mj::Array::allocate(mj::ShapedArray{{n}, mj::f32});
    float* p = x.mutable_data<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = float(i % 1000) * 0.002f - 1.0f;
    auto jchain = mj::jit([](const mj::Array& v) { return chain(v); },
                          mj::JitOptions{.name = "chain10", .donate_argnums = {0}});
    auto jtrans = mj::jit([](const mj::Array& v) { return transcendental(v); },
                          mj::JitOptions{.name = "transcendental10", .donate_argnums = {0}});
    if (!as_text.empty())
      std::ofstream(as_text) << jchain.lower(x).compile().as_text() << "\n\n" << jtrans.lower(x).compile().as_text();
    auto kernels = [&](const auto& jf) {
      auto c = jf.lower(x).compile();
      int64_t k = 0;
      for (const auto& e : c.executable()->program.eqns) k += e.primitive->name == "fusion";
      return k;
    };
    const int64_t chain_fusions = kernels(jchain), trans_fusions = kernels(jtrans);
    auto chain_s = time_donated(jchain, x, warmup, reps);
    auto trans_s = time_donated(jtrans, x, warmup, reps);
    auto copy_s = mjbench::stats(mjbench::time_memcpy_2threads(size_t(n) * 4, warmup, reps));

    mjbench::Json j;
    j.str("name", "elementwise").integer("elements", n).integer("bytes", n * 4);
    j.stats_ms("chain10", chain_s).integer("chain10_fusions", chain_fusions);
    j.stats_ms("transcendental10", trans_s).integer("transcendental10_fusions", trans_fusions);
    j.stats_ms("floor_memcpy_2threads", copy_s);
    j.num("chain10_ratio_to_memcpy", chain_s.median / copy_s.median).num("target_ratio", 1.25);
    j.boolean("target_met", chain_s.median <= 1.25 * copy_s.median);
    j.num("transcendental10_ratio_to_memcpy", trans_s.median / copy_s.median);
    j.num("chain10_GBps", 2.0 * double(n) * 4 / chain_s.median * 1e-9);
    j.num("memcpy_GBps", 2.0 * double(n) * 4 / copy_s.median * 1e-9);
    j.num("transcendental10_ns_per_element", trans_s.median / double(n) * 1e9);
    j.num("checksum", double(x.data<float>()[12345]));
    env.add_to(j);
    std::printf("%s\n", j.text().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_elementwise: %s\n", e.what());
    return 1;
  }
  return 0;
}
