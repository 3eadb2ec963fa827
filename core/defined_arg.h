// minijax argument check shared by the numpy-style functions: an empty Array named at the user's call.
// Owns detail::defined_or_throw (defined in core/array.cc).
#pragma once
#include <source_location>

#include "core/array.h"

namespace minijax::detail {
/// `x` itself; throws ValueError naming `fn` and the user's call site `loc` when x is an empty
/// (default-constructed) Array, whose aval any later read would refuse without naming either.
const Array& defined_or_throw(const Array& x, const char* fn, std::source_location loc);
}  // namespace minijax::detail
