// minijax tests: user programs under jit (odd shapes and dtypes, loops, donation, transformations)
// compared with the same functions evaluated eagerly (the oracle unless a comment names another).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include <minijax/minijax.h>

namespace {

using mj::Array;
using mj::ShapeDtypeStruct;

Array randn(const mj::Shape& shape, uint32_t seed, mj::DType dt = mj::f32) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  Array a = mj::zeros(shape, mj::f64);
  double* p = a.mutable_data<double>();
  for (int64_t i = 0; i < a.size(); ++i) p[i] = u(gen);
  return mj::astype(a, dt);
}

// Max |a - b| / (atol + rtol |b|) over elements (NaN == NaN, equal values 0); -1 on aval mismatch.
double err(const Array& a, const Array& b, double atol = 0, double rtol = 0) {
  if (a.aval().str() != b.aval().str()) return -1;
  Array x = mj::astype(a, mj::f64), y = mj::astype(b, mj::f64);
  double worst = 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    double u = x.data<double>()[i], v = y.data<double>()[i];
    if ((std::isnan(u) && std::isnan(v)) || u == v) continue;
    worst = std::max(worst, std::fabs(u - v) / (atol + rtol * std::fabs(v)));
  }
  return worst;
}

bool bit_equal(const Array& a, const Array& b) {
  if (a.aval().str() != b.aval().str()) return false;
  return std::memcmp(a.raw_data(), b.raw_data(), size_t(a.aval().nbytes())) == 0;
}

#define EXPECT_SAME(got, want) EXPECT_TRUE(bit_equal(got, want)) << "got " << (got) << "\nwant " << (want)

}  // namespace


// ==== UserPrograms: programs that once compiled wrongly ===========================================================

// A product with a zero-size contracting dim is a [4, 5] array of zeros (eager; lax.dot_general).
// Compiled: ValueError "reached the GEMM call unpacked" (jit/passes/dot_layout.cc gemm_layout rejects
// ld = 0 for k = 0, so the k == 0 path of jit/codegen/lower/dot.cc is never reached).
TEST(UserProgramRegression, MatmulWithZeroContractionDim) {
  auto f = [](const Array& a, const Array& b) { return mj::matmul(a, b); };
  Array a = mj::ones({4, 0}), b = mj::ones({0, 5});
  EXPECT_SAME(mj::jit(f)(a, b), f(a, b));
}

// The same jitted function (one traced body, so one nested scan/cond/while jaxpr with the same
// Vars) called twice inside an outer jit: inline_calls inlines both pjits, their nested bodies stay
// shared, and the buffer plan (one Var-keyed map over all bodies) confuses the two copies.
TEST(UserProgramRegression, InnerJitScanCalledTwiceInsideJit) {
  auto inner = mj::jit([](const Array& c0, const Array& xs) {
    return mj::scan([](const Array& c, const Array& x) { return std::pair{c * 0.5 + x, c}; }, c0, xs);
  });
  auto outer = [&](const Array& a, const Array& b, const Array& xa, const Array& xb) {
    auto [ca, ya] = inner(a, xa);
    auto [cb, yb] = inner(b, xb);
    return std::tuple{ca, ya, cb, yb};
  };
  Array a = randn({4}, 1), b = randn({4}, 2), xa = randn({6, 4}, 3), xb = randn({6, 4}, 4);
  auto want = outer(a, b, xa, xb);
  auto got = mj::jit(outer)(a, b, xa, xb);  // throws "a loop slice used outside its loop"
  EXPECT_SAME(std::get<0>(got), std::get<0>(want));
  EXPECT_SAME(std::get<1>(got), std::get<1>(want));
  EXPECT_SAME(std::get<2>(got), std::get<2>(want));
  EXPECT_SAME(std::get<3>(got), std::get<3>(want));
}

// As above with cond and while_loop: no error, silently wrong values (the first call's result is
// garbage or its input unchanged).
TEST(UserProgramRegression, InnerJitCondAndWhileCalledTwiceInsideJit) {
  auto inner = mj::jit([](const Array& p, const Array& x) {
    return mj::cond(p, [](const Array& v) { return v * 2.0 + 1.0; }, [](const Array& v) { return v - 1.0; }, x);
  });
  auto outer = [&](const Array& p, const Array& a, const Array& b) { return std::pair{inner(p, a), inner(p, b)}; };
  Array p = mj::array({1}, {}, mj::bool_), a = mj::array({1.f, 2.f, 3.f}), b = mj::array({10.f, 20.f, 30.f});
  auto got = mj::jit(outer)(p, a, b);
  EXPECT_SAME(got.first, mj::array({3.f, 5.f, 7.f}));  // by hand: 2 a + 1
  EXPECT_SAME(got.second, mj::array({21.f, 41.f, 61.f}));
  auto winner = mj::jit([](const Array& x) {
    return mj::while_loop([](const Array& v) { return mj::sum(v) < 1000.0; }, [](const Array& v) { return v * 2.0; }, x);
  });
  auto wouter = [&](const Array& u, const Array& v) { return std::pair{winner(u), winner(v)}; };
  auto wgot = mj::jit(wouter)(a, b);
  EXPECT_SAME(wgot.first, mj::array({256.f, 512.f, 768.f}));  // by hand: doubled until the sum >= 1000
  EXPECT_SAME(wgot.second, mj::array({320.f, 640.f, 960.f}));
}

