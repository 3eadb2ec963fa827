// Tests of liveness, buffer planning and memory analysis on traced and fused programs: reuse,
// in-place updates, views, donation, loop carries, workspaces, and the allocator's measured bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include <minijax/minijax.h>

#include "core/bodies.h"
#include "jit/runtime/memory_stats.h"
#include "memory/analyze_liveness.h"
#include "memory/memory_analysis.h"
#include "memory/plan_buffers.h"
#include "tests/memory/memory_helpers.h"

namespace {

using mj::Array;

using memtest::fused;

int64_t count_place(const mj::BufferPlan& p, const mj::Jaxpr& j, mj::Place place) {
  int64_t n = 0;
  for (auto& e : j.eqns)
    for (auto& o : e.outputs)
      if (p.where.count(o) && p.at(o).place == place) ++n;
  return n;
}

TEST(Liveness, IntervalsInEquationPositions) {
  auto f = [](const Array& x, const Array& w) {
    Array h = mj::matmul(x, w);
    return mj::matmul(h, w) + 1.0;
  };
  mj::Jaxpr j = fused(f, mj::ones({4, 4}), mj::ones({4, 4}));
  ASSERT_EQ(j.eqns.size(), 3u);  // dot, dot, fusion(add)
  mj::Liveness L = mj::analyze_liveness(j);
  EXPECT_EQ(L.at(j.invars[0]).def, -1);
  EXPECT_EQ(L.at(j.invars[0]).last_use, 0);  // x read by the first dot only
  EXPECT_EQ(L.at(j.invars[1]).last_use, 1);  // w read by both dots
  EXPECT_EQ(L.at(j.eqns[0].outputs[0]).def, 0);
  EXPECT_EQ(L.at(j.eqns[0].outputs[0]).last_use, 1);
  EXPECT_EQ(L.at(j.eqns[2].outputs[0]).last_use, 3);  // an outvar: live to the end
}

// An MLP forward with ReLU: each ReLU runs in place of its dot's result (the dot's result dies
// there), and the first layer's buffer is free again before the third dot writes its result.
// Sizes by hand: every hidden activation is 128 x 512 f32 = 262144 B.
TEST(PlanBuffers, ReluRunsInPlaceAndDeadActivationsAreReused) {
  auto f = [](const Array& x, const Array& w1, const Array& w2, const Array& w3) {
    Array h1 = mj::maximum(mj::matmul(x, w1), 0.0);
    Array h2 = mj::maximum(mj::matmul(h1, w2), 0.0);
    return mj::matmul(h2, w3);
  };
  mj::Jaxpr j = fused(f, mj::ones({128, 784}), mj::ones({784, 512}), mj::ones({512, 512}), mj::ones({512, 10}));
  mj::BufferPlan p = mj::plan_buffers(j, {});
  // dot1 -> relu1 (in place) -> dot2 -> relu2 (in place) -> dot3 (the output)
  ASSERT_EQ(j.eqns.size(), 5u) << mj::to_string(j);
  const mj::Location& d1 = p.at(j.eqns[0].outputs[0]);
  const mj::Location& r1 = p.at(j.eqns[1].outputs[0]);
  EXPECT_EQ(d1.place, mj::Place::temp);
  EXPECT_EQ(r1.place, mj::Place::temp);
  EXPECT_EQ(d1.offset, r1.offset);  // in place
  // Two activations are alive at once (relu1's input of dot2 and dot2's result): 2 x 262144 B.
  EXPECT_EQ(p.arena_bytes[0], 2 * 262144);
  EXPECT_EQ(p.unplanned_bytes[0], 2 * 262144);  // two classes (dot1+relu1, dot2+relu2)
  EXPECT_EQ(p.outputs[0].kind, mj::OutputPlan::fresh);
  mj::CompiledMemoryStats m = mj::memory_analysis(j, p);
  EXPECT_EQ(m.argument_size_in_bytes, (128 * 784 + 784 * 512 + 512 * 512 + 512 * 10) * 4);
  EXPECT_EQ(m.output_size_in_bytes, 128 * 10 * 4);
  EXPECT_EQ(m.temp_size_in_bytes, 2 * 262144);
  EXPECT_EQ(m.peak_memory_in_bytes, m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes);
}

TEST(PlanBuffers, ReshapeIsAViewOfItsOperand) {
  auto f = [](const Array& x, const Array& w) { return mj::reshape(mj::matmul(x, w), {64}); };
  mj::Jaxpr j = fused(f, mj::ones({8, 4}), mj::ones({4, 8}));
  mj::BufferPlan p = mj::plan_buffers(j, {});
  ASSERT_EQ(j.eqns.size(), 2u) << mj::to_string(j);
  // The reshape returns the dot's bytes: the dot writes straight into the output buffer.
  EXPECT_EQ(p.at(j.eqns[0].outputs[0]).place, mj::Place::output);
  EXPECT_EQ(p.at(j.eqns[1].outputs[0]).place, mj::Place::output);
  EXPECT_EQ(p.arena_bytes[0], 0);
}

TEST(PlanBuffers, DonatedParameterHoldsTheUpdatedValue) {
  // p - lr * g: elementwise on p, which dies in the update: written in place into p's buffer.
  auto f = [](const Array& p, const Array& g) { return p - g * 0.01; };
  mj::Jaxpr j = fused(f, mj::ones({1000}), mj::ones({1000}));
  mj::BufferPlan kept = mj::plan_buffers(j, {false, false});
  EXPECT_EQ(kept.outputs[0].kind, mj::OutputPlan::fresh);
  mj::BufferPlan donated = mj::plan_buffers(j, {true, false});
  EXPECT_EQ(donated.outputs[0].kind, mj::OutputPlan::donated_param);
  EXPECT_EQ(donated.outputs[0].index, 0);
  EXPECT_TRUE(donated.donation_used[0]);
  mj::CompiledMemoryStats m = mj::memory_analysis(j, donated);
  EXPECT_EQ(m.alias_size_in_bytes, 4000);
  EXPECT_EQ(m.peak_memory_in_bytes, 8000);  // p, g; the output is p's buffer
  // A donated g (read elementwise, dead after the update) holds the result as well.
  mj::BufferPlan g_only = mj::plan_buffers(j, {false, true});
  EXPECT_EQ(g_only.outputs[0].kind, mj::OutputPlan::donated_param);
  EXPECT_EQ(g_only.outputs[0].index, 1);
}

TEST(PlanBuffers, ScanCarryIsUpdatedInPlaceAndYsAreWrittenToTheirSlices) {
  // y is computed before the new carry: the carry's old value is dead when the new one is
  // written, so the new carry goes straight into the carry buffer and y into its row of ys.
  auto f = [](const Array& c0, const Array& xs) {
    return mj::scan(
        [](const Array& c, const Array& x) {
          Array y = c * 2.0;
          return std::pair{c * x + 1.0, y};
        },
        c0, xs);
  };
  mj::Jaxpr j = fused(f, mj::ones({16}), mj::ones({100, 16}));
  mj::BufferPlan p = mj::plan_buffers(j, {});
  ASSERT_EQ(j.eqns.size(), 1u);
  const mj::Jaxpr& body = *mj::subjaxprs(j.eqns[0]).at(0).jaxpr->jaxpr;
  EXPECT_TRUE(p.scopes.at(&body).end_copies.empty()) << p.str(j);
  EXPECT_EQ(p.at(body.invars[1]).place, mj::Place::loop_slice);  // x: a row of xs, read in place
  EXPECT_EQ(p.at(body.eqns[0].outputs[0]).place, mj::Place::loop_slice) << p.str(j);  // y: its row of ys
  EXPECT_EQ(p.at(body.eqns[1].outputs[0]).place, mj::Place::view);  // the new carry: the carry buffer
  EXPECT_EQ(p.arena_bytes[0], 0) << p.str(j);  // the carry and ys are the scan's outputs
}

TEST(PlanBuffers, ScanCarryStillReadAfterTheNewValueGoesThroughOneTemporary) {
  // The new carry is computed first while y still reads the old one: the new value waits in a
  // temporary (16 f32 = 64 B) and is copied into the carry buffer at the end of the iteration.
  auto f = [](const Array& c0, const Array& xs) {
    return mj::scan([](const Array& c, const Array& x) { return std::pair{c * x + 1.0, c * 2.0}; }, c0, xs);
  };
  mj::Jaxpr j = fused(f, mj::ones({16}), mj::ones({100, 16}));
  mj::BufferPlan p = mj::plan_buffers(j, {});
  const mj::Jaxpr& body = *mj::subjaxprs(j.eqns.at(0)).at(0).jaxpr->jaxpr;
  ASSERT_EQ(p.scopes.at(&body).end_copies.size(), 1u) << p.str(j);
  EXPECT_EQ(p.scopes.at(&body).end_copies[0].outvar, 0u);
  EXPECT_FALSE(p.scopes.at(&body).end_copies[0].staged);
  EXPECT_EQ(p.arena_bytes[0], 64);
  // And the copy is right: compiled equals eager.
  Array c0 = mj::arange(16, mj::f32) * 0.1, xs = mj::ones({100, 16}) * 0.5;
  auto [c, ys] = f(c0, xs);
  auto [cc, cys] = mj::jit(f)(c0, xs);
  EXPECT_EQ(std::memcmp(c.raw_data(), cc.raw_data(), 64), 0);
  EXPECT_EQ(std::memcmp(ys.raw_data(), cys.raw_data(), 6400), 0);
}

TEST(PlanBuffers, SwappedCarriesAreStaged) {
  // (a, b) -> (b, a + b): the copy into a's buffer reads b's old value, which the copy into b's
  // buffer overwrites: one source is staged first.
  auto f = [](const Array& a, const Array& b) {
    auto step = [](const std::pair<Array, Array>& c, const mj::None&) {
      return std::pair{std::pair{c.second, c.first + c.second}, mj::None{}};
    };
    return mj::scan(step, std::pair{a, b}, mj::None{}, {.length = 10}).first;
  };
  Array a = mj::full({4}, 1.0f, mj::f32), b = mj::full({4}, 1.0f, mj::f32);
  auto [ea, eb] = f(a, b);
  auto [ca, cb] = mj::jit(f)(a, b);
  EXPECT_EQ(std::memcmp(ea.raw_data(), ca.raw_data(), 16), 0);  // fib(11) = 89 by hand
  EXPECT_EQ(ca.data<float>()[0], 89.f);
  EXPECT_EQ(cb.data<float>()[0], 144.f);
}

// What the allocator obtains per call is what the plan predicts: the outputs plus the arena.
// A factorisation's LAPACK workspace (BufferRule::scratch) is a region of the device arena live
// only at its equation: a temporary that died before it shares its bytes. From text: b (exp of a,
// 2 x 16 x 16 f64 = 4096 B) dies at the reduce_sum; the eigh after it needs min(batch 2,
// hardware threads) workspaces, each at least ?syevd_'s documented minimum for JOBZ = 'V'
// (LAPACK's dsyevd: LWORK >= 1 + 6 N + 2 N^2 doubles, LIWORK >= 3 + 5 N ints), each piece rounded
// to 64 bytes. Outputs live in their own buffers, so the arena is the larger of the two.
TEST(PlanBuffers, FactorizationWorkspaceIsARegionLiveOnlyAtItsEquation) {
  mj::ClosedJaxpr cj = mj::parse_jaxpr(
      "{ lambda ; a:f64[2,16,16]. let\n"
      "    b:f64[2,16,16] = exp a\n"
      "    c:f64[] = reduce_sum[axes=(0, 1, 2)] b\n"
      "    d:f64[2,16,16] e:f64[2,16] = eigh[lower=True sort_eigenvalues=True] a\n"
      "  in (c, d, e) }");
  const mj::Jaxpr& j = *cj.jaxpr;
  mj::BufferPlan p = mj::plan_buffers(j, {});
  EXPECT_EQ(p.scratch_of(j.eqns[0]), nullptr);
  const mj::Scratch* s = p.scratch_of(j.eqns[2]);
  ASSERT_NE(s, nullptr);
  const int64_t n = 16, hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  auto round64 = [](int64_t b) { return (b + 63) / 64 * 64; };
  EXPECT_EQ(s->slots, std::min<int64_t>(2, hw));
  EXPECT_GE(s->slot_bytes, round64((1 + 6 * n + 2 * n * n) * 8) + round64((3 + 5 * n) * 4));
  EXPECT_EQ(s->slot_bytes % 64, 0);
  EXPECT_EQ(p.at(j.eqns[0].outputs[0]).place, mj::Place::temp);
  EXPECT_EQ(p.arena_bytes[0], std::max<int64_t>(4096, s->slots * s->slot_bytes));
  EXPECT_EQ(mj::memory_analysis(j, p).temp_size_in_bytes, p.arena_bytes[0]);
}

TEST(MemoryAnalysis, MeasuredAllocationsEqualThePrediction) {
  auto f = [](const Array& x, const Array& w1, const Array& w2, const Array& w3) {
    Array h1 = mj::maximum(mj::matmul(x, w1), 0.0);
    Array h2 = mj::maximum(mj::matmul(h1, w2), 0.0);
    return mj::matmul(h2, w3);
  };
  Array x = mj::ones({128, 784}), w1 = mj::ones({784, 512}) * 0.001, w2 = mj::ones({512, 512}) * 0.001,
        w3 = mj::ones({512, 10});
  auto jf = mj::jit(f);
  auto compiled = jf.lower(x, w1, w2, w3).compile();
  mj::CompiledMemoryStats m = compiled.memory_analysis();
  Array warm = compiled(x, w1, w2, w3);  // first call: pools warm up
  const int64_t before = mj::memory_stats(0).bytes_in_use;
  mj::reset_peak_memory_stats(0);
  Array out = compiled(x, w1, w2, w3);
  const int64_t peak = mj::memory_stats(0).peak_bytes_in_use - before;
  const int64_t after = mj::memory_stats(0).bytes_in_use - before;
  // The allocator rounds blocks to size classes (jit/runtime/allocator.h): 5120 B and 524288 B
  // are exact classes, so the measured bytes equal the plan's output + temp bytes exactly.
  EXPECT_EQ(peak, m.output_size_in_bytes + m.temp_size_in_bytes);
  EXPECT_EQ(after, m.output_size_in_bytes);  // the arena is returned; the output stays
  (void)warm;
}

}  // namespace
