// Tests of the compiled multi-device executor (jit/runtime/execute_spmd.h) through jit: values
// against eager, the communicator's counted bytes against the static traffic model, dispatch.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <minijax/minijax.h>

#include "core/bodies.h"
#include "core/config.h"
#include "jit/jit.h"
#include "jit/pipeline.h"
#include "jit/runtime/communicator.h"
#include "jit/runtime/execute_spmd.h"
#include "jit/runtime/memory_stats.h"
#include "sharding/sharded_array.h"
#include "sharding/reshard_api.h"
#include "tests/sharding/spmd_helpers.h"

namespace {

using mj::Array;
using mj::None;
using mj::P;

std::shared_ptr<const mj::Mesh> mesh42() { return mj::testing::mesh42(); }

mj::NamedSharding ns(const std::shared_ptr<const mj::Mesh>& m, P spec) {
  return mj::NamedSharding{m, std::move(spec), mj::MemoryKind::device};
}

// The static traffic model of every collective of `j` in program order, bodies of calls
// (pjit, checkpoint, closed_call) included; the programs here have no loop or cond, so program
// order is execution order. The model is sharding/reshard_api.h's collective_traffic.
void model_traffic(const mj::Jaxpr& j, const std::vector<Array>& consts, const mj::Mesh& mesh,
                   std::vector<mj::CollectiveTraffic>& out) {
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    const mj::Eqn& e = j.eqns[i];
    const std::string& name = e.primitive->name;
    ASSERT_TRUE(name != "scan" && name != "while" && name != "cond") << "model_traffic: no loops here";
    if (name == "pjit" || name == "checkpoint" || name == "closed_call")
      for (const mj::SubJaxpr& s : mj::subjaxprs(e)) model_traffic(*s.jaxpr->jaxpr, s.jaxpr->consts, mesh, out);
    if (auto t = mj::collective_traffic(j, i, consts, mesh)) out.push_back(*t);
  }
}

// What one compiled sharded call moved, checked against the model: each collective the
// executor ran (SpmdRun::stats, from the communicator's counters) has the model's bytes per
// device, and each device's CollectiveCounters (reset before the call) sum the model's bytes and
// messages. Returns the collectives' primitives, in order.
std::vector<std::string> expect_counts_equal_model(const mj::SpmdRun& run, const std::string& what) {
  const mj::Mesh& mesh = *run.lowered->mesh;
  std::vector<mj::CollectiveTraffic> model;
  model_traffic(run.lowered->program, {}, mesh, model);
  std::vector<std::string> prims;
  EXPECT_EQ(run.stats.collectives.size(), model.size()) << what << "\n" << run.lowered->as_text();
  const size_t n = mesh.num_devices();
  std::vector<int64_t> sent(n), recv(n), msgs(n);
  for (size_t c = 0; c < std::min(model.size(), run.stats.collectives.size()); ++c) {
    const mj::CollectiveStats& got = run.stats.collectives[c];
    const mj::CollectiveTraffic& want = model[c];
    prims.push_back(got.primitive);
    EXPECT_EQ(got.primitive, want.primitive) << what << " collective " << c;
    EXPECT_TRUE(want.known) << what;
    EXPECT_EQ(got.bytes_sent, want.bytes_sent) << what << " " << got.primitive;
    EXPECT_EQ(got.bytes_received, want.bytes_received) << what << " " << got.primitive;
    for (size_t p = 0; p < n; ++p) {
      sent[p] += want.bytes_sent[p];
      recv[p] += want.bytes_received[p];
      msgs[p] += want.messages_sent[p];
    }
  }
  for (size_t p = 0; p < n; ++p) {
    mj::CollectiveCounters k = mj::collective_stats(mesh.device_ids[p]);
    EXPECT_EQ(k.bytes_sent, sent[p]) << what << " device " << p;
    EXPECT_EQ(k.bytes_received, recv[p]) << what << " device " << p;
    EXPECT_EQ(k.messages, msgs[p]) << what << " device " << p;
  }
  return prims;
}

