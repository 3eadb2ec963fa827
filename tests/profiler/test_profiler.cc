// minijax profiler tests: start_trace/stop_trace errors, and the trace files of known programs
// parsed back: kernels in as_text order, GEMM sizes, compile passes, offload copies overlapping compute.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <minijax/minijax.h>

#include "profiler/trace_reader.h"

namespace {

using mj::Array;
using trace_reader::Event;
using trace_reader::Trace;
namespace prof = mj::profiler;
namespace cp = mj::checkpoint_policies;

// Stops a trace a failed assertion left running, so the next test can start one.
struct StopGuard {
  ~StopGuard() {
    if (prof::is_tracing()) try {
        prof::stop_trace();
      } catch (...) {
      }
  }
};

// Sets config().host_link_bytes_per_s for the scope.
struct LinkGuard {
  double old = mj::config().host_link_bytes_per_s;
  explicit LinkGuard(double b) { mj::config().host_link_bytes_per_s = b; }
  ~LinkGuard() { mj::config().host_link_bytes_per_s = old; }
};

// Sets config().synchronous_copies for the scope.
struct SyncCopiesGuard {
  SyncCopiesGuard() { mj::config().synchronous_copies = true; }
  ~SyncCopiesGuard() { mj::config().synchronous_copies = false; }
};

Array ramp(mj::Shape shape, float scale) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = scale * double(i % 97) / 97.0;
  return mj::array(v, shape, mj::f32);
}

// The kernel names of a compiled program, in the order its as_text lowering lists them.
std::vector<std::string> as_text_kernels(const std::string& text) {
  std::vector<std::string> names;
  static const std::regex re(R"(\[fused loop\] fusion: (\S+))");
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) names.push_back((*it)[1]);
  return names;
}

// Events of `cat` on tid lying within `outer`.
std::vector<Event> within(const Trace& t, const Event& outer, const std::string& cat) {
  std::vector<Event> r;
  for (auto& e : t.select(cat, outer.tid))
    if (outer.contains(e)) r.push_back(e);
  return r;
}

// How many (a, b) pairs of events overlap.
int overlaps(const std::vector<Event>& as, const std::vector<Event>& bs) {
  int n = 0;
  for (auto& a : as)
    for (auto& b : bs) n += a.overlaps(b);
  return n;
}

std::vector<std::string> names_of(const std::vector<Event>& es) {
  std::vector<std::string> r;
  for (auto& e : es) r.push_back(e.name);
  return r;
}

}  // namespace

