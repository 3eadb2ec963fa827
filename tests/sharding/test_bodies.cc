// Tests of sharding through bodies (sharding/propagate_bodies, sharding/partition_bodies, the
// lockstep loops of run_spmd): scan, while, cond, pjit/closed_call, checkpoint, custom_jvp.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/views/control_flow.h"
#include "core/bodies.h"
#include "autodiff/checkpoint.h"
#include "autodiff/custom_derivatives.h"
#include "autodiff/grad.h"
#include "core/api.h"
#include "jit/jit.h"
#include "core/control_flow.h"
#include "core/errors.h"
#include "core/lax.h"
#include "jit/reference/reference_executor.h"
#include "sharding/boxes.h"
#include "sharding/partition_spec.h"
#include "sharding/partition_spmd.h"
#include "sharding/propagate_shardings.h"
#include "sharding/sharded_array.h"
#include "tests/sharding/spmd_helpers.h"

namespace mj = minijax;
namespace lax = minijax::lax;
using minijax::Array;
using minijax::ShapedArray;
using minijax::Sharding;
using OptSh = std::optional<Sharding>;

namespace {

using minijax::testing::mesh42;
using minijax::testing::named;
using minijax::testing::cut;

// sin(i * scale + offset) reshaped to `shape`, f32: values of both signs, no pattern a wrong
// block could match.
Array wave(mj::Shape shape, float scale = 0.37f, float offset = 0.1f) {
  Array a = Array::allocate(ShapedArray{shape, mj::DType::f32});
  float* p = a.mutable_data<float>();
  for (int64_t i = 0; i < a.aval().size(); ++i) p[i] = std::sin(float(i) * scale + offset);
  return a;
}

struct Ran {
  mj::PropagationResult prop;
  mj::Jaxpr program;
  mj::SpmdStats stats;
  std::vector<std::vector<Array>> per_device;
  std::vector<Array> expected;
};

// Propagates (the closed jaxpr's consts replicated), partitions, runs under run_spmd on the
// blocks of the inputs, and evaluates the unsharded program eagerly for comparison.
Ran run(const mj::ClosedJaxpr& cj, const std::vector<Array>& args, std::vector<OptSh> in,
        const std::vector<OptSh>& out, const std::shared_ptr<const mj::Mesh>& m) {
  Ran r;
  std::vector<Array> all = cj.consts;
  all.insert(all.end(), args.begin(), args.end());
  if (!in.empty()) in.insert(in.begin(), cj.consts.size(), std::nullopt);
  r.prop = mj::propagate_shardings(*cj.jaxpr, in, out, *m);
  r.program = mj::partition_spmd(*cj.jaxpr, r.prop, *m);
  std::vector<mj::Var> ins = cj.jaxpr->constvars;
  ins.insert(ins.end(), cj.jaxpr->invars.begin(), cj.jaxpr->invars.end());
  std::vector<std::vector<Array>> dev(m->num_devices());
  for (size_t k = 0; k < all.size(); ++k) {
    auto pieces = cut(all[k], r.prop.of(ins[k]));
    for (size_t p = 0; p < dev.size(); ++p) dev[p].push_back(pieces[p]);
  }
  r.per_device = mj::run_spmd(r.program, *m, dev, &r.stats);
  r.expected = mj::eval_jaxpr(cj, args);
  return r;
}

// Every device's output k equals its block of the unsharded result (relative tolerance: a
// sharded sum adds in another order).
void expect_shards(const Ran& r, const mj::Jaxpr& j, float tol = 1e-5f) {
  ASSERT_EQ(r.expected.size(), j.outvars.size());
  for (size_t k = 0; k < r.expected.size(); ++k) {
    Array want_global = lax::convert_element_type(r.expected[k], mj::DType::f32);
    auto want = cut(want_global, r.prop.of(std::get<mj::Var>(j.outvars[k])));
    for (size_t p = 0; p < want.size(); ++p) {
      Array got = lax::convert_element_type(r.per_device[p][k], mj::DType::f32);
      ASSERT_EQ(got.shape(), want[p].shape()) << "output " << k << " device " << p;
      for (int64_t i = 0; i < got.aval().size(); ++i) {
        float w = want[p].data<float>()[i];
        ASSERT_NEAR(got.data<float>()[i], w, tol * (1 + std::fabs(w)))
            << "output " << k << " device " << p << " at " << i << "\n" << r.prop.text;
      }
    }
  }
}

const mj::Eqn* find_eqn(const mj::Jaxpr& j, const std::string& prim) {
  for (auto& e : j.eqns)
    if (e.primitive->name == prim) return &e;
  return nullptr;
}

bool has_collective(const mj::Jaxpr& j) {
  for (auto& e : j.eqns) {
    const std::string& n = e.primitive->name;
    if (n == "all_gather" || n == "all_reduce" || n == "reduce_scatter" || n == "all_to_all" ||
        n == "collective_permute" || n == "ragged_all_to_all")
      return true;
  }
  return false;
}

using AxesList = std::vector<std::vector<mj::AxisRef>>;
AxesList dim_axes(const Sharding& s) {
  AxesList out;
  for (auto& d : s.dims) out.push_back(d.axes);
  return out;
}
const mj::AxisRef X = mj::AxisRef::axis("x"), Y = mj::AxisRef::axis("y");

// scan body: c' = sin(c) * x + c, y = 2 c'.
std::pair<Array, Array> step(const Array& c, const Array& x) {
  Array n = lax::add(lax::mul(lax::sin(c), x), c);
  return {n, lax::mul(n, lax::full(n.shape(), 2.0, mj::DType::f32))};
}

}  // namespace

