// Tests of the threefry2x32 PRNG: known-answer vectors, split/fold_in structure, and the
// distributions of uniform, normal, randint and permutation (mean, variance, KS bounds).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include <minijax/minijax.h>

namespace {

using namespace minijax;

Array u32s(std::vector<double> v) {
  Shape s{int64_t(v.size())};
  return array(v, s, u32);
}
Array u32s0(uint32_t v) { return scalar(double(v), u32); }

std::vector<uint32_t> vals(const Array& a) {
  const uint32_t* p = a.data<uint32_t>();
  return std::vector<uint32_t>(p, p + a.size());
}

// An independent scalar Threefry-2x32-20 (Salmon et al. 2011, Random123's threefry2x32_R(20)):
// written out round by round, used as the reference for split/fold_in/bits.
uint32_t rl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
std::pair<uint32_t, uint32_t> ref_threefry(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1) {
  const int R[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  uint32_t k2 = k0 ^ k1 ^ 0x1BD11BDA;
  uint32_t ks[3] = {k0, k1, k2};
  x0 += k0;
  x1 += k1;
  for (int round = 0; round < 20; ++round) {
    x0 += x1;
    x1 = rl(x1, R[round % 8]);
    x1 ^= x0;
    if (round % 4 == 3) {  // key injection s = round/4 + 1
      int s = round / 4 + 1;
      x0 += ks[s % 3];
      x1 += ks[(s + 1) % 3] + uint32_t(s);
    }
  }
  return {x0, x1};
}

TEST(Threefry, KnownAnswerVectors) {
  // docs/cases/prng-threefry.md (Random123 kat_vectors).
  struct Kat { uint32_t k0, k1, x0, x1, y0, y1; };
  const Kat kats[] = {
      {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x6b200159, 0x99ba4efe},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
      {0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3, 0xc4923a9c, 0x483df7a0},
  };
  for (const auto& k : kats) {
    auto [y0, y1] = lax::threefry2x32(u32s0(k.k0), u32s0(k.k1), u32s0(k.x0), u32s0(k.x1));
    EXPECT_EQ(y0.dtype(), u32);
    EXPECT_EQ(y0.item<uint64_t>(), k.y0);
    EXPECT_EQ(y1.item<uint64_t>(), k.y1);
    auto [r0, r1] = ref_threefry(k.k0, k.k1, k.x0, k.x1);  // the reference agrees too
    EXPECT_EQ(r0, k.y0);
    EXPECT_EQ(r1, k.y1);
  }
}

TEST(Threefry, BroadcastsKeysAgainstCounters) {
  // Rank-0 keys against rank-1 counters: each element is the block of its own counter pair.
  auto [y0, y1] = lax::threefry2x32(u32s0(0x13198a2e), u32s0(0x03707344),
                                    u32s({0x243f6a88, 0, 7}), u32s({0x85a308d3, 0, 9}));
  ASSERT_EQ(y0.shape(), (Shape{3}));
  auto a = vals(y0), b = vals(y1);
  EXPECT_EQ(a[0], 0xc4923a9cu);
  EXPECT_EQ(b[0], 0x483df7a0u);
  for (int i = 1; i < 3; ++i) {
    uint32_t x0 = i == 1 ? 0 : 7, x1 = i == 1 ? 0 : 9;
    auto [r0, r1] = ref_threefry(0x13198a2e, 0x03707344, x0, x1);
    EXPECT_EQ(a[size_t(i)], r0);
    EXPECT_EQ(b[size_t(i)], r1);
  }
  EXPECT_THROW(lax::threefry2x32(scalar(1.0, f32), u32s0(0), u32s0(0), u32s0(0)), TypeError);
  EXPECT_THROW(lax::threefry2x32(u32s0(0), u32s0(0), u32s({1, 2}), u32s({1, 2, 3})), ShapeError);
}

TEST(Random, PRNGKeyLayout) {
  EXPECT_EQ(vals(random::PRNGKey(0)), (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(vals(random::PRNGKey(42)), (std::vector<uint32_t>{0, 42}));
  EXPECT_EQ(vals(random::PRNGKey((uint64_t(3) << 32) | 5u)), (std::vector<uint32_t>{3, 5}));
  EXPECT_EQ(random::PRNGKey(1).shape(), (Shape{2}));
  EXPECT_EQ(random::PRNGKey(1).dtype(), u32);
}

TEST(Random, SplitIsDeterministicAndFoldlike) {
  Array key = random::PRNGKey(1234);
  Array ks = random::split(key, 4);
  ASSERT_EQ(ks.shape(), (Shape{4, 2}));
  EXPECT_EQ(ks.dtype(), u32);
  EXPECT_EQ(vals(ks), vals(random::split(key, 4)));  // deterministic
  auto v = vals(ks);
  std::set<std::pair<uint32_t, uint32_t>> distinct;
  for (int i = 0; i < 4; ++i) {
    // Key i = threefry2x32(key, (0, i)) (JAX's _threefry_split_foldlike).
    auto [r0, r1] = ref_threefry(0, 1234, 0, uint32_t(i));
    EXPECT_EQ(v[size_t(2 * i)], r0);
    EXPECT_EQ(v[size_t(2 * i + 1)], r1);
    distinct.insert({v[size_t(2 * i)], v[size_t(2 * i + 1)]});
  }
  EXPECT_EQ(distinct.size(), 4u);
  EXPECT_FALSE(distinct.count({0u, 1234u}));  // children differ from the parent
  // A different parent gives different children.
  EXPECT_NE(vals(random::split(random::PRNGKey(1235), 4)), v);
  EXPECT_EQ(random::split(key, 0).shape(), (Shape{0, 2}));
  EXPECT_THROW(random::split(zeros({3}, u32)), TypeError);
  EXPECT_THROW(random::split(zeros({2}, i32)), TypeError);
}

TEST(Random, FoldIn) {
  Array key = random::PRNGKey(7);
  Array a = random::fold_in(key, 1), b = random::fold_in(key, 2);
  ASSERT_EQ(a.shape(), (Shape{2}));
  EXPECT_EQ(vals(a), vals(random::fold_in(key, 1)));
  EXPECT_NE(vals(a), vals(b));
  EXPECT_NE(vals(a), vals(key));
  auto [r0, r1] = ref_threefry(0, 7, 0, 1);  // threefry_2x32(key, [0, data])
  EXPECT_EQ(vals(a), (std::vector<uint32_t>{r0, r1}));
  EXPECT_EQ(vals(random::fold_in(key, scalar(2, i32))), vals(b));
  EXPECT_THROW(random::fold_in(key, zeros({2}, i32)), TypeError);
}

TEST(Random, BitsMatchTheCounterDefinition) {
  Array key = random::PRNGKey(99);
  Array b = random::bits(key, {2, 3});
  ASSERT_EQ(b.shape(), (Shape{2, 3}));
  auto v = vals(b);
  for (uint32_t i = 0; i < 6; ++i) {
    auto [r0, r1] = ref_threefry(0, 99, 0, i);
    EXPECT_EQ(v[i], r0 ^ r1) << i;
  }
}

// Kolmogorov–Smirnov statistic of samples against a CDF.
template <class Cdf>
double ks_statistic(std::vector<double> x, Cdf cdf) {
  std::sort(x.begin(), x.end());
  double n = double(x.size()), d = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double f = cdf(x[i]);
    d = std::max({d, f - double(i) / n, double(i + 1) / n - f});
  }
  return d;
}

template <class T>
std::vector<double> as_doubles(const Array& a) {
  const T* p = a.data<T>();
  return std::vector<double>(p, p + a.size());
}

void moments(const std::vector<double>& x, double& mean, double& var) {
  mean = 0;
  for (double v : x) mean += v;
  mean /= double(x.size());
  var = 0;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= double(x.size());
}

constexpr int64_t kN = 100000;
const double kKsBound = 1.95 / std::sqrt(double(kN));  // 0.999 critical value

TEST(Random, UniformF32Distribution) {
  Array u = random::uniform(random::PRNGKey(0), {kN});
  ASSERT_EQ(u.dtype(), f32);
  ASSERT_EQ(u.shape(), (Shape{kN}));
  auto x = as_doubles<float>(u);
  for (double v : x) ASSERT_TRUE(v >= 0.0 && v < 1.0) << v;
  double m, var;
  moments(x, m, var);
  // Standard errors: sqrt(1/12/n) = 9.1e-4 for the mean, sqrt((1/80 - 1/144)/n) = 2.4e-4 for
  // the variance; the bounds are 5 standard errors.
  EXPECT_NEAR(m, 0.5, 5 * 9.1e-4);
  EXPECT_NEAR(var, 1.0 / 12.0, 5 * 2.4e-4);
  EXPECT_LT(ks_statistic(x, [](double v) { return std::clamp(v, 0.0, 1.0); }), kKsBound);
  // The KS test has power: a CDF shifted by 0.02 is rejected.
  EXPECT_GT(ks_statistic(x, [](double v) { return std::clamp(v - 0.02, 0.0, 1.0); }), kKsBound);
}

TEST(Random, UniformIsTheMantissaConstruction) {
  // uniform = bitcast(bits >> 9 | 0x3f800000) - 1, scaled: checked against bits() by hand.
  Array key = random::PRNGKey(5);
  auto b = vals(random::bits(key, {8}));
  Array u = random::uniform(key, {8}, f32, -2.0, 3.0);
  const float* p = u.data<float>();
  for (int i = 0; i < 8; ++i) {
    uint32_t w = (b[size_t(i)] >> 9) | 0x3f800000u;
    float f;
    std::memcpy(&f, &w, 4);
    float expect = std::max(-2.0f, (f - 1.0f) * 5.0f + -2.0f);
    EXPECT_EQ(p[i], expect) << i;
  }
}

TEST(Random, UniformRangeAndF64) {
  Array u = random::uniform(random::PRNGKey(3), {kN}, f64, -1.0, 2.0);
  ASSERT_EQ(u.dtype(), f64);
  auto x = as_doubles<double>(u);
  for (double v : x) ASSERT_TRUE(v >= -1.0 && v < 2.0) << v;
  double m, var;
  moments(x, m, var);
  EXPECT_NEAR(m, 0.5, 5 * 3 * 9.1e-4);       // mean (a+b)/2, se scales with the width 3
  EXPECT_NEAR(var, 9.0 / 12.0, 5 * 9 * 2.4e-4);  // (b-a)^2/12
  EXPECT_LT(ks_statistic(x, [](double v) { return std::clamp((v + 1.0) / 3.0, 0.0, 1.0); }), kKsBound);
  // f64 draws use 52 random mantissa bits: far more distinct values than f32's 2^23 grid.
  std::set<double> distinct(x.begin(), x.begin() + 1000);
  EXPECT_EQ(distinct.size(), 1000u);
  Array ub = random::uniform(random::PRNGKey(3), {1000}, bf16);
  EXPECT_EQ(ub.dtype(), bf16);
  for (int i = 0; i < 1000; ++i) {
    float v = float(ub.data<bfloat16>()[i]);
    ASSERT_TRUE(v >= 0.0f && v < 1.0f) << v;
  }
  EXPECT_THROW(random::uniform(random::PRNGKey(0), {2}, i32), TypeError);
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

TEST(Random, NormalDistribution) {
  for (DType dt : {f32, f64}) {
    Array z = random::normal(random::PRNGKey(11), {kN}, dt);
    ASSERT_EQ(z.dtype(), dt);
    auto x = dt == f32 ? as_doubles<float>(z) : as_doubles<double>(z);
    for (double v : x) ASSERT_TRUE(std::isfinite(v));
    double m, var;
    moments(x, m, var);
    // Standard errors: 1/sqrt(n) = 3.2e-3 (mean), sqrt(2/n) = 4.5e-3 (variance); 5 of them.
    EXPECT_NEAR(m, 0.0, 5 * 3.2e-3);
    EXPECT_NEAR(var, 1.0, 5 * 4.5e-3);
    EXPECT_LT(ks_statistic(x, normal_cdf), kKsBound) << dtype_name(dt);
  }
  EXPECT_THROW(random::normal(random::PRNGKey(0), {2}, bool_), TypeError);
}

TEST(Random, ErfInvInvertsErf) {
  std::vector<double> xs = {-0.999, -0.9, -0.5, -0.1, 0.0, 0.3, 0.75, 0.99, 0.999999};
  Array a = array(xs, {int64_t(xs.size())}, f64);
  Array y = lax::erf_inv(a);
  Array yf = lax::erf_inv(array(xs, {int64_t(xs.size())}, f32));
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_NEAR(std::erf(y.data<double>()[i]), xs[i], 1e-15) << xs[i];
    EXPECT_NEAR(std::erf(double(yf.data<float>()[i])), xs[i], 3e-7) << xs[i];
  }
  Array edge = lax::erf_inv(array({-1.0, 1.0, 1.5}, {3}, f32));
  EXPECT_EQ(edge.data<float>()[0], -INFINITY);
  EXPECT_EQ(edge.data<float>()[1], INFINITY);
  EXPECT_TRUE(std::isnan(edge.data<float>()[2]));
  EXPECT_THROW(lax::erf_inv(zeros({2}, i32)), TypeError);
}

TEST(Random, RandintRangeAndUniformity) {
  Array r = random::randint(random::PRNGKey(2), {kN}, -3, 7);
  ASSERT_EQ(r.dtype(), i32);
  const int32_t* p = r.data<int32_t>();
  std::vector<int64_t> counts(10, 0);
  for (int64_t i = 0; i < kN; ++i) {
    ASSERT_TRUE(p[i] >= -3 && p[i] < 7) << p[i];
    counts[size_t(p[i] + 3)]++;
  }
  // Each of 10 values: expected n/10 = 10000, sd sqrt(n * 0.1 * 0.9) = 94.9; allow 5 sd.
  for (int64_t c : counts) EXPECT_NEAR(double(c), 10000.0, 5 * 94.9);
  // maxval <= minval returns minval (JAX's convention).
  Array same = random::randint(random::PRNGKey(2), {5}, 4, 4);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(same.data<int32_t>()[i], 4);
  // u32 over the whole range, and i32 bounds clipped into range.
  Array big = random::randint(random::PRNGKey(2), {1000}, 0, int64_t(1) << 32, u32);
  EXPECT_EQ(big.dtype(), u32);
  uint32_t mx = 0;
  for (int i = 0; i < 1000; ++i) mx = std::max(mx, big.data<uint32_t>()[i]);
  EXPECT_GT(mx, 1u << 31);  // P(all < 2^31) = 2^-1000
  EXPECT_THROW(random::randint(random::PRNGKey(0), {2}, 0, 3, f32), TypeError);
}

TEST(Random, Permutation) {
  Array p = random::permutation(random::PRNGKey(0), 1000);
  ASSERT_EQ(p.dtype(), i32);
  std::vector<int32_t> v(p.data<int32_t>(), p.data<int32_t>() + 1000);
  std::vector<int32_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(sorted[size_t(i)], i);
  int fixed = 0;
  for (int i = 0; i < 1000; ++i) fixed += v[size_t(i)] == i;
  EXPECT_LT(fixed, 10);  // a random permutation has ~1 fixed point
  Array q = random::permutation(random::PRNGKey(0), 1000);
  EXPECT_TRUE(std::equal(v.begin(), v.end(), q.data<int32_t>()));
  Array r = random::permutation(random::PRNGKey(1), 1000);
  EXPECT_FALSE(std::equal(v.begin(), v.end(), r.data<int32_t>()));
  EXPECT_EQ(random::permutation(random::PRNGKey(0), 1).data<int32_t>()[0], 0);
}

TEST(Random, StagedEvaluationMatchesEager) {
  // Traced into a jaxpr with the key as input, then evaluated: the same computation.
  Array key = random::fold_in(random::PRNGKey(17), 3);
  FlatFn f = [](const std::vector<Array>& in) {
    return std::vector<Array>{random::uniform(in[0], {64}), random::normal(in[0], {64}),
                              random::randint(in[0], {64}, 0, 10), random::split(in[0], 3)};
  };
  ClosedJaxpr j = trace_to_jaxpr(f, {key.aval()});
  std::string text = to_string(j);
  EXPECT_NE(text.find("threefry2x32"), std::string::npos) << text;
  EXPECT_NE(text.find("erf_inv"), std::string::npos);
  auto staged = eval_jaxpr(j, {key});
  auto eager = f({key});
  ASSERT_EQ(staged.size(), eager.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    ASSERT_EQ(staged[i].aval(), eager[i].aval());
    EXPECT_EQ(std::memcmp(staged[i].raw_data(), eager[i].raw_data(), size_t(eager[i].aval().nbytes())), 0) << i;
  }
  // permutation needs a concrete key.
  FlatFn g = [](const std::vector<Array>& in) { return std::vector<Array>{random::permutation(in[0], 4)}; };
  EXPECT_THROW(trace_to_jaxpr(g, {key.aval()}), ConcretizationError);
}

}  // namespace

namespace {

using namespace minijax;

Array row(const Array& keys, int64_t i) {
  const uint32_t* p = keys.data<uint32_t>();
  return array({double(p[2 * i]), double(p[2 * i + 1])}, {2}, u32);
}

TEST(RandomBatching, VmapOverKeysMatchesALoop) {
  // Batched threefry2x32 (keys mapped, counters not): each row equals the per-key computation.
  Array keys = random::split(random::PRNGKey(21), 4);
  FlatFn f = [](const std::vector<Array>& in) {
    return std::vector<Array>{random::uniform(in[0], {3}), random::split(in[0], 2),
                              random::bits(in[0], {2, 2}), random::normal(in[0], {5})};
  };
  auto batched = vmap_flat(f, {keys}, {0}, {});
  ASSERT_EQ(batched[0].shape(), (Shape{4, 3}));
  ASSERT_EQ(batched[1].shape(), (Shape{4, 2, 2}));
  ASSERT_EQ(batched[2].shape(), (Shape{4, 2, 2}));
  for (int64_t i = 0; i < 4; ++i) {
    auto one = f({row(keys, i)});
    for (size_t k = 0; k < one.size(); ++k) {
      size_t nb = size_t(one[k].aval().nbytes());
      const char* b = static_cast<const char*>(batched[k].raw_data());
      EXPECT_EQ(std::memcmp(b + size_t(i) * nb, one[k].raw_data(), nb), 0) << "output " << k << " row " << i;
    }
  }
}

TEST(RandomBatching, BitOpsWithOneMappedOperand) {
  Array x = array({1, 2, 4, 8, 16, 32}, {2, 3}, u32);
  Array y = array({1, 2, 3}, {3}, u32);
  auto r = vmap_flat([](const std::vector<Array>& in) {
    return std::vector<Array>{lax::shift_right_logical(in[0], in[1]), lax::shift_left(in[0], in[1]),
                              lax::xor_(in[0], in[1])};
  }, {x, y}, {0, kNotMapped}, {});
  const uint32_t* a = r[0].data<uint32_t>();
  const uint32_t* b = r[1].data<uint32_t>();
  const uint32_t* c = r[2].data<uint32_t>();
  // Row 0: [1,2,4] >> [1,2,3] = [0,0,0]; << = [2,8,32]; ^ = [0,0,7]. Row 1: [8,16,32] with
  // the same shifts: >> [4,4,4], << [16,64,256], ^ [9,18,35].
  EXPECT_EQ(std::vector<uint32_t>(a, a + 6), (std::vector<uint32_t>{0, 0, 0, 4, 4, 4}));
  EXPECT_EQ(std::vector<uint32_t>(b, b + 6), (std::vector<uint32_t>{2, 8, 32, 16, 64, 256}));
  EXPECT_EQ(std::vector<uint32_t>(c, c + 6), (std::vector<uint32_t>{0, 0, 7, 9, 18, 35}));
  // XLA semantics: shifting by 32 or more gives 0.
  Array big = lax::shift_left(array({5}, {1}, u32), array({32}, {1}, u32));
  EXPECT_EQ(big.data<uint32_t>()[0], 0u);
}

TEST(RandomBatching, ErfInvGradient) {
  // d/dx erf_inv(x) = sqrt(pi)/2 * exp(erf_inv(x)^2): at x = 0 it is sqrt(pi)/2; at x = 0.5,
  // checked against a central difference of the f64 values.
  auto f = [](const Array& x) { return sum(lax::erf_inv(x)); };
  Array g = grad(f)(array({0.0, 0.5}, {2}, f64));
  EXPECT_NEAR(g.data<double>()[0], std::sqrt(M_PI) / 2, 1e-12);
  double h = 1e-6;
  Array hi = lax::erf_inv(array({0.5 + h}, {1}, f64)), lo = lax::erf_inv(array({0.5 - h}, {1}, f64));
  EXPECT_NEAR(g.data<double>()[1], (hi.data<double>()[0] - lo.data<double>()[0]) / (2 * h), 1e-6);
}

}  // namespace
