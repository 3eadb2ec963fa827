// Tests of jvp_by_partial_eval: a primitive whose JVP is split into known and staged halves
// still yields concrete primals under eager grad and a purely linear tangent jaxpr.
#include <gtest/gtest.h>

#include <cmath>
#include <minijax/minijax.h>

#include "autodiff/jvp_split.h"

namespace {

// A test-local copy of sin whose JVP goes through the split (as scan/cond/checkpoint do).
const mj::Primitive& split_sin() {
  static mj::Primitive& p = [] () -> mj::Primitive& {
    mj::Primitive& q = mj::get_or_create_primitive("test_split_sin");
    const mj::Primitive& sin = mj::primitive("sin");
    q.shape_rule = sin.shape_rule;
    q.impl = sin.impl;
    q.batch = sin.batch;
    q.no_transpose_reason = "not linear";
    // Pure JVP: binds the primal and tangent computations together.
    mj::JvpRule pure = [](const std::vector<mj::Array>& p, const std::vector<mj::Array>& t, const mj::Params&) {
      mj::Array y = mj::bind1(mj::primitive("test_split_sin"), {p[0]});
      return std::pair{std::vector<mj::Array>{y}, std::vector<mj::Array>{mj::lax::mul(t[0], mj::lax::cos(p[0]))}};
    };
    q.jvp = mj::split_jvp_rule(pure);
    return q;
  }();
  return p;
}

TEST(JvpSplit, GradIsCosAndPrimalsStayConcrete) {
  mj::Array x = mj::array({0.2f, 1.4f});
  bool saw_concrete = false;
  auto f = [&](const mj::Array& v) {
    mj::Array y = mj::bind1(split_sin(), {v});
    saw_concrete = bool(y.concrete().is_concrete());
    return mj::sum(y * y);
  };
  mj::Array g = mj::grad(f)(x);
  EXPECT_TRUE(saw_concrete);
  for (int i = 0; i < 2; ++i) {
    float xi = x.data<float>()[i];
    EXPECT_NEAR(g.data<float>()[i], 2 * std::sin(xi) * std::cos(xi), 1e-6);
  }
  // The linear jaxpr holds only the tangent computation (the sin itself ran eagerly).
  auto [y, f_jvp] = mj::linearize([&](const mj::Array& v) { return mj::bind1(split_sin(), {v}); }, x);
  auto lin = mj::make_jaxpr(f_jvp)(x);
  EXPECT_EQ(mj::to_string(lin).find("test_split_sin"), std::string::npos) << lin;
  EXPECT_NE(mj::to_string(lin).find("mul"), std::string::npos) << lin;
  // Second order through the split.
  mj::Array h = mj::grad([&](const mj::Array& v) { return mj::sum(mj::grad(f)(v)); })(x);
  for (int i = 0; i < 2; ++i) {
    float xi = x.data<float>()[i];
    EXPECT_NEAR(h.data<float>()[i], 2 * std::cos(2 * xi), 1e-5);
  }
}

}  // namespace
