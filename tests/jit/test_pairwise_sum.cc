// Pairwise summation: eager and compiled reduce_sum form the same fixed pairwise tree in the same
// accumulator type (docs/compiler.md, "Numerics"), so they agree bit for bit, within its error bound.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace {

using mj::Array;

bool same_bits(const Array& a, const Array& b) {
  return a.aval().str() == b.aval().str() &&
         std::memcmp(a.raw_data(), b.raw_data(), size_t(a.aval().nbytes())) == 0;
}

int64_t ceil_log2(int64_t k) { return k <= 1 ? 0 : int64_t(std::bit_width(uint64_t(k - 1))); }

// The bound docs/compiler.md states for a sum whose innermost reduced axis has n elements, over
// `rows` rows (the other reduced axes): |computed - exact| <= gamma_D * sum |x_i|, gamma_D =
// D u / (1 - D u) (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §4.2: every
// term is perturbed by at most gamma of the number of additions it goes through), with
// D = 11 + ceil(log2 ceil(n / 128)) + ceil(log2 rows) (7 rounding additions in an accumulator, 4
// joining the 16 accumulators of a block, then the pairwise trees over blocks and rows).
double sum_bound(int64_t n, int64_t rows, double u, double abs_sum) {
  const int64_t d = 11 + ceil_log2((n + 127) / 128) + ceil_log2(rows);
  return double(d) * u / (1 - double(d) * u) * abs_sum;
}

const double kU32 = std::ldexp(1.0, -24);  // unit roundoff of f32

Array sum_all(const Array& x) { return mj::sum(x); }

// 2^28 ones (1 GiB, an argument buffer, not a broadcast): exact, eagerly and compiled. (A sum of
// blocks of 2048 added one after another is exact here too; it stalls at 2^35 on 2^40 ones, more
// than this test can allocate.)
TEST(PairwiseSum, TwoTo28OnesEagerAndCompiled) {
  const int64_t n = int64_t(1) << 28;
  Array x = mj::ones({n}, mj::f32);
  Array eager = sum_all(x);
  Array compiled = mj::jit(sum_all)(x);
  const double exact = double(n);  // oracle: n ones
  EXPECT_LE(std::fabs(double(eager.item<float>()) - exact), sum_bound(n, 1, kU32, exact));
  EXPECT_EQ(double(eager.item<float>()), exact);  // every partial sum is a power of two
  EXPECT_TRUE(same_bits(eager, compiled)) << eager.item<float>() << " vs " << compiled.item<float>();
}

// 2^26 uniform values k * 2^-24 (k < 2^24 from std::mt19937, seeded), so the exact sum is an
// integer count times 2^-24 (oracle: integer arithmetic). Eager and compiled are within the bound
// and equal bit for bit (before pairwise summation eager added in double and the kernels in f32
// blocks of 2048, and the two differed).
TEST(PairwiseSum, TwoTo26UniformWithinBoundAndBitForBit) {
  const int64_t n = int64_t(1) << 26;
  Array x = mj::zeros({n}, mj::f32);
  float* p = x.mutable_data<float>();
  std::mt19937 gen(2026);
  uint64_t k_sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t k = gen() >> 8;
    k_sum += k;
    p[i] = float(std::ldexp(double(k), -24));
  }
  const double exact = std::ldexp(double(k_sum), -24);  // k_sum < 2^50: exact in double
  Array eager = sum_all(x);
  Array compiled = mj::jit(sum_all)(x);
  const double bound = sum_bound(n, 1, kU32, exact);
  EXPECT_LE(std::fabs(double(eager.item<float>()) - exact), bound) << eager.item<float>() << " vs " << exact;
  EXPECT_LE(std::fabs(double(compiled.item<float>()) - exact), bound) << compiled.item<float>() << " vs " << exact;
  EXPECT_TRUE(same_bits(eager, compiled)) << eager.item<float>() << " vs " << compiled.item<float>();
}

// A long strided (outer-axis) sum: [2^20, 3] over axis 0, one output per lane in the kernels.
TEST(PairwiseSum, LongOuterAxisWithinBound) {
  const int64_t n = int64_t(1) << 20;
  Array x = mj::zeros({n, 3}, mj::f32);
  float* p = x.mutable_data<float>();
  std::mt19937 gen(7);
  std::vector<uint64_t> k_sum(3, 0);
  for (int64_t i = 0; i < n * 3; ++i) {
    const uint32_t k = gen() >> 8;
    k_sum[size_t(i % 3)] += k;
    p[i] = float(std::ldexp(double(k), -24));
  }
  auto f = [](const Array& a) { return mj::sum(a, 0); };
  Array eager = f(x), compiled = mj::jit(f)(x);
  ASSERT_TRUE(same_bits(eager, compiled));
  for (int64_t j = 0; j < 3; ++j) {
    const double exact = std::ldexp(double(k_sum[size_t(j)]), -24);
    EXPECT_LE(std::fabs(double(eager.data<float>()[j]) - exact), sum_bound(n, 1, kU32, exact)) << j;
  }
}

