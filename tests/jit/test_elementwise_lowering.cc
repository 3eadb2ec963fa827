// Tests of the elemental lowering of the non-transcendental elementwise primitives (jit/codegen/lower/elementwise*.cc):
// compiled by mj::jit equal to eager bit for bit on random inputs and edge cases, by-hand results.
#include <gtest/gtest.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace {

using mj::Array;
using mj::DType;

constexpr int64_t kN = 2053;  // vector loop plus a scalar tail at every lane count

// Edge values of each dtype (as doubles; converted exactly where representable).
std::vector<double> float_edges() {
  return {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-45, -1e-45, 1e-310, FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX,
          DBL_MAX, 1, -1, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, -3.5, 0.49999997, 8388609, 4503599627370497.0,
          2147483647.0, 2147483648.0, -2147483648.0, -2147483649.0, 2147483520.0, 4294967295.0,
          4294967296.0, 3e9, -3e9, 1e20, -1e20, 7, -7, 3, 1e-40};
}
std::vector<int64_t> int_edges(DType d) {
  if (d == DType::u32) return {0, 1, 2, 3, 31, 32, 33, 40, 0x7fffffff, 0x80000000LL, 0xffffffffLL, 0xfffffffeLL, 7};
  return {0, 1, -1, 2, -2, 3, 31, 32, 33, 40, -31, -32, INT_MIN, INT_MAX, INT_MIN + 1, 7, -7};
}

// Element i of an array of dtype d: the cross product of the edge values over the first E^2
// elements (`which` selects the row or the column), random values after.
Array make(DType d, uint64_t seed, int which, int64_t n = kN) {
  std::mt19937_64 g(seed);
  Array a = mj::zeros({n}, d);
  auto pick = [&](size_t ne, int64_t i) -> int64_t {
    if (i < int64_t(ne * ne)) return which == 0 ? i / int64_t(ne) : i % int64_t(ne);
    return -1;
  };
  mj::dispatch_dtype(d, [&]<class T>() {
    T* p = a.mutable_data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = (g() & 1) != 0;
      } else if constexpr (std::is_integral_v<T>) {
        auto e = int_edges(d);
        int64_t k = pick(e.size(), i);
        if (k >= 0) p[i] = T(e[size_t(k)]);
        else if (i % 2) p[i] = T(int64_t(g() % 101) - 50);
        else p[i] = T(uint32_t(g()));
      } else {
        auto e = float_edges();
        int64_t k = pick(e.size(), i);
        double v;
        if (k >= 0) {
          v = e[size_t(k)];
        } else if (i % 2) {
          v = std::uniform_real_distribution<double>(-100, 100)(g);
        } else {
          uint64_t bits = g();
          double dv;
          std::memcpy(&dv, &bits, 8);
          float fv;
          uint32_t b32 = uint32_t(bits);
          std::memcpy(&fv, &b32, 4);
          v = std::is_same_v<T, double> ? dv : double(fv);
        }
        p[i] = T(float(v));
        if constexpr (std::is_same_v<T, double>) p[i] = v;
      }
    }
  });
  return a;
}

template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, mj::bfloat16>) return double(float(v));
  else return double(v);
}

// Equal bit for bit, except that any two NaNs are equal (payloads are not part of the contract).
::testing::AssertionResult same(const Array& got, const Array& want) {
  if (got.aval().str() != want.aval().str())
    return ::testing::AssertionFailure() << "avals " << got.aval().str() << " vs " << want.aval().str();
  ::testing::AssertionResult r = ::testing::AssertionSuccess();
  int bad = 0;
  mj::dispatch_dtype(got.dtype(), [&]<class T>() {
    const T *a = got.data<T>(), *b = want.data<T>();
    for (int64_t i = 0; i < got.size(); ++i) {
      bool eq = std::memcmp(&a[i], &b[i], sizeof(T)) == 0;
      if constexpr (!std::is_integral_v<T>) {
        if (std::isnan(float(a[i])) && std::isnan(float(b[i]))) eq = true;
      }
      if (!eq && bad++ < 5) {
        if (r) r = ::testing::AssertionFailure();
        r << " [" << i << "] got " << as_double(a[i]) << " want " << as_double(b[i]);
      }
    }
  });
  if (!r) r << " (" << bad << " elements differ)";
  return r;
}

