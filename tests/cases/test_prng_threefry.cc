// Case test for docs/cases/prng-threefry.md: the threefry2x32 block function reproduces the
// Random123 known-answer vectors, eagerly and under jit; uniform/normal draws pass distribution
// tests and are identical eagerly and under jit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <minijax/minijax.h>

namespace {

using mj::Array;

Array u32(uint32_t v) { return mj::lax::scalar(double(v), mj::DType::u32); }

struct Kat {
  uint32_t k0, k1, x0, x1, y0, y1;
};
// Random123 kat_vectors (threefry2x32_20), as the case lists them.
const Kat kKats[] = {
    {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x6b200159, 0x99ba4efe},
    {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
    {0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3, 0xc4923a9c, 0x483df7a0},
};

TEST(PrngThreefry, KnownAnswerVectorsEagerAndJit) {
  auto block = [](const Array& k0, const Array& k1, const Array& x0, const Array& x1) {
    auto [y0, y1] = mj::lax::threefry2x32(k0, k1, x0, x1);
    return std::pair{y0, y1};
  };
  auto jitted = mj::jit(block);
  for (const Kat& k : kKats) {
    for (bool under_jit : {false, true}) {
      auto [y0, y1] = under_jit ? jitted(u32(k.k0), u32(k.k1), u32(k.x0), u32(k.x1))
                                : block(u32(k.k0), u32(k.k1), u32(k.x0), u32(k.x1));
      ASSERT_EQ(y0.dtype(), mj::DType::u32);
      ASSERT_EQ(y1.dtype(), mj::DType::u32);
      EXPECT_EQ(y0.data<uint32_t>()[0], k.y0) << std::hex << "key " << k.k0 << " " << k.k1 << " jit=" << under_jit;
      EXPECT_EQ(y1.data<uint32_t>()[0], k.y1) << std::hex << "key " << k.k0 << " " << k.k1 << " jit=" << under_jit;
    }
  }
  // The three vectors as one broadcast call (counters and keys of shape [3]).
  std::vector<Array> cols[4];
  for (const Kat& k : kKats) {
    cols[0].push_back(u32(k.k0));
    cols[1].push_back(u32(k.k1));
    cols[2].push_back(u32(k.x0));
    cols[3].push_back(u32(k.x1));
  }
  auto [y0, y1] = jitted(mj::stack(cols[0]), mj::stack(cols[1]), mj::stack(cols[2]), mj::stack(cols[3]));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(y0.data<uint32_t>()[i], kKats[i].y0) << i;
    EXPECT_EQ(y1.data<uint32_t>()[i], kKats[i].y1) << i;
  }
}

// Kolmogorov–Smirnov statistic of samples against a CDF.
double ks_statistic(std::vector<double> s, double (*cdf)(double)) {
  std::sort(s.begin(), s.end());
  const double n = double(s.size());
  double d = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const double f = cdf(s[i]);
    d = std::max({d, f - double(i) / n, double(i + 1) / n - f});
  }
  return d;
}
double uniform_cdf(double x) { return std::clamp(x, 0.0, 1.0); }
double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

std::vector<double> values(const Array& a) {
  std::vector<double> v(size_t(a.size()));
  for (int64_t i = 0; i < a.size(); ++i) v[size_t(i)] = a.data<float>()[i];
  return v;
}

TEST(PrngThreefry, UniformAndNormalDistributionsEagerEqualsJit) {
  const int64_t n = 20000;
  const Array key = mj::random::PRNGKey(42);
  auto draw = [n](const Array& k) {
    Array ks = mj::random::split(k, 2);
    auto row = [&](int64_t i) {
      return mj::lax::squeeze(mj::lax::slice(ks, {i, 0}, {i + 1, 2}), {0});
    };
    return std::pair{mj::random::uniform(row(0), {n}), mj::random::normal(row(1), {n})};
  };
  auto [u, z] = draw(key);
  auto [ju, jz] = mj::jit(draw)(key);
  // Identical bits eagerly and under jit for the uniform draws (integer and exact float ops);
  // the normal ones go through erf_inv, whose compiled polynomial is within a few ulp of eager's.
  ASSERT_EQ(u.aval(), ju.aval());
  ASSERT_EQ(z.aval(), jz.aval());
  EXPECT_EQ(std::memcmp(u.data<float>(), ju.data<float>(), size_t(n) * 4), 0);
  int64_t worst_ulp = 0;
  for (int64_t i = 0; i < n; ++i) {
    int32_t a, b;
    std::memcpy(&a, z.data<float>() + i, 4);
    std::memcpy(&b, jz.data<float>() + i, 4);
    worst_ulp = std::max<int64_t>(worst_ulp, std::abs(int64_t(a) - int64_t(b)));  // same sign: ulp distance
  }
  EXPECT_LE(worst_ulp, 8) << "normal draws: compiled vs eager, in ulp";

  // Uniform on [0, 1): mean 1/2, variance 1/12; standard errors sqrt(1/12/n) ~ 0.002 and
  // ~ sqrt(1/180/n) ~ 0.0005; bounds at about 5 standard errors. KS: the 0.1% critical value is
  // 1.95/sqrt(n) ~ 0.0138.
  std::vector<double> uv = values(u), zv = values(z);
  double mean = 0, var = 0;
  for (double x : uv) {
    EXPECT_GE(x, 0.0);
    EXPECT_LT(x, 1.0);
    mean += x;
  }
  mean /= double(n);
  for (double x : uv) var += (x - mean) * (x - mean);
  var /= double(n - 1);
  EXPECT_NEAR(mean, 0.5, 0.01);
  EXPECT_NEAR(var, 1.0 / 12.0, 0.0025);
  EXPECT_LT(ks_statistic(uv, uniform_cdf), 1.95 / std::sqrt(double(n)));

  // Standard normal: mean 0 (se 0.007), variance 1 (se ~0.01).
  mean = 0;
  var = 0;
  for (double x : zv) {
    EXPECT_TRUE(std::isfinite(x));
    mean += x;
  }
  mean /= double(n);
  for (double x : zv) var += (x - mean) * (x - mean);
  var /= double(n - 1);
  EXPECT_NEAR(mean, 0.0, 0.035);
  EXPECT_NEAR(var, 1.0, 0.05);
  EXPECT_LT(ks_statistic(zv, normal_cdf), 1.95 / std::sqrt(double(n)));
}

}  // namespace
