// Tests of the host-offload stages (memory/: split_copies, coalesce_slice_copies,
// pipeline_slice_copies, place_copies; memtest::schedule_offloads runs them in the pipeline's
// order): device_puts between memory kinds split into copy_start / copy_done, where each half is
// placed (a reload of an offload's copy_done included), loops' slice copies coalesced and
// pipelined, values against eager, the compiled program, and the "# host offload" report of
// as_text against what the copy engine moves.
#include <gtest/gtest.h>

#include <cmath>

#include <minijax/minijax.h>

#include "core/config.h"
#include "jit/runtime/copy_engine.h"
#include "memory/coalesce_slice_copies.h"
#include "tests/memory/memory_helpers.h"

namespace {

using mj::Array;

using memtest::fused;

// The index of the first equation of `j` named `prim` at or after `from` (size when none).
size_t index_of(const mj::Jaxpr& j, const std::string& prim, size_t from = 0) {
  for (size_t k = from; k < j.eqns.size(); ++k)
    if (j.eqns[k].primitive->name == prim) return k;
  return j.eqns.size();
}

size_t count(const mj::Jaxpr& j, const std::string& prim) {
  size_t n = 0;
  for (auto& e : j.eqns) n += e.primitive->name == prim;
  return n;
}

// An activation offloaded after its producer, four matmuls of compute, then reloaded and read.
Array offload_program(const Array& x, const Array& w) {
  Array a = mj::tanh(mj::matmul(x, w));
  Array h = mj::device_put(a, "pinned_host");
  Array y = x;
  for (int k = 0; k < 4; ++k) y = mj::matmul(y, w);
  Array back = mj::device_put(h, "device");
  return y + back;
}

struct LinkGuard {
  double was = mj::config().host_link_bytes_per_s;
  ~LinkGuard() { mj::config().host_link_bytes_per_s = was; }
};

}  // namespace

// Each device_put between kinds becomes a copy_start right after its operand's producer (the
// offload) or as late as hiding allows (the reload), and a copy_done that takes the source as
// an operand; the offload completes before the reload starts, the reload before its reader.
TEST(ScheduleOffloads, SplitsEachCopyAndPlacesItsHalves) {
  Array x = mj::random::uniform(mj::random::PRNGKey(1), {64, 64}, mj::f32, -1.0, 1.0);
  Array w = mj::random::uniform(mj::random::PRNGKey(2), {64, 64}, mj::f32, -0.2, 0.2);
  LinkGuard guard;
  mj::config().host_link_bytes_per_s = 1e9;  // a 16 KiB copy: 16 us, about one 64^3 matmul
  mj::Jaxpr j = fused(offload_program, x, w);
  ASSERT_EQ(count(j, "device_put"), 2u) << j;
  mj::Jaxpr s = memtest::schedule_offloads(j);
  EXPECT_NO_THROW(mj::verify_jaxpr(s)) << s;
  EXPECT_EQ(count(s, "device_put"), 0u) << s;
  ASSERT_EQ(count(s, "copy_start"), 2u) << s;
  ASSERT_EQ(count(s, "copy_done"), 2u) << s;
  const size_t off_start = index_of(s, "copy_start"), off_done = index_of(s, "copy_done");
  const size_t re_start = index_of(s, "copy_start", off_start + 1), re_done = index_of(s, "copy_done", off_done + 1);
  // The offload starts right after the tanh fusion that produces its operand.
  ASSERT_GT(off_start, 0u);
  const mj::Var src = std::get<mj::Var>(s.eqns[off_start].inputs[0]);
  bool produced_just_before = false;
  for (auto& o : s.eqns[off_start - 1].outputs) produced_just_before = produced_just_before || o == src;
  EXPECT_TRUE(produced_just_before) << s;
  // Its done comes after some compute, and before the reload starts; the reload's done is
  // right before the add that reads it.
  EXPECT_GT(off_done, off_start + 1) << s;
  EXPECT_LT(off_done, re_start) << s;
  EXPECT_LT(re_start, re_done) << s;
  const mj::Var back = s.eqns[re_done].outputs[0];
  bool read_next = false;
  for (auto& a : s.eqns[re_done + 1].inputs) read_next = read_next || (std::holds_alternative<mj::Var>(a) && std::get<mj::Var>(a) == back);
  EXPECT_TRUE(read_next) << s;
  // copy_done keeps the source alive: its second operand is the copy_start's operand.
  EXPECT_EQ(std::get<mj::Var>(s.eqns[off_done].inputs[1]), src);
  // Values: the scheduled program evaluates as the unscheduled one.
  auto args = std::vector<Array>{x, w};
  auto want = mj::eval_jaxpr(j, {}, args), got = mj::eval_jaxpr(s, {}, args);
  ASSERT_EQ(got.size(), want.size());
  for (int64_t i = 0; i < want[0].size(); ++i) ASSERT_EQ(got[0].data<float>()[i], want[0].data<float>()[i]) << i;
}

