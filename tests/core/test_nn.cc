// Tests of mj::nn's convolution and pooling functions: max_pool and avg_pool (flax.linen's
// semantics) against naive loops, and nn::conv against lax::conv_general_dilated on transposed
// operands.
#include <gtest/gtest.h>

#include <cmath>

#include <minijax/minijax.h>

namespace {

using namespace minijax;

Array make(const Shape& shape, const std::vector<double>& v, DType d = f64) {
  Array a = Array::allocate(ShapedArray{shape, d});
  dispatch_dtype(d, [&]<class T>() {
    T* p = a.mutable_data<T>();
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<T, bfloat16>) p[i] = bfloat16(float(v[i]));
      else p[i] = T(v[i]);
    }
  });
  return a;
}
std::vector<double> vals(const Array& a) {
  Array c = lax::convert_element_type(a, f64).concrete();
  const double* p = c.data<double>();
  return std::vector<double>(p, p + c.size());
}
std::vector<double> seq(int64_t n, uint32_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = double(int((seed >> 8) % 201) - 100) / 16.0;
  }
  return v;
}
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// ---- pooling: a naive loop over [batch, h, w, c] ---------------------------------------------------
// flax.linen.pooling: each output (b, i, j, c) reduces x[b, i*sh - plo + di, j*sw - qlo + dj, c]
// over the window; positions outside x are padding (-inf for max; for the average they count in
// the divisor only with count_include_pad). "SAME" pads total = max((ceil(n/s) - 1) s + k - n, 0),
// total/2 low (jax.lax.padtype_to_pads).
struct Pool {
  int64_t kh, kw, sh, sw;
  bool same;
};

std::pair<int64_t, int64_t> same_pads(int64_t n, int64_t k, int64_t s) {
  const int64_t total = std::max<int64_t>(((n + s - 1) / s - 1) * s + k - n, 0);
  return {total / 2, total - total / 2};
}

// kind: 0 max, 1 average with padding counted, 2 average without.
std::vector<double> naive_pool(const std::vector<double>& x, const Shape& s, const Pool& p, int kind,
                               Shape& out) {
  const int64_t B = s[0], H = s[1], W = s[2], C = s[3];
  auto [plo, phi] = p.same ? same_pads(H, p.kh, p.sh) : std::pair<int64_t, int64_t>{0, 0};
  auto [qlo, qhi] = p.same ? same_pads(W, p.kw, p.sw) : std::pair<int64_t, int64_t>{0, 0};
  const int64_t OH = (H + plo + phi - p.kh) / p.sh + 1, OW = (W + qlo + qhi - p.kw) / p.sw + 1;
  out = {B, OH, OW, C};
  std::vector<double> r;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j)
        for (int64_t c = 0; c < C; ++c) {
          double acc = kind == 0 ? -INFINITY : 0.0;
          int64_t n = 0;
          for (int64_t di = 0; di < p.kh; ++di)
            for (int64_t dj = 0; dj < p.kw; ++dj) {
              const int64_t y = i * p.sh - plo + di, z = j * p.sw - qlo + dj;
              if (y < 0 || y >= H || z < 0 || z >= W) continue;
              const double v = x[size_t(((b * H + y) * W + z) * C + c)];
              acc = kind == 0 ? std::max(acc, v) : acc + v;
              ++n;
            }
          r.push_back(kind == 0 ? acc : kind == 1 ? acc / double(p.kh * p.kw) : acc / double(n));
        }
  return r;
}

TEST(NnPool, MaxAndAvgPoolMatchNaiveLoops) {
  const Shape s{2, 5, 6, 3};
  const std::vector<double> x = seq(shape_size(s), 3);
  const Array xa = make(s, x);
  for (const Pool& p :
       {Pool{2, 2, 2, 2, false}, Pool{3, 2, 2, 1, false}, Pool{3, 3, 2, 2, true}, Pool{2, 3, 1, 2, true}}) {
    SCOPED_TRACE(std::to_string(p.kh) + "x" + std::to_string(p.kw) + " stride " + std::to_string(p.sh) + "," +
                 std::to_string(p.sw) + (p.same ? " SAME" : " VALID"));
    const lax::Padding pad = p.same ? "SAME" : "VALID";
    Shape os;
    Array m = nn::max_pool(xa, {p.kh, p.kw}, {p.sh, p.sw}, pad);
    expect_close(vals(m), naive_pool(x, s, p, 0, os), 0);
    EXPECT_EQ(m.shape(), os);
    expect_close(vals(nn::avg_pool(xa, {p.kh, p.kw}, {p.sh, p.sw}, pad)), naive_pool(x, s, p, 1, os), 1e-12);
    expect_close(vals(nn::avg_pool(xa, {p.kh, p.kw}, {p.sh, p.sw}, pad, false)), naive_pool(x, s, p, 2, os),
                 1e-12);
  }
}

TEST(NnPool, DefaultsAreStrideOneValidAndCountIncludePad) {
  const Shape s{1, 4, 4, 2};
  const std::vector<double> x = seq(32, 5);
  Shape os;
  const Array a = make(s, x);
  expect_close(vals(nn::max_pool(a, {2, 2})), naive_pool(x, s, {2, 2, 1, 1, false}, 0, os), 0);
  EXPECT_EQ(nn::max_pool(a, {2, 2}).shape(), (Shape{1, 3, 3, 2}));
  expect_close(vals(nn::avg_pool(a, {3, 3}, {1, 1}, "SAME")), naive_pool(x, s, {3, 3, 1, 1, true}, 1, os),
               1e-12);
}

