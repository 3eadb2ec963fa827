// Tests of the typed views of the collective and memory primitives (core/views/collectives.h,
// core/views/memory_ops.h): from(params).to_params() == params over traced, partitioned and
// offload-scheduled programs and their print -> parse round trip; bad params are ValueErrors.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

#include <minijax/minijax.h>

#include "core/collectives.h"
#include "core/parser.h"
#include "core/views/collectives.h"
#include "core/views/memory_ops.h"
#include "sharding/partition_spmd.h"
#include "sharding/propagate_shardings.h"
#include "sharding/sharded_array.h"
#include "tests/memory/memory_helpers.h"
#include "tests/sharding/spmd_helpers.h"

namespace {

using mj::Array;

// Each equation of `j` and of its bodies.
void each_eqn(const mj::Jaxpr& j, const std::function<void(const mj::Eqn&)>& f) {
  for (const mj::Eqn& e : j.eqns) {
    f(e);
    for (const auto& [k, v] : e.params.items()) {
      if (auto* b = std::get_if<mj::ClosedJaxprPtr>(&v)) each_eqn(*(*b)->jaxpr, f);
      if (auto* bs = std::get_if<std::vector<mj::ClosedJaxprPtr>>(&v))
        for (const auto& b : *bs) each_eqn(*b->jaxpr, f);
    }
  }
}

// Round-trips every equation of `j` that one of the views describes through that view, and
// returns the names of the primitives it met.
std::set<std::string> round_trip(const mj::Jaxpr& j) {
  std::set<std::string> seen;
  each_eqn(j, [&](const mj::Eqn& e) {
    mj::Params back;
    if (mj::CollectiveParams::is(e)) back = mj::collective_params(e).to_params();
    else if (mj::CopyParams::is(e)) back = mj::copy_params(e).to_params();
    else if (mj::DevicePutParams::is(e)) back = mj::device_put_params(e).to_params();
    else if (mj::CopyDoneParams::is(e)) back = mj::CopyDoneParams::from(e.params).to_params();
    else if (mj::AllocateBufferParams::is(e)) back = mj::allocate_buffer_params(e).to_params();
    else if (mj::OptimizationBarrierParams::is(e)) back = mj::OptimizationBarrierParams::from(e.params).to_params();
    else if (mj::ShardingConstraintParams::is(e)) back = mj::sharding_constraint_params(e).to_params();
    else if (mj::DebugCallbackParams::is(e)) back = mj::debug_callback_params(e).to_params();
    else return;
    seen.insert(e.primitive->name);
    EXPECT_TRUE(back == e.params) << e.primitive->name;
    // The registry's check (the parser's) accepts what the view reads.
    ASSERT_TRUE(e.primitive->check_params) << e.primitive->name;
    EXPECT_NO_THROW(e.primitive->check_params(e.params)) << e.primitive->name;
  });
  return seen;
}

// The same after printing and parsing `j` (`consts`: the values of its constvars).
std::set<std::string> round_trip_parsed(const mj::Jaxpr& j, const std::vector<Array>& consts = {}) {
  mj::ClosedJaxpr parsed = mj::parse_jaxpr(mj::to_string(j), consts);
  return round_trip(*parsed.jaxpr);
}

bool has(const std::set<std::string>& s, const char* name) { return s.count(name) != 0; }

// Every collective, over one axis and over two.
Array all_collectives(const Array& x) {
  namespace lax = mj::lax;
  Array y = lax::all_gather(x, {"x"}, 4, 0, true);
  y = lax::all_gather(y, {"x", "y"}, 8, 1, false);
  Array s = lax::all_reduce(x, {"y"}, 2, "max") + lax::psum(x, {"x", "y"}, 8);
  Array t = lax::all_to_all(lax::reduce_scatter(lax::concatenate({x, x, x, x}, 0), {"x"}, 4, 0), {"x"}, 4, 0, 1);
  s = s + lax::collective_permute(x, {"x"}, 4, {0, 1, 1, 2, 2, 3, 3, 0});
  Array i = lax::convert_element_type(lax::axis_index({"x", "y"}), mj::f32);
  Array offsets = mj::zeros({4}, mj::i32);
  Array r = lax::ragged_all_to_all(x, x, offsets, offsets, offsets, offsets, {"x"}, 4);
  return mj::sum(y) + mj::sum(s) + mj::sum(t) + i + mj::sum(r);
}

}  // namespace

