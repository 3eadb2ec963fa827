// minijax collectives' params: how a collective equation stores its mesh axes (`axis_name`), and
// which primitives are collectives. Internal: the primitives, rules, partitioner and lowering read them.
#pragma once
#include <source_location>
#include <string>

#include "core/collectives.h"
#include "core/params.h"

namespace minijax {

/// The `axis_name` parameter: a plain string for one axis (printed `axis_name=x`, as JAX), a
/// tuple object for several (printed `axis_name=('x', 'y')`). ValueError if `names` is empty,
/// has an empty or repeated name (naming `primitive` and the call site `loc`).
Param axis_name_param(const AxisNames& names, const std::string& primitive = "collective",
                      std::source_location loc = std::source_location::current());
/// The `axis_name` parameter as printed: `x` for one axis, `('x', 'y')` for several (for error
/// messages). ValueError as axis_name_param.
std::string axis_names_str(const AxisNames& names);
/// The axis names of a collective equation's `axis_name` parameter (ValueError if absent or of
/// another type).
AxisNames axis_names_of(const Params& params);
/// Whether `name` is one of the collective primitives of core/collectives.h (axis_index included).
bool is_collective(const std::string& name);

}  // namespace minijax