// Compiled: the program's copies run on device 0's copy engine (counted there) and its value is
// eager's; as_text() shows the two halves.
TEST(ScheduleOffloads, CompiledCopiesRunAsynchronouslyOnTheEngine) {
  Array x = mj::random::uniform(mj::random::PRNGKey(3), {64, 64}, mj::f32, -1.0, 1.0);
  Array w = mj::random::uniform(mj::random::PRNGKey(4), {64, 64}, mj::f32, -0.2, 0.2);
  auto f = mj::jit(offload_program, "offload");
  auto compiled = f.lower(x, w).compile();
  const std::string text = compiled.as_text();
  EXPECT_NE(text.find("copy_start"), std::string::npos) << text;
  EXPECT_NE(text.find("mj_rt_copy_done"), std::string::npos) << text;
  const mj::CopyEngineStats before = mj::copy_engine(0).stats();
  Array got = compiled(x, w);
  const mj::CopyEngineStats after = mj::copy_engine(0).stats();
  EXPECT_EQ(after.copies - before.copies, 2);
  EXPECT_EQ(after.bytes - before.bytes, 2 * 64 * 64 * 4);
  Array want = offload_program(x, w);
  for (int64_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-4 * (1 + std::fabs(want.data<float>()[i]))) << i;
}

// ---- loops: the seed program's stacked host buffer, coalescing, pipelining --------------------

namespace {

namespace cp = mj::checkpoint_policies;

// The seed's loss (docs/cases/seed-offload-in-scan.md, docs/offload.md) on a carry of `width`
// floats over `length` iterations: the step's named value "save_remat" is offloaded to
// pinned_host.
auto seed_loss(int width, int length) {
  (void)width;
  auto policy = cp::save_and_offload_only_these_names({}, {"save_remat"}, "device", "pinned_host");
  auto step = [](const Array& y, const Array&) {
    return std::pair{mj::sin(mj::checkpoint_name(mj::sin(y), "save_remat")), mj::None{}};
  };
  const Array xs = mj::zeros({length, 0}, mj::f32);
  return [=](const Array& p) { return mj::sum(mj::scan(mj::checkpoint(step, {.policy = policy}), p, xs).first); };
}

struct CopyCount {
  int64_t copies = 0, bytes = 0;
};

// The gradient of seed_loss compiled, its as_text, and what device 0's copy engine moved for it.
struct SeedRun {
  std::string text;
  CopyCount moved;
  Array grad, eager;
};

SeedRun run_seed(int width, int length) {
  SeedRun r;
  const Array p = mj::ones({width}, mj::f32);
  auto compiled = mj::jit(mj::grad(seed_loss(width, length))).lower(p).compile();
  r.text = compiled.as_text();
  const mj::CopyEngineStats before = mj::copy_engine(0).stats();
  r.grad = compiled(p);
  mj::block_until_ready(r.grad);
  const mj::CopyEngineStats after = mj::copy_engine(0).stats();
  r.moved = {after.copies - before.copies, after.bytes - before.bytes};
  r.eager = mj::grad(seed_loss(width, length))(p);
  // as_text's static count of the copies that move bytes is what the engine counted.
  const std::string total = "copy site(s), " + std::to_string(r.moved.copies) + " copies of " +
                            std::to_string(r.moved.bytes) + " B per call";
  EXPECT_NE(r.text.find(total), std::string::npos) << total << "\n" << r.text;
  return r;
}

// Equal to float32 rounding: the compiled transcendentals and eager's differ by an ulp or two, and
// a gradient through a dozen steps gathers a few of them (relative 2e-6, ~16 ulps).
void expect_equal(const Array& got, const Array& want) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-6 + 2e-6 * std::fabs(want.data<float>()[i])) << i;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

