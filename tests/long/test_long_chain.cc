// minijax long tests (CTest label `long`, run by tools/long_tests.sh, not by .ci/run): programs
// too long for the default suite. Owns the 100,000-equation elementwise chain.
#include <gtest/gtest.h>

#include <minijax/minijax.h>

#include "jit/long_program_helpers.h"
#include "jit/lowering_helpers.h"
#include "small_stack.h"

namespace {

using mj::Array;

TEST(LongPrograms, HundredThousandEquationChainCompilesRunsAndEqualsEager) {
  minijax_test::run_on_small_stack([] {
    const int links = 50000;  // 100,000 equations
    auto f = mj::jit([](const Array& x) { return minijax_test::chain(x, links); });
    Array x = mj::full({16}, 0.5);
    Array got = f(x);
    EXPECT_TRUE(lowtest::bit_equal(got, minijax_test::chain(x, links)));  // eager
    EXPECT_NEAR(got.data<float>()[0], minijax_test::chain_closed_form(0.5, links), minijax_test::kChainTolerance);
  });
}

}  // namespace
