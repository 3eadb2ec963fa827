// Tests of cumprod, cummax, cummin, cumlogsumexp, lax::associative_scan and reduce_and/or/xor:
// eager and compiled values against hand-computed oracles, their JVPs (ties included) and check_grads.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <minijax/minijax.h>

namespace {

using namespace minijax;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> vals(const Array& a) {
  Array c = mj::astype(a.concrete(), f64);
  const double* p = c.data<double>();
  return std::vector<double>(p, p + c.size());
}
// Exact comparison (NaN equal to NaN), eagerly and under jit of the same function.
void expect_exact(const std::function<Array(const Array&)>& f, const Array& x, const std::vector<double>& want) {
  for (bool compiled : {false, true}) {
    SCOPED_TRACE(compiled ? "compiled" : "eager");
    Array got = compiled ? mj::jit(f)(x) : f(x);
    EXPECT_EQ(got.dtype(), x.dtype());
    auto g = vals(got);
    ASSERT_EQ(g.size(), want.size());
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(g[i])) << "at " << i;
      else EXPECT_EQ(g[i], want[i]) << "at " << i;
    }
  }
}

// x = [[1, 2, 3], [4, 5, 6]]
Array x23(DType d) { return mj::array({1.0, 2, 3, 4, 5, 6}, {2, 3}, d); }

// ---- cumprod ----------------------------------------------------------------------------------

TEST(Cumulative, CumprodOfSmallIntsEveryAxisAndReverse) {
  // By hand: rows 1,1*2,1*2*3 and 4,4*5,4*5*6; columns 1,2,3 then 1*4, 2*5, 3*6.
  for (DType d : {i32, u32, f32, f64}) {
    SCOPED_TRACE(dtype_name(d));
    expect_exact([](const Array& x) { return lax::cumprod(x, 1); }, x23(d), {1, 2, 6, 4, 20, 120});
    expect_exact([](const Array& x) { return lax::cumprod(x, 0); }, x23(d), {1, 2, 3, 4, 10, 18});
    expect_exact([](const Array& x) { return lax::cumprod(x, 1, true); }, x23(d), {6, 6, 3, 120, 30, 6});
    expect_exact([](const Array& x) { return lax::cumprod(x, 0, true); }, x23(d), {4, 10, 18, 4, 5, 6});
  }
}

TEST(Cumulative, CumprodOfIntegersWrapsModulo2To32) {
  // 65536 * 65536 = 2^32 = 0 (mod 2^32); 2^31 - 1 times 2 = 2^32 - 2 = -2 as i32 (Python: (2**31-1)*2 % 2**32).
  expect_exact([](const Array& x) { return lax::cumprod(x, 0); }, mj::array({65536.0, 65536, 3}, {3}, i32), {65536, 0, 0});
  expect_exact([](const Array& x) { return lax::cumprod(x, 0); }, mj::array({2147483647.0, 2, 1}, {3}, i32),
               {2147483647, -2, -2});
  // u32: (2^32 - 1) * 2 = 2^33 - 2 = 2^32 - 2 (mod 2^32).
  expect_exact([](const Array& x) { return lax::cumprod(x, 0); }, mj::array({4294967295.0, 2}, {2}, u32),
               {4294967295.0, 4294967294.0});
}

TEST(Cumulative, NumpyCumprodPromotesBoolAndTakesNegativeAxes) {
  Array b = mj::array({1.0, 1, 0, 1}, {2, 2}, bool_);
  Array p = mj::cumprod(b, -1);
  EXPECT_EQ(p.dtype(), i32);  // as jnp.cumprod: bool -> the default int
  EXPECT_EQ(vals(p), (std::vector<double>{1, 1, 0, 0}));
}

// ---- cummax / cummin ----------------------------------------------------------------------------

