// minijax call primitives: `pjit` (what mj::jit binds) and `closed_call` (named sub-computations).
// Owns their shape rules, eager implementations (eval_jaxpr) and DCE rules.
#pragma once
#include <source_location>
#include <string>
#include <vector>

#include "core/jaxpr.h"
#include "core/primitive.h"

namespace minijax {

/// The `pjit` primitive, params `jaxpr` (ClosedJaxprPtr, no constvars left: mj::jit passes its
/// constants as leading operands) and `name` (string). Shape rule: the operands must match the
/// jaxpr's invars (count, shape, dtype, memory kind; TypeError otherwise); the outputs are its
/// out avals. Impl: eval_jaxpr on the concrete operands. Printed as JAX prints it:
/// `pjit[name=f jaxpr={ lambda ; ... }]`.
const Primitive& pjit_p();
/// The `closed_call` primitive, params `call_jaxpr` (ClosedJaxprPtr) and `name`; same rules.
const Primitive& closed_call_p();

/// Runs a `pjit` equation bound on concrete operands outside any trace (grad(jit(f)) and
/// vmap(jit(f)) bind such equations). jit/ installs the compiler here when the library loads, so
/// they run natively; without one (core alone) pjit evaluates its body with eval_jaxpr.
using PjitExecutor = std::vector<Array> (*)(const ClosedJaxprPtr& body, const std::string& name,
                                            const std::vector<Array>& args);
void set_pjit_executor(PjitExecutor executor);
/// The installed executor (null: eval_jaxpr).
PjitExecutor pjit_executor();

/// JAX's pe.convert_constvars_jaxpr: the jaxpr with its constvars moved to the front of its
/// invars (so constants can be passed as operands).
Jaxpr convert_constvars_jaxpr(const Jaxpr& j);

/// Binds one call equation of primitive p (pjit_p() or closed_call_p()) applying `jaxpr` (whose
/// constvars must have been converted to invars) to args.
std::vector<Array> bind_call(const Primitive& p, const ClosedJaxprPtr& jaxpr, const std::string& name,
                             const std::vector<Array>& args,
                             std::source_location loc = std::source_location::current());

}  // namespace minijax
