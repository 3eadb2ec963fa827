// Tests of is_finite, nextafter, population_count and clz (core/primitives/elementwise_special.cc,
// jit/codegen/lower/elementwise_bits.cc): bit for bit, eager and compiled, against independent oracles.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "special_reference_nextafter.h"

namespace {

using mj::Array;
namespace lax = mj::lax;

template <class T>
Array from_bits(const std::vector<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>& bits) {
  Array a = mj::zeros({int64_t(bits.size())}, sizeof(T) == 4 ? mj::f32 : mj::f64);
  std::memcpy(a.mutable_data<T>(), bits.data(), bits.size() * sizeof(T));
  return a;
}

template <class T>
auto bits_of(const Array& a, size_t i) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  return std::bit_cast<U>(a.data<T>()[i]);
}

// numpy's nextafter (tests/jit/special_reference_nextafter.h, tools/special_reference.py) on its
// pinned pairs: ±0, subnormals, the largest finite value, infinities and NaN; eager and compiled.
template <class T, class Table>
void check_numpy_table(const Table& table) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  std::vector<U> xs, ys, want;
  for (const auto& row : table) {
    xs.push_back(row[0]);
    ys.push_back(row[1]);
    want.push_back(row[2]);
  }
  Array x = from_bits<T>(xs), y = from_bits<T>(ys);
  auto f = [](const Array& a, const Array& b) { return lax::nextafter(a, b); };
  for (const auto& [how, got] : {std::pair{"eager", f(x, y)}, std::pair{"compiled", mj::jit(f)(x, y)}}) {
    for (size_t i = 0; i < want.size(); ++i) {
      const T w = std::bit_cast<T>(want[i]);
      if (std::isnan(w)) {
        EXPECT_TRUE(std::isnan(got.template data<T>()[i])) << how << " row " << i;
        continue;
      }
      EXPECT_EQ(bits_of<T>(got, i), want[i])
          << how << " row " << i << ": nextafter(" << std::bit_cast<T>(xs[i]) << ", "
          << std::bit_cast<T>(ys[i]) << ")";
    }
  }
}

TEST(SpecialBits, NextafterMatchesNumpyTableF32) {
  check_numpy_table<float>(special_reference::nextafter_f32);
}
TEST(SpecialBits, NextafterMatchesNumpyTableF64) {
  check_numpy_table<double>(special_reference::nextafter_f64);
}

// Random bit patterns (every class: zeros, subnormals, normals, infinities, NaNs; pairs equal in a
// sixteenth of the cases), 1001 of them so the vector loop's scalar tail runs too: compiled and
// eager against std::nextafter, bit for bit.
template <class T>
void check_random_bits() {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  std::mt19937_64 g(29);
  std::vector<U> xs, ys;
  for (int i = 0; i < 1001; ++i) {
    U a = U(g()), b = U(g());
    if (i % 16 == 0) b = a;
    if (i % 7 == 0)
      a &= U(std::numeric_limits<U>::max() >> (sizeof(T) == 4 ? 9 : 12)) | (U(1) << (sizeof(U) * 8 - 1));
    if (i % 11 == 0) a &= U(1) << (sizeof(U) * 8 - 1);  // ±0
    xs.push_back(a);
    ys.push_back(b);
  }
  Array x = from_bits<T>(xs), y = from_bits<T>(ys);
  auto f = [](const Array& a, const Array& b) { return lax::nextafter(a, b); };
  Array eager = f(x, y), compiled = mj::jit(f)(x, y);
  for (size_t i = 0; i < xs.size(); ++i) {
    const T want = std::nextafter(std::bit_cast<T>(xs[i]), std::bit_cast<T>(ys[i]));
    for (const Array* got : {&eager, &compiled}) {
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got->data<T>()[i])) << i;
      } else {
        EXPECT_EQ(bits_of<T>(*got, i), std::bit_cast<U>(want))
            << (got == &eager ? "eager" : "compiled") << " nextafter(" << std::bit_cast<T>(xs[i]) << ", "
            << std::bit_cast<T>(ys[i]) << ")";
      }
    }
  }
}

TEST(SpecialBits, NextafterMatchesStdNextafterOnRandomBitsF32) { check_random_bits<float>(); }
TEST(SpecialBits, NextafterMatchesStdNextafterOnRandomBitsF64) { check_random_bits<double>(); }

// bf16 steps by one unit of its own 8-bit significand (hand computation: after 1 comes 1 + 2^-7,
// before it 1 - 2^-8; from 0 the smallest bf16 subnormal 2^-133; the largest finite bf16
// (1 + 127/128) 2^127 steps to inf), eager and compiled alike.
TEST(SpecialBits, NextafterBf16StepsByBf16Units) {
  const double max_bf16 = (1 + 127.0 / 128) * std::ldexp(1.0, 127);
  Array x = mj::astype(mj::array({1.0, 1.0, 0.0, -0.0, max_bf16, -2.0}, {6}, mj::f32), mj::bf16);
  Array y = mj::astype(mj::array({2.0, 0.0, -1.0, 1.0, std::numeric_limits<double>::infinity(), 0.0}, {6},
                                 mj::f32),
                       mj::bf16);
  const std::vector<double> want = {1 + std::ldexp(1.0, -7),
                                    1 - std::ldexp(1.0, -8),
                                    -std::ldexp(1.0, -133),
                                    std::ldexp(1.0, -133),
                                    std::numeric_limits<double>::infinity(),
                                    -(2 - std::ldexp(1.0, -7))};
  auto f = [](const Array& a, const Array& b) { return lax::nextafter(a, b); };
  for (const Array& got : {f(x, y), mj::jit(f)(x, y)}) {
    Array g = mj::astype(got, mj::f64);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(g.data<double>()[i], want[i]) << i;
  }
}