// Values whose sums depend on the order: random signs and magnitudes over 2^-12 .. 2^12.
Array spread(const mj::Shape& shape, uint32_t seed, mj::DType dt) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<int> e(-12, 12);
  int64_t size = 1;
  for (int64_t d : shape) size *= d;
  std::vector<double> v(static_cast<size_t>(size));
  for (auto& x : v) x = dt == mj::i32 ? std::floor(u(gen) * 1e9) : std::ldexp(u(gen), e(gen));
  return mj::array(v, shape, dt);
}

struct SumCase {
  mj::Shape shape;
  std::vector<int64_t> axes;
};

std::string describe(const SumCase& c, mj::DType dt) {
  std::string s = std::string(mj::dtype_name(dt)) + mj::shape_str(c.shape) + " axes (";
  for (int64_t a : c.axes) s += std::to_string(a) + ",";
  return s + ")";
}

// Every layout the kernels distinguish: full sums, rows (innermost axis reduced: 16 lanes, blocks
// of 128, lane tails), columns (innermost axis kept: 16 accumulators per output, output lanes and
// their scalar tail), several reduced axes (rows of rows), empty axes and no axes.
const std::vector<SumCase>& cases() {
  static const std::vector<SumCase> c = {
      {{1}, {0}},           {{7}, {0}},           {{16}, {0}},         {{17}, {0}},
      {{127}, {0}},         {{128}, {0}},         {{129}, {0}},        {{300}, {0}},
      {{4133}, {0}},        {{100003}, {0}},      {{5, 1000}, {1}},    {{5, 1000}, {0}},
      {{5, 1000}, {0, 1}},  {{1000, 5}, {0}},     {{1000, 5}, {1}},    {{37, 33}, {0}},
      {{300, 40}, {0}},     {{3, 200, 7}, {0, 2}}, {{3, 200, 7}, {0, 1}}, {{3, 200, 7}, {1, 2}},
      {{3, 200, 7}, {0, 1, 2}}, {{3, 200, 7}, {1}}, {{2, 3, 130, 17}, {0, 2}}, {{2, 3, 130, 17}, {1, 3}},
      {{2, 3, 130, 17}, {0, 1, 2, 3}}, {{5, 300, 2}, {0, 1}}, {{0, 5}, {0}}, {{5, 0}, {1}},
      {{3, 0, 4}, {0, 1}}, {{}, {}},             {{4, 5}, {}},        {{128, 40}, {0}},
      {{100, 3}, {0}},      {{20, 40}, {0}},
  };
  return c;
}

TEST(PairwiseSum, EagerEqualsCompiledBitForBitOnEveryLayout) {
  uint32_t seed = 1;
  for (mj::DType dt : {mj::f32, mj::f64, mj::bf16, mj::i32}) {
    for (const SumCase& c : cases()) {
      Array x = spread(c.shape, seed++, dt);
      const std::vector<int64_t> axes = c.axes;
      auto f = [axes](const Array& a) { return mj::lax::reduce_sum(a, axes); };
      EXPECT_TRUE(same_bits(f(x), mj::jit(f)(x))) << describe(c, dt);
    }
  }
}

// The order depends on the reduced extents only: summing rows, or the same values as columns of
// the transpose, or under vmap with the batch axis last, gives the same bits, eagerly and compiled.
TEST(PairwiseSum, OrderIndependentOfLayout) {
  Array x = spread({5, 3000}, 31, mj::f32);
  Array xt = mj::transpose(x) * 1.0;  // materialized [3000, 5]
  auto rows = [](const Array& a) { return mj::sum(a, 1); };
  auto cols = [](const Array& a) { return mj::sum(a, 0); };
  Array want = rows(x);
  EXPECT_TRUE(same_bits(cols(xt), want));
  EXPECT_TRUE(same_bits(mj::jit(cols)(xt), want));
  EXPECT_TRUE(same_bits(mj::jit(rows)(x), want));
  Array batched = mj::vmap(rows, {.in_axes = {2}})(mj::stack({x, x}, 2));  // [5, 3000, 2] -> [2, 5]
  ASSERT_EQ(batched.shape(), (mj::Shape{2, 5}));
  EXPECT_EQ(std::memcmp(batched.raw_data(), want.raw_data(), 5 * sizeof(float)), 0);
}

