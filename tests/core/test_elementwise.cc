// Tests of the elementwise primitive family, broadcast_in_dim, convert_element_type and the
// numpy-level elementwise API: eager values vs std:: math, shape/dtype errors, promotion, JVPs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <minijax/minijax.h>
#include <numbers>
#include <string>
#include <vector>

namespace {

using mj::Array;
using mj::DType;
using mj::Shape;

Array arr(const std::vector<double>& v, DType d, Shape s = {}) {
  if (s.empty() && v.size() != 1) s = {int64_t(v.size())};
  return mj::array(v, s, d);
}

/// Elements of a concrete array as doubles (read independently of the primitives under test).
std::vector<double> vals(const Array& a) {
  std::vector<double> out;
  mj::dispatch_dtype(a.dtype(), [&]<class T>() {
    const T* p = a.data<T>();
    for (int64_t i = 0; i < a.size(); ++i) {
      if constexpr (std::is_same_v<T, mj::bfloat16>) out.push_back(double(float(p[i])));
      else out.push_back(double(p[i]));
    }
  });
  return out;
}

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

// ---- unary float primitives vs std:: math -------------------------------------------------------

struct UnaryCase {
  const char* name;
  std::function<Array(const Array&)> op;
  std::function<double(double)> ref;
  std::vector<double> inputs;
};

std::vector<UnaryCase> unary_cases() {
  const std::vector<double> any{-2.5, -0.75, 0.0, 0.3, 1.9};
  const std::vector<double> pos{0.01, 0.5, 1.0, 3.7, 100.0};
  return {
      {"sin", [](auto& x) { return mj::lax::sin(x); }, [](double v) { return std::sin(v); }, any},
      {"cos", [](auto& x) { return mj::lax::cos(x); }, [](double v) { return std::cos(v); }, any},
      {"tan", [](auto& x) { return mj::lax::tan(x); }, [](double v) { return std::tan(v); }, any},
      {"exp", [](auto& x) { return mj::lax::exp(x); }, [](double v) { return std::exp(v); }, any},
      {"log", [](auto& x) { return mj::lax::log(x); }, [](double v) { return std::log(v); }, pos},
      {"log1p", [](auto& x) { return mj::lax::log1p(x); }, [](double v) { return std::log1p(v); }, pos},
      {"expm1", [](auto& x) { return mj::lax::expm1(x); }, [](double v) { return std::expm1(v); }, any},
      {"tanh", [](auto& x) { return mj::lax::tanh(x); }, [](double v) { return std::tanh(v); }, any},
      {"logistic", [](auto& x) { return mj::lax::logistic(x); },
       [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, any},
      {"sqrt", [](auto& x) { return mj::lax::sqrt(x); }, [](double v) { return std::sqrt(v); }, pos},
      {"rsqrt", [](auto& x) { return mj::lax::rsqrt(x); }, [](double v) { return 1.0 / std::sqrt(v); }, pos},
      {"erf", [](auto& x) { return mj::lax::erf(x); }, [](double v) { return std::erf(v); }, any},
      {"abs", [](auto& x) { return mj::lax::abs(x); }, [](double v) { return std::fabs(v); }, any},
      {"neg", [](auto& x) { return mj::lax::neg(x); }, [](double v) { return -v; }, any},
      {"floor", [](auto& x) { return mj::lax::floor(x); }, [](double v) { return std::floor(v); }, any},
      {"ceil", [](auto& x) { return mj::lax::ceil(x); }, [](double v) { return std::ceil(v); }, any},
      {"sign", [](auto& x) { return mj::lax::sign(x); },
       [](double v) { return double((v > 0) - (v < 0)); }, any},
  };
}

TEST(Elementwise, UnaryFloatValuesMatchStdMath) {
  for (const auto& c : unary_cases()) {
    for (DType d : {mj::f32, mj::f64}) {
      Array x = arr(c.inputs, d);
      Array y = c.op(x);
      ASSERT_EQ(y.dtype(), d) << c.name;
      ASSERT_EQ(y.shape(), x.shape()) << c.name;
      auto got = vals(y);
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        // The f32 input is the double rounded to float; the reference works on that value.
        double in = d == mj::f32 ? double(float(c.inputs[i])) : c.inputs[i];
        double want = c.ref(in);
        double tol = (d == mj::f32 ? 2e-6 : 1e-14) * std::max(1.0, std::fabs(want));
        EXPECT_NEAR(got[i], want, tol) << c.name << "(" << in << ") " << mj::dtype_name(d);
      }
    }
  }
}

TEST(Elementwise, Bf16ComputesInFloatAndRounds) {
  Array x = arr({0.5, 1.0, 2.0}, mj::bf16);
  auto got = vals(mj::lax::exp(x));
  // exp(1) = 2.71828 -> nearest bf16 (8 bits of mantissa: step 2^-6 = 0.015625 in [2,4)) = 2.71875.
  EXPECT_DOUBLE_EQ(got[1], 2.71875);
  EXPECT_EQ(mj::lax::exp(x).dtype(), mj::bf16);
}

TEST(Elementwise, LogisticIsStableForLargeInputs) {
  auto got = vals(mj::lax::logistic(arr({-1000.0, -50.0, 0.0, 50.0, 1000.0}, mj::f32)));
  EXPECT_EQ(got[0], 0.0);
  EXPECT_NEAR(got[1], std::exp(-50.0), 1e-28);  // 1/(1+e^50) ~ e^-50, no underflow to NaN
  EXPECT_EQ(got[2], 0.5);
  EXPECT_EQ(got[3], 1.0);
  EXPECT_EQ(got[4], 1.0);
}

TEST(Elementwise, RoundingMethods) {
  Array x = arr({2.5, -2.5, 0.5, 3.5, 1.4}, mj::f32);
  // Half away from zero: 3, -3, 1, 4, 1.  Half to even: 2, -2, 0, 4, 1.
  EXPECT_EQ(vals(mj::lax::round(x, 0)), (std::vector<double>{3, -3, 1, 4, 1}));
  EXPECT_EQ(vals(mj::lax::round(x, 1)), (std::vector<double>{2, -2, 0, 4, 1}));
  EXPECT_EQ(vals(mj::round(x)), (std::vector<double>{2, -2, 0, 4, 1}));  // numpy: to even
  EXPECT_THROW(mj::lax::round(x, 7), mj::ValueError);
}

TEST(Elementwise, IntegerArithmeticFollowsC) {
  Array a = arr({-7, 7, -7, 9}, mj::i32), b = arr({2, 2, -2, 3}, mj::i32);
  EXPECT_EQ(vals(mj::lax::div(a, b)), (std::vector<double>{-3, 3, 3, 3}));    // truncation
  EXPECT_EQ(vals(mj::lax::rem(a, b)), (std::vector<double>{-1, 1, -1, 0}));   // sign of dividend
  EXPECT_EQ(vals(mj::lax::add(a, b)), (std::vector<double>{-5, 9, -9, 12}));
  EXPECT_EQ(vals(mj::lax::mul(a, b)), (std::vector<double>{-14, 14, 14, 27}));
  EXPECT_EQ(vals(mj::lax::abs(a)), (std::vector<double>{7, 7, 7, 9}));
  EXPECT_EQ(vals(mj::lax::sign(a)), (std::vector<double>{-1, 1, -1, 1}));
  EXPECT_EQ(vals(mj::lax::pow(arr({2, -3}, mj::i32), arr({10, 3}, mj::i32))), (std::vector<double>{1024, -27}));
  // XLA's defined results instead of a crash: x / 0 = -1, x % 0 = x, INT_MIN / -1 = INT_MIN.
  const double imin = std::numeric_limits<int32_t>::min();
  Array c = arr({5, imin}, mj::i32), z = arr({0, -1}, mj::i32);
  EXPECT_EQ(vals(mj::lax::div(c, z)), (std::vector<double>{-1, imin}));
  EXPECT_EQ(vals(mj::lax::rem(c, z)), (std::vector<double>{5, 0}));
  // Float rem is fmod.
  EXPECT_DOUBLE_EQ(vals(mj::lax::rem(arr({-7.5}, mj::f64), arr({2.0}, mj::f64)))[0], std::fmod(-7.5, 2.0));
}

TEST(Elementwise, BitwiseAndLogical) {
  Array a = arr({12, 5}, mj::i32), b = arr({10, 3}, mj::i32);
  EXPECT_EQ(vals(mj::lax::and_(a, b)), (std::vector<double>{8, 1}));   // 1100&1010, 101&011
  EXPECT_EQ(vals(mj::lax::or_(a, b)), (std::vector<double>{14, 7}));
  EXPECT_EQ(vals(mj::lax::not_(a)), (std::vector<double>{-13, -6}));   // ~x = -x-1
  Array t = arr({1, 0}, mj::bool_), f = arr({1, 1}, mj::bool_);
  EXPECT_EQ(vals(mj::lax::and_(t, f)), (std::vector<double>{1, 0}));
  EXPECT_EQ(vals(mj::lax::not_(t)), (std::vector<double>{0, 1}));
  EXPECT_EQ(vals(!t), (std::vector<double>{0, 1}));
  EXPECT_THROW(mj::lax::and_(arr({1.0}, mj::f32), arr({1.0}, mj::f32)), mj::TypeError);
}

TEST(Elementwise, BinaryFloatValues) {
  std::vector<double> xs{-1.5, 0.25, 2.0, 3.0}, ys{2.0, -0.5, 2.0, 0.5};
  for (DType d : {mj::f32, mj::f64}) {
    Array x = arr(xs, d), y = arr(ys, d);
    auto mx = vals(mj::lax::max(x, y)), mn = vals(mj::lax::min(x, y)), at = vals(mj::lax::atan2(x, y)),
         sb = vals(mj::lax::sub(x, y)), dv = vals(mj::lax::div(x, y));
    for (size_t i = 0; i < xs.size(); ++i) {
      EXPECT_EQ(mx[i], std::max(xs[i], ys[i]));
      EXPECT_EQ(mn[i], std::min(xs[i], ys[i]));
      EXPECT_NEAR(at[i], std::atan2(xs[i], ys[i]), 1e-6);
      EXPECT_EQ(sb[i], xs[i] - ys[i]);
      EXPECT_NEAR(dv[i], xs[i] / ys[i], 1e-7);
    }
    auto pw = vals(mj::lax::pow(arr({2.0, 9.0}, d), arr({0.5, 1.5}, d)));
    EXPECT_NEAR(pw[0], std::sqrt(2.0), 1e-6);
    EXPECT_NEAR(pw[1], 27.0, 1e-5);
  }
  // max/min propagate NaN (XLA), whichever side it is on.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto m = vals(mj::lax::max(arr({nan, 1.0}, mj::f32), arr({1.0, nan}, mj::f32)));
  EXPECT_TRUE(std::isnan(m[0]) && std::isnan(m[1]));
}

TEST(Elementwise, ComparisonsReturnBool) {
  Array x = arr({1, 2, 3}, mj::f32), y = arr({2, 2, 2}, mj::f32);
  struct C { Array r; std::vector<double> want; };
  std::vector<C> cs{{mj::lax::eq(x, y), {0, 1, 0}}, {mj::lax::ne(x, y), {1, 0, 1}},
                    {mj::lax::lt(x, y), {1, 0, 0}}, {mj::lax::le(x, y), {1, 1, 0}},
                    {mj::lax::gt(x, y), {0, 0, 1}}, {mj::lax::ge(x, y), {0, 1, 1}}};
  for (auto& c : cs) {
    EXPECT_EQ(c.r.dtype(), mj::bool_);
    EXPECT_FALSE(c.r.weak_type());
    EXPECT_EQ(vals(c.r), c.want);
  }
}

TEST(Elementwise, IntegerPow) {
  Array x = arr({-2.0, 0.5, 3.0}, mj::f32);
  EXPECT_EQ(vals(mj::lax::integer_pow(x, 3)), (std::vector<double>{-8, 0.125, 27}));
  EXPECT_EQ(vals(mj::lax::integer_pow(x, 0)), (std::vector<double>{1, 1, 1}));
  auto inv = vals(mj::lax::integer_pow(x, -2));
  EXPECT_FLOAT_EQ(inv[0], 0.25f);
  EXPECT_FLOAT_EQ(inv[1], 4.f);
  EXPECT_FLOAT_EQ(inv[2], 1.f / 9.f);
  EXPECT_EQ(vals(mj::lax::integer_pow(arr({-3, 2}, mj::i32), 5)), (std::vector<double>{-243, 32}));
  EXPECT_THROW(mj::lax::integer_pow(arr({2}, mj::i32), -1), mj::TypeError);
}

TEST(Elementwise, SelectNAndClamp) {
  Array which = arr({1, 0, 1}, mj::bool_);
  Array a = arr({1, 2, 3}, mj::f32), b = arr({10, 20, 30}, mj::f32), c = arr({7, 8, 9}, mj::f32);
  EXPECT_EQ(vals(mj::lax::select_n(which, {a, b})), (std::vector<double>{10, 2, 30}));
  EXPECT_EQ(vals(mj::lax::select_n(arr({2, 0, 1}, mj::i32), {a, b, c})), (std::vector<double>{7, 2, 30}));
  EXPECT_EQ(vals(mj::lax::select_n(arr({1}, mj::bool_, {}), {a, b})), (std::vector<double>{10, 20, 30}));
  EXPECT_THROW(mj::lax::select_n(arr({1, 0}, mj::bool_), {a, b}), mj::ShapeError);
  EXPECT_THROW(mj::lax::select_n(which, {a, b, c}), mj::TypeError);  // bool picks among <= 2
  Array x = arr({-5, 0.5, 5}, mj::f32);
  EXPECT_EQ(vals(mj::lax::clamp(arr({-1}, mj::f32, {}), x, arr({1}, mj::f32, {}))), (std::vector<double>{-1, 0.5, 1}));
  EXPECT_EQ(vals(mj::lax::clamp(arr({-9, 1, 0}, mj::f32), x, arr({9, 2, 3}, mj::f32))),
            (std::vector<double>{-5, 1, 3}));
}

TEST(Elementwise, ConvertElementType) {
  Array x = arr({-2.7, 2.7, 0.0, 1e10, std::nan("")}, mj::f32);
  Array i = mj::lax::convert_element_type(x, mj::i32);
  EXPECT_EQ(i.dtype(), mj::i32);
  // Truncation toward zero; out of range saturates; NaN -> 0 (XLA).
  EXPECT_EQ(vals(i), (std::vector<double>{-2, 2, 0, 2147483647.0, 0}));
  EXPECT_EQ(vals(mj::lax::convert_element_type(x, mj::bool_)), (std::vector<double>{1, 1, 0, 1, 1}));
  Array w = mj::lax::convert_element_type(arr({1, 0}, mj::bool_), mj::f32, true);
  EXPECT_TRUE(w.weak_type());
  EXPECT_EQ(vals(w), (std::vector<double>{1, 0}));
  Array h = mj::lax::convert_element_type(arr({1.0 + 1.0 / 512}, mj::f64), mj::bf16);
  EXPECT_EQ(vals(h)[0], 1.0);  // 1 + 2^-9 rounds to 1 with 7 stored mantissa bits
}

TEST(Elementwise, BroadcastInDim) {
  Array x = arr({1, 2, 3}, mj::f32);
  Array y = mj::lax::broadcast_in_dim(x, {2, 3}, {1});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(vals(y), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  Array z = mj::lax::broadcast_in_dim(x, {3, 2}, {0});
  EXPECT_EQ(vals(z), (std::vector<double>{1, 1, 2, 2, 3, 3}));
  Array col = arr({1, 2, 3}, mj::i32, {3, 1});
  EXPECT_EQ(vals(mj::lax::broadcast_in_dim(col, {3, 2, 2}, {0, 2})),
            (std::vector<double>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
  EXPECT_EQ(vals(mj::lax::broadcast_in_dim(arr({4}, mj::f64, {}), {2, 2}, {})),
            (std::vector<double>{4, 4, 4, 4}));
  EXPECT_THROW(mj::lax::broadcast_in_dim(x, {2, 4}, {1}), mj::ShapeError);     // 3 vs 4
  EXPECT_THROW(mj::lax::broadcast_in_dim(x, {2, 3}, {}), mj::ShapeError);      // wrong count
  EXPECT_THROW(mj::lax::broadcast_in_dim(col, {3, 2}, {1, 0}), mj::ShapeError);  // not increasing
}

TEST(Elementwise, PrintedParams) {
  auto j = mj::make_jaxpr([](const Array& x) {
    Array a = mj::lax::integer_pow(x, 2);
    Array b = mj::lax::convert_element_type(a, mj::f32, false);
    return mj::lax::broadcast_in_dim(b, {2, 3}, {1});
  })(arr({1, 2, 3}, mj::f32));
  std::string s = mj::to_string(j);
  EXPECT_TRUE(contains(s, "integer_pow[y=2]")) << s;
  EXPECT_TRUE(contains(s, "convert_element_type[new_dtype=float32 weak_type=False]")) << s;
  EXPECT_TRUE(contains(s, "broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)]")) << s;
}

// ---- errors ----------------------------------------------------------------------------------------

TEST(Elementwise, LaxShapeErrorNamesPrimitiveShapesAndCallSite) {
  Array a = arr({1, 2, 3, 4, 5, 6}, mj::f32, {2, 3}), b = arr({1, 2, 3}, mj::f32);
  try {
    mj::lax::add(a, b);
    FAIL() << "expected ShapeError";
  } catch (const mj::ShapeError& e) {
    std::string w = e.what();
    EXPECT_TRUE(contains(w, "add")) << w;
    EXPECT_TRUE(contains(w, "[2,3]")) << w;
    EXPECT_TRUE(contains(w, "[3]")) << w;
    EXPECT_TRUE(contains(w, "test_elementwise.cc")) << w;
  }
  try {
    mj::lax::mul(a, arr({1, 2, 3, 4, 5, 6}, mj::f64, {2, 3}));
    FAIL() << "expected TypeError";
  } catch (const mj::TypeError& e) {
    std::string w = e.what();
    EXPECT_TRUE(contains(w, "mul") && contains(w, "f32") && contains(w, "f64")) << w;
    EXPECT_TRUE(contains(w, "test_elementwise.cc")) << w;
  }
  EXPECT_THROW(mj::lax::sin(arr({1}, mj::i32)), mj::TypeError);
  EXPECT_THROW(mj::lax::add(arr({1}, mj::bool_), arr({1}, mj::bool_)), mj::TypeError);
}

TEST(Elementwise, LaxAcceptsRankZeroOperand) {
  // JAX's scalar rule: a rank-0 operand broadcasts against any shape at the lax level.
  Array x = arr({1, 2, 3}, mj::f32), s = arr({10}, mj::f32, {});
  Array y = mj::lax::mul(x, s);
  EXPECT_EQ(y.shape(), (Shape{3}));
  EXPECT_EQ(vals(y), (std::vector<double>{10, 20, 30}));
  EXPECT_EQ(vals(mj::lax::sub(s, x)), (std::vector<double>{9, 8, 7}));
}

// ---- numpy layer: promotion and broadcasting ---------------------------------------------------

TEST(NumpyElementwise, WeakScalarsKeepArrayDtype) {
  Array x = arr({1, 2}, mj::f32);
  Array y = x * 2.0;
  EXPECT_EQ(y.dtype(), mj::f32);
  EXPECT_FALSE(y.weak_type());
  EXPECT_EQ(vals(y), (std::vector<double>{2, 4}));
  Array i = arr({1, 2}, mj::i32);
  Array f = i + 2.5;  // i32 ⊔ weak f32 = weak f32
  EXPECT_EQ(f.dtype(), mj::f32);
  EXPECT_TRUE(f.weak_type());
  EXPECT_EQ(vals(f), (std::vector<double>{3.5, 4.5}));
  Array k = i + 2;  // i32 ⊔ weak i32 = i32
  EXPECT_EQ(k.dtype(), mj::i32);
  EXPECT_FALSE(k.weak_type());
  Array b = arr({1, 2}, mj::bf16) * 3;
  EXPECT_EQ(b.dtype(), mj::bf16);
  // A double literal meets an f64 array at full precision (not rounded through f32).
  Array d = arr({1.0}, mj::f64) * 0.1;
  EXPECT_EQ(d.dtype(), mj::f64);
  EXPECT_EQ(vals(d)[0], 0.1);
  // f32 ⊔ f64 = f64 for two arrays.
  EXPECT_EQ((x + arr({1, 1}, mj::f64)).dtype(), mj::f64);
}

TEST(NumpyElementwise, ScalarLiteralIsStagedAsLiteral) {
  auto j = mj::make_jaxpr([](const Array& x) { return x * 2; })(arr({1, 2, 3}, mj::f32));
  std::string s = mj::to_string(j);
  // The int 2 is converted at once to an f32 literal (as JAX folds Python scalars); no
  // convert_element_type or broadcast is staged.
  EXPECT_TRUE(contains(s, "mul a 2.0")) << s;
  EXPECT_FALSE(contains(s, "broadcast_in_dim")) << s;
  EXPECT_FALSE(contains(s, "convert_element_type")) << s;
}

TEST(NumpyElementwise, Broadcasting) {
  Array a = arr({1, 2, 3}, mj::f32, {3, 1}), b = arr({10, 20, 30, 40}, mj::f32);
  Array c = a + b;
  ASSERT_EQ(c.shape(), (Shape{3, 4}));
  std::vector<double> want;
  for (int i = 1; i <= 3; ++i)
    for (int j = 1; j <= 4; ++j) want.push_back(i + 10 * j);
  EXPECT_EQ(vals(c), want);
  EXPECT_EQ(mj::broadcast_shapes({8, 1, 6, 1}, {7, 1, 5}), (Shape{8, 7, 6, 5}));
  EXPECT_EQ(mj::broadcast_to(arr({1, 2}, mj::i32), {3, 2}).shape(), (Shape{3, 2}));
  EXPECT_THROW(mj::broadcast_to(arr({1, 2}, mj::i32), {2, 3}), mj::ShapeError);
  try {
    auto bad = arr({1, 2, 3}, mj::f32) * arr({1, 2, 3, 4}, mj::f32);
    FAIL() << "expected ShapeError, got " << bad;
  } catch (const mj::ShapeError& e) {
    std::string w = e.what();
    EXPECT_TRUE(contains(w, "[3]") && contains(w, "[4]") && contains(w, "multiply")) << w;
    EXPECT_TRUE(contains(w, "test_elementwise.cc")) << w;
  }
}

TEST(NumpyElementwise, DivisionRemainderPower) {
  Array i = arr({7, -7}, mj::i32), j = arr({2, 2}, mj::i32);
  Array q = i / j;  // true division
  EXPECT_EQ(q.dtype(), mj::f32);
  EXPECT_EQ(vals(q), (std::vector<double>{3.5, -3.5}));
  // numpy remainder takes the sign of the divisor: -7 % 2 = 1, 7 % -2 = -1.
  EXPECT_EQ(vals(i % j), (std::vector<double>{1, 1}));
  EXPECT_EQ(vals(i % arr({-2, -2}, mj::i32)), (std::vector<double>{-1, -1}));
  EXPECT_EQ(vals(arr({-7.5}, mj::f32) % 2.0)[0], 0.5);  // -7.5 = -4*2 + 0.5
  auto jp = mj::to_string(mj::make_jaxpr([](const Array& x) { return mj::power(x, 3); })(arr({2}, mj::f32)));
  EXPECT_TRUE(contains(jp, "integer_pow[y=3]")) << jp;
  EXPECT_EQ(vals(mj::power(arr({2, 3}, mj::f32), 3)), (std::vector<double>{8, 27}));
  EXPECT_NEAR(vals(mj::power(arr({4}, mj::f32), 0.5))[0], 2.0, 1e-7);
  Array acc = arr({1, 2}, mj::f32);
  acc += 1;
  acc *= 2.0;
  acc -= arr({1, 1}, mj::f32);
  acc /= 3;
  // ((x + 1) * 2 - 1) / 3 = [1, 5/3].
  EXPECT_EQ(vals(acc)[0], 1.0);
  EXPECT_NEAR(vals(acc)[1], 5.0 / 3.0, 1e-7);
}

TEST(NumpyElementwise, UnaryPromotionAndActivations) {
  Array i = arr({0, 1}, mj::i32);
  Array e = mj::exp(i);  // ints become f32 first
  EXPECT_EQ(e.dtype(), mj::f32);
  EXPECT_NEAR(vals(e)[1], std::exp(1.0), 1e-6);
  EXPECT_EQ(mj::floor(i).dtype(), mj::i32);
  std::vector<double> xs{-3.0, -0.5, 0.0, 0.5, 2.0};
  Array x = arr(xs, mj::f64);
  auto r = vals(mj::relu(x)), sg = vals(mj::sigmoid(x)), sq = vals(mj::square(x)),
       ga = vals(mj::gelu(x, true)), ge = vals(mj::gelu(x, false));
  for (size_t k = 0; k < xs.size(); ++k) {
    double v = xs[k];
    EXPECT_EQ(r[k], v > 0 ? v : 0.0);
    EXPECT_NEAR(sg[k], 1 / (1 + std::exp(-v)), 1e-15);
    EXPECT_EQ(sq[k], v * v);
    // Reference formulas of jax.nn.gelu.
    double approx = 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
    double exact = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    EXPECT_NEAR(ga[k], approx, 1e-14);
    EXPECT_NEAR(ge[k], exact, 1e-14);
  }
  EXPECT_EQ(mj::gelu(arr({1}, mj::f32), true).dtype(), mj::f32);
}

TEST(NumpyElementwise, WhereClipAstype) {
  Array c = arr({1, 0, 1}, mj::bool_);
  Array w = mj::where(c, arr({1, 2, 3}, mj::f32), 0.0);
  EXPECT_EQ(w.dtype(), mj::f32);
  EXPECT_EQ(vals(w), (std::vector<double>{1, 0, 3}));
  // cond [3,1] against x [3]: result [3,3].
  Array w2 = mj::where(arr({1, 0, 1}, mj::bool_, {3, 1}), arr({1, 2, 3}, mj::f32), -1);
  EXPECT_EQ(w2.shape(), (Shape{3, 3}));
  EXPECT_EQ(vals(w2), (std::vector<double>{1, 2, 3, -1, -1, -1, 1, 2, 3}));
  EXPECT_EQ(vals(mj::clip(arr({-5, 0.5, 5}, mj::f32), -1, 1.0)), (std::vector<double>{-1, 0.5, 1}));
  Array a = mj::astype(arr({1.7, -1.7}, mj::f32), mj::i32);
  EXPECT_EQ(vals(a), (std::vector<double>{1, -1}));
  Array x = arr({1}, mj::f32);
  EXPECT_EQ(mj::astype(x, mj::f32).impl(), x.impl());  // no-op conversion binds nothing
}

TEST(NumpyElementwise, ConstantHelpers) {
  Array s = mj::lax::scalar(2.5, mj::f32, true);
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_TRUE(s.weak_type());
  EXPECT_EQ(vals(mj::lax::full({2, 2}, 3.0, mj::i32)), (std::vector<double>{3, 3, 3, 3}));
  Array z = mj::lax::zeros_like_aval(mj::ShapedArray{{2, 3}, mj::f64});
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(vals(z), std::vector<double>(6, 0.0));
  Array f0 = mj::lax::zeros_like_aval(mj::ShapedArray{{4}, mj::float0});
  EXPECT_EQ(f0.dtype(), mj::float0);
  // Under tracing the zeros are staged (a broadcast of a literal), not baked in as a constant.
  auto j = mj::make_jaxpr([](const Array& x) {
    return mj::lax::add(x, mj::lax::zeros_like_aval(x.aval()));
  })(arr({1, 2}, mj::f32));
  std::string t = mj::to_string(j);
  EXPECT_TRUE(contains(t, "broadcast_in_dim[broadcast_dimensions=() shape=(2,)] 0.0")) << t;
}

// ---- JVP / grad / vmap through the rules ----------------------------------------------------------

/// Forward derivative of a unary f at x along t = 1.
double jvp1(const std::function<Array(const Array&)>& f, double x) {
  auto [y, t] = mj::jvp(f, arr({x}, mj::f64, {}), arr({1.0}, mj::f64, {}));
  return vals(t)[0];
}

TEST(ElementwiseRules, UnaryJvpsMatchHandDerivatives) {
  const double x = 0.7;
  EXPECT_NEAR(jvp1([](auto& v) { return mj::lax::sin(v); }, x), std::cos(x), 1e-14);
  EXPECT_NEAR(jvp1([](auto& v) { return mj::lax::cos(v); }, x), -std::sin(x), 1e-14);
  EXPECT_NEAR(jvp1([](auto& v) { return mj::lax::tan(v); }, x), 1 / std::pow(std::cos(x), 2), 1e-13);
  EXPECT_NEAR(jvp1([](auto& v) { return mj::lax::tanh(v); }, x), 1 - std::pow(std::tanh(x), 2), 1e-14);
  double s = 1 / (1 + std::exp(-x));
  EXPECT_NEAR(jvp1([](auto& v) { return mj::lax::logistic(v); }, x), s * (1 - s), 1e-14);
  EXPECT_NEAR(jvp1([](auto& v) { return mj::lax::log1p(v); }, x), 1 / (1 + x), 1e-14);
  EXPECT_NEAR(jvp1([](auto& v) { return mj::lax::expm1(v); }, x), std::exp(x), 1e-14);
  EXPECT_NEAR(jvp1([](auto& v) { return mj::lax::sqrt(v); }, x), 0.5 / std::sqrt(x), 1e-14);
  EXPECT_NEAR(jvp1([](auto& v) { return mj::lax::rsqrt(v); }, x), -0.5 * std::pow(x, -1.5), 1e-14);
  EXPECT_NEAR(jvp1([](auto& v) { return mj::lax::erf(v); }, x), 2 / std::sqrt(std::numbers::pi) * std::exp(-x * x), 1e-14);
  EXPECT_NEAR(jvp1([](auto& v) { return mj::lax::integer_pow(v, 3); }, x), 3 * x * x, 1e-14);
  EXPECT_NEAR(jvp1([](auto& v) { return mj::lax::abs(v); }, -x), -1.0, 0);
  EXPECT_EQ(jvp1([](auto& v) { return mj::lax::floor(v); }, x), 0.0);
  EXPECT_EQ(jvp1([](auto& v) { return mj::lax::stop_gradient(v); }, x), 0.0);
  EXPECT_NEAR(jvp1([](auto& v) { return mj::lax::convert_element_type(v, mj::f32); }, x), 1.0, 0);
}

TEST(ElementwiseRules, BinaryJvpsMatchHandDerivatives) {
  const double a = 1.3, b = 0.4;
  // Derivative of f(a + s, b + 2s) at s = 0: df/dx + 2 df/dy.
  auto d = [&](std::function<Array(const Array&, const Array&)> f) {
    auto [y, t] = mj::jvp(f, std::tuple{arr({a}, mj::f64, {}), arr({b}, mj::f64, {})},
                          std::tuple{arr({1.0}, mj::f64, {}), arr({2.0}, mj::f64, {})});
    return vals(t)[0];
  };
  EXPECT_NEAR(d([](auto& x, auto& y) { return mj::lax::mul(x, y); }), b + 2 * a, 1e-14);
  EXPECT_NEAR(d([](auto& x, auto& y) { return mj::lax::div(x, y); }), 1 / b - 2 * a / (b * b), 1e-12);
  EXPECT_NEAR(d([](auto& x, auto& y) { return mj::lax::sub(x, y); }), 1 - 2, 0);
  // pow: y x^(y-1) + 2 log(x) x^y.
  EXPECT_NEAR(d([](auto& x, auto& y) { return mj::lax::pow(x, y); }),
              b * std::pow(a, b - 1) + 2 * std::log(a) * std::pow(a, b), 1e-13);
  // atan2(x, y): y/(x^2+y^2) - 2 x/(x^2+y^2).
  EXPECT_NEAR(d([](auto& x, auto& y) { return mj::lax::atan2(x, y); }), (b - 2 * a) / (a * a + b * b), 1e-14);
  // rem(x, y) = x - y trunc(x/y): 1 - 2 trunc(1.3/0.4) = 1 - 2*3.
  EXPECT_NEAR(d([](auto& x, auto& y) { return mj::lax::rem(x, y); }), 1 - 2 * 3, 1e-14);
  EXPECT_NEAR(d([](auto& x, auto& y) { return mj::lax::max(x, y); }), 1.0, 0);  // a > b picks x
  EXPECT_NEAR(d([](auto& x, auto& y) { return mj::lax::min(x, y); }), 2.0, 0);  // picks y
  // Ties split the tangent evenly (JAX): max(x, x') at x == x' gives (1 + 2)/2.
  auto [yt, tt] = mj::jvp([](const Array& x, const Array& y) { return mj::lax::max(x, y); },
                          std::tuple{arr({1.0}, mj::f64, {}), arr({1.0}, mj::f64, {})},
                          std::tuple{arr({1.0}, mj::f64, {}), arr({2.0}, mj::f64, {})});
  EXPECT_EQ(vals(tt)[0], 1.5);
}

TEST(ElementwiseRules, GradThroughTransposes) {
  // f(x) = sum(relu(x) * 3 - x / 2): f' = 3 [x > 0] - 1/2 (relu' = 0 at 0, as PyTorch).
  Array x = arr({-1.0, 0.0, 2.0}, mj::f32);
  auto g = mj::grad([](const Array& v) { return mj::sum(mj::relu(v) * 3.0 - v / 2); })(x);
  EXPECT_EQ(vals(g), (std::vector<double>{-0.5, -0.5, 2.5}));
  // Scalar broadcast against a vector: d/ds sum(s * w) = sum(w); through broadcast_in_dim too.
  Array w = arr({1, 2, 3, 4}, mj::f32, {2, 2});
  auto gs = mj::grad([&](const Array& s) { return mj::sum(mj::lax::mul(s, w)); })(arr({5}, mj::f32, {}));
  EXPECT_EQ(vals(gs)[0], 10.0);
  auto gb = mj::grad([&](const Array& v) { return mj::sum(mj::broadcast_to(v, {3, 2}) * 4.0); })(
      arr({1, 2}, mj::f32));
  EXPECT_EQ(vals(gb), (std::vector<double>{12, 12}));  // 3 rows * factor 4
  // where: the gradient flows to the selected branch only.
  auto gw = mj::grad([](const Array& v) { return mj::sum(mj::where(v > 0, v * v, -v)); })(
      arr({-2, 3}, mj::f32));
  EXPECT_EQ(vals(gw), (std::vector<double>{-1, 6}));
  // f64 -> f32 -> f64 conversion is linear.
  auto gc = mj::grad([](const Array& v) { return mj::sum(mj::astype(v * 2.0, mj::f32)); })(
      arr({1, 2}, mj::f64));
  EXPECT_EQ(gc.dtype(), mj::f64);
  EXPECT_EQ(vals(gc), (std::vector<double>{2, 2}));
}

TEST(ElementwiseRules, VmapOfBinaryWithUnbatchedOperand) {
  Array xs = arr({1, 2, 3, 4, 5, 6}, mj::f32, {2, 3});
  Array c = arr({10, 20, 30}, mj::f32);
  auto f = mj::vmap([&](const Array& x) { return mj::lax::add(x, c) * 2.0; });
  Array y = f(xs);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(vals(y), (std::vector<double>{22, 44, 66, 28, 50, 72}));
  auto g = mj::vmap([](const Array& x) { return mj::lax::broadcast_in_dim(x, {2, 3}, {1}); });
  Array b = g(xs);
  EXPECT_EQ(b.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(vals(b), (std::vector<double>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
}

}  // namespace
