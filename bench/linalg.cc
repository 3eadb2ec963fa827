// minijax bench: compiled linear algebra against the same LAPACK routines called directly in the
// same run (issue 30, item 6): cholesky (?potrf_) and triangular_solve (?trsm_, reported) of a
// batched f64[64, 128, 128] (the direct baseline splits the batch over the same oneTBB pool, one
// call per matrix) and of one f64[1024, 1024] (one call on one thread in both). Prints one JSON line.
#include <oneapi/tbb/parallel_for.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "core/lapack.h"
#include "minijax/minijax.h"

namespace {

namespace mj = minijax;
namespace la = mj::lax::linalg;

// batch row-major n x n symmetric positive definite matrices: M M^T / n + n I, M in [-1, 1).
std::vector<double> spd(int64_t batch, int64_t n) {
  std::vector<double> m(size_t(batch * n * n)), a(m.size());
  uint64_t s = 0x9e3779b97f4a7c15ULL;
  for (double& v : m) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v = double(s >> 11) / double(1ULL << 53) * 2 - 1;
  }
  mj::Array ma = mj::array(m, {batch, n, n}, mj::f64);
  mj::Array aa = mj::matmul(ma, mj::transpose(ma, {0, 2, 1})) / double(n) + mj::eye(n, mj::f64) * double(n);
  std::memcpy(a.data(), aa.data<double>(), a.size() * sizeof(double));
  return a;
}

// Runs body(i) for i in [0, batch): over the oneTBB pool (one call per element), or inline for one.
void for_each(int64_t batch, const std::function<void(int64_t)>& body) {
  if (batch == 1) return body(0);
  tbb::parallel_for(int64_t(0), batch, [&](int64_t i) { body(i); }, tbb::simple_partitioner());
}

// One case: minijax's compiled function f against direct(out) (which writes what f returns), with a
// check that both give the same bytes.
std::string run_case(const std::string& what, const std::function<mj::Array()>& f,
                     const std::function<void(double*)>& direct, size_t elems, int warmup, int reps,
                     double target, bool& met) {
  std::vector<double> out(elems);
  const mj::Array got = f();
  direct(out.data());
  if (std::memcmp(got.data<double>(), out.data(), elems * sizeof(double)) != 0)
    throw std::runtime_error(what + ": minijax and the direct LAPACK calls differ");
  auto st = mjbench::interleaved({[&] { mj::block_until_ready(f()); }, [&] { direct(out.data()); }}, warmup,
                                 reps);
  const double ratio = st[1].median / st[0].median;
  mjbench::Json j;
  j.stats_ms("minijax", st[0]).stats_ms("lapack_direct", st[1]).num("speed_ratio", ratio);
  if (target > 0) {
    met &= ratio >= target;
    j.num("target_ratio", target).boolean("target_met", ratio >= target);
  }
  return j.text();
}

// cholesky and a left-side lower triangular solve of `batch` matrices of n x n.
void bench_size(mjbench::Json& j, const std::string& key, int64_t batch, int64_t n, int warmup, int reps,
                bool& met) {
  const std::vector<double> a = spd(batch, n);
  const mj::Shape s = batch == 1 ? mj::Shape{n, n} : mj::Shape{batch, n, n};
  const mj::Array x = mj::array(a, s, mj::f64);
  const size_t elems = a.size(), mat = size_t(n * n);
  auto chol = mj::jit([](const mj::Array& m) { return la::cholesky(m, false); });
  // Row-major lower factor = ?potrf_ 'U' on the column-major view, as core/linalg_kernels.cc maps it.
  auto chol_direct = [&](double* out) {
    std::memcpy(out, a.data(), elems * sizeof(double));
    for_each(batch, [&](int64_t i) {
      int info = 0;
      minijax::lapack::potrf<double>('U', int(n), out + size_t(i) * mat, int(n), &info);
      for (int64_t r = 0; r < n; ++r)
        std::memset(out + size_t(i) * mat + size_t(r * n + r + 1), 0, size_t(n - r - 1) * sizeof(double));
    });
  };
  j.raw("cholesky_" + key,
        run_case("cholesky " + key, [&] { return chol(x); }, chol_direct, elems, warmup, reps, 0.95, met));
  const mj::Array l = chol(x);
  auto solve = mj::jit(
      [](const mj::Array& m, const mj::Array& b) { return la::triangular_solve(m, b, true, true); });
  const std::vector<double> lv(l.data<double>(), l.data<double>() + elems);
  auto solve_direct = [&](double* out) {
    std::memcpy(out, a.data(), elems * sizeof(double));
    for_each(batch, [&](int64_t i) {
      minijax::lapack::trsm<double>('R', 'U', 'N', 'N', int(n), int(n), lv.data() + size_t(i) * mat, int(n),
                                    out + size_t(i) * mat, int(n));
    });
  };
  j.raw("triangular_solve_" + key, run_case(
                                       "triangular_solve " + key, [&] { return solve(l, x); }, solve_direct,
                                       elems, warmup, reps, 0, met));
}

}  // namespace

int main(int argc, char** argv) {
  mjbench::Args args(argc, argv, "usage: minijax_bench_linalg [--reps R] [--warmup W]");
  const int reps = args.integer("reps", 10), warmup = args.integer("warmup", 2);
  args.check();
  mjbench::Environment env;
  try {
    bool met = true;
    mjbench::Json j;
    j.str("name", "linalg").str("batched", "f64[64,128,128]").str("single", "f64[1024,1024]");
    bench_size(j, "batched", 64, 128, warmup, reps, met);
    bench_size(j, "single", 1, 1024, warmup, reps, met);
    j.str("targets", "cholesky >= 0.95x the direct LAPACK calls (triangular_solve reported)");
    j.boolean("target_met", met);
    env.add_to(j);
    std::printf("%s\n", j.text().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_linalg: %s\n", e.what());
    return 1;
  }
  return 0;
}
