// minijax compiler pass simplify: CSE, constant folding and bit-exact algebraic rewrites.
// Owns simplify (the pass after inline_calls and before fuse in jit/pipeline.cc).
#pragma once
#include "core/jaxpr.h"

namespace minijax {

/// Takes any jaxpr; returns one that computes bitwise the same outputs from the same inputs,
/// with, in one forward pass per jaxpr (nested bodies of scan/while/cond/... first, params
/// rebuilt):
/// - constant folding: an equation of an elementwise/index_map/reduction primitive whose
///   operands are all literals and whose outputs are all rank 0 is evaluated now (its eager
///   implementation) and its outputs become literals; nothing with a larger result is folded;
/// - algebraic rewrites that never change a bit: broadcast_in_dim to the operand's own shape,
///   transpose by the identity permutation, reshape to the same shape, convert_element_type to
///   the operand's dtype and weak type, stop_gradient, select_n with one case, and `mul x 1`
///   (x * 1 is x for every float, -0 and NaN included, and every integer) are their operand;
///   broadcast_in_dim of broadcast_in_dim, transpose of transpose and reshape of reshape become
///   one equation; add_any becomes add (not for float0); reduce_window_sum/max/min of a `pad` by
///   the monoid's identity (0; -inf, +inf for floats) with no negative edge takes the pad's
///   operand, the edges joining its padding and the interior padding becoming its base dilation. `add x 0` is NOT rewritten
///   (-0 + 0 = +0). Every rewrite is kept only if the avals (weak type included) are unchanged;
/// - common-subexpression elimination: an equation with the same primitive, params (compared
///   structurally) and operands (the same variables, literals of equal bits) as an earlier one
///   is merged into it. Never merged: equations with effects (their own or in their bodies) and
///   optimization_barrier (two barriers stay two, and no rewrite looks through one: checkpoint's
///   prevent_cse keeps the recomputation separate from the forward pass);
/// - then dead-code elimination (core/dce.h dce_jaxpr), keeping every input.
/// Identities are substituted everywhere, outvars included. The result's invars and constvars
/// are j's. Source: the classic value-numbering CSE and XLA's AlgebraicSimplifier
/// (xla/service/algebraic_simplifier.cc) restricted to bit-exact rules; JAX's pe.dce_jaxpr.
Jaxpr simplify(const Jaxpr& j);

}  // namespace minijax