void expect_equal(const Array& got, const Array& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  Array g = mj::astype(got, mj::f64), w = mj::astype(want, mj::f64);
  for (int64_t i = 0; i < w.size(); ++i)
    ASSERT_NEAR(g.data<double>()[i], w.data<double>()[i], tol * (1 + std::fabs(w.data<double>()[i])))
        << what << " at " << i;
}

// Every spec of a rank-2 array on mesh (4, 2): each axis unused or on one dim, both axes on one
// dim in either order (11 specs).
std::vector<P> rank2_specs() {
  std::vector<P> out;
  const std::vector<std::string> ax = {"x", "y"};
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

// Every reshard between two specs of a rank-2 array on mesh (4, 2) (121 pairs), compiled: the
// values are eager's, and what the communicator counted is the static traffic model's, per
// collective and per device. Between them the pairs use all_gather, all_to_all,
// collective_permute and the planner's ragged exchange.
TEST(CompiledSpmd, EverySpecPairOfTheSeedMeshMovesTheModelsBytes) {
  auto m = mesh42();
  Array a = mj::testing::ramp({16, 16}, 0.25f, -3);
  Array want = a * 2.0f;
  std::set<std::string> kinds;
  const std::vector<P> specs = rank2_specs();
  ASSERT_EQ(specs.size(), 11u);
  for (const P& from : specs)
    for (const P& to : specs) {
      const std::string what = from.str() + " -> " + to.str();
      auto f = mj::jit([](const Array& x) { return x * 2.0f; }, mj::JitOptions{"reshard", {ns(m, from)}, {ns(m, to)}});
      Array x = mj::device_put(a, ns(m, from));
      mj::block_until_ready(x);
      mj::reset_collective_stats();
      Array y = f(x);
      expect_equal(y, want, 0, what);
      ASSERT_NE(f.last_run(), nullptr) << what;
      EXPECT_TRUE(y.sharding().spec().equivalent(to)) << what << ": " << y.sharding().str();
      for (auto& k : expect_counts_equal_model(*f.last_run(), what)) kinds.insert(k);
    }
  for (const char* k : {"all_gather", "all_to_all", "collective_permute", "ragged_all_to_all"})
    EXPECT_TRUE(kinds.count(k)) << k;
}

// Reductions over sharded dims: all_reduce (replicated result) and reduce_scatter (sharded
// result), a contracting dim sharded over both axes, and a psum over a sub-mesh axis.
TEST(CompiledSpmd, ReductionsUseAllReduceAndReduceScatterWithTheModelsBytes) {
  auto m = mesh42();
  Array a = mj::testing::ramp({16, 16}, 0.125f, -2);
  Array b = mj::testing::ramp({16, 8}, -0.0625f, 1);
  std::set<std::string> kinds;
  struct Prog {
    std::string what;
    P in_a, out;
    bool dot;
  };
  const std::vector<Prog> progs = {
      {"sum rows of P(x, y) -> P()", P("x", "y"), P(), false},
      {"sum rows of P(x, y) -> P(y)", P("x", "y"), P("y"), false},
      {"sum rows of P((x, y)) -> P((x, y))", P(mj::PDim({"x", "y"})), P(mj::PDim({"x", "y"})), false},
      {"dot contracting over (x, y) -> P()", P(None{}, mj::PDim({"x", "y"})), P(), true},
      {"dot contracting over x -> P(y)", P(None{}, "x"), P("y"), true},
  };
  for (const Prog& pr : progs) {
    mj::reset_collective_stats();
    Array got, want;
    if (pr.dot) {
      auto fn = [](const Array& x, const Array& w) { return mj::matmul(x, w); };
      auto f = mj::jit(fn, mj::JitOptions{"dot", {ns(m, pr.in_a), ns(m, P())}, {ns(m, pr.out)}});
      got = f(a, b);
      want = fn(a, b);
      for (auto& k : expect_counts_equal_model(*f.last_run(), pr.what)) kinds.insert(k);
    } else {
      auto fn = [](const Array& x) { return mj::sum(x, {0}); };
      auto f = mj::jit(fn, mj::JitOptions{"sum", {ns(m, pr.in_a)}, {ns(m, pr.out)}});
      got = f(a);
      want = fn(a);
      for (auto& k : expect_counts_equal_model(*f.last_run(), pr.what)) kinds.insert(k);
    }
    expect_equal(got, want, 1e-5, pr.what);
  }
  EXPECT_TRUE(kinds.count("all_reduce"));
  EXPECT_TRUE(kinds.count("reduce_scatter"));
}

// The involuntary-full-remat case (docs/cases/seed-involuntary-full-remat.md's program):
// c + (a + b) with a, b in P("y", None, "x") and the result in P(None, ("x","y"), None), f32
// [16,16,16] on mesh (4, 2). Each device keeps 1 of the 8 blocks of 64 elements it holds and
// receives the other 7: 448 elements = 1792 B (by hand), counted by the communicator.
TEST(CompiledSpmd, SeedReshardMoves1792BytesPerDeviceCountedByTheCommunicator) {
  auto m = mesh42();
  Array a = mj::testing::ramp({16, 16, 16}), b = mj::testing::ramp({16, 16, 16}, 2), c = mj::testing::ramp({16, 16, 16}, -1);
  P s1("y", None{}, "x"), s2(None{}, mj::PDim({"x", "y"}), None{});
  auto fn = [](const Array& x, const Array& y, const Array& z) { return z + (x + y); };
  auto f = mj::jit(fn, mj::JitOptions{"seed", {ns(m, s1), ns(m, s1), ns(m, s2)}, {ns(m, s2)}});
  auto compiled = f.lower(a, b, c).compile();
  ASSERT_NE(compiled.executable(), nullptr);
  mj::reset_collective_stats();
  Array out = compiled(a, b, c);
  expect_equal(out, fn(a, b, c), 0, "seed");
  for (int id = 0; id < 8; ++id) {
    EXPECT_EQ(mj::collective_stats(id).bytes_received, 1792) << id;
    EXPECT_EQ(mj::collective_stats(id).bytes_sent, 1792) << id;
  }
  Array again = f(a, b, c);  // the jit call path counts the same
  std::shared_ptr<const mj::SpmdRun> run = f.last_run();
  ASSERT_NE(run, nullptr);
  ASSERT_EQ(run->stats.collectives.size(), 1u);
  for (int64_t v : run->stats.collectives[0].bytes_received) EXPECT_EQ(v, 1792);
  expect_equal(again, out, 0, "seed again");
}

namespace {

// Restores config()'s capacities when a test leaves (also on a failed assertion).
struct CapacityGuard {
  int64_t dev = mj::config().device_memory_bytes, host = mj::config().host_memory_bytes;
  ~CapacityGuard() {
    mj::config().device_memory_bytes = dev;
    mj::config().host_memory_bytes = host;
  }
};

// Removes the communicator's test hook when a test leaves.
struct HookGuard {
  ~HookGuard() { mj::detail::set_collective_hook({}); }
};

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

std::shared_ptr<const mj::Mesh> mesh_of(std::vector<int> ids, mj::Shape shape, std::vector<std::string> names) {
  return std::make_shared<const mj::Mesh>(std::move(ids), std::move(shape), std::move(names));
}

}  // namespace

// JAX's asynchronous dispatch: a sharded call returns once its work is enqueued. With the
// communicator held back at the program's all_reduce, the call has returned and its output is
// pending; released, the output is eager's. (Were dispatch synchronous, the hook's 10 s timeout
// would release it and the pending check would fail; the test never hangs.)
TEST(CompiledSpmd, ACallReturnsBeforeItsCollectiveRunsAndItsOutputWaits) {
  HookGuard hook;
  auto m = mesh42();
  Array a = mj::testing::ramp({16, 16}, 0.5f);
  auto fn = [](const Array& x) { return mj::sum(x, {0}); };
  auto f = mj::jit(fn, mj::JitOptions{"held", {ns(m, P("x", "y"))}, {ns(m, P())}});
  mj::block_until_ready(f(a));  // compiled and run once
  std::mutex mu;
  std::condition_variable cv;
  bool release = false, entered = false;
  mj::detail::set_collective_hook([&] {
    std::unique_lock<std::mutex> g(mu);
    entered = true;
    cv.notify_all();
    cv.wait_for(g, std::chrono::seconds(10), [&] { return release; });
  });
  Array out = f(a);
  EXPECT_FALSE(out.is_ready());
  {
    std::unique_lock<std::mutex> g(mu);
    cv.wait_for(g, std::chrono::seconds(10), [&] { return entered; });
    EXPECT_TRUE(entered);
    release = true;
  }
  cv.notify_all();
  mj::block_until_ready(out);
  EXPECT_TRUE(out.is_ready());
  expect_equal(out, fn(a), 1e-5, "sum after release");
}

// No thread busy-waits: while every device of the mesh waits 100 ms at a collective the test
// hook holds back, the process uses at most 5 ms of CPU time (getrusage, measured inside the
// hook, so the dispatch itself is not counted).
TEST(CompiledSpmd, DevicesWaitingAtAHeldBackCollectiveUseNoCpu) {
  HookGuard hook;
  auto m = mesh42();
  Array a = mj::testing::ramp({16, 16});
  auto fn = [](const Array& x) { return mj::sum(x, {0}); };
  auto f = mj::jit(fn, mj::JitOptions{"idle", {ns(m, P("x", "y"))}, {ns(m, P())}});
  mj::block_until_ready(f(a));
  double cpu = -1;
  std::atomic<int> calls{0};
  mj::detail::set_collective_hook([&] {
    if (calls++ > 0) return;
    // The hook runs once every member has started: all 8 devices are waiting on their events.
    const double before = cpu_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cpu = cpu_seconds() - before;
  });
  Array out = mj::block_until_ready(f(a));
  ASSERT_GE(calls.load(), 1);
  EXPECT_GE(cpu, 0.0);
  EXPECT_LE(cpu, 0.005) << "CPU seconds used while the devices waited";
  expect_equal(out, fn(a), 1e-5, "sum");
}

// compile() refuses a program whose predicted peak exceeds config().device_memory_bytes,
// naming the peak, the capacity and the largest buffer; the jit call path refuses it at the call.
TEST(CompiledSpmd, ACapacityBelowThePeakFailsAtCompile) {
  CapacityGuard guard;
  auto m = mesh42();
  Array a = mj::testing::ramp({64, 64});
  auto fn = [](const Array& x) { return mj::sin(x) * x + mj::cos(x); };
  auto f = mj::jit(fn, mj::JitOptions{"big", {ns(m, P("x"))}, {}});
  auto lowered = f.lower(a);
  mj::config().device_memory_bytes = 1024;  // one local input alone is 16x64x4 = 4096 B
  try {
    lowered.compile();
    FAIL() << "no ResourceExhaustedError";
  } catch (const mj::ResourceExhaustedError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("predicted peak"), std::string::npos) << w;
    EXPECT_NE(w.find("capacity of 1024 B"), std::string::npos) << w;
    EXPECT_NE(w.find("largest buffer: f32[16,64]"), std::string::npos) << w;
    EXPECT_NE(w.find("4096 B"), std::string::npos) << w;
  }
  EXPECT_THROW(f(a), mj::ResourceExhaustedError);
  mj::config().device_memory_bytes = 0;
  expect_equal(f(a), fn(a), 1e-5, "unlimited again");
}

