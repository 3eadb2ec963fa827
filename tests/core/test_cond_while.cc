// Tests of the cond/switch and while primitives: eager values, staging, DCE and input errors.
// Expected values are computed by hand (derivations in comments) or by plain C++ loops.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <minijax/minijax.h>

#include "core/dce.h"

namespace {

using mj::Array;

float at(const Array& a, int64_t i) { return mj::astype(a, mj::f32).data<float>()[i]; }

TEST(Cond, EagerSelectsBranch) {
  Array x = mj::array({1.f, 2.f, 3.f});
  auto f = [](const Array& v) { return v * 2.0; };
  auto g = [](const Array& v) { return v - 1.0; };
  Array yt = mj::cond(mj::scalar(1, mj::bool_), f, g, x);
  Array yf = mj::cond(mj::scalar(0, mj::bool_), f, g, x);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FLOAT_EQ(at(yt, i), 2.f * float(i + 1));
    EXPECT_FLOAT_EQ(at(yf, i), float(i + 1) - 1.f);
  }
}

TEST(Cond, PytreeOperandsAndOutputs) {
  // Two operands, a pair out: true -> (a + b, a * b), false -> (a - b, b).
  Array a = mj::array({3.f}), b = mj::array({4.f});
  auto t = [](const Array& p, const Array& q) { return std::pair<Array, Array>{p + q, p * q}; };
  auto f = [](const Array& p, const Array& q) { return std::pair<Array, Array>{p - q, q}; };
  auto [u, v] = mj::cond(mj::scalar(1, mj::bool_), t, f, a, b);
  EXPECT_FLOAT_EQ(at(u, 0), 7.f);
  EXPECT_FLOAT_EQ(at(v, 0), 12.f);
  auto [u2, v2] = mj::cond(mj::scalar(0, mj::bool_), t, f, a, b);
  EXPECT_FLOAT_EQ(at(u2, 0), -1.f);
  EXPECT_FLOAT_EQ(at(v2, 0), 4.f);
}

TEST(Cond, ClosedOverValuesAndStaging) {
  Array w = mj::array({10.f, 20.f});
  auto fn = [&](const Array& p, const Array& x) {
    return mj::cond(p, [&](const Array& v) { return v * w; }, [](const Array& v) { return -v; }, x);
  };
  Array x = mj::array({1.f, 2.f});
  Array y = mj::jit(fn)(mj::scalar(1, mj::bool_), x);
  EXPECT_FLOAT_EQ(at(y, 0), 10.f);
  EXPECT_FLOAT_EQ(at(y, 1), 40.f);
  Array z = mj::jit(fn)(mj::scalar(0, mj::bool_), x);
  EXPECT_FLOAT_EQ(at(z, 1), -2.f);
  std::string s = mj::to_string(mj::make_jaxpr(fn)(mj::scalar(1, mj::bool_), x));
  EXPECT_NE(s.find("convert_element_type"), std::string::npos) << s;
  // The closed-over w is a leading operand of both branches (the false branch ignores it).
  EXPECT_NE(s.find("= cond["), std::string::npos) << s;
  EXPECT_NE(s.find("branches=("), std::string::npos) << s;
  EXPECT_NE(s.find("] d a c"), std::string::npos) << s;
}

TEST(Cond, PredicateErrors) {
  Array x = mj::array({1.f});
  auto id = [](const Array& v) { return v; };
  try {
    mj::cond(mj::array({1.f, 0.f}) > 0.0, id, id, x);
    FAIL() << "non-scalar predicate accepted";
  } catch (const mj::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("bool[2]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test_cond_while.cc"), std::string::npos) << e.what();
  }
  try {
    mj::cond(mj::scalar(1.0), id, id, x);
    FAIL() << "float predicate accepted";
  } catch (const mj::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("f32[]"), std::string::npos) << e.what();
  }
}

