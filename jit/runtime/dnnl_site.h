// minijax oneDNN site table: what lowering records of each convolution or pooling call site that
// compiled code runs through oneDNN (mj_rt_dnnl, jit/runtime/dnnl_ops.h), as plain data, no IR.
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace minijax {

/// The oneDNN primitive a site runs, and the buffers compiled code passes to mj_rt_dnnl(site,
/// buffers) for it, in this order (each the address of the tensor's first element):
///  - conv_forward:          src, weights, dst
///  - conv_backward_data:    diff_dst, weights, diff_src
///  - conv_backward_weights: src, diff_dst, diff_weights
///  - pool_forward_*:        src, dst (pool_forward_sum: window sums, oneDNN's average including
///                           the padding times the window's element count, as a post-op)
///  - pool_backward_avg_*:   diff_dst, diff_src (pool_backward_sum: the gradient of window sums,
///                           oneDNN's average-including-padding backward times the window's
///                           element count; f32 only)
///  - pool_backward_max:     diff_dst, diff_src, src (src: the forward's input, read when the
///                           forward's workspace is not at hand and the forward is rerun)
/// The last buffer of each kind is the one written; the others are read.
enum class DnnlOp : uint8_t {
  conv_forward,
  conv_backward_data,
  conv_backward_weights,
  pool_forward_max,
  pool_forward_avg_include_padding,
  pool_forward_avg_exclude_padding,
  pool_forward_sum,
  pool_backward_max,
  pool_backward_avg_include_padding,
  pool_backward_avg_exclude_padding,
  pool_backward_sum,
};

/// "conv_forward", "pool_backward_max", ...
const char* dnnl_op_name(DnnlOp op);

/// One oneDNN call site of a compiled program (LoadedExecutable::dnnl_sites, indexed by the
/// `site` argument of mj_rt_dnnl). Every size is in oneDNN's logical order; a backward site
/// describes the forward convolution or pooling whose gradient it computes (its src is the
/// forward's input, its dst the forward's output), so the three convolution kinds of one
/// forward convolution carry the same numbers and differ only in `kind` and the dtypes.
///
/// Layouts are element strides of the logical dims, so any permutation of the dims that a user's
/// dimension numbers give (NCHW, NHWC, OIHW, HWIO, ...) is passed to oneDNN as it lies in memory,
/// without a copy. A row-major array of shape `shape` whose logical dim k is array axis axes[k]
/// has strides dnnl_layout_strides(shape, axes) (jit/runtime/dnnl_ops.h). Each buffer holds
/// exactly its tensor's elements (the strides are those of a dense layout, size-1 dims aside).
struct DnnlSiteSpec {
  DnnlOp kind = DnnlOp::conv_forward;
  /// The dtype of the operands (src, weights, diff_dst): f32 or bf16 (products accumulated in
  /// f32 inside oneDNN). out_dtype is the written tensor's (dst, diff_src, diff_weights): equal
  /// to dtype, or f32 for a convolution on bf16 (preferred_element_type f32).
  DType dtype = DType::f32;
  DType out_dtype = DType::f32;
  /// N, C_in, C_out, feature groups (convolutions; pooling: channels = in_channels =
  /// out_channels, groups 1). Each group g convolves input channels [g*C_in/G, (g+1)*C_in/G)
  /// into output channels [g*C_out/G, (g+1)*C_out/G).
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  /// Per spatial dim (1 to 3 of them): the input's and the output's sizes, the window (kernel)
  /// sizes, the window strides, oneDNN's dilations (JAX's rhs_dilation / window_dilation minus
  /// 1: 0 is none), and the padding before and after. Padding may be negative: the input is then
  /// cropped (a view of it is passed, so oneDNN's reference implementation runs). The output
  /// size must be (in + padding_l + padding_r - ((kernel - 1) * (dilation + 1) + 1)) / stride + 1
  /// (rounded down), as JAX's shape rule gives.
  std::vector<int64_t> in_size, out_size, kernel, strides, dilations, padding_l, padding_r;
  /// Element strides of src (or diff_src) over [N, C_in, in_size...], of dst (or diff_dst) over
  /// [N, C_out, out_size...] and, for convolutions, of the weights (or diff_weights) over
  /// [C_out, C_in / groups, kernel...].
  std::vector<int64_t> src_strides, dst_strides, weights_strides;
  /// Convolutions: oneDNN picks the weights' memory format (a blocked one, with which its
  /// convolutions run 2-10x faster on AVX-512 than with plain weights) and the site reorders the
  /// weights from weights_strides into it before the primitive (forward, backward-data), or the
  /// diff_weights from it after (backward-weights), on every call. dnnl_weights_reorder (dnnl_ops.h)
  /// says which formats and how many bytes; none when oneDNN picks the given layout.
  bool weights_any = false;
  /// conv_forward, conv_backward_data: the weights buffer holds the weights reversed along every
  /// spatial dim (JAX's transpose with respect to the lhs binds `rev` of the forward's kernel);
  /// the site copies them back into the given layout, unreversed, before the primitive reads them.
  bool weights_flipped = false;
  /// pool_backward_max: the index of the pool_forward_max site of the same program (same sizes,
  /// strides, padding and dtype) whose workspace (the argmax of each window) it reads, or -1.
  /// Link them only when the forward site's src is the value this site's src buffer holds; the
  /// workspace is used when that forward site ran exactly once in the current run before this
  /// site, and otherwise (not yet run, run in a loop) the forward is rerun on the src buffer.
  int32_t forward_site = -1;
};

}  // namespace minijax
