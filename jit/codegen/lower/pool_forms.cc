// minijax pooling forms (pool_forms.h): the [N, C, spatial...] view of a windowed reduction that
// oneDNN's pooling computes, read off its window params and the operand's row-major layout.
#include "jit/codegen/lower/pool_forms.h"

#include <algorithm>

namespace minijax::lower {

namespace {

PoolForm not_pooling(std::string why) {
  PoolForm f;
  f.reason = std::move(why);
  return f;
}

}  // namespace

PoolForm classify_pooling(const WindowParams& w, const Shape& operand, const Shape& out, DType dt) {
  if (dt != DType::f32 && dt != DType::bf16)
    return not_pooling(std::string(dtype_name(dt)) + " operands (oneDNN's CPU pooling takes f32 and bf16)");
  const int64_t r = w.rank();
  std::vector<int64_t> plain, spatial;
  for (int64_t i = 0; i < r; ++i) {
    if (operand[size_t(i)] == 0) return not_pooling("an empty operand");
    if (w.base_dilation[size_t(i)] != 1) return not_pooling("base dilation");
    if (w.pad_lo(i) < 0 || w.pad_hi(i) < 0) return not_pooling("negative padding (a crop)");
    const int64_t keff = (w.window_dimensions[size_t(i)] - 1) * w.window_dilation[size_t(i)] + 1;
    if (w.pad_lo(i) >= keff || w.pad_hi(i) >= keff) return not_pooling("a window that may lie in the padding only");
    if (w.window_dilation[size_t(i)] > 1 && (w.pad_lo(i) > 0 || w.pad_hi(i) > 0))
      return not_pooling("a dilated window over padding (its taps may all be padding)");
    const bool unit = w.window_dimensions[size_t(i)] == 1 && w.window_strides[size_t(i)] == 1 && w.pad_lo(i) == 0 &&
                      w.pad_hi(i) == 0 && w.window_dilation[size_t(i)] == 1;
    (unit && plain.size() < 2 ? plain : spatial).push_back(i);
  }
  if (spatial.empty()) return not_pooling("no windowed dim");
  if (spatial.size() > 3) return not_pooling(std::to_string(spatial.size()) + " windowed dims (oneDNN pools 1 to 3)");
  std::vector<int64_t> in_st(size_t(r), 1), out_st(size_t(r), 1);
  for (int64_t i = r - 1; i > 0; --i) {
    in_st[size_t(i - 1)] = in_st[size_t(i)] * operand[size_t(i)];
    out_st[size_t(i - 1)] = out_st[size_t(i)] * out[size_t(i)];
  }
  PoolForm f;
  f.pooling = true;
  for (size_t k = 0; k < 2; ++k) {  // N, then C; a missing one has size 1
    const bool have = k < plain.size();
    f.src.dims.push_back(have ? operand[size_t(plain[k])] : 1);
    f.src.strides.push_back(have ? in_st[size_t(plain[k])] : 1);
    f.dst.dims.push_back(have ? out[size_t(plain[k])] : 1);
    f.dst.strides.push_back(have ? out_st[size_t(plain[k])] : 1);
  }
  for (int64_t i : spatial) {
    f.src.dims.push_back(operand[size_t(i)]);
    f.src.strides.push_back(in_st[size_t(i)]);
    f.dst.dims.push_back(out[size_t(i)]);
    f.dst.strides.push_back(out_st[size_t(i)]);
    f.kernel.push_back(w.window_dimensions[size_t(i)]);
    f.strides.push_back(w.window_strides[size_t(i)]);
    f.dilates.push_back(w.window_dilation[size_t(i)] - 1);
    f.pad_l.push_back(w.pad_lo(i));
    f.pad_r.push_back(w.pad_hi(i));
  }
  return f;
}

PoolForm classify_transposed_pooling(const WindowParams& w, const Shape& operand, const Shape& out, DType dt) {
  WindowParams fwd = w;
  bool dilated = false;
  for (int64_t i = 0; i < w.rank(); ++i) {
    const size_t u = size_t(i);
    if (w.window_strides[u] != 1) return not_pooling("window strides with base dilation");
    const int64_t s = w.base_dilation[u], keff = (w.window_dimensions[u] - 1) * w.window_dilation[u] + 1;
    dilated |= s > 1;
    // The forward: out[u] = (operand[u] - 1) * s + 1 + lo + hi - keff + 1 inputs, pad_lo = keff - 1 - lo,
    // and the least pad_hi >= 0 whose output size is operand[u].
    const int64_t pl = keff - 1 - w.pad_lo(i);
    const int64_t pr = std::max<int64_t>(keff - 1 - w.pad_hi(i), 0);
    if (pl < 0) return not_pooling("padding before the window past its extent");
    if (out[u] + pl + pr < keff || (out[u] + pl + pr - keff) / s + 1 != operand[u])
      return not_pooling("no forward pooling has this sum as its gradient");
    fwd.window_strides[u] = s;
    fwd.base_dilation[u] = 1;
    fwd.padding[2 * u] = pl;
    fwd.padding[2 * u + 1] = pr;
  }
  if (!dilated) return not_pooling("base dilation");
  return classify_pooling(fwd, out, operand, dt);
}

}  // namespace minijax::lower
