// minijax conv_general_dilated internals shared by its registration (convolution.cc) and its eager
// kernel (convolution_eager.cc): the canonical-layout geometry and the eager implementation.
#pragma once
#include <cstdint>
#include <vector>

#include "core/array.h"
#include "core/aval.h"
#include "core/views/windowed.h"

namespace minijax::conv_detail {

/// max(0, 1 + dilation * (d - 1)): the size of d elements with dilation - 1 holes between each two
/// (JAX's core.dilate_dim).
inline int64_t dilate_dim(int64_t d, int64_t dilation) { return d <= 0 ? 0 : 1 + dilation * (d - 1); }

/// One convolution in the canonical layout XLA defines it in: lhs [N, C, S...], rhs [O, I, K...],
/// result [N / batch_group_count, O, Q...]; the spatial vectors are in the order of
/// window_strides (the kernel's spatial dims, rhs_spec[2:]).
struct ConvGeometry {
  int64_t batch = 0, features = 0, out_features = 0, kernel_in = 0;
  int64_t feature_groups = 1, batch_groups = 1;
  std::vector<int64_t> in, window, out, strides, lo, hi, lhs_dil, rhs_dil;
  int64_t out_batch() const { return batch / batch_groups; }
  size_t num_spatial() const { return in.size(); }
};

/// The geometry of an equation whose params passed the shape rule (out = the shape rule's sizes).
ConvGeometry conv_geometry(const Shape& lhs, const Shape& rhs, const ConvParams& p);

/// For spatial dim d, XLA's mapping of (kernel index k, output index q) to the input index it
/// reads: q * stride - lo + k * rhs_dil in the dilated input, an input element when that is a
/// multiple of lhs_dil inside the input, else -1 (padding or a dilation hole). Row-major
/// [window[d], out[d]].
std::vector<int64_t> input_index_table(const ConvGeometry& g, size_t d);

/// The eager conv_general_dilated of concrete lhs and rhs (params checked by the shape rule), a
/// new array of aval `out`: f32 and f64 by im2col and core/gemm.h's gemm per group; bf16 products
/// summed in f32 (rounded once to bf16 unless `out` is f32/f64), integers wrapping, by a direct
/// loop over the same im2col columns. A wider preferred_element_type converts the operands first.
Array conv_eager(const Array& lhs, const Array& rhs, const ConvParams& p, const ShapedArray& out);

}  // namespace minijax::conv_detail
