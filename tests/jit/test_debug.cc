// Tests of mj::debug::print and mj::debug::callback (JAX's jax.debug.print / callback): eagerly and
// inside jit, scan, vmap, grad, cond and checkpoint, ordered, sharded, and their errors.
#include <gtest/gtest.h>

#include <minijax/minijax.h>

#include "jit/debug_test_util.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace {

using mj::Array;

// Captures debug::print's lines for one test (restoring the previous sink after).
struct CapturedLines {
  std::vector<std::string> lines;
  std::function<void(const std::string&)> prev;
  CapturedLines() {
    prev = mj::debug::set_print_sink([this](const std::string& l) { lines.push_back(l); });
  }
  ~CapturedLines() { mj::debug::set_print_sink(prev); }
};

using debug_test::has;
using debug_test::what_of;

// ---- print ------------------------------------------------------------------------------------

// The printed form of an argument is Array::str() (tests/core/test_arrays.cc checks it against
// NumPy's repr); the line is the format with each placeholder replaced.
TEST(DebugPrint, EagerPrintsAtOnce) {
  CapturedLines out;
  Array x = mj::array({1.f, 2.f});
  mj::debug::print("x = {} and {}", x, 3);
  ASSERT_EQ(out.lines.size(), 1u);
  EXPECT_EQ(out.lines[0], "x = " + x.str() + " and " + mj::lax::scalar(3, mj::i32, true).str());
  mj::debug::print("braces {{}} {1} {0}", x, 7.5);
  ASSERT_EQ(out.lines.size(), 2u);
  EXPECT_EQ(out.lines[1], "braces {} " + mj::lax::scalar(7.5, mj::f32, true).str() + " " + x.str());
}

TEST(DebugPrint, InsideJitPrintsTheRuntimeValuesAtEveryCall) {
  CapturedLines out;
  auto f = mj::jit([](const Array& x) {
    Array y = x * 2.0;
    mj::debug::print("y = {}", y);
    return y + 1.0;
  });
  Array a = mj::array({1.f, 2.f, 3.f});
  Array r = f(a);
  Array r2 = f(a + 1.0);
  ASSERT_EQ(out.lines.size(), 2u);  // once per call, not at trace time
  EXPECT_EQ(out.lines[0], "y = " + (a * 2.0).str());
  EXPECT_EQ(out.lines[1], "y = " + ((a + 1.0) * 2.0).str());
  EXPECT_EQ(r.str(), (a * 2.0 + 1.0).str());
  // Staged as an effectful equation that dead-code elimination keeps (its value is unused).
  auto low = f.lower(a);
  EXPECT_TRUE(has(mj::to_string(low.program), "debug_callback")) << mj::to_string(low.program);
  EXPECT_TRUE(has(low.compile().as_text(), "mj_rt_host_callback"));
}

TEST(DebugPrint, InsideScanPrintsEachIteration) {
  CapturedLines out;
  auto body = [](const Array& c, const Array& x) {
    Array s = c + x;
    mj::debug::print("carry {}", s);
    return std::pair{s, s};
  };
  Array xs = mj::array({1.f, 2.f, 4.f});
  auto run = [&](const Array& v) { return mj::scan(body, mj::scalar(0.0f), v).first; };
  Array total = mj::jit(run)(xs);
  EXPECT_EQ(total.item<float>(), 7.f);
  // Oracle: the running sums 1, 3, 7 by hand.
  ASSERT_EQ(out.lines.size(), 3u);
  EXPECT_EQ(out.lines[0], "carry " + mj::scalar(1.0f).str());
  EXPECT_EQ(out.lines[1], "carry " + mj::scalar(3.0f).str());
  EXPECT_EQ(out.lines[2], "carry " + mj::scalar(7.0f).str());
  out.lines.clear();
  (void)run(xs);  // eagerly the same lines
  EXPECT_EQ(out.lines.size(), 3u);
}

