// Tests of the plan-driven reshard lowering in partition_spmd: ragged_all_to_all (and
// collective_permute) for reshards without a structured form, and partial sums reduced by plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/bodies.h"
#include "core/api.h"
#include "core/control_flow.h"
#include "core/errors.h"
#include "core/lax.h"
#include "jit/jit.h"
#include "jit/reference/reference_executor.h"
#include "sharding/boxes.h"
#include "sharding/partition_spmd.h"
#include "sharding/plan_reshard.h"
#include "sharding/propagate_shardings.h"
#include "sharding/reshard_api.h"
#include "tests/sharding/ownership.h"
#include "tests/sharding/spmd_helpers.h"

namespace mj = minijax;
using minijax::Array;
using minijax::ShapedArray;
using minijax::Sharding;
using namespace minijax::testing;

namespace {

struct Lowered {
  mj::PropagationResult prop;
  mj::Jaxpr program;
  mj::SpmdStats stats;
  std::string text;
};

// Propagates, partitions and runs `cj` on the shards of `args`; checks every device's outputs
// against its block of the eager unsharded result (float tolerance: reductions reorder).
Lowered run(const mj::ClosedJaxpr& cj, const std::vector<Array>& args, const std::vector<std::optional<Sharding>>& in,
        const std::vector<std::optional<Sharding>>& out, const std::shared_ptr<const mj::Mesh>& m) {
  Lowered r;
  r.prop = mj::propagate_shardings(*cj.jaxpr, in, out, *m);
  r.program = mj::partition_spmd(*cj.jaxpr, r.prop, *m);
  r.text = mj::to_string(r.program);
  std::vector<std::vector<Array>> dev(m->num_devices());
  for (size_t k = 0; k < args.size(); ++k) {
    auto pieces = cut(args[k], r.prop.of(cj.jaxpr->invars[k]));
    for (size_t p = 0; p < dev.size(); ++p) dev[p].push_back(pieces[p]);
  }
  auto got = mj::run_spmd(r.program, *m, dev, &r.stats);
  auto want = mj::eval_jaxpr(cj, args);
  for (size_t k = 0; k < want.size(); ++k) {
    // The output's sharding: an output reshard's target, else the variable's.
    Sharding os = r.prop.of(std::get<mj::Var>(cj.jaxpr->outvars[k]));
    for (auto& rs : r.prop.reshards)
      if (rs.on_output && rs.index == k) os = rs.to;
    auto blocks = cut(want[k], os);
    for (size_t p = 0; p < blocks.size(); ++p) {
      EXPECT_EQ(got[p][k].shape(), blocks[p].shape()) << "device " << p;
      if (got[p][k].shape() != blocks[p].shape()) continue;
      for (int64_t i = 0; i < blocks[p].aval().size(); ++i)
        EXPECT_NEAR(got[p][k].data<float>()[i], blocks[p].data<float>()[i], 1e-3) << "device " << p << " at " << i;
    }
  }
  return r;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Brute force (the tests' own ownership rule): elements each device receives, |B(d)| − |A∩B|.
std::vector<int64_t> bound(const Sharding& a, const Sharding& b, const mj::Shape& shape) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < a.mesh->num_devices(); ++d) {
    auto A = own_set(own_ranges(a, shape, d), shape), B = own_set(own_ranges(b, shape, d), shape);
    int64_t n = 0;
    for (size_t e = 0; e < A.size(); ++e) n += B[e] && !A[e];
    out.push_back(n);
  }
  return out;
}

// One program for every device: no per-device branch, device positions only from axis_index
// (no integer literal naming a device other than 0 as a start index).
void expect_device_independent(const std::string& text) {
  EXPECT_EQ(text.find("cond["), std::string::npos) << text;
  for (int d = 1; d < 8; ++d) EXPECT_EQ(text.find(" " + std::to_string(d) + ":i32[]"), std::string::npos) << text;
}

}  // namespace