using F1 = std::function<Array(const Array&)>;
using F2 = std::function<Array(const Array&, const Array&)>;

void expect_same1(const std::string& what, const F1& f, const Array& x) {
  EXPECT_TRUE(same(mj::jit(f)(x), f(x))) << what << " on " << x.aval().str();
}
void expect_same2(const std::string& what, const F2& f, const Array& x, const Array& y) {
  EXPECT_TRUE(same(mj::jit(f)(x, y), f(x, y))) << what << " on " << x.aval().str() << ", " << y.aval().str();
}

const DType kFloats[] = {DType::bf16, DType::f32, DType::f64};
const DType kNumeric[] = {DType::i32, DType::u32, DType::bf16, DType::f32, DType::f64};

}  // namespace

TEST(ElementwiseLowering, UnaryArithmeticIsBitIdenticalToEager) {
  for (DType d : kNumeric) {
    Array x = make(d, 1, 0);
    expect_same1("neg", [](const Array& a) { return mj::lax::neg(a); }, x);
    expect_same1("abs", [](const Array& a) { return mj::lax::abs(a); }, x);
    expect_same1("sign", [](const Array& a) { return mj::lax::sign(a); }, x);
    expect_same1("stop_gradient", [](const Array& a) { return mj::lax::stop_gradient(a); }, x);
  }
  for (DType d : kFloats) {
    Array x = make(d, 2, 0);
    expect_same1("floor", [](const Array& a) { return mj::lax::floor(a); }, x);
    expect_same1("ceil", [](const Array& a) { return mj::lax::ceil(a); }, x);
    expect_same1("round0", [](const Array& a) { return mj::lax::round(a, 0); }, x);
    expect_same1("round1", [](const Array& a) { return mj::lax::round(a, 1); }, x);
    expect_same1("sqrt", [](const Array& a) { return mj::lax::sqrt(a); }, x);
    expect_same1("rsqrt", [](const Array& a) { return mj::lax::rsqrt(a); }, x);
  }
  for (DType d : {DType::bool_, DType::i32, DType::u32})
    expect_same1("not", [](const Array& a) { return mj::lax::not_(a); }, make(d, 3, 0));
}

TEST(ElementwiseLowering, RoundHalfCasesByHand) {
  // std::round / std::rint by hand: ties away from zero / to even, signed zeros kept.
  Array x = mj::zeros({8}, mj::f32);
  float v[8] = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, -0.4f, 8388607.5f, -8388609.f};
  std::memcpy(x.mutable_data<float>(), v, sizeof v);
  Array r0 = mj::jit([](const Array& a) { return mj::lax::round(a, 0); })(x);
  Array r1 = mj::jit([](const Array& a) { return mj::lax::round(a, 1); })(x);
  const float w0[8] = {1, 2, 3, -1, -3, -0.f, 8388608, -8388609};
  const float w1[8] = {0, 2, 2, -0.f, -2, -0.f, 8388608, -8388609};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(r0.data<float>()[i], w0[i]) << v[i];
    EXPECT_EQ(std::signbit(r0.data<float>()[i]), std::signbit(w0[i])) << v[i];
    EXPECT_EQ(r1.data<float>()[i], w1[i]) << v[i];
    EXPECT_EQ(std::signbit(r1.data<float>()[i]), std::signbit(w1[i])) << v[i];
  }
}

TEST(ElementwiseLowering, IntegerPowMatchesEagerForEveryExponent) {
  for (DType d : kNumeric) {
    Array x = make(d, 4, 0);
    for (int64_t y : {0, 1, 2, 3, 4, 5, 7, 13, 31, 64, -1, -2, -3, -7}) {
      if (y < 0 && !mj::is_floating(d)) continue;
      expect_same1("integer_pow y=" + std::to_string(y), [y](const Array& a) { return mj::lax::integer_pow(a, y); }, x);
    }
  }
}