// A scan whose carry and xs are sharded alike: propagation ties init, body carry and final
// carry (and xs dims 1.. to the body's x), so no reshard anywhere; the body runs on [2,2]
// blocks with no collective.
TEST(Bodies, ShardedScanEqualsEager) {
  auto m = mesh42();
  auto f = [](Array c, Array xs) { return mj::scan(step, c, xs); };
  Array c = wave({8, 4}), xs = wave({6, 8, 4}, 0.21f, -0.4f);
  auto cj = mj::make_jaxpr(f)(c, xs);
  Ran r = run(cj, {c, xs}, {named(m, mj::P("x", "y"), 2), named(m, mj::P(mj::None{}, "x", "y"), 3)}, {}, m);
  EXPECT_TRUE(r.prop.reshards.empty()) << r.prop.text;
  const mj::Eqn* scan = find_eqn(*cj.jaxpr, "scan");
  ASSERT_NE(scan, nullptr);
  const mj::Jaxpr& body = *mj::subjaxprs(*scan).at(0).jaxpr->jaxpr;
  EXPECT_EQ(dim_axes(r.prop.of(body.invars[0])), (AxesList{{X}, {Y}}));
  EXPECT_EQ(dim_axes(r.prop.of(body.invars[1])), (AxesList{{X}, {Y}}));
  EXPECT_EQ(dim_axes(r.prop.of(scan->outputs[1])), (AxesList{{}, {X}, {Y}}));
  const mj::Eqn* pscan = find_eqn(r.program, "scan");
  ASSERT_NE(pscan, nullptr);
  EXPECT_EQ(mj::scan_params(*pscan).length, 6);
  const mj::Jaxpr& pbody = *mj::subjaxprs(*pscan).at(0).jaxpr->jaxpr;
  EXPECT_EQ(pbody.invars[0].aval().shape, (mj::Shape{2, 2}));
  EXPECT_EQ(pscan->outputs[1].aval().shape, (mj::Shape{6, 2, 2}));
  EXPECT_TRUE(r.stats.collectives.empty()) << mj::to_string(r.program);
  expect_shards(r, *cj.jaxpr);
}

// A carry conflict: the init is fixed on dim 0, the final carry on dim 1. The carry keeps the
// init's sharding through the loop and ONE reshard after the loop gives the final carry its
// sharding; nothing is resharded per iteration.
TEST(Bodies, CarryConflictIsOneReshardAfterTheLoop) {
  auto m = mesh42();
  auto f = [](Array c, Array xs) { return mj::scan(step, c, xs).first; };
  Array c = wave({8, 4}), xs = wave({5, 8, 4}, 0.21f, -0.4f);
  auto cj = mj::make_jaxpr(f)(c, xs);
  Ran r = run(cj, {c, xs}, {named(m, mj::P("x", mj::None{}), 2), std::nullopt},
              {named(m, mj::P(mj::None{}, "x"), 2)}, m);
  const mj::Eqn* scan = find_eqn(*cj.jaxpr, "scan");
  ASSERT_NE(scan, nullptr);
  EXPECT_TRUE(r.prop.reshards_in(*mj::subjaxprs(*scan).at(0).jaxpr->jaxpr).empty()) << r.prop.text;
  ASSERT_EQ(r.prop.reshards.size(), 1u) << r.prop.text;
  EXPECT_TRUE(r.prop.reshards[0].on_result) << r.prop.text;
  ASSERT_EQ(r.stats.collectives.size(), 1u) << mj::to_string(r.program);  // once, not per iteration
  expect_shards(r, *cj.jaxpr);
}