// grad(jit(f)) with a scan over a checkpoint whose policy saves or offloads a named value: the
// eager pjit executor compiles the forward program, whose two scans (from partial evaluation)
// share body Vars; compiling it throws "a loop slice used outside its loop". jit(grad(f)) works.
TEST(UserProgramRegression, GradOfJitWithNamedCheckpointPolicyInScan) {
  namespace cp = mj::checkpoint_policies;
  for (int variant = 0; variant < 2; ++variant) {
    auto f = [variant](const Array& w, const Array& xs) {
      mj::PolicyPtr pol = variant == 0
                              ? cp::save_and_offload_only_these_names({}, {"gates"}, "device", "pinned_host")
                              : cp::save_only_these_names({"gates"});
      auto body = mj::checkpoint(
          [&](const Array& c, const Array& x) {
            Array g = mj::checkpoint_name(mj::tanh(c * w + x), "gates");
            return mj::sin(g) * c + g;
          },
          mj::CheckpointOptions{.policy = pol});
      auto [c, ys] = mj::scan([&](const Array& c, const Array& x) { return std::pair{body(c, x), mj::None{}}; },
                              mj::ones({5}), xs);
      return mj::sum(c * c);
    };
    Array w = randn({5}, 90), xs = randn({9, 5}, 91);
    Array want = mj::grad(f)(w, xs);
    EXPECT_LE(err(mj::jit(mj::grad(f))(w, xs), want, 1e-5, 1e-5), 1.0) << variant;
    try {
      EXPECT_LE(err(mj::grad(mj::jit(f))(w, xs), want, 1e-5, 1e-5), 1.0) << variant;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "policy " << variant << ": " << e.what();
    }
  }
}

// ==== UserPrograms: behaviours checked and worth keeping (these pass) ==========================

TEST(UserPrograms, SizeZeroElementwiseAndReductions) {
  auto f = [](const Array& x) { return std::tuple{x * 2.0 + 1.0, mj::sum(x, 1), mj::sum(x, 0)}; };
  Array x = mj::zeros({3, 0});
  auto [a, b, c] = f(x);
  auto [ja, jb, jc] = mj::jit(f)(x);
  EXPECT_SAME(ja, a);
  EXPECT_SAME(jb, b);  // sum over an empty axis: 0 (eager)
  EXPECT_SAME(jc, c);  // f32[0]
}

TEST(UserPrograms, DotGeneralNonContiguousDims) {
  // lhs [b=2, k=3, m=4, k2=5], rhs [k2=5, n=6, b=2, k=3]: contract (1,3) with (3,0), batch 0 with 2.
  auto f = [](const Array& l, const Array& r) {
    return mj::lax::dot_general(l, r, {{1, 3}, {3, 0}, {0}, {2}});
  };
  Array l = randn({2, 3, 4, 5}, 2), r = randn({5, 6, 2, 3}, 3);
  Array want = f(l, r);
  Array got = mj::jit(f)(l, r);
  EXPECT_LE(err(got, want, 1e-5, 1e-5), 1.0);
}

TEST(UserPrograms, IntegerEdgeCases) {
  auto f = [](const Array& a, const Array& b) {
    return std::tuple{a / b, a % b, mj::lax::shift_left(a, b), mj::lax::shift_right_logical(a, b),
                      mj::prod(a), mj::sum(a)};
  };
  Array a = mj::array({7, -7, std::numeric_limits<int32_t>::min(), 5, -1, 100000, 3, 65536}, {8}, mj::i32);
  Array b = mj::array({0, 2, -1, 33, -3, 7, 31, 2}, {8}, mj::i32);
  auto want = f(a, b);
  auto got = mj::jit(f)(a, b);
  EXPECT_SAME(std::get<0>(got), std::get<0>(want));
  EXPECT_SAME(std::get<1>(got), std::get<1>(want));
  EXPECT_SAME(std::get<2>(got), std::get<2>(want));
  EXPECT_SAME(std::get<3>(got), std::get<3>(want));
  EXPECT_SAME(std::get<4>(got), std::get<4>(want));
  EXPECT_SAME(std::get<5>(got), std::get<5>(want));
}

TEST(UserPrograms, ConversionsOutOfRange) {
  auto f = [](const Array& x) {
    return std::tuple{mj::astype(x, mj::i32), mj::astype(x, mj::u32), mj::astype(x, mj::bf16), mj::astype(x, mj::bool_)};
  };
  Array x = mj::array({3e9, -3e9, NAN, INFINITY, -INFINITY, -0.0, 2.5, -2.5, 4294967295.0, 1e-45}, {10}, mj::f32);
  auto want = f(x);
  auto got = mj::jit(f)(x);
  EXPECT_SAME(std::get<0>(got), std::get<0>(want));
  EXPECT_SAME(std::get<1>(got), std::get<1>(want));
  EXPECT_SAME(std::get<2>(got), std::get<2>(want));
  EXPECT_SAME(std::get<3>(got), std::get<3>(want));
}

TEST(UserPrograms, Bf16ChainAndReductions) {
  auto f = [](const Array& x) { return std::pair{mj::tanh(x) * x + 1.0, mj::sum(x, 0)}; };
  Array x = randn({300, 7}, 10, mj::bf16);
  auto [a, b] = f(x);
  auto [ja, jb] = mj::jit(f)(x);
  EXPECT_LE(err(ja, a, 0, 1.0 / 64), 1.0);
  EXPECT_LE(err(jb, b, 0.1, 1.0 / 32), 1.0) << jb << b;
}

