// Tests of the inline_calls pass: call equations (pjit, closed_call, checkpoint, custom_jvp_call,
// custom_vjp_call) and `name` replaced by their bodies, recursively, values unchanged bit for bit.
#include <gtest/gtest.h>

#include <random>

#include "jit/passes/inline_calls.h"
#include "pass_helpers.h"

namespace {

using mj::Array;
using passtest::count_eqns;
using passtest::expect_same_values;

const char* kCalls[] = {"pjit", "closed_call", "checkpoint", "custom_jvp_call", "custom_vjp_call", "name"};

int count_calls(const mj::Jaxpr& j) {
  int n = 0;
  for (const char* c : kCalls) n += count_eqns(j, c);
  return n;
}

/// Inlines `cj`, verifies the result, expects no call left, equal values on random inputs.
mj::Jaxpr check_inline(const mj::ClosedJaxpr& cj, const std::string& what, int min_calls = 1) {
  EXPECT_GE(count_calls(*cj.jaxpr), min_calls) << what << ": the program has no call to inline\n" << cj;
  mj::Jaxpr r = mj::inline_calls(*cj.jaxpr);
  EXPECT_NO_THROW(mj::verify_jaxpr(r)) << what << "\n" << r;
  EXPECT_EQ(count_calls(r), 0) << what << "\n" << r;
  EXPECT_EQ(r.invars.size(), cj.jaxpr->invars.size());
  EXPECT_EQ(r.outvars.size(), cj.jaxpr->outvars.size());
  expect_same_values(*cj.jaxpr, r, cj.consts, what);
  return r;
}

Array x4() { return passtest::random_array({4}, 1, mj::f32, false); }

TEST(InlineCalls, NestedJit) {
  auto inner = mj::jit([](const Array& x) { return mj::sin(x) * x; }, "inner");
  auto outer = mj::jit([&](const Array& x) { return inner(x) + inner(mj::cos(x)); }, "outer");
  auto cj = mj::make_jaxpr([&](const Array& x) { return outer(x) * 2.0; })(x4());
  EXPECT_EQ(count_eqns(*cj.jaxpr, "pjit"), 3);  // outer, and inner twice inside it
  mj::Jaxpr r = check_inline(cj, "nested jit");
  // sin, mul (inner) twice, cos, add, mul 2.0: 7 equations, the same body inlined twice with
  // fresh variables (verify_jaxpr above rejects a variable bound twice).
  EXPECT_EQ(r.eqns.size(), 7u) << r;
  EXPECT_EQ(count_eqns(r, "sin"), 2);
}

TEST(InlineCalls, ClosedCallAndNameAndOutvarsSubstituted) {
  auto cc = mj::closed_call([](const Array& x) { return std::pair{mj::checkpoint_name(mj::exp(x), "e"), x}; }, "pair");
  auto cj = mj::make_jaxpr([&](const Array& x) { return cc(x); })(x4());
  mj::Jaxpr r = check_inline(cj, "closed_call");
  // exp only; the second result is the input itself (an outvar substituted by the invar).
  ASSERT_EQ(r.eqns.size(), 1u) << r;
  EXPECT_EQ(r.eqns[0].primitive->name, "exp");
  EXPECT_TRUE(std::get<mj::Var>(r.outvars[1]) == r.invars[0]);
}

TEST(InlineCalls, GradOfCheckpointWithPolicyKeepsTheBarrier) {
  auto f = mj::checkpoint([](const Array& v) { return mj::sin(mj::matmul(v, v)) * v; },
                          {.policy = mj::checkpoint_policies::dots_saveable()});
  auto loss = [&](const Array& v) { return mj::sum(f(mj::checkpoint_name(v, "in"))); };
  Array x = passtest::random_array({3, 3}, 2, mj::f32, false);
  auto cj = mj::make_jaxpr([&](const Array& v) { return mj::value_and_grad(loss)(v); })(x);
  const int barriers = count_eqns(*cj.jaxpr, "optimization_barrier");
  EXPECT_GE(barriers, 1) << cj;
  mj::Jaxpr r = check_inline(cj, "grad of checkpoint");
  EXPECT_EQ(count_eqns(r, "optimization_barrier"), barriers) << r;
}

TEST(InlineCalls, ScanContainingAJitAndWhileAndCondBodies) {
  auto step = mj::jit([](const Array& c, const Array& x) { return mj::tanh(c * x); }, "step");
  auto f = [&](const Array& init, const Array& xs) {
    auto [c, ys] = mj::scan([&](const Array& c, const Array& x) {
      Array n = step(c, x);
      return std::pair{n, mj::cond(mj::sum(n) > 0.0, [&](const Array& a) { return step(a, a); },
                                   [](const Array& a) { return -a; }, n)};
    }, init, xs);
    Array w = mj::while_loop([](const Array& v) { return mj::sum(v) < 10.0; },
                             [&](const Array& v) { return v + step(v, v) + 1.0; }, c);
    return std::pair{w, ys};
  };
  auto cj = mj::make_jaxpr(f)(x4(), passtest::random_array({5, 4}, 3, mj::f32, false));
  EXPECT_EQ(count_eqns(*cj.jaxpr, "pjit"), 3) << cj;
  mj::Jaxpr r = mj::inline_calls(*cj.jaxpr);
  EXPECT_EQ(count_calls(r), 0) << r;
  EXPECT_EQ(count_eqns(r, "scan"), 1);
  EXPECT_EQ(count_eqns(r, "while"), 1);
  EXPECT_EQ(count_eqns(r, "cond"), 1);
  EXPECT_EQ(count_eqns(r, "tanh"), 3);
  EXPECT_NO_THROW(mj::verify_jaxpr(r));
  // Inputs without NaN/inf so that the while loop ends.
  expect_same_values(*cj.jaxpr, r, cj.consts, "scan/while/cond", /*specials=*/false);
}

TEST(InlineCalls, CustomVjpAndCustomJvpPrimalBodies) {
  auto clip = mj::custom_vjp([](const Array& x) { return mj::sin(x); },
                             [](const Array& x) { return std::pair{mj::sin(x), std::vector<Array>{mj::cos(x)}}; },
                             [](const std::vector<Array>& res, const Array& ct) { return mj::clip(ct * res[0], -1.0, 1.0); },
                             "clipped_sin");
  auto soft = mj::custom_jvp([](const Array& x) { return mj::log1p(mj::exp(x)); },
                             [](const Array& x, const Array& t) {
                               return std::pair{mj::log1p(mj::exp(x)), t * mj::lax::logistic(x)};
                             });
  auto f = [&](const Array& x) { return mj::sum(soft(clip(x) * 3.0)); };
  auto cj = mj::make_jaxpr(f)(x4());
  EXPECT_EQ(count_eqns(*cj.jaxpr, "custom_vjp_call"), 1) << cj;
  EXPECT_EQ(count_eqns(*cj.jaxpr, "custom_jvp_call"), 1) << cj;
  check_inline(cj, "custom_vjp/custom_jvp primal");
  // Their gradient program holds the user rules' equations, already inlined by autodiff.
  auto gj = mj::make_jaxpr(mj::grad(f))(x4());
  mj::Jaxpr gr = mj::inline_calls(*gj.jaxpr);
  EXPECT_EQ(count_calls(gr), 0) << gr;
  expect_same_values(*gj.jaxpr, gr, gj.consts, "grad of custom rules");
}

// A call body closing over an array constant: kept by the Jaxpr overload (it cannot hold the
// constant), inlined by the ClosedJaxpr overload with the constant hoisted to a new constvar.
TEST(InlineCalls, BodyConstantsHoistedAtTheTopLevel) {
  Array table = passtest::random_array({4}, 9, mj::f32, false);
  auto body = std::make_shared<mj::ClosedJaxpr>(mj::trace_to_jaxpr(
      [&](const std::vector<Array>& a) { return std::vector<Array>{a[0] * table + 1.0}; },
      {mj::ShapedArray{{4}, mj::f32}}));
  ASSERT_EQ(body->consts.size(), 1u);
  auto cj = mj::make_jaxpr([&](const Array& x) {
    return mj::bind_call(mj::closed_call_p(), body, "with_table", {mj::exp(x)}).at(0);
  })(x4());
  mj::Jaxpr kept = mj::inline_calls(*cj.jaxpr);
  EXPECT_EQ(count_eqns(kept, "closed_call"), 1) << kept;
  mj::ClosedJaxpr r = mj::inline_calls(cj);
  EXPECT_EQ(count_calls(*r.jaxpr), 0) << r;
  ASSERT_EQ(r.jaxpr->constvars.size(), cj.jaxpr->constvars.size() + 1);
  EXPECT_NO_THROW(mj::verify_jaxpr(r));
  auto args = passtest::random_args(*cj.jaxpr, 4);
  passtest::expect_bitwise_equal(mj::eval_jaxpr(cj, args), mj::eval_jaxpr(r, args), "hoisted constant");
}

// The same call inside a scan body, a scan nested in a scan, a while body and a cond branch: its
// constant is threaded out level by level (a new loop constant or branch input at each level) to
// a new top-level constvar, so no call remains anywhere; the values are unchanged bit for bit.
TEST(InlineCalls, BodyConstantsInsideLoopsAndBranchesAreThreadedOut) {
  Array table = passtest::random_array({4}, 11, mj::f32, false);
  auto body = std::make_shared<mj::ClosedJaxpr>(mj::trace_to_jaxpr(
      [&](const std::vector<Array>& a) { return std::vector<Array>{a[0] * table + 1.0}; },
      {mj::ShapedArray{{4}, mj::f32}}));
  auto call = [body](const Array& x) { return mj::bind_call(mj::closed_call_p(), body, "with_table", {x}).at(0); };
  auto in_scan = [call](const Array& x) {
    auto [c, ys] = mj::scan([&](const Array& c, const Array& r) { return std::pair{call(c) * r, c}; }, x,
                            mj::stack({x, x * 0.5}));
    return c + mj::sum(ys, 0);
  };
  const std::vector<std::pair<std::string, std::function<Array(const Array&)>>> programs = {
      {"scan", in_scan},
      {"scan in scan",
       [in_scan](const Array& x) {
         auto [c, ys] = mj::scan([&](const Array& c, const Array& r) { return std::pair{in_scan(c) * 0.25 + r, c}; },
                                 x, mj::stack({x, mj::cos(x)}));
         return c;
       }},
      {"while",
       [call](const Array& x) {
         auto [i, v] = mj::while_loop([](const std::pair<Array, Array>& s) { return s.first < 3; },
                                      [&](const std::pair<Array, Array>& s) {
                                        return std::pair{s.first + 1, mj::tanh(call(s.second))};
                                      },
                                      std::pair{mj::array({0}, {}, mj::i32), x});
         return v;
       }},
      {"cond",
       [call](const Array& x) {
         return mj::cond(mj::sum(x) > 0, [&](const Array& v) { return call(v); }, [](const Array& v) { return -v; }, x);
       }},
  };
  for (const auto& [what, f] : programs) {
    auto cj = mj::make_jaxpr(f)(x4());
    mj::ClosedJaxpr r = mj::inline_calls(cj);
    EXPECT_EQ(count_calls(*r.jaxpr), 0) << what << "\n" << r;
    EXPECT_EQ(r.jaxpr->constvars.size(), cj.jaxpr->constvars.size() + 1) << what << "\n" << r;
    EXPECT_NO_THROW(mj::verify_jaxpr(r)) << what;
    for (int seed : {1, 2}) {
      auto args = passtest::random_args(*cj.jaxpr, seed);
      passtest::expect_bitwise_equal(mj::eval_jaxpr(cj, args), mj::eval_jaxpr(r, args), what);
    }
  }
}

// Random programs: expression trees whose nodes are wrapped at random in jit, closed_call,
// checkpoint (with a policy), custom_vjp or a scan, evaluated and differentiated.
using Fn = std::function<Array(const Array&, const Array&)>;

Fn random_program(std::mt19937& g, int depth) {
  if (depth == 0) {
    switch (g() % 4) {
      case 0: return [](const Array& x, const Array&) { return mj::sin(x); };
      case 1: return [](const Array& x, const Array& y) { return x * y; };
      case 2: return [](const Array&, const Array& y) { return mj::tanh(y) + 0.5; };
      default: return [](const Array& x, const Array& y) { return mj::maximum(x, y); };
    }
  }
  Fn a = random_program(g, depth - 1), b = random_program(g, depth - 1);
  Fn both = [a, b](const Array& x, const Array& y) { return a(x, y) * 0.75 + mj::cos(b(y, x)); };
  switch (g() % 6) {
    case 0: {
      auto j = mj::jit([both](const Array& x, const Array& y) { return both(x, y); }, "node");
      return [j](const Array& x, const Array& y) { return j(x, y); };
    }
    case 1: {
      auto c = mj::closed_call([both](const Array& x, const Array& y) { return both(x, y); }, "node");
      return [c](const Array& x, const Array& y) { return c(x, y); };
    }
    case 2: {
      auto c = mj::checkpoint([both](const Array& x, const Array& y) { return both(x, y); },
                              {.policy = mj::checkpoint_policies::save_only_these_names({"n"})});
      return [c](const Array& x, const Array& y) { return mj::checkpoint_name(c(x, y), "n"); };
    }
    case 3: {
      auto v = mj::custom_vjp([both](const Array& x, const Array& y) { return both(x, y); },
                              [both](const Array& x, const Array& y) {
                                return std::pair{both(x, y), std::pair{x, y}};
                              },
                              [](const std::pair<Array, Array>& r, const Array& ct) {
                                return std::pair{ct * mj::cos(r.first), ct * r.second};
                              },
                              "node");
      return [v](const Array& x, const Array& y) { return v(x, y); };
    }
    case 4:
      return [both](const Array& x, const Array& y) {
        auto [c, ys] = mj::scan([&](const Array& c, const Array& r) { return std::pair{both(c, r), c}; },
                                x, mj::stack({y, y * 0.5}));
        return c + mj::sum(ys, 0);
      };
    default: return both;
  }
}

TEST(InlineCalls, RandomProgramsAndTheirGradients) {
  int programs_with_calls = 0;
  for (uint32_t seed = 0; seed < 12; ++seed) {
    std::mt19937 g(seed);
    Fn f = random_program(g, 3);
    auto loss = [f](const Array& x, const Array& y) { return mj::sum(f(x, y)); };
    Array x = passtest::random_array({4}, seed + 10, mj::f32, false);
    Array y = passtest::random_array({4}, seed + 20, mj::f32, false);
    for (int pass = 0; pass < 2; ++pass) {
      auto cj = pass == 0 ? mj::make_jaxpr([&](const Array& a, const Array& b) { return f(a, b); })(x, y)
                          : mj::make_jaxpr(mj::grad(loss, mj::argnums<0, 1>))(x, y);
      programs_with_calls += count_calls(*cj.jaxpr) > 0;
      mj::Jaxpr r = mj::inline_calls(*cj.jaxpr);
      EXPECT_EQ(count_calls(r), 0) << "seed " << seed << "\n" << r;
      EXPECT_NO_THROW(mj::verify_jaxpr(r)) << "seed " << seed;
      expect_same_values(*cj.jaxpr, r, cj.consts, "random program " + std::to_string(seed) +
                                                      (pass ? " (grad)" : ""));
    }
  }
  EXPECT_GE(programs_with_calls, 16);  // the generator does produce calls to inline
}

}  // namespace