TEST(ViewsCollectives, EveryTracedCollectiveRoundTripsAndParses) {
  mj::ClosedJaxpr cj = mj::make_jaxpr(all_collectives)(mj::ones({8, 4}));
  for (const auto& seen : {round_trip(*cj.jaxpr), round_trip_parsed(*cj.jaxpr, cj.consts)})
    for (const char* p : {"all_gather", "all_reduce", "reduce_scatter", "all_to_all", "collective_permute",
                          "ragged_all_to_all", "axis_index"})
      EXPECT_TRUE(has(seen, p)) << p << "\n" << *cj.jaxpr;
}

// The partitioner's collectives (an all_reduce, an all_to_all over ("x", "y"), an all_gather with
// an axis_index): the programs of tests/sharding/test_partition_spmd.cc.
TEST(ViewsCollectives, PartitionedProgramsRoundTrip) {
  using mj::testing::named;
  auto m = mj::testing::mesh42();
  auto matmul = [](Array a, Array b) { return mj::lax::dot_general(a, b, mj::lax::DotDimensionNumbers{{1}, {0}, {}, {}}); };
  std::set<std::string> seen;
  auto partitioned = [&](const mj::ClosedJaxpr& cj, const std::vector<std::optional<mj::Sharding>>& in,
                         const std::vector<std::optional<mj::Sharding>>& out) {
    mj::PropagationResult prop = mj::propagate_shardings(*cj.jaxpr, in, out, *m);
    mj::Jaxpr p = mj::partition_spmd(*cj.jaxpr, prop, *m);
    for (auto& s : round_trip(p)) seen.insert(s);
    if (p.constvars.empty())
      for (auto& s : round_trip_parsed(p)) seen.insert(s);
  };
  Array a = mj::testing::ramp({8, 16}), b = mj::testing::ramp({16, 4});
  partitioned(mj::make_jaxpr(matmul)(a, b), {named(m, mj::P(mj::None{}, "x"), 2), named(m, mj::P("x", mj::None{}), 2)},
              {named(m, mj::P(), 2)});
  Array c = mj::testing::ramp({16, 16, 16});
  mj::Sharding s1 = named(m, mj::P("y", mj::None{}, "x"), 3), s2 = named(m, mj::P(mj::None{}, {"x", "y"}, mj::None{}), 3);
  partitioned(mj::make_jaxpr([](Array x, Array y) { return mj::lax::add(x, y); })(c, c), {s1, s2}, {s2});
  Array x = mj::testing::ramp({8, 4});
  partitioned(mj::make_jaxpr([](Array v) { return mj::lax::sin(v); })(x), {named(m, mj::P("x", mj::None{}), 2)},
              {named(m, mj::P(mj::None{}, "y"), 2)});
  for (const char* p : {"all_reduce", "all_to_all", "all_gather", "axis_index"}) EXPECT_TRUE(has(seen, p)) << p;
}

// device_put, debug print, optimization_barrier and a sharding constraint as traced; the
// constraint's printed sharding does not parse (core/parser.h), so the parsed program has none.
TEST(ViewsMemory, TracedMemoryOpsRoundTrip) {
  auto m = mj::testing::mesh42();
  const mj::NamedSharding ns{m, mj::P("x"), mj::MemoryKind::device};
  auto f = [](const Array& x) {
    mj::debug::print("x = {}", x);
    Array h = mj::device_put(x, "pinned_host");
    return mj::lax::optimization_barrier({mj::device_put(h, "device") + 1.0f})[0];
  };
  mj::ClosedJaxpr cj = mj::make_jaxpr(f)(mj::ones({8}));
  for (const auto& seen : {round_trip(*cj.jaxpr), round_trip_parsed(*cj.jaxpr, cj.consts)})
    for (const char* p : {"device_put", "debug_callback", "optimization_barrier"}) EXPECT_TRUE(has(seen, p)) << p;
  mj::ClosedJaxpr constrained =
      mj::make_jaxpr([&](const Array& x) { return mj::with_sharding_constraint(mj::sin(x), ns); })(mj::ones({8}));
  EXPECT_TRUE(has(round_trip(*constrained.jaxpr), "sharding_constraint")) << *constrained.jaxpr;
}