TEST(Cumulative, CummaxCumminRunningExtremesWithTiesAndReverse) {
  const Array x = mj::array({1.0, 3, 3, 2, 5, -1}, {6}, f64);
  expect_exact([](const Array& a) { return lax::cummax(a, 0); }, x, {1, 3, 3, 3, 5, 5});
  expect_exact([](const Array& a) { return lax::cummin(a, 0); }, x, {1, 1, 1, 1, 1, -1});
  expect_exact([](const Array& a) { return lax::cummax(a, 0, true); }, x, {5, 5, 5, 5, 5, -1});
  expect_exact([](const Array& a) { return lax::cummin(a, 0, true); }, x, {-1, -1, -1, -1, -1, -1});
  // i32 and u32 compare as their own types: 2^31 is large as u32.
  expect_exact([](const Array& a) { return lax::cummax(a, 0); }, mj::array({-5.0, -2147483648.0, 7, 3}, {4}, i32),
               {-5, -5, 7, 7});
  expect_exact([](const Array& a) { return lax::cummin(a, 1); }, mj::array({5.0, 2147483648.0, 0, 9}, {2, 2}, u32),
               {5, 5, 0, 0});
  expect_exact([](const Array& a) { return lax::cummax(a, 0); }, x23(f32), {1, 2, 3, 4, 5, 6});
}

TEST(Cumulative, CummaxPropagatesNaNFromWhereItAppears) {
  const Array x = mj::array({1.0, kNaN, 3, -kInf, kInf}, {5}, f32);
  expect_exact([](const Array& a) { return lax::cummax(a, 0); }, x, {1, kNaN, kNaN, kNaN, kNaN});
  expect_exact([](const Array& a) { return lax::cummin(a, 0, true); }, x, {kNaN, kNaN, -kInf, -kInf, kInf});
}

TEST(Cumulative, TiesShareTheTangentAsMaxDoes) {
  // The binary max's JVP (JAX's _balanced_eq): at x == y each operand's tangent counts half.
  auto [m, tm] = mj::jvp([](const Array& a) { return lax::max(lax::slice(a, {0}, {1}), lax::slice(a, {1}, {2})); },
                         mj::array({2.0, 2.0}, {2}, f64), mj::array({1.0, 0.0}, {2}, f64));
  EXPECT_EQ(vals(tm), (std::vector<double>{0.5}));
  // cummax([2, 2, 1, 2]) = [2, 2, 2, 2]; JAX's associative-scan JVP gives position k the balanced
  // combine of its scan tree. By hand, with tangent e_0: out 0 = 1; out 1 = max(x0, x1): 0.5; out 2
  // = max(max(x0, x1), x2) = 0.5; out 3 = max(max(x0, x1), max(x2, x3)), a tie of two maxima:
  // 0.5 * 0.5 = 0.25. With tangent e_3: out 3 = 0.5 (x3 wins max(x2, x3) outright, and that max
  // ties with max(x0, x1)), earlier outputs 0 — the tree's split, as JAX's.
  const Array x = mj::array({2.0, 2.0, 1.0, 2.0}, {4}, f64);
  auto f = [](const Array& a) { return lax::cummax(a, 0); };
  auto [y, t0] = mj::jvp(f, x, mj::array({1.0, 0, 0, 0}, {4}, f64));
  EXPECT_EQ(vals(y), (std::vector<double>{2, 2, 2, 2}));
  EXPECT_EQ(vals(t0), (std::vector<double>{1, 0.5, 0.5, 0.25}));
  auto [y3, t3] = mj::jvp(f, x, mj::array({0.0, 0, 0, 1}, {4}, f64));
  EXPECT_EQ(vals(t3), (std::vector<double>{0, 0, 0, 0.5}));
  // The tangents of all positions sum to 1 at each output (a max is a convex combination).
  auto [yy, ts] = mj::jvp(f, x, mj::array({1.0, 1, 1, 1}, {4}, f64));
  EXPECT_EQ(vals(ts), (std::vector<double>{1, 1, 1, 1}));
  // Under jit the same tangents.
  auto jf = mj::jit([f](const Array& a, const Array& t) { return mj::jvp(f, a, t).second; });
  EXPECT_EQ(vals(jf(x, mj::array({1.0, 0, 0, 0}, {4}, f64))), (std::vector<double>{1, 0.5, 0.5, 0.25}));
}

// ---- cumlogsumexp -----------------------------------------------------------------------------

// log(sum(exp(x[0..k]))) per prefix in long double: the direct formula, shifted by the prefix max.
std::vector<double> direct_lse(const std::vector<double>& x) {
  std::vector<double> r;
  for (size_t k = 0; k < x.size(); ++k) {
    long double m = -INFINITY;
    for (size_t j = 0; j <= k; ++j) m = std::max(m, (long double)x[j]);
    long double s = 0;
    for (size_t j = 0; j <= k; ++j) s += std::exp((long double)x[j] - m);
    r.push_back(double(m + std::log(s)));
  }
  return r;
}