// [{"x"}, {}] -> [{"y"}, {}] on (4,2), f32[16,8]: dim 0 releases "x" and acquires "y". One
// ragged_all_to_all moves exactly |B(d)| − |A(d) ∩ B(d)| elements into each device.
TEST(ReshardLowering, ReleaseAndAcquireIsOneRaggedAllToAll) {
  auto m = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Array x = ramp({16, 8}, 0.5f, 1);
  auto cj = mj::make_jaxpr([](Array v) { return mj::lax::sin(v); })(x);
  Sharding a = from_spec(m, {{"x"}, {}}), b = from_spec(m, {{"y"}, {}});
  Lowered r = run(cj, {x}, {a}, {b}, m);
  ASSERT_EQ(r.stats.collectives.size(), 1u) << r.text;
  EXPECT_EQ(r.stats.collectives[0].primitive, "ragged_all_to_all");
  EXPECT_EQ(count(r.text, "ragged_all_to_all["), 1u) << r.text;
  EXPECT_EQ(count(r.text, "all_gather"), 0u) << r.text;
  expect_device_independent(r.text);
  // B(d) = 8 rows x 8 = 64; A(d) = 4 rows: devices whose x-block lies inside their y-block keep
  // 32 (receive 32), the others keep none (receive 64) -- counted by brute force.
  auto want = bound(a, b, {16, 8});
  // ... which is also what the plan says each device receives and sends.
  mj::ReshardPlan plan = mj::plan_reshard(a, b, ShapedArray{{16, 8}, mj::DType::f32});
  for (size_t d = 0; d < 8; ++d) {
    EXPECT_EQ(r.stats.collectives[0].bytes_received[d], 4 * want[d]) << d;
    EXPECT_EQ(r.stats.collectives[0].bytes_received[d], 4 * plan.received[d]) << d;
    EXPECT_EQ(r.stats.collectives[0].bytes_sent[d], 4 * plan.sent[d]) << d;
  }
}

// A sub-axis moves between dims: [{"x"}, {}] -> [{"x":(1)2}, {"x":(2)2}] on (4,2), f32[16,8].
TEST(ReshardLowering, SubAxisMoveIsRagged) {
  auto m = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Array x = ramp({16, 8}, 1, -3);
  auto cj = mj::make_jaxpr([](Array v) { return mj::lax::neg(v); })(x);
  Sharding a = from_spec(m, {{"x"}, {}}), b = from_spec(m, {{}, {}});
  b.dims[0].axes = {mj::AxisRef::sub("x", 1, 2)};
  b.dims[1].axes = {mj::AxisRef::sub("x", 2, 2)};
  Lowered r = run(cj, {x}, {a}, {b}, m);
  ASSERT_EQ(r.stats.collectives.size(), 1u) << r.text;
  EXPECT_EQ(r.stats.collectives[0].primitive, "ragged_all_to_all");
  expect_device_independent(r.text);
  auto want = bound(a, b, {16, 8});
  for (size_t d = 0; d < 8; ++d) EXPECT_EQ(r.stats.collectives[0].bytes_received[d], 4 * want[d]) << d;
}

// [{"x","y"}, {}] -> [{"y","x"}, {}]: only which device holds which row block changes; the plan
// is a collective_permute (devices (0,0) and (3,1) keep theirs), lowered as one over the mesh.
TEST(ReshardLowering, AxisOrderSwapIsOneCollectivePermute) {
  auto m = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Array x = ramp({16, 8}, 2, 1);
  auto cj = mj::make_jaxpr([](Array v) { return mj::lax::sin(v); })(x);
  Sharding a = from_spec(m, {{"x", "y"}, {}}), b = from_spec(m, {{"y", "x"}, {}});
  Lowered r = run(cj, {x}, {a}, {b}, m);
  ASSERT_EQ(r.stats.collectives.size(), 1u) << r.text;
  EXPECT_EQ(r.stats.collectives[0].primitive, "collective_permute");
  auto want = bound(a, b, {16, 8});
  EXPECT_EQ(want[0], 0);
  EXPECT_EQ(want[1], 16);
  for (size_t d = 0; d < 8; ++d) EXPECT_EQ(r.stats.collectives[0].bytes_received[d], 4 * want[d]) << d;
}

