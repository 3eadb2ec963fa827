// Tests of checkpoint's prevent_cse as JAX has it: a bool, or one flag per traced argument
// (jax/_src/ad_checkpoint.py: a tuple broadcast to the leaves, False for closed-over values, True
// for JVP tangents, residuals and cotangents, filtered by DCE), printed and parsed as a tuple.
// Expected gradients: closed forms in the comments; float64 central differences (check_grads).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <minijax/minijax.h>

#include "core/dce.h"
#include "core/parser.h"

namespace {

using mj::Array;

// The text of every optimization_barrier line in a printed jaxpr.
std::vector<std::string> barrier_lines(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = text.find("optimization_barrier", at)) != std::string::npos) {
    size_t b = text.rfind('\n', at), e = text.find('\n', at);
    out.push_back(text.substr(b == std::string::npos ? 0 : b + 1, e - (b == std::string::npos ? 0 : b + 1)));
    at = e;
  }
  return out;
}

// Operands of the barrier on `line` (the atoms after the primitive's name).
int barrier_operands(const std::string& line) {
  size_t at = line.find("optimization_barrier") + std::string("optimization_barrier").size();
  int n = 0;
  bool in = false;
  for (; at < line.size(); ++at) {
    bool word = line[at] != ' ';
    if (word && !in) ++n;
    in = word;
  }
  return n;
}

// f(x, y) = sum(sin(x * c) * cos(y)) with c = [1, 2, 3] closed over.
Array c3() { return mj::array({1.f, 2.f, 3.f}); }

TEST(PreventCse, PerArgumentFlagsArePrintedPerOperandWithClosedOverValuesFalse) {
  Array c = c3();
  auto f = mj::checkpoint([c](const Array& x, const Array& y) { return mj::sum(mj::sin(x * c) * mj::cos(y)); },
                          {.prevent_cse = {true, false}});
  Array x = mj::array({0.1f, 0.2f, 0.3f}), y = mj::array({0.4f, 0.5f, 0.6f});
  std::string s = mj::to_string(mj::make_jaxpr(f)(x, y));
  EXPECT_NE(s.find("prevent_cse=(False, True, False)"), std::string::npos) << s;
  // A pytree argument's flag holds for each of its leaves.
  auto g = mj::checkpoint([](const std::pair<Array, Array>& p, const Array& z) { return mj::sum(p.first * p.second * z); },
                          {.prevent_cse = {false, true}});
  std::string t = mj::to_string(mj::make_jaxpr(g)(std::pair{x, y}, x));
  EXPECT_NE(t.find("prevent_cse=(False, False, True)"), std::string::npos) << t;
  // A bool prints as a bool.
  auto h = mj::checkpoint([](const Array& v) { return mj::sin(v); }, {.prevent_cse = false});
  EXPECT_NE(mj::to_string(mj::make_jaxpr(h)(x)).find("prevent_cse=False"), std::string::npos);
}

// Static arguments have no flag (JAX's tuple is over the dynamic arguments).
TEST(PreventCse, StaticArgumentsHaveNoFlag) {
  auto f = mj::checkpoint([](int k, const Array& x) { return mj::sin(x) * double(k); }, {.prevent_cse = {false}});
  std::string s = mj::to_string(mj::make_jaxpr([&](const Array& x) { return f(2, x); })(mj::ones({2})));
  EXPECT_NE(s.find("prevent_cse=(False,)"), std::string::npos) << s;
  auto g = mj::checkpoint([](const Array& a, const Array& b) { return a * b; },
                          {.prevent_cse = {true}, .static_argnums = {1}});
  std::string t = mj::to_string(mj::make_jaxpr([&](const Array& x) { return g(x, mj::ones({2})); })(mj::ones({2})));
  // The static Array is read by the body as a closed-over value (an operand, False), then a's flag.
  EXPECT_NE(t.find("prevent_cse=(False, True)"), std::string::npos) << t;
}

// The error names the line that made the checkpoint (the options are given there).
TEST(PreventCse, WrongNumberOfFlagsIsAValueErrorNamingTheCounts) {
  const int line = __LINE__ + 1;
  auto f = mj::checkpoint([](const Array& x, const Array& y) { return x * y; }, {.prevent_cse = {true, false, true}});
  try {
    f(mj::ones({2}), mj::ones({2}));
    FAIL() << "three flags for two arguments must raise";
  } catch (const mj::ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("prevent_cse lists 3 flags for a call with 2 traced arguments"), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(line)), std::string::npos) << m;
  }
}