TEST(ElementwiseLowering, BinaryArithmeticIsBitIdenticalToEager) {
  for (DType d : kNumeric) {
    Array x = make(d, 5, 0), y = make(d, 6, 1);
    expect_same2("add", [](const Array& a, const Array& b) { return mj::lax::add(a, b); }, x, y);
    expect_same2("add_any", [](const Array& a, const Array& b) { return mj::lax::add_any(a, b); }, x, y);
    expect_same2("sub", [](const Array& a, const Array& b) { return mj::lax::sub(a, b); }, x, y);
    expect_same2("mul", [](const Array& a, const Array& b) { return mj::lax::mul(a, b); }, x, y);
    expect_same2("div", [](const Array& a, const Array& b) { return mj::lax::div(a, b); }, x, y);
    expect_same2("rem", [](const Array& a, const Array& b) { return mj::lax::rem(a, b); }, x, y);
    expect_same2("max", [](const Array& a, const Array& b) { return mj::lax::max(a, b); }, x, y);
    expect_same2("min", [](const Array& a, const Array& b) { return mj::lax::min(a, b); }, x, y);
    for (auto [name, f] : std::vector<std::pair<const char*, F2>>{
             {"eq", [](const Array& a, const Array& b) { return mj::lax::eq(a, b); }},
             {"ne", [](const Array& a, const Array& b) { return mj::lax::ne(a, b); }},
             {"lt", [](const Array& a, const Array& b) { return mj::lax::lt(a, b); }},
             {"le", [](const Array& a, const Array& b) { return mj::lax::le(a, b); }},
             {"gt", [](const Array& a, const Array& b) { return mj::lax::gt(a, b); }},
             {"ge", [](const Array& a, const Array& b) { return mj::lax::ge(a, b); }}})
      expect_same2(name, f, x, y);
    // a rank-0 operand on either side (lax's scalar rule)
    Array s = mj::lax::slice(y, {7}, {8});
    s = mj::lax::reshape(s, {});
    expect_same2("div scalar", [](const Array& a, const Array& b) { return mj::lax::div(a, b); }, x, s);
    expect_same2("rem scalar", [](const Array& a, const Array& b) { return mj::lax::rem(b, a); }, x, s);
  }
}

TEST(ElementwiseLowering, IntegerDivisionEdgeCasesByHand) {
  // XLA's defined results: x / 0 = -1, x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0.
  Array x = mj::zeros({4}, mj::i32), y = mj::zeros({4}, mj::i32);
  int32_t xv[4] = {7, INT_MIN, INT_MIN, -9}, yv[4] = {0, -1, 0, 4};
  std::memcpy(x.mutable_data<int32_t>(), xv, sizeof xv);
  std::memcpy(y.mutable_data<int32_t>(), yv, sizeof yv);
  Array q = mj::jit([](const Array& a, const Array& b) { return mj::lax::div(a, b); })(x, y);
  Array r = mj::jit([](const Array& a, const Array& b) { return mj::lax::rem(a, b); })(x, y);
  const int32_t wq[4] = {-1, INT_MIN, -1, -2}, wr[4] = {7, 0, INT_MIN, -1};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(q.data<int32_t>()[i], wq[i]) << i;
    EXPECT_EQ(r.data<int32_t>()[i], wr[i]) << i;
  }
}

TEST(ElementwiseLowering, FloatRemIsFmodBitForBit) {
  for (DType d : kFloats) {
    Array x = make(d, 7, 0), y = make(d, 8, 1);
    Array got = mj::jit([](const Array& a, const Array& b) { return mj::lax::rem(a, b); })(x, y);
    EXPECT_TRUE(same(got, mj::lax::rem(x, y)));
    // the oracle: std::fmod in the compute type, element by element
    Array xf = mj::astype(x, DType::f64), yf = mj::astype(y, DType::f64), gf = mj::astype(got, DType::f64);
    for (int64_t i = 0; i < x.size(); ++i) {
      double a = xf.data<double>()[i], b = yf.data<double>()[i], r;
      if (d == DType::f64) r = std::fmod(a, b);
      else r = double(std::fmod(float(a), float(b)));
      double g = gf.data<double>()[i];
      if (std::isnan(r)) EXPECT_TRUE(std::isnan(g)) << a << " % " << b;
      else if (d != DType::bf16) EXPECT_TRUE(g == r && std::signbit(g) == std::signbit(r)) << a << " % " << b;
    }
  }
}

