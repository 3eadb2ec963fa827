// Tests of compiled programs over devices of several processes (CTest: minijax_mpi_jit, `mpirun
// -np 2`, 4 devices each): global Arrays from process-local data, their shards, a sharded grad and
// reshards, each against the eager value of the whole data computed in every process.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include <minijax/minijax.h>

#include "jit/runtime/communicator.h"

namespace mj = minijax;
using mj::Array;
using mj::None;
using mj::P;

namespace {

bool under_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

void join_run() {
  if (mj::distributed::is_initialized()) return;
  const int p = std::atoi(std::getenv("OMPI_COMM_WORLD_SIZE"));
  ASSERT_EQ(8 % p, 0);
  mj::config().collective_timeout_s = 60;
  mj::distributed::initialize(std::nullopt, std::nullopt, 8 / p);
}

#define REQUIRE_RUN()                                                       \
  do {                                                                      \
    if (!under_mpirun()) GTEST_SKIP() << "run under mpirun (ctest -L mpi)"; \
    join_run();                                                             \
    if (::testing::Test::HasFatalFailure()) return;                         \
  } while (0)

// (4, 2) mesh ("data", "model") of devices 0..7: with 2 processes, "data" 0-1 on process 0.
std::shared_ptr<const mj::Mesh> mesh42() {
  return std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, mj::Shape{4, 2},
                                          std::vector<std::string>{"data", "model"});
}

// The same (4, 2) mesh with the devices interleaved over the processes.
std::shared_ptr<const mj::Mesh> mesh42_permuted() {
  return std::make_shared<const mj::Mesh>(std::vector<int>{7, 0, 5, 2, 3, 6, 1, 4}, mj::Shape{4, 2},
                                          std::vector<std::string>{"data", "model"});
}

// Values every process can compute whole: (i * 37 + 11) % 101 / 50 - 1.
Array data_of(const mj::Shape& shape, int salt = 0) {
  std::vector<float> v(size_t(mj::shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(int((i * 37 + 11 + size_t(salt) * 7) % 101)) / 50.0f - 1.0f;
  return mj::array(v, shape);
}

void expect_close(const Array& got, const Array& want, const std::string& what, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const float* g = got.data<float>();
  const float* w = want.data<float>();
  for (int64_t i = 0; i < want.size(); ++i) ASSERT_NEAR(g[i], w[i], tol + 1e-4 * std::fabs(w[i])) << what << " at " << i;
}

void expect_equal(const Array& got, const Array& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  for (int64_t i = 0; i < want.size(); ++i) ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << what << " at " << i;
}

// This process's rows of `whole` when rows are split evenly over the processes.
Array my_rows(const Array& whole) {
  const int64_t n = whole.shape()[0] / mj::process_count(), lo = n * mj::process_index();
  return mj::lax::slice(whole, {lo, 0}, {lo + n, whole.shape()[1]});
}

}  // namespace

TEST(MpiJit, DevicesHaveGlobalIdsAndProcesses) {
  REQUIRE_RUN();
  const int np = mj::process_count(), me = mj::process_index(), l = 8 / np;
  EXPECT_EQ(mj::devices().size(), 8u);
  std::vector<int> want;
  for (int i = 0; i < l; ++i) want.push_back(me * l + i);
  EXPECT_EQ(mj::local_devices(), want);
  for (int d = 0; d < 8; ++d) EXPECT_EQ(mj::device(d).process_index, d / l) << d;
}

TEST(MpiJit, ProcessLocalRowsMakeOneGlobalArray) {
  REQUIRE_RUN();
  auto m = mesh42();
  const Array whole = data_of({8, 6});
  const mj::NamedSharding rows(m, P("data", None{}));
  Array x = mj::make_array_from_process_local_data(rows, my_rows(whole));
  EXPECT_EQ(x.shape(), (mj::Shape{8, 6}));
  EXPECT_EQ(x.is_fully_addressable(), mj::process_count() == 1);
  // Each local device's shard is its box of the whole array (rows 2 per "data" index).
  for (const mj::Shard& s : x.addressable_shards()) {
    EXPECT_EQ(mj::device(s.device).process_index, mj::process_index());
    Array want = mj::lax::slice(whole, {s.index[0].first, 0}, {s.index[0].second, 6});
    expect_equal(s.data, want, "shard of device " + std::to_string(s.device));
  }
  EXPECT_EQ(x.addressable_shards().size(), size_t(8 / mj::process_count()));
  if (mj::process_count() > 1) {
    try {
      (void)x.data<float>();
      ADD_FAILURE() << "reading an array spanning processes did not throw";
    } catch (const mj::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("mj::multihost_utils::process_allgather"), std::string::npos) << e.what();
    }
  }
  expect_equal(mj::multihost_utils::process_allgather(x), whole, "process_allgather");
}

