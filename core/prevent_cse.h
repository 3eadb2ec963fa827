// minijax checkpoint's `prevent_cse` parameter: JAX's bool or tuple of bools (one per operand).
// Owns its printed form `(True, False)`, its reader and the expansion to one flag per operand.
#pragma once
#include <cstddef>
#include <vector>

#include "core/params.h"

namespace minijax {

/// The `prevent_cse` param of a checkpoint equation with one flag per operand, printed as JAX
/// prints a tuple of bools: `prevent_cse=(False, True)`; parse_jaxpr reads it back.
Param prevent_cse_param(const std::vector<bool>& per_operand);

/// Whether `params` hold a per-operand `prevent_cse` tuple (false for a bool or none).
bool prevent_cse_per_operand(const Params& params);

/// One flag per operand of an equation with `n` operands: a bool broadcast (absent: true), a
/// tuple as it is. Throws TypeError when a tuple does not have `n` flags, naming both counts.
std::vector<bool> prevent_cse_flags(const Params& params, size_t n);

/// Sets `out`'s `prevent_cse` for an equation rebuilt from one whose params are `in`: a bool
/// stays the bool (JAX keeps a bool through every transformation), a tuple becomes `per_operand`
/// (the flags of the new operands, which the caller derives as JAX's remat rules do).
void set_prevent_cse(Params& out, const Params& in, const std::vector<bool>& per_operand);

}  // namespace minijax
