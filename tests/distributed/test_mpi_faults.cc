// Tests of failures in a run of several processes (jit/runtime/mpi_communicator.h): a collective
// timeout, a process whose program throws, processes compiling different programs (each suite
// under its own `mpirun -np 2`: after a failure the run cannot go on), and a killed process.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <minijax/minijax.h>

#include "jit/runtime/communicator.h"

namespace mj = minijax;
using mj::Array;
using mj::P;

namespace {

bool under_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

void join_run(double timeout_s) {
  if (mj::distributed::is_initialized()) return;
  mj::config().collective_timeout_s = timeout_s;
  mj::distributed::initialize(2, std::nullopt, 4);
}

#define REQUIRE_RUN(timeout_s)                                                       \
  do {                                                                               \
    if (!under_mpirun()) GTEST_SKIP() << "run under mpirun -np 2 (ctest -L mpi)";    \
    join_run(timeout_s);                                                             \
    if (::testing::Test::HasFatalFailure()) return;                                  \
  } while (0)

std::shared_ptr<const mj::Mesh> mesh42() {
  return std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, mj::Shape{4, 2},
                                          std::vector<std::string>{"data", "model"});
}

// The message of the error `f` throws as E (fails the test when it throws nothing).
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

mj::CollectiveOp all_reduce4() {
  mj::CollectiveOp op;
  op.kind = mj::CollectiveKind::all_reduce;
  op.shape = {4};
  return op;
}

// Device `device` joins an all_reduce f32[4] over devices 0..7; rethrows its error.
void join_all_reduce(int device) {
  std::vector<float> in(4, 1.0f), out(4, 0.0f);
  mj::CollectiveBuffers b;
  b.send = {{in.data(), 16}};
  b.recv = out.data();
  b.recv_bytes = 16;
  mj::communicator().start(all_reduce4(), device, b, {0, 1, 2, 3, 4, 5, 6, 7}).wait();
}

void join_from_local_devices() {
  std::vector<std::thread> ts;
  std::vector<std::exception_ptr> errs(4);
  for (int k = 0; k < 4; ++k)
    ts.emplace_back([&, k] {
      try {
        join_all_reduce(mj::local_devices()[size_t(k)]);
      } catch (...) {
        errs[size_t(k)] = std::current_exception();
      }
    });
  for (auto& t : ts) t.join();
  for (auto& e : errs)
    if (e) std::rethrow_exception(e);
}

}  // namespace

