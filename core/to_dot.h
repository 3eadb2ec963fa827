// minijax jaxpr pictures: a jaxpr as a Graphviz DOT graph (equations as nodes, values as edges).
// Owns to_dot and DotOptions; sharding/ adds propagated shardings, jit/ a Lowered program's.
#pragma once
#include <functional>
#include <string>

#include "core/jaxpr.h"

namespace minijax {

/// What to_dot draws besides the jaxpr itself.
struct DotOptions {
  /// The graph's name (`digraph "name"`, also its title label).
  std::string name = "jaxpr";
  /// A parameter's printed value is cut to this many characters (then `...`); 0 = no limit.
  size_t max_param_chars = 64;
  /// An extra line under a variable's type on each of its edges (e.g. its propagated sharding;
  /// sharding/propagate_shardings.h's to_dot fills it); empty text adds nothing.
  std::function<std::string(const Var&)> annotate;
};

/// The jaxpr as a Graphviz graph in the DOT language (render with `dot -Tsvg`), JAX's
/// jaxpr-as-picture: each equation is a box labelled with its primitive and parameters (one
/// `key=value` line each, bodies excepted; sharding_constraint's `sharding`, pjit's shardings
/// and a checkpoint's policy are parameters); each constvar, invar and output is an ellipse; a
/// variable is an edge from the node that defines it to each node that reads it, labelled
/// `name: type` with the type as the printer writes it, memory kind included
/// (`c: f32<pinned_host>[2,3]`), plus `opts.annotate`'s line; literal operands are listed in the
/// reader's label (`operand 1 = 2.0:f32[]`). Every body of an equation (scan, while, cond,
/// checkpoint, pjit, closed_call, custom_jvp/vjp calls, fusions: any jaxpr-valued parameter) is
/// a `subgraph cluster_...` labelled `primitive: parameter`, with its own input and output
/// nodes, nested as the bodies nest, joined to its equation by a dashed edge. Variables are named
/// a, b, ... in order of definition across the bodies (not necessarily the printer's names).
/// Every string is quoted with `"` and `\` escaped, so any name or parameter gives valid DOT.
/// Never throws for a well-formed jaxpr.
std::string to_dot(const Jaxpr& jaxpr, const DotOptions& opts = {});
/// As above for the closed jaxpr's jaxpr (its constvars are drawn as `const` inputs).
std::string to_dot(const ClosedJaxpr& jaxpr, const DotOptions& opts = {});

/// `s` as a DOT quoted string: `"` and `\` escaped, a newline written `\n`. For labels.
std::string dot_quote(const std::string& s);

}  // namespace minijax