// A carry that the body transposes: on "x" in dim 0 it comes back on "x" in dim 1, so keeping it
// sharded needs a reshard every iteration (an all_to_all: each device holds 4 of the 16
// elements and keeps 1 of those it needs, 3 received), while replicating the carry costs one
// gather before the loop (12 of 16 received per device) and nothing inside. Reshards inside a
// scan count `length` times: 6 iterations x 3 = 18 > 12 -> replicate; 2 x 3 = 6 < 12 -> keep
// the carry sharded and reshard in the loop.
TEST(Bodies, LoopCarriedReshardCostsLengthTimes) {
  auto m = mesh42();
  for (int64_t length : {6, 2}) {
    auto f = [length](Array c) {
      mj::ScanOptions o;
      o.length = length;
      return mj::scan([](const Array& v, const mj::None&) { return std::pair{lax::sin(lax::transpose(v, {1, 0})), mj::None{}}; },
                      c, o)
          .first;
    };
    Array c = wave({4, 4});
    auto cj = mj::make_jaxpr(f)(c);
    Ran r = run(cj, {c}, {named(m, mj::P("x", mj::None{}), 2)}, {}, m);
    const mj::Eqn* scan = find_eqn(*cj.jaxpr, "scan");
    ASSERT_NE(scan, nullptr);
    const mj::Jaxpr& body = *mj::subjaxprs(*scan).at(0).jaxpr->jaxpr;
    const auto& inside = r.prop.reshards_in(body);
    if (length == 6) {
      EXPECT_TRUE(inside.empty()) << r.prop.text;
      ASSERT_EQ(r.prop.reshards.size(), 1u) << r.prop.text;
      EXPECT_EQ(r.prop.reshards[0].max_received, 12);
      EXPECT_EQ(dim_axes(r.prop.of(body.invars[0])), (AxesList{{}, {}}));
      EXPECT_EQ(r.stats.collectives.size(), 1u);
    } else {
      EXPECT_TRUE(r.prop.reshards.empty()) << r.prop.text;
      ASSERT_EQ(inside.size(), 1u) << r.prop.text;
      EXPECT_EQ(inside[0].max_received, 3);
      EXPECT_EQ(dim_axes(r.prop.of(body.invars[0])), (AxesList{{X}, {}}));
      EXPECT_EQ(r.stats.collectives.size(), 2u);  // once per iteration
    }
    expect_shards(r, *cj.jaxpr);
  }
}

// A loop-invariant const the body needs in another sharding: the carry holds "x" on dim 0, W is
// fixed on "x" in dim 1, and c + W needs W like c. Resharding W inside the body costs 6 per
// device per iteration (each device holds 8 of W's 32 elements, needs another 8, has 2 of
// them); hoisting it (the body's W fixed in the needed sharding, so the reshard happens once
// before the loop) costs 6 once: with length 5, 6 < 30 -> one reshard outside, none inside.
TEST(Bodies, LoopInvariantConstReshardIsHoisted) {
  auto m = mesh42();
  auto f = [](Array c, Array w) {
    mj::ScanOptions o;
    o.length = 5;
    return mj::scan([&w](const Array& v, const mj::None&) { return std::pair{lax::add(lax::sin(v), w), mj::None{}}; },
                    c, o)
        .first;
  };
  Array c = wave({8, 4}), w = wave({8, 4}, 0.3f, 1.0f);
  auto cj = mj::make_jaxpr(f)(c, w);
  Ran r = run(cj, {c, w}, {named(m, mj::P("x", mj::None{}), 2), named(m, mj::P(mj::None{}, "x"), 2)}, {}, m);
  const mj::Eqn* scan = find_eqn(*cj.jaxpr, "scan");
  ASSERT_NE(scan, nullptr);
  EXPECT_TRUE(r.prop.reshards_in(*mj::subjaxprs(*scan).at(0).jaxpr->jaxpr).empty()) << r.prop.text;
  ASSERT_EQ(r.prop.reshards.size(), 1u) << r.prop.text;
  EXPECT_EQ(r.prop.reshards[0].max_received, 6) << r.prop.text;
  EXPECT_EQ(dim_axes(r.prop.reshards[0].to), (AxesList{{X}, {}})) << r.prop.text;
  EXPECT_EQ(r.stats.collectives.size(), 1u) << mj::to_string(r.program);
  expect_shards(r, *cj.jaxpr);
}

// Nested loops: a scan whose body scans again (and calls a jit'ed function). Shardings reach the
// innermost body and back; no reshard anywhere; values equal eager.
TEST(Bodies, NestedScansEqualEager) {
  auto m = mesh42();
  auto inner = mj::jit([](Array v) { return lax::tanh(v); }, "inner");
  auto f = [inner](Array c, Array xss) {
    return mj::scan(
        [inner](const Array& c1, const Array& xs) {
          auto [cf, ys] = mj::scan(step, c1, xs);
          return std::pair{inner(cf), lax::reduce_sum(ys, {0})};
        },
        c, xss);
  };
  Array c = wave({8, 4}), xss = wave({3, 2, 8, 4}, 0.13f, 0.2f);
  auto cj = mj::make_jaxpr(f)(c, xss);
  Ran r = run(cj, {c, xss}, {named(m, mj::P("x", "y"), 2), std::nullopt}, {}, m);
  EXPECT_TRUE(r.prop.reshards.empty()) << r.prop.text;
  EXPECT_EQ(dim_axes(r.prop.of(cj.jaxpr->invars[1])), (AxesList{{}, {}, {X}, {Y}})) << r.prop.text;
  EXPECT_TRUE(r.stats.collectives.empty()) << mj::to_string(r.program);
  expect_shards(r, *cj.jaxpr);
}

