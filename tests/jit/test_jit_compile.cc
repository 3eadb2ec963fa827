// End-to-end tests of the compiled jit: programs compiled to native code and run, checked
// against the same functions evaluated eagerly (the reference), plus the staged API's surface.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include <minijax/minijax.h>

#include "core/bodies.h"

namespace {

using mj::Array;

Array randn(const mj::Shape& shape, uint32_t seed, mj::DType dt = mj::f32) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  Array a = mj::zeros(shape, mj::f64);
  double* p = a.mutable_data<double>();
  for (int64_t i = 0; i < a.size(); ++i) p[i] = u(gen);
  return mj::astype(a, dt);
}

// Max |a - b| / (atol + rtol |b|) over elements (NaN == NaN).
double rel_err(const Array& a, const Array& b, double atol = 0, double rtol = 0) {
  EXPECT_EQ(a.aval().str(), b.aval().str());
  Array x = mj::astype(a, mj::f64), y = mj::astype(b, mj::f64);
  double worst = 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    double u = x.data<double>()[i], v = y.data<double>()[i];
    if (std::isnan(u) && std::isnan(v)) continue;
    if (u == v) continue;
    worst = std::max(worst, std::fabs(u - v) / (atol + rtol * std::fabs(v)));
  }
  return worst;
}

bool bit_equal(const Array& a, const Array& b) {
  if (a.aval().str() != b.aval().str()) return false;
  return std::memcmp(a.raw_data(), b.raw_data(), size_t(a.aval().nbytes())) == 0;
}

TEST(JitCompile, ElementwiseChainIsBitIdenticalToEager) {
  auto f = [](const Array& x, const Array& y) {
    Array a = x * y + 1.0;
    Array b = mj::maximum(a, x) - mj::minimum(y, 0.5) / (mj::abs(x) + 1.0);
    return -b * 3.0;
  };
  for (int64_t n : {1, 7, 16, 33, 1000, 100003}) {
    Array x = randn({n}, 1), y = randn({n}, 2);
    Array want = f(x, y);
    Array got = mj::jit(f)(x, y);
    EXPECT_TRUE(bit_equal(got, want)) << "n=" << n;
  }
}

TEST(JitCompile, RankTwoWithBroadcastAndReductionsMatchEager) {
  auto f = [](const Array& x, const Array& b) {
    Array h = mj::maximum(x + b, 0.0);  // bias broadcast over rows
    return std::pair{mj::sum(h, 1), mj::sum(h, 0)};
  };
  Array x = randn({37, 53}, 3), b = randn({53}, 4);
  auto [r1, r0] = f(x, b);
  auto [c1, c0] = mj::jit(f)(x, b);
  // Reductions: f32 partial sums in a fixed order vs eager's double accumulation: a bound
  // growing with the length (53 and 37 terms of magnitude <= 4): 64 * 2^-24 relative to sum|x|.
  EXPECT_LE(rel_err(c1, r1, 53 * 4 * 64 * 6e-8, 0), 1.0);
  EXPECT_LE(rel_err(c0, r0, 37 * 4 * 64 * 6e-8, 0), 1.0);
}

TEST(JitCompile, MatmulCallsTheGemmAndMatchesEager) {
  auto f = [](const Array& a, const Array& b) { return mj::matmul(a, b); };
  Array a = randn({64, 96}, 5), b = randn({96, 40}, 6);
  Array want = f(a, b);
  Array got = mj::jit(f)(a, b);
  EXPECT_TRUE(bit_equal(got, want));  // the same GEMM library call with the same flags
  auto c = mj::jit(f).lower(a, b).compile();
  EXPECT_NE(c.as_text().find("[library call] dot_general: gemm NN"), std::string::npos) << c.as_text();
  // flops: 2 m n k by hand
  EXPECT_DOUBLE_EQ(c.cost_analysis().at("flops"), 2.0 * 64 * 40 * 96);
}

