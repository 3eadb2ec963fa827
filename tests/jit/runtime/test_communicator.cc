// Tests of the in-process communicator (jit/runtime/communicator.h) and Event: every collective
// from N device threads against run_spmd bitwise, its counters, disagreement, abort, hold-back.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include <minijax/minijax.h>

#include "core/collectives.h"
#include "jit/codegen/lower/program.h"
#include "jit/runtime/communicator.h"
#include "jit/reference/reference_executor.h"
#include "sharding/collective_groups.h"
#include "sharding/reshard_api.h"

namespace {
using namespace minijax;
using Fn = std::function<std::vector<Array>(const std::vector<Array>&)>;

Mesh line(int n) {
  std::vector<int> ids(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ids[size_t(i)] = (i * 5 + 3) % n;  // ids not in position order
  return Mesh(ids, {n}, {"x"});
}
Mesh mesh42() { return Mesh({7, 6, 5, 4, 3, 2, 1, 0}, {4, 2}, {"x", "y"}); }

// Random values of `aval`: floats of mixed magnitudes (so the sum's order shows in the bits),
// large ints (so i32 sums wrap), bools.
Array random_array(const ShapedArray& aval, std::mt19937& rng) {
  std::vector<double> v(size_t(aval.size()));
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<int> e(-8, 8);
  for (auto& x : v) {
    if (aval.dtype == DType::i32) x = double(int32_t(rng()) / 2);
    else if (aval.dtype == DType::u32) x = double(rng() % 4000000000u);
    else if (aval.dtype == DType::bool_) x = double(rng() % 2);
    else x = std::ldexp(u(rng), e(rng));
  }
  return array(v, aval.shape, aval.dtype);
}

struct CommRun {
  std::vector<std::vector<char>> out;  // per mesh position
  std::vector<CollectiveCounters> counters;
  std::vector<std::exception_ptr> errors;
};

// The mesh positions' group (device ids, rank order) for the collective over `axes`.
std::vector<std::vector<int>> groups_of(const Mesh& m, const AxisNames& axes) {
  CollectiveGroups g = collective_groups(m, axes);
  std::vector<std::vector<int>> by_pos(m.num_devices());
  for (auto& members : g.members) {
    std::vector<int> ids;
    for (size_t p : members) ids.push_back(m.device_ids[p]);
    for (size_t p : members) by_pos[p] = ids;
  }
  return by_pos;
}

// Runs equation 0 of `j` on `comm` from one thread per device of `m` with `args`.
CommRun run_comm(Communicator& comm, const ClosedJaxpr& j, const Mesh& m, const std::vector<std::vector<Array>>& args) {
  const Eqn& e = j.jaxpr->eqns.at(0);
  const auto groups = groups_of(m, axis_names_of(e.params));
  const size_t n = m.num_devices();
  CommRun r;
  r.out.resize(n);
  r.errors.resize(n);
  reset_collective_stats();
  std::vector<std::thread> threads;
  for (size_t p = 0; p < n; ++p) {
    threads.emplace_back([&, p] {
      try {
        Eqn numbered = e;  // a site id, as number_collective_sites gives one
        numbered.site = 0;
        CollectiveOp op = lower::describe_collective_site(numbered).op;
        CollectiveBuffers b;
        b.send.push_back({args[p][0].raw_data(), args[p][0].aval().nbytes()});
        if (op.kind == CollectiveKind::ragged_all_to_all) {
          b.send.push_back({args[p][1].raw_data(), args[p][1].aval().nbytes()});
          auto tab = [&](size_t k) {
            const int32_t* d = args[p][k].data<int32_t>();
            return std::vector<int32_t>(d, d + args[p][k].aval().size());
          };
          op.input_offsets = tab(2), op.send_sizes = tab(3), op.output_offsets = tab(4), op.recv_sizes = tab(5);
        }
        r.out[p].assign(size_t(e.outputs[0].aval().nbytes()), char(0x5a));
        b.recv = r.out[p].data();
        b.recv_bytes = int64_t(r.out[p].size());
        comm.start(op, m.device_ids[p], b, groups[p]).wait();
      } catch (...) {
        r.errors[p] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t p = 0; p < n; ++p) r.counters.push_back(collective_stats(m.device_ids[p]));
  return r;
}

// Equation 0 of `j` through the communicator equals run_spmd's result bits and traffic.
void expect_matches_reference(const ClosedJaxpr& j, const Mesh& m, const std::vector<std::vector<Array>>& args,
                              const std::string& what) {
  SCOPED_TRACE(what + " on " + m.str());
  SpmdStats st;
  auto want = run_spmd(j, m, args, &st);
  communicator().reset();
  CommRun got = run_comm(communicator(), j, m, args);
  auto traffic = collective_traffic(*j.jaxpr, 0, {}, m);
  ASSERT_TRUE(traffic.has_value());
  ASSERT_EQ(st.collectives.size(), 1u);
  for (size_t p = 0; p < m.num_devices(); ++p) {
    SCOPED_TRACE("mesh position " + std::to_string(p) + " (device " + std::to_string(m.device_ids[p]) + ")");
    if (got.errors[p]) {
      try {
        std::rethrow_exception(got.errors[p]);
      } catch (const std::exception& ex) {
        FAIL() << ex.what();
      }
    }
    const Array& w = want[p][0];
    ASSERT_EQ(int64_t(got.out[p].size()), w.aval().nbytes());
    if (!got.out[p].empty())  // memcmp of a null pointer is undefined even for 0 bytes
      EXPECT_EQ(std::memcmp(got.out[p].data(), w.raw_data(), got.out[p].size()), 0) << "result bits differ";
    EXPECT_EQ(got.counters[p].bytes_sent, st.collectives[0].bytes_sent[p]);
    EXPECT_EQ(got.counters[p].bytes_received, st.collectives[0].bytes_received[p]);
    if (traffic->known) EXPECT_EQ(got.counters[p].messages, traffic->messages_sent[p]);
  }
}

void check(const Mesh& m, const Fn& f, const std::vector<ShapedArray>& avals, const std::string& what,
           unsigned seed = 1) {
  ClosedJaxpr j = trace_to_jaxpr(f, avals);
  std::mt19937 rng(seed);
  std::vector<std::vector<Array>> args(m.num_devices());
  for (auto& a : args)
    for (auto& av : avals) a.push_back(random_array(av, rng));
  expect_matches_reference(j, m, args, what);
}

const AxisNames X = {"x"};

TEST(Communicator, AllGatherMatchesRunSpmd) {
  for (int n : {1, 2, 4, 8}) {
    Mesh m = line(n);
    for (bool tiled : {true, false})
      for (int64_t d : {0, 1}) {
        check(m, [=](const std::vector<Array>& a) { return std::vector<Array>{lax::all_gather(a[0], X, n, d, tiled)}; },
              {ShapedArray{{3, 2}, f32}}, "all_gather d=" + std::to_string(d) + (tiled ? " tiled" : " stacked"));
      }
    check(m, [=](const std::vector<Array>& a) { return std::vector<Array>{lax::all_gather(a[0], X, n, 0, false)}; },
          {ShapedArray{{}, i32}}, "all_gather of a scalar");
  }
}

TEST(Communicator, AllReduceMatchesRunSpmdBitwiseWithUnevenPieces) {
  for (int n : {1, 2, 4, 8})
    for (const char* red : {"sum", "max", "min"})
      for (DType dt : {f32, bf16, i32, u32, f64})
        for (Shape s : {Shape{6, 5}, Shape{3}, Shape{}, Shape{8, 3}, Shape{2, 0}, Shape{5, 7, 3}}) {
          std::string r = red;
          check(line(n), [=](const std::vector<Array>& a) { return std::vector<Array>{lax::all_reduce(a[0], X, n, r)}; },
                {ShapedArray{s, dt}}, "all_reduce " + r + " " + ShapedArray{s, dt}.str(), unsigned(n * 7 + s.size()));
        }
  check(line(4), [](const std::vector<Array>& a) { return std::vector<Array>{lax::all_reduce(a[0], X, 4, "max")}; },
        {ShapedArray{{5}, bool_}}, "all_reduce max of bools");
  check(line(1), [](const std::vector<Array>& a) { return std::vector<Array>{lax::psum(a[0], X, 1)}; },
        {ShapedArray{{3}, bool_}}, "psum of bools on one device");
}

TEST(Communicator, ReduceScatterAndAllToAllMatchRunSpmd) {
  for (int n : {2, 4, 8}) {
    for (int64_t d : {0, 1})
      check(line(n), [=](const std::vector<Array>& a) { return std::vector<Array>{lax::reduce_scatter(a[0], X, n, d)}; },
            {ShapedArray{{8, 8}, f32}}, "reduce_scatter d=" + std::to_string(d));
    check(line(n), [=](const std::vector<Array>& a) { return std::vector<Array>{lax::reduce_scatter(a[0], X, n, 0)}; },
          {ShapedArray{{int64_t(n) * 3}, bf16}}, "reduce_scatter bf16");
    for (int64_t sd : {0, 1})
      for (int64_t cd : {0, 1, 2})
        check(line(n),
              [=](const std::vector<Array>& a) { return std::vector<Array>{lax::all_to_all(a[0], X, n, sd, cd)}; },
              {ShapedArray{{8, 8, 3}, f32}}, "all_to_all " + std::to_string(sd) + "->" + std::to_string(cd));
  }
}

TEST(Communicator, CollectivePermuteMatchesRunSpmd) {
  for (int n : {2, 4, 8}) {
    std::vector<int64_t> shift, partial;
    for (int64_t r = 0; r < n; ++r) shift.insert(shift.end(), {r, (r + 1) % n});
    partial = {0, 0};  // a self-pair; ranks that are no target get zeros
    if (n > 2) partial.insert(partial.end(), {1, int64_t(n) - 1});
    for (const auto& st : {shift, partial})
      check(line(n),
            [=](const std::vector<Array>& a) { return std::vector<Array>{lax::collective_permute(a[0], X, n, st)}; },
            {ShapedArray{{4, 3}, f32}}, "collective_permute");
  }
}

// Random consistent ragged sizes: sender i sends c[i][j] rows to j, packed in j order in its
// input; receiver j places them in i order in its output.
std::vector<std::vector<Array>> ragged_args(int n, std::mt19937& rng, int64_t in_rows, int64_t out_rows) {
  std::vector<std::vector<int32_t>> c(static_cast<size_t>(n), std::vector<int32_t>(static_cast<size_t>(n)));
  for (auto& row : c) {
    int64_t left = in_rows;
    for (auto& x : row) {
      x = int32_t(rng() % uint32_t(std::min<int64_t>(left, out_rows / n) + 1));
      left -= x;
    }
  }
  std::vector<std::vector<Array>> args(static_cast<size_t>(n));
  auto tab = [](const std::vector<int32_t>& v) { return array(std::vector<double>(v.begin(), v.end()), {int64_t(v.size())}, i32); };
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> in_off, send, out_off, recv;
    int32_t at = 0;
    for (int j = 0; j < n; ++j) {
      in_off.push_back(at);
      at += c[size_t(i)][size_t(j)];
      send.push_back(c[size_t(i)][size_t(j)]);
      int32_t o = 0;  // where i's rows land in j's output: after the rows of senders before i
      for (int k = 0; k < i; ++k) o += c[size_t(k)][size_t(j)];
      out_off.push_back(o);
      recv.push_back(c[size_t(j)][size_t(i)]);
    }
    args[size_t(i)] = {random_array(ShapedArray{{in_rows, 3}, f32}, rng), random_array(ShapedArray{{out_rows, 3}, f32}, rng),
                       tab(in_off), tab(send), tab(out_off), tab(recv)};
  }
  return args;
}

ClosedJaxpr ragged_prog(int n, int64_t in_rows, int64_t out_rows) {
  return trace_to_jaxpr(
      [=](const std::vector<Array>& a) {
        return std::vector<Array>{lax::ragged_all_to_all(a[0], a[1], a[2], a[3], a[4], a[5], X, n)};
      },
      {ShapedArray{{in_rows, 3}, f32}, ShapedArray{{out_rows, 3}, f32}, ShapedArray{{n}, i32}, ShapedArray{{n}, i32},
       ShapedArray{{n}, i32}, ShapedArray{{n}, i32}});
}

// The messages device i sends: one per other rank it sends rows to (an independent count).
int64_t ragged_messages(const std::vector<Array>& a, int n, int i) {
  int64_t k = 0;
  for (int j = 0; j < n; ++j) k += j != i && a[3].data<int32_t>()[j] > 0;
  return k;
}

TEST(Communicator, RaggedAllToAllMatchesRunSpmd) {
  for (int n : {2, 4, 8}) {
    std::mt19937 rng{unsigned(n)};
    Mesh m = line(n);
    auto args = ragged_args(n, rng, 10, 16);
    ClosedJaxpr j = ragged_prog(n, 10, 16);
    expect_matches_reference(j, m, args, "ragged_all_to_all");
    CommRun got = run_comm(communicator(), j, m, args);
    for (int p = 0; p < n; ++p) EXPECT_EQ(got.counters[size_t(p)].messages, ragged_messages(args[size_t(p)], n, p));
  }
}

TEST(Communicator, SubgroupsOfAMeshRunConcurrently) {
  Mesh m = mesh42();
  for (AxisNames axes : {AxisNames{"x"}, AxisNames{"y"}, AxisNames{"x", "y"}, AxisNames{"y", "x"}}) {
    const int64_t n = axes.size() == 2 ? 8 : m.axis_size(axes[0]);
    check(m, [=](const std::vector<Array>& a) { return std::vector<Array>{lax::psum(a[0], axes, n)}; },
          {ShapedArray{{5, 3}, f32}}, "psum over " + std::to_string(axes.size()) + " axes");
    check(m, [=](const std::vector<Array>& a) { return std::vector<Array>{lax::all_gather(a[0], axes, n, 1)}; },
          {ShapedArray{{2, 3}, bf16}}, "all_gather");
    check(m, [=](const std::vector<Array>& a) { return std::vector<Array>{lax::all_to_all(a[0], axes, n, 0, 1)}; },
          {ShapedArray{{8, 2}, i32}}, "all_to_all");
  }
}

// Two collectives started back to back on one group (the second before the first completes):
// the k-th start of each device is matched with the k-th of the others.
TEST(Communicator, StartsAreMatchedInOrderPerGroup) {
  InProcessCommunicator comm;
  const std::vector<int> group = {2, 0, 1};
  std::vector<std::vector<float>> x(3), y(3, std::vector<float>(6)), z(3, std::vector<float>(2));
  std::vector<std::thread> ts;
  for (int r = 0; r < 3; ++r) x[size_t(r)] = {float(r), float(10 + r)};
  for (int r = 0; r < 3; ++r)
    ts.emplace_back([&, r] {
      CollectiveOp g{.kind = CollectiveKind::all_gather, .dtype = f32, .shape = {2}};
      CollectiveOp s{.kind = CollectiveKind::all_reduce, .dtype = f32, .shape = {2}};
      Event a = comm.start(g, group[size_t(r)], {{{x[size_t(r)].data(), 8}}, y[size_t(r)].data(), 24}, group);
      Event b = comm.start(s, group[size_t(r)], {{{x[size_t(r)].data(), 8}}, z[size_t(r)].data(), 8}, group);
      b.wait();
      a.wait();
    });
  for (auto& t : ts) t.join();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(y[size_t(r)], (std::vector<float>{0, 10, 1, 11, 2, 12}));
    EXPECT_EQ(z[size_t(r)], (std::vector<float>{3, 33}));
  }
}

// Runs `n` device threads; thread r starts ops[r] over groups[r]; returns each one's error.
std::vector<std::exception_ptr> start_all(Communicator& comm, const std::vector<CollectiveOp>& ops,
                                          const std::vector<std::vector<int>>& groups,
                                          const std::vector<int>& context = {}) {
  const size_t n = ops.size();
  std::vector<std::vector<float>> in(n, std::vector<float>(64, 1.f)), out(n, std::vector<float>(64));
  std::vector<std::exception_ptr> errs(n);
  std::vector<std::thread> ts;
  for (size_t r = 0; r < n; ++r)
    ts.emplace_back([&, r] {
      try {
        const int64_t e = shape_size(ops[r].shape) * 4;
        const int64_t o = shape_size(ops[r].result_shape(int64_t(groups[r].size()))) * 4;
        comm.start(ops[r], int(r), {{{in[r].data(), e}}, out[r].data(), o}, groups[r], context).wait();
      } catch (...) {
        errs[r] = std::current_exception();
      }
    });
  for (auto& t : ts) t.join();
  return errs;
}

std::string message_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const ValueError& v) {
    return v.what();
  } catch (...) {
    return "<not a ValueError>";
  }
}

TEST(Communicator, DisagreeingParticipantsAllFailWithValueError) {
  InProcessCommunicator comm;
  CollectiveOp op{.kind = CollectiveKind::all_gather, .dtype = f32, .shape = {2, 3}};
  std::vector<CollectiveOp> ops(4, op);
  ops[2].shape = {3, 2};
  const std::vector<int> g = {0, 1, 2, 3};
  auto errs = start_all(comm, ops, {g, g, g, g});
  for (auto& e : errs) {
    ASSERT_TRUE(e);
    const std::string msg = message_of(e);
    EXPECT_NE(msg.find("all_gather over devices [0, 1, 2, 3]: the participants disagree"), std::string::npos) << msg;
    EXPECT_NE(msg.find("device 2 has all_gather f32[3,2]"), std::string::npos) << msg;
  }
  // Another params disagreement, then devices naming different groups: no one hangs.
  ops.assign(4, CollectiveOp{.kind = CollectiveKind::all_reduce, .dtype = f32, .shape = {4}});
  ops[3].reduction = "max";
  for (auto& e : start_all(comm, ops, {g, g, g, g})) EXPECT_NE(message_of(e).find("device 3 has all_reduce f32[4] reduction=max"), std::string::npos);
  ops[3].reduction = "sum";
  // Devices 0 and 1 may complete their (self-consistent) collective before 2 and 3 arrive;
  // whoever is still pending then fails.
  auto gerrs = start_all(comm, ops, {{0, 1}, {0, 1}, g, g});
  for (size_t d = 0; d < 4; ++d) {
    if (d < 2 && !gerrs[d]) continue;
    ASSERT_TRUE(gerrs[d]) << "device " << d;
    EXPECT_NE(message_of(gerrs[d]).find("disagree on the group"), std::string::npos) << message_of(gerrs[d]);
  }
  // A collective that does not fit its buffers fails on every participant too.
  comm.reset();
  ops.assign(2, CollectiveOp{.kind = CollectiveKind::reduce_scatter, .dtype = f32, .shape = {3}});
  for (auto& e : start_all(comm, ops, {{0, 1}, {0, 1}})) EXPECT_NE(message_of(e).find("not divisible"), std::string::npos);
}

// Programs on meshes over different device subsets, one after another (as a jit on mesh
// [0..3], then one on [0, 1], then the first again): each mesh is its own context, so devices 2
// and 3, which sat out the [0, 1] collectives, are not compared with those starts. Within one
// context a group disagreement is still found.
TEST(Communicator, MeshesOverDeviceSubsetsAreSeparateContexts) {
  InProcessCommunicator comm;
  const std::vector<int> four = {0, 1, 2, 3}, two = {0, 1};
  const CollectiveOp op{.kind = CollectiveKind::all_reduce, .dtype = f32, .shape = {4}};
  for (int round = 0; round < 3; ++round) {
    for (auto& e : start_all(comm, std::vector<CollectiveOp>(4, op), {four, four, four, four}, four))
      EXPECT_FALSE(e) << message_of(e);
    for (auto& e : start_all(comm, std::vector<CollectiveOp>(2, op), {two, two}, two)) EXPECT_FALSE(e) << message_of(e);
  }
  auto errs = start_all(comm, std::vector<CollectiveOp>(4, op), {two, two, four, four}, four);
  for (size_t d = 2; d < 4; ++d) {
    ASSERT_TRUE(errs[d]) << "device " << d;
    EXPECT_NE(message_of(errs[d]).find("disagree on the group"), std::string::npos) << message_of(errs[d]);
  }
  EXPECT_THROW(comm.start(op, 0, {}, four, two), ValueError);  // a member outside the context
}

TEST(Communicator, RaggedSizesThatDisagreeFailEveryParticipant) {
  std::mt19937 rng(3);
  auto args = ragged_args(2, rng, 6, 8);
  const int32_t s = args[0][3].data<int32_t>()[1];
  // Device 1 expects one row more from rank 0 than rank 0 sends.
  args[1][5] = array({double(s + 1), double(args[1][3].data<int32_t>()[1])}, {2}, i32);
  ClosedJaxpr j = ragged_prog(2, 6, 8);
  std::string want;
  try {
    run_spmd(j, line(2), args);
  } catch (const ValueError& e) {
    want = e.message();
  }
  ASSERT_NE(want.find("rank 0 sends " + std::to_string(s) + " rows to rank 1"), std::string::npos) << want;
  communicator().reset();
  CommRun r = run_comm(communicator(), j, line(2), args);
  for (auto& e : r.errors) {
    ASSERT_TRUE(e);
    EXPECT_NE(message_of(e).find(want), std::string::npos) << message_of(e);
  }
}

TEST(Communicator, AbortFailsPendingAndLaterStartsUntilReset) {
  InProcessCommunicator comm;
  CollectiveOp op{.kind = CollectiveKind::all_reduce, .dtype = f32, .shape = {2}};
  std::vector<float> in(2, 1.f);
  std::vector<std::vector<float>> out(4, std::vector<float>(2));
  std::vector<Event> evs;
  for (int d = 0; d < 3; ++d) evs.push_back(comm.start(op, d, {{{in.data(), 8}}, out[size_t(d)].data(), 8}, {0, 1, 2, 3}));
  std::vector<std::string> seen(3);
  std::vector<std::thread> ts;
  for (int d = 0; d < 3; ++d)
    ts.emplace_back([&, d] {
      try {
        evs[size_t(d)].wait();
      } catch (const std::runtime_error& e) {
        seen[size_t(d)] = e.what();
      }
    });
  comm.abort(std::make_exception_ptr(std::runtime_error("device 3's program failed")));
  for (auto& t : ts) t.join();
  for (auto& s : seen) EXPECT_EQ(s, "device 3's program failed");
  Event late = comm.start(op, 3, {{{in.data(), 8}}, out[3].data(), 8}, {0, 1, 2, 3});
  EXPECT_TRUE(late.failed());
  EXPECT_THROW(late.wait(), std::runtime_error);
  comm.reset();
  std::vector<CollectiveOp> ops(4, op);
  for (auto& e : start_all(comm, ops, std::vector<std::vector<int>>(4, {0, 1, 2, 3}))) EXPECT_FALSE(e);
}

TEST(Communicator, StartRejectsBadGroupsAtOnce) {
  InProcessCommunicator comm;
  CollectiveOp op{.kind = CollectiveKind::all_gather, .dtype = f32, .shape = {1}};
  float x = 0, y[2];
  EXPECT_THROW(comm.start(op, 0, {{{&x, 4}}, y, 8}, {}), ValueError);
  EXPECT_THROW(comm.start(op, 0, {{{&x, 4}}, y, 8}, {0, 0}), ValueError);
  EXPECT_THROW(comm.start(op, 2, {{{&x, 4}}, y, 8}, {0, 1}), ValueError);
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return s(u.ru_utime) + s(u.ru_stime);
}

// Sleeps until the process is quiet: a 100 ms window in which it uses at most 1 ms of CPU
// (OpenBLAS's worker threads spin with sched_yield for a while after the library loads, which
// has nothing to do with the communicator). Gives up after 5 s.
void wait_until_quiet() {
  for (int i = 0; i < 50; ++i) {
    const double before = cpu_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (cpu_seconds() - before <= 0.001) return;
  }
}

// While the hook holds a collective back, the 7 waiting device threads and the communicator
// thread sleep on condition variables: ~100 ms of waiting costs (almost) no CPU time.
TEST(Communicator, HeldBackCollectiveWaitsWithoutSpinning) {
  wait_until_quiet();
  InProcessCommunicator comm;
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false;
  detail::set_collective_hook([&] {
    std::unique_lock<std::mutex> lk(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lk, [&] { return release; });
  });
  std::vector<int> group = {0, 1, 2, 3, 4, 5, 6, 7};
  CollectiveOp op{.kind = CollectiveKind::all_gather, .dtype = f32, .shape = {4}};
  std::vector<std::vector<float>> in(8, std::vector<float>(4)), out(8, std::vector<float>(32));
  for (int d = 0; d < 8; ++d)
    for (int k = 0; k < 4; ++k) in[size_t(d)][size_t(k)] = float(4 * d + k);
  auto bufs = [&](int d) { return CollectiveBuffers{{{in[size_t(d)].data(), 16}}, out[size_t(d)].data(), 128}; };
  std::vector<std::thread> ts;
  for (int d = 0; d < 7; ++d) ts.emplace_back([&, d] { comm.start(op, d, bufs(d), group).wait(); });
  Event last = comm.start(op, 7, bufs(7), group);
  {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return entered; });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the 7 reach their waits
  const double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double used = cpu_seconds() - before;
  EXPECT_FALSE(last.ready());
  {
    std::lock_guard<std::mutex> lk(mu);
    release = true;
  }
  cv.notify_all();
  last.wait();
  for (auto& t : ts) t.join();
  detail::set_collective_hook({});
  EXPECT_LE(used, 0.005) << "CPU seconds used while 7 threads waited 100 ms";
  for (int d = 0; d < 8; ++d)
    for (int k = 0; k < 32; ++k) EXPECT_EQ(out[size_t(d)][size_t(k)], float(k));
}

TEST(Event, SetErrorWaitAndCallbacks) {
  Event e;
  EXPECT_FALSE(e.ready());
  int calls = 0;
  e.on_ready([&] { ++calls; });
  std::thread t([e] { e.set(); });
  e.wait();
  t.join();
  EXPECT_TRUE(e.ready());
  EXPECT_FALSE(e.failed());
  EXPECT_EQ(calls, 1);
  e.set_error(std::make_exception_ptr(ValueError("late")));  // the first completion wins
  EXPECT_NO_THROW(e.wait());
  e.on_ready([&] { ++calls; });  // already complete: runs at once
  EXPECT_EQ(calls, 2);
  Event f = Event::failed_with(std::make_exception_ptr(ValueError("boom")));
  EXPECT_TRUE(f.failed());
  EXPECT_THROW(f.wait(), ValueError);
  EXPECT_TRUE(Event::already_set().ready());
}

}  // namespace
