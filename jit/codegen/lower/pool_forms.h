// minijax pooling forms: whether a windowed reduction (reduce_window_max/sum, select_and_scatter_add)
// is a oneDNN pooling, and its [N, C, spatial...] view, read off the window params.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/aval.h"
#include "core/views/windowed.h"
#include "jit/codegen/lower/conv_forms.h"

namespace minijax::lower {

/// A windowed reduction as a oneDNN pooling: the operand (src) and the windowed result (dst) as
/// [N, C, spatial...] tensors, and the window of the spatial dims. `pooling` false: a loop nest,
/// for `reason`.
struct PoolForm {
  bool pooling = false;
  std::string reason;
  DnnlTensor src, dst;
  std::vector<int64_t> kernel, strides, dilates, pad_l, pad_r;
};

/// The pooling view of window `w` over an operand of shape `operand` (result shape `out`) and
/// dtype `dt`: the dims whose window is 1 with stride 1, no padding and no dilation are the batch
/// and feature dims (the first two; later ones join the spatial dims with a window of 1; a missing
/// one is a dim of size 1), the others (1 to 3 of them) the pooled spatial dims. Not a pooling: a
/// dtype other than f32 or bf16, base dilation, negative padding, padding as wide as the window or
/// a dilated window over padding (a window of padding only, which oneDNN fills with the lowest
/// finite value where reduce_window_max gives -inf), more than 3 spatial dims or none, an empty
/// operand.
PoolForm classify_pooling(const WindowParams& w, const Shape& operand, const Shape& out, DType dt);

/// A windowed sum over stride-1 windows of an operand dilated by base_dilation (what simplify
/// makes of JAX's transpose of reduce_window_sum: the cotangent dilated by the forward's strides,
/// padded by (k_eff - 1 - pad_lo, ...), summed over the forward's window) as the gradient of the
/// forward sum pooling with strides = base_dilation and pad_lo = k_eff - 1 - padding_lo, whose
/// input is this sum's result and whose output is this sum's operand: the returned form is that
/// forward's (src: this result, dst: this operand), for oneDNN's pooling backward. Not a pooling:
/// window strides other than 1, no base dilation, a padding_lo past k_eff - 1, or a forward that
/// classify_pooling refuses.
PoolForm classify_transposed_pooling(const WindowParams& w, const Shape& operand, const Shape& out, DType dt);

}  // namespace minijax::lower
