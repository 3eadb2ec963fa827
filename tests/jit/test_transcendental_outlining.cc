// minijax tests of outlined transcendentals (jit/codegen/lower/transcendentals_outline.cc): one module function
// per function and type whatever the number of uses, and compiled == eager through it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace {

using mj::Array;
namespace lax = mj::lax;

// The chain of bench/compile's chain case: links of y = sin(y) * 0.999 + 0.001.
Array sin_chain(const Array& x, int links) {
  Array y = x;
  for (int i = 0; i < links; ++i) y = lax::add(lax::mul(lax::sin(y), mj::full_like(y, 0.999)), mj::full_like(y, 0.001));
  return y;
}

// The KIR part of Compiled::as_text().
std::string kir_text(const std::string& text) {
  size_t a = text.find("# kernels (KIR)");
  size_t b = text.find("# optimized LLVM IR");
  return a == std::string::npos ? "" : text.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// Max |got - want| / (atol + rtol |want|) (NaNs must match); both compared in f64.
double err(const Array& got, const Array& want, double atol, double rtol) {
  Array g = mj::astype(got, mj::f64), w = mj::astype(want, mj::f64);
  double worst = 0;
  for (int64_t i = 0; i < g.size(); ++i) {
    double u = g.data<double>()[i], v = w.data<double>()[i];
    if (std::isnan(u) || std::isnan(v)) {
      if (std::isnan(u) != std::isnan(v)) return 1e30;
      continue;
    }
    worst = std::max(worst, std::fabs(u - v) / (atol + rtol * std::fabs(v)));
  }
  return worst;
}

TEST(TranscendentalOutlining, EachFunctionIsDefinedOncePerType) {
  // 50 links over 4099 elements: the kernel calls sin 50 times in its vector loop and 50 times in
  // its scalar tail; the module defines sin once, on the vector width, which the tail calls too
  // (its element splatted, lane 0 of the result): not 100 inline copies, not a scalar copy.
  Array x = mj::full({4099}, 0.5, mj::f32);
  std::string kir = kir_text(mj::jit([](const Array& a) { return sin_chain(a, 50); }).lower(x).compile().as_text());
  ASSERT_FALSE(kir.empty());
  EXPECT_EQ(count(kir, "define internal f32 @mj_math_sin_f32x1("), 0) << kir.substr(0, 2000);
  int defines = 0;
  for (size_t p = kir.find("define internal"); p != std::string::npos; p = kir.find("define internal", p + 1))
    defines += kir.compare(kir.find('@', p), 16, "@mj_math_sin_f32") == 0;
  EXPECT_EQ(defines, 1);
  EXPECT_EQ(count(kir, "call @mj_math_sin_f32x"), 100);    // every use is a call
  EXPECT_NE(kir.find("noinline"), std::string::npos);      // called from 100 places: not inlined
  EXPECT_NE(kir.find("lightopt"), std::string::npos);      // LLVM's cleanup passes only
  // The tail's result equals eager's at every element, the tail's included.
  auto f = [](const Array& a) { return sin_chain(a, 50); };
  Array xs = lax::mul(mj::astype(mj::arange(4099), mj::f32), mj::full({4099}, 1e-3, mj::f32));
  EXPECT_LE(err(mj::jit(f)(xs), f(xs), 1e-6, 1e-6), 8.0);
}

TEST(TranscendentalOutlining, F32UsesOfF64CodeCallTheF64Function) {
  // lgamma, erfc and igamma compute f32 in f64 and round once: an f32 kernel calls their f64
  // definition (on the f32 register's lanes for erfc, lgamma and igamma, whose halves then
  // interleave; on each half of them for the others); there is no f32 copy of their code. lgamma's and
  // igamma's own calls of log go to one shared definition of log.
  Array x = mj::full({4096}, 2.5, mj::f32);
  auto f = [](const Array& a) {
    Array y = lax::add(lax::lgamma(a), lax::erfc(a));
    y = lax::add(y, lax::lgamma(lax::add(a, y)));
    return lax::add(y, lax::igamma(a, lax::add(a, a)));
  };
  std::string kir = kir_text(mj::jit(f).lower(x).compile().as_text());
  ASSERT_FALSE(kir.empty());
  for (const char* fn : {"lgamma", "erfc", "igamma", "log"}) {
    EXPECT_EQ(count(kir, std::string("@mj_math_") + fn + "_f32x"), 0) << fn << ": an f32 definition or call";
    EXPECT_GE(count(kir, std::string("@mj_math_") + fn + "_f64x"), 1) << fn;
  }
  const int f32_lanes = mj::host_target().vector_bytes / 4;
  for (const char* fn : {"lgamma", "erfc", "igamma"})
    EXPECT_EQ(count(kir, std::string("define internal <") + std::to_string(f32_lanes) + " x f64> @mj_math_" + fn +
                             "_f64x" + std::to_string(f32_lanes) + "("),
              1)
        << fn << ": one f64 definition on the f32 register's lanes";
  int log_defs = 0;
  for (size_t p = kir.find("define internal"); p != std::string::npos; p = kir.find("define internal", p + 1))
    log_defs += kir.find("@mj_math_log_f64x", p) == kir.find('@', p);
  EXPECT_EQ(log_defs, 1);
  // Values: compiled against eager (each function within its bounds of tests/jit/test_gamma_accuracy.cc).
  std::vector<double> v;
  for (int i = 0; i < 4099; ++i) v.push_back(0.05 + 20.0 * double(i) / 4099.0);
  Array xs = mj::array(v, {int64_t(v.size())}, mj::f32);
  EXPECT_LE(err(mj::jit(f)(xs), f(xs), 1e-5, 1e-5), 1.0);
}

TEST(TranscendentalOutlining, KernelCodeGrowsByACallPerLink) {
  // What LLVM optimizes and compiles grows with the chain by a call, a multiply and an add per link
  // (a few lines of KIR), not by the function's code (about 900 lines per link inline before).
  Array x = mj::full({4099}, 0.5, mj::f32);
  auto size = [&](int links) {
    return double(kir_text(mj::jit([links](const Array& a) { return sin_chain(a, links); }).lower(x).compile().as_text()).size());
  };
  const double per_link = (size(60) - size(20)) / 40.0;
  EXPECT_LT(per_link, 2000.0) << "KIR characters per link";
}

TEST(TranscendentalOutlining, ChainsOfEveryFunctionMatchEager) {
  // Each function used several times in one kernel (so called, not inlined), f32 and f64, on a
  // length with a scalar tail; inputs inside every function's domain, plus huge and special
  // arguments for sin, cos and tan (the runtime reduction called from an outlined function).
  // Reference: eager (libm-based), the ulp bounds of tests/jit/test_transcendentals.cc as tolerance.
  std::vector<double> v;
  for (int i = 0; i < 1037; ++i) v.push_back(0.05 + 0.9 * double(i) / 1037.0);
  std::vector<double> big = {1e10, -3e7, 1e22, 6.5e5, 1.5, -2.25e19, 0.0, -0.0, 12345.678, 5e300};
  for (mj::DType d : {mj::f32, mj::f64}) {
    Array x = mj::array(v, {int64_t(v.size())}, d);
    auto f = [](const Array& a) {
      Array n = lax::neg(a);
      std::vector<Array> terms = {lax::exp(a), lax::exp(n), lax::log(a), lax::log(lax::add(a, a)), lax::log1p(a),
                                  lax::log1p(n), lax::expm1(a), lax::expm1(n), lax::tanh(a), lax::tanh(n),
                                  lax::logistic(a), lax::logistic(n), lax::erf(a), lax::erf(n), lax::erf_inv(a),
                                  lax::erf_inv(n), lax::pow(a, a), lax::pow(a, n), lax::atan2(a, n), lax::atan2(n, a),
                                  lax::sin(a), lax::sin(n), lax::cos(a), lax::cos(n), lax::tan(a), lax::tan(n)};
      return lax::concatenate(terms, 0);
    };
    Array got = mj::jit(f)(x), want = f(x);
    const double tol = d == mj::f32 ? 1e-6 : 1e-14;
    EXPECT_LE(err(got, want, tol, tol), 8.0) << mj::dtype_name(d);
    std::vector<double> b;
    for (int r = 0; r < 7; ++r) b.insert(b.end(), big.begin(), big.end());  // vector lanes and a tail
    Array xb = mj::array(b, {int64_t(b.size())}, d);
    auto g = [](const Array& a) {
      Array n = lax::neg(a);
      return lax::concatenate({lax::sin(a), lax::sin(n), lax::cos(a), lax::cos(n), lax::tan(a), lax::tan(n)}, 0);
    };
    EXPECT_LE(err(mj::jit(g)(xb), g(xb), tol, tol), 8.0) << "huge arguments, " << mj::dtype_name(d);
  }
}

}  // namespace

