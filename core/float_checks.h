// minijax debug_nans / debug_infs (JAX's jax_debug_nans, jax_debug_infs): finding a NaN or ±Inf
// in a primitive's or a jitted function's results and the FloatingPointError that names it.
#pragma once
#include <functional>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "core/array.h"

namespace minijax {
struct Primitive;

namespace detail {

/// Whether config().debug_nans or config().debug_infs is on.
bool float_checks_on();

/// The first value config() asks to be caught in concrete `x`: "nan" (debug_nans) or "inf"
/// (debug_infs, either sign) and its position (`[1, 2]`), or nullopt. Integer and bool arrays
/// hold neither. A sharded array is read shard by shard.
std::optional<std::pair<std::string, std::string>> first_bad_float(const Array& x);

/// Eager evaluation's check after primitive `p` ran on operands of avals `in`: throws
/// FloatingPointError "invalid value (nan) encountered in mul(f32[3], f32[3]): output 0 has a NaN
/// at [1]" at `loc` (the user's call) when an output holds what config() catches.
void check_primitive_outputs(const Primitive& p, const std::vector<ShapedArray>& in, const std::vector<Array>& outs,
                             std::source_location loc);

/// A jitted function's check of its outputs: when one holds what config() catches, re-runs the
/// function op by op through `rerun` (the function called on the same concrete arguments, whose
/// first offending primitive throws FloatingPointError at the user's line). Throws
/// FloatingPointError naming jit `name` and the output when `rerun` is null or the arguments were
/// donated (`donated`: the re-run is impossible, which the message says), or when the re-run
/// produced no such value.
void check_jit_outputs(const std::vector<Array>& outs, const std::string& name, bool donated,
                       const std::function<void()>& rerun, std::source_location loc);

}  // namespace detail
}  // namespace minijax