TEST(MpiJit, ACompiledFunctionOfRowsSpanningProcesses) {
  REQUIRE_RUN();
  auto m = mesh42();
  const Array whole = data_of({8, 6}), w = data_of({6, 4}, 1);
  const mj::NamedSharding rows(m, P("data", None{})), cols(m, P(None{}, "model"));
  Array x = mj::make_array_from_process_local_data(rows, my_rows(whole));
  Array wd = mj::device_put(w, cols);  // every process gives the same value
  auto f = mj::jit([](const Array& a, const Array& b) { return mj::sum(mj::tanh(mj::matmul(a, b)), 0); });
  mj::reset_collective_stats();
  Array y = f(x, wd);  // the sum over rows crosses processes (an all_reduce over "data")
  mj::block_until_ready(y);
  // The sum over "data" is a collective between processes: something beyond the 512-byte
  // header of each message went over MPI.
  for (int q = 0; q < mj::process_count(); ++q)
    if (q != mj::process_index()) EXPECT_GT(mj::collective_process_stats(q).bytes_received, 512) << q;
  const Array want = mj::sum(mj::tanh(mj::matmul(whole, w)), 0);
  expect_close(mj::multihost_utils::process_allgather(y), want, "sum(tanh(x @ w), 0)");
}

TEST(MpiJit, GradOfAShardedMlpEqualsTheEagerGradient) {
  REQUIRE_RUN();
  auto m = mesh42();
  struct Params {
    Array w1, w2;
  };
  const Array x = data_of({8, 12}), y = data_of({8, 3}, 2), w1 = data_of({12, 6}, 3), w2 = data_of({6, 3}, 4);
  auto loss = [](const Array& a, const Array& b, const Array& xs, const Array& ys) {
    Array h = mj::tanh(mj::matmul(xs, a));
    Array d = mj::matmul(h, b) - ys;
    return mj::mean(d * d);
  };
  auto g = mj::grad(loss, mj::argnums<0, 1>);
  const mj::NamedSharding batch(m, P("data", None{})), col(m, P(None{}, "model")), row(m, P("model", None{}));
  auto step = mj::jit(g, mj::JitOptions::builder().in_shardings({col, row, batch, batch}).build());
  auto got = step(mj::device_put(w1, col), mj::device_put(w2, row),
                  mj::make_array_from_process_local_data(batch, my_rows(x)),
                  mj::make_array_from_process_local_data(batch, my_rows(y)));
  auto want = g(w1, w2, x, y);
  expect_close(mj::multihost_utils::process_allgather(std::get<0>(got)), std::get<0>(want), "dw1");
  expect_close(mj::multihost_utils::process_allgather(std::get<1>(got)), std::get<1>(want), "dw2");
}

TEST(MpiJit, ReshardsBetweenProcessesOnBothMeshOrders) {
  REQUIRE_RUN();
  const Array whole = data_of({8, 16});
  for (auto m : {mesh42(), mesh42_permuted()}) {
    SCOPED_TRACE(m->str());
    const std::vector<P> specs = {P("data", None{}), P(None{}, "data"), P("model", "data"), P(), P({"data", "model"})};
    for (const P& from : specs)
      for (const P& to : specs) {
        const mj::NamedSharding a(m, from), b(m, to);
        Array x = mj::make_array_from_callback({8, 16}, a, [&](const mj::ShardIndex& ix) {
          return mj::lax::slice(whole, {ix[0].first, ix[1].first}, {ix[0].second, ix[1].second});
        });
        auto move = mj::jit([b](const Array& v) { return mj::with_sharding_constraint(v, b); },
                            mj::JitOptions::builder().out_shardings({b}).build());
        Array y = move(x);
        EXPECT_TRUE(y.sharding().spec().equivalent(to)) << from.str() << " -> " << to.str();
        expect_equal(mj::multihost_utils::process_allgather(y), whole, from.str() + " -> " + to.str());
      }
  }
}

TEST(MpiJit, ProcessAllgatherOfHostLocalValues) {
  REQUIRE_RUN();
  const int np = mj::process_count(), me = mj::process_index();
  Array mine = mj::full({2, 3}, float(me + 1));
  Array stacked = mj::multihost_utils::process_allgather(mine);
  ASSERT_EQ(stacked.shape(), (mj::Shape{np, 2, 3}));
  for (int p = 0; p < np; ++p)
    for (int i = 0; i < 6; ++i) EXPECT_EQ(stacked.data<float>()[p * 6 + i], float(p + 1));
  Array tiled = mj::multihost_utils::process_allgather(mine, true);
  ASSERT_EQ(tiled.shape(), (mj::Shape{2 * np, 3}));
  for (int p = 0; p < np; ++p)
    for (int i = 0; i < 6; ++i) EXPECT_EQ(tiled.data<float>()[p * 6 + i], float(p + 1)) << p << " " << i;
}

