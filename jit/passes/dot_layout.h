// minijax dot layouts: whether a dot_general's operands can be handed to a GEMM as they lie in
// memory (row-major), and with which flags, leading dimensions and batch strides.
#pragma once
#include <cstdint>
#include <optional>

#include "core/aval.h"
#include "core/lax.h"

namespace minijax {

/// One batched GEMM: C[b] (m x n, row-major, ldc = n) = op(A[b]) op(B[b]) with A[b] = A + b *
/// stride_a elements (likewise B); trans_a: A is stored [k, m] (lda its row stride), else [m, k].
struct GemmLayout {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool trans_a = false, trans_b = false;
  int64_t lda = 1, ldb = 1, stride_a = 0, stride_b = 0;
};

/// The GEMM that computes dot_general(lhs, rhs, dims) without copying, or nullopt when the batch,
/// free or contracting dims of an operand do not each form one single-stride group in memory
/// (then one operand must be packed first: jit/passes/pack_dot_operands.h). An empty product (batch, m,
/// n or k zero) reads nothing and always has a layout (no transposes, the smallest strides).
std::optional<GemmLayout> gemm_layout(const Shape& lhs, const Shape& rhs, const lax::DotDimensionNumbers& dims);

}  // namespace minijax
