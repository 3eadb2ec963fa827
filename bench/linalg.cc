// minijax bench: compiled linear algebra against the same LAPACK routines called directly in the
// same run (issue 30, item 6): cholesky, eigh, svd, qr (targets) and lu, triangular_solve (reported).
//
// Each of a batched f64[64, 128, 128] (the direct baseline splits the batch over the same oneTBB
// pool, one call per matrix, each with a workspace allocated before timing) and of one
// f64[1024, 1024] (one call on one thread in both). The direct baseline is LAPACK alone, on data
// already in its column-major layout: whatever minijax adds (layout changes, copies, dispatch) is
// in the ratio. Before timing, minijax's results are checked against the direct ones (the same
// bits: the same routines on the same numbers). Debian's serial OpenBLAS is not safe to call from
// two threads at once (core/gemm.h, serial_openblas_mutex): minijax's calls take turns on that
// lock, and so do the direct ones (without it they return wrong numbers), so a batch's LAPACK
// calls run one at a time on both sides. Prints one JSON line.
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "core/gemm.h"
#include "core/lapack.h"
#include "minijax/minijax.h"

namespace {

namespace mj = minijax;
namespace la = mj::lax::linalg;
namespace lp = minijax::lapack;
using Mat = std::vector<double>;

// batch row-major n x n symmetric positive definite matrices: M M^T / n + n I, M in [-1, 1).
// (Symmetric: the same numbers in row- and column-major order.)
Mat spd(int64_t batch, int64_t n) {
  Mat m(size_t(batch * n * n)), a(m.size());
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

// Runs body(i) for i in [0, batch): over the oneTBB pool (one call per element), or inline for one;
// each call holds the serial OpenBLAS's lock, as minijax's do.
void for_each(int64_t batch, const std::function<void(int64_t)>& body) {
  auto locked = [&](int64_t i) {
    std::lock_guard<std::mutex> turn(mj::serial_openblas_mutex());
    body(i);
  };
  if (batch == 1) return locked(0);
  tbb::parallel_for(int64_t(0), batch, locked, tbb::simple_partitioner());
}

// The batch's matrices transposed (row-major <-> column-major), n x n each.
Mat transposed(const double* x, int64_t batch, int64_t n) {
  Mat t(size_t(batch * n * n));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) t[size_t(b * n * n + j * n + i)] = x[b * n * n + i * n + j];
  return t;
}

void expect_same(const std::string& what, const double* got, const double* want, size_t elems) {
  if (std::memcmp(got, want, elems * sizeof(double)) != 0)
    throw std::runtime_error(what + ": minijax and the direct LAPACK calls differ");
}

// One case: minijax's compiled call against the direct one, timed interleaved.
std::string run_case(const std::function<void()>& minijax, const std::function<void()>& direct, int warmup,
                     int reps, double target, bool& met) {
  auto st = mjbench::interleaved({minijax, direct}, warmup, reps);
  const double ratio = st[1].median / st[0].median;
  mjbench::Json j;
  j.stats_ms("minijax", st[0]).stats_ms("lapack_direct", st[1]).num("speed_ratio", ratio);
  if (target > 0) {
    met &= ratio >= target;
    j.num("target_ratio", target).boolean("target_met", ratio >= target);
  }
  return j.text();
}

// Per-matrix workspaces of `bytes` for the direct calls, allocated before timing.
struct Workspaces {
  std::vector<Mat> w;
  Workspaces(int64_t batch, size_t doubles) : w(size_t(batch), Mat(std::max<size_t>(doubles, 1))) {}
  double* at(int64_t i) { return w[size_t(i)].data(); }
};

struct Size {
  std::string key;
  int64_t batch, n;
  int warmup, reps;
};

mj::Array input(const Mat& a, const Size& z) {
  return mj::array(a, z.batch == 1 ? mj::Shape{z.n, z.n} : mj::Shape{z.batch, z.n, z.n}, mj::f64);
}

void bench_cholesky_and_solve(mjbench::Json& j, const Size& z, const Mat& a, bool& met) {
  const int64_t n = z.n, mat = n * n;
  const mj::Array x = input(a, z);
  auto chol = mj::jit([](const mj::Array& m) { return la::cholesky(m, false); });
  Mat out(a.size());
  // Row-major lower factor = ?potrf_ 'U' on the column-major view, as core/linalg_kernels.cc maps it.
  auto chol_direct = [&] {
    std::memcpy(out.data(), a.data(), a.size() * sizeof(double));
    for_each(z.batch, [&](int64_t i) {
      int info = 0;
      lp::potrf<double>('U', int(n), out.data() + i * mat, int(n), &info);
      for (int64_t r = 0; r < n; ++r)
        std::memset(out.data() + i * mat + r * n + r + 1, 0, size_t(n - r - 1) * sizeof(double));
    });
  };
  const mj::Array l = chol(x);
  chol_direct();
  expect_same("cholesky " + z.key, l.data<double>(), out.data(), a.size());
  j.raw("cholesky_" + z.key, run_case([&] { mj::block_until_ready(chol(x)); }, chol_direct, z.warmup, z.reps,
                                      0.95, met));
  auto solve = mj::jit([](const mj::Array& m, const mj::Array& b) { return la::triangular_solve(m, b, true, true); });
  const Mat lv(l.data<double>(), l.data<double>() + a.size());
  auto solve_direct = [&] {
    std::memcpy(out.data(), a.data(), a.size() * sizeof(double));
    for_each(z.batch, [&](int64_t i) {
      lp::trsm<double>('R', 'U', 'N', 'N', int(n), int(n), lv.data() + i * mat, int(n), out.data() + i * mat, int(n));
    });
  };
  solve_direct();
  expect_same("triangular_solve " + z.key, solve(l, x).data<double>(), out.data(), a.size());
  j.raw("triangular_solve_" + z.key, run_case([&] { mj::block_until_ready(solve(l, x)); }, solve_direct,
                                              z.warmup, z.reps, 0, met));
}

// eigh: ?syevd_ ('V', 'U') on a copy (the input is symmetric: the same in either layout).
void bench_eigh(mjbench::Json& j, const Size& z, const Mat& a, bool& met) {
  const int64_t n = z.n, mat = n * n;
  double lw = 0;
  int liw = 0, info = 0;
  double dummy = 0;
  lp::syevd<double>('V', 'U', int(n), &dummy, int(n), &dummy, &lw, -1, &liw, -1, &info);
  Workspaces work(z.batch, size_t(lw));
  std::vector<std::vector<int>> iwork(size_t(z.batch), std::vector<int>(size_t(liw)));
  Mat v(a.size()), w(size_t(z.batch * n));
  auto direct = [&] {
    std::memcpy(v.data(), a.data(), a.size() * sizeof(double));
    for_each(z.batch, [&](int64_t i) {
      int inf = 0;
      lp::syevd<double>('V', 'U', int(n), v.data() + i * mat, int(n), w.data() + i * n, work.at(i), int(lw),
                        iwork[size_t(i)].data(), liw, &inf);
    });
  };
  const mj::Array x = input(a, z);
  auto f = mj::jit([](const mj::Array& m) {
    auto [vv, ww] = la::eigh(m, true, false);
    return std::vector<mj::Array>{vv, ww};
  });
  const std::vector<mj::Array> got = f(x);
  direct();
  expect_same("eigh eigenvalues " + z.key, got[1].data<double>(), w.data(), w.size());
  // LAPACK's eigenvectors are columns of its column-major output: minijax's rows of the transpose.
  expect_same("eigh eigenvectors " + z.key, transposed(got[0].data<double>(), z.batch, n).data(), v.data(), v.size());
  j.raw("eigh_" + z.key, run_case([&] { mj::block_until_ready(f(x)); }, direct, z.warmup, z.reps, 0.95, met));
}

// svd (reduced, with vectors): ?gesdd_ ('S') on a copy; the column-major view of the row-major x is
// x^T, whose U and VT are minijax's vh and u in place.
void bench_svd(mjbench::Json& j, const Size& z, const Mat& a, bool& met) {
  const int64_t n = z.n, mat = n * n;
  double lw = 0;
  int info = 0;
  std::vector<int> iw0(size_t(8 * n));
  double dummy = 0;
  lp::gesdd<double>('S', int(n), int(n), &dummy, int(n), &dummy, &dummy, int(n), &dummy, int(n), &lw, -1,
                    iw0.data(), &info);
  Workspaces work(z.batch, size_t(lw) + size_t(mat));
  std::vector<std::vector<int>> iwork(size_t(z.batch), std::vector<int>(size_t(8 * n)));
  Mat s(size_t(z.batch * n)), u(a.size()), vt(a.size());
  auto direct = [&] {
    for_each(z.batch, [&](int64_t i) {
      double* copy = work.at(i) + size_t(lw);
      std::memcpy(copy, a.data() + i * mat, size_t(mat) * sizeof(double));
      int inf = 0;
      lp::gesdd<double>('S', int(n), int(n), copy, int(n), s.data() + i * n, vt.data() + i * mat, int(n),
                        u.data() + i * mat, int(n), work.at(i), int(lw), iwork[size_t(i)].data(), &inf);
    });
  };
  const mj::Array x = input(a, z);
  auto f = mj::jit([](const mj::Array& m) { return la::svd(m, false, true); });
  const std::vector<mj::Array> got = f(x);
  direct();
  expect_same("svd s " + z.key, got[1].data<double>(), s.data(), s.size());
  expect_same("svd u " + z.key, got[0].data<double>(), u.data(), u.size());
  expect_same("svd vh " + z.key, got[2].data<double>(), vt.data(), vt.size());
  j.raw("svd_" + z.key, run_case([&] { mj::block_until_ready(f(x)); }, direct, z.warmup, z.reps, 0.95, met));
}

// qr (full, square): ?geqrf_ then ?orgqr_ on the column-major matrix (prepared before timing).
void bench_qr(mjbench::Json& j, const Size& z, const Mat& a, bool& met) {
  const int64_t n = z.n, mat = n * n;
  double q1 = 0, q2 = 0;
  int info = 0;
  double dummy = 0;
  lp::geqrf<double>(int(n), int(n), &dummy, int(n), &dummy, &q1, -1, &info);
  lp::orgqr<double>(int(n), int(n), int(n), &dummy, int(n), &dummy, &q2, -1, &info);
  const int lw = int(std::max(q1, q2));
  Workspaces work(z.batch, size_t(lw) + size_t(n));
  const Mat col = transposed(a.data(), z.batch, n);  // the same matrices column-major
  Mat q(a.size()), r(a.size());
  auto direct = [&] {
    std::memcpy(q.data(), col.data(), col.size() * sizeof(double));
    for_each(z.batch, [&](int64_t i) {
      double* qi = q.data() + i * mat;
      double* tau = work.at(i) + lw;
      int inf = 0;
      lp::geqrf<double>(int(n), int(n), qi, int(n), tau, work.at(i), lw, &inf);
      for (int64_t c = 0; c < n; ++c)  // R (column-major), its upper triangle
        for (int64_t row = 0; row < n; ++row) r[size_t(i * mat + c * n + row)] = row <= c ? qi[c * n + row] : 0.0;
      lp::orgqr<double>(int(n), int(n), int(n), qi, int(n), tau, work.at(i), lw, &inf);
    });
  };
  const mj::Array x = input(a, z);
  auto f = mj::jit([](const mj::Array& m) {
    auto [qq, rr] = la::qr(m);
    return std::vector<mj::Array>{qq, rr};
  });
  const std::vector<mj::Array> got = f(x);
  direct();
  expect_same("qr q " + z.key, transposed(got[0].data<double>(), z.batch, n).data(), q.data(), q.size());
  expect_same("qr r " + z.key, transposed(got[1].data<double>(), z.batch, n).data(), r.data(), r.size());
  j.raw("qr_" + z.key, run_case([&] { mj::block_until_ready(f(x)); }, direct, z.warmup, z.reps, 0.95, met));
}

// lu: ?getrf_ on the column-major matrix (prepared before timing). Reported.
void bench_lu(mjbench::Json& j, const Size& z, const Mat& a, bool& met) {
  const int64_t n = z.n, mat = n * n;
  const Mat col = transposed(a.data(), z.batch, n);
  Mat f_out(a.size());
  std::vector<int> ipiv(size_t(z.batch * n));
  auto direct = [&] {
    std::memcpy(f_out.data(), col.data(), col.size() * sizeof(double));
    for_each(z.batch, [&](int64_t i) {
      int inf = 0;
      lp::getrf<double>(int(n), int(n), f_out.data() + i * mat, int(n), ipiv.data() + i * n, &inf);
    });
  };
  const mj::Array x = input(a, z);
  auto f = mj::jit([](const mj::Array& m) { return std::get<0>(la::lu(m)); });
  const mj::Array got = f(x);
  direct();
  expect_same("lu " + z.key, transposed(got.data<double>(), z.batch, n).data(), f_out.data(), f_out.size());
  j.raw("lu_" + z.key, run_case([&] { mj::block_until_ready(f(x)); }, direct, z.warmup, z.reps, 0, met));
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
    for (const Size& z : {Size{"batched", 64, 128, warmup, reps}, Size{"single", 1, 1024, warmup, reps}}) {
      const Mat a = spd(z.batch, z.n);
      bench_cholesky_and_solve(j, z, a, met);
      bench_eigh(j, z, a, met);
      bench_svd(j, z, a, met);
      bench_qr(j, z, a, met);
      bench_lu(j, z, a, met);
    }
    j.str("targets", "cholesky, eigh, svd, qr >= 0.95x the direct LAPACK calls (lu, triangular_solve reported)");
    j.boolean("target_met", met);
    env.add_to(j);
    std::printf("%s\n", j.text().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minijax_bench_linalg: %s\n", e.what());
    return 1;
  }
  return 0;
}