TEST(Cond, BranchOutputMismatchShowsBoth) {
  Array x = mj::array({1.f, 2.f});
  try {
    mj::cond(mj::scalar(1, mj::bool_), [](const Array& v) { return v; },
             [](const Array& v) { return mj::sum(v); }, x);
    FAIL() << "mismatched branch outputs accepted";
  } catch (const mj::TypeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("f32[2]"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[]"), std::string::npos) << m;
  }
  try {
    mj::cond(mj::scalar(1, mj::bool_), [](const Array& v) { return std::vector<Array>{v}; },
             [](const Array& v) { return std::vector<Array>{v, v}; }, x);
    FAIL() << "mismatched branch structures accepted";
  } catch (const mj::TypeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[*]"), std::string::npos) << m;
    EXPECT_NE(m.find("[*, *]"), std::string::npos) << m;
  }
}

TEST(Switch, ThreeBranchesAndClamping) {
  std::vector<std::function<Array(const Array&)>> br{
      [](const Array& v) { return v + 1.0; }, [](const Array& v) { return v * 3.0; },
      [](const Array& v) { return v * v; }};
  Array x = mj::array({2.f});
  // index 0 -> 3, 1 -> 6, 2 -> 4; out of range clamps: -5 -> branch 0, 7 -> branch 2.
  const int idx[] = {0, 1, 2, -5, 7};
  const float want[] = {3.f, 6.f, 4.f, 3.f, 4.f};
  for (int k = 0; k < 5; ++k)
    EXPECT_FLOAT_EQ(at(mj::switch_(mj::scalar(idx[k], mj::i32), br, x), 0), want[k]) << idx[k];
  EXPECT_THROW(mj::switch_(mj::scalar(1.0), br, x), mj::TypeError);
  std::vector<std::function<Array(const Array&)>> none;
  EXPECT_THROW(mj::switch_(mj::scalar(0, mj::i32), none, x), mj::ValueError);
}

TEST(WhileLoop, CountsAndPytreeCarry) {
  // Doubling 1 until it reaches 100: 1, 2, 4, ..., 128 after 7 steps.
  using C = std::pair<Array, Array>;
  C init{mj::scalar(0, mj::i32), mj::scalar(1.0)};
  C out = mj::while_loop([](const C& c) { return c.second < 100.0; },
                         [](const C& c) { return C{c.first + 1, c.second * 2.0}; }, init);
  EXPECT_EQ(out.first.item<int>(), 7);
  EXPECT_FLOAT_EQ(out.second.item<float>(), 128.f);
  // A loop whose predicate is false from the start returns init.
  C same = mj::while_loop([](const C&) { return mj::scalar(0, mj::bool_); },
                          [](const C& c) { return C{c.first + 1, c.second}; }, init);
  EXPECT_EQ(same.first.item<int>(), 0);
}

TEST(WhileLoop, UnderJitWithClosedOverLimit) {
  auto f = [](const Array& x, const Array& limit) {
    return mj::while_loop([&](const Array& v) { return v < limit; },
                          [](const Array& v) { return v + 3.0; }, x);
  };
  // 1 -> 4 -> 7 -> 10 stops (10 < 10 is false).
  EXPECT_FLOAT_EQ(mj::jit(f)(mj::scalar(1.0), mj::scalar(10.0)).item<float>(), 10.f);
  // The traced limit the predicate closes over becomes its one constant operand.
  std::string s = mj::to_string(mj::make_jaxpr(f)(mj::scalar(1.0), mj::scalar(10.0)));
  EXPECT_NE(s.find("= while["), std::string::npos) << s;
  EXPECT_NE(s.find("] b a"), std::string::npos) << s;
  EXPECT_NE(s.find("cond_nconsts=1"), std::string::npos) << s;
}

TEST(WhileLoop, Errors) {
  Array x = mj::array({1.f, 2.f});
  try {
    mj::while_loop([](const Array& v) { return mj::sum(v) < 10.0; },
                   [](const Array& v) { return mj::astype(v, mj::i32); }, x);
    FAIL() << "body changing the carry dtype accepted";
  } catch (const mj::TypeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("f32[2]"), std::string::npos) << m;
    EXPECT_NE(m.find("i32[2]"), std::string::npos) << m;
    EXPECT_NE(m.find("leaf 0"), std::string::npos) << m;
  }
  EXPECT_THROW(mj::while_loop([](const Array& v) { return v; }, [](const Array& v) { return v; }, x),
               mj::TypeError);
  EXPECT_THROW(mj::while_loop([](const Array& v) { return v < 1.0; },
                              [](const Array& v) { return mj::sum(v); }, x),
               mj::TypeError);
}

