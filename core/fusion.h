// minijax `fusion` primitive: one compiler kernel (a group of fused equations) as one equation.
// Owns its declaration; rules in core/control_flow/fusion.cc, structure made by jit/passes/fuse.h.
#pragma once
#include <string>

#include "core/jaxpr.h"
#include "core/primitive.h"

namespace minijax {

/// The `fusion` primitive (compiler-internal, made by jit/passes/fuse.h; its contract for the lowering
/// is docs/compiler.md, "Fusion"). Params:
/// - `jaxpr` (ClosedJaxprPtr without constvars or consts): the fused equations; its invars are
///   the fusion's operands, its outvars its results;
/// - `kind` (string): "loop" (elementwise and index_map equations over one iteration space, the
///   shape of every result) or "reduction" (reductions of one operand shape and axes, their
///   prologue and an elementwise epilogue; results in the reduction output space);
/// - `name` (string): "fusion.N".
/// Shape rule: the operands must match the body's invars in count, shape, dtype and memory kind
/// (TypeError otherwise; ValueError for a missing or constvar-holding body or a kind other than
/// loop/reduction); the results are the body's out avals. Impl: eval_jaxpr of the body, so a
/// fused program still runs eagerly. DCE rule: unused results are dropped and the body pruned.
/// No JVP, transpose or batching rule (fuse runs after autodiff; the absences are declared).
/// Printed as closed_call is:
/// `fusion[jaxpr={ lambda ; a:f32[8]. let b:f32[8] = exp a in (b,) } kind=loop name=fusion.0]`.
const Primitive& fusion_p();

}  // namespace minijax