TEST(Profiler, StartWhileStartedAndStopWhileStoppedAreValueErrors) {
  StopGuard guard;
  const std::string path = trace_reader::temp_path("errors");
  EXPECT_FALSE(prof::is_tracing());
  EXPECT_THROW(prof::stop_trace(), mj::ValueError);
  prof::start_trace(path);
  EXPECT_TRUE(prof::is_tracing());
  try {
    prof::start_trace(path + ".second");
    ADD_FAILURE() << "a second start_trace did not throw";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_TRUE(prof::is_tracing());
  prof::stop_trace();
  EXPECT_FALSE(prof::is_tracing());
  EXPECT_THROW(prof::stop_trace(), mj::ValueError);
  EXPECT_FALSE(std::filesystem::exists(path + ".second"));
  // The stopped trace is a valid, empty trace.
  Trace t = trace_reader::read(path);
  EXPECT_TRUE(t.events.empty());
  EXPECT_EQ(t.other["dropped_events"].num(), 0);
  std::filesystem::remove(path);
}

TEST(Profiler, AFileThatCannotBeWrittenIsAnIOErrorNamingIt) {
  StopGuard guard;
  const std::string missing = "/nonexistent-minijax-dir/sub/trace.json";
  try {
    prof::start_trace(missing);
    ADD_FAILURE() << "start_trace into a missing folder did not throw";
  } catch (const mj::IOError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_FALSE(prof::is_tracing());
  // A file that opens but whose bytes cannot be written (a full disk): stop_trace throws, naming
  // it, and the trace is stopped all the same.
  if (std::FILE* f = std::fopen("/dev/full", "w")) {
    std::fclose(f);
    prof::start_trace("/dev/full");
    { prof::TraceAnnotation a("one event"); }
    try {
      prof::stop_trace();
      ADD_FAILURE() << "stop_trace into /dev/full did not throw";
    } catch (const mj::IOError& e) {
      EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(prof::is_tracing());
  }
  // And a new trace starts.
  const std::string path = trace_reader::temp_path("after_error");
  prof::start_trace(path);
  prof::stop_trace();
  EXPECT_NO_THROW(trace_reader::read(path));
  std::filesystem::remove(path);
}

// A program compiled before the trace: each call is a "call" event on the calling thread's track
// holding its kernels, in the order as_text lists them, and its GEMM between them with m, n, k.
TEST(Profiler, KernelsOfAKnownProgramRunInAsTextOrderWithTheirGemm) {
  StopGuard guard;
  auto fn = [](const Array& x, const Array& w) {
    Array a = mj::exp(x) * 0.5;      // a loop kernel over x
    Array m = mj::matmul(a, w);      // the GEMM: m 64, n 32, k 128
    return mj::sum(mj::tanh(m), 1);  // a reduction kernel
  };
  auto compiled = mj::jit(fn).lower(ramp({64, 128}, 1.f), ramp({128, 32}, 0.1f)).compile();
  const std::vector<std::string> kernels = as_text_kernels(compiled.as_text());
  ASSERT_EQ(kernels.size(), 2u) << compiled.as_text();
  Array x = ramp({64, 128}, 1.f), w = ramp({128, 32}, 0.1f);
  mj::block_until_ready(compiled(x, w));  // warm

  const std::string path = trace_reader::temp_path("kernels");
  prof::start_trace(path);
  for (int i = 0; i < 2; ++i) mj::block_until_ready(compiled(x, w));
  prof::stop_trace();
  Trace t = trace_reader::read(path);

  std::vector<Event> calls = t.select("call");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(t.threads.at(calls[0].tid), "main thread");  // an unsharded program runs on the calling thread
  EXPECT_EQ(calls[0].args["device"].num(), 0);
  EXPECT_TRUE(t.select("compile").empty()) << "compiled before the trace";
  for (const Event& call : calls) {
    std::vector<Event> ks = within(t, call, "kernel");
    EXPECT_EQ(names_of(ks), kernels);
    std::vector<Event> gemms = within(t, call, "gemm");
    ASSERT_EQ(gemms.size(), 1u);
    const Event& g = gemms[0];
    EXPECT_EQ(g.args["m"].num(), 64);
    EXPECT_EQ(g.args["n"].num(), 32);
    EXPECT_EQ(g.args["k"].num(), 128);
    EXPECT_EQ(g.args["dtype"].str(), "f32");
    EXPECT_EQ(g.args["flops"].num(), 2.0 * 64 * 32 * 128);
    ASSERT_EQ(ks.size(), 2u);
    EXPECT_LE(ks[0].end(), g.ts) << "exp before the product";
    EXPECT_LE(g.end(), ks[1].ts) << "the product before tanh/sum";
    // The kernels' args carry their shapes and bytes.
    EXPECT_EQ(ks[0].args["inputs"].str(), "[f32[64,128]]");
    EXPECT_EQ(ks[0].args["outputs"].str(), "[f32[64,128]]");
    EXPECT_EQ(ks[0].args["bytes_in"].num(), 64 * 128 * 4);
    EXPECT_EQ(ks[1].args["kind"].str(), "reduction");
    EXPECT_EQ(ks[1].args["outputs"].str(), "[f32[64]]");
  }
  std::filesystem::remove(path);
}

// Tracing and compiling inside the trace: the jit's trace, then the stages of jit/pipeline.cc's
// table by name, in order: the lower phase's inside the lower event, the rest inside the compile
// event.
TEST(Profiler, TracingAndEveryCompilePassAreEventsInPipelineOrder) {
  StopGuard guard;
  const std::string path = trace_reader::temp_path("compile");
  auto f = mj::jit([](const Array& a) { return mj::sin(a) * 1.2345678 + 0.25; }, "traced_in_profile");
  Array x = ramp({32}, 1.f);
  prof::start_trace(path);
  mj::ClosedJaxpr j = mj::make_jaxpr([](const Array& a) { return mj::cos(a); })(x);
  mj::block_until_ready(f(x));
  prof::stop_trace();
  Trace t = trace_reader::read(path);

  std::vector<Event> tracing = t.select("tracing");
  ASSERT_EQ(names_of(tracing), (std::vector<std::string>{"make_jaxpr", "trace jit 'traced_in_profile'"}));
  EXPECT_EQ(tracing[1].args["inputs"].str(), "[f32[32]]");
  std::vector<Event> compiles;
  for (auto& e : t.select("compile"))
    if (e.name == "compile traced_in_profile") compiles.push_back(e);
  ASSERT_EQ(compiles.size(), 1u);
  EXPECT_LE(tracing[1].end(), compiles[0].ts);
  std::vector<std::string> passes;
  for (auto& e : within(t, compiles[0], "compile"))
    if (e.name != compiles[0].name) passes.push_back(e.name);
  const std::vector<std::string> want = {
      "inline_calls", "simplify", "pack_dot_operands", "fuse", "split_copies", "coalesce_slice_copies",
      "pipeline_slice_copies", "place_copies", "rename_body_variables", "plan_buffers", "memory_analysis",
      "cost_analysis", "lower", "llvm_translate", "llvm_optimize", "llvm_codegen", "load"};
  EXPECT_EQ(passes, want);
  // The lower phase (dead code; a sharded jit's propagation and partitioning) is its own event
  // before the compile event, as jit(f).lower is.
  std::vector<Event> lowers;
  for (auto& e : t.select("compile"))
    if (e.name == "lower traced_in_profile") lowers.push_back(e);
  ASSERT_EQ(lowers.size(), 1u);
  EXPECT_LE(lowers[0].end(), compiles[0].ts);
  std::vector<std::string> lower_stages;
  for (auto& e : within(t, lowers[0], "compile"))
    if (e.name != lowers[0].name) lower_stages.push_back(e.name);
  EXPECT_EQ(lower_stages, std::vector<std::string>{"dce"});
  ASSERT_EQ(t.select("call").size(), 1u);
  EXPECT_LE(compiles[0].end(), t.select("call")[0].ts);
  std::filesystem::remove(path);
}

// grad(scan(checkpoint(step))) offloading a 256 KiB row per iteration to pinned_host over an
// emulated link (docs/offload.md): the copies are events on copy engine 0's track in both
// directions, with their bytes and kinds, and at least one of them is on the link while a kernel
// runs on the device's track (the calling thread's: the program is not sharded).
TEST(Profiler, OffloadCopiesOverlapKernelsUnderTheEmulatedLink) {
  StopGuard guard;
  LinkGuard link(1e9);  // 256 KiB in 262 us, about a row's sin kernels
  constexpr int64_t kWidth = 65536, kLength = 8;
  // Several transcendentals per element, so each iteration's kernels run longer than a copy's
  // link time and the copy engine's thread has time to be scheduled on a busy machine.
  auto step = [](const Array& y, const Array&) {
    Array h = mj::checkpoint_name(mj::tanh(mj::sin(y) * 0.9 + mj::cos(y) * 0.3), "row");
    return std::pair{mj::sin(mj::exp(h * 0.5)) + mj::cos(h) * 0.1, mj::None{}};
  };
  auto step_r = mj::checkpoint(step, {.policy = cp::save_and_offload_only_these_names(
                                          {}, {"row"}, "device", "pinned_host")});
  Array xs = mj::zeros({kLength, 1}, mj::f32);
  auto loss = [step_r, xs](const Array& p) { return mj::sum(mj::scan(step_r, p, xs).first); };
  auto g = mj::jit(mj::grad(loss));
  Array p = ramp({kWidth}, 1.f);
  mj::block_until_ready(g(p));  // compiled and warm

  const std::string path = trace_reader::temp_path("offload");
  prof::start_trace(path);
  for (int i = 0; i < 3; ++i) mj::block_until_ready(g(p));
  prof::stop_trace();
  Trace t = trace_reader::read(path);

  const int engine = t.tid_of("copy engine 0");
  ASSERT_GE(engine, 0) << "no track named 'copy engine 0'";
  std::vector<Event> copies = t.select("copy", engine);
  int offloads = 0, reloads = 0;
  for (auto& c : copies) {
    EXPECT_EQ(c.args["bytes"].num(), kWidth * 4) << c.name;
    EXPECT_EQ(c.args["chunks"].num(), 1) << c.name;
    EXPECT_TRUE(c.args["link"].boolean());
    if (c.args["src_kind"].str() == "device" && c.args["dst_kind"].str() == "pinned_host") ++offloads;
    if (c.args["src_kind"].str() == "pinned_host" && c.args["dst_kind"].str() == "device") ++reloads;
  }
  EXPECT_GE(offloads, kLength) << "one row per forward iteration, per call";
  EXPECT_GE(reloads, kLength) << "one row per backward iteration, per call";
  EXPECT_EQ(offloads + reloads, int(copies.size()));

  std::vector<Event> calls = t.select("call");
  ASSERT_EQ(calls.size(), 3u);
  const int device = calls[0].tid;
  std::vector<Event> compute = t.select("kernel", device);
  for (auto& e : t.select("gemm", device)) compute.push_back(e);
  ASSERT_FALSE(compute.empty());
  EXPECT_GT(overlaps(copies, compute), 0) << copies.size() << " copies, " << compute.size() << " kernels: none overlaps";
  // The device's waits at copy_done, if any, are on its track.
  for (auto& w : t.select("copy_wait")) EXPECT_EQ(w.tid, device);

  // The control: with synchronous copies (each waited for at its start) the same program's
  // copies overlap none of its kernels, so the check above is not vacuous.
  {
    SyncCopiesGuard sync_copies;
    prof::start_trace(path);
    mj::block_until_ready(g(p));
    prof::stop_trace();
  }
  Trace sync = trace_reader::read(path);
  ASSERT_EQ(sync.select("call").size(), 1u);
  std::vector<Event> sync_copies = sync.select("copy", sync.tid_of("copy engine 0"));
  std::vector<Event> sync_compute = sync.select("kernel", sync.select("call")[0].tid);
  EXPECT_EQ(int(sync_copies.size()), 2 * kLength);
  EXPECT_FALSE(sync_compute.empty());
  EXPECT_EQ(overlaps(sync_copies, sync_compute), 0);
  std::filesystem::remove(path);
}

// A sharded program on mesh (4, 2): a track per device thread with its call, kernels and
// collectives (op, group, bytes), and the communicator's track with each collective it moved.
TEST(Profiler, ShardedProgramHasATrackPerDeviceAndTheCommunicatorsCollectives) {
  StopGuard guard;
  auto mesh = std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, mj::Shape{4, 2},
                                               std::vector<std::string>{"x", "y"});
  auto ns = [&](mj::P spec) { return mj::NamedSharding{mesh, std::move(spec), mj::MemoryKind::device}; };
  auto f = mj::jit([](const Array& x) { return mj::sum(mj::exp(x) * 2.0, {0}); },
                   mj::JitOptions{"sharded_sum", {ns(mj::P("x", "y"))}, {ns(mj::P())}});
  Array x = ramp({16, 16}, 1.f);
  mj::block_until_ready(f(x));

  const std::string path = trace_reader::temp_path("sharded");
  prof::start_trace(path);
  mj::block_until_ready(f(x));
  prof::stop_trace();
  Trace t = trace_reader::read(path);

  for (int d = 0; d < 8; ++d) {
    const int tid = t.tid_of("device " + std::to_string(d));
    ASSERT_GE(tid, 0) << "no track for device " << d;
    std::vector<Event> calls = t.select("call", tid);
    ASSERT_EQ(calls.size(), 1u) << "device " << d;
    EXPECT_EQ(calls[0].args["device"].num(), d);
    EXPECT_FALSE(within(t, calls[0], "kernel").empty()) << "device " << d;
    std::vector<Event> colls = within(t, calls[0], "collective");
    ASSERT_FALSE(colls.empty()) << "device " << d;
    for (auto& c : colls) {
      EXPECT_FALSE(c.args["op"].str().empty());
      EXPECT_NE(c.args["group"].str().find(std::to_string(d)), std::string::npos) << c.args["group"].str();
      EXPECT_GE(c.args["bytes_received"].num(), 0);
    }
  }
  const int comm = t.tid_of("communicator");
  ASSERT_GE(comm, 0);
  std::vector<Event> moved = t.select("collective", comm);
  ASSERT_FALSE(moved.empty());
  double bytes = 0;
  for (auto& c : moved) {
    EXPECT_EQ(c.args["group"].str().front(), '[');
    bytes += c.args["bytes"].num();
  }
  EXPECT_GT(bytes, 0);
  std::filesystem::remove(path);
}

// Only what runs between start and stop is recorded; TraceAnnotations nest and their names are
// escaped in the JSON.
TEST(Profiler, OnlyEventsInsideTheTraceAreRecordedAndAnnotationsNest) {
  StopGuard guard;
  auto f = mj::jit([](const Array& a) { return a * 3.0 + 1.0; });
  Array x = ramp({8}, 1.f);
  {
    prof::TraceAnnotation before("before the trace");
    mj::block_until_ready(f(x));
  }
  const std::string path = trace_reader::temp_path("annotations");
  const std::string odd = "step \"1\"\n\\ tab\t";
  prof::start_trace(path);
  {
    prof::TraceAnnotation outer(odd);
    prof::TraceAnnotation inner("inner");
  }
  prof::stop_trace();
  mj::block_until_ready(f(x));  // after the trace
  Trace t = trace_reader::read(path);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].name, odd);
  EXPECT_EQ(t.events[1].name, "inner");
  EXPECT_EQ(t.events[0].cat, "user");
  EXPECT_TRUE(t.events[0].contains(t.events[1]));
  EXPECT_GE(t.events[0].ts, 0);
  std::filesystem::remove(path);
}