// Reverse-mode through that scan: the transposed scan (reverse=True, carries of cotangents) is
// partitioned like any other code; gradients equal the unsharded ones.
TEST(Bodies, GradOfShardedScanEqualsEager) {
  auto m = mesh42();
  auto loss = [](Array c, Array xs) {
    auto [cf, ys] = mj::scan(step, c, xs);
    return lax::add(lax::reduce_sum(lax::mul(cf, cf), {0, 1}), lax::reduce_sum(ys, {0, 1, 2}));
  };
  auto g = [loss](Array c, Array xs) { return mj::grad(loss, mj::argnums<0, 1>)(c, xs); };
  Array c = wave({8, 4}), xs = wave({5, 8, 4}, 0.21f, -0.4f);
  auto cj = mj::make_jaxpr(g)(c, xs);
  ASSERT_NE(mj::to_string(*cj.jaxpr).find("reverse=True"), std::string::npos) << mj::to_string(*cj.jaxpr);
  Sharding sc = named(m, mj::P("x", "y"), 2), sx = named(m, mj::P(mj::None{}, "x", "y"), 3);
  Ran r = run(cj, {c, xs}, {sc, sx}, {sc, sx}, m);
  expect_shards(r, *cj.jaxpr, 1e-4f);
}

// The reshape case (docs/cases/reshape-keeps-sharding.md) with its scan: f32[8,64] on
// P("x", None), reshaped to [2,4,64], scanned over dim 0. One reshard before the loop, to the
// cheapest sharding with dim 0 unsharded: [{}, {"x":(2)2}, {"x":(1)2}] — device x = 2a + b
// (a = "x":(1)2, b = "x":(2)2) holds [a, 2b..2b+1, :] (128 elements) and needs
// [:, 2b..2b+1, 32a..32a+31] (128), of which [a, 2b..2b+1, 32a..] (64) it has: 64 received.
// Gathering dim 0 instead ([{}, {"x":(2)2}, {}]) would receive 128. Inside the loop: nothing.
TEST(Bodies, ReshapeCaseOneReshardBeforeTheLoopNoneInside) {
  auto m = mesh42();
  auto f = [](Array a, Array c0) {
    Array b = lax::reshape(a, {2, 4, 64});
    return mj::scan([](const Array& c, const Array& x) { return std::pair{lax::add(c, x), lax::sin(x)}; }, c0, b);
  };
  Array a = wave({8, 64}), c0 = wave({4, 64}, 0.05f, 1.0f);
  auto cj = mj::make_jaxpr(f)(a, c0);
  auto prop = mj::propagate_shardings(*cj.jaxpr, {named(m, mj::P("x", mj::None{}), 2), std::nullopt}, {}, *m);
  const mj::Eqn* scan = find_eqn(*cj.jaxpr, "scan");
  ASSERT_NE(scan, nullptr);
  const mj::Jaxpr& body = *mj::subjaxprs(*scan).at(0).jaxpr->jaxpr;
  const mj::AxisRef major = mj::AxisRef::sub("x", 1, 2), minor = mj::AxisRef::sub("x", 2, 2);
  ASSERT_EQ(prop.reshards.size(), 1u) << prop.text;
  const auto& rs = prop.reshards[0];
  EXPECT_FALSE(rs.on_result);
  EXPECT_EQ(rs.var, scan->inputs[1].index() == 0 ? std::get<mj::Var>(scan->inputs[1]) : mj::Var());
  EXPECT_EQ(dim_axes(rs.from), (AxesList{{major}, {minor}, {}})) << prop.text;
  EXPECT_EQ(dim_axes(rs.to), (AxesList{{}, {minor}, {major}})) << prop.text;
  EXPECT_EQ(rs.max_received, 64);
  EXPECT_TRUE(prop.reshards_in(body).empty()) << prop.text;
  EXPECT_EQ(dim_axes(prop.of(body.invars[1])), (AxesList{{minor}, {major}}));
  EXPECT_EQ(dim_axes(prop.of(body.invars[0])), (AxesList{{minor}, {major}}));
  EXPECT_NE(prop.text.find("reshard"), std::string::npos);
}