TEST(Cumulative, CumlogsumexpMatchesTheDirectFormulaEveryAxisAndReverse) {
  const std::vector<double> v = {0.3, -1.2, 2.5, 0.0, 1.7, -0.4};
  const Array x = mj::array(v, {2, 3}, f64);
  for (bool compiled : {false, true}) {
    SCOPED_TRACE(compiled ? "compiled" : "eager");
    auto run = [&](int64_t axis, bool rev) {
      auto f = [axis, rev](const Array& a) { return lax::cumlogsumexp(a, axis, rev); };
      return vals(compiled ? mj::jit(f)(x) : f(x));
    };
    // axis 1: rows {0.3,-1.2,2.5} and {0,1.7,-0.4}; reverse: the suffixes.
    auto r1 = direct_lse({0.3, -1.2, 2.5}), r2 = direct_lse({0.0, 1.7, -0.4});
    auto s1 = direct_lse({2.5, -1.2, 0.3}), s2 = direct_lse({-0.4, 1.7, 0.0});
    auto c0 = direct_lse({0.3, 0.0}), c1 = direct_lse({-1.2, 1.7}), c2 = direct_lse({2.5, -0.4});
    const std::vector<std::vector<double>> want = {
        {r1[0], r1[1], r1[2], r2[0], r2[1], r2[2]},
        {s1[2], s1[1], s1[0], s2[2], s2[1], s2[0]},
        {c0[0], c1[0], c2[0], c0[1], c1[1], c2[1]},
        {c0[1], c1[1], c2[1], 0.0, 1.7, -0.4},  // reversed: the last row is its own suffix
    };
    const std::vector<std::vector<double>> got = {run(1, false), run(1, true), run(0, false), run(0, true)};
    for (size_t k = 0; k < 4; ++k)
      for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(got[k][i], want[k][i], 4e-16 * (1 + std::fabs(want[k][i]))) << k << "," << i;
  }
}

TEST(Cumulative, CumlogsumexpIsStableForLargeInputsAndHandlesInfinities) {
  // exp(1000) overflows; the running max keeps the result finite. By hand: 1000 + log(1 + e^-1)
  // then 1000 + log(1 + e^-1 + e^-2) (direct_lse in long double).
  const std::vector<double> big = {1000, 999, 998};
  const auto want = direct_lse(big);
  for (DType d : {f64, f32}) {
    Array x = mj::array(big, {3}, d);
    for (Array got : {lax::cumlogsumexp(x, 0), mj::jit([](const Array& a) { return lax::cumlogsumexp(a, 0); })(x)}) {
      auto g = vals(got);
      for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(g[i], want[i], d == f64 ? 1e-12 : 1e-4) << i;
    }
  }
  // -inf elements add nothing (logaddexp(-inf, -inf) = -inf, no NaN); +inf wins; NaN propagates.
  expect_exact([](const Array& a) { return lax::cumlogsumexp(a, 0); }, mj::array({-kInf, -kInf, 0.0, -kInf}, {4}, f64),
               {-kInf, -kInf, 0, 0});
  expect_exact([](const Array& a) { return lax::cumlogsumexp(a, 0); }, mj::array({1.0, kInf, 2.0, kNaN, 3.0}, {5}, f32),
               {1, kInf, kInf, kNaN, kNaN});
  // The gradient at a -inf element after the first is 0, finite elsewhere (softmax weights of each
  // prefix): x = [0, -inf, 0] gives outputs 0, 0, log 2; by hand d/dx0 = 1 + 1 + 1/2, d/dx2 = 1/2.
  Array g = mj::grad([](const Array& a) { return mj::sum(lax::cumlogsumexp(a, 0)); })(
      mj::array({0.0, -kInf, 0.0}, {3}, f64));
  auto gv = vals(g);
  EXPECT_NEAR(gv[0], 2.5, 1e-15);
  EXPECT_EQ(gv[1], 0.0);
  EXPECT_NEAR(gv[2], 0.5, 1e-15);
}

// ---- derivatives ------------------------------------------------------------------------------

