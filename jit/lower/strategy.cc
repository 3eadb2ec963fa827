// minijax lowering strategy table (jit/lower/strategy.h): the rule tables of jit/lower/ and the
// call primitives of jit/inline_calls.h, looked up in that order of precedence.
#include "jit/lower/strategy.h"

#include <set>

#include "jit/lower/lowering.h"
#include "jit/lower/program.h"

namespace minijax::lower {

namespace {

// The primitives inline_calls removes (its call-body table and identity tag, jit/inline_calls.cc).
const std::set<std::string>& inlined() {
  static const std::set<std::string> s = {"pjit", "closed_call", "checkpoint", "custom_jvp_call", "custom_vjp_call",
                                          "name"};
  return s;
}

}  // namespace

std::string lowering_strategy(const std::string& primitive) {
  if (reduction_rules().count(primitive)) return "reduction";
  if (elemental_rules().count(primitive)) return "fused loop";
  if (auto it = program_rules().find(primitive); it != program_rules().end()) return it->second.strategy;
  if (inlined().count(primitive)) return "inlined";
  return "";
}

}  // namespace minijax::lower