// The same case partitioned and run: the scan body of the SPMD program has no collective and
// the one collective run_spmd records is the reshard before the loop (64 f32 = 256 bytes received
// per device), values equal eager.
TEST(Bodies, ReshapeCaseRunsWithNoCollectiveInTheLoop) {
  auto m = mesh42();
  auto f = [](Array a, Array c0) {
    Array b = lax::reshape(a, {2, 4, 64});
    return mj::scan([](const Array& c, const Array& x) { return std::pair{lax::add(c, x), lax::sin(x)}; }, c0, b);
  };
  Array a = wave({8, 64}), c0 = wave({4, 64}, 0.05f, 1.0f);
  auto cj = mj::make_jaxpr(f)(a, c0);
  Ran r = run(cj, {a, c0}, {named(m, mj::P("x", mj::None{}), 2), std::nullopt}, {}, m);
  const mj::Eqn* pscan = find_eqn(r.program, "scan");
  ASSERT_NE(pscan, nullptr);
  EXPECT_FALSE(has_collective(*mj::subjaxprs(*pscan).at(0).jaxpr->jaxpr)) << mj::to_string(r.program);
  size_t scan_index = size_t(pscan - r.program.eqns.data());
  int64_t received = 0;
  for (auto& c : r.stats.collectives) {
    EXPECT_LT(c.eqn_index, scan_index) << c.primitive;
    for (auto b : c.bytes_received) received = std::max(received, b);
  }
  // One exchange, 64 f32 = 256 bytes received per device (the case's number).
  EXPECT_EQ(r.stats.collectives.size(), 1u) << mj::to_string(r.program);
  EXPECT_EQ(received, 256);
  expect_shards(r, *cj.jaxpr);
}

// A collective inside a loop: x_t sharded on "x" contracted with W (rows on "x") gives partial
// sums inside the body, all-reduced there before they join the replicated carry. run_spmd runs
// the body in lockstep and records the all_reduce once per iteration.
TEST(Bodies, CollectiveInsideScanRunsOncePerIteration) {
  auto m = mesh42();
  auto f = [](Array w, Array c0, Array xs) {
    return mj::scan(
        [&w](const Array& c, const Array& x) {
          Array y = lax::dot_general(x, w, lax::DotDimensionNumbers{{0}, {0}, {}, {}});
          return std::pair{lax::add(c, lax::tanh(y)), mj::None{}};
        },
        c0, xs);
  };
  Array w = wave({8, 4}), c0 = wave({4}, 0.3f), xs = wave({3, 8}, 0.11f, 0.5f);
  auto cj = mj::make_jaxpr(f)(w, c0, xs);
  Ran r = run(cj, {w, c0, xs},
              {named(m, mj::P("x", mj::None{}), 2), named(m, mj::P(mj::None{}), 1),
               named(m, mj::P(mj::None{}, "x"), 2)},
              {named(m, mj::P(mj::None{}), 1)}, m);
  const mj::Eqn* pscan = find_eqn(r.program, "scan");
  ASSERT_NE(pscan, nullptr);
  EXPECT_TRUE(has_collective(*mj::subjaxprs(*pscan).at(0).jaxpr->jaxpr)) << mj::to_string(r.program);
  size_t in_loop = 0;
  size_t scan_index = size_t(pscan - r.program.eqns.data());
  for (auto& c : r.stats.collectives) in_loop += c.eqn_index == scan_index;
  EXPECT_EQ(in_loop, 3u);  // length 3: one all_reduce per iteration
  expect_shards(r, *cj.jaxpr, 1e-5f);
}

// cond with sharded operands, both predicates: the branches are partitioned with the
// operands' shardings; the index stays replicated.
TEST(Bodies, CondWithShardedOperandsEqualsEager) {
  auto m = mesh42();
  auto f = [](Array p, Array a, Array b) {
    return mj::cond(
        p, [](const Array& u, const Array& v) { return lax::add(lax::mul(u, v), lax::sin(u)); },
        [](const Array& u, const Array& v) { return lax::sub(u, v); }, a, b);
  };
  Array a = wave({8, 4}), b = wave({8, 4}, 0.7f, 2.0f);
  for (bool pv : {true, false}) {
    Array p = lax::full({}, pv ? 1.0 : 0.0, mj::DType::bool_);
    auto cj = mj::make_jaxpr(f)(p, a, b);
    Ran r = run(cj, {p, a, b}, {std::nullopt, named(m, mj::P("x", "y"), 2), named(m, mj::P("x", "y"), 2)}, {}, m);
    EXPECT_TRUE(r.prop.reshards.empty()) << r.prop.text;
    const mj::Eqn* pc = find_eqn(r.program, "cond");
    ASSERT_NE(pc, nullptr);
    for (auto& br : mj::cond_params(*pc).branches) EXPECT_EQ(br->jaxpr->invars[0].aval().shape, (mj::Shape{2, 2}));
    EXPECT_TRUE(r.stats.collectives.empty());
    expect_shards(r, *cj.jaxpr);
  }
}

