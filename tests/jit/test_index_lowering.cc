// Tests of the compiled index maps (slice, rev, pad, concatenate, iota, iota_2x32_shape,
// dynamic_slice, gather), threefry2x32 and argmax/argmin: each program compiled by mj::jit is
// compared bit for bit with the same function evaluated eagerly (the reference implementation in
// core/primitives/), on random inputs of every dtype and on the edge cases of each primitive.
#include <gtest/gtest.h>

#include "lowering_helpers.h"

namespace {

using lowtest::at;
using lowtest::bit_equal;
using lowtest::expect_jit_matches;
using lowtest::small_ints;
using lowtest::uniform;
using mj::Array;
namespace lax = mj::lax;

const mj::DType kAll[] = {mj::f32, mj::f64, mj::bf16, mj::i32, mj::u32, mj::bool_};

// ---- slice and rev ------------------------------------------------------------------------------

TEST(IndexLowering, SliceWithStartsLimitsAndStridesMatchesEager) {
  for (mj::DType dt : kAll) {
    Array x = uniform({7, 33}, 1, dt, -50, 50);
    auto f = [](const Array& a) { return lax::slice(a, {1, 2}, {6, 31}, {2, 3}); };
    expect_jit_matches(std::string("strided ") + mj::dtype_name(dt), f, x);
    auto g = [](const Array& a) { return lax::slice(a, {0, 5}, {7, 30}); };
    expect_jit_matches(std::string("unit strides ") + mj::dtype_name(dt), g, x);
  }
  // Lengths around the vector width: contiguous runs and the scalar tail.
  for (int64_t n : {1, 2, 15, 16, 17, 40, 129}) {
    Array x = uniform({n + 3}, 2);
    expect_jit_matches("1-D n=" + std::to_string(n), [n](const Array& a) { return lax::slice(a, {2}, {n + 2}) * 2.0; }, x);
  }
}

TEST(IndexLowering, EmptySliceHasNoElements) {
  Array x = uniform({5, 6}, 3);
  auto f = [](const Array& a) { return lax::slice(a, {2, 0}, {2, 6}); };
  Array got = mj::jit(f)(x);
  EXPECT_EQ(got.aval().str(), "f32[0,6]");
  expect_jit_matches("empty", f, x);
}

TEST(IndexLowering, ReversedAndStridedSlicesMatchEager) {
  for (mj::DType dt : {mj::f32, mj::bf16, mj::i32, mj::bool_}) {
    Array x = uniform({9, 37}, 4, dt, -9, 9);
    const std::string n = mj::dtype_name(dt);
    expect_jit_matches("rev last " + n, [](const Array& a) { return lax::rev(a, {1}); }, x);
    expect_jit_matches("rev first " + n, [](const Array& a) { return lax::rev(a, {0}); }, x);
    expect_jit_matches("rev both " + n, [](const Array& a) { return lax::rev(a, {0, 1}); }, x);
    expect_jit_matches("rev of strided slice " + n,
                       [](const Array& a) { return lax::rev(lax::slice(a, {1, 3}, {8, 36}, {3, 2}), {0, 1}); }, x);
    expect_jit_matches("strided slice of rev " + n,
                       [](const Array& a) { return lax::slice(lax::rev(a, {1}), {0, 1}, {9, 37}, {1, 4}); }, x);
  }
  for (int64_t n : {1, 3, 16, 17, 33, 100}) {
    Array x = uniform({n}, 5);
    expect_jit_matches("rev n=" + std::to_string(n), [](const Array& a) { return lax::rev(a, {0}) * a; }, x);
  }
}

// ---- pad ------------------------------------------------------------------------------------------

TEST(IndexLowering, PadWithInteriorAndNegativePaddingMatchesEager) {
  const std::vector<std::vector<lax::PadConfig>> configs = {
      {{2, 3, 0}, {1, 4, 0}},    // plain
      {{0, 0, 1}, {3, 2, 2}},    // interior
      {{-2, 1, 0}, {-3, -4, 0}}, // negative low/high crop
      {{-1, -2, 2}, {5, -6, 1}}, // interior and cropping together
      {{0, 0, 0}, {17, 19, 0}},  // long runs along the vectorized dim
  };
  for (mj::DType dt : kAll) {
    Array x = uniform({6, 23}, 6, dt, -40, 40);
    Array v = uniform({}, 7, dt, -40, 40);
    for (size_t c = 0; c < configs.size(); ++c) {
      auto cfg = configs[c];
      auto f = [cfg](const Array& a, const Array& p) { return lax::pad(a, p, cfg); };
      expect_jit_matches(std::string(mj::dtype_name(dt)) + " config " + std::to_string(c), f, x, v);
    }
  }
  // Every element cropped away but the padding.
  Array x = uniform({4}, 8);
  expect_jit_matches("all cropped", [](const Array& a) { return lax::pad(a, mj::scalar(1.5, mj::f32), {{-4, 3, 0}}); }, x);
  // A computed operand (evaluated at clamped indices where it is not read).
  expect_jit_matches("computed operand", [](const Array& a) { return lax::pad(a * a + 1.0, mj::scalar(-1.0, mj::f32), {{5, 7, 2}}); }, x);
}

// ---- concatenate ------------------------------------------------------------------------------------

TEST(IndexLowering, ConcatenateAlongEveryDimMatchesEager) {
  for (mj::DType dt : kAll) {
    Array a = uniform({5, 17}, 9, dt, -30, 30), b = uniform({3, 17}, 10, dt, -30, 30), c = uniform({1, 17}, 11, dt, -30, 30);
    expect_jit_matches(std::string("dim 0 ") + mj::dtype_name(dt),
                       [](const Array& p, const Array& q, const Array& r) { return lax::concatenate({p, q, r}, 0); }, a, b, c);
    Array d = uniform({5, 3}, 12, dt, -30, 30), e = uniform({5, 20}, 13, dt, -30, 30), z = uniform({5, 0}, 14, dt);
    // Lanes of one vector straddle the operands (3 + 20 + 17 along the vectorized dim).
    expect_jit_matches(std::string("last dim ") + mj::dtype_name(dt),
                       [](const Array& p, const Array& q, const Array& r, const Array& s) {
                         return lax::concatenate({p, r, q, s}, 1);
                       },
                       d, e, z, a);
  }
  Array x = uniform({33}, 15), y = uniform({7}, 16);
  expect_jit_matches("computed operands", [](const Array& p, const Array& q) {
    return lax::concatenate({p * 2.0, q - 1.0, p}, 0) + 0.5;
  }, x, y);
}

// ---- iota, iota_2x32_shape ---------------------------------------------------------------------------

TEST(IndexLowering, IotaOfEveryDtypeMatchesEager) {
  for (mj::DType dt : {mj::f32, mj::f64, mj::bf16, mj::i32, mj::u32}) {
    for (int64_t d : {0, 1}) {
      auto f = [dt, d](const Array& x) { return lax::iota(dt, {300, 37}, d) + x; };
      expect_jit_matches(std::string(mj::dtype_name(dt)) + " dim " + std::to_string(d), f, mj::zeros({300, 37}, dt));
    }
  }
  // bf16 rounds large integers: 257 is not a bf16 value (eager: bfloat16(float(257)) = 256).
  Array got = mj::jit([](const Array& x) { return lax::iota(mj::bf16, {300}, 0) + x; })(mj::zeros({300}, mj::bf16));
  EXPECT_EQ(at(got, 257), 256.0);
}

TEST(IndexLowering, Iota2x32ShapeMatchesEager) {
  for (mj::Shape s : {mj::Shape{5}, mj::Shape{3, 40}, mj::Shape{2, 3, 17}}) {
    auto f = [s](const Array& x) {
      auto [hi, lo] = lax::iota_2x32_shape(s);
      return std::pair{hi + x, lo + x};
    };
    auto want = f(mj::zeros(s, mj::u32));
    auto got = mj::jit(f)(mj::zeros(s, mj::u32));
    EXPECT_TRUE(bit_equal(got.first, want.first));
    EXPECT_TRUE(bit_equal(got.second, want.second));
  }
}

// ---- dynamic_slice -------------------------------------------------------------------------------------

TEST(IndexLowering, DynamicSliceClampsStartsAsEager) {
  Array x = uniform({9, 29}, 17);
  auto f = [](const Array& a, const Array& i, const Array& j) { return lax::dynamic_slice(a, {i, j}, {4, 19}); };
  for (auto [i, j] : std::vector<std::pair<int, int>>{{0, 0}, {2, 3}, {5, 10}, {-3, -100}, {6, 11}, {100, 7}, {3, 1000}}) {
    Array si = mj::scalar(i, mj::i32), sj = mj::scalar(j, mj::i32);
    expect_jit_matches("starts " + std::to_string(i) + "," + std::to_string(j), f, x, si, sj);
  }
  // u32 starts are unsigned: 2^32 - 1 clamps to the largest start.
  expect_jit_matches("u32", f, x, mj::scalar(4294967295.0, mj::u32), mj::scalar(2, mj::u32));
  // A literal start, a zero-sized slice, and bf16 data.
  Array y = uniform({40}, 18, mj::bf16);
  expect_jit_matches("literal", [](const Array& a) { return lax::dynamic_slice(a, {mj::scalar(21, mj::i32)}, {17}); }, y);
  expect_jit_matches("size 0", [](const Array& a, const Array& i) { return lax::dynamic_slice(a, {i}, {0}); }, y,
                     mj::scalar(3, mj::i32));
}

// ---- gather ---------------------------------------------------------------------------------------------

// Eager gather raises IndexError for an index outside [0, rows); compiled code clamps it into
// range (core/primitives/slicing.cc, as XLA does). The oracle: eager gather on the indices clamped
// by hand.
Array clamped_indices(const Array& idx, int64_t rows) {
  Array c = mj::astype(idx, mj::f64);
  std::vector<double> v(c.data<double>(), c.data<double>() + c.size());
  for (auto& x : v) x = std::clamp<double>(x, 0, double(rows - 1));
  return mj::array(v, idx.shape(), idx.dtype());
}

TEST(IndexLowering, GatherRowsMatchEagerAndClampsOutOfRange) {
  auto f = [](const Array& x, const Array& i) { return lax::gather(x, i); };
  for (mj::DType dt : {mj::f32, mj::bf16, mj::i32, mj::bool_}) {
    Array x = uniform({10, 21}, 19, dt, -20, 20);
    Array idx = mj::array({3, 0, 9, 9, 4, 1, 2, 7}, {2, 4}, mj::i32);
    expect_jit_matches(std::string("rows ") + mj::dtype_name(dt), f, x, idx);
  }
  Array x = uniform({10, 21}, 20);
  Array bad = mj::array({-1, 10, 100, 5, -7}, {5}, mj::i32);
  EXPECT_THROW(f(x, bad), mj::IndexError);  // eager
  Array got = mj::jit(f)(x, bad);
  EXPECT_TRUE(bit_equal(got, f(x, clamped_indices(bad, 10))));
  // Rank-1 operand: each output lane reads its own index (vector gather); u32 indices.
  Array v = uniform({50}, 21);
  Array ui = mj::array({49, 0, 3, 3, 17, 25, 48, 1, 2, 9, 11, 13, 15, 30, 31, 32, 33, 40}, {18}, mj::u32);
  expect_jit_matches("rank 1, u32", [](const Array& a, const Array& i) { return lax::gather(a, i) * 3.0; }, v, ui);
  Array big = mj::array({4294967295.0, 2}, {2}, mj::u32);  // 2^32 - 1 is a huge unsigned index
  EXPECT_TRUE(bit_equal(mj::jit(f)(v, big), f(v, clamped_indices(big, 50))));
  expect_jit_matches("no indices", f, x, mj::zeros({0}, mj::i32));
}

// ---- threefry2x32 -----------------------------------------------------------------------------------------

Array random_u32(const mj::Shape& s, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<double> v(size_t(mj::shape_size(s)));
  for (auto& x : v) x = double(gen());
  return mj::array(v, s, mj::u32);
}

TEST(IndexLowering, Threefry2x32IsBitExact) {
  auto f = [](const Array& k0, const Array& k1, const Array& a, const Array& b) {
    auto [y0, y1] = lax::threefry2x32(k0, k1, a, b);
    return std::pair{y0, y1};
  };
  // Random123's known-answer test for threefry2x32_20 (kat_vectors): key (0, 0), counter (0, 0)
  // -> (0x6b200159, 0x99ba4efe).
  auto z = mj::zeros({1}, mj::u32);
  auto [y0, y1] = mj::jit(f)(z, z, z, z);
  EXPECT_EQ(uint32_t(at(y0, 0)), 0x6b200159u);
  EXPECT_EQ(uint32_t(at(y1, 0)), 0x99ba4efeu);
  for (int64_t n : {1, 7, 16, 100, 1031}) {
    Array k0 = random_u32({n}, 1), k1 = random_u32({n}, 2), a = random_u32({n}, 3), b = random_u32({n}, 4);
    auto want = f(k0, k1, a, b);
    auto got = mj::jit(f)(k0, k1, a, b);
    EXPECT_TRUE(bit_equal(got.first, want.first) && bit_equal(got.second, want.second)) << n;
  }
  // Rank-0 keys (fused: lax's scalar rule) and numpy-broadcast operands (left unfused).
  Array s0 = random_u32({}, 5), s1 = random_u32({}, 6), a = random_u32({6, 19}, 7), b = random_u32({6, 19}, 8);
  auto w1 = f(s0, s1, a, b);
  auto g1 = mj::jit(f)(s0, s1, a, b);
  EXPECT_TRUE(bit_equal(g1.first, w1.first) && bit_equal(g1.second, w1.second));
  Array r0 = random_u32({1, 19}, 9), r1 = random_u32({6, 1}, 10), c = random_u32({19}, 11);
  auto w2 = f(r0, r1, a, c);
  auto g2 = mj::jit(f)(r0, r1, a, c);
  EXPECT_TRUE(bit_equal(g2.first, w2.first) && bit_equal(g2.second, w2.second));
}

// ---- argmax / argmin ------------------------------------------------------------------------------------------

Array with_nans(Array x, const std::vector<int64_t>& at_flat) {
  Array y = mj::astype(x, mj::f64);
  std::vector<double> v(y.data<double>(), y.data<double>() + y.size());
  for (int64_t i : at_flat) v[size_t(i)] = std::numeric_limits<double>::quiet_NaN();
  return mj::array(v, x.shape(), x.dtype());
}

TEST(IndexLowering, ArgmaxArgminTiesAndNaNsMatchEager) {
  auto amax = [](int64_t ax, mj::DType id) { return [ax, id](const Array& x) { return lax::argmax(x, ax, id); }; };
  auto amin = [](int64_t ax, mj::DType id) { return [ax, id](const Array& x) { return lax::argmin(x, ax, id); }; };
  for (mj::DType dt : kAll) {
    Array x = small_ints({37, 53}, 22, dt);  // few distinct values: ties everywhere
    for (int64_t ax : {0, 1}) {
      const std::string n = std::string(mj::dtype_name(dt)) + " axis " + std::to_string(ax);
      expect_jit_matches("argmax " + n, amax(ax, mj::i32), x);
      expect_jit_matches("argmin " + n, amin(ax, mj::u32), x);
    }
  }
  for (mj::DType dt : {mj::f32, mj::f64, mj::bf16}) {
    Array x = with_nans(uniform({37, 53}, 23, dt), {5, 60, 61, 53 * 20 + 52, 53 * 36});
    for (int64_t ax : {0, 1}) {
      expect_jit_matches(std::string("nan argmax ") + mj::dtype_name(dt), amax(ax, mj::i32), x);
      expect_jit_matches(std::string("nan argmin ") + mj::dtype_name(dt), amin(ax, mj::i32), x);
    }
  }
  // Long rows (several vectors and blocks), NaNs in the scalar tail, signed zeros, all NaN.
  for (int64_t n : {1, 15, 16, 17, 2049, 5003}) {
    Array x = small_ints({n}, 24, mj::f32, 3);
    expect_jit_matches("long argmax n=" + std::to_string(n), amax(0, mj::i32), x);
    Array y = with_nans(x, {n - 1});
    expect_jit_matches("tail nan n=" + std::to_string(n), amin(0, mj::i32), y);
  }
  Array zeros = mj::array({0.f, -0.f, 0.f, -0.f}, {4}, mj::f32);
  Array mz = lax::neg(mj::array({0.f, 0.f, 0.f, 0.f}));
  expect_jit_matches("signed zeros", amax(0, mj::i32), zeros);
  expect_jit_matches("signed zeros min", amin(0, mj::i32), mj::concatenate({mz, zeros}));
  Array nan = with_nans(mj::zeros({3, 40}, mj::f32), [] {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < 120; ++i) v.push_back(i);
    return v;
  }());
  expect_jit_matches("all nan", amax(1, mj::i32), nan);
  // Hand check: the first maximum and the first NaN.
  Array h = mj::array({1.f, 3.f, 3.f, 2.f, 3.f}, {5}, mj::f32);
  EXPECT_EQ(at(mj::jit(amax(0, mj::i32))(h), 0), 1.0);
  EXPECT_EQ(at(mj::jit(amax(0, mj::i32))(with_nans(h, {3, 4})), 0), 3.0);
  EXPECT_EQ(at(mj::jit(amin(0, mj::i32))(with_nans(h, {4})), 0), 4.0);
}

TEST(IndexLowering, ArgmaxInsideAReductionFusionOfThreeDims) {
  Array x = uniform({4, 33, 6}, 25);
  expect_jit_matches("middle axis", [](const Array& a) { return lax::argmax(a * a - a, 1, mj::i32); }, x);
  expect_jit_matches("first axis", [](const Array& a) { return lax::argmin(a + 1.0, 0, mj::i32); }, x);
}

}  // namespace
