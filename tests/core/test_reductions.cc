// Tests of the reduction primitives (reduce_sum/max/min/prod, argmax/argmin, cumsum), their
// autodiff rules, and the numpy-level reductions and nn functions (sum ... one_hot).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <minijax/minijax.h>

namespace {

using namespace minijax;

// A concrete array of `shape` and dtype d holding `v` (row-major), built without the library's
// constructors so that the tests do not depend on them.
Array make(const Shape& shape, const std::vector<double>& v, DType d = f32) {
  Array a = Array::allocate(ShapedArray{shape, d});
  EXPECT_EQ(int64_t(v.size()), a.size());
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
  Array c = a.concrete();
  std::vector<double> r(size_t(c.size()));
  dispatch_dtype(c.dtype(), [&]<class T>() {
    const T* p = c.data<T>();
    for (size_t i = 0; i < r.size(); ++i) {
      if constexpr (std::is_same_v<T, bfloat16>) r[i] = double(float(p[i]));
      else r[i] = double(p[i]);
    }
  });
  return r;
}
void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}
double dotp(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// x = [[1, 2, 3], [4, 5, 6]]
Array x23() { return make({2, 3}, {1, 2, 3, 4, 5, 6}); }

// ---- eager primitives ---------------------------------------------------------------------------

TEST(Reductions, ReduceSumAxes) {
  Array s0 = lax::reduce_sum(x23(), {0});
  EXPECT_EQ(s0.shape(), (Shape{3}));
  expect_near(vals(s0), {5, 7, 9});  // column sums
  expect_near(vals(lax::reduce_sum(x23(), {1})), {6, 15});  // row sums
  Array all = lax::reduce_sum(x23(), {0, 1});
  EXPECT_EQ(all.ndim(), 0);
  EXPECT_EQ(all.item<double>(), 21.0);  // 1+...+6
  expect_near(vals(lax::reduce_sum(x23(), {})), {1, 2, 3, 4, 5, 6});
}

TEST(Reductions, ReduceSumMultiAxisIntVsLoop) {
  // i32 [2,3,4] with x[i,j,k] = i*100 + j*10 + k, summed over axes (2, 0) -> shape [3].
  std::vector<double> v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) v.push_back(i * 100 + j * 10 + k);
  Array s = lax::reduce_sum(make({2, 3, 4}, v, i32), {2, 0});
  EXPECT_EQ(s.dtype(), i32);
  std::vector<double> want(3, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want[size_t(j)] += i * 100 + j * 10 + k;
  expect_near(vals(s), want, 0);
}

TEST(Reductions, SumAccumulationAccuracy) {
  // 90,000 copies of 0.1f: a left-to-right f32 sum drifts by ~1e-3 relative; pairwise/blockwise
  // accumulation must stay within 1e-6 of the exact value 90000 * double(0.1f).
  const int64_t n = 90000;
  Array x = lax::full({n}, double(0.1f), f32);
  const double exact = double(n) * double(0.1f);
  double got = lax::reduce_sum(x, {0}).item<double>();
  EXPECT_LT(std::abs(got - exact) / exact, 1e-6);
  // The same along a non-minor axis ([n, 2], reduce axis 0).
  Array y = lax::full({n, 2}, double(0.1f), f32);
  for (double g : vals(lax::reduce_sum(y, {0}))) EXPECT_LT(std::abs(g - exact) / exact, 1e-6);
  // numpy-level sum and mean of the same.
  EXPECT_LT(std::abs(sum(x).item<double>() - exact) / exact, 1e-6);
  EXPECT_LT(std::abs(mean(x).item<double>() - double(0.1f)) / 0.1, 1e-6);
  // f64: 10^6 copies of 0.1 within 1e-13 relative.
  Array z = lax::full({1000000}, 0.1, f64);
  EXPECT_LT(std::abs(lax::reduce_sum(z, {0}).item<double>() - 1e5) / 1e5, 1e-13);
}

TEST(Reductions, MaxMinAndNaN) {
  expect_near(vals(lax::reduce_max(x23(), {1})), {3, 6});
  expect_near(vals(lax::reduce_min(x23(), {0})), {1, 2, 3});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Array xn = make({2, 3}, {1, nan, 3, -4, -5, -6});
  auto mx = vals(lax::reduce_max(xn, {1}));
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_EQ(mx[1], -4);
  auto mn = vals(lax::reduce_min(xn, {1}));
  EXPECT_TRUE(std::isnan(mn[0]));
  EXPECT_EQ(mn[1], -6);
  // Integers and bools.
  expect_near(vals(lax::reduce_max(make({4}, {-7, 3, 9, -1}, i32), {0})), {9}, 0);
  expect_near(vals(lax::reduce_min(make({4}, {-7, 3, 9, -1}, i32), {0})), {-7}, 0);
  Array b = make({2, 2}, {0, 1, 0, 0}, bool_);
  expect_near(vals(lax::reduce_max(b, {1})), {1, 0}, 0);  // any
  expect_near(vals(lax::reduce_min(b, {1})), {0, 0}, 0);  // all
  // Empty reduction gives the identity (-inf for max).
  Array e = lax::reduce_max(Array::allocate(ShapedArray{{0, 2}, f32}), {0});
  for (double v : vals(e)) EXPECT_EQ(v, -std::numeric_limits<double>::infinity());
}

TEST(Reductions, ReduceProd) {
  expect_near(vals(lax::reduce_prod(x23(), {1})), {6, 120});  // 1*2*3, 4*5*6
  expect_near(vals(lax::reduce_prod(x23(), {0})), {4, 10, 18});
  expect_near(vals(lax::reduce_prod(make({3}, {-2, 3, 7}, i32), {0})), {-42}, 0);
}

TEST(Reductions, ArgmaxArgmin) {
  Array x = make({2, 4}, {1, 5, 5, 2, 3, -1, 0, -1});
  Array am = lax::argmax(x, 1);
  EXPECT_EQ(am.dtype(), i32);
  expect_near(vals(am), {1, 0}, 0);  // first occurrence of the 5s
  expect_near(vals(lax::argmin(x, 1)), {0, 1}, 0);  // first occurrence of the -1s
  expect_near(vals(lax::argmax(x, 0)), {1, 0, 0, 0}, 0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Array xn = make({5}, {1, 9, nan, 9, nan});
  expect_near(vals(lax::argmax(xn, 0)), {2}, 0);  // NaN counts as the max: first NaN
  expect_near(vals(lax::argmin(xn, 0)), {2}, 0);  // and is picked by argmin too (as JAX)
  Array u = lax::argmax(x, 1, u32);
  EXPECT_EQ(u.dtype(), u32);
  expect_near(vals(u), {1, 0}, 0);
  // numpy level: negative axis.
  expect_near(vals(argmax(x, -1)), {1, 0}, 0);
  expect_near(vals(argmin(x, -2)), {0, 1, 1, 1}, 0);
}

TEST(Reductions, Cumsum) {
  expect_near(vals(lax::cumsum(x23(), 1)), {1, 3, 6, 4, 9, 15});
  expect_near(vals(lax::cumsum(x23(), 0)), {1, 2, 3, 5, 7, 9});
  expect_near(vals(lax::cumsum(x23(), 1, true)), {6, 5, 3, 15, 11, 6});
  expect_near(vals(cumsum(make({3}, {1, 0, 1}, bool_), 0)), {1, 1, 2}, 0);
  EXPECT_EQ(cumsum(make({3}, {1, 0, 1}, bool_), 0).dtype(), i32);
}

TEST(Reductions, PrimitiveErrors) {
  try {
    lax::reduce_sum(x23(), {2});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("reduce_sum"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[2,3]"), std::string::npos) << m;
    EXPECT_NE(m.find("test_reductions.cc"), std::string::npos) << m;
  }
  EXPECT_THROW(lax::reduce_sum(x23(), {0, 0}), ShapeError);
  EXPECT_THROW(lax::reduce_max(x23(), {-1}), ShapeError);
  EXPECT_THROW(lax::reduce_sum(make({2}, {1, 0}, bool_), {0}), TypeError);
  EXPECT_THROW(lax::argmax(Array::allocate(ShapedArray{{2, 0}, f32}), 1), ValueError);
  EXPECT_THROW(lax::argmax(x23(), 0, f32), TypeError);
  EXPECT_THROW(lax::cumsum(x23(), 2), ShapeError);
}

TEST(Reductions, PrintedParams) {
  auto j = trace_to_jaxpr(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{lax::reduce_max(a[0], {1}), lax::argmax(a[0], 1),
                                  lax::cumsum(a[0], 0), lax::reduce_sum(a[0], {0})};
      },
      {ShapedArray{{2, 3}, f32}});
  std::string s = to_string(j);
  EXPECT_NE(s.find("reduce_max[axes=(1,)]"), std::string::npos) << s;
  EXPECT_NE(s.find("argmax[axes=(1,) index_dtype=int32]"), std::string::npos) << s;
  EXPECT_NE(s.find("cumsum[axis=0 reverse=False]"), std::string::npos) << s;
  EXPECT_NE(s.find("reduce_sum[axes=(0,)]"), std::string::npos) << s;
}

// ---- autodiff rules, called directly -------------------------------------------------------------

TEST(ReductionRules, ReduceMaxChooserJvp) {
  // max([1, 3, 3]) = 3 at two locations: the tangent is the average of t there, (2 + 4) / 2.
  const auto& p = primitive("reduce_max");
  auto [outs, tans] = p.jvp({make({3}, {1, 3, 3})}, {make({3}, {1, 2, 4})}, Params{{"axes", std::vector<int64_t>{0}}});
  EXPECT_EQ(outs[0].item<double>(), 3);
  EXPECT_NEAR(tans[0].item<double>(), 3.0, 1e-6);
  // reduce_min over axis 0 of [[1, 5], [2, 5]]: column 0 picks row 0, column 1 ties.
  auto [o2, t2] = primitive("reduce_min").jvp({make({2, 2}, {1, 5, 2, 5})}, {make({2, 2}, {10, 20, 30, 40})},
                                              Params{{"axes", std::vector<int64_t>{0}}});
  expect_near(vals(t2[0]), {10, 30});
}

TEST(ReductionRules, ReduceProdJvpWithZeros) {
  const auto& p = primitive("reduce_prod");
  Params ax0{{"axes", std::vector<int64_t>{0}}};
  // d prod = sum_i t_i prod_{j!=i} x_j; x = [2, 0, 3, 4], t = 1: 0*3*4 + 2*3*4 + 2*0*4 + 2*0*3 = 24.
  auto [o, t] = p.jvp({make({4}, {2, 0, 3, 4})}, {make({4}, {1, 1, 1, 1})}, ax0);
  EXPECT_EQ(o[0].item<double>(), 0);
  EXPECT_NEAR(t[0].item<double>(), 24, 1e-6);
  // Two zeros: every exclusive product contains a zero.
  auto [o2, t2] = p.jvp({make({3}, {0, 5, 0})}, {make({3}, {1, 1, 1})}, ax0);
  EXPECT_NEAR(t2[0].item<double>(), 0, 1e-6);
  // A single element: the derivative is the tangent itself.
  auto [o3, t3] = p.jvp({make({1}, {7})}, {make({1}, {3})}, ax0);
  EXPECT_NEAR(t3[0].item<double>(), 3, 1e-6);
  // Nonzero x over two of three axes vs central differences in f64: x [2,3,2], axes (0, 2).
  std::vector<double> xv, tv;
  for (int i = 0; i < 12; ++i) {
    xv.push_back(0.5 + 0.1 * i * (i % 2 ? -1 : 1));
    tv.push_back(std::sin(1.0 + i));
  }
  Params ax02{{"axes", std::vector<int64_t>{2, 0}}};
  auto [o4, t4] = p.jvp({make({2, 3, 2}, xv, f64)}, {make({2, 3, 2}, tv, f64)}, ax02);
  const double h = 1e-6;
  std::vector<double> xp = xv, xm = xv;
  for (size_t i = 0; i < xv.size(); ++i) xp[i] += h * tv[i], xm[i] -= h * tv[i];
  auto fp = vals(lax::reduce_prod(make({2, 3, 2}, xp, f64), {0, 2}));
  auto fm = vals(lax::reduce_prod(make({2, 3, 2}, xm, f64), {0, 2}));
  auto got = vals(t4[0]);
  ASSERT_EQ(got.size(), 3u);
  for (size_t j = 0; j < 3; ++j) EXPECT_NEAR(got[j], (fp[j] - fm[j]) / (2 * h), 1e-7);
}

TEST(ReductionRules, LinearTransposes) {
  // reduce_sum: <ct, sum(t)> == <transpose(ct), t> for all t (dot-product test).
  std::vector<double> tv{0.3, -1.2, 2.5, 0.7, 1.1, -0.4}, ctv{1.5, -2.0};
  Params ax1{{"axes", std::vector<int64_t>{1}}};
  auto rs = primitive("reduce_sum").transpose({make({2}, ctv)}, {Array()}, {ShapedArray{{2, 3}, f32}}, ax1);
  EXPECT_EQ(rs[0].shape(), (Shape{2, 3}));
  EXPECT_NEAR(dotp(vals(rs[0]), tv), dotp(ctv, vals(lax::reduce_sum(make({2, 3}, tv), {1}))), 1e-5);
  // cumsum along axis 1 (forward and reverse).
  std::vector<double> ct6{0.2, 1.0, -0.5, 3.0, -1.0, 0.25};
  for (bool rev : {false, true}) {
    Params pc{{"axis", int64_t(1)}, {"reverse", rev}};
    auto cs = primitive("cumsum").transpose({make({2, 3}, ct6)}, {Array()}, {ShapedArray{{2, 3}, f32}}, pc);
    EXPECT_NEAR(dotp(vals(cs[0]), tv), dotp(ct6, vals(lax::cumsum(make({2, 3}, tv), 1, rev))), 1e-5);
  }
  EXPECT_FALSE(primitive("reduce_max").no_transpose_reason.empty());
  EXPECT_FALSE(primitive("argmax").no_transpose_reason.empty());
  // argmax: integer output, zero tangent.
  auto [ao, at] = primitive("argmax").jvp({x23()}, {make({2, 3}, tv)},
                                          Params{{"axes", std::vector<int64_t>{1}}, {"index_dtype", i32}});
  expect_near(vals(ao[0]), {2, 2}, 0);
  EXPECT_FALSE(at[0].defined());
}

TEST(ReductionRules, BatchRulesMatchLoop) {
  // x: [3, 4, 5] with the batch dim at 1 (4 elements of shape [3, 5]); values x = flat index.
  std::vector<double> v(60);
  for (size_t i = 0; i < v.size(); ++i) v[i] = double((i * 37) % 11) - 5.0;
  Array x = make({3, 4, 5}, v);
  auto elem = [&](int64_t b) {  // element b: [3, 5]
    std::vector<double> e;
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 5; ++k) e.push_back(v[size_t((i * 4 + b) * 5 + k)]);
    return make({3, 5}, e);
  };
  struct Case {
    const char* name;
    Params params;
  };
  std::vector<Case> cases = {
      {"reduce_sum", Params{{"axes", std::vector<int64_t>{1}}}},
      {"reduce_max", Params{{"axes", std::vector<int64_t>{0}}}},
      {"reduce_min", Params{{"axes", std::vector<int64_t>{0, 1}}}},
      {"reduce_prod", Params{{"axes", std::vector<int64_t>{1}}}},
      {"argmax", Params{{"axes", std::vector<int64_t>{0}}, {"index_dtype", i32}}},
      {"argmin", Params{{"axes", std::vector<int64_t>{1}}, {"index_dtype", i32}}},
      {"cumsum", Params{{"axis", int64_t(1)}, {"reverse", true}}},
      {"cumsum", Params{{"axis", int64_t(0)}, {"reverse", false}}},
  };
  for (auto& c : cases) {
    const auto& p = primitive(c.name);
    auto [outs, dims] = p.batch({x}, {1}, c.params);
    Array out = outs[0];
    int64_t bd = dims[0];
    ASSERT_NE(bd, kNotMapped) << c.name;
    ASSERT_EQ(out.shape()[size_t(bd)], 4) << c.name;
    auto ov = vals(out);
    auto st = strides_of(out.shape());
    for (int64_t b = 0; b < 4; ++b) {
      Array want = minijax::bind1(p, {elem(b)}, c.params);
      auto wv = vals(want);
      // Read element b of out: iterate over the element's indices, inserting b at bd.
      Shape es = want.shape();
      auto est = strides_of(es);
      for (int64_t f = 0; f < int64_t(wv.size()); ++f) {
        int64_t off = b * st[size_t(bd)], rem = f;
        for (size_t d = 0; d < es.size(); ++d) {
          int64_t idx = rem / est[d];
          rem %= est[d];
          off += idx * st[d < size_t(bd) ? d : d + 1];
        }
        EXPECT_NEAR(ov[size_t(off)], wv[size_t(f)], 1e-3) << c.name << " b=" << b << " f=" << f;
      }
    }
  }
}

// ---- numpy level ----------------------------------------------------------------------------------

TEST(NumpyReductions, SumMeanKeepdimsNegativeAxes) {
  Array s = sum(x23(), -1, true);
  EXPECT_EQ(s.shape(), (Shape{2, 1}));
  expect_near(vals(s), {6, 15});
  Array s2 = sum(x23(), std::vector<int64_t>{-2, 1}, true);
  EXPECT_EQ(s2.shape(), (Shape{1, 1}));
  expect_near(vals(s2), {21});
  EXPECT_EQ(sum(make({3}, {1, 1, 0}, bool_)).dtype(), i32);
  EXPECT_EQ(sum(make({3}, {1, 1, 0}, bool_)).item<int>(), 2);
  Array m = mean(make({2, 2}, {1, 2, 3, 5}, i32), 0);
  EXPECT_EQ(m.dtype(), f32);  // ints promote to f32
  expect_near(vals(m), {2, 3.5});
  EXPECT_NEAR(mean(x23()).item<double>(), 3.5, 1e-6);
  // var over axis 1: row [1,2,3] mean 2 -> (1+0+1)/3; row [4,5,6] the same.
  Array v = var(x23(), 1, true);
  EXPECT_EQ(v.shape(), (Shape{2, 1}));
  expect_near(vals(v), {2.0 / 3, 2.0 / 3});
  // var of all: mean 3.5, squared deviations 6.25+2.25+0.25 (twice) = 17.5 / 6.
  EXPECT_NEAR(var(x23()).item<double>(), 17.5 / 6, 1e-6);
  expect_near(vals(max(x23(), 0)), {4, 5, 6});
  EXPECT_EQ(max(x23(), 0, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(min(x23()).item<double>(), 1);
  EXPECT_EQ(prod(x23()).item<double>(), 720);
  expect_near(vals(prod(x23(), -1)), {6, 120});
}

TEST(NumpyReductions, AxisErrors) {
  try {
    sum(x23(), 2);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("sum"), std::string::npos) << m;
    EXPECT_NE(m.find("axis 2"), std::string::npos) << m;
    EXPECT_NE(m.find("[2,3]"), std::string::npos) << m;
    EXPECT_NE(m.find("test_reductions.cc"), std::string::npos) << m;
  }
  EXPECT_THROW(mean(x23(), -3), ShapeError);
  EXPECT_THROW(argmax(x23(), 5), ShapeError);
  EXPECT_THROW(softmax(x23(), 2), ShapeError);
  EXPECT_THROW(max(Array::allocate(ShapedArray{{0, 3}, f32}), 0), ValueError);
  EXPECT_THROW(sum(x23(), std::vector<int64_t>{1, -1}), ValueError);
}

TEST(NumpyReductions, LogsumexpSoftmax) {
  // logsumexp([1000, 1000]) = 1000 + log 2 (a naive exp would overflow).
  Array big = make({2}, {1000, 1000});
  EXPECT_NEAR(logsumexp(big).item<double>(), 1000 + std::log(2.0), 1e-3);
  // logsumexp along axis 0 vs the direct formula on small values.
  auto l = vals(logsumexp(x23(), 0, true));
  EXPECT_NEAR(l[0], std::log(std::exp(1.0) + std::exp(4.0)), 1e-5);
  EXPECT_NEAR(l[2], std::log(std::exp(3.0) + std::exp(6.0)), 1e-5);
  EXPECT_EQ(logsumexp(x23(), 0, true).shape(), (Shape{1, 3}));
  // All -inf: -inf, not NaN.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(logsumexp(make({2}, {-inf, -inf})).item<double>(), -inf);
  Array x = make({2, 3}, {1, 2, 3, -1, 0, 800});
  auto sm = vals(softmax(x));
  EXPECT_NEAR(sm[0] + sm[1] + sm[2], 1, 1e-6);
  EXPECT_NEAR(sm[3] + sm[4] + sm[5], 1, 1e-6);
  // Row 0: e^1 / (e^1 + e^2 + e^3).
  EXPECT_NEAR(sm[0], std::exp(1.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-6);
  EXPECT_NEAR(sm[5], 1.0, 1e-6);
  auto lsm = vals(log_softmax(x));
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(lsm[size_t(i)], std::log(sm[size_t(i)]), 1e-5);
  EXPECT_NEAR(lsm[3], -801.0, 1e-3);  // log_softmax stays finite where softmax underflows
  // softmax along axis 0.
  auto s0 = vals(softmax(x23(), 0));
  EXPECT_NEAR(s0[0] + s0[3], 1, 1e-6);
  EXPECT_NEAR(s0[0], 1 / (1 + std::exp(3.0)), 1e-6);
}

TEST(NumpyReductions, OneHot) {
  Array oh = one_hot(make({3}, {2, 0, 5}, i32), 4);
  EXPECT_EQ(oh.shape(), (Shape{3, 4}));
  EXPECT_EQ(oh.dtype(), f32);
  expect_near(vals(oh), {0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0}, 0);  // 5 is out of range: all 0
  Array oh2 = one_hot(make({2, 1}, {1, 3}, i32), 4, i32);
  EXPECT_EQ(oh2.shape(), (Shape{2, 1, 4}));
  expect_near(vals(oh2), {0, 1, 0, 0, 0, 0, 0, 1}, 0);
  EXPECT_THROW(one_hot(x23(), 3), TypeError);
}

}  // namespace