TEST(JitCompile, ScanCarriesInPlaceAndMatchesEager) {
  auto f = [](const Array& c0, const Array& xs) {
    return mj::scan([](const Array& c, const Array& x) { return std::pair{c * x + 1.0, c}; }, c0, xs);
  };
  Array c0 = randn({}, 7), xs = randn({1000}, 8);
  auto [c, ys] = f(c0, xs);
  auto [cc, cys] = mj::jit(f)(c0, xs);
  EXPECT_TRUE(bit_equal(cc, c));
  EXPECT_TRUE(bit_equal(cys, ys));
}

TEST(JitCompile, DonatedInputHoldsTheOutputAndCannotBeReadAgain) {
  auto f = [](const Array& p, const Array& g) { return p - g * 0.5; };
  Array p = randn({1024}, 9), g = randn({1024}, 10);
  Array want = f(p, g);
  auto jf = mj::jit(f, mj::JitOptions{.name = "sgd", .donate_argnums = {0}});
  auto comp = jf.lower(p, g).compile();
  EXPECT_EQ(comp.memory_analysis().alias_size_in_bytes, 1024 * 4);
  Array got = jf(p, g);
  EXPECT_TRUE(bit_equal(got, want));
  EXPECT_THROW(p.data<float>(), mj::ValueError);
}

TEST(JitCompile, StaticArgumentsRetraceAndArraysCannotBeStatic) {
  auto f = [](const Array& x, int k) { return x * double(k); };
  auto jf = mj::jit(f);
  Array x = randn({8}, 11);
  EXPECT_TRUE(bit_equal(jf(x, 2), f(x, 2)));
  EXPECT_TRUE(bit_equal(jf(x, 3), f(x, 3)));
  EXPECT_TRUE(bit_equal(jf(x, 2), f(x, 2)));
  EXPECT_EQ(jf.trace_count(), 2);
  auto bad = mj::jit([](const Array& a) { return a; }, mj::JitOptions{.static_argnums = {0}});
  EXPECT_THROW(bad(x), mj::TypeError);
}

TEST(JitCompile, ConcurrentCallsTraceAndCompileOnce) {
  auto jf = mj::jit([](const Array& x) { return x * x * 2.0; });
  Array x = randn({256}, 12);
  Array want = x * x * 2.0;
  std::vector<std::thread> ts;
  std::vector<Array> outs(4);
  for (int t = 0; t < 4; ++t) ts.emplace_back([&, t] { outs[size_t(t)] = jf(x); });
  for (auto& t : ts) t.join();
  EXPECT_EQ(jf.trace_count(), 1);
  for (auto& o : outs) EXPECT_TRUE(bit_equal(o, want));
}

}  // namespace