TEST(DebugPrint, UnderVmapPrintsEachElementInOrder) {
  CapturedLines out;
  auto f = [](const Array& x, const Array& k) {
    mj::debug::print("{} {}", x, k);
    return x * k;
  };
  Array xs = mj::array({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  Array k = mj::scalar(2.0f);
  auto g = mj::vmap(f, {.in_axes = {0, mj::kNotMapped}});
  (void)mj::jit(g)(xs, k);
  ASSERT_EQ(out.lines.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    Array row = mj::array({float(2 * i + 1), float(2 * i + 2)});
    EXPECT_EQ(out.lines[size_t(i)], row.str() + " " + k.str()) << i;
  }
}

TEST(DebugPrint, UnderGradPrintsThePrimalValuesOnce) {
  CapturedLines out;
  auto loss = [](const Array& w) {
    Array h = mj::sin(w);
    mj::debug::print("h = {}", h);
    return mj::sum(h * h);
  };
  Array w = mj::array({0.5f, -1.f});
  Array g = mj::jit(mj::grad(loss))(w);
  ASSERT_EQ(out.lines.size(), 1u);
  EXPECT_EQ(out.lines[0], "h = " + mj::sin(w).str());
  // d/dw sum(sin(w)^2) = 2 sin(w) cos(w) = sin(2w).
  EXPECT_NEAR(g.data<float>()[0], std::sin(1.0), 1e-6);
  out.lines.clear();
  (void)mj::grad(loss)(w);
  ASSERT_EQ(out.lines.size(), 1u);
  EXPECT_EQ(out.lines[0], "h = " + mj::sin(w).str());
}

// Nested transformations: each print runs once per element (vmap), per iteration (scan), with
// the primal values (grad), only in the branch taken (cond), and in the forward pass of a
// checkpoint. Oracles: the values computed eagerly in the test itself.
TEST(DebugPrint, NestedTransformationsPrintOncePerElementAndIteration) {
  CapturedLines out;
  auto loss = [](const Array& w, const Array& x) {
    Array h = mj::sin(w * x);
    mj::debug::print("h {}", h);
    return mj::sum(h);
  };
  Array w = mj::array({0.5f, 2.f});
  Array xs = mj::array({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  auto per_example = mj::vmap([&](const Array& x) { return mj::grad(loss)(w, x); });
  Array g = mj::jit(per_example)(xs);
  ASSERT_EQ(out.lines.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out.lines[size_t(i)], "h " + mj::sin(w * xs[i]).str()) << i;
  EXPECT_EQ(g.shape(), (mj::Shape{3, 2}));

  out.lines.clear();
  auto body = [](const Array& c, const Array& x) {
    Array n = mj::tanh(c * x);
    mj::debug::print("c {}", n);
    return std::pair{n, n};
  };
  auto scanned = [&](const Array& c0) { return mj::sum(mj::scan(body, c0, mj::array({1.f, 2.f})).second); };
  Array dc = mj::jit(mj::vmap(mj::grad(scanned)))(mj::array({0.25f, 0.5f}));
  // vmap batches the scan: each iteration prints element 0, then element 1.
  ASSERT_EQ(out.lines.size(), 4u);
  for (int e = 0; e < 2; ++e) {
    Array c1 = mj::tanh(mj::scalar(0.25f * float(e + 1)) * 1.0);
    EXPECT_EQ(out.lines[size_t(e)], "c " + c1.str()) << e;
    EXPECT_EQ(out.lines[size_t(2 + e)], "c " + mj::tanh(c1 * 2.0).str()) << e;
  }
  EXPECT_EQ(dc.shape(), (mj::Shape{2}));

  out.lines.clear();
  auto branchy = mj::jit([](const Array& p, const Array& x) {
    return mj::cond(p, [](const Array& v) { mj::debug::print("true {}", v); return v * 2.0; },
                    [](const Array& v) { mj::debug::print("false {}", v); return -v; }, x);
  });
  (void)branchy(mj::scalar(1, mj::bool_), mj::scalar(3.0f));
  (void)branchy(mj::scalar(0, mj::bool_), mj::scalar(4.0f));
  ASSERT_EQ(out.lines.size(), 2u);
  EXPECT_EQ(out.lines[0], "true " + mj::scalar(3.0f).str());
  EXPECT_EQ(out.lines[1], "false " + mj::scalar(4.0f).str());

  out.lines.clear();
  auto ck = mj::checkpoint([](const Array& v) {
    Array s = mj::sin(v);
    mj::debug::print("s {}", s);
    return mj::sum(s * s);
  });
  Array dv = mj::jit(mj::grad(ck))(mj::array({0.5f}));
  ASSERT_GE(out.lines.size(), 1u);  // the forward pass (a recomputation may print again)
  EXPECT_EQ(out.lines[0], "s " + mj::sin(mj::array({0.5f})).str());
  EXPECT_NEAR(dv.data<float>()[0], std::sin(1.0), 1e-6);  // d/dv sin^2 = sin(2v)
}

TEST(DebugPrint, PlaceholderCountMismatchIsAValueErrorAtTraceTime) {
  const int line = __LINE__ + 1;
  std::string e = what_of([] { mj::debug::print("{} and {}", mj::scalar(1.0f)); });
  EXPECT_TRUE(has(e, "{} and {}")) << e;
  EXPECT_TRUE(has(e, "more placeholders than arguments")) << e;
  EXPECT_TRUE(has(e, "test_debug.cc:" + std::to_string(line))) << e;
  auto f = mj::jit([](const Array& x) {
    mj::debug::print("only {}", x, x);
    return x;
  });
  e = what_of([&] { (void)f(mj::scalar(1.0f)); });
  EXPECT_TRUE(has(e, "more arguments than placeholders")) << e;
  EXPECT_THROW(mj::debug::print("{0} {}", mj::scalar(1.0f), mj::scalar(2.0f)), mj::ValueError);
  EXPECT_THROW(mj::debug::print("{:.3f}", mj::scalar(1.0f)), mj::ValueError);
  EXPECT_THROW(mj::debug::print("{", mj::scalar(1.0f)), mj::ValueError);
  EXPECT_THROW(mj::debug::print("}"), mj::ValueError);
  EXPECT_THROW(mj::debug::print("{3}", mj::scalar(1.0f)), mj::ValueError);
}

// ---- callback --------------------------------------------------------------------------------------

TEST(DebugCallback, ReceivesConcreteValuesEagerlyAndUnderJit) {
  std::vector<float> seen;
  auto f = mj::jit([&](const Array& x) {
    Array y = mj::exp(x);
    mj::debug::callback([&](const Array& v, const Array& u) {
      EXPECT_TRUE(v.is_concrete());
      seen.push_back(v.data<float>()[0]);
      seen.push_back(u.item<float>());
    }, y, x[1]);
    return y;
  });
  (void)f(mj::array({0.f, 2.f}));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_FLOAT_EQ(seen[0], 1.f);  // exp(0)
  EXPECT_FLOAT_EQ(seen[1], 2.f);
}

struct UserFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

TEST(DebugCallback, AThrowingCallbackPropagatesItsExceptionOutOfTheJittedCall) {
  auto f = mj::jit([](const Array& x) {
    mj::debug::callback([](const Array& v) {
      if (v.item<float>() > 1) throw UserFailure("value too large");
    }, x);
    return x + 1.0;
  });
  EXPECT_NO_THROW((void)f(mj::scalar(0.5f)));
  EXPECT_THROW((void)f(mj::scalar(2.0f)), UserFailure);
  EXPECT_THROW(mj::debug::callback([](const Array&) { throw UserFailure("eager"); }, mj::scalar(1.0f)), UserFailure);
  // The executable is intact afterwards.
  EXPECT_FLOAT_EQ(f(mj::scalar(0.25f)).item<float>(), 1.25f);
  // An mj::Error thrown at the user's line keeps its type and line.
  const int line = __LINE__ + 2;
  auto g = mj::jit([](const Array& x) {
    mj::debug::callback([](const Array&) { throw mj::ValueError("from the callback"); }, x);
    return x;
  });
  std::string e = what_of([&] { (void)g(mj::scalar(1.0f)); });
  EXPECT_TRUE(has(e, "from the callback")) << e;
  EXPECT_TRUE(has(e, "test_debug.cc:" + std::to_string(line))) << e;
}

TEST(DebugCallback, OrderedCallbacksRunInProgramOrderWithinAndAcrossCalls) {
  std::vector<std::string> log;
  auto f = mj::jit([&](const Array& x) {
    mj::debug::callback({.ordered = true}, [&](const Array& v) { log.push_back("a" + std::to_string(int(v.item<float>()))); }, x);
    Array y = x * 3.0;
    mj::debug::callback({.ordered = true}, [&](const Array& v) { log.push_back("b" + std::to_string(int(v.item<float>()))); }, y);
    mj::debug::print({.ordered = true}, "c {}", y + 1.0);
    return y;
  });
  CapturedLines out;
  (void)f(mj::scalar(1.0f));
  (void)f(mj::scalar(2.0f));
  EXPECT_EQ(log, (std::vector<std::string>{"a1", "b3", "a2", "b6"}));
  ASSERT_EQ(out.lines.size(), 2u);
  EXPECT_EQ(out.lines[0], "c " + mj::scalar(4.0f).str());
  auto low = f.lower(mj::scalar(1.0f));
  EXPECT_TRUE(has(mj::to_string(low.program), "ordered=True")) << mj::to_string(low.program);
}

TEST(DebugCallback, ShardedJitCallsItOnceWithTheWholeValue) {
  mj::Mesh m = mj::make_mesh({4, 2}, {"data", "model"});
  std::vector<std::string> seen;
  auto f = mj::jit([&](const Array& a) {
    Array y = a * 2.0;
    mj::debug::callback([&](const Array& v) { seen.push_back(v.str()); }, y);
    return y;
  }, mj::JitOptions{.in_shardings = {mj::NamedSharding(m, mj::P("data", "model"))}});
  Array x = mj::reshape(mj::arange(0, 16, 1, mj::f32), {8, 2});
  Array y = f(x);
  mj::block_until_ready(y);  // a sharded call returns before its devices have run it
  ASSERT_EQ(seen.size(), 1u);  // one device calls it
  EXPECT_EQ(seen[0], (x * 2.0).str());
}

}  // namespace
