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

}  // namespace minijax::lower
