// minijax linear-algebra tests: the helpers test_linalg.cc, test_linalg_factor.cc and
// test_linalg_factor_grads.cc share (values as doubles, seeded uniform inputs, bit equality).
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace linalg_test {

/// a's elements as f64, row-major.
inline std::vector<double> vals(const mj::Array& a) {
  mj::Array c = mj::astype(a.concrete(), mj::f64);
  const double* p = c.data<double>();
  return std::vector<double>(p, p + c.size());
}

/// `count` values uniform in [lo, hi) from std::mt19937(seed) (independent of minijax's PRNG).
inline std::vector<double> uniform_values(size_t count, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(count);
  for (double& x : v) x = u(g);
  return v;
}

/// An array of shape s and dtype d of uniform_values.
inline mj::Array uniform(const mj::Shape& s, uint32_t seed, double lo = -1, double hi = 1,
                         mj::DType d = mj::f64) {
  return mj::array(uniform_values(size_t(mj::shape_size(s)), seed, lo, hi), s, d);
}

/// The two arrays have one aval and identical bytes.
inline void expect_bits(const mj::Array& got, const mj::Array& want, const std::string& what) {
  mj::Array g = got.concrete(), w = want.concrete();
  ASSERT_EQ(g.aval(), w.aval()) << what;
  EXPECT_EQ(std::memcmp(g.raw_data(), w.raw_data(), size_t(w.aval().nbytes())), 0) << what;
}

}  // namespace linalg_test