// Before a call runs, each device's bytes in use plus what the call allocates there are held
// against the capacity: with device 6 holding a buffer that leaves too little room, the call
// throws naming device 6 before anything is donated or run; freed, the same call runs.
TEST(CompiledSpmd, ACallThatWouldExceedADevicesCapacityThrowsBeforeAnythingRuns) {
  CapacityGuard guard;
  auto m = mesh_of({4, 5, 6, 7}, {4}, {"x"});
  Array a = mj::testing::ramp({16, 256});
  auto fn = [](const Array& x) { return mj::concatenate({x, x}, 1); };
  mj::JitOptions o{"grow", {ns(m, P("x"))}, {}};
  o.donate_argnums = {0};
  auto f = mj::jit(fn, o);
  Array warm = mj::block_until_ready(f(mj::device_put(a, ns(m, P("x")))));  // compiled
  Array x = mj::block_until_ready(mj::device_put(a, ns(m, P("x"))));
  const int64_t out_local = 4 * 512 * 4;  // f32[4,512] per device
  int64_t used = 0;
  for (int id : {4, 5, 6, 7}) used = std::max(used, mj::memory_stats(id, mj::MemoryKind::device).bytes_in_use);
  auto hog = std::make_shared<mj::Buffer>(size_t(2 * out_local), mj::MemoryKind::device, 6);
  mj::config().device_memory_bytes = used + 2 * out_local;  // room for the call, not beside the hog
  try {
    Array y = f(x);
    FAIL() << "no ResourceExhaustedError";
  } catch (const mj::ResourceExhaustedError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("device 6"), std::string::npos) << w;
    EXPECT_NE(w.find("f32[4,512]"), std::string::npos) << w;
    EXPECT_NE(w.find("nothing ran"), std::string::npos) << w;
    EXPECT_NE(w.find("planned peak"), std::string::npos) << w;
    EXPECT_NE(w.find("capacity of " + std::to_string(mj::config().device_memory_bytes) + " B"), std::string::npos) << w;
  }
  hog.reset();
  Array y = mj::block_until_ready(f(x));  // now it fits; x is donated by this call
  mj::config().device_memory_bytes = 0;
  expect_equal(y, fn(a), 0, "concatenate");
}