TEST(NnPool, InputWithoutBatchDimension) {
  // [h, w, c]: flax adds a batch dimension of 1 and removes it.
  const Shape s{1, 5, 4, 2};
  const std::vector<double> x = seq(40, 7);
  Shape os;
  Array m = nn::max_pool(make({5, 4, 2}, x), {2, 2}, {2, 2}, "SAME");
  const auto want = naive_pool(x, s, {2, 2, 2, 2, true}, 0, os);
  EXPECT_EQ(m.shape(), (Shape{os[1], os[2], os[3]}));
  expect_close(vals(m), want, 0);
  // 1-d pooling of [batch, length, features] in f32.
  Array a = nn::avg_pool(make({2, 6, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, f32), {3}, {3});
  EXPECT_EQ(a.dtype(), f32);
  expect_close(vals(a), {2, 5, 8, 11}, 1e-6);
}

TEST(NnPool, GradOfMaxPoolWithTiesGoesToTheFirstElement) {
  // Two 2x2 windows of one channel, each with a tie: the whole cotangent goes to the first.
  const Array x = make({1, 2, 4, 1}, {3, 3, 1, 9, 3, 0, 9, 9});
  auto f = [](const Array& a) { return lax::reduce_sum(nn::max_pool(a, {2, 2}, {2, 2}), {0, 1, 2, 3}); };
  EXPECT_EQ(vals(grad(f)(x)), (std::vector<double>{1, 0, 0, 1, 0, 0, 0, 0}));
}

// ---- conv -------------------------------------------------------------------------------------

TEST(NnConv, NhwcWithBiasIsConvGeneralDilatedOnTransposedOperands) {
  // x [2, 6, 5, 4] NHWC, w [3, 2, 2, 6] HWIO with 2 feature groups, stride (2, 1), SAME,
  // rhs_dilation (1, 2), bias [6]: the default-layout (NCHW, OIHW) convolution of the transposed
  // operands, transposed back, plus the bias along the last dimension.
  const Array x = make({2, 6, 5, 4}, seq(240, 11));
  const Array w = make({3, 2, 2, 6}, seq(72, 12));
  const Array b = make({6}, {0.5, -1, 2, 0.25, -0.75, 1.5});
  nn::ConvOptions o;
  o.rhs_dilation = {1, 2};
  o.feature_group_count = 2;
  o.bias = b;
  Array got = nn::conv(x, w, {2, 1}, "SAME", o);
  lax::ConvGeneralDilatedOptions lo;
  lo.rhs_dilation = {1, 2};
  lo.feature_group_count = 2;
  Array ref = lax::conv_general_dilated(lax::transpose(x, {0, 3, 1, 2}), lax::transpose(w, {3, 2, 0, 1}),
                                        {2, 1}, "SAME", lo);
  ref = lax::transpose(ref, {0, 2, 3, 1});
  ref = lax::add(ref, lax::broadcast_in_dim(b, ref.shape(), {3}));
  EXPECT_EQ(got.shape(), ref.shape());
  expect_close(vals(got), vals(ref), 1e-12);
}

TEST(NnConv, NchwWithBiasIsTheDefaultLayout) {
  const Array x = make({1, 3, 5, 5}, seq(75, 21));
  const Array w = make({4, 3, 3, 3}, seq(108, 22));
  const Array b = make({4}, {1, 2, 3, 4});
  nn::ConvOptions o;
  o.layout = "NCHW";
  o.bias = b;
  Array got = nn::conv(x, w, {}, "VALID", o);
  Array ref = lax::conv_general_dilated(x, w, {1, 1}, "VALID");
  ref = lax::add(ref, lax::broadcast_in_dim(b, ref.shape(), {1}));
  EXPECT_EQ(got.shape(), (Shape{1, 4, 3, 3}));
  expect_close(vals(got), vals(ref), 1e-12);
  // Without a bias, NHWC 1-d ("NWC").
  nn::ConvOptions o1;
  o1.layout = "NWC";
  Array g1 = nn::conv(make({1, 4, 1}, {1, 2, 3, 4}), make({2, 1, 1}, {1, -1}), {}, "VALID", o1);
  expect_close(vals(g1), {-1, -1, -1}, 1e-12);  // x[i] - x[i + 1]
}

TEST(NnConv, ErrorsNameNnConv) {
  const Array x = make({1, 4, 4, 2}, seq(32, 1)), w = make({3, 3, 2, 5}, seq(90, 2));
  nn::ConvOptions o;
  o.bias = make({4}, {0, 0, 0, 0});
  try {
    nn::conv(x, w, {}, "SAME", o);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(e.message().find("nn::conv"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("f64[4]"), std::string::npos) << e.message();
  }
  nn::ConvOptions bad;
  bad.layout = "NHWCX";
  EXPECT_THROW(nn::conv(x, w, {}, "SAME", bad), ValueError);
}

}  // namespace
