// Tests of mj::distributed's process discovery (core/distributed.h): one process without a
// launcher, the refusals, and two processes under `mpirun -np 2` (the CTest test minijax_mpi_initialize).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "core/config.h"
#include "core/device.h"
#include "core/distributed.h"
#include "core/errors.h"
#include "jit/runtime/mpi_world.h"
#include "sharding/mesh.h"

namespace mj = minijax;

namespace {

constexpr const char* kChildEnv = "MINIJAX_DISTRIBUTED_CHILD";
constexpr const char* kThisFile = "test_initialize.cc";

// initialize() is once per process, so each scenario runs as a test of its own in a child process
// (DistributedChild.<name>, skipped unless kChildEnv is set), without a launcher's variables.
void expect_child_passes(const std::string& name) {
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string log = ::testing::TempDir() + "mj_distributed_" + name + "_" + std::to_string(::getpid()) +
                          ".log";
  const std::string cmd = "env -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_RANK -u PMI_SIZE -u PMI_RANK " +
                          std::string(kChildEnv) + "=1 '" + exe + "' --gtest_filter=DistributedChild." +
                          name + " > '" + log + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::string out;
  if (FILE* f = std::fopen(log.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    std::fclose(f);
  }
  std::filesystem::remove(log);
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << name << ": status " << rc << "\n" << out;
  EXPECT_NE(out.find("[  PASSED  ] 1 test"), std::string::npos) << name << " did not run:\n" << out;
}

bool in_child() { return std::getenv(kChildEnv) != nullptr; }

// The message of the DistributedError (or ValueError) `f` throws; fails the test if none.
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

}  // namespace

TEST(DistributedChild, OneProcessWithoutALauncher) {
  if (!in_child()) GTEST_SKIP() << "run by Distributed.OneProcessWithoutALauncher";
  EXPECT_EQ(mj::process_count(), 1);
  EXPECT_FALSE(mj::distributed::is_initialized());
  mj::distributed::initialize();
  EXPECT_TRUE(mj::distributed::is_initialized());
  EXPECT_EQ(mj::process_count(), 1);
  EXPECT_EQ(mj::process_index(), 0);
  EXPECT_EQ(mj::distributed::mpi_thread_level(), "none");
  EXPECT_EQ(mj::devices().size(), 8u);  // tests/main.cc's config().num_cpu_devices
  mj::distributed::shutdown();
  mj::distributed::shutdown();  // a second shutdown does nothing
  EXPECT_FALSE(mj::distributed::is_initialized());
  // One process never initialises MPI, in a build with MPI too: MPI_Initialized and
  // MPI_Finalized (the library's own calls of them) still report false.
  EXPECT_FALSE(mj::mpi_world::initialized());
  EXPECT_FALSE(mj::mpi_world::finalized());
  std::cout << "built with MPI: " << (mj::distributed::built_with_mpi() ? "yes" : "no") << "\n";
}
TEST(Distributed, OneProcessWithoutALauncher) { expect_child_passes("OneProcessWithoutALauncher"); }

TEST(DistributedChild, ExplicitArgumentsOfOneProcess) {
  if (!in_child()) GTEST_SKIP() << "run by Distributed.ExplicitArgumentsOfOneProcess";
  mj::distributed::initialize(1, 0, 4);
  EXPECT_EQ(mj::process_count(), 1);
  EXPECT_EQ(mj::devices().size(), 4u);  // local_device_count
  EXPECT_FALSE(mj::mpi_world::initialized());
}
TEST(Distributed, ExplicitArgumentsOfOneProcess) { expect_child_passes("ExplicitArgumentsOfOneProcess"); }

TEST(DistributedChild, MoreProcessesWithoutALauncherAreRefused) {
  if (!in_child()) GTEST_SKIP() << "run by Distributed.MoreProcessesWithoutALauncherAreRefused";
  const std::string m = error_of<mj::DistributedError>([] { mj::distributed::initialize(2); });
  EXPECT_NE(m.find("start the program with `mpirun -np 2 <program>`"), std::string::npos) << m;
  EXPECT_NE(m.find(kThisFile), std::string::npos) << m;  // the user's line
  const std::string p = error_of<mj::DistributedError>([] { mj::distributed::initialize(std::nullopt, 1); });
  EXPECT_NE(p.find("process_id = 1 but this process runs alone"), std::string::npos) << p;
  EXPECT_FALSE(mj::distributed::is_initialized());
  EXPECT_FALSE(mj::mpi_world::initialized());
  mj::distributed::initialize();  // nothing was left half-done
  EXPECT_EQ(mj::process_count(), 1);
}
TEST(Distributed, MoreProcessesWithoutALauncherAreRefused) {
  expect_child_passes("MoreProcessesWithoutALauncherAreRefused");
}

TEST(DistributedChild, TwiceAndAfterShutdownAreErrors) {
  if (!in_child()) GTEST_SKIP() << "run by Distributed.TwiceAndAfterShutdownAreErrors";
  mj::distributed::initialize();
  const int first_line = __LINE__ - 1;
  const std::string m = error_of<mj::DistributedError>([] { mj::distributed::initialize(); });
  EXPECT_NE(m.find("already called, at "), std::string::npos) << m;
  EXPECT_NE(m.find(std::string(kThisFile) + ":" + std::to_string(first_line)), std::string::npos) << m;
  mj::distributed::shutdown();
  const std::string a = error_of<mj::DistributedError>([] { mj::distributed::initialize(); });
  EXPECT_NE(a.find("called after mj::distributed::shutdown() at "), std::string::npos) << a;
}
TEST(Distributed, TwiceAndAfterShutdownAreErrors) { expect_child_passes("TwiceAndAfterShutdownAreErrors"); }

TEST(DistributedChild, AfterTheDevicesWereUsedIsAnError) {
  if (!in_child()) GTEST_SKIP() << "run by Distributed.AfterTheDevicesWereUsedIsAnError";
  EXPECT_EQ(mj::devices().size(), 8u);
  const int use_line = __LINE__ - 1;
  const std::string m = error_of<mj::DistributedError>([] { mj::distributed::initialize(); });
  EXPECT_NE(m.find("already used its devices, first at "), std::string::npos) << m;
  EXPECT_NE(m.find(std::string(kThisFile) + ":" + std::to_string(use_line)), std::string::npos) << m;
  EXPECT_NE(m.find("call initialize() before any computation"), std::string::npos) << m;
  EXPECT_FALSE(mj::distributed::is_initialized());
}
TEST(Distributed, AfterTheDevicesWereUsedIsAnError) {
  expect_child_passes("AfterTheDevicesWereUsedIsAnError");
}

TEST(DistributedChild, ArgumentsCheckedAgainstTheLauncher) {
  if (!in_child()) GTEST_SKIP() << "run by Distributed.ArgumentsCheckedAgainstTheLauncher";
  // A launcher that started this one process (mpirun -np 1): no MPI needed.
  ::setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  const std::string n = error_of<mj::DistributedError>([] { mj::distributed::initialize(3); });
  EXPECT_NE(n.find("num_processes = 3 but the launcher started 1 processes (OMPI_COMM_WORLD_SIZE)"),
            std::string::npos)
      << n;
  const std::string p = error_of<mj::DistributedError>([] { mj::distributed::initialize(1, 2); });
  EXPECT_NE(p.find("process_id = 2 but the launcher made this process number 0 (OMPI_COMM_WORLD_RANK)"),
            std::string::npos)
      << p;
  ::setenv("OMPI_COMM_WORLD_RANK", "x1", 1);
  const std::string b = error_of<mj::DistributedError>([] { mj::distributed::initialize(); });
  EXPECT_NE(b.find("OMPI_COMM_WORLD_RANK='x1' is not a process count or index"), std::string::npos) << b;
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  mj::distributed::initialize(1, 0);
  EXPECT_EQ(mj::process_count(), 1);
  EXPECT_FALSE(mj::mpi_world::initialized());
}
TEST(Distributed, ArgumentsCheckedAgainstTheLauncher) {
  expect_child_passes("ArgumentsCheckedAgainstTheLauncher");
}

TEST(DistributedChild, BadArgumentsAreValueErrors) {
  if (!in_child()) GTEST_SKIP() << "run by Distributed.BadArgumentsAreValueErrors";
  EXPECT_NE(error_of<mj::ValueError>([] { mj::distributed::initialize(0); }).find("num_processes = 0"),
            std::string::npos);
  EXPECT_NE(error_of<mj::ValueError>([] {
              mj::distributed::initialize(1, -1);
            }).find("process_id = -1 is negative"),
            std::string::npos);
  EXPECT_NE(error_of<mj::ValueError>([] {
              mj::distributed::initialize(1, 0, 0);
            }).find("local_device_count = 0"),
            std::string::npos);
  EXPECT_FALSE(mj::distributed::is_initialized());
}
TEST(Distributed, BadArgumentsAreValueErrors) { expect_child_passes("BadArgumentsAreValueErrors"); }

// A build without MPI refuses a launcher's two processes (in a build with MPI, a fake launcher
// environment would make MPI_Init_thread look for a launcher that is not there).
TEST(DistributedChild, TwoProcessesInABuildWithoutMpi) {
  if (!in_child()) GTEST_SKIP() << "run by Distributed.TwoProcessesInABuildWithoutMpi";
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  const std::string m = error_of<mj::DistributedError>([] { mj::distributed::initialize(); });
  EXPECT_NE(
      m.find("2 processes, but this build of minijax has no MPI (the CMake option MINIJAX_WITH_MPI is OFF"),
      std::string::npos)
      << m;
}
TEST(Distributed, TwoProcessesInABuildWithoutMpi) {
  if (mj::distributed::built_with_mpi()) GTEST_SKIP() << "this build has MPI";
  expect_child_passes("TwoProcessesInABuildWithoutMpi");
}

// Under `mpirun -np 2` (CTest: minijax_mpi_initialize). Skipped without a launcher.
bool under_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

TEST(Mpi, ArgumentsThatDisagreeWithTheLauncherAreRefusedBeforeMpiStarts) {
  if (!under_mpirun()) GTEST_SKIP() << "run under mpirun -np 2 (ctest -L mpi)";
  const std::string m = error_of<mj::DistributedError>([] { mj::distributed::initialize(3); });
  EXPECT_NE(m.find("num_processes = 3 but the launcher started 2 processes (OMPI_COMM_WORLD_SIZE)"),
            std::string::npos)
      << m;
  EXPECT_FALSE(mj::mpi_world::initialized());
}

TEST(Mpi, TwoProcessesJoinOneWorld) {
  if (!under_mpirun()) GTEST_SKIP() << "run under mpirun -np 2 (ctest -L mpi)";
  const int rank = std::atoi(std::getenv("OMPI_COMM_WORLD_RANK"));
  mj::distributed::initialize(2, rank);
  EXPECT_TRUE(mj::mpi_world::initialized());
  EXPECT_EQ(mj::process_count(), 2);
  EXPECT_EQ(mj::process_index(), rank);
  // OpenMPI 4.1 as Debian builds it grants MPI_THREAD_MULTIPLE.
  std::cout << "process " << rank << ": " << mj::distributed::mpi_thread_level() << "\n";
  EXPECT_EQ(mj::distributed::mpi_thread_level(), "MPI_THREAD_MULTIPLE");
  mj::distributed::shutdown();
  EXPECT_TRUE(mj::mpi_world::finalized());
  mj::distributed::shutdown();
}