// Nothing the caller passed is lost when a capacity error is thrown: the donated argument of the
// refused call is still readable and equal to what was passed.
TEST(CompiledSpmd, ARefusedCallLeavesItsDonatedArgumentReadable) {
  CapacityGuard guard;
  auto m = mesh_of({4, 5, 6, 7}, {4}, {"x"});
  Array a = mj::testing::ramp({16, 256}, 3);
  auto fn = [](const Array& x) { return mj::concatenate({x, x}, 1); };
  mj::JitOptions o{"grow2", {ns(m, P("x"))}, {}};
  o.donate_argnums = {0};
  auto f = mj::jit(fn, o);
  mj::block_until_ready(f(mj::device_put(a, ns(m, P("x")))));
  Array x = mj::block_until_ready(mj::device_put(a, ns(m, P("x"))));
  int64_t used = 0;
  for (int id : {4, 5, 6, 7}) used = std::max(used, mj::memory_stats(id, mj::MemoryKind::device).bytes_in_use);
  mj::config().device_memory_bytes = used + 16;
  EXPECT_THROW(f(x), mj::ResourceExhaustedError);
  mj::config().device_memory_bytes = 0;
  expect_equal(x, a, 0, "the donated argument after the refused call");
}

// A program compiled for one mesh, called with arrays sharded on another, names both meshes.
TEST(CompiledSpmd, ACallOnAnotherMeshNamesBothMeshes) {
  auto m = mesh42();
  auto other = mesh_of({0, 1, 2, 3, 4, 5, 6, 7}, {2, 4}, {"x", "y"});
  Array a = mj::testing::ramp({16, 16});
  auto fn = [](const Array& x) { return x + 1.0f; };
  auto compiled = mj::jit(fn, mj::JitOptions{"meshes", {}, {}}).lower(mj::device_put(a, ns(m, P("x", "y")))).compile();
  try {
    compiled(mj::device_put(a, ns(other, P("x", "y"))));
    FAIL() << "no error";
  } catch (const mj::Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find(m->str()), std::string::npos) << w;
    EXPECT_NE(w.find(other->str()), std::string::npos) << w;
  }
}

