// minijax float0 under jit: forward over forward and forward over reverse of jitted functions
// with int/bool intermediates, float0 zeros in linearize, literals and add_any.
#include <gtest/gtest.h>

#include <string>

#include <minijax/minijax.h>

namespace {

using mj::Array;
using V = std::vector<Array>;

std::vector<double> vals(const Array& a) {
  Array f = mj::astype(a, mj::f64);
  return std::vector<double>(f.data<double>(), f.data<double>() + f.size());
}
void expect_vals(const Array& a, const std::vector<double>& want, const char* what) {
  std::vector<double> g = vals(a);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-5) << what << ", element " << i;
}
bool has_float0(const mj::ClosedJaxpr& j) { return mj::to_string(j).find("float0") != std::string::npos; }

// A bool intermediate under forward over forward of a jit. f(v) = |v| written as
// where(v > 0, v, -v): df/dv = sign(v), d2f/dv2 = 0, so
// jvp(v -> jvp(f, v, x).second, x, x) = (sign(x) x, 0) = (|x|, 0).
TEST(Float0, ForwardOverForwardOfJitWithABoolIntermediate) {
  auto f = mj::jit([](const Array& v) { return mj::where(v > 0, v, -v); });
  for (double s : {1.5, -1.5}) {
    Array x = mj::scalar(s, mj::f32);
    auto [d1, d2] = mj::jvp([&](const Array& v) { return mj::jvp(f, v, x).second; }, x, x);
    expect_vals(d1, {std::fabs(s)}, "rank 0: sign(x) x");
    expect_vals(d2, {0.0}, "rank 0: second derivative");
  }
  // rank 1 works the same
  Array x = mj::array({1.5, -2.0, 0.5}, {3}, mj::f32);
  auto [d1, d2] = mj::jvp([&](const Array& v) { return mj::jvp(f, v, x).second; }, x, x);
  expect_vals(d1, {1.5, 2.0, 0.5}, "rank 1: sign(x) x");
  expect_vals(d2, {0.0, 0.0, 0.0}, "rank 1: second derivative");
  // No float0 value reaches a staged program: the calls' JVPs pass and return nonzero tangents only.
  mj::ClosedJaxpr j = mj::make_jaxpr([&](const Array& u) {
    return mj::jvp([&](const Array& v) { return mj::jvp(f, v, u).second; }, u, u).second;
  })(mj::scalar(1.5, mj::f32));
  EXPECT_FALSE(has_float0(j)) << mj::to_string(j);
}

// A bool intermediate under forward over reverse of a jit: f(w) = where(s > 0, s^2, s) with
// s = sum(w). By hand: for s > 0, grad f = 2 s 1 and the Hessian is 2 11^T (so H v = 2 sum(v) 1);
// for s < 0, grad f = 1 and H = 0.
Array where_sum(const Array& w) {
  Array s = mj::sum(w);
  return mj::where(s > 0.0, s * s, s);
}

TEST(Float0, ForwardOverReverseOfJitWithABoolIntermediate) {
  auto jf = mj::jit(where_sum);
  Array v = mj::array({1.0, 2.0, 3.0}, {3}, mj::f32);
  Array wp = mj::array({0.5, 1.0, -0.25}, {3}, mj::f32);  // s = 1.25
  Array wn = mj::array({-0.5, 0.25, -1.0}, {3}, mj::f32);  // s = -1.25
  auto [gp, hvp] = mj::jvp(mj::grad(jf), wp, v);
  expect_vals(gp, {2.5, 2.5, 2.5}, "grad, s > 0");
  expect_vals(hvp, {12.0, 12.0, 12.0}, "H v, s > 0");
  auto [gn, hvn] = mj::jvp(mj::grad(jf), wn, v);
  expect_vals(gn, {1.0, 1.0, 1.0}, "grad, s < 0");
  expect_vals(hvn, {0.0, 0.0, 0.0}, "H v, s < 0");
  expect_vals(mj::hessian(jf)(wp), std::vector<double>(9, 2.0), "hessian, s > 0");
  expect_vals(mj::hessian(jf)(wn), std::vector<double>(9, 0.0), "hessian, s < 0");
  // rank 0: f(w) = w^2 for w > 0, so f'' = 2
  Array w0 = mj::scalar(0.75, mj::f32);
  auto [g0, h0] = mj::jvp(mj::grad(jf), w0, mj::scalar(1.0, mj::f32));
  expect_vals(g0, {1.5}, "rank 0 grad");
  expect_vals(h0, {2.0}, "rank 0 second derivative");
  expect_vals(mj::hessian(jf)(w0), {2.0}, "rank 0 hessian");
  // The route that already worked, compiled whole, agrees.
  Array hv_whole = mj::jit([&](const Array& w) { return mj::jvp(mj::grad(where_sum), w, v).second; })(wp);
  expect_vals(hv_whole, {12.0, 12.0, 12.0}, "jit(jvp(grad))");
  mj::ClosedJaxpr j = mj::make_jaxpr(mj::hessian(jf))(wp);
  EXPECT_FALSE(has_float0(j)) << mj::to_string(j);
  mj::ClosedJaxpr k = mj::make_jaxpr([&](const Array& w) { return mj::jvp(mj::grad(jf), w, v).second; })(wp);
  EXPECT_FALSE(has_float0(k)) << mj::to_string(k);
}

