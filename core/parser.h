// minijax jaxpr parser: reads back the text the printer writes (core/jaxpr.h to_string).
// Owns parse_jaxpr and the registry of parsers for opaque (ParamObject) parameter values.
#pragma once
#include <functional>
#include <source_location>
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
/// Jaxprs nested inline (`{ lambda ...}` inside a param) may be at most 64 levels deep, which
/// bounds the parser's recursion; deeper nests are written with `let` shared jaxprs, as
/// to_string writes them (each shared jaxpr defined before its first use).
/// `consts` are the values of the top-level constvars (one per constvar, same avals); nested
/// jaxprs must have no constvars (their values are not in the text).
/// Text is untrusted input, so the result is type-checked (verify_jaxpr): every equation's
/// output avals must be what its primitive's shape rule gives, or nothing would stop a jaxpr
/// that declares `b:f32[4] = sin a` of an `a:f32[3]` from running. Text whose params
/// a shape rule cannot read is refused too: a sharding_constraint's printed sharding
/// (`sharding=[{"x"}]`) has no reader here, since the text does not carry the mesh, so a printed
/// jaxpr holding a constraint does not parse (ShapeError naming the param and the equation);
/// sharding/parse_sharded.h's parse_sharded_jaxpr reads it under a `# mesh:` header.
/// A param that does not fit its primitive's typed view (core/views/: missing, of another type,
/// or unknown to the view) is a ValueError naming the primitive, the param, the line and the
/// column; an unknown param is refused after the type check.
/// Throws ValueError naming the line and column for syntax errors, inline nesting deeper than
/// 64 levels, unknown primitives, unbound
/// or rebound variable names, bad avals (unknown dtype or memory kind, a negative dimension, a
/// size beyond int64 bytes) and consts that do not match; verify_jaxpr's TypeError or ShapeError
/// (naming the equation) for an ill-typed jaxpr; all at `loc`.
ClosedJaxpr parse_jaxpr(const std::string& text, const std::vector<Array>& consts = {},
                        std::source_location loc = std::source_location::current());

namespace detail {
/// parse_jaxpr without the type check: for tests of verify_jaxpr itself, which need ill-typed
/// jaxprs to check. Same syntax errors.
ClosedJaxpr parse_jaxpr_unchecked(const std::string& text, const std::vector<Array>& consts = {},
                                  std::source_location loc = std::source_location::current());
}  // namespace detail

/// A parser for the printed form of some ParamObject kind: returns the object for `text` (the
/// printed value of param `key`), or nullptr if the text is not of its kind.
using ParamObjectParser = std::function<ParamObjectPtr(const std::string& key, const std::string& text)>;

namespace detail {
/// parse_jaxpr (no consts) with `reader` tried on every param value that is not of a built-in
/// kind, before the registered parsers: the reader of params whose meaning depends on context the
/// jaxpr does not print, e.g. sharding/parse_sharded.h's reader of `sharding=` params against the
/// `# mesh:` header's mesh (core cannot know meshes). A ValueError the reader throws is rethrown as
/// a ValueError with its message after "parse_jaxpr: line L, column C: " (the param value's
/// position). Otherwise the same checks and errors as parse_jaxpr, at `loc`.
ClosedJaxpr parse_jaxpr_with(const std::string& text, const ParamObjectParser& reader,
                             std::source_location loc = std::source_location::current());
}  // namespace detail
/// Registers a ParamObject parser (tried in registration order, after the built-in kinds).
void register_param_object_parser(ParamObjectParser p);

}  // namespace minijax