namespace {

// Every spec of a rank-2 array on a (4, 2) mesh ("x", "y"): each axis unused or on one dim, both
// axes on one dim in either order (11 specs, as tests/sharding/test_compiled_spmd.cc's set).
std::vector<P> rank2_specs() {
  std::vector<P> out;
  for (int ax0 = 0; ax0 < 3; ++ax0)
    for (int ax1 = 0; ax1 < 3; ++ax1) {
      std::vector<std::vector<std::string>> dims(2);
      if (ax0 > 0) dims[size_t(ax0 - 1)].push_back("x");
      if (ax1 > 0) dims[size_t(ax1 - 1)].push_back("y");
      for (int flip = 0; flip < (ax0 == ax1 && ax0 > 0 ? 2 : 1); ++flip) {
        auto d = dims;
        if (flip) std::swap(d[size_t(ax0 - 1)][0], d[size_t(ax0 - 1)][1]);
        out.push_back(P(mj::PDim(d[0]), mj::PDim(d[1])));
      }
    }
  return out;
}

}  // namespace

// The exhaustive rank-2 set over processes: f32[8, 16] and f32[8, 24] on a (4, 2) mesh split over
// the processes, natural and interleaved device order, the 121 pairs of the 11 specs each (484
// reshards), each compiled (x * 2 with in and out shardings). Every shard this process holds is
// the slice of the whole eager result; what each process sent the other over MPI (as handed to
// MPI_Isend) is what the other received (as MPI_Get_count reported it).
TEST(MpiJit, EveryRank2ReshardAcrossProcesses) {
  REQUIRE_RUN();
  const std::vector<P> specs = rank2_specs();
  ASSERT_EQ(specs.size(), 11u);
  const std::vector<int> natural = {0, 1, 2, 3, 4, 5, 6, 7}, permuted = {7, 0, 5, 2, 3, 6, 1, 4};
  mj::reset_collective_stats();
  int reshards = 0;
  for (const mj::Shape& shape : {mj::Shape{8, 16}, mj::Shape{8, 24}})
    for (const auto& ids : {natural, permuted}) {
      auto m = std::make_shared<const mj::Mesh>(ids, mj::Shape{4, 2}, std::vector<std::string>{"x", "y"});
      const Array whole = data_of(shape, int(shape[1])), want = whole * 2.0f;
      for (const P& from : specs)
        for (const P& to : specs) {
          const std::string what = mj::shape_str(shape) + " on " + m->str() + ": " + from.str() + " -> " + to.str();
          const mj::NamedSharding a(m, from), b(m, to);
          Array x = mj::make_array_from_callback(shape, a, [&](const mj::ShardIndex& ix) {
            return mj::lax::slice(whole, {ix[0].first, ix[1].first}, {ix[0].second, ix[1].second});
          });
          auto f = mj::jit([](const Array& v) { return v * 2.0f; },
                           mj::JitOptions::builder().name("reshard").in_shardings({a}).out_shardings({b}).build());
          Array y = f(x);
          ++reshards;
          ASSERT_TRUE(y.sharding().spec().equivalent(to)) << what;
          for (const mj::Shard& s : y.addressable_shards()) {
            ASSERT_EQ(mj::device(s.device).process_index, mj::process_index()) << what;
            const Array part =
                mj::lax::slice(want, {s.index[0].first, s.index[1].first}, {s.index[0].second, s.index[1].second});
            ASSERT_EQ(s.data.shape(), part.shape()) << what;
            for (int64_t i = 0; i < part.size(); ++i)
              ASSERT_EQ(s.data.data<float>()[i], part.data<float>()[i]) << what << " device " << s.device;
          }
        }
    }
  EXPECT_EQ(reshards, 484);
  // What each process sent the other is what the other received (MPI_Get_count there).
  const int me = mj::process_index(), np = mj::process_count();
  std::vector<float> mine;
  for (int q = 0; q < np; ++q) {
    mine.push_back(float(mj::collective_process_stats(q).bytes_sent));
    mine.push_back(float(mj::collective_process_stats(q).bytes_received));
  }
  Array all = mj::multihost_utils::process_allgather(mj::array(mine, {np, 2}));
  for (int p = 0; p < np; ++p)
    for (int q = 0; q < np; ++q)
      if (p != q) {
        const float sent_p_to_q = all.data<float>()[(p * np + q) * 2], recv_q_from_p = all.data<float>()[(q * np + p) * 2 + 1];
        EXPECT_GT(sent_p_to_q, 0) << p << " -> " << q;
        if (p != me && q != me) continue;
        EXPECT_EQ(sent_p_to_q, recv_q_from_p) << p << " -> " << q;
      }
}