namespace {

// A hand-written SPMD program (traced on local avals, as a user writing collectives by hand
// would) compiled for `mesh`, with the per-device inputs cut from global arrays sharded P("x").
struct HandWritten {
  std::shared_ptr<const mj::SpmdExecutable> spmd;
  std::shared_ptr<const mj::Mesh> mesh;

  std::shared_ptr<mj::SpmdCall> run(const std::vector<Array>& globals) const {
    std::vector<std::vector<Array>> dev(mesh->num_devices());
    for (const Array& g : globals) {
      auto shards = mj::local_shards(g, mj::testing::named(mesh, P("x"), int64_t(g.ndim())));
      for (size_t p = 0; p < dev.size(); ++p) dev[p].push_back(shards[p]);
    }
    return mj::execute_spmd(spmd, dev, std::source_location::current(), mj::InputNames{"hand_written"});
  }
};

HandWritten compile_hand_written(const std::function<std::vector<Array>(const std::vector<Array>&)>& f,
                                 const std::vector<mj::ShapedArray>& local_avals,
                                 std::shared_ptr<const mj::Mesh> mesh) {
  mj::ClosedJaxpr cj = mj::trace_to_jaxpr(f, local_avals);
  mj::CompileOptions co;
  co.name = "hand_written";
  co.spmd = true;
  auto exe = mj::compile_executable(*cj.jaxpr, co);
  return {mj::bind_spmd_executable(mj::loaded_of(exe), mesh, {}, std::source_location::current()), mesh};
}

}  // namespace

