// minijax bench: compiled sort of 1M f32 (uniform, and with 1% NaN) against std::sort with JAX's
// comparator, and compiled top_k (k = 10 of [1024, 32768] f32) against std::partial_sort per row,
// on one thread and on two (tbb::global_control), with tbb::parallel_sort / a row-parallel
// partial_sort beside the two-thread figures. Prints one JSON line (issue 29, item 10).
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_sort.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "bench/sort_data.h"
#include "core/lax.h"
#include "minijax/minijax.h"

namespace {

namespace mj = minijax;

// JAX's sort comparator (lax.py _sort_lt_comparator after _canonicalize_float_for_sort): NaNs
// last and equal to each other, -0.0 == +0.0.
bool jax_less(float a, float b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return a < b;
}

// XLA:CPU's top-k order (runtime_topk.cc): the float's bits as a total order, ties by index.
int32_t total_order(float v) {
  int32_t b;
  std::memcpy(&b, &v, 4);
  return b < 0 ? b ^ 0x7fffffff : b;
}

// The sort figures of one data set at `threads` threads: minijax, std::sort (one thread) or
// tbb::parallel_sort (two), each sorting a fresh copy of the data.
std::string sort_case(const std::vector<float>& data, int threads, int warmup, int reps, bool& met) {
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, size_t(threads));
  const int64_t n = int64_t(data.size());
  mj::Array x = mj::array(std::vector<double>(data.begin(), data.end()), {n}, mj::f32);
  auto jf = mj::jit([](const mj::Array& a) { return mj::lax::sort(a); });
  mj::block_until_ready(jf(x));
  std::vector<float> buf(data.size());
  auto mine = [&] { mj::block_until_ready(jf(x)); };
  auto ref = [&] {
    std::memcpy(buf.data(), data.data(), data.size() * 4);
    if (threads == 1) std::sort(buf.begin(), buf.end(), jax_less);
    else tbb::parallel_sort(buf.begin(), buf.end(), jax_less);
  };
  // The results agree (NaNs compared as NaNs).
  ref();
  mj::Array got = jf(x);
  const float* g = got.data<float>();
  for (size_t i = 0; i < buf.size(); ++i)
    if (!(g[i] == buf[i] || (std::isnan(g[i]) && std::isnan(buf[i]))))
      throw std::runtime_error("sort differs from the reference at " + std::to_string(i));
  auto st = mjbench::interleaved({mine, ref}, warmup, reps);
  const double ratio = st[1].median / st[0].median;
  if (threads == 1) met &= ratio >= 1.0;
  mjbench::Json j;
  j.integer("threads", threads).stats_ms("minijax", st[0]);
  j.stats_ms(threads == 1 ? "std_sort" : "tbb_parallel_sort", st[1]).num("speed_ratio", ratio);
  if (threads == 1) j.num("target_ratio", 1.0).boolean("target_met", ratio >= 1.0);
  return j.text();
}

std::string top_k_case(const std::vector<float>& data, int64_t rows, int64_t n, int64_t k, int threads,
                       int warmup, int reps, bool& met) {
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, size_t(threads));
  mj::Array x = mj::array(std::vector<double>(data.begin(), data.end()), {rows, n}, mj::f32);
  auto jf = mj::jit([k](const mj::Array& a) {
    auto [v, i] = mj::lax::top_k(a, k);
    return std::vector<mj::Array>{v, i};
  });
  mj::block_until_ready(jf(x));
  std::vector<float> vals(static_cast<size_t>(rows * k));
  std::vector<int32_t> idx(static_cast<size_t>(rows * k));
  auto row = [&](int64_t r, std::vector<int32_t>& perm) {
    const float* v = data.data() + r * n;
    std::iota(perm.begin(), perm.end(), 0);
    std::partial_sort(perm.begin(), perm.begin() + k, perm.end(), [&](int32_t a, int32_t b) {
      const int32_t ka = total_order(v[a]), kb = total_order(v[b]);
      return ka > kb || (ka == kb && a < b);
    });
    for (int64_t j = 0; j < k; ++j)
      idx[size_t(r * k + j)] = perm[size_t(j)], vals[size_t(r * k + j)] = v[perm[size_t(j)]];
  };
  auto mine = [&] { mj::block_until_ready(jf(x)); };
  auto ref = [&] {
    if (threads == 1) {
      std::vector<int32_t> perm(static_cast<size_t>(n));
      for (int64_t r = 0; r < rows; ++r) row(r, perm);
    } else {
      tbb::parallel_for(int64_t(0), rows, [&](int64_t r) {
        thread_local std::vector<int32_t> perm;
        perm.resize(size_t(n));
        row(r, perm);
      });
    }
  };
  ref();
  auto got = jf(x);
  if (std::memcmp(got[1].data<int32_t>(), idx.data(), idx.size() * 4) != 0)
    throw std::runtime_error("top_k indices differ from the reference");
  auto st = mjbench::interleaved({mine, ref}, warmup, reps);
  const double ratio = st[1].median / st[0].median;
  if (threads == 1) met &= ratio >= 1.0;
  mjbench::Json j;
  j.integer("threads", threads).stats_ms("minijax", st[0]);
  j.stats_ms(threads == 1 ? "std_partial_sort_rows" : "std_partial_sort_rows_tbb", st[1])
      .num("speed_ratio", ratio);
  if (threads == 1) j.num("target_ratio", 1.0).boolean("target_met", ratio >= 1.0);
  return j.text();
}

}  // namespace

int main(int argc, char** argv) {
  mjbench::Args args(argc, argv, "usage: minijax_bench_sort [--reps R] [--warmup W]");
  const int reps = args.integer("reps", 20), warmup = args.integer("warmup", 3);
  args.check();
  mjbench::Environment env;
  try {
    bool met = true;
    mjbench::Json j;
    j.str("name", "sort").str("sort_size", "f32[1048576]").str("top_k_size", "f32[1024,32768], k=10");
    // bench/sort_data.h's data, which bench/peers/libtorch_sort.cpp sorts with torch::sort.
    const std::vector<float> u = sortbench::uniform_floats(1 << 20, false);
    const std::vector<float> un = sortbench::uniform_floats(1 << 20, true);
    for (int t : {1, 2}) {
      const std::string s = std::to_string(t) + "_thread" + (t > 1 ? "s" : "");
      j.raw("sort_uniform_" + s, sort_case(u, t, warmup, reps, met));
      j.raw("sort_nan1pct_" + s, sort_case(un, t, warmup, reps, met));
    }
    const std::vector<float> tk = sortbench::uniform_floats(int64_t(1024) * 32768, false);
    for (int t : {1, 2})
      j.raw("top_k_" + std::to_string(t) + "_thread" + (t > 1 ? "s" : ""),
            top_k_case(tk, 1024, 32768, 10, t, warmup, reps, met));
    j.str("targets",
          "one thread: minijax >= 1.0x std::sort (sort) and >= 1.0x std::partial_sort per row (top_k)");
    j.boolean("target_met", met);
    env.add_to(j);
    std::printf("%s\n", j.text().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_sort: %s\n", e.what());
    return 1;
  }
  return 0;
}
