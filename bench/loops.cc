// minijax bench: compiled loops — a scan `c = c * x_i + 1` over random xs (per-iteration cost) and a
// fori_loop writing element i of an f32[N] carry with dynamic_update_slice (scaling); one JSON line.
//
// Usage: minijax_bench_loops [--reps R (20)] [--n N (1048576)] [--dus-n D (200000)] [--as-text FILE]
// scan: jit(c, xs -> scan(c * x + 1)), xs f32[N] uniform in [0, 1), timed per call (with
//       mj::block_until_ready) at length N and at length 1; per iteration = (T(N) - T(1)) / (N - 1).
//       Target ≤ 10 ns (XLA's older CPU runtime: about 5 ns; its current one jax#40150).
//       The same scan with ScanOptions::unroll 1, 4 and 16 (scan_unroll: ns per iteration each,
//       measured in one interleaved run; unroll 4 should be no slower than unroll 1).
// dus:  jit(carry -> fori_loop(0, D, carry = dynamic_update_slice(carry, [f32(i)], [i]))), the
//       carry f32[D] donated, at D and D/10. Targets: T(D) ≤ 5 ms, T(D) / T(D/10) ≤ 12 (jax#40101).
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <vector>

#include "bench/bench_common.h"
#include "core/control_flow.h"
#include "core/lax.h"
#include "jit/jit.h"
#include "minijax/minijax.h"

