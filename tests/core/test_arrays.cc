// Tests of array constructors, xtensor interop and numpy/JAX-style printing.
// Expected strings follow numpy's array2string rules inside JAX's `Array(..., dtype=...)`.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <minijax/minijax.h>

namespace {

using namespace minijax;

template <class T>
std::vector<T> vals(const Array& a) {
  const T* p = a.data<T>();
  return std::vector<T>(p, p + a.size());
}

TEST(Constructors, ArrayFromLists) {
  Array a = array({1.f, 2.f, 3.f});
  EXPECT_EQ(a.shape(), (Shape{3}));
  EXPECT_EQ(a.dtype(), f32);
  EXPECT_FALSE(a.weak_type());
  EXPECT_EQ(vals<float>(a), (std::vector<float>{1, 2, 3}));
  Array m = array({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  EXPECT_EQ(m.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<float>(m), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_THROW(array({{1.f, 2.f}, {3.f}}), ShapeError);  // ragged (ShapeError, naming the list: [1])
  Array i = array({1.9, -1.9, 7}, {3}, i32);  // truncation toward zero, as astype
  EXPECT_EQ(vals<int32_t>(i), (std::vector<int32_t>{1, -1, 7}));
  Array b = array({0, 2, -0.5}, {3}, bool_);
  EXPECT_EQ(vals<bool>(b), (std::vector<bool>{false, true, true}));
  EXPECT_THROW(array({1, 2, 3}, {2, 2}), ValueError);
  EXPECT_THROW(array({}, {-1}), ValueError);
}

TEST(Constructors, FilledArrays) {
  Array z = zeros({2, 3}, f64);
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.dtype(), f64);
  EXPECT_EQ(vals<double>(z), std::vector<double>(6, 0.0));
  EXPECT_EQ(vals<int32_t>(ones({4}, i32)), std::vector<int32_t>(4, 1));
  EXPECT_EQ(vals<float>(full({2}, 1.5, f32)), (std::vector<float>{1.5f, 1.5f}));
  Array bf = full({2}, 1.00390625, bf16);  // 1 + 2^-8 rounds to even in bf16: 1.0
  EXPECT_EQ(float(bf.data<bfloat16>()[0]), 1.0f);
  Array s = scalar(2.5, f32);
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.item<float>(), 2.5f);
  EXPECT_EQ(zeros({0, 3}).size(), 0);
  EXPECT_THROW(zeros({-1}), ValueError);
}

TEST(Constructors, LikeKeepsDtypeShapeAndWeakType) {
  Array x = full({2, 2}, 3.0, i32);
  Array z = zeros_like(x), o = ones_like(x), f = full_like(x, 7);
  for (const Array& a : {z, o, f}) {
    EXPECT_EQ(a.shape(), (Shape{2, 2}));
    EXPECT_EQ(a.dtype(), i32);
  }
  EXPECT_EQ(vals<int32_t>(o), std::vector<int32_t>(4, 1));
  EXPECT_EQ(vals<int32_t>(f), std::vector<int32_t>(4, 7));
  Array w = lax::full({}, 2.0, f32, /*weak=*/true);
  EXPECT_TRUE(zeros_like(w).weak_type());  // jnp.zeros_like keeps weak types
}

TEST(Constructors, ArangeAndEye) {
  EXPECT_EQ(vals<int32_t>(arange(5)), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(5).dtype(), i32);
  EXPECT_EQ(arange(0).size(), 0);
  // numpy: len = ceil((stop - start) / step).
  EXPECT_EQ(vals<float>(arange(0.0, 1.0, 0.25)), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(vals<float>(arange(5.0, 0.0, -2.0)), (std::vector<float>{5, 3, 1}));
  EXPECT_EQ(arange(3.0, 1.0).size(), 0);
  EXPECT_EQ(vals<double>(arange(1.0, 2.0, 0.3, f64)).size(), 4u);  // 1, 1.3, 1.6, 1.9
  EXPECT_THROW(arange(0.0, 1.0, 0.0), ValueError);
  Array e = eye(3, i32);
  EXPECT_EQ(vals<int32_t>(e), (std::vector<int32_t>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
}

TEST(Constructors, ConstantsUnderStagingAreLifted) {
  FlatFn f = [](const std::vector<Array>& in) {
    return std::vector<Array>{in[0], ones({3}, f32)};
  };
  ClosedJaxpr j = trace_to_jaxpr(f, {ShapedArray{{3}, f32}});
  auto out = eval_jaxpr(j, {zeros({3})});
  EXPECT_EQ(vals<float>(out[1]), std::vector<float>(3, 1.0f));
}

TEST(Xtensor, RoundTrips) {
  xt::xarray<float> xf = {{1.5f, 2.f, -3.f}, {4.f, 5.f, 6.25f}};
  Array a = from_xtensor(xf);
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(a.dtype(), f32);
  EXPECT_EQ(vals<float>(a), (std::vector<float>{1.5f, 2, -3, 4, 5, 6.25f}));
  EXPECT_EQ(to_xtensor<float>(a), xf);

  xt::xarray<double> xd = {0.1, 1e-300, -2.0};
  Array d = from_xtensor(xd);
  EXPECT_EQ(d.dtype(), f64);
  EXPECT_EQ(to_xtensor<double>(d), xd);

  xt::xtensor<int32_t, 2> xi = {{1, -2}, {3, 2147483647}};
  Array i = from_xtensor(xi);
  EXPECT_EQ(i.dtype(), i32);
  EXPECT_EQ(i.shape(), (Shape{2, 2}));
  EXPECT_EQ(to_xtensor<int32_t>(i), xt::xarray<int32_t>(xi));

  xt::xarray<bool> xb = {true, false, true};
  Array b = from_xtensor(xb);
  EXPECT_EQ(b.dtype(), bool_);
  EXPECT_EQ(to_xtensor<bool>(b), xb);

  // Conversions from another dtype: f32 -> i32 truncates, f32 -> bool is != 0, i32 -> f64.
  EXPECT_EQ(to_xtensor<int32_t>(a), (xt::xarray<int32_t>{{1, 2, -3}, {4, 5, 6}}));
  EXPECT_EQ(to_xtensor<bool>(array({0.f, 0.5f})), (xt::xarray<bool>{false, true}));
  EXPECT_EQ(to_xtensor<double>(i), (xt::xarray<double>{{1, -2}, {3, 2147483647.0}}));
  // Rank 0.
  xt::xarray<float> s = to_xtensor<float>(scalar(4.0));
  EXPECT_EQ(s.dimension(), 0u);
  EXPECT_EQ(s(), 4.0f);
}

TEST(Xtensor, TracedValueIsAConcretizationError) {
  FlatFn f = [](const std::vector<Array>& in) {
    (void)to_xtensor<float>(in[0]);
    return in;
  };
  EXPECT_THROW(trace_to_jaxpr(f, {ShapedArray{{2}, f32}}), ConcretizationError);
}

TEST(Printing, BasicForms) {
  EXPECT_EQ(array({{1.f, 2.f}, {3.f, 4.f}}).str(),
            "Array([[1., 2.],\n       [3., 4.]], dtype=float32)");
  EXPECT_EQ(arange(3).str(), "Array([0, 1, 2], dtype=int32)");
  EXPECT_EQ(array({1, 0}, {2}, bool_).str(), "Array([ True, False], dtype=bool)");
  EXPECT_EQ(scalar(1.5).str(), "Array(1.5, dtype=float32)");
  EXPECT_EQ(scalar(1, bool_).str(), "Array(True, dtype=bool)");
  EXPECT_EQ(lax::full({}, 2.0, f32, true).str(), "Array(2., dtype=float32, weak_type=True)");
  EXPECT_EQ(array({0, 4294967295.0}, {2}, u32).str(), "Array([         0, 4294967295], dtype=uint32)");
  EXPECT_EQ(zeros({0}).str(), "Array([], shape=(0,), dtype=float32)");
  EXPECT_EQ(zeros({2, 0}, i32).str(), "Array([], shape=(2, 0), dtype=int32)");
}

TEST(Printing, FloatPaddingFollowsNumpy) {
  // numpy pads integer parts on the left and fraction digits on the right.
  EXPECT_EQ(array({1.5f, 2.f}).str(), "Array([1.5, 2. ], dtype=float32)");
  EXPECT_EQ(array({0.1f, 0.25f}).str(), "Array([0.1 , 0.25], dtype=float32)");
  EXPECT_EQ(array({-1.f, 2.f}).str(), "Array([-1.,  2.], dtype=float32)");
  // Shortest digits that read back as the same f32 (0.3f is not 0.30000001).
  EXPECT_EQ(array({0.3f}).str(), "Array([0.3], dtype=float32)");
  EXPECT_EQ(array({0.3}, {1}, f64).str(), "Array([0.3], dtype=float64)");
  // Scientific when max/min > 1e3 or min < 1e-4: fractions padded with zeros, 2-digit exps.
  EXPECT_EQ(array({1e-5f, 1.5f}).str(), "Array([1.0e-05, 1.5e+00], dtype=float32)");
  EXPECT_EQ(array({NAN, 1.f, -INFINITY}).str(), "Array([ nan,   1., -inf], dtype=float32)");
  EXPECT_EQ(array({1, 2, 3}, {3}, bf16).str(), "Array([1., 2., 3.], dtype=bfloat16)");
}

TEST(Printing, NestedWrappedAndSummarized) {
  std::vector<double> v(8);
  for (int i = 0; i < 8; ++i) v[size_t(i)] = i;
  EXPECT_EQ(array(v, {2, 2, 2}, i32).str(),
            "Array([[[0, 1],\n        [2, 3]],\n\n       [[4, 5],\n        [6, 7]]], dtype=int32)");
  // numpy wraps at 75 columns (74 before JAX's trailing ','): 17 two-digit items fit.
  EXPECT_EQ(arange(30).str(),
            "Array([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16,\n"
            "       17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29], dtype=int32)");
  // Over 1000 elements: 3 edge items per axis around "...".
  EXPECT_EQ(arange(2000).str(), "Array([   0,    1,    2, ..., 1997, 1998, 1999], dtype=int32)");
  EXPECT_EQ(zeros({1001, 2}).str(),
            "Array([[0., 0.],\n       [0., 0.],\n       [0., 0.],\n       ...,\n"
            "       [0., 0.],\n       [0., 0.],\n       [0., 0.]], dtype=float32)");
}

}  // namespace
