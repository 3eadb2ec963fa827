// minijax call primitives: `pjit` (what mj::jit binds) and `closed_call` (named sub-computations),
// and register_call_primitive, the one registration of every plain call's shape rule, impl, DCE.
#pragma once
#include <functional>
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

/// What one plain call primitive (pjit, closed_call, checkpoint, fusion) adds to the shared
/// registration of register_call_primitive.
struct CallSpec {
  /// The param holding the body (the primitive's body fact).
  std::string body_param = "jaxpr";
  /// How errors name the body: "called with 2 operands, the <body_name> takes 3".
  std::string body_name = "jaxpr";
  /// Non-empty: the body may not have constvars; the error reads "the <closed_name> has N
  /// constvars (<closed_hint>)". Empty: the body's consts must match its constvars.
  std::string closed_name, closed_hint;
  /// Extra params check of the shape rule, after the operand count check (ValueError/TypeError).
  std::function<void(const Params&, size_t num_operands)> check;
  /// DCE: the pruned equation's params from the original's and the used operands (checkpoint's
  /// per-operand prevent_cse).
  std::function<void(Params& out, const Params& in, const std::vector<bool>& used_operands)> prune_params;
  /// Eager implementation; default eval_jaxpr of the body.
  ImplRule impl;
};

/// Registers `name` as a plain call (Primitive::plain_call()): its body fact, the shape rule
/// (operands match the body's invars: count, shape, dtype, memory kind; TypeError otherwise; the
/// results are its out avals), the eager implementation and the DCE rule (the body pruned to
/// what the used results need; the equation dropped when none is used and it has no effects).
Primitive& register_call_primitive(const std::string& name, const CallSpec& spec);

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
