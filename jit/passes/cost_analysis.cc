// minijax cost analysis: each equation's cost by its primitive's cost class (core/primitive.h),
// summed over a fused program; loops, calls and fusions cost their bodies through their own rules.
#include "jit/passes/cost_analysis.h"

#include <algorithm>

#include "core/errors.h"
#include "core/primitive.h"

namespace minijax {

namespace {

CostEstimate jaxpr_cost(const Jaxpr& j, bool count_bytes);

// The cost of one equation, by its primitive's cost class (core/primitive.h).
CostEstimate eqn_cost(const Eqn& e, bool count_bytes) {
  const Primitive& p = *e.primitive;
  const double out = e.outputs.empty() ? 0 : double(e.outputs[0].aval().size());
  CostEstimate c;
  switch (p.cost_class) {
    case CostClass::custom:
      if (!p.cost) throw ValueError("cost_analysis: primitive " + p.name + " has no cost rule");
      return p.cost(e, count_bytes, jaxpr_cost);
    case CostClass::view:
      return c;
    case CostClass::arithmetic:
      c = operand_and_result_bytes(e, count_bytes);
      c.flops = out * double(std::max<size_t>(1, e.outputs.size()));
      return c;
    case CostClass::transcendental:
      c = operand_and_result_bytes(e, count_bytes);
      c.transcendentals = out;
      return c;
    case CostClass::reduction:
      c = operand_and_result_bytes(e, count_bytes);
      c.flops = double(atom_aval(e.inputs[0]).size()) - out;
      return c;
    case CostClass::data_movement:
    case CostClass::unset:  // a primitive registered outside the library: bytes only, as before
      return operand_and_result_bytes(e, count_bytes);
  }
  return operand_and_result_bytes(e, count_bytes);
}

CostEstimate jaxpr_cost(const Jaxpr& j, bool count_bytes) {
  CostEstimate c;
  for (auto& e : j.eqns) c += eqn_cost(e, count_bytes);
  return c;
}

}  // namespace

std::map<std::string, double> cost_analysis(const Jaxpr& program) {
  CostEstimate c = jaxpr_cost(program, true);
  return {{"flops", c.flops}, {"transcendentals", c.transcendentals}, {"bytes accessed", c.bytes}};
}

}  // namespace minijax