// A collective whose participants disagree (ragged sizes: device 1 expects 1 row from device 0,
// which sends 2) fails on every device instead of deadlocking: the error names the ranks and is
// rethrown where the output is read; the communicator is reset, so the next call runs.
TEST(CompiledSpmd, AHandWrittenCollectiveWhoseParticipantsDisagreeThrowsOnTheRead) {
  auto m = mesh_of({0, 1}, {2}, {"x"});
  HandWritten hw = compile_hand_written(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{mj::lax::ragged_all_to_all(a[0], a[1], a[2], a[3], a[4], a[5], {"x"}, 2)};
      },
      {mj::ShapedArray{{3}, mj::f32}, mj::ShapedArray{{4}, mj::f32}, mj::ShapedArray{{2}, mj::i32},
       mj::ShapedArray{{2}, mj::i32}, mj::ShapedArray{{2}, mj::i32}, mj::ShapedArray{{2}, mj::i32}},
      m);
  ASSERT_EQ(hw.spmd->sites.size(), 1u);
  auto i32 = [](std::vector<double> v) { return mj::array(v, {int64_t(v.size())}, mj::i32); };
  // Device 0's input [1,2,3]: row 0 to itself, rows 1..2 to device 1 (at its row 1); device 1's
  // [4,5,6]: row 0 to device 0 (at its row 2), row 1 to itself (as run_spmd's test of the same
  // exchange, tests/sharding/test_collectives_executor.cc): out0 = [1,-1,4,-1], out1 = [5,2,3,-2].
  std::vector<Array> good = {mj::array({1, 2, 3, 4, 5, 6}, {6}, mj::f32), mj::array({-1, -1, -1, -1, -2, -2, -2, -2}, {8}, mj::f32),
                             i32({0, 1, 0, 1}), i32({1, 2, 1, 1}), i32({0, 1, 2, 0}), i32({1, 1, 2, 1})};
  auto call = hw.run(good);
  call->done.wait();
  auto vals = [](const std::shared_ptr<mj::Buffer>& b) {
    const float* p = static_cast<const float*>(b->data());
    return std::vector<float>(p, p + 4);
  };
  EXPECT_EQ(vals(call->outputs[0][0]), (std::vector<float>{1, -1, 4, -1}));
  EXPECT_EQ(vals(call->outputs[1][0]), (std::vector<float>{5, 2, 3, -2}));
  std::vector<Array> bad = good;
  bad[5] = i32({1, 1, 1, 1});  // device 1's recv_sizes: 1 row from rank 0, which sends 2
  auto failed = hw.run(bad);
  try {
    failed->done.wait();
    FAIL() << "no error";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 sends 2 rows to rank 1"), std::string::npos) << e.what();
  }
  Array out = Array::from_buffer(mj::ShapedArray{{4}, mj::f32}, failed->outputs[1][0]);
  EXPECT_THROW(out.data<float>(), mj::ValueError);  // the read rethrows the call's error
  auto again = hw.run(good);
  again->done.wait();
  EXPECT_EQ(vals(again->outputs[1][0]), (std::vector<float>{5, 2, 3, -2}));
}

