// minijax tests: long programs compile and run on a 1 MB thread stack.
// Owns the default-suite checks: a 20,000-equation chain, a 10,000-deep nest of closed_calls
// through every pass, the tracing depth, and max_fusion_equations; the 100,000-equation chain is tests/long.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <minijax/minijax.h>

#include "core/bodies.h"
#include "autodiff/partial_eval.h"
#include "core/dce.h"
#include "core/parser.h"
#include "jit/passes/inline_calls.h"
#include "jit/long_program_helpers.h"
#include "jit/lowering_helpers.h"
#include "small_stack.h"
#include "values.h"

namespace {

using mj::Array;
using minijax_test::chain;
using minijax_test::chain_closed_form;
using minijax_test::kChainTolerance;
using minijax_test::run_on_small_stack;

/// Restores the settings a test changes.
struct ConfigGuard {
  mj::Config saved = mj::config();
  ~ConfigGuard() { mj::config() = saved; }
};

/// The fusion equations of a compiled program and the largest number of equations in one.
std::pair<size_t, size_t> kernels_and_largest(const mj::Jaxpr& program) {
  size_t kernels = 0, largest = 0;
  for (auto& e : program.eqns) {
    if (e.primitive->name != "fusion") continue;
    ++kernels;
    largest = std::max(largest, mj::subjaxprs(e).at(0).jaxpr->jaxpr->eqns.size());
  }
  return {kernels, largest};
}

// Before the fix the fused kernel's emitter recursed once per operand and overflowed the stack
// (SIGSEGV at about 16,000 equations on an 8 MB stack, far fewer on 1 MB).
TEST(LongPrograms, TwentyThousandEquationChainCompilesRunsAndEqualsEager) {
  run_on_small_stack([] {
    const int links = 10000;  // 20,000 equations
    auto f = mj::jit([](const Array& x) { return chain(x, links); });
    Array x = mj::full({16}, 0.5);
    Array got = f(x);
    Array want = chain(x, links);  // eager
    EXPECT_TRUE(lowtest::bit_equal(got, want)) << got << "\n" << want;
    const float* g = got.data<float>();
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(g[i], chain_closed_form(0.5, links), kChainTolerance) << i;
    // A chain of 8,000 links reduced by a sum.
    auto r = mj::jit([](const Array& x) { return mj::sum(chain(x, 8000)); })(x);
    EXPECT_NEAR(r.item<float>(), 16 * chain_closed_form(0.5, 8000), 16 * kChainTolerance);
  });
}

TEST(LongPrograms, NoKernelHoldsMoreThanMaxFusionEquations) {
  ConfigGuard guard;
  // The default splits a 6,001-equation chain into kernels of at most the default's equations.
  const int64_t by_default = mj::Config{}.max_fusion_equations;
  ASSERT_EQ(mj::config().max_fusion_equations, by_default);
  {
    auto f = mj::jit([](const Array& x) { return chain(x * 0.625, 3000); });
    Array x = mj::full({8}, 0.5);
    auto [kernels, largest] = kernels_and_largest(f.lower(x).compile().executable()->program);
    EXPECT_LE(largest, size_t(by_default));
    EXPECT_GE(kernels, size_t(6001 / by_default));
    EXPECT_TRUE(lowtest::bit_equal(f(x), chain(x * 0.625, 3000)));
  }
  run_on_small_stack([] {
    mj::config().max_fusion_equations = 64;
    auto f = mj::jit([](const Array& x) { return chain(x * 0.75, 1000); });  // 2,001 equations
    Array x = mj::full({8}, 0.25);
    auto [kernels, largest] = kernels_and_largest(f.lower(x).compile().executable()->program);
    EXPECT_LE(largest, 64u);
    EXPECT_GE(kernels, 2001u / 64u);
    EXPECT_TRUE(lowtest::bit_equal(f(x), chain(x * 0.75, 1000)));
    mj::config().max_fusion_equations = 1;  // every equation its own kernel
    auto g = mj::jit([](const Array& x) { return chain(x * 0.5, 10); });
    auto [k1, l1] = kernels_and_largest(g.lower(x).compile().executable()->program);
    EXPECT_EQ(l1, 1u);
    EXPECT_EQ(k1, 21u);
    EXPECT_TRUE(lowtest::bit_equal(g(x), chain(x * 0.5, 10)));
  });
}

// The emitter reads an operand at a new index by a call: 2,000 transposes in one kernel
// overflowed the 1 MB stack before groups were capped at 128 index_map equations.
TEST(LongPrograms, ChainOfTwoThousandTransposesCompilesRunsAndEqualsEager) {
  ConfigGuard guard;
  run_on_small_stack([] {
    mj::config().max_fusion_equations = 100000;  // only the index_map bound splits the chain
    auto t_chain = [](const Array& x) {
      Array y = x;
      for (int i = 0; i < 2000; ++i) y = mj::transpose(y) * 0.999;
      return y;
    };
    auto f = mj::jit(t_chain);
    Array x = mj::reshape(mj::arange(0.0, 64.0), {8, 8}) * 0.01;
    EXPECT_TRUE(lowtest::bit_equal(f(x), t_chain(x)));  // eager
    size_t transposes_in_largest = 0;
    for (auto& e : f.lower(x).compile().executable()->program.eqns) {
      if (e.primitive->name != "fusion") continue;
      size_t t = 0;
      for (auto& be : mj::subjaxprs(e).at(0).jaxpr->jaxpr->eqns) t += be.primitive->name == "transpose";
      transposes_in_largest = std::max(transposes_in_largest, t);
    }
    EXPECT_GT(transposes_in_largest, 0u);
    EXPECT_LE(transposes_in_largest, 128u);
  });
}

TEST(LongPrograms, BadMaxFusionEquationsIsAValueErrorAtTheNextCompile) {
  ConfigGuard guard;
  for (int64_t bad : {int64_t(0), int64_t(-3)}) {
    mj::config().max_fusion_equations = bad;
    // A program no other test compiles (a cache hit would not compile).
    auto f = mj::jit([bad](const Array& x) { return x * 0.123457 + double(bad); });
    try {
      f(mj::full({4}, 1.0));
      ADD_FAILURE() << "no error for max_fusion_equations = " << bad;
    } catch (const mj::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("max_fusion_equations"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
      // The user's line: the jit call's site (check_max_fusion_equations where a compile starts).
      EXPECT_NE(std::string(e.what()).find("test_long_programs.cc"), std::string::npos) << e.what();
    }
  }
}

// A user function that nests closed_call inside itself `depth` levels deep, adding 1 per level.
Array nested(const Array& x, int depth) {
  if (depth == 0) return x;
  return mj::closed_call([depth](const Array& y) { return nested(y, depth - 1) + 1.0; }, "level")(x);
}
const int kNestedCallLine = __LINE__ - 2;

// Before the limit, tracing 10,000 nested closed_calls overflowed the 1 MB stack (SIGSEGV).
TEST(LongPrograms, TracingDeeperThanMaxTraceDepthIsAValueErrorNamingTheDepthAndLine) {
  run_on_small_stack([] {
    try {
      mj::make_jaxpr([](const Array& x) { return nested(x, 10000); })(mj::full({4}, 1.0));
      ADD_FAILURE() << "no error for 10,000 nested closed_calls";
    } catch (const mj::ValueError& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("max_trace_depth = " + std::to_string(mj::config().max_trace_depth)), std::string::npos) << w;
      EXPECT_NE(w.find("test_long_programs.cc:" + std::to_string(kNestedCallLine)), std::string::npos) << w;
    }
    // Within the depth, nesting works: x + 100 (closed form).
    auto f = mj::jit([](const Array& x) { return nested(x, 100); });
    EXPECT_EQ(minijax_test::vals(f(mj::full({4}, 1.0))), std::vector<float>(4, 101.0f));
  });
}

TEST(LongPrograms, BadMaxTraceDepthIsAValueError) {
  ConfigGuard guard;
  mj::config().max_trace_depth = 0;
  EXPECT_THROW(mj::make_jaxpr([](const Array& x) { return x + 1.0; })(mj::full({2}, 1.0)), mj::ValueError);
  mj::config().max_trace_depth = 3;  // make_jaxpr, then two closed_calls: the third is refused
  EXPECT_NO_THROW(mj::make_jaxpr([](const Array& x) { return nested(x, 2); })(mj::full({2}, 1.0)));
  EXPECT_THROW(mj::make_jaxpr([](const Array& x) { return nested(x, 3); })(mj::full({2}, 1.0)), mj::ValueError);
}

// Before the fix: the parser, the printer, verify, DCE, inlining, eager evaluation and
// destroying the nest all recursed once per level and overflowed the stack.
TEST(LongPrograms, TenThousandDeepNestOfClosedCallsGoesThroughEveryPass) {
  run_on_small_stack([] {
    const int depth = 10000;
    const std::string text = minijax_test::nested_calls_text(depth, 16);
    mj::ClosedJaxpr parsed = mj::parse_jaxpr(text);  // parse_jaxpr verifies it too
    // The printer writes every 16th level as a shared jaxpr; the text reads back to itself.
    const std::string printed = mj::to_string(parsed);
    EXPECT_EQ(mj::to_string(mj::parse_jaxpr(printed)), printed);
    mj::verify_jaxpr(parsed);
    EXPECT_FALSE(mj::jaxpr_has_effects(*parsed.jaxpr));
    // DCE keeps everything (every value is used).
    auto [pruned, used] = mj::dce_jaxpr(*parsed.jaxpr, {true});
    EXPECT_EQ(pruned.eqns.size(), 1u);
    EXPECT_EQ(used, std::vector<bool>{true});
    // Partial evaluation, input unknown: everything is staged; known: everything is known.
    auto unknown = mj::partial_eval_jaxpr_custom(*parsed.jaxpr, {true}, {true}, {false}, {false});
    EXPECT_EQ(unknown.out_unknowns, std::vector<bool>{true});
    auto known = mj::partial_eval_jaxpr_custom(*parsed.jaxpr, {false}, {false}, {false}, {false});
    EXPECT_EQ(known.out_unknowns, std::vector<bool>{false});
    // Inlining flattens the nest into the 20,000-equation chain.
    mj::ClosedJaxpr flat = mj::inline_calls(parsed);
    EXPECT_EQ(flat.jaxpr->eqns.size(), size_t(2 * depth));
    // The compiler: jit of the parsed jaxpr (staged as one closed_call equation), checked against
    // the eager chain of the same operations and the closed form.
    auto f = mj::jit([&](const Array& x) { return mj::eval_jaxpr(parsed, {x})[0]; });
    Array x = mj::full({16}, 0.5);
    Array got = f(x);
    EXPECT_TRUE(lowtest::bit_equal(got, chain(x, depth)));
    EXPECT_NEAR(got.data<float>()[3], chain_closed_form(0.5, depth), kChainTolerance);
    // Eager evaluation of the nest (closed_call's impl evaluates its body).
    EXPECT_TRUE(lowtest::bit_equal(mj::eval_jaxpr(parsed, {x})[0], got));
    // grad traces each level's JVP inside the level above: beyond max_trace_depth that is a
    // ValueError, not a crash; a nest of 100 levels differentiates to d/dx = 0.999^100.
    auto g = [](const mj::ClosedJaxpr& j) {
      return mj::grad([j](const Array& x) { return mj::sum(mj::eval_jaxpr(j, {x})[0]); });
    };
    try {
      g(parsed)(x);
      ADD_FAILURE() << "grad of a 10,000-deep nest gave no error";
    } catch (const mj::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("max_trace_depth"), std::string::npos) << e.what();
    }
    Array d = g(mj::parse_jaxpr(minijax_test::nested_calls_text(100, 16)))(x);
    EXPECT_NEAR(d.data<float>()[5], std::pow(0.999, 100), 1e-5);
    // Inline nesting beyond 64 levels is refused with a ValueError, not a crash.
    std::string deep = "{ lambda ; a:f32[2]. let b:f32[2] = mul a 2.0:f32[] in (b,) }";
    for (int k = 0; k < 200; ++k)
      deep = "{ lambda ; a:f32[2]. let b:f32[2] = closed_call[call_jaxpr=" + deep + " name=n] a in (b,) }";
    EXPECT_THROW(mj::parse_jaxpr(deep), mj::ValueError);
  });
}

}  // namespace
