// minijax lowering strategy table (jit/codegen/lower/strategy.h): the rule tables of jit/codegen/lower/ and the
// primitives inline_calls removes (Primitive::inlined), looked up in that order of precedence.
#include "jit/codegen/lower/strategy.h"

#include "core/primitive.h"
#include "core/primitive_facts.h"
#include "jit/codegen/lower/lowering.h"
#include "jit/codegen/lower/program.h"

namespace minijax::lower {

std::string lowering_strategy(const std::string& primitive) {
  if (reduction_rules().count(primitive)) return "reduction";
  if (elemental_rules().count(primitive)) return "fused loop";
  if (auto it = program_rules().find(primitive); it != program_rules().end()) return it->second.strategy;
  if (auto* p = find_primitive(primitive); p && p->inlined) return "inlined";
  return "";
}

namespace {

// A fact every primitive must have (core/primitive_facts.h): the compiler cannot compile a program
// that holds a primitive without a lowering.
Registrar require_lowering([] {
  minijax::detail::require_fact(
      {"no lowering (no elemental, reduction or program rule in jit/codegen/lower/, and not inlined)",
       [](const Primitive& p) { return !lowering_strategy(p.name).empty(); }});
});

}  // namespace

}  // namespace minijax::lower