// Threads record while traces start and stop: every file parses, and holds only events of
// threads that were recording, each within its trace.
TEST(Profiler, ThreadsRecordingWhileTracesStartAndStopGiveValidFiles) {
  StopGuard guard;
  auto f = mj::jit([](const Array& a) { return mj::tanh(a) + 0.5; });
  Array x = ramp({16}, 1.f);
  mj::block_until_ready(f(x));
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int k = 0; k < 3; ++k)
    threads.emplace_back([&, k] {
      while (!done.load()) {
        prof::TraceAnnotation a("worker " + std::to_string(k));
        mj::block_until_ready(f(x));
      }
    });
  std::vector<std::string> paths;
  for (int round = 0; round < 4; ++round) {
    paths.push_back(trace_reader::temp_path("threads_" + std::to_string(round)));
    prof::start_trace(paths.back());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    prof::stop_trace();
  }
  done = true;
  for (auto& th : threads) th.join();
  for (auto& path : paths) {
    Trace t = trace_reader::read(path);
    for (auto& e : t.events) {
      EXPECT_GE(e.ts, 0) << e.name;
      EXPECT_GE(e.dur, 0) << e.name;
      EXPECT_TRUE(e.cat == "user" || e.cat == "call" || e.cat == "kernel") << e.cat;
      EXPECT_EQ(t.threads.at(e.tid).rfind("host thread ", 0), 0u) << t.threads.at(e.tid);
    }
    std::filesystem::remove(path);
  }
}
