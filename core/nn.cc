// minijax nn: the convolution layer's function (minijax's conv over conv_general_dilated) and
// flax.linen's max_pool and avg_pool (flax/linen/pooling.py) over lax's windowed reductions.
#include "core/nn.h"

#include <set>

#include "core/errors.h"
#include "core/lax.h"
#include "core/windowed_reductions.h"

namespace minijax::nn {
namespace {

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

// Runs f, naming `fn` before the message of an error from the layers below.
template <class F>
Array named(const char* fn, std::source_location loc, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    detail::rethrow_at(e, std::string(fn) + ": ", loc);
    throw;
  }
}

// flax's pool geometry: x is [batch..., spatial..., features] with one spatial dimension per
// entry of window_shape; the window, strides and padding over every dimension of x.
struct PoolWindow {
  std::vector<int64_t> dims, strides;
  lax::Padding padding = "VALID";
  size_t num_batch = 0;
};

PoolWindow pool_window(const char* fn, const Array& x, const std::vector<int64_t>& window_shape,
                       const std::vector<int64_t>& strides, const lax::Padding& padding,
                       std::source_location loc) {
  if (!x.defined()) throw ValueError(std::string(fn) + ": x is an empty Array", loc);
  const size_t ns = window_shape.size();
  if (int64_t(ns) + 1 > x.ndim())
    throw ValueError(std::string(fn) + ": window_shape " + ints_str(window_shape) + " has " +
                         std::to_string(ns) + " entries, one per spatial dimension, but x " + x.aval().str() +
                         " ([batch..., spatial..., features]) has at most " + std::to_string(x.ndim() - 1) +
                         " spatial dimensions",
                     loc);
  std::vector<int64_t> st = strides.empty() ? std::vector<int64_t>(ns, 1) : strides;
  if (st.size() != ns)
    throw ValueError(std::string(fn) + ": strides " + ints_str(strides) +
                         " must have one entry per entry of window_shape " + ints_str(window_shape),
                     loc);
  PoolWindow w;
  w.num_batch = size_t(x.ndim()) - ns - 1;
  w.dims.assign(w.num_batch, 1);
  w.strides.assign(w.num_batch, 1);
  w.dims.insert(w.dims.end(), window_shape.begin(), window_shape.end());
  w.strides.insert(w.strides.end(), st.begin(), st.end());
  w.dims.push_back(1);
  w.strides.push_back(1);
  if (!padding.mode.empty()) {
    w.padding = padding;
    return w;
  }
  if (padding.pairs.size() != ns)
    throw ValueError(std::string(fn) + ": padding has " + std::to_string(padding.pairs.size()) +
                         " (low, high) pairs but window_shape " + ints_str(window_shape) + " has " +
                         std::to_string(ns) + " entries",
                     loc);
  std::vector<std::pair<int64_t, int64_t>> pairs(w.num_batch, {0, 0});
  pairs.insert(pairs.end(), padding.pairs.begin(), padding.pairs.end());
  pairs.emplace_back(0, 0);
  w.padding = pairs;
  return w;
}

}  // namespace

Array conv(const Array& x, const Array& w, const std::vector<int64_t>& strides, const lax::Padding& padding,
           const ConvOptions& options, std::source_location loc) {
  if (!x.defined() || !w.defined()) throw ValueError("nn::conv: x or w is an empty Array", loc);
  const std::string& l = options.layout;
  const int64_t nd = x.ndim();
  const bool channels_last = l.size() >= 3 && l.front() == 'N' && l.back() == 'C';
  const bool channels_first = l.size() >= 3 && l[0] == 'N' && l[1] == 'C';
  const std::set<char> letters(l.begin(), l.end());
  if (int64_t(l.size()) != nd || letters.size() != l.size() || !(channels_last || channels_first))
    throw ValueError("nn::conv: layout '" + l +
                         "' must be 'N', the spatial letters and 'C' (\"NHWC\") or 'N', 'C' "
                         "and the spatial letters (\"NCHW\"), one letter per dimension of x " +
                         x.aval().str(),
                     loc);
  const std::string spatial = channels_last ? l.substr(1, l.size() - 2) : l.substr(2);
  const std::string kernel = channels_last ? spatial + "IO" : "OI" + spatial;
  lax::ConvGeneralDilatedOptions o;
  o.rhs_dilation = options.rhs_dilation;
  o.dimension_numbers = lax::ConvDimensionSpec(l, kernel, l);
  o.feature_group_count = options.feature_group_count;
  const std::vector<int64_t> st = strides.empty() ? std::vector<int64_t>(spatial.size(), 1) : strides;
  Array y = named("nn::conv", loc, [&] { return lax::conv_general_dilated(x, w, st, padding, o, loc); });
  if (!options.bias) return y;
  const Array& b = *options.bias;
  const int64_t fdim = channels_last ? nd - 1 : 1;
  if (!b.defined() || b.ndim() != 1 || b.shape()[0] != y.shape()[size_t(fdim)])
    throw ShapeError("nn::conv: bias " + (b.defined() ? b.aval().str() : std::string("(empty)")) +
                         " must have shape [out features] of the output " + y.aval().str() + " (layout '" +
                         l + "')",
                     loc);
  return named("nn::conv", loc,
               [&] { return lax::add(y, lax::broadcast_in_dim(b, y.shape(), {fdim}, loc), loc); });
}

Array max_pool(const Array& x, const std::vector<int64_t>& window_shape, const std::vector<int64_t>& strides,
               const lax::Padding& padding, std::source_location loc) {
  const PoolWindow w = pool_window("nn::max_pool", x, window_shape, strides, padding, loc);
  return named("nn::max_pool", loc,
               [&] { return lax::reduce_window_max(x, w.dims, w.strides, w.padding, {}, {}, loc); });
}

Array avg_pool(const Array& x, const std::vector<int64_t>& window_shape, const std::vector<int64_t>& strides,
               const lax::Padding& padding, bool count_include_pad, std::source_location loc) {
  const PoolWindow w = pool_window("nn::avg_pool", x, window_shape, strides, padding, loc);
  return named("nn::avg_pool", loc, [&] {
    Array y = lax::reduce_window_sum(x, w.dims, w.strides, w.padding, {}, {}, loc);
    if (!is_floating(y.dtype())) y = lax::convert_element_type(y, DType::f32, false, loc);  // true division
    if (count_include_pad) {
      int64_t size = 1;
      for (int64_t d : window_shape) size *= d;
      return lax::div(y, lax::scalar(double(size), y.dtype(), true), loc);
    }
    // The number of elements of x (not padding) in each window: the pooled sum of ones over one
    // example (batch and feature dims of size 1), broadcast.
    Shape ones_shape = x.shape();
    for (size_t d = 0; d < w.num_batch; ++d) ones_shape[d] = 1;
    ones_shape.back() = 1;
    Array counts = lax::reduce_window_sum(lax::full(ones_shape, 1.0, y.dtype()), w.dims, w.strides, w.padding,
                                          {}, {}, loc);
    std::vector<int64_t> all(size_t(y.ndim()));
    for (size_t d = 0; d < all.size(); ++d) all[d] = int64_t(d);
    return lax::div(y, lax::broadcast_in_dim(counts, y.shape(), all, loc), loc);
  });
}

}  // namespace minijax::nn