// A cond whose operand is fixed on dim 0 and whose result is fixed on dim 1 ("x" both): the
// result has one sharding, so each branch reshards its own output (one all_to_all per branch,
// inside the branch), and nothing is resharded outside.
TEST(Bodies, CondConflictReshardsInsideEachBranch) {
  auto m = mesh42();
  auto f = [](Array p, Array a) {
    return mj::cond(
        p, [](const Array& u) { return lax::sin(u); }, [](const Array& u) { return lax::mul(u, u); }, a);
  };
  Array a = wave({8, 4});
  for (bool pv : {true, false}) {
    Array p = lax::full({}, pv ? 1.0 : 0.0, mj::DType::bool_);
    auto cj = mj::make_jaxpr(f)(p, a);
    Ran r = run(cj, {p, a}, {std::nullopt, named(m, mj::P("x", mj::None{}), 2)},
                {named(m, mj::P(mj::None{}, "x"), 2)}, m);
    EXPECT_TRUE(r.prop.reshards.empty()) << r.prop.text;
    const mj::Eqn* c = find_eqn(*cj.jaxpr, "cond");
    ASSERT_NE(c, nullptr);
    for (auto& br : mj::cond_params(*c).branches) {
      const auto& rs = r.prop.reshards_in(*br->jaxpr);
      ASSERT_EQ(rs.size(), 1u) << r.prop.text;
      EXPECT_EQ(dim_axes(rs[0].to), (AxesList{{}, {X}})) << r.prop.text;
    }
    ASSERT_EQ(r.stats.collectives.size(), 1u);  // the selected branch's exchange
    EXPECT_EQ(r.stats.collectives[0].primitive, "all_to_all");
    expect_shards(r, *cj.jaxpr);
  }
}

// Branches that disagree on their input: branch 0 constrains it to "x" on dim 0, branch 1 to "y".
// The operand is resharded before the cond to the primary branch's (0) sharding, and branch 1
// reshards at its own start (on_input); values equal eager for both predicates.
TEST(Bodies, CondBranchesDisagreeingOnAnInputReshardAtTheBranchStart) {
  auto m = mesh42();
  Sharding sx = named(m, mj::P("x", mj::None{}), 2), sy = named(m, mj::P("y", mj::None{}), 2);
  auto f = [sx, sy](Array p, Array a) {
    return mj::cond(
        p, [sy](const Array& u) { return lax::mul(mj::with_sharding_constraint(u, sy), u); },
        [sx](const Array& u) { return lax::sin(mj::with_sharding_constraint(u, sx)); }, a);
  };
  Array a = wave({8, 4});
  for (bool pv : {true, false}) {
    Array p = lax::full({}, pv ? 1.0 : 0.0, mj::DType::bool_);
    auto cj = mj::make_jaxpr(f)(p, a);
    Ran r = run(cj, {p, a}, {}, {}, m);
    const mj::Eqn* c = find_eqn(*cj.jaxpr, "cond");
    ASSERT_NE(c, nullptr);
    const auto& branches = mj::cond_params(*c).branches;
    // Branch 0 is cond's false branch (sin, constrained to "x"); branch 1 the true one ("y").
    EXPECT_EQ(dim_axes(r.prop.of(branches[0]->jaxpr->invars[0])), (AxesList{{X}, {}})) << r.prop.text;
    EXPECT_EQ(dim_axes(r.prop.of(branches[1]->jaxpr->invars[0])), (AxesList{{Y}, {}})) << r.prop.text;
    const auto& in1 = r.prop.reshards_in(*branches[1]->jaxpr);
    ASSERT_FALSE(in1.empty()) << r.prop.text;
    EXPECT_TRUE(in1[0].on_input) << r.prop.text;
    EXPECT_EQ(dim_axes(in1[0].from), (AxesList{{X}, {}}));
    EXPECT_EQ(dim_axes(in1[0].to), (AxesList{{Y}, {}}));
    expect_shards(r, *cj.jaxpr);
  }
}

// Nested calls: jit(g) calling closed_call(h); shardings flow into both bodies and back out
// (the output sharding reaches the input through the bodies: no reshard).
TEST(Bodies, NestedPjitAndClosedCallEqualEager) {
  auto m = mesh42();
  auto h = mj::closed_call([](Array u) { return lax::mul(lax::sin(u), u); }, "h");
  auto g = mj::jit([h](Array u, Array v) { return lax::add(h(u), v); }, "g");
  auto f = [g](Array u, Array v) { return lax::tanh(g(u, v)); };
  Array u = wave({8, 4}), v = wave({8, 4}, 0.3f, 1.0f);
  auto cj = mj::make_jaxpr(f)(u, v);
  Sharding s = named(m, mj::P("x", "y"), 2);
  Ran r = run(cj, {u, v}, {}, {s}, m);
  EXPECT_TRUE(r.prop.reshards.empty()) << r.prop.text;
  EXPECT_EQ(dim_axes(r.prop.of(cj.jaxpr->invars[0])), (AxesList{{X}, {Y}})) << r.prop.text;
  const mj::Eqn* pj = find_eqn(r.program, "pjit");
  ASSERT_NE(pj, nullptr);
  const mj::Jaxpr& pbody = *mj::subjaxprs(*pj).at(0).jaxpr->jaxpr;
  const mj::Eqn* cc = find_eqn(pbody, "closed_call");
  ASSERT_NE(cc, nullptr);
  EXPECT_EQ(mj::subjaxprs(*cc).at(0).jaxpr->jaxpr->invars[0].aval().shape, (mj::Shape{2, 2}));
  expect_shards(r, *cj.jaxpr);
}

