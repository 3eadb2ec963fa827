// minijax bench peer: libtorch's torch::sort and torch::topk on bench/sort's data (1M f32 uniform,
// the same with 1% NaN; top-k with k = 10 of [1024, 32768] f32), on one thread and on two; one JSON line.
//
// The data is bench/sort_data.h's, as bench/sort.cc sorts it with minijax (splitmix64, seed 0:
// uniform floats in [0, 1); in the NaN set every element whose draw is 0 mod 100 is a quiet NaN). torch::sort always returns the permutation too
// (values and int64 indices), and puts NaNs last in ascending order, as JAX's comparator does;
// torch::topk returns values and indices, largest first. Each figure is the median of `reps`
// calls, each on the same input (torch allocates fresh outputs), after 3 untimed calls.
// Build (bench/run_all.sh does): g++ -std=c++17 -O2 libtorch_sort.cpp
//   -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10 -lz -o libtorch_sort
// Usage: libtorch_sort [reps (20)]
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../sort_data.h"
#include "peer_common.h"

namespace {

template <class F>
double median_ms(int reps, F&& f) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return 1e3 * (t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]));
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const std::string load_before = peer::loadavg();
  const int64_t n = 1 << 20, rows = 1024, cols = 32768, k = 10;
  std::vector<float> uniform = sortbench::uniform_floats(n, false), with_nan = sortbench::uniform_floats(n, true),
                     rows_data = sortbench::uniform_floats(rows * cols, false);
  auto tensor = [](std::vector<float>& v, std::vector<int64_t> shape) {
    return torch::from_blob(v.data(), shape, torch::kFloat32);
  };
  const torch::Tensor xu = tensor(uniform, {n}), xn = tensor(with_nan, {n}), xr = tensor(rows_data, {rows, cols});
  // Checks that the outputs are what the figures claim: sorted, NaNs last, top-k largest first.
  auto sorted_u = std::get<0>(torch::sort(xu));
  auto sorted_n = std::get<0>(torch::sort(xn));
  const int64_t nans = torch::isnan(xn).sum().item<int64_t>();
  const bool ok = torch::equal(sorted_u, std::get<0>(torch::sort(xu, /*stable=*/true, 0, false))) &&
                  torch::isnan(sorted_n.slice(0, n - nans, n)).all().item<bool>() &&
                  !torch::isnan(sorted_n.slice(0, 0, n - nans)).any().item<bool>() &&
                  torch::equal(std::get<0>(torch::topk(xr, k, -1)).select(1, 0), std::get<0>(xr.max(1)));
  std::string figures;
  for (int threads : {1, 2}) {
    torch::set_num_threads(threads);
    const double su = median_ms(reps, [&] { auto r = torch::sort(xu); });
    const double sn = median_ms(reps, [&] { auto r = torch::sort(xn); });
    const double tk = median_ms(reps, [&] { auto r = torch::topk(xr, k, -1); });
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%s{\"threads\": %d, \"sort_uniform_ms\": %.4f, \"sort_nan_ms\": %.4f, \"top_k_ms\": %.4f}",
                  figures.empty() ? "" : ", ", torch::get_num_threads(), su, sn, tk);
    figures += buf;
  }
  std::printf(
      "{\"name\": \"libtorch_sort\", \"torch\": \"%s\", \"sort_n\": %lld, \"nan_count\": %lld, "
      "\"top_k_shape\": [%lld, %lld], \"k\": %lld, \"reps\": %d, \"outputs_checked\": %s, "
      "\"note\": \"torch::sort returns values and int64 indices; torch::topk values and indices\", "
      "\"figures\": [%s], \"env\": %s}\n",
      TORCH_VERSION, (long long)n, (long long)nans, (long long)rows, (long long)cols, (long long)k, reps,
      ok ? "true" : "false", figures.c_str(), peer::env_json(load_before).c_str());
  return ok ? 0 : 1;
}