TEST(UserPrograms, F64Transcendentals) {
  auto f = [](const Array& x) {
    return std::tuple{mj::exp(x), mj::log(mj::abs(x) + 0.1), mj::tanh(x), mj::sin(x * 10.0), mj::erf(x)};
  };
  Array x = randn({1000}, 11, mj::f64);
  auto want = f(x);
  auto got = mj::jit(f)(x);
  EXPECT_LE(err(std::get<0>(got), std::get<0>(want), 1e-15, 1e-14), 1.0);
  EXPECT_LE(err(std::get<1>(got), std::get<1>(want), 1e-15, 1e-14), 1.0);
  EXPECT_LE(err(std::get<2>(got), std::get<2>(want), 1e-15, 1e-14), 1.0);
  EXPECT_LE(err(std::get<3>(got), std::get<3>(want), 1e-15, 1e-14), 1.0);
  EXPECT_LE(err(std::get<4>(got), std::get<4>(want), 1e-15, 1e-14), 1.0);
}

TEST(UserPrograms, IndexOps) {
  auto f = [](const Array& x) {
    Array p = mj::lax::pad(x, mj::scalar(-1.0), {{-1, 2, 1}, {2, -1, 0}});
    Array s = mj::lax::slice(x, {1, 0}, {5, 7}, {2, 3});
    Array c = mj::concatenate({x, mj::zeros({0, 7}), mj::flip(x, 1)}, 0);
    return std::tuple{p, s, c, mj::cumsum(x, 0), mj::lax::cumsum(x, 1, true)};
  };
  Array x = randn({5, 7}, 15);
  auto want = f(x);
  auto got = mj::jit(f)(x);
  EXPECT_SAME(std::get<0>(got), std::get<0>(want));
  EXPECT_SAME(std::get<1>(got), std::get<1>(want));
  EXPECT_SAME(std::get<2>(got), std::get<2>(want));
  EXPECT_LE(err(std::get<3>(got), std::get<3>(want), 1e-6, 1e-6), 1.0);
  EXPECT_LE(err(std::get<4>(got), std::get<4>(want), 1e-6, 1e-6), 1.0);
}


TEST(UserPrograms, DynamicUpdateSliceInFori) {
  auto f = [](const Array& buf, const Array& rows) {
    return mj::fori_loop(0, 6, [&](const Array& i, const Array& b) {
      Array r = mj::lax::dynamic_slice(rows, {i, mj::scalar(0, mj::i32)}, {1, 4});
      return mj::lax::dynamic_update_slice(b, r * 2.0, {i * 2 - 1, mj::scalar(0, mj::i32)});
    }, buf);
  };
  Array buf = mj::zeros({9, 4}), rows = randn({6, 4}, 16);
  EXPECT_SAME(mj::jit(f)(buf, rows), f(buf, rows));
}

TEST(UserPrograms, ScatterGatherInScan) {
  auto f = [](const Array& table, const Array& idx) {
    return mj::scan([&](const Array& t, const Array& i) {
      Array g = mj::lax::gather(t, i);
      return std::pair{mj::lax::scatter_add(t, i, g * 0.5 + 1.0), mj::sum(g)};
    }, table, idx);
  };
  Array table = randn({5, 3}, 17);
  Array idx = mj::array({0, 0, 4, 1, 1, 1, 3, 3, 2, 0, 4, 4}, {4, 3}, mj::i32);
  auto [a, b] = f(table, idx);
  auto [ja, jb] = mj::jit(f)(table, idx);
  EXPECT_LE(err(ja, a, 1e-6, 1e-6), 1.0) << ja << a;
  EXPECT_LE(err(jb, b, 1e-6, 1e-6), 1.0);
}

TEST(UserPrograms, WhileZeroAndManyIterations) {
  auto f = [](const Array& x, const Array& n) {
    auto r = mj::while_loop([](const std::pair<Array, Array>& c) { return c.second > 0; },
                            [](const std::pair<Array, Array>& c) {
                              return std::pair{c.first * 0.5 + 1.0, c.second - 1};
                            },
                            std::pair{x, n});
    return r.first;
  };
  Array x = randn({10}, 18);
  for (int n : {0, 1, 37}) {
    Array nn = mj::scalar(n, mj::i32);
    EXPECT_SAME(mj::jit(f)(x, nn), f(x, nn)) << n;
  }
}

TEST(UserPrograms, ScanLengthZeroAndReverse) {
  auto f = [](const Array& c0, const Array& xs) {
    return mj::scan([](const Array& c, const Array& x) { return std::pair{c + x, c * x}; }, c0, xs,
                    mj::ScanOptions{.reverse = true});
  };
  Array c0 = randn({3}, 20);
  for (int64_t n : {0, 1, 5}) {
    Array xs = randn({n, 3}, 21);
    auto [c, ys] = f(c0, xs);
    auto [jc, jys] = mj::jit(f)(c0, xs);
    EXPECT_SAME(jc, c) << n;
    EXPECT_SAME(jys, ys) << n;
  }
}


TEST(UserPrograms, JitOfCheckpointGradInScan) {
  auto f = [](const Array& w, const Array& xs) {
    auto body = mj::checkpoint([](const Array& c, const Array& wx) { return mj::sin(c * wx) + c; });
    auto [c, ys] = mj::scan([&](const Array& c, const Array& x) { return std::pair{body(c, w * x), mj::None{}}; },
                            mj::zeros({3}), xs);
    return mj::sum(c);
  };
  Array w = randn({3}, 25), xs = randn({7, 3}, 26);
  Array g = mj::grad(f)(w, xs);
  EXPECT_LE(err(mj::jit(mj::grad(f))(w, xs), g, 1e-6, 1e-5), 1.0);
}