// A sharding conflict at a call boundary: the program's out_sharding (dim 1 on "x") reaches the
// body's result, the input holds dim 0 on "x": one reshard (an all_to_all), nothing else.
TEST(Bodies, CallBoundaryConflictIsOneReshard) {
  auto m = mesh42();
  auto g = mj::jit([](Array u) { return lax::sin(u); }, "g");
  auto f = [g](Array u) { return g(u); };
  Array u = wave({8, 4});
  auto cj = mj::make_jaxpr(f)(u);
  Ran r = run(cj, {u}, {named(m, mj::P("x", mj::None{}), 2)}, {named(m, mj::P(mj::None{}, "x"), 2)}, m);
  size_t total = r.prop.reshards.size();
  const mj::Eqn* pj = find_eqn(*cj.jaxpr, "pjit");
  total += r.prop.reshards_in(*mj::subjaxprs(*pj).at(0).jaxpr->jaxpr).size();
  EXPECT_EQ(total, 1u) << r.prop.text;
  expect_shards(r, *cj.jaxpr);
}

// grad through checkpoint with a policy (dots saveable): the remat'd backward pass is
// partitioned like the rest; gradients equal eager.
TEST(Bodies, CheckpointWithPolicyGradEqualsEager) {
  auto m = mesh42();
  mj::CheckpointOptions opts;
  opts.policy = mj::checkpoint_policies::dots_saveable();
  auto blk = mj::checkpoint(
      [](Array x, Array w) {
        Array h = lax::dot_general(x, w, lax::DotDimensionNumbers{{1}, {0}, {}, {}});
        return lax::sin(lax::tanh(h));
      },
      opts);
  auto loss = [blk](Array x, Array w) { return lax::reduce_sum(blk(x, w), {0, 1}); };
  auto g = [loss](Array x, Array w) { return mj::grad(loss, mj::argnums<0, 1>)(x, w); };
  Array x = wave({8, 6}), w = wave({6, 4}, 0.4f, 0.3f);
  auto cj = mj::make_jaxpr(g)(x, w);
  ASSERT_NE(mj::to_string(*cj.jaxpr).find("checkpoint"), std::string::npos) << mj::to_string(*cj.jaxpr);
  Ran r = run(cj, {x, w}, {named(m, mj::P("x", mj::None{}), 2), named(m, mj::P(mj::None{}, "y"), 2)}, {}, m);
  expect_shards(r, *cj.jaxpr, 1e-4f);
}

// custom_jvp: the call body is partitioned (as a closed_call: its rule is for autodiff, which
// ran before partitioning).
TEST(Bodies, CustomJvpCallEqualsEager) {
  auto m = mesh42();
  auto softplus = mj::custom_jvp(
      [](const Array& x) { return lax::log1p(lax::exp(x)); },
      [](const auto& p, const auto& t) {
        auto [x] = p;
        auto [dx] = t;
        Array y = lax::log1p(lax::exp(x));
        return std::pair{y, lax::mul(dx, lax::logistic(x))};
      },
      "softplus");
  auto f = [softplus](Array x) { return lax::mul(softplus(x), x); };
  Array x = wave({8, 4});
  auto cj = mj::make_jaxpr(f)(x);
  Ran r = run(cj, {x}, {named(m, mj::P("x", "y"), 2)}, {}, m);
  EXPECT_NE(find_eqn(r.program, "closed_call"), nullptr) << mj::to_string(r.program);
  expect_shards(r, *cj.jaxpr);
}

// custom_vjp: its call body is partitioned like custom_jvp's (a closed_call of the body).
TEST(Bodies, CustomVjpCallEqualsEager) {
  auto m = mesh42();
  auto scaled = mj::custom_vjp(
      [](const Array& x) { return lax::mul(lax::sin(x), x); },
      [](const Array& x) { return std::pair{lax::mul(lax::sin(x), x), x}; },
      [](const Array& x, const Array& ct) { return lax::mul(ct, x); }, "scaled");
  auto f = [scaled](Array x) { return lax::add(scaled(x), x); };
  Array x = wave({8, 4});
  auto cj = mj::make_jaxpr(f)(x);
  ASSERT_NE(mj::to_string(*cj.jaxpr).find("custom_vjp_call"), std::string::npos) << mj::to_string(*cj.jaxpr);
  Ran r = run(cj, {x}, {named(m, mj::P("y", "x"), 2)}, {}, m);
  EXPECT_TRUE(r.prop.reshards.empty()) << r.prop.text;
  expect_shards(r, *cj.jaxpr);
}