// population_count and clz of i32 (negative values: their two's complement bits) and u32 against
// std::popcount and std::countl_zero of the 32-bit pattern (C++20 <bit>), eager and compiled.
TEST(SpecialBits, PopulationCountAndClzMatchStdBit) {
  std::mt19937 g(7);
  std::vector<uint32_t> bits = {0u, 1u, 0xffffffffu, 0x80000000u, 0x7fffffffu, 0x00010000u, 0xfffffffeu};
  for (int i = 0; i < 517; ++i) bits.push_back(g() >> (i % 32));
  const int64_t n = int64_t(bits.size());
  for (mj::DType dt : {mj::i32, mj::u32}) {
    Array x = mj::zeros({n}, dt);
    if (dt == mj::i32) std::memcpy(x.mutable_data<int32_t>(), bits.data(), bits.size() * 4);
    else std::memcpy(x.mutable_data<uint32_t>(), bits.data(), bits.size() * 4);
    auto pc = [](const Array& a) { return lax::population_count(a); };
    auto lz = [](const Array& a) { return lax::clz(a); };
    for (const auto& [how, p, l] :
         {std::tuple{"eager", pc(x), lz(x)}, std::tuple{"compiled", mj::jit(pc)(x), mj::jit(lz)(x)}}) {
      ASSERT_EQ(p.dtype(), dt);
      ASSERT_EQ(l.dtype(), dt);
      const uint32_t* pp = static_cast<const uint32_t*>(p.raw_data());
      const uint32_t* pl = static_cast<const uint32_t*>(l.raw_data());
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(pp[i], uint32_t(std::popcount(bits[i])))
            << how << " " << mj::dtype_name(dt) << " " << bits[i];
        EXPECT_EQ(pl[i], uint32_t(std::countl_zero(bits[i])))
            << how << " " << mj::dtype_name(dt) << " " << bits[i];
      }
    }
  }
  // The worked values of an i32 -1 (32 ones, no leading zero) and 0 (no ones, 32 leading zeros).
  Array m1 = mj::array({-1.0, 0.0}, {2}, mj::i32);
  EXPECT_EQ(lax::population_count(m1).data<int32_t>()[0], 32);
  EXPECT_EQ(lax::clz(m1).data<int32_t>()[1], 32);
  EXPECT_EQ(lax::clz(m1).data<int32_t>()[0], 0);
}

// is_finite against std::isfinite on every class of f32, f64 and bf16 values, eager and compiled.
TEST(SpecialBits, IsFiniteMatchesStdIsfinite) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> v = {0.0, -0.0, 1.0, -2.5, inf, -inf, nan, 1e-310, 1e300, -1e38, 5e-324};
  for (mj::DType dt : {mj::f32, mj::f64, mj::bf16}) {
    Array x = mj::astype(mj::array(v, {int64_t(v.size())}, mj::f64), dt);
    Array xd = mj::astype(x, mj::f64);
    auto f = [](const Array& a) { return lax::is_finite(a); };
    for (const Array& got : {f(x), mj::jit(f)(x)}) {
      ASSERT_EQ(got.dtype(), mj::bool_);
      for (size_t i = 0; i < v.size(); ++i)
        EXPECT_EQ(got.data<bool>()[i], std::isfinite(xd.data<double>()[i]))
            << mj::dtype_name(dt) << " " << v[i];
    }
  }
}

// nextafter has no derivative in JAX: a float tangent reaching it is a NotDifferentiableError that
// names it, forward and reverse, eager and under jit; a tangent that is zero (the operand does not
// depend on the differentiated input) passes. is_finite's bool result gets a zero tangent.
TEST(SpecialBits, NextafterIsNotDifferentiable) {
  Array x = mj::array({0.5, 1.5}, {2}, mj::f64);
  auto f = [](const Array& a) { return mj::sum(lax::nextafter(a, mj::zeros_like(a))); };
  for (int mode = 0; mode < 3; ++mode) {
    try {
      if (mode == 0) mj::grad(f)(x);
      else if (mode == 1) mj::jvp(f, x, x);
      else mj::jit(mj::grad(f))(x);
      ADD_FAILURE() << "mode " << mode << ": expected NotDifferentiableError";
    } catch (const mj::NotDifferentiableError& e) {
      EXPECT_NE(std::string(e.what()).find("nextafter"), std::string::npos) << e.what();
    }
  }
  Array c = mj::array({1.0, -1.0}, {2}, mj::f64);
  auto g = [c](const Array& a) { return mj::sum(a * lax::nextafter(c, mj::zeros_like(c))); };
  Array gx = mj::grad(g)(x);
  EXPECT_EQ(gx.data<double>()[0], std::nextafter(1.0, 0.0));
  EXPECT_EQ(gx.data<double>()[1], std::nextafter(-1.0, 0.0));
  auto h = [](const Array& a) { return mj::sum(mj::where(lax::is_finite(a), a * a, a)); };
  Array gh = mj::grad(h)(x);
  EXPECT_EQ(gh.data<double>()[0], 1.0);
  EXPECT_EQ(gh.data<double>()[1], 3.0);
}

}  // namespace
