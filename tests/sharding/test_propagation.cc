// Tests of sharding propagation (sharding/propagate_shardings): forward/backward factor
// propagation, unreduced results, reshard placement by cost (the seed case), reshape sub-axes.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/api.h"
#include "core/collectives.h"
#include "core/errors.h"
#include "core/lax.h"
#include "sharding/partition_spec.h"
#include "sharding/plan_reshard.h"
#include "sharding/propagate_shardings.h"
#include "tests/sharding/spmd_helpers.h"

namespace mj = minijax;
using minijax::Array;
using minijax::AxisRef;
using minijax::DimSharding;
using minijax::ShapedArray;
using minijax::Sharding;
using minijax::Var;

namespace {

using minijax::testing::mesh42;
using minijax::testing::named;

// Real primitives with the rules of sharding/rules/: sin (unary), add (binary), dot_general,
// reshape, cumsum (the scanned axis needs replication), and jit's pjit (declared without a rule).
Array unary(const Array& x) { return mj::lax::sin(x); }
Array binary(const Array& x, const Array& y) { return mj::lax::add(x, y); }
Array dot_2d(const Array& x, const Array& y) {
  return mj::lax::dot_general(x, y, mj::lax::DotDimensionNumbers{{1}, {0}, {}, {}});
}

Array zeros(mj::Shape s) { return Array::allocate(ShapedArray{s, mj::DType::f32}); }

std::vector<std::vector<AxisRef>> dim_axes(const Sharding& s) {
  std::vector<std::vector<AxisRef>> out;
  for (auto& d : s.dims) out.push_back(d.axes);
  return out;
}

// Every variable has a sharding valid for its shape (the header's guarantee).
void expect_all_valid(const mj::PropagationResult& r, const mj::Jaxpr& j) {
  std::vector<Var> vs = j.invars;
  for (auto& e : j.eqns) vs.insert(vs.end(), e.outputs.begin(), e.outputs.end());
  for (auto& v : vs) EXPECT_NO_THROW(r.of(v).check(v.aval().shape)) << r.text;
  EXPECT_EQ(r.shardings.size(), vs.size() + j.constvars.size());
}

const AxisRef X = AxisRef::axis("x");
const AxisRef Y = AxisRef::axis("y");
using AxesList = std::vector<std::vector<AxisRef>>;

}  // namespace

namespace minijax {
void PrintTo(const AxisRef& a, std::ostream* os) { *os << a.str(); }
}  // namespace minijax

