// minijax compiler pass inline_calls: call equations replaced by their bodies.
// Owns inline_calls (the pass that runs after dce and before simplify in jit/pipeline.cc).
#pragma once
#include "core/jaxpr.h"

namespace minijax {

/// Takes any jaxpr; returns an equivalent one in which every `pjit`, `closed_call`,
/// `checkpoint`, `custom_jvp_call` and `custom_vjp_call` equation is replaced by the equations
/// of its body (for checkpoint: its body, optimization_barrier equations included, so
/// prevent_cse survives; for the custom-derivative calls: the primal `call_jaxpr`), with fresh
/// variables and the equation's operands substituted for the body's inputs, and every `name`
/// equation (checkpoint_name's identity) by its operand. Recursive: calls inside inlined bodies
/// and inside the bodies of scan, while, cond (any equation with nested jaxprs, whose params
/// are rebuilt) are inlined too. Nothing else changes: the other equations, their order, the
/// jaxpr's inputs, constvars and effects stay as they were (the outvars are substituted).
/// A call body's rank-0 constants become literals; a call whose body closes over a larger
/// constant cannot be expressed in a Jaxpr without constants and is kept (its body still
/// inlined into); the ClosedJaxpr overload hoists those constants at the top level instead.
/// Source: JAX's pe.inline_jaxpr_into_trace / core.jaxpr_as_fun inlining of closed_call and
/// pjit(inline=True) (jax/_src/interpreters/partial_eval.py); the remat body as in
/// jax/_src/ad_checkpoint.py remat_expansion.
Jaxpr inline_calls(const Jaxpr& j);
/// As above; array constants of inlined call bodies become new constvars of the top level
/// (appended, with their values appended to consts), so no call equation remains: those of
/// calls inside a scan, while or cond body are threaded out as new leading loop constants
/// (scan's num_consts, while's cond_nconsts/body_nconsts) or new leading branch inputs (cond;
/// unused by the other branches), level by level (JAX's closure conversion of loop bodies,
/// pe.convert_constvars_jaxpr). Calls inside other equations' bodies keep their constants.
ClosedJaxpr inline_calls(const ClosedJaxpr& j);

}  // namespace minijax