// The copies the offload stages make: copy_start/copy_done of a top-level device_put, and the
// loop's slice copies (coalesced `slices`, `pipelined`) with allocate_buffer, as in
// tests/memory/test_schedule_offloads.cc's seed.
TEST(ViewsMemory, ScheduledOffloadsRoundTripAndParse) {
  auto top = [](const Array& x) {
    Array h = mj::device_put(mj::tanh(x), "pinned_host");
    return mj::sin(x) + mj::device_put(h, "device");
  };
  namespace cp = mj::checkpoint_policies;
  auto policy = cp::save_and_offload_only_these_names({}, {"save_remat"}, "device", "pinned_host");
  auto step = [](const Array& y, const Array&) {
    return std::pair{mj::sin(mj::checkpoint_name(mj::sin(y), "save_remat")), mj::None{}};
  };
  auto loss = [=](const Array& p) {
    return mj::sum(mj::scan(mj::checkpoint(step, {.policy = policy}), p, mj::zeros({2, 0}, mj::f32)).first);
  };
  std::set<std::string> seen;
  for (const mj::Jaxpr& j : {memtest::schedule_offloads(memtest::fused(top, mj::ones({64}))),
                             memtest::schedule_offloads(memtest::fused(mj::grad(loss), mj::ones({3})))}) {
    for (auto& s : round_trip(j)) seen.insert(s);
    for (auto& s : round_trip_parsed(j)) seen.insert(s);
  }
  for (const char* p : {"copy_start", "copy_done", "copy_slice_start", "copy_update_start", "allocate_buffer"})
    EXPECT_TRUE(has(seen, p)) << p;
}

namespace {

// `f` throws a ValueError whose message names every one of `words`.
void expect_value_error(const std::function<void()>& f, std::initializer_list<const char*> words) {
  try {
    f();
    ADD_FAILURE() << "no ValueError";
  } catch (const mj::ValueError& e) {
    const std::string what = e.what();
    for (const char* w : words) EXPECT_NE(what.find(w), std::string::npos) << w << " not in: " << what;
  }
}

}  // namespace

TEST(ViewsBadParams, MissingWrongTypedOrUnexpectedParamsNameThePrimitiveAndTheParam) {
  using K = mj::CollectiveParams::Kind;
  const mj::Params gather{{"axis_name", std::string("x")}, {"axis_size", int64_t(4)}, {"gather_dimension", int64_t(0)},
                          {"tiled", true}};
  EXPECT_TRUE(mj::CollectiveParams::from(K::all_gather, gather).to_params() == gather);
  mj::Params missing = gather, wrong = gather, extra = gather;
  missing = mj::Params{{"axis_name", std::string("x")}, {"axis_size", int64_t(4)}, {"tiled", true}};
  wrong.set("tiled", int64_t(1));
  extra.set("tiles", true);
  expect_value_error([&] { (void)mj::CollectiveParams::from(K::all_gather, missing); }, {"all_gather", "gather_dimension"});
  expect_value_error([&] { (void)mj::CollectiveParams::from(K::all_gather, wrong); }, {"all_gather", "tiled"});
  expect_value_error([&] { (void)mj::CollectiveParams::from(K::all_gather, extra); }, {"all_gather", "tiles"});
  expect_value_error(
      [&] { mj::primitive("all_reduce").check_params(mj::Params{{"axis_name", std::string("x")}, {"axis_size", int64_t(4)}}); },
      {"all_reduce", "reduction"});
  expect_value_error([&] { mj::primitive("axis_index").check_params(mj::Params{}); }, {"axis_index", "axis_name"});
  expect_value_error([&] { mj::primitive("device_put").check_params(mj::Params{{"memory_kind", int64_t(0)}}); },
                     {"device_put", "memory_kind"});
  expect_value_error(
      [&] { mj::primitive("copy_slice_start").check_params(mj::Params{{"memory_kind", mj::MemoryKind::device}}); },
      {"copy_slice_start", "axis"});
  expect_value_error([&] { mj::primitive("copy_update_start").check_params(mj::Params{{"axis", int64_t(0)}, {"slices", true}}); },
                     {"copy_update_start", "slices"});
  expect_value_error([&] { mj::primitive("copy_done").check_params(mj::Params{{"axis", int64_t(0)}}); },
                     {"copy_done", "axis"});
  expect_value_error([&] { mj::primitive("allocate_buffer").check_params(mj::Params{{"shape", std::vector<int64_t>{2}}}); },
                     {"allocate_buffer", "dtype"});
  expect_value_error([&] { mj::primitive("debug_callback").check_params(mj::Params{{"callback", std::string("print_0")}}); },
                     {"debug_callback", "ordered"});
  expect_value_error([&] { mj::primitive("sharding_constraint").check_params(mj::Params{{"sharding", int64_t(1)}}); },
                     {"sharding_constraint", "sharding"});
  // A view asked of another primitive's equation.
  mj::ClosedJaxpr cj = mj::make_jaxpr([](const Array& x) { return mj::sin(x); })(mj::ones({2}));
  expect_value_error([&] { (void)mj::collective_params(cj.jaxpr->eqns.at(0)); }, {"collective", "sin"});
  expect_value_error([&] { (void)mj::copy_params(cj.jaxpr->eqns.at(0)); }, {"copy", "sin"});
}
