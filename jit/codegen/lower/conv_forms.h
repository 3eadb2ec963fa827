// minijax convolution forms: which oneDNN primitive (forward, backward-data, backward-weights)
// computes a conv_general_dilated equation, recognised from its params as JAX's transposes build them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/aval.h"
#include "core/views/windowed.h"

namespace minijax::lower {

/// A tensor as oneDNN sees it: its logical dims in oneDNN's order ([N, C, spatial...] for data,
/// [O, I, spatial...] or [G, O/G, I/G, spatial...] for weights) and the element stride of each in
/// the buffer of the equation's operand or result it is (any permutation of a row-major layout).
struct DnnlTensor {
  std::vector<int64_t> dims, strides;
};

/// How one conv_general_dilated equation is computed.
enum class ConvFormKind { forward, backward_data, backward_weights, loop_nest };
/// "oneDNN forward", "oneDNN backward-data", "oneDNN backward-weights", "loop nest".
const char* conv_form_name(ConvFormKind k);

/// The forward convolution an equation is, or whose input or kernel gradient it is, in oneDNN's
/// terms. For `forward` src is the equation's lhs, weights its rhs and dst its result; for
/// `backward_data` diff_dst is the lhs, weights the rhs flipped along its spatial dims (JAX's
/// transpose binds the rhs as `rev` of the forward kernel; the site reads the rev's operand, or the
/// runtime flips the reversed kernel back), and
/// diff_src the result; for `backward_weights` src is the lhs, diff_dst the rhs and
/// diff_weights the result.
struct ConvForm {
  ConvFormKind kind = ConvFormKind::loop_nest;
  std::string reason;  ///< loop_nest: why no oneDNN form applies
  int64_t groups = 1;
  /// The forward convolution's strides, oneDNN dilations (rhs_dilation - 1) and paddings.
  std::vector<int64_t> strides, dilates, pad_l, pad_r;
  DnnlTensor src, weights, dst;
};

/// The form of a conv_general_dilated equation with params `p`, operand shapes lhs and rhs,
/// result shape out and operand dtype `in` / result dtype `out_dtype`. `rhs_is_spatial_rev`: the
/// rhs is a `rev` over exactly its spatial dims of a value of the same shape (what JAX's
/// _conv_general_dilated_transpose_lhs builds). Recognised:
/// - backward_data: window strides 1, one feature and batch group, and an rhs that is a spatial
///   `rev` or an lhs_dilation > 1 (the forward's strides); the forward's padding is the inverse
///   of JAX's _conv_general_vjp_lhs_padding (a forward padding that is negative: loop_nest);
/// - backward_weights: lhs_dilation 1 and every spatial dim of the (dilated) window larger than
///   the result's (a kernel gradient: JAX's _conv_general_dilated_transpose_rhs, whose window is
///   the forward's output), batch_group_count the forward's groups;
/// - forward: lhs_dilation 1 and batch_group_count 1;
/// each with f32 or bf16 operands (bf16 with an f32 result for forward), 1 to 3 spatial dims and
/// paddings oneDNN takes (non-negative); anything else is loop_nest with the reason.
ConvForm classify_convolution(const ConvParams& p, const Shape& lhs, const Shape& rhs, const Shape& out, DType in,
                              DType out_dtype, bool rhs_is_spatial_rev);

}  // namespace minijax::lower