// Sums inside fused kernels: elementwise producers and an epilogue (exact operations, so eager's
// values are the compiled ones), a max over the same axes in the same kernel, a transposed
// operand, and mean/var built on reduce_sum.
TEST(PairwiseSum, FusedSumsEqualEagerBitForBit) {
  Array x = spread({6, 517}, 11, mj::f32), y = spread({6, 517}, 12, mj::f32);
  Array z = spread({517, 6}, 13, mj::f32);
  auto check = [&](const std::string& what, auto f) {
    std::vector<Array> e = f(x, y, z), c = mj::jit(f)(x, y, z);
    ASSERT_EQ(e.size(), c.size()) << what;
    for (size_t i = 0; i < e.size(); ++i) EXPECT_TRUE(same_bits(e[i], c[i])) << what << ": output " << i;
  };
  check("producers", [](const Array& a, const Array& b, const Array&) {
    return std::vector<Array>{mj::sum(a * b + 1.0, 1), mj::sum(a * b - a, 0), mj::sum(a * a)};
  });
  check("epilogue", [](const Array& a, const Array&, const Array&) {
    return std::vector<Array>{mj::sum(a, 1) * 3.0 + 1.0};
  });
  check("with max", [](const Array& a, const Array&, const Array&) {
    return std::vector<Array>{mj::sum(a, 1), mj::max(a, 1), mj::sum(a, 0), mj::max(a, 0)};
  });
  check("transposed", [](const Array& a, const Array&, const Array& c) {
    return std::vector<Array>{mj::sum(a + mj::transpose(c), 1), mj::sum(mj::transpose(c) * a, 0)};
  });
  check("mean and var", [](const Array& a, const Array&, const Array&) {
    return std::vector<Array>{mj::mean(a, 1), mj::var(a, 0), mj::mean(a), mj::var(a)};
  });
}

// bf16 sums accumulate in f32 and round once: the rounded sum feeds the epilogue in both.
TEST(PairwiseSum, Bf16SumRoundedBeforeEpilogue) {
  Array x = spread({3, 1000}, 21, mj::bf16);
  auto f = [](const Array& a) { return mj::sum(a, 1) * mj::lax::scalar(3.0, mj::bf16, false); };
  EXPECT_TRUE(same_bits(f(x), mj::jit(f)(x)));
}

// A column sum (the innermost dim kept: a bias gradient) runs its vector loop over the outputs,
// and the chunks the kernel is split into across threads start at whole vectors (a chunk of
// fewer outputs than the lanes ran the scalar loop over every row, each reading the whole
// operand). Checked on the program text: the grain of the mj_rt_parallel_for call is a multiple
// of the kernel's lanes; the values equal eager's bit for bit.
TEST(PairwiseSum, ColumnSumChunksAreWholeVectors) {
  const Array x = mj::random::normal(mj::random::PRNGKey(3), {128, 12, 12, 32});
  auto f = mj::jit([](const Array& a) { return mj::sum(a, std::vector<int64_t>{0, 1, 2}); });
  const std::string text = f.lower(x).compile().as_text();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(fusion: (\w+) reduction \S+ x(\d+) lanes parallel)"))) << text;
  const std::string kernel = m[1];
  const int64_t lanes = std::stoll(m[2]);
  ASSERT_TRUE(std::regex_search(text, m, std::regex("(%\\d+) = funcaddr @" + kernel + "\\b"))) << text;
  const std::string fn = m[1];
  ASSERT_TRUE(std::regex_search(text, m, std::regex("call @mj_rt_parallel_for " + fn + R"(, %\d+, %\d+, (%\d+))"))) << text;
  const std::string grain_id = m[1];
  ASSERT_TRUE(std::regex_search(text, m, std::regex(grain_id + R"( = const i64 (\d+))"))) << text;
  const int64_t grain = std::stoll(m[1]);
  EXPECT_GT(lanes, 1);
  EXPECT_EQ(grain % lanes, 0) << "grain " << grain << ", lanes " << lanes;
  EXPECT_TRUE(same_bits(f(x), mj::sum(x, std::vector<int64_t>{0, 1, 2})));
}

// A one-block column sum (at most 128 rows, the innermost dim kept: the MLP step's bias gradients)
// runs a loop over groups of 16 rows whose body is unrolled, not 128 unrolled rows: the kernel's
// vector loads are one group's (16 operand rows and 16 accumulators) and the 16 final
// accumulators, 50 in all, where the fully unrolled block had 272 and its IR doubled the MLP step's
// cold compile. Values equal eager's bit for bit.
TEST(PairwiseSum, OneBlockColumnSumLoopsOverGroups) {
  const Array x = spread({128, 512}, 77, mj::f32);
  auto f = mj::jit([](const Array& a) { return mj::lax::reduce_sum(a, {0}); });
  const std::string text = f.lower(x).compile().as_text();
  const size_t start = text.find("; fusion fusion.0: reduction [128,512]");
  ASSERT_NE(start, std::string::npos) << text;
  const size_t end = text.find("\n}", start);
  ASSERT_NE(end, std::string::npos);
  const std::string kernel = text.substr(start, end - start);
  int64_t vector_loads = 0;
  for (size_t at = kernel.find("= load <"); at != std::string::npos; at = kernel.find("= load <", at + 1))
    ++vector_loads;
  EXPECT_GE(vector_loads, 16) << kernel;
  EXPECT_LE(vector_loads, 64) << kernel;
  EXPECT_TRUE(same_bits(f(x), mj::lax::reduce_sum(x, {0})));
}

}  // namespace