TEST(MpiFaultTimeout, ACollectiveWhosePeerNeverJoinsFailsAtTheDeadline) {
  REQUIRE_RUN(2);
  if (mj::process_index() == 0) {  // never joins; outlives the peer's deadline
    std::this_thread::sleep_for(std::chrono::seconds(4));
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string m = error_of<mj::DistributedError>([] { join_from_local_devices(); });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(m.find("all_reduce f32[4]"), std::string::npos) << m;
  EXPECT_NE(m.find("process 1 waited"), std::string::npos) << m;
  EXPECT_NE(m.find("process 0 (devices 0..3), which did not join"), std::string::npos) << m;
  EXPECT_NE(m.find("config().collective_timeout_s = 2"), std::string::npos) << m;
  EXPECT_GE(took, 1.9);          // not before the deadline
  EXPECT_LT(took, 2.0 + 10.0);   // nor long after it (a loaded machine: the killed test's margin)
  // The processes no longer agree on what was exchanged: later collectives between them fail.
  const std::string later = error_of<mj::DistributedError>([] { join_from_local_devices(); });
  EXPECT_NE(later.find("an earlier collective between processes failed"), std::string::npos) << later;
}

TEST(MpiFaultPeerError, AProcessWhoseProgramThrowsStopsItsPeers) {
  REQUIRE_RUN(30);
  auto m = mesh42();
  const mj::NamedSharding rows(m, P("data", mj::None{}));
  auto f = mj::jit([](const Array& x) {
    mj::debug::callback(
        [](const Array&) {
          if (mj::process_index() == 1) throw std::runtime_error("the host function failed on process 1");
        },
        x);
    return mj::sum(x, 0);  // an all_reduce over "data", between the processes
  });
  Array x = mj::make_array_from_process_local_data(rows, mj::ones({4, 3}));
  const auto t0 = std::chrono::steady_clock::now();
  // Process 1's call fails with its own error; it tells process 0, whose calls then fail with a
  // DistributedError naming process 1 and the collective, long before the 30 s deadline.
  std::string m1;
  for (int call = 0; call < 2 && m1.empty(); ++call) {
    try {
      mj::block_until_ready(f(x));
    } catch (const std::exception& e) {
      m1 = e.what();
    }
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (mj::process_index() == 1) {
    EXPECT_NE(m1.find("the host function failed on process 1"), std::string::npos) << m1;
  } else {
    EXPECT_NE(m1.find("process 1 failed: "), std::string::npos) << m1;
    EXPECT_NE(m1.find("the host function failed on process 1"), std::string::npos) << m1;
    EXPECT_NE(m1.find("collective "), std::string::npos) << m1;  // the sum's collective, named
    EXPECT_NE(m1.find(" over devices ["), std::string::npos) << m1;
  }
  EXPECT_LT(took, 20.0);
}

TEST(MpiFaultFingerprint, ProcessesCompilingDifferentProgramsBothThrow) {
  REQUIRE_RUN(30);
  auto m = mesh42();
  const mj::NamedSharding rows(m, P("data", mj::None{}));
  auto f = mj::jit([](const Array& x) { return mj::sum(x * x, 0); });
  // Process 1 gives 5 columns, process 0 gives 3: another signature, another program.
  const int64_t cols = mj::process_index() == 1 ? 5 : 3;
  Array x = mj::make_array_from_process_local_data(rows, mj::ones({4, cols}));
  const std::string msg = error_of<mj::DistributedError>([&] { (void)f(x); });
  EXPECT_NE(msg.find("compiled different programs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("process 0: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("process 1: "), std::string::npos) << msg;
}

// Same run, after the fingerprint case (whose exchange itself completed): processes starting
// different collectives on one group both get the in-process backend's kind of error, then a
// collective between processes after shutdown() is refused.
TEST(MpiFaultFingerprint, ProcessesDisagreeingOnACollectiveThenShutdown) {
  REQUIRE_RUN(30);
  const int64_t n = mj::process_index() == 1 ? 6 : 4;
  auto start_from_local_devices = [&] {
    std::vector<std::thread> ts;
    std::vector<std::exception_ptr> errs(4);
    std::vector<std::vector<float>> in(4, std::vector<float>(size_t(n), 1.0f)), out = in;
    mj::CollectiveOp op = all_reduce4();
    op.shape = {n};
    for (int k = 0; k < 4; ++k)
      ts.emplace_back([&, k] {
        try {
          mj::CollectiveBuffers b;
          b.send = {{in[size_t(k)].data(), n * 4}};
          b.recv = out[size_t(k)].data();
          b.recv_bytes = n * 4;
          mj::communicator().start(op, mj::local_devices()[size_t(k)], b, {0, 1, 2, 3, 4, 5, 6, 7}).wait();
        } catch (...) {
          errs[size_t(k)] = std::current_exception();
        }
      });
    for (auto& t : ts) t.join();
    for (auto& e : errs)
      if (e) std::rethrow_exception(e);
  };
  const std::string m = error_of<mj::ValueError>(start_from_local_devices);
  EXPECT_NE(m.find("the participants disagree"), std::string::npos) << m;
  EXPECT_NE(m.find("all_reduce f32[4]"), std::string::npos) << m;
  EXPECT_NE(m.find("all_reduce f32[6]"), std::string::npos) << m;
  mj::distributed::shutdown();
  const std::string after = error_of<mj::DistributedError>(start_from_local_devices);
  EXPECT_NE(after.find("after mj::distributed::shutdown()"), std::string::npos) << after;
}

// Killed: mpirun ends the run itself; the test is the run's exit status, its duration and that no
// process of it is left. MpiKilledChild runs inside that run.
TEST(MpiKilledChild, ProcessOneDiesInACollective) {
  if (!under_mpirun() || !std::getenv("MINIJAX_KILL_TEST")) GTEST_SKIP() << "run by MpiKilled.MpirunEndsTheRun";
  // A deadline past the parent's bound: process 0 ends only if mpirun ends it.
  join_run(60);
  if (mj::process_index() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    raise(SIGKILL);
  }
  join_from_local_devices();  // process 0 waits; mpirun kills it when process 1 dies
}

TEST(MpiKilled, MpirunEndsTheRun) {
  if (under_mpirun()) GTEST_SKIP() << "starts its own mpirun";
  if (!mj::distributed::built_with_mpi()) GTEST_SKIP() << "a build without MPI";
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader "
      "OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 MINIJAX_KILL_TEST=1 "
      "mpirun --oversubscribe -np 2 '" + exe + "' --gtest_filter=MpiKilledChild.* > /dev/null 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::system(cmd.c_str());
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) << "mpirun's status " << rc;
  EXPECT_LT(took, 5.0 + 10.0);  // the bound (a 5 s deadline + 10 s); the child's own is 60 s
  // No process of the run is left (its command line names the child test).
  EXPECT_NE(std::system("pgrep -f 'gtest_filter=MpiKilled[C]hild' > /dev/null"), 0);
}
