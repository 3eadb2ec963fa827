// minijax lowering tests: helpers shared by test_index_lowering, test_update_lowering and
// test_lowering_registry. Owns random inputs per dtype, bitwise comparison and jit-vs-eager runs.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace lowtest {

using mj::Array;

/// Uniform values in [lo, hi) as f64, converted to `dt` (integers: truncated toward zero).
inline Array uniform(const mj::Shape& shape, uint32_t seed, mj::DType dt = mj::f32, double lo = -2, double hi = 2) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(size_t(mj::shape_size(shape)));
  for (auto& x : v) x = u(gen);
  if (dt == mj::bool_) {
    for (auto& x : v) x = x > (lo + hi) / 2 ? 1 : 0;
    return mj::array(v, shape, mj::bool_);
  }
  if (dt == mj::i32 || dt == mj::u32)
    for (auto& x : v) x = std::trunc(x);
  return mj::array(v, shape, dt);
}

/// Integer-valued data (few distinct values: many ties) of dtype dt.
inline Array small_ints(const mj::Shape& shape, uint32_t seed, mj::DType dt, int k = 4) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> u(0, k - 1);
  std::vector<double> v(size_t(mj::shape_size(shape)));
  for (auto& x : v) x = dt == mj::bool_ ? u(gen) % 2 : u(gen);
  return mj::array(v, shape, dt);
}

/// Same aval and the same bytes (NaN payloads and signed zeros included).
inline bool bit_equal(const Array& a, const Array& b) {
  if (a.aval().str() != b.aval().str()) return false;
  return std::memcmp(a.raw_data(), b.raw_data(), size_t(a.aval().nbytes())) == 0;
}

/// Element i of a as a double (any dtype).
inline double at(const Array& a, int64_t i) { return mj::astype(a, mj::f64).data<double>()[i]; }

/// f evaluated eagerly (the reference) and compiled by mj::jit, compared bit for bit; returns
/// the compiled text for structural checks.
template <class F, class... A>
std::string expect_jit_matches(const std::string& what, F f, const A&... args) {
  auto want = f(args...);
  auto jf = mj::jit(f);
  auto got = jf(args...);
  EXPECT_TRUE(bit_equal(got, want)) << what << "\n got  " << got << "\n want " << want;
  return jf.lower(args...).compile().as_text();
}

}  // namespace lowtest