TEST(UserPrograms, DonatedInputReadAtOtherIndices) {
  // out = rev(x) + x with x donated: computing the output in place of x would overwrite elements
  // still to be read.
  auto f = [](const Array& x) { return mj::flip(x, 0) + x * 0.5; };
  Array x = randn({1000}, 27);
  Array want = f(x);
  Array got = mj::jit(f, mj::JitOptions{.donate_argnums = {0}})(x);
  EXPECT_SAME(got, want);
  Array m = randn({64, 64}, 28);
  auto g = [](const Array& a) { return mj::transpose(a) * 2.0; };
  Array gw = g(m);
  EXPECT_SAME(mj::jit(g, mj::JitOptions{.donate_argnums = {0}})(m), gw);
}

TEST(UserPrograms, NoRetraceForSameAvals) {
  auto jf = mj::jit([](const Array& x, double s) { return x * s; });
  Array x = randn({8}, 31);
  jf(x, 2.0);
  jf(x * 1.0, 2.0);
  jf(jf(x, 2.0), 2.0);
  EXPECT_EQ(jf.trace_count(), 1);
}

TEST(UserPrograms, TemporaryReadAtIdentityAndReversed) {
  // y dies at z, z has y's size, but z reads y through rev as well: z may not overwrite y.
  auto f = [](const Array& x) {
    Array y = mj::exp(x);
    Array z = mj::flip(y, 0) - y;
    return mj::sum(z * z);
  };
  Array x = randn({4096}, 40);
  EXPECT_LE(err(mj::jit(f)(x), f(x), 1e-3, 1e-5), 1.0);
}

TEST(UserPrograms, ScanCarrySwap) {
  auto f = [](const Array& a, const Array& b) {
    auto [c, ys] = mj::scan([](const std::pair<Array, Array>& c, mj::None) {
      return std::pair{std::pair{c.second, c.first + c.second}, mj::None{}};
    }, std::pair{a, b}, mj::ScanOptions{.length = 5});
    return c;
  };
  Array a = mj::array({1.f, 2.f, 3.f}), b = mj::array({10.f, 20.f, 30.f});
  auto want = f(a, b);
  auto got = mj::jit(f)(a, b);
  EXPECT_SAME(got.first, want.first);
  EXPECT_SAME(got.second, want.second);
}

TEST(UserPrograms, WhileCarrySwapAndRotate) {
  auto f = [](const Array& a, const Array& b, const Array& c) {
    using T = std::tuple<Array, Array, Array, Array>;
    T r = mj::while_loop([](const T& t) { return std::get<3>(t) < 4; },
                         [](const T& t) {
                           return T{std::get<1>(t), std::get<2>(t), std::get<0>(t) * 2.0, std::get<3>(t) + 1};
                         },
                         T{a, b, c, mj::scalar(0, mj::i32)});
    return std::tuple{std::get<0>(r), std::get<1>(r), std::get<2>(r)};
  };
  Array a = mj::array({1.f, 2.f}), b = mj::array({3.f, 4.f}), c = mj::array({5.f, 6.f});
  auto want = f(a, b, c);
  auto got = mj::jit(f)(a, b, c);
  EXPECT_SAME(std::get<0>(got), std::get<0>(want));
  EXPECT_SAME(std::get<1>(got), std::get<1>(want));
  EXPECT_SAME(std::get<2>(got), std::get<2>(want));
}

TEST(UserPrograms, ScanCarryIsAlsoYAndReversedCarry) {
  auto f = [](const Array& c0, const Array& xs) {
    return mj::scan([](const Array& c, const Array& x) {
      Array n = mj::flip(c, 0) + x;
      return std::pair{n, n};
    }, c0, xs, mj::ScanOptions{.unroll = 3});
  };
  Array c0 = mj::array({1.f, 2.f, 3.f, 4.f}), xs = randn({7, 4}, 41);
  auto [c, ys] = f(c0, xs);
  auto [jc, jys] = mj::jit(f)(c0, xs);
  EXPECT_SAME(jc, c);
  EXPECT_SAME(jys, ys);
}

TEST(UserPrograms, OutputsAliasingEachOtherInputsAndConstants) {
  Array k = randn({6}, 42);
  auto f = [k](const Array& x) { return std::tuple{x, x, k, k * 1.0, x}; };
  Array x = randn({6}, 43);
  auto got = mj::jit(f)(x);
  EXPECT_SAME(std::get<0>(got), x);
  EXPECT_SAME(std::get<1>(got), x);
  EXPECT_SAME(std::get<2>(got), k);
  EXPECT_SAME(std::get<3>(got), k);
  // with x donated, x's buffer may hold one output at most; the others still read x's values
  Array x2 = randn({6}, 43);
  auto got2 = mj::jit(f, mj::JitOptions{.donate_argnums = {0}})(x2);
  EXPECT_SAME(std::get<0>(got2), std::get<1>(got));
  EXPECT_SAME(std::get<1>(got2), std::get<1>(got));
  EXPECT_SAME(std::get<4>(got2), std::get<1>(got));
}

TEST(UserPrograms, DonatedInputUsedByDotAndOutput) {
  auto f = [](const Array& w, const Array& x) {
    Array h = mj::matmul(x, w);
    return std::pair{w - mj::matmul(mj::transpose(x), h) * 0.01, h};
  };
  Array w = randn({32, 32}, 44), x = randn({32, 32}, 45);
  auto want = f(w, x);
  Array w2 = w * 1.0;
  auto got = mj::jit(f, mj::JitOptions{.donate_argnums = {0}})(w2, x);
  EXPECT_LE(err(got.first, want.first, 1e-5, 1e-5), 1.0);
  EXPECT_LE(err(got.second, want.second, 1e-5, 1e-5), 1.0);
}