TEST(Propagation, ElementwiseChainForward) {
  auto m = mesh42();
  auto cj = mj::make_jaxpr([](Array x, Array y) { return binary(unary(unary(x)), y); })(
      zeros({8, 4}), zeros({8, 4}));
  const auto& j = *cj.jaxpr;
  ASSERT_EQ(j.eqns.size(), 3u);
  auto r = mj::propagate_shardings(j, {named(m, mj::P("x", "y"), 2), std::nullopt}, {}, *m);
  // x's sharding flows through both unary ops into the binary op, and from there back to y.
  for (auto& e : j.eqns) EXPECT_EQ(dim_axes(r.of(e.outputs[0])), (AxesList{{X}, {Y}}));
  EXPECT_EQ(dim_axes(r.of(j.invars[1])), (AxesList{{X}, {Y}}));
  EXPECT_TRUE(r.reshards.empty());
  EXPECT_TRUE(r.decisions.empty());
  expect_all_valid(r, j);
  EXPECT_NE(r.text.find(R"(= add)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find(R"(f32[8,4][{"x"}, {"y"}])"), std::string::npos) << r.text;
}

TEST(Propagation, OutShardingsOnlyPropagateToInputsWithoutReshards) {
  auto m = mesh42();
  auto cj = mj::make_jaxpr([](Array a, Array b) { return unary(binary(unary(a), b)); })(
      zeros({8, 4}), zeros({8, 4}));
  const auto& j = *cj.jaxpr;
  Sharding out = named(m, mj::P(mj::None{}, {"y", "x"}), 2);
  auto r = mj::propagate_shardings(j, {}, {out}, *m);
  EXPECT_EQ(dim_axes(r.of(j.invars[0])), (AxesList{{}, {Y, X}}));
  EXPECT_EQ(dim_axes(r.of(j.invars[1])), (AxesList{{}, {Y, X}}));
  for (auto& e : j.eqns) EXPECT_EQ(dim_axes(r.of(e.outputs[0])), (AxesList{{}, {Y, X}}));
  EXPECT_TRUE(r.reshards.empty()) << r.text;
  // Needs the backward sweep: the first forward sweep sees nothing before the last equation.
  EXPECT_GE(r.sweeps, 2);
}

// The dot's result holds partial sums; with no out_sharding the output is still returned
// reduced, at the cheapest reduced target. c = a @ b, a [8,16] in P("y","x"), b [16,4] in
// P("x",None) on (x=4, y=2): c is computed [{"y"}, {}] with partial sums over "x", local [4,4] =
// 16 elements. Reduced targets: the same dims, an all_reduce over the 4 devices of "x" (two-phase:
// 2*(4-1)/4 * 16 = 24 received per device); "x" appended to dim 0 ([8] / (2*4) = 1 row) or to
// dim 1 ([4] / 4 = 1 column), a reduce_scatter ((4-1)/4 * 16 = 12 per device). 12 < 24, dim 0
// first on the tie: [{"y","x"}, {}], one reshard after the dot, 12 per device, 8 * 12 in all.
TEST(Propagation, ShardedContractingDimGivesPartialSumsReducedAtTheOutput) {
  auto m = mesh42();
  auto cj = mj::make_jaxpr([](Array a, Array b) { return dot_2d(a, b); })(
      zeros({8, 16}), zeros({16, 4}));
  const auto& j = *cj.jaxpr;
  std::vector<std::optional<Sharding>> in{named(m, mj::P("y", "x"), 2), named(m, mj::P("x", mj::None{}), 2)};
  auto r = mj::propagate_shardings(j, in, {}, *m);
  const Sharding& c = r.of(j.eqns[0].outputs[0]);
  EXPECT_EQ(dim_axes(c), (AxesList{{Y, X}, {}})) << r.text;
  EXPECT_TRUE(c.unreduced.empty());
  expect_all_valid(r, j);
  ASSERT_EQ(r.reshards.size(), 1u) << r.text;
  const auto& p = r.reshards[0];
  EXPECT_TRUE(p.on_result);
  EXPECT_EQ(p.eqn, 0u);
  // m keeps "y"; the contracting factor is on "x" in both operands: partial sums over "x".
  EXPECT_EQ(dim_axes(p.from), (AxesList{{Y}, {}}));
  EXPECT_EQ(p.from.unreduced, (std::vector<AxisRef>{X}));
  EXPECT_EQ(dim_axes(p.to), (AxesList{{Y, X}, {}}));
  EXPECT_TRUE(p.to.unreduced.empty());
  EXPECT_EQ(p.max_received, 12);
  EXPECT_EQ(p.total_received, 96);
  // The planner agrees, and its all_reduce to the same dims costs the 24 derived above.
  ShapedArray aval{{8, 4}, mj::DType::f32};
  EXPECT_EQ(mj::plan_reshard(p.from, p.to, aval).max_received(), 12);
  Sharding same = p.from;
  same.unreduced.clear();
  EXPECT_EQ(mj::plan_reshard(p.from, same, aval).max_received(), 24);
  EXPECT_NE(r.text.find(R"(unreduced={"x"})"), std::string::npos) << r.text;  // on the reshard line

  // Partial sums asked for by the out_sharding are kept: no reshard.
  Sharding asked = named(m, mj::P("y", mj::None{}), 2);
  asked.unreduced = {X};
  auto kept = mj::propagate_shardings(j, in, {asked}, *m);
  EXPECT_EQ(kept.of(j.eqns[0].outputs[0]).unreduced, (std::vector<AxisRef>{X}));
  EXPECT_TRUE(kept.reshards.empty()) << kept.text;
}

TEST(Propagation, ReducedOutputOfShardedContractionIsCostedAsAllReduce) {
  auto m = mesh42();
  auto cj = mj::make_jaxpr([](Array a, Array b) { return dot_2d(a, b); })(
      zeros({8, 16}), zeros({16, 4}));
  const auto& j = *cj.jaxpr;
  // The user wants the result reduced and replicated. Candidates: compute partial sums over "x"
  // and all-reduce the [8,4] result over k = 4: 2*(4-1)/4 * 32 = 48 received per device; or
  // gather the operands' contracting dim: lhs [8,16] from 4 column blocks: 128 - 32 = 96 per
  // device, rhs [16,4]: 64 - 16 = 48, total 144. The all-reduce is chosen.
  auto r = mj::propagate_shardings(
      j, {named(m, mj::P(mj::None{}, "x"), 2), named(m, mj::P("x", mj::None{}), 2)},
      {named(m, mj::P(), 2)}, *m);
  ASSERT_EQ(r.reshards.size(), 1u) << r.text;
  EXPECT_TRUE(r.reshards[0].on_result);
  EXPECT_EQ(r.reshards[0].from.unreduced, (std::vector<AxisRef>{X}));
  EXPECT_EQ(r.reshards[0].max_received, 48);
  EXPECT_TRUE(r.of(j.eqns[0].outputs[0]).unreduced.empty());
  ASSERT_EQ(r.decisions.size(), 1u);
  bool saw_gather = false;
  for (auto& c : r.decisions[0].candidates) saw_gather = saw_gather || c.max_received == 144;
  EXPECT_TRUE(saw_gather) << r.text;
}

// docs/cases/seed-involuntary-full-remat.md: d = a + b (a, b in P("y", None, "x")), then
// c + d with c and the output in P(None, ("x","y"), None) on mesh (4, 2), f32[16,16,16].
TEST(Propagation, SeedCaseReshardsAfterTheAddNotBothInputs) {
  auto m = mesh42();
  auto cj = mj::make_jaxpr([](Array a, Array b, Array c) { return binary(c, binary(a, b)); })(
      zeros({16, 16, 16}), zeros({16, 16, 16}), zeros({16, 16, 16}));
  const auto& j = *cj.jaxpr;
  ASSERT_EQ(j.eqns.size(), 2u);
  Sharding s1 = named(m, mj::P("y", mj::None{}, "x"), 3);
  Sharding s2 = named(m, mj::P(mj::None{}, {"x", "y"}, mj::None{}), 3);
  auto r = mj::propagate_shardings(j, {s1, s1, s2}, {s2}, *m);
  Var d = j.eqns[0].outputs[0];
  EXPECT_EQ(dim_axes(r.of(d)), (AxesList{{Y}, {}, {X}}));
  // User shardings never move.
  EXPECT_EQ(r.of(j.invars[0]), s1);
  EXPECT_EQ(r.of(j.invars[2]), s2);
  EXPECT_EQ(r.of(j.eqns[1].outputs[0]), s2);
  // One reshard: d, after the add (before c + d), 448 elements per device (case file: each
  // device holds 512 of d before and after, 64 of which it already had), 8 * 448 in all.
  ASSERT_EQ(r.reshards.size(), 1u) << r.text;
  const auto& p = r.reshards[0];
  EXPECT_EQ(p.var, d);
  EXPECT_EQ(p.eqn, 1u);
  EXPECT_FALSE(p.on_result);
  EXPECT_EQ(p.index, 1u);
  EXPECT_EQ(dim_axes(p.from), (AxesList{{Y}, {}, {X}}));
  EXPECT_EQ(dim_axes(p.to), dim_axes(s2));
  EXPECT_EQ(p.max_received, 448);
  expect_all_valid(r, j);
  EXPECT_EQ(p.total_received, 8 * 448);
  // The alternative of running c + d in d's sharding costs two reshards of 448 (c, then the
  // result): 896, as resharding both a and b before the first add would.
  ASSERT_EQ(r.decisions.size(), 1u);
  int64_t worst = 0;
  for (auto& c : r.decisions[0].candidates) worst = std::max(worst, c.max_received);
  EXPECT_EQ(worst, 896);
  EXPECT_EQ(r.decisions[0].candidates[r.decisions[0].chosen].max_received, 448);
  EXPECT_NE(r.text.find("reshard d: "), std::string::npos) << r.text;
}

// docs/cases/reshape-keeps-sharding.md: f32[8,64] in P("x", None) on mesh (4,2), reshaped
// to [2,4,64]. Device k holds rows 2k, 2k+1, which land at [k/2, 2k%4 .. 2k%4+1]: without any
// communication the result is {"x":(1)2}, {"x":(2)2}, {} (the major half of x on dim 0).
TEST(Propagation, ReshapeSplitsTheAxisIntoSubAxesWithoutReshard) {
  auto m = mesh42();
  auto cj = mj::make_jaxpr([](Array x) {
    return mj::lax::reshape(x, {2, 4, 64});
  })(zeros({8, 64}));
  const auto& j = *cj.jaxpr;
  auto r = mj::propagate_shardings(j, {named(m, mj::P("x", mj::None{}), 2)}, {}, *m);
  const Sharding& y = r.of(j.eqns[0].outputs[0]);
  EXPECT_EQ(dim_axes(y), (AxesList{{AxisRef::sub("x", 1, 2)}, {AxisRef::sub("x", 2, 2)}, {}}));
  EXPECT_NO_THROW(y.check({2, 4, 64}));
  EXPECT_TRUE(r.reshards.empty()) << r.text;

  // Backward: the result's sub-axes merge back into "x" on the operand's dim 0.
  Sharding out = Sharding::replicated_on(m, 3);
  out.dims[0].axes = {AxisRef::sub("x", 1, 2)};
  out.dims[1].axes = {AxisRef::sub("x", 2, 2)};
  auto b = mj::propagate_shardings(j, {}, {out}, *m);
  EXPECT_EQ(dim_axes(b.of(j.invars[0])), (AxesList{{X}, {}}));
  EXPECT_TRUE(b.reshards.empty()) << b.text;
  expect_all_valid(b, j);
}

TEST(Propagation, UserShardingsNeverMoveAndTheConflictIsOneReshard) {
  auto m = mesh42();
  auto cj = mj::make_jaxpr([](Array x) { return unary(x); })(zeros({8, 4}));
  const auto& j = *cj.jaxpr;
  Sharding in = named(m, mj::P("x", mj::None{}), 2);
  Sharding out = named(m, mj::P(mj::None{}, "x"), 2);
  auto r = mj::propagate_shardings(j, {in}, {out}, *m);
  EXPECT_EQ(r.of(j.invars[0]), in);
  EXPECT_EQ(r.of(j.eqns[0].outputs[0]), out);
  // [8,4]: each device holds rows 2i..2i+1 (8 elements) and needs column i (8 elements); it
  // already has 2 of them, so it receives 6; 48 in all.
  ASSERT_EQ(r.reshards.size(), 1u) << r.text;
  EXPECT_EQ(r.reshards[0].max_received, 6);
  EXPECT_EQ(r.reshards[0].total_received, 48);
}

TEST(Propagation, NeedReplicationFactorGathersTheOperand) {
  auto m = mesh42();
  auto cj = mj::make_jaxpr([](Array x) { return mj::lax::cumsum(x, 0); })(zeros({8, 4}));
  const auto& j = *cj.jaxpr;
  auto r = mj::propagate_shardings(j, {named(m, mj::P("x", "y"), 2)}, {}, *m);
  // Dim 0 cannot stay on "x"; dim 1 keeps "y". Each device holds 2x2 and needs 8x2: receives 12.
  EXPECT_EQ(dim_axes(r.of(j.eqns[0].outputs[0])), (AxesList{{}, {Y}}));
  ASSERT_EQ(r.reshards.size(), 1u) << r.text;
  EXPECT_FALSE(r.reshards[0].on_result);
  EXPECT_EQ(dim_axes(r.reshards[0].to), (AxesList{{}, {Y}}));
  EXPECT_EQ(r.reshards[0].max_received, 12);
  EXPECT_EQ(r.reshards[0].total_received, 96);
}

TEST(Propagation, OpenUserDimGainsAxesClosedOnesDoNot) {
  auto m = mesh42();
  auto cj = mj::make_jaxpr([](Array x, Array y) { return binary(x, y); })(zeros({8, 4}),
                                                                          zeros({8, 4}));
  const auto& j = *cj.jaxpr;
  Sharding a = named(m, mj::P(mj::P::UNCONSTRAINED, mj::None{}), 2);
  Sharding b = named(m, mj::P("x", "y"), 2);
  auto r = mj::propagate_shardings(j, {a, b}, {}, *m);
  // Dim 0 of x is open and takes "x" from y. Factor 1: x's closed {} is a prefix of y's closed
  // {"y"}, so they are compatible (Shardy) and the result takes {"y"}; x's closed dim cannot.
  EXPECT_EQ(dim_axes(r.of(j.invars[0])), (AxesList{{X}, {}}));
  EXPECT_EQ(dim_axes(r.of(j.invars[1])), (AxesList{{X}, {Y}}));
  EXPECT_EQ(dim_axes(r.of(j.eqns[0].outputs[0])), (AxesList{{X}, {Y}}));
  // So x is sliced locally to y's sharding before the add: one reshard, nothing received.
  ASSERT_EQ(r.reshards.size(), 1u) << r.text;
  EXPECT_EQ(r.reshards[0].index, 0u);
  EXPECT_FALSE(r.reshards[0].on_result);
  EXPECT_EQ(dim_axes(r.reshards[0].to), (AxesList{{X}, {Y}}));
  EXPECT_EQ(r.reshards[0].max_received, 0);
  EXPECT_EQ(r.reshards[0].total_received, 0);
}

TEST(Propagation, Errors) {
  auto m = mesh42();
  // A primitive without a sharding rule (a per-device collective; pjit and the other primitives
  // with bodies are entered, tests/sharding/test_bodies.cc).
  auto cj = mj::make_jaxpr([](Array x) { return mj::lax::all_reduce(x, {"x"}, 4, "sum"); })(zeros({8}));
  try {
    mj::propagate_shardings(*cj.jaxpr, {}, {}, *m);
    FAIL() << "expected ShardingError";
  } catch (const mj::ShardingError& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce"), std::string::npos) << e.what();
  }
  auto ok = mj::make_jaxpr([](Array x) { return unary(x); })(zeros({8}));
  EXPECT_THROW(mj::propagate_shardings(*ok.jaxpr, {std::nullopt, std::nullopt}, {}, *m),
               mj::ShardingError);
  auto other = std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7},
                                                mj::Shape{8}, std::vector<std::string>{"x"});
  EXPECT_THROW(mj::propagate_shardings(*ok.jaxpr, {named(other, mj::P("x"), 1)}, {}, *m),
               mj::ShardingError);
  // A spec longer than the rank fails Sharding::check.
  Sharding bad = Sharding::replicated_on(m, 2);
  EXPECT_THROW(mj::propagate_shardings(*ok.jaxpr, {bad}, {}, *m), mj::ShardingError);
}