// Under grad the recomputing checkpoint reads through a barrier only the operands whose flag is
// set: x (True) and no closed-over value or y (False). With True for both, x and y; with False,
// no barrier at all.
TEST(PreventCse, TheBarrierCoversOnlyTheFlaggedOperands) {
  Array c = c3(), x = mj::array({0.1f, 0.2f, 0.3f}), y = mj::array({0.4f, 0.5f, 0.6f});
  auto body = [c](const Array& a, const Array& b) { return mj::sum(mj::sin(a * c) * mj::cos(b)); };
  struct Case {
    mj::PreventCse flags;
    int barriers, operands;
  };
  for (const Case& k : {Case{mj::PreventCse{true, false}, 1, 1}, Case{mj::PreventCse{false, true}, 1, 1},
                        Case{mj::PreventCse{true, true}, 1, 2}, Case{mj::PreventCse{false, false}, 0, 0},
                        Case{true, 1, 3}, Case{false, 0, 0}}) {
    auto f = mj::checkpoint(body, {.prevent_cse = k.flags});
    std::string s = mj::to_string(mj::make_jaxpr(mj::grad(f, mj::argnums<0, 1>))(x, y));
    std::vector<std::string> bars = barrier_lines(s);
    ASSERT_EQ(int(bars.size()), k.barriers) << s;
    if (!bars.empty()) EXPECT_EQ(barrier_operands(bars[0]), k.operands) << bars[0] << "\n" << s;
    // d/dx = c cos(x c) cos(y), d/dy = -sin(x c) sin(y), eager and compiled.
    auto [gx, gy] = mj::grad(f, mj::argnums<0, 1>)(x, y);
    auto [jx, jy] = mj::jit(mj::grad(f, mj::argnums<0, 1>))(x, y);
    for (int i = 0; i < 3; ++i) {
      double xi = 0.1 * (i + 1), yi = 0.1 * (i + 4), ci = i + 1;
      EXPECT_NEAR(gx.data<float>()[i], ci * std::cos(xi * ci) * std::cos(yi), 1e-6);
      EXPECT_NEAR(gy.data<float>()[i], -std::sin(xi * ci) * std::sin(yi), 1e-6);
      EXPECT_NEAR(jx.data<float>()[i], gx.data<float>()[i], 1e-6);
      EXPECT_NEAR(jy.data<float>()[i], gy.data<float>()[i], 1e-6);
    }
  }
}

// The flags follow every transformation: jvp (True per tangent), linearize's split (True per
// residual), transpose (True per cotangent), vmap (False for the batched body's constants), DCE
// (a dropped operand's flag dropped). Second-order derivatives and per-example gradients are
// checked against float64 finite differences; a wrong flag count would raise a TypeError.
TEST(PreventCse, FlagsFollowJvpTransposeVmapAndDce) {
  Array c = c3();
  auto f = mj::checkpoint(
      [c](const Array& a, const Array& b, const Array& unused) {
        (void)unused;
        return mj::sum(mj::sin(a * c) * mj::cos(b));
      },
      {.prevent_cse = {false, true, true}});
  Array x = mj::array({0.1f, 0.2f, 0.3f}), y = mj::array({0.4f, 0.5f, 0.6f});
  auto fx = [&](const Array& a) { return f(a, y, x); };
  mj::check_grads(fx, x, 2, {"fwd", "rev"});
  mj::check_grads(mj::jit(fx), x, 2, {"fwd", "rev"});
  // Per-example gradients (vmap of grad) against the closed form.
  Array xs = mj::reshape(mj::arange(6, mj::f32), {2, 3}) * 0.1f;
  Array g = mj::vmap([&](const Array& a) { return mj::grad(fx)(a); })(xs);
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 3; ++i) {
      double xi = 0.1 * (3 * r + i), yi = 0.1 * (i + 4), ci = i + 1;
      EXPECT_NEAR(g.data<float>()[3 * r + i], ci * std::cos(xi * ci) * std::cos(yi), 1e-6);
    }
  // DCE: the body does not read `unused`, so the checkpoint drops that operand and its flag:
  // (c, a, b, unused) = (False, False, True, True) becomes (False, False, True).
  mj::ClosedJaxpr j = mj::make_jaxpr(fx)(x);
  std::string before = mj::to_string(j);
  ASSERT_NE(before.find("prevent_cse=(False, False, True, True)"), std::string::npos) << before;
  auto [dced, used] = mj::dce_jaxpr(*j.jaxpr, std::vector<bool>(j.jaxpr->outvars.size(), true));
  std::string after = mj::to_string(dced);
  EXPECT_NE(after.find("prevent_cse=(False, False, True)"), std::string::npos) << after;
  EXPECT_EQ(after.find("prevent_cse=(False, False, True, True)"), std::string::npos) << after;
}

// A printed per-operand prevent_cse parses back to the same parameter (and the same text).
TEST(PreventCse, TupleRoundTripsThroughTheParser) {
  Array c = c3();
  auto f = mj::checkpoint([c](const Array& a, const Array& b) { return mj::sum(mj::sin(a * c) * b); },
                          {.prevent_cse = {true, false}});
  Array x = mj::array({0.1f, 0.2f, 0.3f});
  mj::ClosedJaxpr j = mj::make_jaxpr(mj::grad(f))(x, x);
  std::string text = mj::to_string(j);
  ASSERT_NE(text.find("prevent_cse=("), std::string::npos) << text;
  mj::ClosedJaxpr back = mj::parse_jaxpr(text, j.consts);
  EXPECT_EQ(mj::to_string(back), text);
  // A tuple of the wrong length is refused by the type check (TypeError naming both counts).
  std::string bad = text;
  size_t at = bad.find("prevent_cse=(");
  size_t end = bad.find(')', at);
  bad.replace(at, end - at + 1, "prevent_cse=(True, True, True, True, True, True, True)");
  try {
    mj::parse_jaxpr(bad, j.consts);
    FAIL() << "a prevent_cse tuple of the wrong length must be refused";
  } catch (const mj::Error& e) {
    EXPECT_NE(std::string(e.what()).find("flags for"), std::string::npos) << e.what();
  }
}

}  // namespace