// Same on a permuted device order and mesh (2,2,2), reversing the axes of dim 1 of f32[4,16].
TEST(ReshardLowering, PermutedDevicesReverseAxes) {
  auto m = make_mesh({3, 6, 0, 5, 7, 1, 4, 2}, {2, 2, 2}, {"x", "y", "z"});
  Array x = ramp({4, 16}, 1, 0);
  auto cj = mj::make_jaxpr([](Array v) { return mj::lax::neg(v); })(x);
  Sharding a = from_spec(m, {{}, {"x", "y", "z"}}), b = from_spec(m, {{"z"}, {"y", "x"}});
  Lowered r = run(cj, {x}, {a}, {b}, m);
  ASSERT_EQ(r.stats.collectives.size(), 1u) << r.text;
  auto want = bound(a, b, {4, 16});
  for (size_t d = 0; d < 8; ++d) EXPECT_EQ(r.stats.collectives[0].bytes_received[d], 4 * want[d]) << d;
}

// The all_reduce's measured traffic (run_spmd) equals the planner's two-phase all_reduce:
// x f32[8,16] on [{}, {"x"}] (mesh (4,2)) reduced over dim 1 to a replicated f32[8]: partial sums
// over "x" (k = 4), shard of 8 elements: 2·3/4·8 = 12 elements = 48 bytes per device.
TEST(ReshardLowering, AllReduceTrafficMatchesThePlan) {
  auto m = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Array x = ramp({8, 16}, 0.25f, -1);
  auto cj = mj::make_jaxpr([](Array v) { return mj::lax::reduce_sum(v, {1}); })(x);
  Lowered r = run(cj, {x}, {from_spec(m, {{}, {"x"}})}, {from_spec(m, {{}})}, m);
  ASSERT_EQ(r.stats.collectives.size(), 1u) << r.text;
  EXPECT_EQ(r.stats.collectives[0].primitive, "all_reduce");
  ASSERT_EQ(r.prop.reshards.size(), 1u);
  const auto& rs = r.prop.reshards[0];
  mj::ReshardPlan p = mj::plan_reshard(rs.from, rs.to, rs.var.aval());
  for (size_t d = 0; d < 8; ++d) {
    EXPECT_EQ(r.stats.collectives[0].bytes_received[d], 48);
    EXPECT_EQ(r.stats.collectives[0].bytes_received[d], 4 * p.received[d]);
    EXPECT_EQ(r.stats.collectives[0].bytes_sent[d], 4 * p.sent[d]);
  }
}

// Partial sums to a target a plain reduce_scatter does not give: a @ b with the contracting
// dim on "y", the result wanted on [{}, {"y", "x"}]. The plan: reduce_scatter onto dim 1, then
// the local slice of "x" -- no all_reduce, values equal.
TEST(ReshardLowering, PartialSumsReduceScatterThenMove) {
  auto m = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Array a = ramp({8, 16}, 0.5f), b = ramp({16, 16}, -0.25f, 1);
  auto cj = mj::make_jaxpr([](Array u, Array v) {
    return mj::lax::dot_general(u, v, mj::lax::DotDimensionNumbers{{1}, {0}, {}, {}});
  })(a, b);
  Lowered r = run(cj, {a, b}, {from_spec(m, {{}, {"y"}}), from_spec(m, {{"y"}, {}})},
              {from_spec(m, {{}, {"y", "x"}})}, m);
  EXPECT_EQ(count(r.text, "all_reduce"), 0u) << r.text << r.prop.text;
  EXPECT_EQ(count(r.text, "reduce_scatter["), 1u) << r.text << r.prop.text;
}