TEST(UserPrograms, IntegerReductionsWrap) {
  auto f = [](const Array& x) {
    return std::tuple{mj::sum(x), mj::max(x, 0), mj::min(x, 0), mj::prod(x, 0), mj::cumsum(x, 0)};
  };
  std::vector<double> v;
  for (int i = 0; i < 5000; ++i) v.push_back(double((i * 2654435761u) % 2000000000u) - 1e9);
  Array x = mj::array(v, {5000}, mj::i32);
  auto want = f(x);
  auto got = mj::jit(f)(x);
  EXPECT_SAME(std::get<0>(got), std::get<0>(want));
  EXPECT_SAME(std::get<1>(got), std::get<1>(want));
  EXPECT_SAME(std::get<2>(got), std::get<2>(want));
  EXPECT_SAME(std::get<3>(got), std::get<3>(want));
  EXPECT_SAME(std::get<4>(got), std::get<4>(want));
  Array u = mj::astype(x, mj::u32);
  auto wu = f(u);
  auto gu = mj::jit(f)(u);
  EXPECT_SAME(std::get<0>(gu), std::get<0>(wu));
  EXPECT_SAME(std::get<1>(gu), std::get<1>(wu));
  EXPECT_SAME(std::get<2>(gu), std::get<2>(wu));
}

TEST(UserPrograms, GatherDynamicSliceOutOfRangeClamp) {
  // Staged gather clamps into [0, n - 1] (core/lax.h, gather); dynamic_slice clamps its start
  // (XLA): oracle by hand.
  auto f = [](const Array& x, const Array& i, const Array& s) {
    return std::pair{mj::lax::gather(x, i), mj::lax::dynamic_slice(x, {s, mj::scalar(0, mj::i32)}, {2, 3})};
  };
  Array x = mj::array({{0.f, 1.f, 2.f}, {3.f, 4.f, 5.f}, {6.f, 7.f, 8.f}});
  Array i = mj::array({-1, 5, 1}, {3}, mj::i32);
  Array s = mj::scalar(7, mj::i32);
  auto [g, d] = mj::jit(f)(x, i, s);
  EXPECT_SAME(g, mj::array({{0.f, 1.f, 2.f}, {6.f, 7.f, 8.f}, {3.f, 4.f, 5.f}}));
  EXPECT_SAME(d, mj::array({{3.f, 4.f, 5.f}, {6.f, 7.f, 8.f}}));
}

TEST(UserPrograms, RandomUnderJit) {
  auto f = [](const Array& key) {
    return std::pair{mj::random::uniform(key, {1000}), mj::random::normal(mj::random::fold_in(key, 7), {4, 3})};
  };
  Array key = mj::random::PRNGKey(123);
  auto want = f(key);
  auto got = mj::jit(f)(key);
  EXPECT_SAME(got.first, want.first);
  EXPECT_LE(err(got.second, want.second, 1e-6, 1e-6), 1.0);
}

TEST(UserPrograms, TraceErrorThenRetry) {
  int calls = 0;
  auto jf = mj::jit([&calls](const Array& x) {
    if (++calls == 1) throw mj::ValueError("first trace fails");
    return x + 1.0;
  });
  Array x = mj::ones({3});
  EXPECT_THROW(jf(x), mj::ValueError);
  EXPECT_SAME(jf(x), x + 1.0);
}

TEST(UserPrograms, VeryHighRank) {
  auto f = [](const Array& x) {
    std::vector<int64_t> perm;
    for (int64_t d = 13; d >= 0; --d) perm.push_back(d);
    return std::pair{mj::transpose(x, perm) + 1.0, mj::sum(x, {0, 2, 4, 6, 8, 10, 12})};
  };
  mj::Shape s;
  for (int d = 0; d < 14; ++d) s.push_back(d % 3 == 0 ? 2 : 1);
  s[13] = 3;
  Array x = randn(s, 47);
  auto want = f(x);
  auto got = mj::jit(f)(x);
  EXPECT_SAME(got.first, want.first);
  EXPECT_LE(err(got.second, want.second, 1e-6, 1e-6), 1.0);
}

TEST(UserPrograms, CondInScanWithInPlaceBranch) {
  auto f = [](const Array& buf, const Array& xs) {
    return mj::fori_loop(0, 8, [&](const Array& i, const Array& b) {
      Array x = mj::lax::dynamic_slice(xs, {i}, {1});
      return mj::cond(
          mj::sum(x) > 0,
          [&](const Array& bb) { return mj::lax::dynamic_update_slice(bb, x * 10.0, {i}); },
          [](const Array& bb) { return mj::flip(bb, 0); }, b);
    }, buf);
  };
  Array buf = mj::arange(0, 8, 1, mj::f32), xs = randn({8}, 49);
  EXPECT_SAME(mj::jit(f)(buf, xs), f(buf, xs));
}

TEST(UserPrograms, CostAnalysisElementwiseByHand) {
  auto f = [](const Array& x) { return mj::exp(x) * x + 1.0; };
  auto c = mj::jit(f).lower(ShapeDtypeStruct{{100}, mj::f32}).compile();
  auto cost = c.cost_analysis();
  // XLA's HloCostAnalysis: exp is 1 transcendental per element, mul and add 1 flop each.
  EXPECT_DOUBLE_EQ(cost.at("transcendentals"), 100);
  EXPECT_DOUBLE_EQ(cost.at("flops"), 200);
  EXPECT_DOUBLE_EQ(cost.at("bytes accessed"), 800);  // one fused kernel: read x, write out
}


