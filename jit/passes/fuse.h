// minijax compiler pass fuse: equations grouped into kernels, each one `fusion` equation.
// Owns fuse (the pass after simplify and before analyze_liveness in jit/pipeline.cc).
#pragma once
#include <source_location>

#include "core/jaxpr.h"

namespace minijax {

/// Takes a jaxpr (calls inlined, simplified: jit/passes/inline_calls.h, jit/passes/simplify.h; any jaxpr is
/// accepted) and returns one computing bitwise the same values in which every elementwise,
/// index_map and reduction equation (core/primitive.h OpClass) sits inside a `fusion`
/// equation (core/fusion.h), recursively inside the bodies of scan, while, cond and any other
/// equation with nested jaxprs. Each body then holds only fusions, dot_general, reshape /
/// squeeze / expand_dims (free aliases on row-major buffers), control flow and the other
/// primitives, which are kept as they are. The structure of each fusion is the contract the
/// lowering relies on (docs/compiler.md, "Fusion"):
/// - kind "loop": elementwise and index_map equations whose results (the values used outside
///   the group or returned) all have one shape, the iteration space, and are computed at the
///   identity index; kind "reduction": reductions of one operand shape and reduced axes (the
///   iteration space), their prologue (elementwise/index_map producers) and an elementwise
///   epilogue over the reduction output space, in which every result lies;
/// - never across a device_put, an optimization_barrier, an equation with effects or a change
///   of memory kind (every value of a group has the group's memory kind, index operands aside);
/// - a producer joins its consumer's group when all its users are in it; otherwise a cheap one
///   (broadcast_in_dim, iota, iota_2x32_shape, convert_element_type, elementwise on rank 0) is
///   duplicated into each consumer group, and an elementwise one read at the identity index
///   becomes an extra result (multi-output fusion); else it starts its own group. Expensive
///   producers (exp, log, tanh, sqrt, div, ...) whose elements the group would read more than
///   once (through an expanding broadcast_in_dim or a gather) are never fused into it;
/// - each fusion is placed where its group's last equation was (moved later only where a
///   dependency requires it), its body's invars are the group's variable operands in order of
///   first use (literals stay inline), its outvars its results in program order; fusions are
///   named fusion.0, fusion.1, ... in program order over the whole program, bodies included.
/// - a group holds at most config().max_fusion_equations equations (clones included) and at most
///   128 index_map equations: a longer chain is split into several kernels, which bounds each
///   kernel's code generation and the emitter's recursion (jit/codegen/lower/lowering.h: one level per
///   index-changing equation on a path) whatever the program's length.
/// Fusible equations whose values are not used are dropped. Throws ValueError naming
/// config().max_fusion_equations when it is < 1. Source: XLA's instruction fusion
/// (xla/service/instruction_fusion.cc: consumers visited in reverse post order, producers fused
/// into them, cheap ones duplicated, expensive ones not fused into reusing consumers) and its
/// CPU/GPU multi-output fusion (xla/service/multi_output_fusion.cc,
/// xla/service/gpu/multi_output_fusion.cc: siblings and producer-consumer pairs sharing an
/// iteration space, with a reachability check against cycles).
Jaxpr fuse(const Jaxpr& j);

/// ValueError at `loc` (the user's jit call) naming config().max_fusion_equations when it is < 1:
/// called where a compile starts, so the error names the user's line; fuse checks it again.
void check_max_fusion_equations(std::source_location loc);

}  // namespace minijax