TEST(ElementwiseLowering, BitwiseAndShiftsMatchEager) {
  for (DType d : {DType::bool_, DType::i32, DType::u32}) {
    Array x = make(d, 9, 0), y = make(d, 10, 1);
    expect_same2("and", [](const Array& a, const Array& b) { return mj::lax::and_(a, b); }, x, y);
    expect_same2("or", [](const Array& a, const Array& b) { return mj::lax::or_(a, b); }, x, y);
    expect_same2("xor", [](const Array& a, const Array& b) { return mj::lax::xor_(a, b); }, x, y);
  }
  for (DType d : {DType::i32, DType::u32}) {
    // every shift count 0..40 against every edge value, then the edge cross product
    Array x = make(d, 11, 0), y = make(d, 12, 1);
    Array cnt = mj::zeros({kN}, d);
    uint32_t* pc = static_cast<uint32_t*>(const_cast<void*>(cnt.raw_data()));
    for (int64_t i = 0; i < kN; ++i) pc[i] = uint32_t(i % 41);
    for (const Array* s : {&cnt, &y}) {
      expect_same2("shift_left", [](const Array& a, const Array& b) { return mj::lax::shift_left(a, b); }, x, *s);
      expect_same2("shift_right_logical",
                   [](const Array& a, const Array& b) { return mj::lax::shift_right_logical(a, b); }, x, *s);
    }
    // by hand: counts >= 32 give 0; the logical shift fills with zeros
    Array one = mj::zeros({3}, d), c = mj::zeros({3}, d);
    uint32_t ov[3] = {0xfffffff8u, 0xfffffff8u, 0xfffffff8u}, cv[3] = {1, 32, 40};
    std::memcpy(const_cast<void*>(one.raw_data()), ov, sizeof ov);  // i32 and u32 share the encoding
    std::memcpy(const_cast<void*>(c.raw_data()), cv, sizeof cv);
    Array sr = mj::jit([](const Array& a, const Array& b) { return mj::lax::shift_right_logical(a, b); })(one, c);
    Array sl = mj::jit([](const Array& a, const Array& b) { return mj::lax::shift_left(a, b); })(one, c);
    const uint32_t* r = static_cast<const uint32_t*>(sr.raw_data());
    const uint32_t* l = static_cast<const uint32_t*>(sl.raw_data());
    EXPECT_EQ(r[0], 0xfffffff8u >> 1);
    EXPECT_EQ(l[0], 0xfffffff0u);
    for (int i = 1; i < 3; ++i) {
      EXPECT_EQ(r[i], 0u);
      EXPECT_EQ(l[i], 0u);
    }
  }
}

TEST(ElementwiseLowering, IntegerPowMatchesEager) {
  for (DType d : {DType::i32, DType::u32}) {
    Array x = make(d, 13, 0), y = make(d, 14, 1);
    expect_same2("pow", [](const Array& a, const Array& b) { return mj::lax::pow(a, b); }, x, y);
  }
  // by hand: negative exponents give 1 for 1, ±1 for -1, 0 otherwise; 3^5 = 243; 2^31 wraps.
  Array x = mj::zeros({6}, mj::i32), y = mj::zeros({6}, mj::i32);
  int32_t xv[6] = {1, -1, -1, 5, 3, 2}, yv[6] = {-3, -3, -4, -1, 5, 31};
  std::memcpy(x.mutable_data<int32_t>(), xv, sizeof xv);
  std::memcpy(y.mutable_data<int32_t>(), yv, sizeof yv);
  Array p = mj::jit([](const Array& a, const Array& b) { return mj::lax::pow(a, b); })(x, y);
  const int32_t want[6] = {1, -1, 1, 0, 243, INT_MIN};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p.data<int32_t>()[i], want[i]) << i;
}