namespace {

TEST(TranscendentalOutlining, OutlinedFunctionsGetTheCleanupPasses) {
  // digamma's and polygamma's loops keep their state in stack slots in KIR; the light pipeline's
  // SROA must still run on them: their optimized LLVM IR has no alloca left.
  mj::JitOptions opt;
  opt.keep_llvm_ir = true;
  Array x = mj::full({4096}, 2.5, mj::f64);
  auto f = [](const Array& a) {
    Array y = lax::add(lax::digamma(a), lax::polygamma(2, a));  // each used twice: not inlined
    return lax::add(lax::polygamma(2, y), lax::digamma(lax::add(a, y)));
  };
  const std::string text = mj::jit(f, opt).lower(x).compile().as_text(true);
  const std::string ir = text.substr(std::min(text.size(), text.find("; ModuleID")));
  int checked = 0;
  for (const char* fn : {"@mj_math_digamma_f64x", "@mj_math_polygamma_f64x"}) {
    for (size_t p = ir.find("define internal"); p != std::string::npos; p = ir.find("define internal", p + 1)) {
      const std::string head = ir.substr(p, ir.find('\n', p) - p);
      if (head.find(fn) == std::string::npos) continue;
      const std::string body = ir.substr(p, ir.find("\n}\n", p) - p);
      EXPECT_EQ(body.find("alloca"), std::string::npos) << fn << ":\n" << body.substr(0, 3000);
      EXPECT_NE(body.find("br "), std::string::npos) << fn << ": its loop is gone";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2) << ir.substr(0, 2000);
  Array xs = lax::add(mj::astype(mj::arange(4096), mj::f64), mj::full({4096}, 0.25, mj::f64));
  EXPECT_LE(err(mj::jit(f)(xs), f(xs), 1e-12, 1e-12), 1.0);
}

}  // namespace
