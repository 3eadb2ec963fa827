// minijax lowering strategy table: for every primitive of the registry, how the compiler lowers
// it (elemental rule, reduction rule, program rule, inlined call). Read by the registry test.
#pragma once
#include <string>

namespace minijax::lower {

/// How the compiler lowers equations of `primitive` (a registry name, mj::primitive_names()):
/// "fused loop" when it has an elemental rule (jit/codegen/lower/lowering.h: it is computed inside loop
/// fusion kernels), "reduction" when it has a reduction rule, otherwise the strategy of its
/// program rule (jit/codegen/lower/program.h: "library call", "runtime call", "control flow", "view",
/// "in-place update", "loop", ...), "inlined" for the call primitives the inline_calls pass
/// replaces by their bodies (jit/passes/inline_calls.h: pjit, closed_call, checkpoint, custom_jvp_call,
/// custom_vjp_call, and the identity tag name), and "" when the compiler has no lowering for it.
/// Never throws.
std::string lowering_strategy(const std::string& primitive);

}  // namespace minijax::lower