// The seed itself (f32[3] rows of 12 bytes, 2 iterations): the rows are coalesced, k = 2 slices
// per copy, one copy to the host after the forward loop and one back before the backward loop;
// the gradient is the published 0.2059352 per element.
TEST(ScheduleOffloadsLoops, SeedRowsAreCoalescedIntoOneCopyEachWay) {
  SeedRun r = run_seed(3, 2);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(r.grad.data<float>()[i], 0.2059352, 1e-7);
  EXPECT_NE(r.text.find("f32<pinned_host>[1,2,3] = allocate_buffer"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("host buffer f32<pinned_host>[1,2,3]: 24 B"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("copy_update_start device -> pinned_host: 24 B per copy, k=2 slices per copy"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("copy_slice_start pinned_host -> device: 24 B per copy, k=2 slices per copy"),
            std::string::npos)
      << r.text;
  // The inner loops run the original body twice; the copies sit in the outer ones (length 1),
  // whose pipelined indices past the ends copy nothing: 2 copies of 24 B moved.
  EXPECT_EQ(r.moved.copies, 2);
  EXPECT_EQ(r.moved.bytes, 48);
}

// At a carry of 4096 floats (16 KiB rows) nothing is coalesced: one copy each way per iteration.
// The forward loop copies the previous iteration's row (its first iteration has none) and the
// last row after the loop; the backward loop loads the first row before it and prefetches the
// next one in each iteration but the last: 2 x length copies of 16 KiB.
TEST(ScheduleOffloadsLoops, WideRowsMoveOneCopyPairPerIteration) {
  const int length = 8;
  SeedRun r = run_seed(4096, length);
  expect_equal(r.grad, r.eager);
  EXPECT_NE(r.text.find("host buffer f32<pinned_host>[8,4096]: 131072 B"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("copy_update_start device -> pinned_host: 16384 B per copy, k=1 slice per copy, 8 times, "
                        "7 moving bytes (scan(length=8))"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("copy_slice_start pinned_host -> device: 16384 B per copy, k=1 slice per copy, 8 times, "
                        "7 moving bytes (scan(length=8, reverse))"),
            std::string::npos)
      << r.text;
  EXPECT_EQ(r.moved.copies, 2 * length);
  EXPECT_EQ(r.moved.bytes, 2 * length * 16384);
}

// 1000 iterations of 12-byte rows: k is the smallest divisor of 1000 with k x 12 >= 4096 (342
// needed: 500), so each way moves 2 copies of 6000 B, out of 1000 rows.
TEST(ScheduleOffloadsLoops, ManyTinyRowsAreCoalescedByADivisorOfTheLength) {
  EXPECT_EQ(mj::coalesce_factor(1000, 12, 4096), 500);
  EXPECT_EQ(mj::coalesce_factor(2, 12, 4096), 2);          // the whole stack is under 4 KiB
  EXPECT_EQ(mj::coalesce_factor(1000, 16384, 4096), 1);    // rows above the threshold
  EXPECT_EQ(mj::coalesce_factor(997, 12, 4096), 997);      // a prime under 4 x 342: one copy of all
  EXPECT_EQ(mj::coalesce_factor(2003, 12, 4096), 1);       // a prime over it: per iteration
  EXPECT_EQ(mj::coalesce_factor(1024, 12, 4096), 512);     // 512 <= 4 x 342
  SeedRun r = run_seed(3, 1000);
  expect_equal(r.grad, r.eager);
  EXPECT_NE(r.text.find("k=500 slices per copy"), std::string::npos) << r.text;
  EXPECT_EQ(r.moved.copies, 4);
  EXPECT_EQ(r.moved.bytes, 2 * 1000 * 12);
}

// Reverse scans and every small length: compiled values equal eager's, whatever k and the
// pipelined indices (docs/cases/offload-reverse-order.md: reading rows in the wrong order
// changes d/dxs).
TEST(ScheduleOffloadsLoops, ForwardAndReverseLoopsOfEveryLengthMatchEager) {
  auto policy = cp::save_and_offload_only_these_names({}, {"h"}, "device", "pinned_host");
  // Lengths 0-7 of 4-byte rows (coalesced: k = the length) and two lengths of 4 KiB rows (per
  // iteration, pipelined), forward and reverse.
  const std::vector<std::pair<int, int>> cases = {{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1},
                                                  {6, 1}, {7, 1}, {2, 1024}, {5, 1024}};
  for (bool reverse : {false, true})
    for (auto [n, width] : cases) {
      {
        auto loss = [=](const Array& c0, const Array& xs) {
          auto body = [](const Array& c, const Array& x) {
            Array h = mj::checkpoint_name(mj::sin(c * (1.0 + x)), "h");
            Array next = mj::tanh(h);
            return std::pair{next, next};
          };
          auto [c, ys] = mj::scan(mj::checkpoint(body, {.policy = policy}), c0, xs, {.reverse = reverse});
          return mj::sum(c) + mj::sum(ys * ys);
        };
        const Array c0 = mj::full({width}, 0.7, mj::f32);
        const Array xs = mj::random::uniform(mj::random::PRNGKey(uint64_t(n + 1)), {n, width}, mj::f32, 0.0, 1.0);
        auto g = mj::grad(loss, mj::argnums<0, 1>);
        auto [ec, ex] = g(c0, xs);
        auto [jc, jx] = mj::jit(g)(c0, xs);
        SCOPED_TRACE("n=" + std::to_string(n) + " width=" + std::to_string(width) + (reverse ? " reverse" : ""));
        expect_equal(jc, ec);
        expect_equal(jx, ex);
      }
    }
}

// A scan nested in a scan, the inner one offloading: the outer loop stacks the inner stacks
// ([outer, inner, row] in pinned_host). The compiled gradients are bitwise those of the same
// program compiled with everything_saveable (the same kernels; only where the residual is kept
// differs), and eager's to float32 rounding (compiled sin/cos differ from eager's by an ulp, and
// twelve steps gather them: relative 1e-5).
TEST(ScheduleOffloadsLoops, NestedScansOffloadIntoOneStackedHostBuffer) {
  auto loss_with = [](mj::PolicyPtr policy) {
    auto inner = [policy](const Array& c, const Array& x) {
      auto body = [](const Array& h, const Array& w) {
        Array a = mj::checkpoint_name(mj::sin(h * w), "a");
        return std::pair{mj::cos(a) + h, mj::None{}};
      };
      return std::pair{mj::scan(mj::checkpoint(body, {.policy = policy}), c, x).first, mj::None{}};
    };
    return [inner](const Array& c0, const Array& xs) { return mj::sum(mj::scan(inner, c0, xs).first); };
  };
  const Array c0 = mj::full({2048}, 0.3, mj::f32);
  const Array xs = mj::random::uniform(mj::random::PRNGKey(5), {3, 4, 2048}, mj::f32, 0.5, 1.0);
  auto g = mj::grad(loss_with(cp::save_and_offload_only_these_names({}, {"a"}, "device", "pinned_host")),
                    mj::argnums<0, 1>);
  auto g_saved = mj::grad(loss_with(cp::everything_saveable()), mj::argnums<0, 1>);
  auto compiled = mj::jit(g).lower(c0, xs).compile();
  const std::string text = compiled.as_text();
  EXPECT_NE(text.find("f32<pinned_host>[3,4,2048]"), std::string::npos) << text;
  EXPECT_NE(text.find("(scan(length=4) in scan(length=3))"), std::string::npos) << text;
  auto [jc, jx] = compiled(c0, xs);
  auto [sc, sx] = mj::jit(g_saved)(c0, xs);
  for (int64_t i = 0; i < sc.size(); ++i) ASSERT_EQ(jc.data<float>()[i], sc.data<float>()[i]) << i;
  for (int64_t i = 0; i < sx.size(); ++i) ASSERT_EQ(jx.data<float>()[i], sx.data<float>()[i]) << i;
  auto [ec, ex] = g(c0, xs);
  for (int64_t i = 0; i < ex.size(); ++i)
    ASSERT_NEAR(jx.data<float>()[i], ex.data<float>()[i], 1e-5 * (1 + std::fabs(ex.data<float>()[i]))) << i;
  for (int64_t i = 0; i < ec.size(); ++i)
    ASSERT_NEAR(jc.data<float>()[i], ec.data<float>()[i], 1e-5 * (1 + std::fabs(ec.data<float>()[i]))) << i;
}

// Slice copies along an inner axis are strided (one chunk per index of the leading axes), in
// both directions, and an index outside the buffer copies nothing (zeros for a slice read):
// compiled against the primitives' eager rules.
TEST(ScheduleOffloadsLoops, StridedSliceCopiesMatchTheirEagerRules) {
  auto f = [](const Array& x, const Array& u, const Array& i) {
    const mj::Params read{{"memory_kind", mj::MemoryKind::device}, {"axis", int64_t(1)}, {"slices", int64_t(1)}};
    Array h = mj::bind1("copy_slice_start", {x, i}, read);
    Array s = mj::bind1("copy_done", {h, x});
    Array r = mj::bind1("copy_update_start", {x, u, i}, mj::Params{{"axis", int64_t(1)}, {"slices", int64_t(1)}});
    Array w = mj::bind1("copy_done", {r, u});
    return std::pair{s * 2.0, w};
  };
  const Array x = mj::device_put(mj::random::normal(mj::random::PRNGKey(9), {3, 5, 4}), "pinned_host");
  const Array u = mj::random::normal(mj::random::PRNGKey(10), {3, 4});
  auto compiled = mj::jit(f).lower(x, u, mj::scalar(0, mj::i32)).compile();
  const std::string text = compiled.as_text();
  EXPECT_NE(text.find("strided: 3 chunks of 16 B"), std::string::npos) << text;
  for (int32_t i : {0, 2, 4, 5, -1}) {
    auto [es, ew] = f(x, u, mj::scalar(i, mj::i32));
    auto [js, jw] = compiled(x, u, mj::scalar(i, mj::i32));
    SCOPED_TRACE("index " + std::to_string(i));
    expect_equal(js, es);
    expect_equal(mj::device_put(jw, "device"), mj::device_put(ew, "device"));
    if (i < 0 || i >= 5)
      for (int64_t k = 0; k < es.size(); ++k) ASSERT_EQ(es.data<float>()[k], 0.0f);
  }
}

// ---- the configuration: coalescing threshold, prefetch budget, synchronous copies ------------

// offload_coalesce_bytes = 0 turns coalescing off: the seed's two 12-byte rows then move one per
// copy (4 copies of 12 B), against 2 copies of 24 B by default (k = 2).
TEST(ScheduleOffloadsConfig, CoalescingFollowsOffloadCoalesceBytes) {
  struct Restore {
    int64_t was = mj::config().offload_coalesce_bytes;
    ~Restore() { mj::config().offload_coalesce_bytes = was; }
  } restore;
  mj::config().offload_coalesce_bytes = 0;
  SeedRun off = run_seed(3, 2);
  expect_equal(off.grad, off.eager);
  EXPECT_EQ(off.moved.copies, 4);
  EXPECT_EQ(off.moved.bytes, 4 * 12);
  EXPECT_EQ(off.text.find("k=2"), std::string::npos) << off.text;
  mj::config().offload_coalesce_bytes = 4096;
  SeedRun on = run_seed(3, 2);
  EXPECT_EQ(on.moved.copies, 2);
  EXPECT_EQ(on.moved.bytes, 2 * 24);
}

// The prefetch budget bounds a reload's lookahead: a host input reloaded after eight matmuls may
// start as early as its input exists; with the default budget it starts behind the matmuls that
// hide it (16 KiB at 1 GB/s: 16 us, three or four 64^3 matmuls by the estimate), with a budget
// below its bytes it cannot start ahead of its done (it starts right before it).
TEST(ScheduleOffloadsConfig, APrefetchBudgetBelowTheCopyRemovesTheLookahead) {
  auto program = [](const Array& xh, const Array& w) {
    Array y = w;
    for (int k = 0; k < 8; ++k) y = mj::matmul(y, w);
    return y + mj::device_put(xh, "device");
  };
  Array xh = mj::device_put(mj::random::uniform(mj::random::PRNGKey(1), {64, 64}, mj::f32, -1.0, 1.0), "pinned_host");
  Array w = mj::random::uniform(mj::random::PRNGKey(2), {64, 64}, mj::f32, -0.2, 0.2);
  LinkGuard guard;
  struct Restore {
    int64_t was = mj::config().offload_prefetch_bytes;
    ~Restore() { mj::config().offload_prefetch_bytes = was; }
  } restore;
  mj::config().host_link_bytes_per_s = 1e9;
  const mj::Jaxpr j = fused(program, xh, w);
  auto reload_gap = [&] {
    mj::Jaxpr s = memtest::schedule_offloads(j);
    return index_of(s, "copy_done") - index_of(s, "copy_start");  // equations from start to done
  };
  const size_t with_default = reload_gap();
  mj::config().offload_prefetch_bytes = 1024;  // below the 16 KiB reload
  EXPECT_EQ(reload_gap(), 1u);
  EXPECT_GT(with_default, 2u);
  EXPECT_LT(with_default, 9u) << "as late as hiding allows, not at the program's start";
}

// synchronous_copies: the same compiled program waits at every copy's start (the engine counts a
// device wait for each copy, of at least its link time), and computes the same values.
TEST(ScheduleOffloadsConfig, SynchronousCopiesWaitAtEveryStart) {
  LinkGuard guard;
  struct Restore {
    ~Restore() { mj::config().synchronous_copies = false; }
  } restore;
  mj::config().host_link_bytes_per_s = 1e7;  // 16 KiB: 1.6 ms per copy
  const int length = 4;
  const Array p = mj::ones({4096}, mj::f32);
  auto compiled = mj::jit(mj::grad(seed_loss(4096, length))).lower(p).compile();
  const Array overlapped = compiled(p);
  mj::config().synchronous_copies = true;
  const mj::CopyEngineStats before = mj::copy_engine(0).stats();
  const Array sync = compiled(p);
  mj::block_until_ready(sync);
  const mj::CopyEngineStats after = mj::copy_engine(0).stats();
  EXPECT_EQ(after.copies - before.copies, 2 * length);
  EXPECT_EQ(after.device_waits - before.device_waits, 2 * length);
  EXPECT_GE(after.device_wait_seconds - before.device_wait_seconds, 2 * length * 16384 / 1e7);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(sync.data<float>()[i], overlapped.data<float>()[i]) << i;
}

// ---- placement: a reload whose source is an offload's copy_done -------------------------------
//
// An offload's copy_done must come before every reader of its value, copies included. When the
// only reader is another copy (the reload device_put(device_put(x, host), device), or a residual
// reloaded without an optimization_barrier in between), the done, then the reload's start and
// done, must still come before the computing equations that read the reload: placed after them,
// the compiled code at the top level reads an uninitialized buffer, and in a body the buffer
// planner throws.

namespace {

using mj::Array;
namespace cp = mj::checkpoint_policies;

Array to_host(const Array& x) { return mj::device_put(x, "pinned_host"); }
Array to_device(const Array& x) { return mj::device_put(x, "device"); }

void expect_close(const Array& got0, const Array& want0, double tol = 2e-6) {
  const Array got = mj::astype(to_device(got0), mj::f32), want = mj::astype(to_device(want0), mj::f32);
  ASSERT_EQ(got.shape(), want.shape());
  double scale = 0;
  for (int64_t i = 0; i < want.size(); ++i) scale = std::max(scale, double(std::fabs(want.data<float>()[i])));
  for (int64_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], tol * (1 + scale)) << "element " << i;
}

}  // namespace

// x -> device_put(device_put(x, pinned_host), device) * 2: the value must be 2x.
TEST(OffloadPlacement, RoundTripThroughHostAtTopLevelMatchesEager) {
  auto f = [](const Array& q) { return to_device(to_host(q)) * 2.0; };
  const Array x = mj::random::uniform(mj::random::PRNGKey(1), {1024}, mj::f32, -1.0, 1.0);
  expect_close(mj::jit(f)(x), f(x));
}

// The scheduled round trip stays topologically ordered: the fusion reading the reload comes after
// the reload's copy_done.
TEST(OffloadPlacement, ScheduledRoundTripIsAValidJaxpr) {
  auto f = [](const Array& q) { return to_device(to_host(q)) * 2.0; };
  mj::Jaxpr s = memtest::schedule_offloads(memtest::fused(f, mj::ones({1024})));
  EXPECT_NO_THROW(mj::verify_jaxpr(s)) << s;
}

// A checkpoint with an offloading policy and prevent_cse = false (no optimization_barrier between
// the forward offload and the backward reload): jit(grad) equals eager grad in each of three runs
// (a reader placed before the reload's copy_done reads an uninitialized buffer, so a misplacement
// shows as an error that varies from run to run).
TEST(OffloadPlacement, OffloadPolicyWithoutPreventCseGradientMatchesEager) {
  const Array x = mj::random::uniform(mj::random::PRNGKey(1), {256, 256}, mj::f32, -1.0, 1.0);
  const Array w = mj::random::uniform(mj::random::PRNGKey(2), {256, 256}, mj::f32, -0.1, 0.1);
  auto block = mj::checkpoint(
      [](const Array& x, const Array& w) { return mj::tanh(mj::matmul(mj::tanh(mj::matmul(x, w)), w)); },
      {.policy = cp::offload_dot_with_no_batch_dims("device", "pinned_host"), .prevent_cse = false});
  auto g = mj::grad([&](const Array& w) { return mj::sum(block(x, w)); });
  const Array want = g(w);
  for (int run = 0; run < 3; ++run) expect_close(mj::jit(g)(w), want, 1e-5);
}

// The same round trip inside a cond branch and a fori_loop body compiles and equals eager (in a
// body, a misplaced copy_done makes the buffer planner throw "buffer plan: no location for a value
// of type f32[1024] (values inside fusions have none)").
TEST(OffloadPlacement, RoundTripThroughHostInsideBodiesCompiles) {
  const Array x = mj::random::uniform(mj::random::PRNGKey(3), {1024}, mj::f32, -1.0, 1.0);
  auto in_cond = [](const Array& p) {
    return mj::cond(mj::sum(p) > -1e9, [](const Array& q) { return to_device(to_host(q * 3.0)) * 2.0; },
                    [](const Array& q) { return q; }, p);
  };
  auto in_fori = [](const Array& p) {
    return mj::fori_loop(0, 5, [](const Array&, const Array& c) { return to_device(to_host(mj::sin(c))) + c; }, p);
  };
  Array got;
  ASSERT_NO_THROW(got = mj::jit(in_cond)(x));
  expect_close(got, in_cond(x));
  ASSERT_NO_THROW(got = mj::jit(in_fori)(x));
  expect_close(got, in_fori(x));
}

// ---- pipelining: an offloaded ys whose device source is a reloaded xs slice -------------------
//
// pipeline_slice_copies carries each offload's device source (a variable of the original body)
// into the next iteration; when that source is the copy_done of a reload, which strip_slice_copies
// replaces, the carried variable must be the replacement, or the new body returns an undefined
// variable and the planner throws. Rows that are not coalesced take this path (4 KiB rows and up,
// and lengths 0 and 1).
TEST(OffloadPipelining, ReloadedSliceOffloadedAgainCompiles) {
  const Array p = mj::random::uniform(mj::random::PRNGKey(4), {4096}, mj::f32, -1.0, 1.0);
  const Array xh = to_host(mj::random::uniform(mj::random::PRNGKey(5), {3, 4096}, mj::f32, -1.0, 1.0));
  auto f = [](const Array& p, const Array& xh) {
    return mj::scan([](const Array& c, const Array& x) { return std::pair{c + 1.0, to_host(to_device(x))}; }, p, xh);
  };
  auto want = f(p, xh);
  std::pair<Array, Array> got;
  ASSERT_NO_THROW(got = mj::jit(f)(p, xh));
  expect_close(got.first, want.first);
  expect_close(got.second, want.second);
}

// ---- the "# host offload" report against the copy engine's counters --------------------------

namespace {

// The report line "..., N copies of B B per call" and what device 0's engine moved in one call.
struct ReportAndEngine {
  std::string line;
  int64_t copies = 0, bytes = 0;
};

template <class F, class... A>
ReportAndEngine report_and_engine(F f, const A&... a) {
  auto compiled = mj::jit(f).lower(a...).compile();
  const std::string text = compiled.as_text();
  ReportAndEngine r;
  const size_t at = text.find("# host offload");
  if (at != std::string::npos) r.line = text.substr(at, text.find('\n', at) - at);
  const mj::CopyEngineStats before = mj::copy_engine(0).stats();
  auto out = compiled(a...);
  mj::block_until_ready(out);
  const mj::CopyEngineStats after = mj::copy_engine(0).stats();
  r.copies = after.copies - before.copies;
  r.bytes = after.bytes - before.bytes;
  return r;
}

std::string expected_tail(const ReportAndEngine& r) {
  return std::to_string(r.copies) + " copies of " + std::to_string(r.bytes) + " B per call";
}

// A scan offloading and reloading 4 KiB rows.
Array offload_and_reload(const Array& c0, const Array& xs) {
  auto [c1, ys] = mj::scan(
      [](const Array& c, const Array& x) {
        Array n = mj::sin(c) * 0.9 + x;
        return std::pair{n, to_host(n * 2.0)};
      },
      c0, xs);
  return mj::scan([](const Array& c, const Array& y) { return std::pair{c + to_device(y) * 0.1, mj::None{}}; }, c1, ys,
                  {.reverse = true})
      .first;
}

}  // namespace

// Length 0: the engine moves nothing, and the report counts nothing (a loop of no iterations is
// not pipelined, so no copy sits before or after it).
TEST(OffloadReport, ReportCountsWhatTheEngineMovesForAnEmptyScan) {
  const Array p = mj::ones({4096}), xs = mj::ones({0, 4096});
  const ReportAndEngine r = report_and_engine(offload_and_reload, p, xs);
  EXPECT_NE(r.line.find(expected_tail(r)), std::string::npos) << r.line;
}

// In a cond branch: copies under cond or while run as the program decides, so the report's
// per-call total leaves them out and says so; the engine moves none of them when the branch is
// not taken. The stack the branch holds is listed.
TEST(OffloadReport, ReportCountsWhatTheEngineMovesForABranchNotTaken) {
  const Array p = mj::ones({4096}), xs = mj::ones({3, 4096});
  auto f = [](const Array& p, const Array& xs) {
    return mj::cond(mj::sum(p) < -1e9, [&](const Array& q) { return offload_and_reload(q, xs); },
                    [](const Array& q) { return q; }, p);
  };
  const ReportAndEngine r = report_and_engine(f, p, xs);
  EXPECT_EQ(r.copies, 0);
  EXPECT_NE(r.line.find("0 copies of 0 B per call and those of "), std::string::npos) << r.line;
  EXPECT_NE(r.line.find("site(s) in cond/while bodies"), std::string::npos) << r.line;
  EXPECT_NE(r.line.find("1 host buffer(s), 49152 B"), std::string::npos) << r.line;
}

// In a while loop of 3 trips: each trip makes the copies the same program makes outside the loop
// (counted by the report there, and by the engine: C per call), so the engine moves 3 C; the
// report lists the body's sites per run of the body and the stack they fill.
TEST(OffloadReport, ReportCountsWhatTheEngineMovesInAWhileLoop) {
  const Array p = mj::ones({4096}), xs = mj::ones({3, 4096});
  auto f = [](const Array& p, const Array& xs) {
    auto r = mj::while_loop([](const std::pair<Array, Array>& c) { return c.first < 3; },
                            [&](const std::pair<Array, Array>& c) {
                              return std::pair{c.first + 1, offload_and_reload(c.second, xs)};
                            },
                            std::pair{mj::zeros({}, mj::i32), p});
    return r.second;
  };
  const ReportAndEngine once = report_and_engine(offload_and_reload, p, xs);
  EXPECT_NE(once.line.find(expected_tail(once)), std::string::npos) << once.line;
  ASSERT_GT(once.copies, 0);
  const ReportAndEngine r = report_and_engine(f, p, xs);
  EXPECT_EQ(r.copies, 3 * once.copies);
  EXPECT_EQ(r.bytes, 3 * once.bytes);
  EXPECT_NE(r.line.find("site(s) in cond/while bodies"), std::string::npos) << r.line;
  EXPECT_NE(r.line.find("1 host buffer(s), 49152 B"), std::string::npos) << r.line;
}
