// Tests of the compiled program rules: dynamic_update_slice and scatter_add (in place where the
// buffer plan allows, checked through the plan and memory_analysis), cumsum, bitcast_convert_type,
// device_put, the one-device collectives and custom_lin; values against eager (bit for bit) or a
// hand computation, and the in-place scan loop writing one element per iteration.
#include <gtest/gtest.h>

#include "core/bodies.h"
#include "lowering_helpers.h"
#include "jit/executable.h"
#include "memory/plan_buffers.h"

namespace {

using lowtest::at;
using lowtest::bit_equal;
using lowtest::expect_jit_matches;
using lowtest::uniform;
using mj::Array;
namespace lax = mj::lax;

// ---- dynamic_update_slice ---------------------------------------------------------------------

TEST(UpdateLowering, DynamicUpdateSliceClampsStartsAsEager) {
  auto f = [](const Array& x, const Array& u, const Array& i, const Array& j) {
    return lax::dynamic_update_slice(x, u, {i, j});
  };
  for (mj::DType dt : {mj::f32, mj::bf16, mj::i32, mj::bool_, mj::f64}) {
    Array x = uniform({8, 13}, 1, dt, -9, 9), u = uniform({3, 5}, 2, dt, -9, 9);
    for (auto [i, j] : std::vector<std::pair<int, int>>{{0, 0}, {2, 4}, {5, 8}, {-4, -1}, {7, 20}, {100, 3}}) {
      expect_jit_matches(std::string(mj::dtype_name(dt)) + " at " + std::to_string(i) + "," + std::to_string(j), f, x, u,
                         mj::scalar(i, mj::i32), mj::scalar(j, mj::i32));
    }
  }
  // Whole rows (one contiguous chunk), a rank-0 update, an empty update, u32 starts.
  Array x = uniform({6, 7}, 3), rows = uniform({2, 7}, 4);
  expect_jit_matches("full rows", f, x, rows, mj::scalar(3, mj::i32), mj::scalar(0, mj::i32));
  expect_jit_matches("u32", f, x, rows, mj::scalar(4294967295.0, mj::u32), mj::scalar(0, mj::u32));
  expect_jit_matches("empty", f, x, uniform({0, 3}, 5), mj::scalar(1, mj::i32), mj::scalar(1, mj::i32));
  expect_jit_matches("rank 0", [](const Array& a, const Array& b) { return lax::dynamic_update_slice(a, b, {}); },
                     uniform({}, 6), uniform({}, 7));
}

TEST(UpdateLowering, DynamicUpdateSliceOfADonatedInputIsInPlace) {
  // x.at[i].set(v) with x donated: the result lives in x's buffer, no temporary, no copy.
  auto f = [](const Array& x, const Array& v, const Array& i) {
    return lax::dynamic_update_slice(x, lax::reshape(v, {1}), {i});
  };
  auto jf = mj::jit(f, mj::JitOptions{.name = "set", .donate_argnums = {0}});
  Array x = uniform({4096}, 8), v = uniform({}, 9);
  Array want = f(x, v, mj::scalar(1000, mj::i32));
  auto c = jf.lower(x, v, mj::scalar(1000, mj::i32)).compile();
  EXPECT_EQ(c.memory_analysis().temp_size_in_bytes, 0);
  EXPECT_EQ(c.memory_analysis().alias_size_in_bytes, 4096 * 4);
  EXPECT_NE(c.as_text().find("output 0: in donated input 0's buffer"), std::string::npos) << c.as_text();
  EXPECT_NE(c.as_text().find("[in-place update] dynamic_update_slice"), std::string::npos) << c.as_text();
  Array got = jf(x, v, mj::scalar(1000, mj::i32));
  EXPECT_TRUE(bit_equal(got, want));
  // Not donated: the input is copied and stays unchanged.
  Array y = uniform({4096}, 10), y_copy = mj::astype(y, mj::f32);
  Array got2 = mj::jit(f)(y, v, mj::scalar(5, mj::i32));
  EXPECT_TRUE(bit_equal(got2, f(y, v, mj::scalar(5, mj::i32))));
  EXPECT_TRUE(bit_equal(y, y_copy));
}

// A scan writing element i of an f32[200000] carry in iteration i. The update is made in
// place of the carry (the plan puts the body's dynamic_update_slice result in the scan's carry
// buffer), so an iteration costs O(1) and no temporary holds a copy of the carry.
TEST(UpdateLowering, ScanWritingOneElementPerIterationUpdatesTheCarryInPlace) {
  const int64_t n = 200000;
  auto f = [](const Array& c0, const Array& idx, const Array& vals) {
    return mj::scan(
               [](const Array& c, const std::pair<Array, Array>& x) {
                 return std::pair{lax::dynamic_update_slice(c, lax::reshape(x.second, {1}), {x.first}), mj::None{}};
               },
               c0, std::pair{idx, vals})
        .first;
  };
  Array c0 = mj::zeros({n}, mj::f32), idx = mj::arange(n, mj::i32), vals = uniform({n}, 11);
  auto c = mj::jit(f).lower(c0, idx, vals).compile();
  const int64_t carry_bytes = n * 4;
  EXPECT_LT(c.memory_analysis().temp_size_in_bytes, carry_bytes) << c.as_text();
  // The body's update is placed in the scan's result buffer (a view of it), not a temporary.
  const mj::Executable& exe = *c.executable();
  const mj::Eqn* scan = nullptr;
  for (auto& e : exe.program.eqns)
    if (e.primitive->name == "scan") scan = &e;
  ASSERT_NE(scan, nullptr);
  const mj::Jaxpr& body = *mj::subjaxprs(*scan).at(0).jaxpr->jaxpr;
  const mj::Eqn* dus = nullptr;
  for (auto& e : body.eqns)
    if (e.primitive->name == "dynamic_update_slice") dus = &e;
  ASSERT_NE(dus, nullptr);
  const mj::Location& loc = exe.plan.at(dus->outputs[0]);
  EXPECT_EQ(int(loc.place), int(mj::Place::view));
  EXPECT_TRUE(loc.base == scan->outputs[0]);
  // Values: element t of the result is vals[t] (every element written once, in order).
  Array got = c(c0, idx, vals);
  EXPECT_TRUE(bit_equal(got, vals));
  // A reversed index order on a shorter loop against eager.
  Array small = uniform({300}, 12);
  Array ridx = lax::rev(mj::arange(300, mj::i32), {0});
  EXPECT_TRUE(bit_equal(mj::jit(f)(small, ridx, uniform({300}, 13)), f(small, ridx, uniform({300}, 13))));
}

// ---- scatter_add ----------------------------------------------------------------------------------

// Hand oracle: out = x; out[idx[i]] += upd[i] in index order, in double then rounded per add to
// the dtype (f32 adds are exact in double for these small integers); out-of-range rows are dropped
// by compiled code (PROMISE_IN_BOUNDS: XLA discards out-of-bounds scatter updates).
TEST(UpdateLowering, ScatterAddWithDuplicateAndOutOfRangeIndices) {
  auto f = [](const Array& x, const Array& i, const Array& u) { return lax::scatter_add(x, i, u); };
  for (mj::DType dt : {mj::f32, mj::bf16, mj::f64, mj::i32, mj::u32, mj::bool_}) {
    Array x = uniform({6, 19}, 14, dt, 0, 9), u = uniform({2, 4, 19}, 15, dt, 0, 9);
    Array idx = mj::array({1, 4, 1, 1, 0, 5, 4, 1}, {2, 4}, mj::i32);  // duplicates
    expect_jit_matches(std::string("duplicates ") + mj::dtype_name(dt), f, x, idx, u);
  }
  Array x = mj::zeros({3, 2}, mj::f32);
  Array u = mj::array({1, 2, 10, 20, 100, 200, 1000, 2000}, {4, 2}, mj::f32);
  Array bad = mj::array({-5, 7, 1, 3}, {4}, mj::i32);
  EXPECT_THROW(f(x, bad, u), mj::IndexError);  // eager refuses; compiled drops -5, 7 and 3
  Array got = mj::jit(f)(x, bad, u);
  const double want[] = {0, 0, 100, 200, 0, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(at(got, i), want[i]) << i;
  // Rank-1 operand (one element per row), f32 rounding order of many duplicates.
  Array v = uniform({5}, 16), many = uniform({1000}, 17), same = mj::zeros({1000}, mj::i32);
  expect_jit_matches("rank 1 duplicates", f, v, same, many);
}

TEST(UpdateLowering, ScatterAddOfADonatedOperandIsInPlace) {
  auto f = [](const Array& x, const Array& i, const Array& u) { return lax::scatter_add(x, i, u); };
  auto jf = mj::jit(f, mj::JitOptions{.name = "sa", .donate_argnums = {0}});
  Array x = uniform({64, 8}, 18), idx = mj::array({3, 3, 60}, {3}, mj::i32), u = uniform({3, 8}, 19);
  Array want = f(x, idx, u);
  auto c = jf.lower(x, idx, u).compile();
  EXPECT_EQ(c.memory_analysis().temp_size_in_bytes, 0);
  EXPECT_TRUE(bit_equal(jf(x, idx, u), want));
}

// ---- cumsum -----------------------------------------------------------------------------------------

TEST(UpdateLowering, CumsumAlongEachAxisForwardAndReverseMatchesEager) {
  for (mj::DType dt : {mj::f32, mj::bf16, mj::f64, mj::i32, mj::u32}) {
    Array x = uniform({5, 7, 19}, 20, dt, -100, 100);
    for (int64_t ax : {0, 1, 2})
      for (bool rev : {false, true})
        expect_jit_matches(std::string(mj::dtype_name(dt)) + " axis " + std::to_string(ax) + (rev ? " rev" : ""),
                           [ax, rev](const Array& a) { return lax::cumsum(a, ax, rev); }, x);
  }
  // i32 wraps: 2^31 - 1 + 1 = -2^31.
  Array w = mj::array({2147483647.0, 1, 1}, {3}, mj::i32);
  Array got = mj::jit([](const Array& a) { return lax::cumsum(a, 0); })(w);
  EXPECT_EQ(at(got, 1), -2147483648.0);
  // f32 accumulates in double as eager does: 1 + 2^-30 + ... stays exact until rounded.
  Array s = mj::array({1.f, 1e-9f, 1e-9f, 1e-9f}, {4}, mj::f32);
  expect_jit_matches("f64 accumulator", [](const Array& a) { return lax::cumsum(a, 0); }, s);
  expect_jit_matches("long", [](const Array& a) { return lax::cumsum(a, 0, true); }, uniform({100003}, 21));
}

// ---- bitcast_convert_type, device_put -----------------------------------------------------------------

TEST(UpdateLowering, BitcastConvertTypeIsAViewWithTheSameBytes) {
  Array x = uniform({4, 6}, 22);
  auto f = [](const Array& a) { return mj::lax::bitcast_convert_type(a * 2.0, mj::i32); };
  std::string text = expect_jit_matches("f32 -> i32", f, x);
  EXPECT_NE(text.find("[view] bitcast_convert_type"), std::string::npos) << text;
  Array d = uniform({3, 5}, 23, mj::f64);
  Array halves = mj::jit([](const Array& a) { return mj::lax::bitcast_convert_type(a, mj::u32); })(d);
  EXPECT_EQ(halves.aval().str(), "u32[3,5,2]");
  EXPECT_EQ(std::memcmp(halves.raw_data(), d.raw_data(), 15 * 8), 0);
  expect_jit_matches("u32 pairs -> f64", [](const Array& a) { return mj::lax::bitcast_convert_type(a, mj::f64); }, halves);
}

TEST(UpdateLowering, DevicePutAcrossMemoryKindsCopiesThroughTheRuntime) {
  auto f = [](const Array& a) {
    Array h = lax::device_put(a * 3.0, mj::MemoryKind::pinned_host);
    return lax::device_put(h, mj::MemoryKind::device) + 1.0;
  };
  Array x = uniform({1000}, 24);
  std::string text = expect_jit_matches("round trip", f, x);
  // split_copies split both copies: started on the copy engine, waited for at their done.
  EXPECT_NE(text.find("[runtime call] copy_start: mj_rt_copy_start device -> pinned_host, 4000 B"), std::string::npos) << text;
  EXPECT_NE(text.find("[runtime call] copy_start: mj_rt_copy_start pinned_host -> device"), std::string::npos) << text;
  EXPECT_NE(text.find("[runtime call] copy_done: mj_rt_copy_done"), std::string::npos) << text;
  auto same = [](const Array& a) { return lax::device_put(a, mj::MemoryKind::device) * 2.0; };
  text = expect_jit_matches("same kind", same, x);
  EXPECT_NE(text.find("[view] device_put"), std::string::npos) << text;
}

// ---- collectives on one device -----------------------------------------------------------------------

TEST(UpdateLowering, CollectivesOverAGroupOfOneDevice) {
  Array x = uniform({4, 6}, 25);
  // The SPMD executor's results on a group of one device, by hand: the operand itself.
  auto ident = [](const Array& a) {
    return std::vector<Array>{lax::psum(a, {"x"}, 1), lax::all_gather(a, {"x"}, 1, 1, true),
                              lax::all_gather(a, {"x"}, 1, 0, false), lax::reduce_scatter(a, {"x"}, 1, 0),
                              lax::all_to_all(a, {"x"}, 1, 0, 1), lax::collective_permute(a, {"x"}, 1, {0, 0}),
                              lax::collective_permute(a, {"x"}, 1, {}), lax::axis_index({"x"})};
  };
  auto outs = mj::jit(ident)(x);
  ASSERT_EQ(outs.size(), 8u);
  for (size_t k = 0; k < 6; ++k) EXPECT_EQ(std::memcmp(outs[k].raw_data(), x.raw_data(), 24 * 4), 0) << k;
  EXPECT_EQ(outs[2].aval().str(), "f32[1,4,6]");
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(at(outs[6], i), 0.0);  // nobody sends to rank 0
  EXPECT_EQ(at(outs[7], 0), 0.0);
  // ragged_all_to_all: rows [1, 3) of the input land at rows 2.. of the output.
  auto ragged = [](const Array& in, const Array& out, const Array& io, const Array& ss, const Array& oo,
                   const Array& rs) { return lax::ragged_all_to_all(in, out, io, ss, oo, rs, {"x"}, 1); };
  Array in = uniform({4, 3}, 26), out = mj::zeros({5, 3}, mj::f32);
  auto i32 = [](int v) { return mj::array({double(v)}, {1}, mj::i32); };
  Array got = mj::jit(ragged)(in, out, i32(1), i32(2), i32(2), i32(2));
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 3; ++c)
      EXPECT_EQ(at(got, r * 3 + c), r >= 2 && r < 4 ? at(in, (r - 1) * 3 + c) : 0.0) << r << "," << c;
  // Sizes that disagree, rows outside the buffers: ValueError, as the SPMD executor reports.
  EXPECT_THROW(mj::jit(ragged)(in, out, i32(0), i32(2), i32(0), i32(3)), mj::ValueError);
  EXPECT_THROW(mj::jit(ragged)(in, out, i32(3), i32(2), i32(0), i32(2)), mj::ValueError);
  // A group of two devices cannot be compiled for one.
  EXPECT_THROW(mj::jit([](const Array& a) { return lax::psum(a, {"x"}, 2); })(x), mj::ValueError);
}

// ---- custom_lin -------------------------------------------------------------------------------------

TEST(UpdateLowering, ForwardModeOfACustomVjpIsRejectedAsEager) {
  auto clip = mj::custom_vjp([](const Array& v) { return v * 2.0; },
                             [](const Array& v) { return std::pair{v * 2.0, std::vector<Array>{}}; },
                             [](const std::vector<Array>&, const Array& ct) { return ct * 2.0; }, "twice");
  auto f = [&](const Array& v, const Array& t) { return mj::jvp(clip, v, t).second; };
  Array v = uniform({3}, 27), t = uniform({3}, 28);
  EXPECT_THROW(f(v, t), mj::NotDifferentiableError);  // eager
  EXPECT_THROW(mj::jit(f)(v, t), mj::NotDifferentiableError);
}

}  // namespace
