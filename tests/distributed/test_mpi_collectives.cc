// Tests of the MPI communicator (jit/runtime/mpi_communicator.h) under `mpirun -np P` (CTest:
// minijax_mpi_collectives, P = 2 and 4, 8 devices in all): every collective kind over groups that
// span processes against the in-process backend's result over the same 8 devices, bytes included.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <thread>

#include "core/config.h"
#include "core/device.h"
#include "core/distributed.h"
#include "core/errors.h"
#include "jit/runtime/communicator.h"
#include "jit/runtime/mpi_world.h"

namespace mj = minijax;
using mj::CollectiveKind;
using mj::CollectiveOp;

namespace {

constexpr int kDevices = 8;
constexpr int64_t kHeader = 512;  // the wire header (jit/runtime/mpi_communicator.h)

bool under_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

// Joins the run once per process: 8 devices over the launcher's processes.
void join_run() {
  if (mj::distributed::is_initialized()) return;
  const int p = std::atoi(std::getenv("OMPI_COMM_WORLD_SIZE"));
  ASSERT_EQ(kDevices % p, 0) << "run with -np 2, 4 or 8";
  mj::config().collective_timeout_s = 60;
  mj::distributed::initialize(std::nullopt, std::nullopt, kDevices / p);
  ASSERT_EQ(mj::num_devices(), kDevices);
}

#define REQUIRE_RUN()                                                                   \
  do {                                                                                  \
    if (!under_mpirun()) GTEST_SKIP() << "run under mpirun (ctest -L mpi)";             \
    join_run();                                                                         \
    if (::testing::Test::HasFatalFailure()) return;                                     \
  } while (0)

// One device's part of a collective: its op (ragged tables its own), operand(s) and result.
struct Part {
  CollectiveOp op;
  std::vector<std::vector<char>> send;
  std::vector<char> recv;
};

// Integer-valued operands (exact in f32 whatever the order of a sum of 8), distinct per device.
std::vector<char> operand(const CollectiveOp& op, const mj::Shape& shape, int device, int salt) {
  const int64_t n = mj::shape_size(shape);
  std::vector<char> b(size_t(n) * mj::itemsize(op.dtype));
  for (int64_t i = 0; i < n; ++i) {
    const int v = int((device * 131 + i * 7 + salt * 17) % 23) - 11;
    if (op.dtype == mj::DType::f32) reinterpret_cast<float*>(b.data())[i] = float(v);
    else if (op.dtype == mj::DType::i32) reinterpret_cast<int32_t*>(b.data())[i] = v * 1000003;
    else if (op.dtype == mj::DType::u32) reinterpret_cast<uint32_t*>(b.data())[i] = uint32_t(v) * 2654435761u;
  }
  return b;
}

using MakePart = std::function<Part(int rank, int device)>;

// Runs the collective over `group` on `comm` from one thread per member in `members` (device ids);
// returns the parts by rank (only those of `members` filled) and rethrows the first error.
std::vector<Part> run(mj::Communicator& comm, const std::vector<int>& group, const std::vector<int>& members,
                      const MakePart& make) {
  std::vector<Part> parts(group.size());
  std::vector<std::exception_ptr> errors(group.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < group.size(); ++r) {
    if (std::find(members.begin(), members.end(), group[r]) == members.end()) continue;
    parts[r] = make(int(r), group[r]);
    parts[r].recv.assign(size_t(mj::shape_size(parts[r].op.result_shape(int64_t(group.size()))) *
                                int64_t(mj::itemsize(parts[r].op.dtype))),
                         char(0x5a));
    if (parts[r].op.kind == CollectiveKind::ragged_all_to_all)
      parts[r].recv.resize(size_t(mj::shape_size(parts[r].op.output_shape) * int64_t(mj::itemsize(parts[r].op.dtype))));
  }
  for (size_t r = 0; r < group.size(); ++r) {
    if (parts[r].send.empty()) continue;
    threads.emplace_back([&, r] {
      try {
        mj::CollectiveBuffers b;
        for (auto& s : parts[r].send) b.send.push_back({s.data(), int64_t(s.size())});
        b.recv = parts[r].recv.data();
        b.recv_bytes = int64_t(parts[r].recv.size());
        comm.start(parts[r].op, group[r], b, group).wait();
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return parts;
}

struct Counts {
  std::vector<mj::CollectiveCounters> device;   // by rank (local ranks only for the MPI run)
  std::vector<mj::ProcessPairCounters> peer;    // by process
};

Counts counts_of(const std::vector<int>& group) {
  Counts c;
  for (int d : group) c.device.push_back(mj::collective_stats(d));
  for (int p = 0; p < mj::process_count(); ++p) c.peer.push_back(mj::collective_process_stats(p));
  return c;
}

int process_of(int device) { return device / (kDevices / mj::process_count()); }

// The collective over `group` through the MPI communicator equals the in-process backend's run of
// all 8 devices in this process, bit for bit; the bytes each process received from each other
// one (MPI_Get_count) are the header plus `payload(from, to)`; local devices' received bytes
// equal the in-process run's where `same_device_bytes`.
void expect_matches_in_process(const std::string& what, const std::vector<int>& group, const MakePart& make,
                               const std::function<int64_t(int from, int to)>& payload,
                               bool same_device_bytes) {
  SCOPED_TRACE(what);
  const std::vector<int> local = mj::local_devices();
  // The oracle: every member in this process, on a backend of its own.
  mj::reset_collective_stats();
  std::vector<Part> want;
  {
    mj::InProcessCommunicator oracle;
    want = run(oracle, group, group, make);
  }
  const Counts want_counts = counts_of(group);
  mj::reset_collective_stats();
  std::vector<Part> got;
  try {
    got = run(mj::communicator(), group, local, make);
  } catch (const std::exception& e) {
    FAIL() << "process " << mj::process_index() << ": " << e.what();
  }
  const Counts got_counts = counts_of(group);
  const int me = mj::process_index();
  std::set<int> procs;
  for (int d : group) procs.insert(process_of(d));
  for (size_t r = 0; r < group.size(); ++r) {
    if (process_of(group[r]) != me) continue;
    EXPECT_EQ(got[r].recv, want[r].recv) << "rank " << r << " (device " << group[r] << ")";
    if (same_device_bytes)
      EXPECT_EQ(got_counts.device[r].bytes_received, want_counts.device[r].bytes_received)
          << "rank " << r << " (device " << group[r] << ")";
  }
  for (int q = 0; q < mj::process_count(); ++q) {
    const bool peer = q != me && procs.count(q) && procs.count(me);
    EXPECT_EQ(got_counts.peer[size_t(q)].bytes_received, peer ? kHeader + payload(q, me) : 0) << "from process " << q;
    EXPECT_EQ(got_counts.peer[size_t(q)].bytes_sent, peer ? kHeader + payload(me, q) : 0) << "to process " << q;
  }
}

std::vector<int> all_devices() { return {0, 1, 2, 3, 4, 5, 6, 7}; }
// Interleaved over the processes, in no process's order.
std::vector<int> permuted() { return {7, 0, 5, 2, 3, 6, 1, 4}; }

int members_on(const std::vector<int>& group, int p) {
  int k = 0;
  for (int d : group) k += process_of(d) == p;
  return k;
}

CollectiveOp make_op(CollectiveKind kind, mj::Shape shape, mj::DType dtype = mj::DType::f32) {
  CollectiveOp op;
  op.kind = kind;
  op.shape = std::move(shape);
  op.dtype = dtype;
  return op;
}

MakePart simple(CollectiveOp op, int salt = 0) {
  return [op, salt](int, int device) {
    Part p;
    p.op = op;
    p.send.push_back(operand(op, op.shape, device, salt));
    return p;
  };
}

}  // namespace

TEST(MpiCollectives, AllGatherAcrossProcesses) {
  REQUIRE_RUN();
  for (const auto& group : {all_devices(), permuted()}) {
    for (bool tiled : {true, false}) {
      CollectiveOp op = make_op(CollectiveKind::all_gather, {3, 5});
      op.tiled = tiled;
      op.gather_dimension = tiled ? 1 : 0;
      const int64_t S = 15 * 4;
      expect_matches_in_process("all_gather tiled=" + std::to_string(tiled), group, simple(op),
                                [&](int from, int) { return S * members_on(group, from); }, true);
    }
  }
}

TEST(MpiCollectives, AllReduceIsHierarchical) {
  REQUIRE_RUN();
  struct Case {
    mj::DType dtype;
    std::string reduction;
    mj::Shape shape;
  };
  for (const auto& group : {all_devices(), permuted()})
    for (const Case& c : {Case{mj::DType::f32, "sum", {16, 3}}, Case{mj::DType::f32, "max", {5}},
                          Case{mj::DType::i32, "sum", {7, 2}}, Case{mj::DType::u32, "xor", {9}},
                          Case{mj::DType::f32, "sum", {}}}) {
      CollectiveOp op = make_op(CollectiveKind::all_reduce, c.shape, c.dtype);
      op.reduction = c.reduction;
      const int64_t S = mj::shape_size(c.shape) * 4;
      // One partial per process pair: the operand's bytes, whatever the number of local devices.
      expect_matches_in_process("all_reduce " + c.reduction + " " + mj::shape_str(c.shape), group, simple(op),
                                [&](int, int) { return S; }, false);
    }
}

TEST(MpiCollectives, ReduceScatterSendsOnlyThePeersPieces) {
  REQUIRE_RUN();
  for (const auto& group : {all_devices(), permuted()}) {
    CollectiveOp op = make_op(CollectiveKind::reduce_scatter, {2, 16});
    op.scatter_dimension = 1;
    const int64_t piece = 2 * 16 * 4 / 8;
    expect_matches_in_process("reduce_scatter", group, simple(op),
                              [&](int, int to) { return piece * members_on(group, to); }, false);
  }
}

TEST(MpiCollectives, AllToAllSendsOnlyThePeersBlocks) {
  REQUIRE_RUN();
  for (const auto& group : {all_devices(), permuted()}) {
    CollectiveOp op = make_op(CollectiveKind::all_to_all, {16, 3}, mj::DType::i32);
    op.split_dimension = 0;
    op.concat_dimension = 1;
    const int64_t block = 16 * 3 * 4 / 8;
    expect_matches_in_process("all_to_all", group, simple(op),
                              [&](int from, int to) { return block * members_on(group, from) * members_on(group, to); },
                              true);
  }
}

TEST(MpiCollectives, CollectivePermuteSendsTheCrossingPairs) {
  REQUIRE_RUN();
  for (const auto& group : {all_devices(), permuted()}) {
    CollectiveOp op = make_op(CollectiveKind::collective_permute, {4, 2});
    for (int64_t r = 0; r < 8; ++r) op.source_target_pairs.insert(op.source_target_pairs.end(), {r, (r + 3) % 8});
    CollectiveOp partial = make_op(CollectiveKind::collective_permute, {3});
    partial.source_target_pairs = {0, 5, 6, 1, 2, 2};  // devices without a source get zeros
    for (const CollectiveOp& o : {op, partial}) {
      const int64_t S = mj::shape_size(o.shape) * 4;
      expect_matches_in_process("collective_permute " + o.str(), group, simple(o),
                                [&](int from, int to) {
                                  int64_t k = 0;
                                  for (size_t i = 0; i < o.source_target_pairs.size(); i += 2)
                                    k += process_of(group[size_t(o.source_target_pairs[i])]) == from &&
                                         process_of(group[size_t(o.source_target_pairs[i + 1])]) == to;
                                  return S * k;
                                },
                                true);
    }
  }
}

TEST(MpiCollectives, RaggedAllToAll) {
  REQUIRE_RUN();
  // Rank i sends (i + j) % 3 rows to rank j, packed in j order; rank j receives them packed in i
  // order after 1 row it keeps.
  const int n = 8;
  auto rows = [](int i, int j) { return (i + j) % 3; };
  for (const auto& group : {all_devices(), permuted()}) {
    const MakePart make = [&](int i, int device) {
      Part p;
      p.op = make_op(CollectiveKind::ragged_all_to_all, {24, 2});
      p.op.output_shape = {26, 2};
      int32_t in_off = 0;
      for (int j = 0; j < n; ++j) {
        int32_t out_off = 1;
        for (int k = 0; k < i; ++k) out_off += rows(k, j);
        p.op.input_offsets.push_back(in_off);
        p.op.send_sizes.push_back(rows(i, j));
        p.op.output_offsets.push_back(out_off);
        p.op.recv_sizes.push_back(rows(j, i));
        in_off += rows(i, j);
      }
      p.send.push_back(operand(p.op, p.op.shape, device, 1));
      p.send.push_back(operand(p.op, p.op.output_shape, device, 2));
      return p;
    };
    const int64_t S = 24 * 2 * 4, tables = 4 * 8 * 4;
    expect_matches_in_process("ragged_all_to_all", group, make,
                              [&](int from, int) { return (S + tables) * members_on(group, from); }, true);
  }
}

TEST(MpiCollectives, GroupsAlongAnAxisRunConcurrently) {
  REQUIRE_RUN();
  // Four groups of two devices of different processes (a mesh axis across processes), started
  // together: each matches its own messages.
  const int l = kDevices / mj::process_count();
  std::vector<std::vector<int>> groups;
  for (int d = 0; d < kDevices / 2; ++d) groups.push_back({d, (d + kDevices / 2) % kDevices});
  if (l == kDevices) GTEST_SKIP() << "one process";
  CollectiveOp op = make_op(CollectiveKind::all_reduce, {6});
  std::vector<std::thread> threads;
  std::vector<std::string> failures(groups.size());
  std::vector<std::vector<Part>> got(groups.size()), want(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    mj::InProcessCommunicator oracle;
    want[g] = run(oracle, groups[g], groups[g], simple(op, int(g)));
  }
  for (size_t g = 0; g < groups.size(); ++g)
    threads.emplace_back([&, g] {
      try {
        for (int rep = 0; rep < 3; ++rep) got[g] = run(mj::communicator(), groups[g], mj::local_devices(), simple(op, int(g)));
      } catch (const std::exception& e) {
        failures[g] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (size_t g = 0; g < groups.size(); ++g) {
    EXPECT_EQ(failures[g], "");
    for (size_t r = 0; r < 2; ++r)
      if (mj::detail::is_local_device(groups[g][r])) EXPECT_EQ(got[g][r].recv, want[g][r].recv) << "group " << g;
  }
}

TEST(MpiCollectives, AWaitingProcessSleeps) {
  REQUIRE_RUN();
  // Process 0 joins 5 s late; the others wait in the collective meanwhile, using < 5% of one CPU
  // (the communicator thread polls MPI_Test with back-off, the device threads block).
  CollectiveOp op = make_op(CollectiveKind::all_reduce, {4});
  const auto t0 = std::chrono::steady_clock::now();
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  if (mj::process_index() == 0) std::this_thread::sleep_for(std::chrono::seconds(5));
  run(mj::communicator(), all_devices(), mj::local_devices(), simple(op));
  getrusage(RUSAGE_SELF, &after);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto secs = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  const double cpu = secs(after.ru_utime) - secs(before.ru_utime) + secs(after.ru_stime) - secs(before.ru_stime);
  if (mj::process_index() != 0) {
    std::cout << "process " << mj::process_index() << " waited " << wall << " s using " << cpu << " s of CPU ("
              << 100 * cpu / wall << "%)\n";
    EXPECT_GE(wall, 4.5);
    EXPECT_LT(cpu, 0.05 * wall);
  }
}