TEST(ForiLoop, TracedBounds) {
  // sum_{i=lo}^{hi-1} i * x for lo=2, hi=5: (2+3+4) x = 9 x.
  auto f = [](const Array& lo, const Array& hi, const Array& x) {
    return mj::fori_loop(lo, hi, [&](const Array& i, const Array& acc) {
      return acc + mj::astype(i, mj::f32) * x;
    }, mj::zeros_like(x));
  };
  Array x = mj::array({1.f, -2.f});
  Array y = mj::jit(f)(mj::scalar(2, mj::i32), mj::scalar(5, mj::i32), x);
  EXPECT_FLOAT_EQ(at(y, 0), 9.f);
  EXPECT_FLOAT_EQ(at(y, 1), -18.f);
  // Empty range: hi <= lo gives init.
  Array z = f(mj::scalar(5, mj::i32), mj::scalar(2, mj::i32), x);
  EXPECT_FLOAT_EQ(at(z, 0), 0.f);
}

TEST(CondWhile, DcePrunesUnusedOutputsAndCarries) {
  // cond returning (a*2, b*3): using only the first output removes b from the equation.
  auto f = [](const Array& p, const Array& a, const Array& b) {
    auto r = mj::cond(p, [](const Array& u, const Array& v) { return std::pair<Array, Array>{u * 2.0, v * 3.0}; },
                      [](const Array& u, const Array& v) { return std::pair<Array, Array>{u, v}; }, a, b);
    return r;
  };
  Array x = mj::array({1.f});
  mj::ClosedJaxpr cj = mj::make_jaxpr(f)(mj::scalar(1, mj::bool_), x, x);
  auto [pruned, used] = mj::dce_jaxpr(*cj.jaxpr, {true, false});
  EXPECT_TRUE(used[1]);
  EXPECT_FALSE(used[2]);
  const mj::Eqn* ce = nullptr;
  for (auto& e : pruned.eqns)
    if (e.primitive->name == "cond") ce = &e;
  ASSERT_NE(ce, nullptr);
  EXPECT_EQ(ce->inputs.size(), 2u);
  EXPECT_EQ(ce->outputs.size(), 1u);
  // while over (i, a, b) where b does not feed i or a: unused b is dropped; a, used, stays.
  using T = std::tuple<Array, Array, Array>;
  auto g = [](const Array& a, const Array& b) {
    T r = mj::while_loop([](const T& t) { return std::get<0>(t) < 3; },
                         [](const T& t) { return T{std::get<0>(t) + 1, std::get<1>(t) * 2.0, std::get<2>(t) + 1.0}; },
                         T{mj::scalar(0, mj::i32), a, b});
    return std::get<1>(r);
  };
  mj::ClosedJaxpr wj = mj::make_jaxpr(g)(x, x);
  auto [wp, wused] = mj::dce_jaxpr(*wj.jaxpr, {true});
  EXPECT_TRUE(wused[0]);
  EXPECT_FALSE(wused[1]);
  for (auto& e : wp.eqns)
    if (e.primitive->name == "while") EXPECT_EQ(e.inputs.size(), 2u);
  // The pruned loop still computes a * 2^3.
  auto out = mj::eval_jaxpr(wp, wj.consts, {mj::array({1.5f})});
  EXPECT_FLOAT_EQ(out[0].item<float>(), 12.f);
}

}  // namespace