TEST(Cumulative, CheckGradsOrderTwoForwardAndReverse) {
  // JAX's check_grads (central differences at JAX's f64 tolerances), eagerly and under jit.
  const Array x = mj::array({0.7, -1.3, 1.1, 0.4, -0.6, 1.9, 0.2, -0.9, 1.4, 0.8, -1.7, 0.5}, {3, 4}, f64);
  for (int64_t axis : {0, 1})
    for (bool rev : {false, true}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + (rev ? " reverse" : ""));
      auto fp = [axis, rev](const Array& a) { return lax::cumprod(a, axis, rev); };
      auto fmx = [axis, rev](const Array& a) { return lax::cummax(a, axis, rev); };
      auto fmn = [axis, rev](const Array& a) { return lax::cummin(a, axis, rev); };
      auto fl = [axis, rev](const Array& a) { return lax::cumlogsumexp(a, axis, rev); };
      EXPECT_NO_THROW(mj::check_grads(fp, x, 2, {"fwd", "rev"}));
      EXPECT_NO_THROW(mj::check_grads(fmx, x, 2, {"fwd", "rev"}));
      EXPECT_NO_THROW(mj::check_grads(fmn, x, 2, {"fwd", "rev"}));
      EXPECT_NO_THROW(mj::check_grads(fl, x, 2, {"fwd", "rev"}));
      EXPECT_NO_THROW(mj::check_grads(mj::jit(fl), x, 2, {"fwd", "rev"}));
      EXPECT_NO_THROW(mj::check_grads(mj::jit(fp), x, 2, {"fwd", "rev"}));
    }
}

TEST(Cumulative, CumprodGradientWithAZero) {
  // d/dx_j sum_k prod_{i<=k} x_i = sum_{k>=j} prod_{i<=k, i!=j} x_i; x = [2, 0, 3]: by hand
  // dx0 = 1 + 0 + 0 = 1, dx1 = 2 + 2*3 = 8, dx2 = 0.
  Array g = mj::grad([](const Array& a) { return mj::sum(lax::cumprod(a, 0)); })(mj::array({2.0, 0.0, 3.0}, {3}, f64));
  EXPECT_EQ(vals(g), (std::vector<double>{1, 8, 0}));
}

TEST(Cumulative, IntegerOperandsHaveFloat0Tangents) {
  // The int result of a float input: its tangent is a float0 zero (JAX's), for every scan.
  Array x = mj::array({3.0, 1, 2}, {3}, f32);
  for (auto f : {lax::cummax, lax::cummin, lax::cumprod}) {
    auto [y, t] = mj::jvp([f](const Array& a) { return f(mj::astype(a, i32), 0, false, SL::current()); }, x,
                          mj::ones({3}, f32));
    EXPECT_EQ(y.dtype(), i32);
    EXPECT_EQ(t.dtype(), float0);
  }
  auto [y, t] = mj::jvp([](const Array& a) { return lax::cummax(mj::astype(a, i32), 0); }, x, mj::ones({3}, f32));
  EXPECT_EQ(vals(y), (std::vector<double>{3, 3, 3}));
}

TEST(Cumulative, VmapMovesTheAxis) {
  Array x = mj::array({1.0, 2, 3, 4, 5, 6}, {2, 3}, f64);
  Array v = mj::vmap([](const Array& a) { return lax::cumprod(a, 0); }, {.in_axes = {1}})(x);  // per column
  EXPECT_EQ(vals(v), (std::vector<double>{1, 4, 2, 10, 3, 18}));  // out[col, row]
}

// ---- associative_scan ---------------------------------------------------------------------------

TEST(AssociativeScan, PrefixSumsOfEveryLengthAndReverse) {
  // Python's itertools.accumulate on 1..n for n = 1..9 (odd and even halvings of the recursion).
  for (int64_t n = 1; n <= 9; ++n) {
    std::vector<double> v, fwd, bwd(static_cast<size_t>(n));
    double s = 0;
    for (int64_t i = 1; i <= n; ++i) v.push_back(double(i)), fwd.push_back(s += double(i));
    for (int64_t i = 0; i < n; ++i) bwd[size_t(i)] = fwd.back() - (i ? fwd[size_t(i - 1)] : 0);
    Array x = mj::array(v, {n}, i32);
    auto add = [](const Array& a, const Array& b) { return lax::add(a, b); };
    EXPECT_EQ(vals(lax::associative_scan(add, x)), fwd) << n;
    EXPECT_EQ(vals(lax::associative_scan(add, x, true)), bwd) << n;
    EXPECT_EQ(vals(mj::jit([add](const Array& a) { return lax::associative_scan(add, a, false, -1); })(x)), fwd) << n;
  }
}