TEST(UserPrograms, DusOnLiveValueAndUndonatedInputs) {
  auto f = [](const Array& x, const Array& u, const Array& i) {
    Array y = mj::lax::dynamic_update_slice(x, u, {i});
    Array s = mj::lax::scatter_add(x, mj::array({1, 1}, {2}, mj::i32), mj::ones({2}));
    return std::tuple{y, x * 1.0, s};
  };
  Array x = mj::arange(0, 8, 1, mj::f32), u = mj::array({-1.f, -2.f, -3.f}), i = mj::scalar(2, mj::i32);
  Array xcopy = x * 1.0;
  auto want = f(x, u, i);
  auto got = mj::jit(f)(x, u, i);
  EXPECT_SAME(std::get<0>(got), std::get<0>(want));
  EXPECT_SAME(std::get<1>(got), std::get<1>(want));
  EXPECT_SAME(std::get<2>(got), std::get<2>(want));
  EXPECT_SAME(x, xcopy);  // the argument is not donated: unchanged
}

TEST(UserPrograms, WhileBodyReadsCarryAfterUpdatingIt) {
  auto f = [](const Array& a0) {
    using T = std::pair<Array, Array>;
    T r = mj::fori_loop(0, 3, [](const Array& i, const T& t) {
      Array n = mj::lax::dynamic_update_slice(t.first, mj::reshape(mj::astype(i, mj::f32) + 100.0, {1}), {i});
      Array s = mj::lax::slice(t.first, {0}, {3}) + t.second;  // reads the old carry
      return T{n, s};
    }, T{a0, mj::zeros({3})});
    return r;
  };
  Array a0 = mj::array({1.f, 2.f, 3.f, 4.f});
  auto want = f(a0);
  auto got = mj::jit(f)(a0);
  EXPECT_SAME(got.first, want.first);
  EXPECT_SAME(got.second, want.second);
}

TEST(UserPrograms, DonatedXsReadAtOtherIndicesByScanBody) {
  // ys has xs' shape and xs is donated; the body also reads all of xs (closed over).
  auto f = [](const Array& xs) {
    auto [c, ys] = mj::scan([&](const Array& c, const Array& x) {
      return std::pair{c + 1, x + mj::sum(xs) + mj::astype(c, mj::f32)};
    }, mj::scalar(0, mj::i32), xs);
    return ys;
  };
  Array xs = randn({6, 4}, 60);
  Array want = f(xs);
  Array xs2 = xs * 1.0;
  Array got = mj::jit(f, mj::JitOptions{.donate_argnums = {0}})(xs2);
  EXPECT_LE(err(got, want, 1e-5, 1e-6), 1.0) << got << want;
}

TEST(UserPrograms, DotGeneralAllOperandLayouts) {
  // Every permutation of lhs [b, m, k] and rhs [b, k, n] (with the dimension numbers following
  // the dims), sizes 1 included; eager's naive product is the oracle.
  std::vector<std::vector<int64_t>> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (auto [B, M, K, N] : std::vector<std::array<int64_t, 4>>{{2, 3, 4, 5}, {3, 1, 4, 2}, {2, 3, 1, 4}, {1, 5, 3, 1}}) {
    Array l0 = randn({B, M, K}, 64), r0 = randn({B, K, N}, 65);
    for (auto& pl : perms)
      for (auto& pr : perms) {
        auto pos = [](const std::vector<int64_t>& p, int64_t d) {
          return int64_t(std::find(p.begin(), p.end(), d) - p.begin());
        };
        mj::lax::DotDimensionNumbers dn{{pos(pl, 2)}, {pos(pr, 1)}, {pos(pl, 0)}, {pos(pr, 0)}};
        auto f = [dn](const Array& l, const Array& r) { return mj::lax::dot_general(l, r, dn); };
        Array l = mj::transpose(l0, pl) * 1.0, r = mj::transpose(r0, pr) * 1.0;
        Array want = f(l, r);
        Array got = mj::jit(f)(l, r);
        EXPECT_LE(err(got, want, 1e-5, 1e-5), 1.0)
            << B << M << K << N << " pl " << pl[0] << pl[1] << pl[2] << " pr " << pr[0] << pr[1] << pr[2];
      }
  }
}

TEST(UserPrograms, LargeSplitGemmsTransposed) {
  auto nt = [](const Array& a, const Array& b) { return mj::matmul(a, mj::transpose(b)); };
  auto tn = [](const Array& a, const Array& b) { return mj::matmul(mj::transpose(a), b); };
  Array a = randn({300, 64}, 66), b = randn({520, 64}, 67), c = randn({300, 520}, 68);
  EXPECT_LE(err(mj::jit(nt)(a, b), nt(a, b), 1e-4, 1e-5), 1.0);
  EXPECT_LE(err(mj::jit(tn)(a, c), tn(a, c), 1e-4, 1e-5), 1.0);
  Array a64 = mj::astype(a, mj::f64), b64 = mj::astype(b, mj::f64);
  EXPECT_LE(err(mj::jit(nt)(a64, b64), nt(a64, b64), 1e-12, 1e-12), 1.0);
  // batched with the batch dim in the middle of the lhs
  auto bm = [](const Array& l, const Array& r) { return mj::lax::dot_general(l, r, {{2}, {1}, {1}, {0}}); };
  Array l = randn({300, 3, 64}, 69), r = randn({3, 64, 400}, 70);
  EXPECT_LE(err(mj::jit(bm)(l, r), bm(l, r), 1e-4, 1e-5), 1.0);
}

