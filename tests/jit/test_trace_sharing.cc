// Tests of the trace cache shared by jit objects of one callable (JAX's
// api_test.py test_jit_global_cache): captureless lambdas, empty function objects, function
// pointers and hashable callables are traced once for every Jit; capturing lambdas per object.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <minijax/minijax.h>
#include <string>
#include <thread>
#include <vector>

#include "values.h"

namespace {

using mj::Array;

using minijax_test::vals;

// Compiled results are compared with eager ones (and those with a closed form in each test).
void expect_same(const Array& got, const Array& want) {
  ASSERT_EQ(got.shape(), want.shape());
  auto g = vals(got), w = vals(want);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-6f * (1.f + std::fabs(w[i]))) << "element " << i;
}

Array x3() { return mj::array({0.5f, 1.f, 2.f}); }

std::atomic<int> square_traces{0};
struct Square {  // an empty function object: every object is the same function
  Array operator()(const Array& x) const {
    ++square_traces;
    return x * x;
  }
};

std::atomic<int> pointer_traces{0};
Array twice(const Array& x) {
  ++pointer_traces;
  return x * 2.f;
}
Array thrice(const Array& x) {
  ++pointer_traces;
  return x * 3.f;
}

std::atomic<int> scale_traces{0};
struct Scale {  // a stateful callable that provides std::hash and ==
  float s = 1;
  Array operator()(const Array& x) const {
    ++scale_traces;
    return x * s;
  }
  bool operator==(const Scale&) const = default;
};

}  // namespace

template <>
struct std::hash<Scale> {
  size_t operator()(const Scale& c) const { return std::hash<float>{}(c.s); }
};