// A user-fixed value returned in another sharding: the identity with in_sharding [{"x"}, {}]
// and out_sharding [{}, {"x"}]. The input cannot move (user sharding), so propagation places
// ONE reshard at the output (on_output), costed by the planner: f32[8,8] on 4 "x" devices,
// each device holds rows 2x..2x+1 and needs columns 2x..2x+1: of its 16 target elements it
// has 4, so it receives 12 (the all_to_all over "x"). Values equal eager.
TEST(ReshardLowering, UserFixedValueReturnedInAnotherShardingIsReshardedAtTheOutput) {
  auto m = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Array x = ramp({8, 8}, 0.5f);
  auto cj = mj::make_jaxpr([](Array v) { return v; })(x);
  Lowered r = run(cj, {x}, {from_spec(m, {{"x"}, {}})}, {from_spec(m, {{}, {"x"}})}, m);
  ASSERT_EQ(r.prop.reshards.size(), 1u) << r.prop.text;
  EXPECT_TRUE(r.prop.reshards[0].on_output) << r.prop.text;
  EXPECT_EQ(r.prop.reshards[0].max_received, 12) << r.prop.text;
  ASSERT_EQ(r.stats.collectives.size(), 1u) << r.text;
  EXPECT_EQ(r.stats.collectives[0].primitive, "all_to_all") << r.text;
}

// [{"y"}, {}] -> [{"x", "y"}, {}] on (4,2), f32[16,4]: the planner names it a collective_permute
// (one whole target shard per receiver) but the local shapes differ (8 rows -> 2), so it is
// lowered as the ragged exchange; the devices whose target block lies in their own receive 0.
TEST(ReshardLowering, PermutePlanWithShrinkingShardsIsRagged) {
  auto m = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Array x = ramp({16, 4}, 1, 2);
  auto cj = mj::make_jaxpr([](Array v) { return mj::lax::sin(v); })(x);
  Sharding a = from_spec(m, {{"y"}, {}}), b = from_spec(m, {{"x", "y"}, {}});
  Lowered r = run(cj, {x}, {a}, {b}, m);
  ASSERT_EQ(r.stats.collectives.size(), 1u) << r.text;
  EXPECT_EQ(r.stats.collectives[0].primitive, "ragged_all_to_all");
  auto want = bound(a, b, {16, 4});
  for (size_t d = 0; d < 8; ++d) EXPECT_EQ(r.stats.collectives[0].bytes_received[d], 4 * want[d]) << d;
}