// reduce_sum over dim 0 of x [8,16] in P("x","y"): the result [16] is computed in [{"y"}] with
// partial sums over "x", local 8 elements. Only returned: reduce_scatter onto [{"y","x"}]
// (16 / 8 = 2 elements each), (4-1)/4 * 8 = 6 received per device, 48 in all (an all_reduce
// would receive 2*(4-1)/4 * 8 = 12).
TEST(Propagation, ReduceSumOverAShardedDimIsReducedAtTheOutput) {
  auto m = mesh42();
  auto cj = mj::make_jaxpr([](Array x) { return mj::lax::reduce_sum(x, {0}); })(zeros({8, 16}));
  const auto& j = *cj.jaxpr;
  auto r = mj::propagate_shardings(j, {named(m, mj::P("x", "y"), 2)}, {}, *m);
  ASSERT_EQ(r.reshards.size(), 1u) << r.text;
  EXPECT_EQ(dim_axes(r.reshards[0].from), (AxesList{{Y}}));
  EXPECT_EQ(r.reshards[0].from.unreduced, (std::vector<AxisRef>{X}));
  EXPECT_EQ(dim_axes(r.reshards[0].to), (AxesList{{Y, X}}));
  EXPECT_EQ(r.reshards[0].max_received, 6);
  EXPECT_EQ(r.reshards[0].total_received, 48);
  EXPECT_TRUE(r.of(j.eqns[0].outputs[0]).unreduced.empty());
}