namespace {

// dot_general's transpose rule gives a weight gradient as [out, in] followed by a transpose; the
// compiler computes the swapped product instead (pack_dot_operands): no transpose kernel is left
// and the values equal eager's.
TEST(JitCompile, WeightGradientIsOneSwappedGemmWithoutTransposeKernel) {
  Array x = randn({16, 24}, 13), w = randn({24, 8}, 14);
  auto loss = [](const Array& w_, const Array& x_) { return mj::sum(mj::square(mj::matmul(x_, w_))); };
  auto g = mj::grad(loss);
  Array want = g(w, x);
  auto compiled = mj::jit(g).lower(w, x).compile();
  Array got = compiled(w, x);
  EXPECT_LE(rel_err(got, want, 1e-4, 1e-5), 1.0);
  const mj::Jaxpr& prog = compiled.executable()->program;
  int transposes = 0;
  for (auto& e : prog.eqns)
    if (e.primitive->name == "fusion")
      for (auto& be : mj::subjaxprs(e).at(0).jaxpr->jaxpr->eqns) transposes += be.primitive->name == "transpose";
  EXPECT_EQ(transposes, 0) << compiled.as_text();
  EXPECT_NE(compiled.as_text().find("gemm TN batch 1 m 24 n 8 k 16"), std::string::npos) << compiled.as_text();
}

// A product of two transposed f32 operands (lhs stored [k, m], rhs stored [n, k]) is computed as
// the transpose of the swapped product, a GEMM without transposes (pack_dot_operands). Oracle: the
// eager dot_general (core/primitives), which multiplies in double.
TEST(JitCompile, DoublyTransposedProductIsSwappedNNGemmAndTranspose) {
  Array a = randn({24, 16}, 15), b = randn({8, 24}, 16);  // op(a) = a^T [16, 24], op(b) = b^T [24, 8]
  auto f = [](const Array& x, const Array& y) {
    return mj::lax::dot_general(x, y, mj::lax::DotDimensionNumbers{{0}, {1}, {}, {}});
  };
  Array want = f(a, b);
  auto compiled = mj::jit(f).lower(a, b).compile();
  Array got = compiled(a, b);
  ASSERT_EQ(got.aval().str(), "f32[16,8]");
  EXPECT_LE(rel_err(got, want, 1e-4, 1e-5), 1.0);
  EXPECT_NE(compiled.as_text().find("gemm NN batch 1 m 8 n 16 k 24"), std::string::npos) << compiled.as_text();
  EXPECT_EQ(compiled.as_text().find("gemm TT"), std::string::npos) << compiled.as_text();
  // f64 goes to OpenBLAS, which packs both operands anyway: left as one TT GEMM.
  Array a64 = mj::astype(a, mj::f64), b64 = mj::astype(b, mj::f64);
  auto c64 = mj::jit(f).lower(a64, b64).compile();
  EXPECT_NE(c64.as_text().find("gemm TT batch 1 m 16 n 8 k 24"), std::string::npos) << c64.as_text();
  EXPECT_LE(rel_err(c64(a64, b64), f(a64, b64), 1e-12, 1e-12), 1.0);
}

}  // namespace

namespace {

// The README's staged-API example, as written there, with its claims checked: the cost counts
// (by hand), the argument and output bytes (f32: 4 bytes per element), what the allocator
// obtained during the call, and the result against the eager function.
TEST(JitCompile, ReadmeStagedExample) {
  auto f = mj::jit([](const mj::Array& a, const mj::Array& b) { return mj::tanh(mj::matmul(a, b)) * 2.0; });
  auto compiled = f.lower(mj::ShapeDtypeStruct{{128, 512}, mj::f32}, mj::ShapeDtypeStruct{{512, 256}, mj::f32})
                      .compile();
  std::map<std::string, double> cost = compiled.cost_analysis();
  // XLA's HloCostAnalysis counting: 2 m n k for the product, 1 per element for the multiply, tanh
  // among the transcendentals only.
  const double mnk2 = 2.0 * 128 * 512 * 256, outs = 128.0 * 256;
  EXPECT_EQ(cost.at("flops"), mnk2 + outs);
  EXPECT_EQ(cost.at("transcendentals"), outs);
  mj::CompiledMemoryStats mem = compiled.memory_analysis();
  EXPECT_EQ(mem.argument_size_in_bytes, (128 * 512 + 512 * 256) * 4);
  EXPECT_EQ(mem.output_size_in_bytes, 128 * 256 * 4);
  EXPECT_NE(compiled.as_text().find("gemm NN"), std::string::npos) << compiled.as_text();
  Array a = randn({128, 512}, 21), b = randn({512, 256}, 22);
  mj::reset_peak_memory_stats(0);
  const auto before = mj::memory_stats(0, mj::MemoryKind::device);
  Array r = compiled(a, b);
  mj::block_until_ready(r);
  const auto after = mj::memory_stats(0, mj::MemoryKind::device);
  Array want = mj::tanh(mj::matmul(a, b)) * 2.0;  // eager
  EXPECT_LE(rel_err(r, want, 1e-4, 1e-5), 1.0);
  // The call obtained its output and the planned temporaries, nothing else; r keeps the output.
  EXPECT_EQ(after.bytes_in_use - before.bytes_in_use, mem.output_size_in_bytes);
  EXPECT_EQ(after.peak_bytes_in_use, before.bytes_in_use + mem.output_size_in_bytes + mem.temp_size_in_bytes);
}

}  // namespace