TEST(UserPrograms, LiteralsAndDonationAreInTheExecutableKey) {
  // Two programs that differ only in a literal's last bit, or only in donation, must not share code.
  Array x = mj::ones({4});
  Array a = mj::jit([](const Array& v) { return v * 1.0000001; })(x);
  Array b = mj::jit([](const Array& v) { return v * 1.0000002; })(x);
  EXPECT_SAME(a, x * 1.0000001);
  EXPECT_SAME(b, x * 1.0000002);
  auto g = [](const Array& v) { return v + 3.0; };
  Array y = randn({4}, 71);
  Array r1 = mj::jit(g, mj::JitOptions{.donate_argnums = {0}})(y * 1.0);
  Array r2 = mj::jit(g)(y);
  EXPECT_SAME(r2, g(y));
  EXPECT_SAME(y, y + 0.0);  // y still readable
  EXPECT_SAME(r1, r2);
}


TEST(UserPrograms, NaNPropagationAndSignedZeros) {
  auto f = [](const Array& a, const Array& b) {
    return std::tuple{mj::maximum(a, b), mj::minimum(a, b), mj::max(a, 0), mj::min(b, 0), mj::sign(a),
                      mj::abs(b), mj::round(a * 2.5), mj::clip(a, -1.0, 1.0)};
  };
  std::vector<double> av, bv;
  for (int i = 0; i < 37; ++i) {
    av.push_back(i % 5 == 0 ? NAN : (i % 3 == 0 ? -0.0 : 0.0));
    bv.push_back(i % 7 == 0 ? NAN : (i % 2 == 0 ? 0.0 : -0.0));
  }
  av[3] = 1.5, av[4] = -2.5, bv[8] = 0.5;
  Array a = mj::array(av, {37}), b = mj::array(bv, {37});
  auto want = f(a, b);
  auto got = mj::jit(f)(a, b);
  EXPECT_SAME(std::get<0>(got), std::get<0>(want));
  EXPECT_SAME(std::get<1>(got), std::get<1>(want));
  EXPECT_SAME(std::get<2>(got), std::get<2>(want));
  EXPECT_SAME(std::get<3>(got), std::get<3>(want));
  EXPECT_SAME(std::get<4>(got), std::get<4>(want));
  EXPECT_SAME(std::get<5>(got), std::get<5>(want));
  EXPECT_SAME(std::get<6>(got), std::get<6>(want));
  EXPECT_SAME(std::get<7>(got), std::get<7>(want));
}

TEST(UserPrograms, SignedZeroReduceMax) {
  auto f = [](const Array& x) { return std::pair{mj::max(x, 1), mj::min(x, 1)}; };
  std::vector<double> v;
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 40; ++i) v.push_back((i + r) % 2 ? -0.0 : 0.0);
  Array x = mj::array(v, {4, 40});
  auto want = f(x);
  auto got = mj::jit(f)(x);
  EXPECT_SAME(got.first, want.first);
  EXPECT_SAME(got.second, want.second);
}

TEST(UserPrograms, LongArgmaxTiesAndNaNAcrossBlocks) {
  auto f = [](const Array& x) { return std::tuple{mj::argmax(x, 1), mj::argmin(x, 1), mj::max(x, 1)}; };
  const int64_t n = 9000;
  std::vector<double> v(size_t(4 * n), 0.0);
  // row 0: the max 5 at 7000 and at 2100 (first wins); row 1: NaN at 8999 and at 4500;
  // row 2: all equal; row 3: min -3 at 6001, 17 and 8191.
  v[size_t(7000)] = 5, v[size_t(2100)] = 5;
  v[size_t(n + 8999)] = NAN, v[size_t(n + 4500)] = NAN, v[size_t(n + 10)] = 9;
  v[size_t(3 * n + 6001)] = -3, v[size_t(3 * n + 17)] = -3, v[size_t(3 * n + 8191)] = -3;
  Array x = mj::array(v, {4, n});
  auto want = f(x);
  auto got = mj::jit(f)(x);
  EXPECT_SAME(std::get<0>(got), std::get<0>(want));
  EXPECT_SAME(std::get<1>(got), std::get<1>(want));
  EXPECT_SAME(std::get<2>(got), std::get<2>(want));
  // by hand: first occurrences
  EXPECT_EQ(std::get<0>(got).data<int32_t>()[0], 2100);
  EXPECT_EQ(std::get<0>(got).data<int32_t>()[1], 4500);
  EXPECT_EQ(std::get<0>(got).data<int32_t>()[2], 0);
  EXPECT_EQ(std::get<1>(got).data<int32_t>()[3], 17);
}

TEST(UserPrograms, ParallelBroadcastAndTransposeKernels) {
  auto f = [](const Array& x, const Array& b, const Array& c) {
    return std::tuple{x * b + c, mj::transpose(x) - 1.0, mj::sum(x, 0), mj::sum(mj::exp(x) * c, 1)};
  };
  Array x = randn({257, 301}, 80), b = randn({301}, 81), c = randn({257, 1}, 82);
  auto want = f(x, b, c);
  auto got = mj::jit(f)(x, b, c);
  EXPECT_SAME(std::get<0>(got), std::get<0>(want));
  EXPECT_SAME(std::get<1>(got), std::get<1>(want));
  EXPECT_LE(err(std::get<2>(got), std::get<2>(want), 257 * 2 * 1e-6, 0), 1.0);
  EXPECT_LE(err(std::get<3>(got), std::get<3>(want), 1e-3, 1e-5), 1.0);
}

TEST(UserPrograms, ConcurrentCallsOfOneCompiled) {
  auto f = [](const Array& x) { return mj::sum(mj::tanh(x) * x, 0); };
  Array x = randn({512, 64}, 85);
  auto c = mj::jit(f).lower(x).compile();
  Array want = c(x);
  std::vector<Array> outs(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) ts.emplace_back([&, t] { for (int r = 0; r < 20; ++r) outs[size_t(t)] = c(x); });
  for (auto& t : ts) t.join();
  for (auto& o : outs) EXPECT_SAME(o, want);
}