// The same sum returned and read by sin: only the same dims are a target (a reduce_scatter
// would change what sin reads), so one all_reduce after the sum, 12 per device (derived above),
// 96 in all, shared by sin and the output.
TEST(Propagation, AReducedOutputThatIsAlsoReadIsAllReducedOnce) {
  auto m = mesh42();
  auto cj = mj::make_jaxpr([](Array x) {
    Array s = mj::lax::reduce_sum(x, {0});
    return std::vector<Array>{s, unary(s)};
  })(zeros({8, 16}));
  const auto& j = *cj.jaxpr;
  auto r = mj::propagate_shardings(j, {named(m, mj::P("x", "y"), 2)}, {}, *m);
  ASSERT_EQ(r.reshards.size(), 1u) << r.text;
  EXPECT_TRUE(r.reshards[0].on_result);
  EXPECT_EQ(r.reshards[0].eqn, 0u);
  EXPECT_EQ(dim_axes(r.reshards[0].to), (AxesList{{Y}}));
  EXPECT_TRUE(r.reshards[0].to.unreduced.empty());
  EXPECT_EQ(r.reshards[0].max_received, 12);
  EXPECT_EQ(r.reshards[0].total_received, 96);
  EXPECT_EQ(dim_axes(r.of(j.eqns[1].outputs[0])), (AxesList{{Y}}));
}

