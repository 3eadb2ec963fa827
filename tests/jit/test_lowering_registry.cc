// The lowering strategy of every primitive of the registry (jit/codegen/lower/strategy.h): printed one per
// line, and a failure naming each primitive the compiler has no lowering for.
#include <gtest/gtest.h>

#include <iostream>

#include <minijax/minijax.h>

#include "jit/codegen/lower/strategy.h"

namespace {

// Primitives that test files of this binary register for themselves (passtest's effect
// primitive, named test_*): not part of the library's registry.
bool test_only(const std::string& name) { return name.rfind("test_", 0) == 0; }

TEST(LoweringRegistry, EveryPrimitiveHasALoweringStrategy) {
  std::vector<std::string> missing;
  size_t n = 0;
  for (const std::string& p : mj::primitive_names()) {
    if (test_only(p)) continue;
    ++n;
    std::string s = mj::lower::lowering_strategy(p);
    std::cout << "  " << p << ": " << (s.empty() ? "(none)" : s) << "\n";
    if (s.empty()) missing.push_back(p);
  }
  EXPECT_GT(n, 60u);  // the registry is populated (the library's static initializers ran)
  std::string list;
  for (auto& m : missing) list += " " + m;
  EXPECT_TRUE(missing.empty()) << missing.size() << " primitives have no compiled lowering:" << list;
}

TEST(LoweringRegistry, StrategiesOfKnownPrimitives) {
  // By construction (which table holds the rule): spot checks of each kind.
  EXPECT_EQ(mj::lower::lowering_strategy("slice"), "fused loop");
  EXPECT_EQ(mj::lower::lowering_strategy("gather"), "fused loop");
  EXPECT_EQ(mj::lower::lowering_strategy("threefry2x32"), "fused loop");
  EXPECT_EQ(mj::lower::lowering_strategy("argmax"), "reduction");
  EXPECT_EQ(mj::lower::lowering_strategy("reduce_sum"), "reduction");
  EXPECT_EQ(mj::lower::lowering_strategy("dot_general"), "library call");
  EXPECT_EQ(mj::lower::lowering_strategy("scan"), "control flow");
  EXPECT_EQ(mj::lower::lowering_strategy("dynamic_update_slice"), "in-place update");
  EXPECT_EQ(mj::lower::lowering_strategy("bitcast_convert_type"), "view");
  EXPECT_EQ(mj::lower::lowering_strategy("pjit"), "inlined");
  EXPECT_EQ(mj::lower::lowering_strategy("name"), "inlined");
  EXPECT_EQ(mj::lower::lowering_strategy("no_such_primitive"), "");
}

}  // namespace