// mj::reshard_plan on NamedShardings: the seed case's plan text is one all_to_all step with
// 1792 bytes received per device (448 f32 elements = 512 − 64, by hand in test_plan_reshard).
TEST(ReshardApi, SeedPlanTextIsOneAllToAllStep) {
  auto m = make_mesh(iota(8), {4, 2}, {"x", "y"});
  mj::ReshardPlan p = mj::reshard_plan(mj::NamedSharding{m, mj::P("y", mj::None{}, "x")},
                                       mj::NamedSharding{m, mj::P(mj::None{}, {"x", "y"}, mj::None{})},
                                       ShapedArray{{16, 16, 16}, mj::DType::f32});
  const std::string text = p.as_text();
  EXPECT_EQ(count(text, "step "), 1u) << text;
  EXPECT_NE(text.find("step 0: all_to_all over {\"x\", \"y\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("recv 1792 B/device, send 1792 B/device, 56 messages"), std::string::npos) << text;
}

// spmd_as_text annotates every collective with the bytes run_spmd measures, the ragged
// exchange inside its closed_call included (sizes read from its constant tables).
TEST(ReshardApi, SpmdTextMatchesMeasuredTraffic) {
  auto m = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Array x = ramp({16, 8}, 0.5f, 1);
  auto cj = mj::make_jaxpr([](Array v) { return mj::lax::sin(v); })(x);
  Lowered r = run(cj, {x}, {from_spec(m, {{"x"}, {}})}, {from_spec(m, {{"y"}, {}})}, m);
  const std::string text = mj::spmd_as_text(r.program, *m);
  ASSERT_EQ(r.stats.collectives.size(), 1u);
  const auto& c = r.stats.collectives[0];
  const int64_t lo = *std::min_element(c.bytes_received.begin(), c.bytes_received.end());
  const int64_t hi = *std::max_element(c.bytes_received.begin(), c.bytes_received.end());
  EXPECT_NE(text.find("reshard_ragged / ragged_all_to_all over ('x', 'y'): " + std::to_string(lo) + ".." +
                      std::to_string(hi) + " B sent, " + std::to_string(lo) + ".." + std::to_string(hi) +
                      " B received per device"),
            std::string::npos)
      << text;
  // jit's collectives_text prints the measured bytes with the same line as the static model:
  // the ragged exchange's own axes (not its closed_call), then the static line's messages.
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi) + " B";
  const std::string measured = mj::collectives_text(r.stats, r.program);
  const std::string line = "closed_call reshard_ragged / ragged_all_to_all over ('x', 'y'): " + range + " sent, " +
                           range + " received per device";
  EXPECT_NE(measured.find(line + "\n"), std::string::npos) << measured;
  EXPECT_EQ(count(measured, "\n"), 1u) << measured;
  EXPECT_NE(text.find(measured.substr(0, measured.size() - 1) + ", "), std::string::npos) << measured << text;
  // Each device's traffic, equation by equation, equals the measured one.
  for (size_t i = 0; i < r.program.eqns.size(); ++i) {
    const auto& e = r.program.eqns[i];
    if (e.primitive->name != "closed_call") continue;
    const mj::ClosedJaxprPtr body = mj::subjaxprs(e).at(0).jaxpr;
    for (size_t k = 0; k < body->jaxpr->eqns.size(); ++k) {
      auto t = mj::collective_traffic(*body->jaxpr, k, body->consts, *m);
      if (!t) continue;
      ASSERT_TRUE(t->known);
      EXPECT_EQ(t->bytes_received, c.bytes_received);
      EXPECT_EQ(t->bytes_sent, c.bytes_sent);
    }
  }
  // The seed reshard as an all_to_all: 1792 B and 7 messages each way per device.
  Array a = ramp({16, 16, 16});
  auto seed = mj::make_jaxpr([](Array u, Array v) { return mj::lax::add(u, v); })(a, a);
  Lowered s = run(seed, {a, a}, {from_spec(m, {{"y"}, {}, {"x"}}), from_spec(m, {{}, {"x", "y"}, {}})},
                  {from_spec(m, {{}, {"x", "y"}, {}})}, m);
  const std::string st = mj::spmd_as_text(s.program, *m);
  EXPECT_NE(st.find("all_to_all over ('x', 'y'): 1792 B sent, 1792 B received per device, 7 msgs in, 7 msgs out"),
            std::string::npos)
      << st;
}

// spmd_collectives_text names the collectives inside every kind of body, not only call bodies:
// here an all_reduce in a scan body and one in a cond branch, in a hand-written SPMD program.
// Each is a psum of f32[4] over "x" (4 devices of the (4, 2) mesh): all_reduce_pieces splits
// the 4 elements into pieces of 1, so each device receives (4-1)*1 partial sums of its piece,
// then the 4-1 other reduced pieces: 6 f32 = 24 B each way, from 3 + 3 = 6 messages. run_spmd
// measures the same bytes (once per scan iteration).
TEST(ReshardApi, SpmdTextDescendsIntoLoopAndCondBodies) {
  auto m = make_mesh(iota(8), {4, 2}, {"x", "y"});
  auto f = [](Array c, Array xs, Array p) {
    auto [cf, ys] = mj::scan(
        [](const Array& carry, const Array& x) {
          return std::pair{mj::lax::psum(mj::lax::add(carry, x), {"x"}, 4), x};
        },
        c, xs);
    return mj::cond(
        p, [](const Array& v) { return mj::lax::psum(v, {"x"}, 4); }, [](const Array& v) { return v; }, cf);
  };
  Array c = ramp({4}), xs = ramp({3, 4}, 0.5f), p = mj::lax::scalar(1, mj::DType::bool_);
  auto cj = mj::make_jaxpr(f)(c, xs, p);
  const std::string text = mj::spmd_collectives_text(*cj.jaxpr, *m);
  const std::string line = "all_reduce over x: 24 B sent, 24 B received per device, 6 msgs in, 6 msgs out";
  EXPECT_NE(text.find("eqn 0 scan / " + line), std::string::npos) << text;
  EXPECT_NE(text.find("cond branch 1 / " + line), std::string::npos) << text;
  EXPECT_EQ(count(text, "all_reduce"), 2u) << text;
  // The measured traffic: 3 iterations of the scan's psum, then the taken branch's psum.
  mj::SpmdStats stats;
  std::vector<std::vector<Array>> dev(8, std::vector<Array>{c, xs, p});
  mj::run_spmd(*cj.jaxpr, *m, dev, &stats);
  ASSERT_EQ(stats.collectives.size(), 4u);
  for (auto& s : stats.collectives)
    for (size_t d = 0; d < 8; ++d) {
      EXPECT_EQ(s.bytes_sent[d], 24);
      EXPECT_EQ(s.bytes_received[d], 24);
    }
}

// collective_traffic (the static model spmd_as_text prints) and run_spmd's measurement are two
// implementations of one traffic model: they must agree per device for every collective kind,
// including an all_reduce whose pieces are uneven (f32[6,4] over 8 devices splits dim 0 into
// ceil(6/8) = 1-row pieces: 6 pieces of 4 elements, 2 empty), a rank-0 all_reduce and a
// collective_permute with a self pair (which moves nothing). One value by hand as an anchor:
// all_gather of f32[6,4] (96 B) over the 4 "x" devices sends and receives (4-1)*96 = 288 B.
TEST(ReshardApi, StaticTrafficEqualsMeasuredForEveryCollective) {
  namespace lax = mj::lax;
  auto m = make_mesh(iota(8), {4, 2}, {"x", "y"});
  auto f = [](Array x) {
    return std::vector<Array>{lax::all_gather(x, {"x"}, 4, 0, true),
                              lax::all_reduce(x, {"x", "y"}, 8, "sum"),
                              lax::psum(lax::reduce_sum(x, {0, 1}), {"y"}, 2),
                              lax::reduce_scatter(x, {"y"}, 2, 0),
                              lax::all_to_all(x, {"x"}, 4, 1, 0),
                              lax::collective_permute(x, {"x"}, 4, {0, 1, 1, 2, 3, 3})};
  };
  Array x = ramp({6, 4});
  auto cj = mj::make_jaxpr(f)(x);
  mj::SpmdStats stats;
  mj::run_spmd(*cj.jaxpr, *m, std::vector<std::vector<Array>>(8, std::vector<Array>{x}), &stats);
  size_t next = 0;
  for (size_t i = 0; i < cj.jaxpr->eqns.size(); ++i) {
    auto t = mj::collective_traffic(*cj.jaxpr, i, {}, *m);
    if (!t) continue;
    ASSERT_LT(next, stats.collectives.size());
    const auto& c = stats.collectives[next++];
    EXPECT_EQ(c.eqn_index, i);
    EXPECT_EQ(c.primitive, t->primitive);
    EXPECT_EQ(c.bytes_sent, t->bytes_sent) << t->primitive;
    EXPECT_EQ(c.bytes_received, t->bytes_received) << t->primitive;
    if (t->primitive == "all_gather")
      for (size_t d = 0; d < 8; ++d) EXPECT_EQ(t->bytes_received[d], 288);
  }
  EXPECT_EQ(next, 6u);
  EXPECT_EQ(stats.collectives.size(), 6u);
}
