// minijax tests of the loop options as JAX has them: scan's `unroll` (bool or int, the param it
// binds, errors, kept by transformations) and fori_loop's unroll and Array bounds (scan or while).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/views/control_flow.h"

namespace {
using mj::Array;
namespace lax = mj::lax;

// The `unroll` param of every scan equation in j and in the bodies nested in it, in order.
void scan_unrolls(const mj::Jaxpr& j, std::vector<int64_t>& out) {
  for (const mj::Eqn& e : j.eqns) {
    if (e.primitive->name == "scan") out.push_back(mj::scan_params(e).unroll.value());
    for (auto& [key, v] : e.params.items()) {
      if (auto* cj = std::get_if<mj::ClosedJaxprPtr>(&v)) {
        if (*cj && (*cj)->jaxpr) scan_unrolls(*(*cj)->jaxpr, out);
      } else if (auto* cjs = std::get_if<std::vector<mj::ClosedJaxprPtr>>(&v)) {
        for (auto& c : *cjs)
          if (c && c->jaxpr) scan_unrolls(*c->jaxpr, out);
      }
    }
  }
}

std::vector<int64_t> scan_unrolls(const mj::ClosedJaxpr& cj) {
  std::vector<int64_t> out;
  scan_unrolls(*cj.jaxpr, out);
  return out;
}

bool has_primitive(const mj::ClosedJaxpr& cj, const std::string& name) {
  return mj::to_string(cj).find(" " + name + "[") != std::string::npos;
}

// c = c * 0.5 + x over xs, ys = c.
std::pair<Array, Array> halving_scan(const Array& c0, const Array& xs, mj::ScanOptions opts) {
  return mj::scan([](const Array& c, const Array& x) {
    Array n = c * 0.5f + x;
    return std::pair{n, n};
  }, c0, xs, opts);
}

// jax.lax.scan: `unroll = max(length, 1) if unroll else 1` for a bool, an int as given (0: the
// whole loop, kept as 0 in the equation, as JAX's _scan_impl reads it).
TEST(ScanUnroll, ParamIsTheIntJaxBinds) {
  auto param = [](const mj::Unroll& u, int64_t length) {
    Array xs = mj::zeros({length});
    auto j = mj::make_jaxpr([u](const Array& c, const Array& x) {
      return halving_scan(c, x, {.unroll = u});
    })(mj::scalar(0.0f), xs);
    std::vector<int64_t> u_s = scan_unrolls(j);
    return u_s.size() == 1 ? u_s[0] : int64_t(-100);
  };
  EXPECT_EQ(param(true, 5), 5);
  EXPECT_EQ(param(false, 5), 1);
  EXPECT_EQ(param(int64_t(0), 5), 0);
  EXPECT_EQ(param(int64_t(3), 5), 3);
  EXPECT_EQ(param(int64_t(9), 5), 9);
  EXPECT_EQ(param(true, 0), 1);
  EXPECT_EQ(param(mj::ScanOptions{}.unroll, 5), 1);
  // Designated initializers pick the alternative from the literal's type.
  EXPECT_TRUE(std::holds_alternative<bool>(mj::ScanOptions{.unroll = true}.unroll));
  EXPECT_TRUE(std::holds_alternative<int64_t>(mj::ScanOptions{.unroll = 0}.unroll));
  // The default prints as JAX prints it.
  auto j = mj::make_jaxpr([](const Array& c, const Array& x) { return halving_scan(c, x, {}); })(
      mj::scalar(0.0f), mj::zeros({4}));
  const std::string text = mj::to_string(j);
  const size_t at = text.find("unroll=");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(text.substr(at, 9), "unroll=1\n") << text;
}

TEST(ScanUnroll, NegativeIsAValueErrorNamingScanTheValueAndTheCallSite) {
  try {
    halving_scan(mj::scalar(0.0f), mj::zeros({4}), {.unroll = -2});
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(e.message().find("scan"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("unroll=-2"), std::string::npos) << e.what();
  }
  // The call site is the user's line: scan called directly.
  const int call_line = __LINE__ + 2;
  try {
    mj::scan([](const Array& c, mj::None) { return std::pair{c, mj::None{}}; }, mj::scalar(0.0f),
             {.length = 3, .unroll = -7});
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(e.message().find("unroll=-7"), std::string::npos) << e.what();
    EXPECT_EQ(int(e.where().line()), call_line) << e.what();
    EXPECT_NE(std::string(e.where().file_name()).find("test_loop_options.cc"), std::string::npos) << e.what();
  }
}

// JAX's jvp, partial eval and transpose rules of scan pass `unroll` through; so do minijax's.
TEST(ScanUnroll, TransformsKeepTheParam) {
  auto loss = [](const Array& w, const Array& xs) {
    auto [c, ys] = mj::scan([&w](const Array& c, const Array& x) {
      Array n = mj::sin(c * w) + x;
      return std::pair{n, n * n};
    }, mj::scalar(0.5f), xs, {.reverse = true, .unroll = 3});
    return c + mj::sum(ys);
  };
  Array w = mj::scalar(0.7f), xs = mj::array({0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f});
  for (auto& [what, j] : std::vector<std::pair<std::string, mj::ClosedJaxpr>>{
           {"grad", mj::make_jaxpr(mj::grad(loss))(w, xs)},
           {"jvp", mj::make_jaxpr([&](const Array& v) { return mj::jvp([&](const Array& u) { return loss(u, xs); }, v, v).second; })(w)},
           {"vmap", mj::make_jaxpr(mj::vmap([&](const Array& v) { return loss(v, xs); }))(mj::array({0.5f, 0.7f}))}}) {
    std::vector<int64_t> u = scan_unrolls(j);
    EXPECT_GE(u.size(), what == "grad" ? 2u : 1u) << what << "\n" << mj::to_string(j);
    for (int64_t k : u) EXPECT_EQ(k, 3) << what << "\n" << mj::to_string(j);
  }
}

// ---- fori_loop ---------------------------------------------------------------------------------

Array add_i(const Array& i, const Array& c) { return c + mj::astype(i, mj::f32); }

TEST(ForiLoopOptions, UnrollBecomesTheScansUnroll) {
  auto param = [](mj::ForiLoopOptions o) {
    auto j = mj::make_jaxpr([o](const Array& c) { return mj::fori_loop(0, 10, add_i, c, o); })(mj::scalar(0.0f));
    std::vector<int64_t> u = scan_unrolls(j);
    return u.size() == 1 ? u[0] : int64_t(-100);
  };
  EXPECT_EQ(param({}), 1);
  EXPECT_EQ(param({.unroll = 4}), 4);
  EXPECT_EQ(param({.unroll = true}), 10);
  EXPECT_EQ(param({.unroll = false}), 1);
  EXPECT_EQ(param({.unroll = 0}), 0);
  // 0 + 1 + ... + 9 = 45 whatever the unroll (JAX's test_fori_loop_supports_unrolling).
  for (mj::ForiLoopOptions o : {mj::ForiLoopOptions{.unroll = 3}, mj::ForiLoopOptions{.unroll = true}})
    EXPECT_FLOAT_EQ(mj::fori_loop(0, 10, add_i, mj::scalar(0.0f), o).item<float>(), 45.0f);
  try {
    mj::fori_loop(0, 10, add_i, mj::scalar(0.0f), {.unroll = -3});
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(e.message().find("fori_loop"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("unroll=-3"), std::string::npos) << e.what();
  }
}

// JAX's test_fori_loop_with_dynamic_indices_cannot_unroll.
TEST(ForiLoopOptions, UnrollWithTracedBoundsIsAValueError) {
  auto f = [](mj::ForiLoopOptions o) {
    return mj::jit([o](const Array& hi, const Array& c) { return mj::fori_loop(0, hi, add_i, c, o); });
  };
  Array hi = mj::scalar(4, mj::i32), c = mj::scalar(0.0f);
  try {
    f({.unroll = 3})(hi, c);
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(e.message().find("Can only use `unroll` in `fori_loop` if the loop bounds are statically known"),
              std::string::npos) << e.what();
    EXPECT_NE(e.message().find("unroll=3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(f({.unroll = int64_t(0)})(hi, c), mj::ValueError);
  // Unset, false, true and 1 are accepted (JAX lets True through: True == 1 in Python): 0 + 1 + 2 + 3 = 6.
  for (mj::ForiLoopOptions o : {mj::ForiLoopOptions{}, mj::ForiLoopOptions{.unroll = false},
                                mj::ForiLoopOptions{.unroll = true}, mj::ForiLoopOptions{.unroll = 1}})
    EXPECT_FLOAT_EQ(f(o)(hi, c).item<float>(), 6.0f);
}

// jax.lax.fori_loop with traced floating-point bounds is a while_loop whose i has the bounds'
// dtype: for lo = 1.5, hi = 4: i = 1.5, 2.5, 3.5, sum 7.5 (closed form).
TEST(ForiLoopOptions, TracedFloatBoundsRunAsAWhileLoop) {
  auto f = [](const Array& lo, const Array& hi) {
    return mj::fori_loop(lo, hi, [](const Array& i, const Array& c) { return c + i; }, mj::zeros_like(lo));
  };
  for (mj::DType dt : {mj::f32, mj::f64}) {
    Array lo = mj::scalar(1.5, dt), hi = mj::scalar(4.0, dt);
    auto j = mj::make_jaxpr(f)(lo, hi);
    EXPECT_TRUE(has_primitive(j, "while")) << mj::to_string(j);
    EXPECT_FALSE(has_primitive(j, "scan")) << mj::to_string(j);
    Array y = mj::jit(f)(lo, hi);
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_DOUBLE_EQ(y.item<double>(), 7.5);
  }
  // An empty range gives init: i = 4.5 is not below 4.
  EXPECT_DOUBLE_EQ(mj::jit(f)(mj::scalar(4.5), mj::scalar(4.0)).item<double>(), 0.0);
}

// Bounds with values make a scan (JAX: `core.is_concrete(lower) and core.is_concrete(upper)`, then
// int()), so reverse mode works: c <- c * x three times from c = x is x^4, d/dx = 4 x^3 = 13.5 at
// x = 1.5 (closed form).
TEST(ForiLoopOptions, ConcreteArrayBoundsRunAsAScanSoGradWorks) {
  Array lo = mj::scalar(0, mj::i32), hi = mj::scalar(3, mj::i32);
  auto g = [&](const Array& x) {
    return mj::fori_loop(lo, hi, [&x](const Array&, const Array& c) { return c * x; }, x);
  };
  EXPECT_NEAR(mj::grad(g)(mj::scalar(1.5f)).item<float>(), 13.5f, 1e-5);
  auto j = mj::make_jaxpr(g)(mj::scalar(1.5f));
  EXPECT_TRUE(has_primitive(j, "scan")) << mj::to_string(j);
  EXPECT_FALSE(has_primitive(j, "while")) << mj::to_string(j);
  // JAX's testStaticForiGrad: bounds computed from the differentiated x are JVP tracers over
  // values, so the loop is a scan from int(1.25) = 1 to int(3.25) = 3: c <- 2c twice, f = 4x.
  auto h = [](const Array& x) {
    return mj::fori_loop(x, x + 2.0f, [](const Array&, const Array& c) { return c * 2.0f; }, x);
  };
  EXPECT_FLOAT_EQ(mj::grad(h)(mj::scalar(1.25f)).item<float>(), 4.0f);
  // Concrete float bounds are truncated as Python's int() truncates: i = 1, 2, 3 (an i32).
  Array s = mj::fori_loop(mj::scalar(1.5f), mj::scalar(4.0f), add_i, mj::scalar(0.0f));
  EXPECT_FLOAT_EQ(s.item<float>(), 6.0f);
}

TEST(ForiLoopOptions, BoundDtypesFollowJax) {
  // A C++ integer with an i32 Array (JAX's testForiLoopScalarLimits): 0 + 1 + 2 = 3, eager and
  // under jit (traced: a while_loop over i32).
  Array hi = mj::scalar(3, mj::i32), c = mj::scalar(0.0f);
  EXPECT_FLOAT_EQ(mj::fori_loop(0, hi, add_i, c).item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(mj::fori_loop(hi, 6, add_i, c).item<float>(), 12.0f);
  auto jf = mj::jit([](const Array& h, const Array& c0) { return mj::fori_loop(0, h, add_i, c0); });
  EXPECT_FLOAT_EQ(jf(hi, c).item<float>(), 3.0f);
  // Different dtypes: TypeError naming both (JAX's testForiLoopErrors).
  try {
    mj::fori_loop(mj::scalar(0, mj::u32), hi, add_i, c);
    FAIL() << "expected TypeError";
  } catch (const mj::TypeError& e) {
    EXPECT_NE(e.message().find("lower and upper arguments to fori_loop must have equal types"), std::string::npos)
        << e.what();
    EXPECT_NE(e.message().find("u32"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("i32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mj::fori_loop(0, mj::scalar(3.0f), add_i, c), mj::TypeError);
  EXPECT_THROW(mj::fori_loop(mj::zeros({2}, mj::i32), hi, add_i, c), mj::TypeError);
  EXPECT_THROW(mj::fori_loop(mj::scalar(1, mj::bool_), mj::scalar(1, mj::bool_), add_i, c), mj::TypeError);
}

}  // namespace