TEST(AssociativeScan, NonCommutativePairsKeepTheOrder) {
  // Composition of affine maps z -> a z + b (associative, not commutative): (a1, b1) then (a2, b2)
  // is (a1 a2, a2 b1 + b2). With every a = 2 and b_k = k, the prefix k's b is sum_j 2^(k-j) j.
  const int64_t n = 7;
  std::vector<double> a(n, 2.0), b, want_b;
  for (int64_t k = 0; k < n; ++k) b.push_back(double(k));
  for (int64_t k = 0; k < n; ++k) {
    double s = 0;
    for (int64_t j = 0; j <= k; ++j) s += std::ldexp(double(j), int(k - j));
    want_b.push_back(s);
  }
  lax::ScanCombine f = [](const std::vector<Array>& p, const std::vector<Array>& q) {
    return std::vector<Array>{lax::mul(p[0], q[0]), lax::add(lax::mul(q[0], p[1]), q[1])};
  };
  auto out = lax::associative_scan(f, {mj::array(a, {n}, f64), mj::array(b, {n}, f64)});
  EXPECT_EQ(vals(out[1]), want_b);
  EXPECT_EQ(vals(out[0]), (std::vector<double>{2, 4, 8, 16, 32, 64, 128}));
}

// ---- reduce_and / reduce_or / reduce_xor --------------------------------------------------------

TEST(BitwiseReductions, BoolAndIntegersEagerAndCompiled) {
  const Array b = mj::array({1.0, 1, 0, 1, 1, 1}, {2, 3}, bool_);
  auto both = [](const std::function<Array(const Array&)>& f, const Array& x) {
    return std::pair{vals(f(x)), vals(mj::jit(f)(x))};
  };
  auto check = [&](const std::function<Array(const Array&)>& f, const Array& x, const std::vector<double>& want) {
    auto [e, c] = both(f, x);
    EXPECT_EQ(e, want);
    EXPECT_EQ(c, want);
    EXPECT_EQ(f(x).dtype(), x.dtype());
  };
  check([](const Array& x) { return lax::reduce_and(x, {1}); }, b, {0, 1});
  check([](const Array& x) { return lax::reduce_or(x, {0}); }, b, {1, 1, 1});
  check([](const Array& x) { return lax::reduce_xor(x, {1}); }, b, {0, 1});
  check([](const Array& x) { return lax::reduce_xor(x, {0, 1}); }, b, {1});  // five ones
  // Bits by hand: 12 & 10 & 14 = 8; 12 | 10 | 1 = 15; 12 ^ 10 ^ 6 = 0; -1 & x = x.
  const Array i = mj::array({12.0, 10, 14, 12, 10, 1, 12, 10, 6, -1, 5, -1}, {4, 3}, i32);
  check([](const Array& x) { return lax::reduce_and(x, {1}); }, i, {8, 0, 0, 5 & -1});
  check([](const Array& x) { return lax::reduce_or(x, {1}); }, i, {14, 15, 14, -1});
  check([](const Array& x) { return lax::reduce_xor(x, {1}); }, i, {12 ^ 10 ^ 14, 12 ^ 10 ^ 1, 0, -1 ^ 5 ^ -1});
  const Array u = mj::array({4294967295.0, 2147483648.0, 1, 3}, {2, 2}, u32);
  check([](const Array& x) { return lax::reduce_and(x, {0}); }, u, {1, 0});
  check([](const Array& x) { return lax::reduce_or(x, {0, 1}); }, u, {4294967295.0});
  check([](const Array& x) { return lax::reduce_xor(x, {1}); }, u, {2147483647.0, 2});
  // An empty reduced dim gives the identities (all bits set for and, 0 for or).
  check([](const Array& x) { return lax::reduce_and(x, {0}); }, mj::zeros({0, 2}, i32), {-1, -1});
  check([](const Array& x) { return lax::reduce_or(x, {0}); }, mj::zeros({0, 2}, bool_), {0, 0});
}

TEST(BitwiseReductions, FloatOperandsAreATypeErrorAndTangentsAreFloat0) {
  EXPECT_THROW(lax::reduce_or(mj::zeros({3}, f32), {0}), TypeError);
  auto [y, t] = mj::jvp([](const Array& a) { return lax::reduce_or(lax::gt(a, mj::zeros_like(a)), {0}); },
                        mj::array({-1.0, 2.0}, {2}, f32), mj::ones({2}, f32));
  EXPECT_EQ(vals(y), (std::vector<double>{1}));
  EXPECT_EQ(t.dtype(), float0);
}

}  // namespace