TEST(Propagation, PartialSumsAreReducedBeforeANonLinearConsumer) {
  auto m = mesh42();
  auto cj = mj::make_jaxpr([](Array a, Array b) { return unary(dot_2d(a, b)); })(
      zeros({8, 16}), zeros({16, 4}));
  const auto& j = *cj.jaxpr;
  auto r = mj::propagate_shardings(
      j, {named(m, mj::P(mj::None{}, "x"), 2), named(m, mj::P("x", mj::None{}), 2)}, {}, *m);
  EXPECT_EQ(r.of(j.eqns[0].outputs[0]).unreduced, (std::vector<AxisRef>{X}));
  EXPECT_TRUE(r.of(j.eqns[1].outputs[0]).unreduced.empty());
  // sin needs the sums: an all-reduce of the replicated [8,4] over k = 4 devices of "x",
  // 2*(4-1)/4 * 32 = 48 elements received per device, 8 * 48 in all.
  ASSERT_EQ(r.reshards.size(), 1u) << r.text;
  EXPECT_EQ(r.reshards[0].eqn, 1u);
  EXPECT_EQ(r.reshards[0].from.unreduced, (std::vector<AxisRef>{X}));
  EXPECT_TRUE(r.reshards[0].to.unreduced.empty());
  EXPECT_EQ(r.reshards[0].max_received, 48);
  EXPECT_EQ(r.reshards[0].total_received, 384);
}
