// Tests of user priorities in sharding propagation (sharding/propagate_priorities): the p0 user
// sharding wins a conflict over a p1 one, swapping priorities swaps the winner, run_spmd = eager.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/api.h"
#include "core/lax.h"
#include "jit/reference/reference_executor.h"
#include "sharding/boxes.h"
#include "sharding/partition_spec.h"
#include "sharding/partition_spmd.h"
#include "sharding/propagate_shardings.h"
#include "sharding/sharded_array.h"
#include "tests/sharding/spmd_helpers.h"

namespace mj = minijax;
using minijax::Array;
using minijax::AxisRef;
using minijax::ShapedArray;
using minijax::Sharding;
using minijax::Var;

namespace {

using minijax::testing::mesh42;
using minijax::testing::ramp;
using minijax::testing::cut;

// [{axis}pN, {}] on `m` for an f32[8,4] value (priority -1: none).
Sharding rows_on(const std::shared_ptr<const mj::Mesh>& m, const std::string& axis, int64_t priority) {
  Sharding s = mj::to_sharding(mj::NamedSharding{m, mj::P(axis, mj::None{}), mj::MemoryKind::device}, 2);
  s.dims[0].priority = priority;
  return s;
}

// sin(x + y) on f32[8,4]: the add's two operands share every factor.
mj::ClosedJaxpr add_then_sin() {
  Array z = Array::allocate(ShapedArray{{8, 4}, mj::DType::f32});
  return mj::make_jaxpr([](Array x, Array y) { return mj::lax::sin(mj::lax::add(x, y)); })(z, z);
}

// Propagates with the given input shardings, partitions, runs on 8 devices and checks every
// device's output block against the eager (unsharded) result's block.
mj::PropagationResult run_and_check(const mj::ClosedJaxpr& cj, const Sharding& sx, const Sharding& sy,
                                    const std::shared_ptr<const mj::Mesh>& m) {
  mj::PropagationResult prop = mj::propagate_shardings(*cj.jaxpr, {sx, sy}, {}, *m);
  mj::Jaxpr program = mj::partition_spmd(*cj.jaxpr, prop, *m);
  Array x = ramp({8, 4}, 0.25f, -3), y = ramp({8, 4}, -0.5f, 2);
  std::vector<std::vector<Array>> dev(m->num_devices());
  for (auto [a, s] : {std::pair{x, sx}, std::pair{y, sy}}) {
    auto pieces = cut(a, s);
    for (size_t p = 0; p < dev.size(); ++p) dev[p].push_back(pieces[p]);
  }
  auto got = mj::run_spmd(program, *m, dev, nullptr);
  Array want = mj::eval_jaxpr(cj, {x, y})[0];
  auto blocks = cut(want, prop.of(std::get<Var>(cj.jaxpr->outvars[0])));
  for (size_t p = 0; p < blocks.size(); ++p) {
    EXPECT_EQ(got[p][0].shape(), blocks[p].shape()) << "device " << p;
    for (int64_t i = 0; i < blocks[p].aval().size(); ++i)
      EXPECT_FLOAT_EQ(got[p][0].data<float>()[i], blocks[p].data<float>()[i]) << "device " << p << " at " << i;
  }
  return prop;
}

std::vector<AxisRef> rows_axes(const mj::PropagationResult& r, const Var& v) { return r.of(v).dims[0].axes; }

}  // namespace

// x:[{"x"}p1, {}], y:[{"y"}p0, {}]. Round 0: only y's dim is an opinion, so the add's row factor
// takes {"y"} and its result (and sin's) get [{"y"}, {}]. Round 1: x's {"x"} now conflicts with
// {"y"}; the common prefix is empty, so nothing grows and the result keeps {"y"}. Placement: the
// candidate of operand 1 needs only x -> [{"y"}, {}] (one reshard before the add; the other
// candidates reshard y or the result as well).
TEST(Priorities, P0WinsTheSharedFactorAndTheP1OperandIsResharded) {
  auto m = mesh42();
  auto cj = add_then_sin();
  auto prop = run_and_check(cj, rows_on(m, "x", 1), rows_on(m, "y", 0), m);
  const mj::Eqn& add = cj.jaxpr->eqns[0];
  EXPECT_EQ(rows_axes(prop, add.outputs[0]), std::vector<AxisRef>{AxisRef::axis("y")}) << prop.text;
  EXPECT_EQ(rows_axes(prop, cj.jaxpr->eqns[1].outputs[0]), std::vector<AxisRef>{AxisRef::axis("y")});
  ASSERT_EQ(prop.reshards.size(), 1u) << prop.text;
  EXPECT_EQ(prop.reshards[0].eqn, 0u);
  EXPECT_FALSE(prop.reshards[0].on_result);
  EXPECT_EQ(prop.reshards[0].index, 0u);  // x, operand 0
  EXPECT_EQ(prop.reshards[0].to.dims[0].axes, std::vector<AxisRef>{AxisRef::axis("y")});
  // User shardings never move: x keeps its axes and its priority.
  EXPECT_EQ(prop.of(cj.jaxpr->invars[0]).dims[0].axes, std::vector<AxisRef>{AxisRef::axis("x")});
  EXPECT_EQ(prop.of(cj.jaxpr->invars[0]).dims[0].priority, 1);
  // The propagated result inherits no priority.
  EXPECT_EQ(prop.of(add.outputs[0]).dims[0].priority, -1);
}