// A jitted call with int and bool operands and results under jvp: the staged JVP call takes the
// float tangent only and returns the float output's tangent only (JAX's _pjit_jvp).
TEST(Float0, CallJvpPassesOnlyNonzeroTangents) {
  auto g = mj::jit([](const Array& x, const Array& i, const Array& b) {
    return V{mj::where(b, x, -x) * mj::astype(i, mj::f32), i + 1, mj::lax::not_(b)};
  });
  for (Array x : {mj::scalar(0.5, mj::f32), mj::array({0.5, -2.0}, {2}, mj::f32)}) {
    Array i = mj::astype(mj::full_like(x, 3), mj::i32), b = x > 0;
    mj::ClosedJaxpr j = mj::make_jaxpr([&](const Array& u) {
      auto [p, t] = mj::jvp([&](const Array& y) { return g(y, i, b); }, u, u);
      return t[0];
    })(x);
    EXPECT_FALSE(has_float0(j)) << mj::to_string(j);
    auto [p, t] = mj::jvp([&](const Array& y) { return g(y, i, b); }, x, x);
    // d/dx [sign-flip(x) * 3] . x = 3 |x|
    std::vector<double> want;
    for (double e : vals(x)) want.push_back(3 * std::fabs(e));
    expect_vals(t[0], want, "tangent of the float output");
    EXPECT_EQ(t[1].dtype(), mj::float0);  // the int and bool outputs' tangents are float0 zeros
    EXPECT_EQ(t[2].dtype(), mj::float0);
  }
}

// linearize: the zero tangent of an int output is staged in the linear jaxpr (a broadcast of the
// float0 zero, as JAX's zeros_like_aval), never a constant of it — so never a saved residual.
TEST(Float0, LinearizeStagesTheZeroTangentOfAnIntOutput) {
  auto f = [](const Array& x) { return V{mj::sin(x), mj::astype(mj::floor(x * 2.0), mj::i32)}; };
  Array x = mj::array({0.8, -1.3, 2.1}, {3}, mj::f32);
  auto res = mj::saved_residuals(f, x);
  for (auto& r : res) EXPECT_NE(r.aval.dtype, mj::float0) << res;
  auto [out, f_jvp] = mj::linearize(f, x);
  V t = f_jvp(x);
  expect_vals(t[0], {0.8 * std::cos(0.8), -1.3 * std::cos(-1.3), 2.1 * std::cos(2.1)}, "cos(x) x");
  EXPECT_EQ(t[1].aval().str(), "float0[3]");
  // and compiled: the linear map of a jitted function with an int output
  V tj = mj::jit([&](const Array& u) { return mj::linearize(f, u).second(u); })(x);
  expect_vals(tj[0], vals(t[0]), "jit(linearize)");
  EXPECT_EQ(tj[1].aval().str(), "float0[3]");
}

// A float0 literal prints as `0:float0[]` (the one value of float0) rather than throwing — in a
// jaxpr and in the compile-cache key of a jitted function that returns one.
TEST(Float0, LiteralPrintsAndCompiles) {
  auto f = [](const Array& x) { return V{x * 2.0, mj::lax::zeros_like_aval(mj::ShapedArray{{}, mj::float0})}; };
  mj::ClosedJaxpr j = mj::make_jaxpr(f)(mj::scalar(1.0, mj::f32));
  EXPECT_NE(mj::to_string(j).find("0:float0[]"), std::string::npos) << mj::to_string(j);
  V r = mj::jit(f)(mj::scalar(1.5, mj::f32));
  expect_vals(r[0], {3.0}, "compiled float output");
  EXPECT_EQ(r[1].aval().str(), "float0[]");
  // the printed text parses back to the same jaxpr
  mj::ClosedJaxpr back = mj::parse_jaxpr(mj::to_string(j));
  EXPECT_EQ(mj::to_string(back), mj::to_string(j));
}

// Float0 values a user asks for, returned by compiled programs at rank 0 (a float0 literal output)
// and rank 1: the tangent of an int output under jit(jvp), the gradient of an int argument under
// jit(grad(allow_int)) — float0 zeros of the value's shape, as JAX returns.
TEST(Float0, UserFloat0ResultsOfCompiledPrograms) {
  auto f = [](const Array& x) { return V{mj::sin(x), mj::astype(mj::floor(x * 2.0), mj::i32)}; };
  auto g = [](const Array& x, const Array& i) { return mj::sum(mj::sin(x) * mj::astype(i, mj::f32)); };
  for (Array x : {mj::scalar(0.8, mj::f32), mj::array({0.8, -1.3}, {2}, mj::f32)}) {
    V t = mj::jit([&](const Array& y) { return mj::jvp(f, y, y).second; })(x);
    std::vector<double> want;
    for (double e : vals(x)) want.push_back(std::cos(e) * e);  // d sin(x) [x]
    expect_vals(t[0], want, "tangent of sin");
    EXPECT_EQ(t[1].aval(), (mj::ShapedArray{x.shape(), mj::float0}));
    Array i = mj::astype(mj::full_like(x, 3), mj::i32);
    auto [gx, gi] = mj::jit(mj::grad(g, mj::argnums<0, 1>, {.allow_int = true}))(x, i);
    want.clear();
    for (double e : vals(x)) want.push_back(3 * std::cos(e));  // d/dx sum(3 sin x)
    expect_vals(gx, want, "gradient of the float argument");
    EXPECT_EQ(gi.aval(), (mj::ShapedArray{x.shape(), mj::float0}));
  }
}

// add_any (the addition of tangents) of float0 tangents: a float0 result, eagerly and compiled.
TEST(Float0, AddAnyOfFloat0Tangents) {
  Array z = mj::lax::zeros_like_aval(mj::ShapedArray{{3}, mj::float0});
  EXPECT_EQ(mj::lax::add_any(z, z).aval().str(), "float0[3]");
  Array c = mj::jit([](const Array& a, const Array& b) { return mj::lax::add_any(a, b); })(z, z);
  EXPECT_EQ(c.aval().str(), "float0[3]");
}

}  // namespace