// while (fori_loop with traced bounds) over a sharded carry: the predicate is replicated, the
// body runs in lockstep.
TEST(Bodies, WhileLoopOverShardedCarryEqualsEager) {
  auto m = mesh42();
  auto f = [](Array lo, Array hi, Array c) {
    return mj::fori_loop(lo, hi, [](const Array&, const Array& v) { return lax::add(lax::sin(v), v); }, c);
  };
  Array lo = lax::full({}, 1.0, mj::DType::i32);
  Array hi = lax::full({}, 4.0, mj::DType::i32);
  Array c = wave({8, 4});
  auto cj = mj::make_jaxpr(f)(lo, hi, c);
  Ran r = run(cj, {lo, hi, c}, {std::nullopt, std::nullopt, named(m, mj::P("x", "y"), 2)}, {}, m);
  EXPECT_TRUE(r.prop.reshards.empty()) << r.prop.text;
  const mj::Eqn* pw = find_eqn(r.program, "while");
  ASSERT_NE(pw, nullptr);
  EXPECT_TRUE(r.stats.collectives.empty());
  expect_shards(r, *cj.jaxpr);
}

// A while whose predicate reads the whole sharded carry: the sum's partial sums are all-reduced
// inside the cond jaxpr (a collective inside the loop, every test), so every device takes the
// same decision; the loop runs until the total reaches 40 (ramp values 0..31 / 32, doubling).
TEST(Bodies, WhilePredicateOnShardedCarryIsAllReducedInTheLoop) {
  auto m = mesh42();
  auto f = [](Array c) {
    return mj::while_loop([](const Array& v) { return lax::lt(lax::reduce_sum(v, {0, 1}), lax::full({}, 40.0, mj::DType::f32)); },
                          [](const Array& v) { return lax::add(v, v); }, c);
  };
  Array c = Array::allocate(ShapedArray{{8, 4}, mj::DType::f32});
  for (int i = 0; i < 32; ++i) c.mutable_data<float>()[i] = float(i) / 32.0f;
  auto cj = mj::make_jaxpr(f)(c);
  Ran r = run(cj, {c}, {named(m, mj::P("x", "y"), 2)}, {}, m);
  // sum = 15.5, 31, 62: two doublings, three predicate evaluations, each with its all_reduce.
  size_t reduces = 0;
  for (auto& s : r.stats.collectives) reduces += s.primitive == "all_reduce";
  EXPECT_EQ(reduces, 3u) << mj::to_string(r.program);
  EXPECT_FLOAT_EQ(r.per_device[0][0].data<float>()[1], 4.0f / 32.0f);  // element 1 doubled twice
  expect_shards(r, *cj.jaxpr);
}

// ys wanted sharded on the length dim by the program's out_sharding: the body computes
// unsharded-length slices and ONE reshard after the loop shards the stacked ys (a local slice).
TEST(Bodies, YsShardedOnTheLengthDimAreReshardedAfterTheLoop) {
  auto m = mesh42();
  auto f = [](Array c, Array xs) { return mj::scan(step, c, xs).second; };
  Array c = wave({8, 4}), xs = wave({4, 8, 4}, 0.21f, -0.4f);
  auto cj = mj::make_jaxpr(f)(c, xs);
  Ran r = run(cj, {c, xs}, {named(m, mj::P(mj::None{}, "y"), 2), std::nullopt},
              {named(m, mj::P("x", mj::None{}, "y"), 3)}, m);
  const mj::Eqn* scan = find_eqn(*cj.jaxpr, "scan");
  ASSERT_NE(scan, nullptr);
  EXPECT_TRUE(r.prop.reshards_in(*mj::subjaxprs(*scan).at(0).jaxpr->jaxpr).empty()) << r.prop.text;
  ASSERT_EQ(r.prop.reshards.size(), 1u) << r.prop.text;
  EXPECT_TRUE(r.prop.reshards[0].on_result);
  EXPECT_EQ(r.prop.reshards[0].max_received, 0);  // acquiring "x" is a local slice
  expect_shards(r, *cj.jaxpr);
}

// The printed text shows bodies indented under their equation.
TEST(Bodies, TextShowsBodiesIndented) {
  auto m = mesh42();
  auto f = [](Array c, Array xs) { return mj::scan(step, c, xs); };
  auto cj = mj::make_jaxpr(f)(wave({8, 4}), wave({6, 8, 4}));
  auto prop = mj::propagate_shardings(*cj.jaxpr, {}, {named(m, mj::P("x", "y"), 2), std::nullopt}, *m);
  EXPECT_NE(prop.text.find("= scan"), std::string::npos) << prop.text;
  EXPECT_NE(prop.text.find("\n      { lambda ; "), std::string::npos) << prop.text;
}