// Swapping the priorities swaps the winner: the result gets {"x"} and y is the one resharded.
TEST(Priorities, SwappingPrioritiesSwapsTheWinner) {
  auto m = mesh42();
  auto cj = add_then_sin();
  auto prop = run_and_check(cj, rows_on(m, "x", 0), rows_on(m, "y", 1), m);
  EXPECT_EQ(rows_axes(prop, cj.jaxpr->eqns[0].outputs[0]), std::vector<AxisRef>{AxisRef::axis("x")}) << prop.text;
  EXPECT_EQ(rows_axes(prop, cj.jaxpr->eqns[1].outputs[0]), std::vector<AxisRef>{AxisRef::axis("x")});
  ASSERT_EQ(prop.reshards.size(), 1u) << prop.text;
  EXPECT_FALSE(prop.reshards[0].on_result);
  EXPECT_EQ(prop.reshards[0].index, 1u);  // y, operand 1
  EXPECT_EQ(prop.reshards[0].to.dims[0].axes, std::vector<AxisRef>{AxisRef::axis("x")});
}

// A user dim without a priority propagates only in the last round, after every pN: y's p2
// still wins over x's unprioritized {"x"}.
TEST(Priorities, DimsWithoutPriorityComeLast) {
  auto m = mesh42();
  auto cj = add_then_sin();
  auto prop = run_and_check(cj, rows_on(m, "x", -1), rows_on(m, "y", 2), m);
  EXPECT_EQ(rows_axes(prop, cj.jaxpr->eqns[0].outputs[0]), std::vector<AxisRef>{AxisRef::axis("y")}) << prop.text;
  ASSERT_EQ(prop.reshards.size(), 1u) << prop.text;
  EXPECT_EQ(prop.reshards[0].index, 0u);
}

// Without priorities (one round, as before): {"x"} and {"y"} are conflicting closed opinions on
// the row factor, whose merge is their common prefix, empty; so the add's result gets no row
// axes from propagation (only placement may then reshard), and the run still equals eager.
TEST(Priorities, WithoutPrioritiesTheConflictMergesToNothing) {
  auto m = mesh42();
  auto cj = add_then_sin();
  mj::PropagationResult prop = mj::propagate_shardings(*cj.jaxpr, {rows_on(m, "x", -1), rows_on(m, "y", -1)}, {}, *m);
  EXPECT_TRUE(rows_axes(prop, cj.jaxpr->eqns[0].outputs[0]).empty()) << prop.text;
  EXPECT_TRUE(rows_axes(prop, cj.jaxpr->eqns[1].outputs[0]).empty()) << prop.text;
  run_and_check(cj, rows_on(m, "x", -1), rows_on(m, "y", -1), m);
}

// A with_sharding_constraint is a user sharding too: sin(x) constrained to [{"y"}p0, {}] with x in
// [{"x"}p1, {}]. Round 0: only the constraint counts, so sin's result (the constraint's operand)
// gets {"y"} backward; round 1: x's {"x"} conflicts with it and nothing grows. Without
// priorities the forward sweep reaches sin first and its result takes x's {"x"}; the constraint's
// {"y"} then conflicts with it. Either way the partitioned program equals eager.
TEST(Priorities, ShardingConstraintPriorityDecidesTheProducer) {
  auto m = mesh42();
  for (int64_t pc : {int64_t(0), int64_t(-1)}) {
    Sharding c = rows_on(m, "y", pc), sx = rows_on(m, "x", pc < 0 ? -1 : 1);
    Array x = ramp({8, 4}, 0.25f, -3);
    auto cj = mj::make_jaxpr([&](Array a) { return mj::with_sharding_constraint(mj::lax::sin(a), c); })(x);
    mj::PropagationResult prop = mj::propagate_shardings(*cj.jaxpr, {sx}, {}, *m);
    const Var sin_out = cj.jaxpr->eqns[0].outputs[0];
    EXPECT_EQ(rows_axes(prop, sin_out), std::vector<AxisRef>{AxisRef::axis(pc == 0 ? "y" : "x")})
        << "constraint priority " << pc << "\n" << prop.text;
    ASSERT_EQ(prop.reshards.size(), 1u) << prop.text;
    mj::Jaxpr program = mj::partition_spmd(*cj.jaxpr, prop, *m);
    auto pieces = cut(x, sx);
    std::vector<std::vector<Array>> dev;
    for (auto& p : pieces) dev.push_back({p});
    auto got = mj::run_spmd(program, *m, dev, nullptr);
    auto blocks = cut(mj::eval_jaxpr(cj, {x})[0], prop.of(std::get<Var>(cj.jaxpr->outvars[0])));
    for (size_t p = 0; p < blocks.size(); ++p) {
      ASSERT_EQ(got[p][0].shape(), blocks[p].shape()) << "device " << p;
      for (int64_t i = 0; i < blocks[p].aval().size(); ++i)
        EXPECT_FLOAT_EQ(got[p][0].data<float>()[i], blocks[p].data<float>()[i]) << "device " << p;
    }
  }
}