namespace {

TEST(TraceSharing, JitOfOneCapturelessLambdaTracesOnceAcrossJitObjects) {
  // JAX's test_jit_global_cache: jit(f)(2); jit(f)(3) traces f once.
  static std::atomic<int> traces{0};
  auto f = [](const Array& x) {
    ++traces;
    return mj::sin(x) * 2.f;
  };
  Array a = mj::jit(f)(x3());
  auto g = mj::jit(f);
  Array other = mj::array({-1.f, 0.f, 3.f});
  Array b = g(other);
  EXPECT_EQ(traces.load(), 1);
  EXPECT_EQ(g.trace_count(), 0);  // g took the trace another Jit made
  EXPECT_EQ(g.cache_size(), 1u);
  expect_same(a, f(x3()));  // eager
  expect_same(b, f(other));
  EXPECT_NEAR(vals(b)[2], 2 * std::sin(3.f), 1e-6);  // closed form
}

TEST(TraceSharing, EmptyFunctionObjectsShareOneTrace) {
  const int before = square_traces.load();
  Array a = mj::jit(Square{})(x3());
  Array b = mj::jit(Square{})(x3());
  EXPECT_EQ(square_traces.load() - before, 1);
  expect_same(a, Square{}(x3()));
  expect_same(b, mj::array({0.25f, 1.f, 4.f}));  // x * x
}

TEST(TraceSharing, FunctionPointersAreKeyedByAddress) {
  using Fn = Array (*)(const Array&);
  Fn p = twice, q = thrice;
  const int before = pointer_traces.load();
  Array a = mj::jit(p)(x3());
  Array b = mj::jit(p)(x3());
  EXPECT_EQ(pointer_traces.load() - before, 1);  // one function: one trace
  Array c = mj::jit(q)(x3());                    // same type, another function
  EXPECT_EQ(pointer_traces.load() - before, 2);
  expect_same(a, mj::array({1.f, 2.f, 4.f}));
  expect_same(b, twice(x3()));
  expect_same(c, mj::array({1.5f, 3.f, 6.f}));
  expect_same(c, thrice(x3()));
}

TEST(TraceSharing, CapturingLambdasAreTracedPerObject) {
  int traces = 0;
  const float scale = 3.f;
  auto f = [&traces, scale](const Array& x) {
    ++traces;
    return x * scale;
  };
  auto j1 = mj::jit(f);
  Array a = j1(x3());
  Array b = j1(x3());
  EXPECT_EQ(traces, 1);  // once per object and signature
  auto j2 = mj::jit(f);
  Array c = j2(x3());
  EXPECT_EQ(traces, 2);  // a new object of a capturing lambda traces again
  EXPECT_EQ(j1.trace_count(), 1);
  EXPECT_EQ(j2.trace_count(), 1);
  // Two objects of one closure type with different captures are different functions.
  auto make = [](float s) { return [s](const Array& x) { return x * s; }; };
  Array two = mj::jit(make(2.f))(x3());
  Array five = mj::jit(make(5.f))(x3());
  expect_same(a, f(x3()));
  expect_same(c, mj::array({1.5f, 3.f, 6.f}));
  expect_same(two, make(2.f)(x3()));
  expect_same(five, mj::array({2.5f, 5.f, 10.f}));
}

TEST(TraceSharing, HashableCallablesShareByValue) {
  const int before = scale_traces.load();
  Array a = mj::jit(Scale{2.f})(x3());
  auto j = mj::jit(Scale{2.f});
  Array b = j(x3());
  EXPECT_EQ(scale_traces.load() - before, 1);  // equal callables: one trace
  EXPECT_EQ(j.trace_count(), 0);
  Array c = mj::jit(Scale{4.f})(x3());  // another value: another function
  EXPECT_EQ(scale_traces.load() - before, 2);
  expect_same(a, Scale{2.f}(x3()));
  expect_same(b, mj::array({1.f, 2.f, 4.f}));
  expect_same(c, mj::array({2.f, 4.f, 8.f}));
}

TEST(TraceSharing, StaticArgumentsAndStaticArgnumsAreInTheSharedKey) {
  static std::atomic<int> traces{0};
  auto f = [](const Array& x, int k) {
    ++traces;
    return x * float(k);
  };
  Array a = mj::jit(f)(x3(), 2);
  Array b = mj::jit(f)(x3(), 2);
  EXPECT_EQ(traces.load(), 1);
  Array c = mj::jit(f)(x3(), 3);  // a new static value traces
  EXPECT_EQ(traces.load(), 2);
  // Another argument split (static_argnums naming the int explicitly changes nothing for an int,
  // which is always static) still finds the same trace; other avals do not.
  Array d = mj::jit(f, mj::JitOptions{.static_argnums = {1}})(x3(), 3);
  EXPECT_EQ(traces.load(), 2);
  Array e = mj::jit(f)(mj::array({1.f, 2.f}), 3);
  EXPECT_EQ(traces.load(), 3);
  expect_same(a, f(x3(), 2));
  expect_same(b, mj::array({1.f, 2.f, 4.f}));
  expect_same(c, mj::array({1.5f, 3.f, 6.f}));
  expect_same(d, c);
  expect_same(e, mj::array({3.f, 6.f}));
}

TEST(TraceSharing, NeverKeepsTracesWithTheObject) {
  static std::atomic<int> traces{0};
  auto f = [](const Array& x) {
    ++traces;
    return x + 1.f;
  };
  mj::jit(f)(x3());
  auto own = mj::jit(f, mj::JitOptions{.share_traces = mj::TraceSharing::never});
  Array a = own(x3());
  Array b = own(x3());
  EXPECT_EQ(traces.load(), 2);
  EXPECT_EQ(own.trace_count(), 1);
  expect_same(a, mj::array({1.5f, 2.f, 3.f}));
  expect_same(b, f(x3()));
}

TEST(TraceSharing, RequiredOnACapturingLambdaIsATypeErrorNamingTheJit) {
  const float k = 2.f;
  try {
    mj::jit([k](const Array& x) { return x * k; },
            mj::JitOptions{.name = "scaled", .share_traces = mj::TraceSharing::required});
    FAIL() << "no error";
  } catch (const mj::TypeError& e) {
    const std::string m = e.message();
    EXPECT_NE(m.find("jit 'scaled'"), std::string::npos) << m;
    EXPECT_NE(m.find("TraceSharing::required"), std::string::npos) << m;
    EXPECT_NE(std::string(e.where().file_name()).find("test_trace_sharing.cc"), std::string::npos);
  }
  // Identifiable callables are accepted.
  auto j = mj::jit(Square{}, mj::JitOptions{.share_traces = mj::TraceSharing::required});
  expect_same(j(x3()), Square{}(x3()));
}

TEST(TraceSharing, ANullFunctionPointerIsAValueError) {
  using Fn = Array (*)(const Array&);
  EXPECT_THROW(mj::jit(Fn(nullptr)), mj::ValueError);
}

TEST(TraceSharing, ATraceMadeUnderGradIsSharedAndHoldsNoTracer) {
  static std::atomic<int> traces{0};
  auto f = [](const Array& x) {
    ++traces;
    return mj::sum(mj::sin(x) * x);
  };
  // Traced first under grad (its arguments are JVP tracers), then used eagerly by another Jit:
  // the kept trace has concrete constants only and an abstract output structure.
  Array g = mj::grad(mj::jit(f))(x3());
  Array v = mj::jit(f)(x3());
  Array g2 = mj::grad(mj::jit(f))(mj::array({1.f, 1.f, 1.f}));
  EXPECT_EQ(traces.load(), 1);
  auto xv = vals(x3());
  for (size_t i = 0; i < 3; ++i)  // d/dx sum(sin(x) x) = cos(x) x + sin(x)
    EXPECT_NEAR(vals(g)[i], std::cos(xv[i]) * xv[i] + std::sin(xv[i]), 1e-5);
  expect_same(g2, mj::grad(f)(mj::array({1.f, 1.f, 1.f})));
  expect_same(v, f(x3()));
}

TEST(TraceSharing, ConcurrentJitObjectsOfOneFunctionTraceOnce) {
  static std::atomic<int> traces{0};
  auto f = [](const Array& x) {
    ++traces;
    return mj::exp(x) - 1.f;
  };
  const Array want = mj::array({std::expm1(0.5f), std::expm1(1.f), std::expm1(2.f)});
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        Array y = mj::jit(f)(x3());
        auto a = vals(y), w = vals(want);
        for (size_t k = 0; k < 3; ++k)
          if (std::fabs(a[k] - w[k]) > 1e-5f * (1.f + std::fabs(w[k]))) ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(traces.load(), 1);
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
