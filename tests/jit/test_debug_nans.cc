// Tests of config().debug_nans / debug_infs (JAX's jax_debug_nans / jax_debug_infs): the eager
// check per primitive, jit's output check and op-by-op re-run, donation, and the flags off.
#include <gtest/gtest.h>

#include <minijax/minijax.h>

#include "jit/debug_test_util.h"

#include <cmath>
#include <functional>
#include <string>

namespace {

using mj::Array;

// Sets config().debug_nans / debug_infs for one test.
struct FloatChecks {
  FloatChecks(bool nans, bool infs) {
    mj::config().debug_nans = nans;
    mj::config().debug_infs = infs;
  }
  ~FloatChecks() {
    mj::config().debug_nans = false;
    mj::config().debug_infs = false;
  }
};

using debug_test::has;
using debug_test::what_of;

TEST(DebugNans, EagerNamesThePrimitiveItsShapesAndTheUsersLine) {
  FloatChecks on(true, false);
  Array x = mj::array({1.f, -1.f});
  const int line = __LINE__ + 1;
  std::string e = what_of([&] { (void)mj::log(x); });
  EXPECT_TRUE(has(e, "invalid value (nan) encountered in log(f32[2])")) << e;
  EXPECT_TRUE(has(e, "at [1]")) << e;
  EXPECT_TRUE(has(e, "test_debug_nans.cc:" + std::to_string(line))) << e;
  EXPECT_THROW((void)mj::log(x), mj::FloatingPointError);
  EXPECT_NO_THROW((void)mj::log(mj::abs(x)));
  EXPECT_NO_THROW((void)(x / 0.0));  // an Inf is not caught by debug_nans alone
}

TEST(DebugNans, JitReRunsOpByOpToFindThePrimitive) {
  FloatChecks on(true, false);
  const int line = __LINE__ + 3;
  auto f = mj::jit([](const Array& x) {
    Array y = x * 2.0;
    Array z = mj::sqrt(y - 3.0);
    return z + 1.0;
  });
  EXPECT_NO_THROW((void)f(mj::array({2.f, 4.f})));
  std::string e = what_of([&] { (void)f(mj::array({2.f, 1.f})); });
  EXPECT_TRUE(has(e, "invalid value (nan) encountered in sqrt(f32[2])")) << e;
  EXPECT_TRUE(has(e, "test_debug_nans.cc:" + std::to_string(line))) << e;
  EXPECT_THROW((void)f(mj::array({2.f, 1.f})), mj::FloatingPointError);
}

TEST(DebugNans, DonatedArgumentsMakeTheReRunImpossibleAndTheErrorSaysSo) {
  FloatChecks on(true, false);
  auto f = mj::jit([](const Array& x) { return mj::log(x); }, mj::JitOptions{.name = "logged", .donate_argnums = {0}});
  Array x = mj::array({1.f, -2.f, 3.f});
  std::string e = what_of([&] { (void)f(x); });
  EXPECT_TRUE(has(e, "jit 'logged'")) << e;
  EXPECT_TRUE(has(e, "output 0")) << e;
  EXPECT_TRUE(has(e, "donated")) << e;
  EXPECT_TRUE(has(e, "impossible")) << e;
}

TEST(DebugInfs, CatchesInfinitiesInEagerAndJitIncludingGradients) {
  FloatChecks on(false, true);
  Array z = mj::array({0.f, 1.f});
  std::string e = what_of([&] { (void)(mj::scalar(1.0f) / z); });
  EXPECT_TRUE(has(e, "invalid value (inf) encountered in div")) << e;
  EXPECT_NO_THROW((void)mj::log(mj::array({-1.f})));  // a NaN is not caught by debug_infs alone
  // d/dx sqrt(x) = 1 / (2 sqrt(x)) is +Inf at 0: found in the backward pass under jit.
  auto g = mj::jit(mj::grad([](const Array& x) { return mj::sum(mj::sqrt(x)); }));
  e = what_of([&] { (void)g(z); });
  EXPECT_TRUE(has(e, "invalid value (inf) encountered in")) << e;
  EXPECT_THROW((void)g(z), mj::FloatingPointError);
}

TEST(DebugNans, OffChangesNeitherResultsNorCompiledCode) {
  auto f = mj::jit([](const Array& x) { return mj::log(x) * 2.0; });
  Array x = mj::array({1.f, -1.f});
  const std::string text_off = f.lower(x).compile().as_text();
  Array r = f(x);
  EXPECT_TRUE(std::isnan(r.data<float>()[1]));
  FloatChecks on(true, true);
  EXPECT_EQ(f.lower(x).compile().as_text(), text_off);  // the check is the caller's, not the code's
}

}  // namespace