namespace {

namespace lax = mj::lax;

mj::Array scan_unrolled(const mj::Array& c0, const mj::Array& xs, int64_t unroll) {
  auto body = [](const mj::Array& c, const mj::Array& x) {
    return std::pair{lax::add(lax::mul(c, x), lax::scalar(1.0, mj::f32)), mj::None{}};
  };
  return mj::scan(body, c0, xs, {.unroll = unroll}).first;
}

mj::Array scan_fn(const mj::Array& c0, const mj::Array& xs) { return scan_unrolled(c0, xs, 1); }

mj::Array dus_fn(const mj::Array& carry) {
  const int64_t n = carry.shape()[0];
  return mj::fori_loop(0, n, [](const mj::Array& i, const mj::Array& c) {
    mj::Array v = lax::broadcast_in_dim(lax::convert_element_type(i, mj::f32), {1}, {});
    return lax::dynamic_update_slice(c, v, {i});
  }, carry);
}

mj::Array uniform(int64_t n, uint32_t seed) {
  mj::Array a = mj::Array::allocate(mj::ShapedArray{{n}, mj::f32});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  float* p = a.mutable_data<float>();
  for (int64_t i = 0; i < n; ++i) p[i] = u(rng);
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  mjbench::Args args(argc, argv, "usage: minijax_bench_loops [--reps R] [--n N] [--dus-n D] [--as-text FILE]");
  const int reps = args.integer("reps", 20);
  const int64_t n = args.integer("n", 1 << 20), dn = args.integer("dus-n", 200000);
  const std::string as_text = args.string("as-text", "");
  args.check();
  mjbench::Environment env;
  try {
    mjbench::Json j;
    j.str("name", "loops");
    // scan
    auto jscan = mj::jit(scan_fn, "scan_cx1");
    mj::Array c0 = lax::scalar(0.0, mj::f32);
    mj::Array xs_n = uniform(n, 1), xs_1 = uniform(1, 2);
    double c_out = 0;
    auto time_scan = [&](const mj::Array& xs, int r) {
      return mjbench::stats(mjbench::time_calls(2, r, [&] {
        mj::Array c = jscan(c0, xs);
        mj::block_until_ready(c);
        c_out = c.item<double>();
      }));
    };
    auto sn = time_scan(xs_n, reps), s1 = time_scan(xs_1, 50 * reps);
    const double per_iter = (sn.median - s1.median) / double(n - 1);
    j.integer("scan_length", n).stats_ms("scan_T_n", sn).stats_ms("scan_T_1", s1);
    j.num("scan_ns_per_iteration", per_iter * 1e9).num("scan_target_ns", 10);
    j.boolean("scan_target_met", per_iter * 1e9 <= 10).num("scan_result", c_out);
    // unroll 1, 4, 16: `rounds` rounds, each timing one call at length N per factor (interleaved,
    // so drift and other load hit every factor alike); per factor the fastest call at length N
    // (interference only adds time) minus the median at length 1.
    {
      const std::vector<int64_t> factors = {1, 4, 16};
      using Fn = std::function<mj::Array(const mj::Array&, const mj::Array&)>;
      std::vector<mj::Jit<Fn>> fns;
      for (int64_t k : factors)
        fns.push_back(mj::jit(Fn([k](const mj::Array& c, const mj::Array& xs) { return scan_unrolled(c, xs, k); }),
                              "scan_cx1_unroll" + std::to_string(k)));
      std::vector<std::vector<double>> tn(factors.size());
      std::vector<double> t1(factors.size()), results(factors.size());
      auto call = [&](size_t f, const mj::Array& xs) {
        mj::Array c = fns[f](c0, xs);
        mj::block_until_ready(c);
        results[f] = c.item<double>();
      };
      for (size_t f = 0; f < factors.size(); ++f) {
        t1[f] = mjbench::stats(mjbench::time_calls(2, 50 * reps, [&] { call(f, xs_1); })).median;
        call(f, xs_n);  // compile and warm
      }
      const int rounds = std::max(5, 2 * reps);
      for (int round = 0; round < rounds; ++round)
        for (size_t f = 0; f < factors.size(); ++f)
          tn[f].push_back(mjbench::time_calls(0, 1, [&] { call(f, xs_n); })[0]);
      mjbench::Json u;
      std::vector<double> ns(factors.size());
      for (size_t f = 0; f < factors.size(); ++f) {
        ns[f] = (mjbench::stats(tn[f]).min - t1[f]) / double(n - 1) * 1e9;
        u.num(std::to_string(factors[f]), ns[f]);
      }
      j.raw("scan_unroll_ns_per_iteration", u.text()).integer("scan_unroll_rounds", rounds);
      j.num("scan_unroll4_over_unroll1", ns[1] / ns[0]);
      j.boolean("scan_unroll4_no_slower_than_unroll1", ns[1] <= ns[0]);
      j.boolean("scan_unroll_results_equal", results[0] == results[1] && results[0] == results[2]);
    }
    // dynamic_update_slice in a loop
    auto jdus = mj::jit(dus_fn, mj::JitOptions{.name = "dus_loop", .donate_argnums = {0}});
    auto time_dus = [&](int64_t len) {
      mj::Array carry = mj::Array::allocate(mj::ShapedArray{{len}, mj::f32});
      return mjbench::stats(mjbench::time_calls(2, reps, [&] {
        carry = jdus(carry);
        mj::block_until_ready(carry);
      }));
    };
    if (!as_text.empty()) {
      mj::Array carry = mj::Array::allocate(mj::ShapedArray{{dn}, mj::f32});
      std::ofstream(as_text) << jscan.lower(c0, xs_n).compile().as_text() << "\n\n"
                             << jdus.lower(carry).compile().as_text();
    }
    auto dbig = time_dus(dn), dsmall = time_dus(dn / 10);
    j.integer("dus_length", dn).stats_ms("dus_T_n", dbig).stats_ms("dus_T_n_over_10", dsmall);
    j.num("dus_scaling", dbig.median / dsmall.median);
    j.boolean("dus_target_met", dbig.median <= 5e-3 && dbig.median / dsmall.median <= 12);
    j.num("dus_ns_per_iteration", dbig.median / double(dn) * 1e9);
    env.add_to(j);
    std::printf("%s\n", j.text().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_loops: %s\n", e.what());
    return 1;
  }
  return 0;
}