// A mesh naming a device beyond the configured count, given to the executor directly (jit checks
// this earlier): the call throws naming the id and the count before a ticket is taken, so the
// calls after it still run (a ticket never completed would stall every later call).
TEST(CompiledSpmd, AnExecutorCallOnAnUnknownDeviceThrowsAndLaterCallsRun) {
  auto program = [](const std::vector<Array>& a) { return std::vector<Array>{mj::lax::psum(a[0], {"x"}, 2)}; };
  const std::vector<mj::ShapedArray> local = {mj::ShapedArray{{2}, mj::f32}};
  HandWritten bad = compile_hand_written(program, local, mesh_of({0, 9}, {2}, {"x"}));
  try {
    bad.run({mj::array({1, 2, 3, 4}, {4}, mj::f32)});
    FAIL() << "no error";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("device 9"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("8 devices"), std::string::npos) << e.what();
  }
  HandWritten good = compile_hand_written(program, local, mesh_of({0, 1}, {2}, {"x"}));
  auto call = good.run({mj::array({1, 2, 3, 4}, {4}, mj::f32)});
  call->done.wait();
  const float* p = static_cast<const float*>(call->outputs[1][0]->data());
  EXPECT_EQ(std::vector<float>(p, p + 2), (std::vector<float>{4, 6}));  // [1,2] + [3,4]
}

// The child of the next test (skipped unless MINIJAX_EXIT_CHILD is set): sharded matmul chains
// dispatched and not waited for, then main returns while they run. MINIJAX_EXIT_CHILD=first: the
// program's very first call is not waited for either (its collectives construct the runtime's
// communicator on a device thread); =later: the first call completes before the others.
TEST(CompiledSpmdChild, ReturnsFromMainWithCallsRunning) {
  const char* mode = std::getenv("MINIJAX_EXIT_CHILD");
  if (!mode) GTEST_SKIP() << "run by CompiledSpmd.AProgramThatExitsWithCallsRunningExitsCleanly";
  auto m = mesh42();
  Array x = mj::testing::ramp({256, 256}, 1e-4f), w = mj::testing::ramp({256, 256}, -1e-4f, 0.01f);
  auto fn = [](const Array& a, const Array& b) {
    Array h = a;
    for (int k = 0; k < 4; ++k) h = mj::tanh(mj::matmul(h, b));
    return mj::sum(h);  // an all-reduce over the mesh
  };
  auto f = mj::jit(fn, mj::JitOptions{"exit_child", {ns(m, P("x")), ns(m, P())}, {}});
  if (std::string(mode) == "later") mj::block_until_ready(f(x, w));
  for (int k = 0; k < 4; ++k) f(x, w);  // not waited for
}

// A program that returns from main while sharded calls are still running exits cleanly: exit
// waits for the dispatched calls before the libraries their kernels use are destroyed (before
// this, oneDNN's JIT'ed kernels were freed under running device threads: a crash at exit in
// about 1 run in 5 of ShardedMlp.ValueAndGradEqualsTheUnshardedRun; and a program exiting during
// its first call corrupted the heap in about 1 run in 4, the communicator being destroyed under
// its collectives). Eight child processes in each mode.
TEST(CompiledSpmd, AProgramThatExitsWithCallsRunningExitsCleanly) {
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  for (const char* mode : {"first", "later"})
    for (int run = 0; run < 8; ++run) {
      const std::string cmd = std::string("MINIJAX_EXIT_CHILD=") + mode + " '" + exe +
                              "' --gtest_filter=CompiledSpmdChild.ReturnsFromMainWithCallsRunning > /dev/null 2>&1";
      const int rc = std::system(cmd.c_str());
      ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << mode << " child run " << run << ": status " << rc;
    }
}