TEST(ElementwiseLowering, ConvertElementTypeEveryPairIsBitIdentical) {
  const DType all[] = {DType::bool_, DType::i32, DType::u32, DType::bf16, DType::f32, DType::f64};
  for (DType from : all) {
    Array x = make(from, 15, 0);
    for (DType to : all)
      expect_same1(std::string("convert to ") + mj::dtype_name(to),
                   [to](const Array& a) { return mj::lax::convert_element_type(a, to); }, x);
  }
}

TEST(ElementwiseLowering, FloatToIntConversionSaturatesByHand) {
  // convert_value's rules by hand: truncation toward zero, saturation, NaN -> 0.
  Array x = mj::zeros({8}, mj::f32);
  float v[8] = {NAN, 3e9f, -3e9f, 2147483648.f, -2.7f, 2.7f, INFINITY, -0.5f};
  std::memcpy(x.mutable_data<float>(), v, sizeof v);
  Array i = mj::jit([](const Array& a) { return mj::lax::convert_element_type(a, mj::i32); })(x);
  Array u = mj::jit([](const Array& a) { return mj::lax::convert_element_type(a, mj::u32); })(x);
  const int32_t wi[8] = {0, INT_MAX, INT_MIN, INT_MAX, -2, 2, INT_MAX, 0};
  const uint32_t wu[8] = {0, 3000000000u, 0, 2147483648u, 0, 2, UINT_MAX, 0};
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(i.data<int32_t>()[k], wi[k]) << v[k];
    EXPECT_EQ(u.data<uint32_t>()[k], wu[k]) << v[k];
  }
}

TEST(ElementwiseLowering, SelectAndClampMatchEager) {
  for (DType d : kNumeric) {
    Array x = make(d, 16, 0), y = make(d, 17, 1), z = make(d, 18, 0);
    Array w = mj::lax::lt(x, y);
    expect_same2("select_n", [w](const Array& a, const Array& b) { return mj::lax::select_n(w, {a, b}); }, x, y);
    expect_same2("clamp", [z](const Array& a, const Array& b) { return mj::lax::clamp(mj::lax::min(a, b), z, mj::lax::max(a, b)); }, x, y);
  }
}

namespace {

// The KIR of the program's first fused loop kernel (from its "; fusion" comment to its end).
std::string first_kernel(const std::string& text) {
  const size_t start = text.find("; fusion fusion.0:");
  if (start == std::string::npos) return "";
  return text.substr(start, text.find("\n}", start) - start);
}

}  // namespace

// A fused loop whose extent is a multiple of the vector lanes has no scalar tail: inline, and
// parallel, where mj_rt_parallel_for's chunks start at multiples of the grain (a multiple of the
// lanes), so every chunk is whole vectors. Other extents keep the tail. Each result equals eager's
// bit for bit, at the sizes that exercise both (inline and parallel, with and without the tail).
TEST(ElementwiseLowering, WholeVectorExtentsHaveNoScalarTail) {
  auto f = [](const Array& a) { return mj::lax::add(mj::lax::mul(a, mj::lax::scalar(1.5, mj::f32)), mj::lax::scalar(0.25, mj::f32)); };
  for (int64_t n : {int64_t(4096), int64_t(4099), (int64_t(1) << 17) + 48, (int64_t(1) << 17) + 5, int64_t(1) << 20}) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(i % 1000) * 0.001f - 0.3f;
    const Array x = mj::array(v, {n});
    auto jf = mj::jit(f);
    const std::string text = jf.lower(x).compile().as_text();
    const std::string kernel = first_kernel(text);
    // the sizes from 2^16 elements run in chunks on the thread pool (program.cc)
    EXPECT_EQ(text.find(" lanes parallel") != std::string::npos, n >= (int64_t(1) << 16)) << n;
    ASSERT_FALSE(kernel.empty()) << n;
    const bool whole = n % 16 == 0;  // 16: the lanes of f32 on the widest host (a multiple of the others')
    EXPECT_EQ(kernel.find("= load f32 ") == std::string::npos, whole) << n << "\n" << kernel;  // the tail's loads
    const Array got = jf(x), want = f(x);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data<float>(), want.data<float>(), size_t(n) * sizeof(float)), 0) << n;
  }
}
