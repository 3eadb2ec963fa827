// minijax jaxpr parser: reads back the text the printer writes (core/jaxpr.h to_string).
// Owns parse_jaxpr and the registry of parsers for opaque (ParamObject) parameter values.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/jaxpr.h"

namespace minijax {

/// Parses a jaxpr printed by to_string: `{ lambda consts ; args. let eqns in (outs) }`, one-line
/// or multi-line, preceded by any `let name = { lambda ... } in` shared jaxprs. Reads binders
/// `a:f32[3]`, dropvars `_:f32[3]`, avals with memory kinds (`f32<pinned_host>[2,3]`) and `Tok`,
/// literals (`2.0:f32[]`, `True:bool[]`, `-1:i32[]`, `nan:f32[]`) and params of every Param kind:
/// True/False -> bool, integers -> int, decimals -> float, `(1, 2)` -> int tuple, numpy dtype
/// names (`float32`) -> DType, memory kind names -> MemoryKind, `{ lambda ...}` or a shared
/// jaxpr's name -> ClosedJaxprPtr, `( {...} {...} )` -> jaxpr tuple, `None` -> null ParamObject,
/// text accepted by a registered param parser -> its ParamObject, anything else -> string (the
/// `name` param is always a string). Equation effects are the primitive's.
/// `consts` are the values of the top-level constvars (one per constvar, same avals); nested
/// jaxprs must have no constvars (their values are not in the text).
/// Throws ValueError naming the line and column for syntax errors, unknown primitives, unbound
/// or rebound variable names, bad avals and consts that do not match.
ClosedJaxpr parse_jaxpr(const std::string& text, const std::vector<Array>& consts = {});

/// A parser for the printed form of some ParamObject kind: returns the object for `text` (the
/// printed value of param `key`), or nullptr if the text is not of its kind.
using ParamObjectParser = std::function<ParamObjectPtr(const std::string& key, const std::string& text)>;
/// Registers a ParamObject parser (tried in registration order, after the built-in kinds).
void register_param_object_parser(ParamObjectParser p);

}  // namespace minijax
