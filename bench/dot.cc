// minijax bench: jitted dot_general [128,512]x[512,512] in the four transpose combinations and the
// batched [16,128,512]x[16,512,512], each against plain dnnl_sgemm NN of the same size; one JSON line.
//
// Usage: minijax_bench_dot [--reps R (300)] [--warmup W (20)]
// Each case is mj::jit(dot_general) on operands stored as the case says (TN: lhs stored [512,128]
// contracting dim 0; NT: rhs stored [n, k] contracting dim 1), timed per call with
// mj::block_until_ready on the result (a fresh output buffer each call). The reference is
// dnnl_sgemm('N', 'N', 128, 512, 512) with the library's own threads (16 calls for the batched
// case). The references and the cases are timed interleaved, one warm call of each per repetition.
// Target: reference time / minijax time ≥ 0.95 for every case.
#include <oneapi/dnnl/dnnl.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "core/lax.h"
#include "jit/jit.h"
#include "minijax/minijax.h"

namespace {

mj::Array filled(const mj::Shape& shape) {
  mj::Array a = mj::Array::allocate(mj::ShapedArray{shape, mj::f32});
  float* p = a.mutable_data<float>();
  int64_t n = 1;
  for (auto d : shape) n *= d;
  for (int64_t i = 0; i < n; ++i) p[i] = float(i % 13) * 0.01f;
  return a;
}

struct Case {
  const char* name;
  mj::Shape lhs, rhs;
  mj::lax::DotDimensionNumbers dims;
  int64_t batch;
};

}  // namespace

int main(int argc, char** argv) {
  mjbench::Args args(argc, argv, "usage: minijax_bench_dot [--reps R] [--warmup W]");
  const int reps = args.integer("reps", 300), warmup = args.integer("warmup", 20);
  args.check();
  mjbench::Environment env;
  constexpr int64_t M = 128, K = 512, N = 512, B = 16;
  const std::vector<Case> cases = {
      {"NN", {M, K}, {K, N}, {{1}, {0}, {}, {}}, 1},
      {"TN", {K, M}, {K, N}, {{0}, {0}, {}, {}}, 1},
      {"NT", {M, K}, {N, K}, {{1}, {1}, {}, {}}, 1},
      {"TT", {K, M}, {N, K}, {{0}, {1}, {}, {}}, 1},
      {"batched_NN", {B, M, K}, {B, K, N}, {{2}, {1}, {0}, {0}}, B},
  };
  try {
    // Reference: plain dnnl_sgemm NN of one [M,K]x[K,N] product, library threads.
    std::vector<float> a(size_t(B * M * K)), b(size_t(B * K * N)), c(size_t(B * M * N));
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 13) * 0.01f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 7) * 0.01f;
    auto ref = [&](int64_t count) {
      for (int64_t i = 0; i < count; ++i)
        dnnl_sgemm('N', 'N', M, N, K, 1.0f, a.data() + i * M * K, K, b.data() + i * K * N, N, 0.0f,
                   c.data() + i * M * N, N);
    };
    // Every timed function: the two references, then the cases.
    std::vector<std::function<void()>> fns = {[&] { ref(1); }, [&] { ref(B); }};
    std::vector<std::pair<mj::Array, mj::Array>> operands;
    std::vector<std::string> texts;
    for (const Case& cs : cases) operands.emplace_back(filled(cs.lhs), filled(cs.rhs));
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto dims = cases[i].dims;
      auto jf = mj::jit([dims](const mj::Array& x, const mj::Array& y) { return mj::lax::dot_general(x, y, dims); },
                        mj::JitOptions{.name = std::string("dot_") + cases[i].name});
      const auto& [l, r] = operands[i];
      texts.push_back(mjbench::gemms_json(mjbench::program_gemms(jf.lower(l, r).compile().executable()->program)));
      fns.push_back([jf, &l = l, &r = r] { mj::block_until_ready(jf(l, r)); });
    }
    // Interleaved: each repetition times every function once, in turn, so that the slow phases of
    // a shared machine fall on the references and the cases alike; each timed call follows an
    // untimed one of the same function, so that none starts with caches the previous one evicted
    // (the 16 products of the batched reference evict the 32 MiB last-level cache).
    std::vector<std::vector<double>> seconds(fns.size());
    for (int rep = -warmup; rep < reps; ++rep)
      for (size_t f = 0; f < fns.size(); ++f) {
        const double t = mjbench::time_calls(1, 1, fns[f])[0];
        if (rep >= 0) seconds[f].push_back(t);
      }
    auto ref1 = mjbench::stats(seconds[0]), ref16 = mjbench::stats(seconds[1]);
    mjbench::Json j;
    j.str("name", "dot").str("size", "[128,512]x[512,512]");
    j.stats_ms("dnnl_sgemm_NN", ref1).stats_ms("dnnl_sgemm_NN_x16", ref16);
    j.num("dnnl_sgemm_NN_GFLOPs", 2.0 * M * N * K / ref1.median * 1e-9);
    bool all_met = true;
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& cs = cases[i];
      auto st = mjbench::stats(seconds[i + 2]);
      const auto& rs = cs.batch == 1 ? ref1 : ref16;
      const double ratio = rs.median / st.median;
      all_met &= ratio >= 0.95;
      j.stats_ms(cs.name, st).num(std::string(cs.name) + "_ref_over_minijax", ratio);
      j.raw(std::string(cs.name) + "_gemms", texts[i]);
    }
    j.num("target_ratio", 0.95).boolean("target_met", all_met);
    env.add_to(j);
    std::printf("%s\n", j.text().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_dot: %s\n", e.what());
    return 1;
  }
  return 0;
}
