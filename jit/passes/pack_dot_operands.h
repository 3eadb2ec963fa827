// minijax pass pack_dot_operands: before fusion, a dot_general operand whose batch, free and
// contracting dims do not each form one single-stride group is packed by a transpose.
//
// Takes a jaxpr (after inline_calls/simplify). First, a transpose whose only operand is a product
// it alone reads, and which swaps the product's lhs-free and rhs-free dims, becomes the product of
// the swapped operands (no transpose kernel: the GEMM flags change). An f32 product whose operands
// both lie transposed becomes the transpose of the swapped product, which is a GEMM without
// transposes (oneDNN's sgemm is slow in its TT case). Guarantees: every dot_general (bodies included)
// has a GEMM layout (jit/passes/dot_layout.h: gemm_layout succeeds), so its lowering calls the GEMM
// library on its operands as they lie in memory; an operand that needed it is first transposed
// to [batch..., free..., contracting...] (lhs) or [batch..., contracting..., free...] (rhs),
// only the operand(s) that need it, and the transpose becomes a loop fusion: the one packing
// kernel, visible in Compiled::as_text(). Values are unchanged (a transpose moves elements).
// A dot_general whose preferred_element_type differs from its operands' dtype gets its operands
// converted to the accumulation dtype when that is wider (bf16 -> f32, i32 -> f32: exact for
// bf16, XLA's OperandUpcaster) and its product converted to the output dtype when that is
// narrower (f32 -> bf16), so every GEMM reads and writes one dtype, as eager dot_general computes.
// Source: the canonicalization XLA's DotDecomposer performs before GEMM emission.
#pragma once
#include "core/jaxpr.h"

namespace minijax {

/// See the file comment.
Jaxpr pack_dot_operands(const Jaxpr& j);

}  // namespace minijax
