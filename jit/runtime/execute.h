// minijax executor (one device): runs a compiled program on concrete arguments — buffers for the
// outputs and the arenas from the allocator, donation, the call of the entry function.
#pragma once
#include <source_location>
#include <vector>

#include "core/array.h"
#include "jit/executable.h"

namespace minijax {

/// Runs `exe` on `args` (one concrete Array per program input, matching exe.in_avals in shape,
/// dtype and memory kind; weak types may differ) and returns its outputs. Donated inputs
/// (CompileOptions::donated) are consumed: their buffers may hold outputs and reading them
/// afterwards throws ValueError. Throws TypeError at `loc` for an argument of another type,
/// ValueError for a donated argument that is used twice in the call or was donated before.
/// Runs on the calling thread; large kernels use the oneTBB pool.
std::vector<Array> execute(const Executable& exe, const std::vector<Array>& args,
                           std::source_location loc = std::source_location::current());

}  // namespace minijax
