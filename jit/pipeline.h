// minijax compile pipeline: a traced program through every pass to a loaded executable, with
// the process-wide executable cache between the passes and code generation.
#pragma once
#include <memory>

#include "core/jaxpr.h"
#include "jit/executable.h"

namespace minijax {

/// Compiles `traced` (a jaxpr without constvars: f's constants are leading invars) through
/// dce → inline_calls → simplify → pack_dot_operands → fuse → schedule_offloads → rename_body_variables → analyze_liveness / plan_buffers →
/// lower (KIR) → LLVM O2 → object code → ORC. The program after the passes is looked up in the
/// process-wide executable cache (jit/compile_cache.h) first: an equal program compiled before
/// (by any jit) is shared, and code generation is skipped. Throws CompileError when LLVM rejects
/// the code (naming the kernel and its equation), ValueError naming a primitive no rule lowers.
std::shared_ptr<const Executable> compile_executable(const Jaxpr& traced, const CompileOptions& options);

}  // namespace minijax