TEST(UserPrograms, MemoryAnalysisOfScanMatchesAllocator) {
  auto f = [](const Array& c0, const Array& xs) {
    return mj::scan([](const Array& c, const Array& x) {
      Array h = mj::tanh(c * x + 1.0);
      return std::pair{h * 0.5, mj::sum(h)};
    }, c0, xs);
  };
  Array c0 = randn({1024}, 86), xs = randn({16, 1024}, 87);
  auto jf = mj::jit(f);
  auto mem = jf.lower(c0, xs).compile().memory_analysis();
  auto warm = jf(c0, xs);
  const int64_t in_use = mj::memory_stats(0).bytes_in_use;
  mj::reset_peak_memory_stats(0);
  auto r = jf(c0, xs);
  const mj::MemoryStats after = mj::memory_stats(0);
  EXPECT_EQ(mem.output_size_in_bytes, 1024 * 4 + 16 * 4);
  // jit/README.md: "a call obtains its outputs and arenas": the measured peak over the call is
  // the predicted output + temp (sizes here are powers of two: exact size classes).
  EXPECT_EQ(after.peak_bytes_in_use - in_use, mem.output_size_in_bytes + mem.temp_size_in_bytes) << mem.str();
  auto want = f(c0, xs);
  EXPECT_LE(err(r.first, want.first, 1e-6, 1e-5), 1.0);
  EXPECT_LE(err(r.second, want.second, 1e-4, 1e-5), 1.0);
}


TEST(UserPrograms, LoopCarryInitArgumentsAreNotOverwritten) {
  auto dus_loop = [](const Array& buf) {
    return mj::fori_loop(0, 4, [](const Array& i, const Array& b) {
      return mj::lax::dynamic_update_slice(b, mj::ones({1}) * 7.0, {i});
    }, buf);
  };
  auto while_loop = [](const Array& c) {
    return mj::while_loop([](const Array& v) { return mj::sum(v) < 100.0; }, [](const Array& v) { return v * 2.0 + 1.0; }, c);
  };
  auto view_update = [](const Array& x) {
    Array v = mj::reshape(x, {8});
    return mj::lax::scatter_add(v * 1.0, mj::array({0}, {1}, mj::i32), mj::ones({1})) + mj::reshape(x, {8});
  };
  auto view_dus = [](const Array& x) {
    return mj::lax::dynamic_update_slice(mj::reshape(x, {8}), mj::ones({2}), {mj::scalar(3, mj::i32)});
  };
  Array buf = mj::zeros({6}), c = mj::array({1.f, 2.f, 3.f}), x = mj::reshape(mj::arange(0, 8, 1, mj::f32), {2, 4});
  Array buf0 = buf * 1.0, c0 = c * 1.0, x0 = x * 1.0;
  EXPECT_SAME(mj::jit(dus_loop)(buf), dus_loop(buf0));
  EXPECT_SAME(buf, buf0);
  EXPECT_SAME(mj::jit(while_loop)(c), while_loop(c0));
  EXPECT_SAME(c, c0);
  EXPECT_SAME(mj::jit(view_update)(x), view_update(x0));
  EXPECT_SAME(x, x0);
  EXPECT_SAME(mj::jit(view_dus)(x), view_dus(x0));
  EXPECT_SAME(x, x0);
}

TEST(UserPrograms, DotWithEmptyFreeOrBatchDims) {
  auto f = [](const Array& a, const Array& b) { return mj::matmul(a, b); };
  Array a2 = mj::ones({0, 3}), b2 = mj::ones({3, 5});
  EXPECT_SAME(mj::jit(f)(a2, b2), f(a2, b2));
  Array a3 = mj::ones({2, 3}), b3 = mj::ones({3, 0});
  EXPECT_SAME(mj::jit(f)(a3, b3), f(a3, b3));
  auto bf = [](const Array& l, const Array& r) { return mj::lax::dot_general(l, r, {{2}, {1}, {0}, {0}}); };
  Array l = mj::ones({0, 2, 3}), r = mj::ones({0, 3, 4});
  EXPECT_SAME(mj::jit(bf)(l, r), bf(l, r));
}

TEST(UserPrograms, BadCallsGiveMinijaxErrors) {
  auto two = mj::jit([](const Array& a, const Array& b) { return a * b; }, mj::JitOptions{.donate_argnums = {0, 1}});
  Array x = mj::ones({4});
  EXPECT_THROW(two(x, x), mj::ValueError);  // one buffer donated twice (JAX raises too)
  auto oob = mj::jit([](const Array& a) { return a; }, mj::JitOptions{.donate_argnums = {3}});
  EXPECT_THROW(oob(mj::ones({2})), mj::ValueError);
  auto st = mj::jit([](const Array& a, int k) { return a * double(k); });
  auto c = st.lower(x, 2).compile();
  EXPECT_THROW(c(x, 3), mj::TypeError);  // another static value than the lowered one
  EXPECT_SAME(c(x, 2), x * 2.0);
}

TEST(UserPrograms, PinnedHostComputeInsideJit) {
  auto f = [](const Array& x) {
    Array h = mj::device_put(x, "pinned_host");
    Array y = mj::device_put(h * 2.0 + 1.0, "device");
    return std::pair{y + x, h};
  };
  Array x = randn({300}, 92);
  auto want = f(x);
  auto got = mj::jit(f)(x);
  EXPECT_SAME(got.first, want.first);
  EXPECT_SAME(got.second, want.second);
}
