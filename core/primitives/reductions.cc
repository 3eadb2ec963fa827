// minijax reduction primitives: reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_and,
// reduce_or, reduce_xor, argmax, argmin, cumsum. Owns their shape rules, eager implementations and
// lax:: entry points.
//
// Params (as JAX prints them): reduce_*[axes=(0,)], argmax[axes=(1,) index_dtype=int32],
// cumsum[axis=0 reverse=False]. reduce_sum adds in the one fixed pairwise order the compiled
// kernels use (sum_reduce below; docs/compiler.md, "Numerics"), so eager and compiled sums agree bit
// for bit; products accumulate in double; integer sums and products wrap modulo 2^32 as in XLA.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "core/lax.h"
#include "core/param_reads.h"
#include "core/primitive.h"
#include "core/trace.h"

namespace minijax {

namespace {

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() == 1) s += ",";
  return s + ")";
}

// Checks that `axes` are distinct dims of a rank-`ndim` operand; returns them sorted.
std::vector<int64_t> checked_axes(const std::vector<int64_t>& axes, int64_t ndim) {
  std::vector<int64_t> s = axes;
  for (int64_t a : s)
    if (a < 0 || a >= ndim)
      throw ShapeError("reduction axes " + ints_str(axes) + " out of range for rank " +
                       std::to_string(ndim) + " (axes must be in [0, " + std::to_string(ndim) + "))");
  std::sort(s.begin(), s.end());
  if (std::adjacent_find(s.begin(), s.end()) != s.end())
    throw ShapeError("duplicate reduction axes " + ints_str(axes));
  return s;
}

void check_dtype(DType d, bool allow_bool, const char* what) {
  if (d == DType::float0 || d == DType::token || (!allow_bool && d == DType::bool_))
    throw TypeError(std::string(what) + " does not accept operands of dtype " + dtype_name(d));
}

Shape kept_shape(const Shape& s, const std::vector<int64_t>& sorted_axes) {
  Shape out;
  for (int64_t i = 0; i < int64_t(s.size()); ++i)
    if (!std::binary_search(sorted_axes.begin(), sorted_axes.end(), i)) out.push_back(s[size_t(i)]);
  return out;
}

// Linear offsets (row-major over `dims`, in the listed order) of all index combinations of
// `dims` of an array of shape s.
std::vector<int64_t> offsets_over(const Shape& s, const std::vector<int64_t>& dims) {
  auto st = strides_of(s);
  std::vector<int64_t> offs{0};
  for (int64_t d : dims) {
    std::vector<int64_t> next;
    next.reserve(offs.size() * size_t(s[size_t(d)]));
    for (int64_t o : offs)
      for (int64_t i = 0; i < s[size_t(d)]; ++i) next.push_back(o + i * st[size_t(d)]);
    offs.swap(next);
  }
  return offs;
}

// Base offsets of every output element (kept dims) and offsets of the reduced elements.
struct ReduceLayout {
  std::vector<int64_t> base, red;
};
ReduceLayout reduce_layout(const Shape& s, const std::vector<int64_t>& sorted_axes) {
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < int64_t(s.size()); ++i)
    if (!std::binary_search(sorted_axes.begin(), sorted_axes.end(), i)) kept.push_back(i);
  return {offsets_over(s, kept), offsets_over(s, sorted_axes)};
}

// The accumulator type: double for floating types, uint32 (wrapping) for integers, bool for bool.
template <class T>
using Acc = std::conditional_t<std::is_same_v<T, bool>, bool,
                               std::conditional_t<std::is_integral_v<T>, uint32_t, double>>;

template <class T>
Acc<T> to_acc(T v) {
  if constexpr (std::is_same_v<T, bfloat16>) return double(float(v));
  else return Acc<T>(v);
}
template <class T>
T from_acc(Acc<T> v) {
  if constexpr (std::is_same_v<T, bfloat16>) return bfloat16(float(v));
  else return T(v);
}
template <class T>
constexpr bool is_float_t = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                            std::is_same_v<T, bfloat16>;
template <class T>
bool is_nan(T v) {
  if constexpr (is_float_t<T>) return std::isnan(double(to_acc<T>(v)));
  else return false;
}
template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, bfloat16>) return double(float(v));
  else return double(v);
}

// ---- the summation order ------------------------------------------------------------------------
// reduce_sum's one fixed order, shared bit for bit with the compiled reduction kernels
// (jit/codegen/lower/kernels.cc reduce_point; docs/compiler.md, "Numerics"). Every addition is in the
// accumulator type SumAcc (the dtype itself; f32 for bf16, rounded to bf16 once at the end; u32,
// wrapping, for i32/u32). Each row of the innermost reduced axis (n elements, in order) runs in
// blocks of 128: element i of a block is added into accumulator i % 16 (16 accumulators from +0,
// each a sequential sum of at most 8 elements; sum_block), and the 16 are joined by the balanced
// tree ((a0 + a1) + (a2 + a3)) + ...; the blocks' results are joined by the tree P, and the rows'
// results (one per index of the other reduced axes, row-major) by P again. P(y_0..y_{k-1}) is +0
// for k = 0, y_0 for k = 1, else P(y_0..y_{p-1}) + P(y_p..y_{k-1}) with p the largest power of two
// below k; the kernels form it with a binary counter as results stream in. The order depends on
// the reduced extents only, not on the layout: vmap and transposes keep every output's bits.
// Source of the scheme: numpy's pairwise_sum (numpy/_core/src/umath/loops_utils.h.src: blocks of
// 128 in 8 accumulators, then halving), with 16 accumulators (one AVX-512 vector of f32; the
// kernels use them on every host) and power-of-two splits so that a streaming kernel forms the tree.
constexpr int64_t kSumBlock = 128;  // elements per block
constexpr int kSumLanes = 16;       // accumulators per block

template <class T>
using SumAcc = std::conditional_t<std::is_same_v<T, double>, double,
                                  std::conditional_t<std::is_integral_v<T>, uint32_t, float>>;
template <class T>
SumAcc<T> sum_in(T v) {
  if constexpr (std::is_same_v<T, bfloat16>) return float(v);
  else return SumAcc<T>(v);
}

// P over the k items item(lo), ..., item(lo + k - 1).
template <class A, class F>
A pairwise_tree(int64_t lo, int64_t k, const F& item) {
  if (k == 0) return A(0);
  if (k == 1) return item(lo);
  const int64_t p = int64_t(std::bit_floor(uint64_t(k - 1)));
  A left = pairwise_tree<A>(lo, p, item);
  return left + pairwise_tree<A>(lo + p, k - p, item);
}

// One block: the m <= 128 elements x[0], x[stride], ...
template <class T>
SumAcc<T> sum_block(const T* x, int64_t stride, int64_t m) {
  SumAcc<T> a[kSumLanes] = {};
  int64_t i = 0;
  if (stride == 1) {
    for (; i + kSumLanes <= m; i += kSumLanes)
      for (int j = 0; j < kSumLanes; ++j) a[j] += sum_in(x[i + j]);
  }
  for (; i < m; ++i) a[i % kSumLanes] += sum_in(x[i * stride]);
  for (int w = 1; w < kSumLanes; w *= 2)
    for (int j = 0; j < kSumLanes; j += 2 * w) a[j] = a[j] + a[j + w];
  return a[0];
}

// reduce_sum of x (shape s) over sorted `axes` into dst, one output per offset in `base`.
template <class T>
void sum_reduce(const T* src, T* dst, const Shape& s, const std::vector<int64_t>& axes,
                const std::vector<int64_t>& base) {
  using A = SumAcc<T>;
  auto out = [](A v) {
    if constexpr (std::is_same_v<T, bfloat16>) return bfloat16(v);
    else return T(v);
  };
  if (axes.empty()) {
    for (size_t o = 0; o < base.size(); ++o) dst[o] = out(A(0) + sum_in(src[base[o]]));
    return;
  }
  const auto st = strides_of(s);
  const int64_t n = s[size_t(axes.back())], stride = st[size_t(axes.back())];
  std::vector<int64_t> ext, str;  // the other reduced axes: extents and strides
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < axes.size(); ++i) {
    ext.push_back(s[size_t(axes[i])]);
    str.push_back(st[size_t(axes[i])]);
    rows *= ext.back();
  }
  for (size_t o = 0; o < base.size(); ++o) {
    auto row = [&](int64_t i) -> A {
      const T* x = src + base[o];
      for (size_t d = ext.size(); d-- > 0; i /= ext[d]) x += (i % ext[d]) * str[d];
      return pairwise_tree<A>(0, (n + kSumBlock - 1) / kSumBlock, [&](int64_t b) {
        return sum_block(x + b * kSumBlock * stride, stride, std::min(kSumBlock, n - b * kSumBlock));
      });
    };
    dst[o] = out(pairwise_tree<A>(0, rows, row));
  }
}

enum class RedKind { sum, max, min, prod, and_, or_, xor_ };

bool is_bitwise(RedKind k) { return k == RedKind::and_ || k == RedKind::or_ || k == RedKind::xor_; }

const char* red_name(RedKind kind) {
  switch (kind) {
    case RedKind::sum: return "reduce_sum";
    case RedKind::prod: return "reduce_prod";
    case RedKind::max: return "reduce_max";
    case RedKind::min: return "reduce_min";
    case RedKind::and_: return "reduce_and";
    case RedKind::or_: return "reduce_or";
    case RedKind::xor_: return "reduce_xor";
  }
  return "";
}

std::vector<ShapedArray> reduce_shape_rule(const std::vector<ShapedArray>& in, const Params& p,
                                           RedKind kind) {
  const ShapedArray& x = in.at(0);
  const char* name = red_name(kind);
  if (is_bitwise(kind) && x.dtype != DType::bool_ && !is_integer(x.dtype))
    throw TypeError(std::string(name) + " does not accept operands of dtype " + dtype_name(x.dtype) +
                    " (bool, i32 or u32 required)");
  check_dtype(x.dtype, kind != RedKind::sum && kind != RedKind::prod, name);
  auto axes = checked_axes(param_ints(p, "axes"), x.ndim());
  return {ShapedArray{kept_shape(x.shape, axes), x.dtype, x.weak_type, x.memory_kind}};
}

std::vector<Array> reduce_impl(const std::vector<Array>& args, const Params& p,
                               const std::vector<ShapedArray>& out_avals, RedKind kind) {
  const Array& x = args.at(0);
  auto axes = checked_axes(param_ints(p, "axes"), x.ndim());
  Array out = Array::empty(out_avals.at(0));
  if (kind == RedKind::sum) {  // no list of the reduced offsets: it can be larger than x
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < x.ndim(); ++i)
      if (!std::binary_search(axes.begin(), axes.end(), i)) kept.push_back(i);
    const auto base = offsets_over(x.shape(), kept);
    dispatch_dtype(x.dtype(), [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>)
        sum_reduce<T>(x.data<T>(), out.mutable_data<T>(), x.shape(), axes, base);
    });
    return {out};
  }
  auto L = reduce_layout(x.shape(), axes);
  dispatch_dtype(x.dtype(), [&]<class T>() {
    const T* src = x.data<T>();
    T* dst = out.mutable_data<T>();
    const int64_t n = int64_t(L.red.size());
    for (size_t o = 0; o < L.base.size(); ++o) {
      const int64_t b = L.base[o];
      if constexpr (std::is_integral_v<T>) {  // bool, i32, u32: and / or / xor bitwise
        if (is_bitwise(kind)) {
          uint32_t r = kind == RedKind::and_ ? (std::is_same_v<T, bool> ? 1u : ~0u) : 0u;
          for (int64_t i = 0; i < n; ++i) {
            const uint32_t v = uint32_t(src[b + L.red[size_t(i)]]);
            r = kind == RedKind::and_ ? (r & v) : kind == RedKind::or_ ? (r | v) : (r ^ v);
          }
          dst[o] = T(r);
          continue;
        }
      }
      if constexpr (std::is_same_v<T, bool>) {
        bool r = kind == RedKind::min;  // identities: max -> false, min -> true
        for (int64_t i = 0; i < n; ++i) {
          bool v = src[b + L.red[size_t(i)]];
          r = kind == RedKind::max ? (r || v) : (r && v);
        }
        dst[o] = r;
      } else if (kind == RedKind::prod) {
        Acc<T> r = Acc<T>(1);
        for (int64_t i = 0; i < n; ++i) r *= to_acc<T>(src[b + L.red[size_t(i)]]);
        dst[o] = from_acc<T>(r);
      } else {
        const bool is_max = kind == RedKind::max;
        T best;  // the identity: -inf/+inf for floats, the extreme values for integers
        if constexpr (is_float_t<T>) best = T(is_max ? -INFINITY : INFINITY);
        else best = is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
        for (int64_t i = 0; i < n; ++i) {
          T v = src[b + L.red[size_t(i)]];
          if (is_nan(v)) { best = v; break; }  // NaN propagates
          if (is_max ? (as_double(v) > as_double(best)) : (as_double(v) < as_double(best))) best = v;
        }
        dst[o] = best;
      }
    }
  });
  return {out};
}

// ---- argmax / argmin ---------------------------------------------------------------------------

std::vector<ShapedArray> arg_shape_rule(const std::vector<ShapedArray>& in, const Params& p,
                                        const char* name) {
  const ShapedArray& x = in.at(0);
  check_dtype(x.dtype, true, name);
  const auto& axes = param_ints(p, "axes");
  if (axes.size() != 1)
    throw ShapeError(std::string(name) + " takes exactly one axis, got " + ints_str(axes));
  auto sorted = checked_axes(axes, x.ndim());
  DType idx = param_dtype(p, "index_dtype");
  if (!is_integer(idx))
    throw TypeError(std::string(name) + " index_dtype must be an integer dtype, got " + dtype_name(idx));
  if (x.shape[size_t(axes[0])] == 0)
    throw ValueError(std::string(name) + " requires a non-empty reduced dimension (axis " +
                     std::to_string(axes[0]) + " has size 0)");
  return {ShapedArray{kept_shape(x.shape, sorted), idx, false, x.memory_kind}};
}

std::vector<Array> arg_impl(const std::vector<Array>& args, const Params& p,
                            const std::vector<ShapedArray>& out_avals, bool is_max) {
  const Array& x = args.at(0);
  auto axes = checked_axes(param_ints(p, "axes"), x.ndim());
  auto L = reduce_layout(x.shape(), axes);
  Array out = Array::empty(out_avals.at(0));
  std::vector<int64_t> result(L.base.size());
  dispatch_dtype(x.dtype(), [&]<class T>() {
    const T* src = x.data<T>();
    for (size_t o = 0; o < L.base.size(); ++o) {
      const int64_t b = L.base[o];
      int64_t bi = 0;
      T best = src[b + L.red[0]];
      if (!is_nan(best)) {
        for (size_t i = 1; i < L.red.size(); ++i) {
          T v = src[b + L.red[i]];
          // NaN is picked (first occurrence) by both argmax and argmin, as in JAX/numpy.
          if (is_nan(v)) { bi = int64_t(i); break; }
          if (is_max ? (as_double(v) > as_double(best)) : (as_double(v) < as_double(best))) {
            best = v;
            bi = int64_t(i);
          }
        }
      }
      result[o] = bi;
    }
  });
  dispatch_dtype(out.dtype(), [&]<class I>() {
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      I* dst = out.mutable_data<I>();
      for (size_t o = 0; o < result.size(); ++o) dst[o] = I(result[o]);
    }
  });
  return {out};
}

// ---- cumsum ------------------------------------------------------------------------------------

std::vector<ShapedArray> cumsum_shape_rule(const std::vector<ShapedArray>& in, const Params& p) {
  const ShapedArray& x = in.at(0);
  check_dtype(x.dtype, false, "cumsum");
  int64_t axis = param_int(p, "axis");
  if (axis < 0 || axis >= x.ndim())
    throw ShapeError("cumsum axis " + std::to_string(axis) + " out of range for rank " +
                     std::to_string(x.ndim()));
  param_bool(p, "reverse");
  return {x};
}

std::vector<Array> cumsum_impl(const std::vector<Array>& args, const Params& p,
                               const std::vector<ShapedArray>& out_avals) {
  const Array& x = args.at(0);
  const int64_t axis = param_int(p, "axis");
  const bool reverse = param_bool(p, "reverse");
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1, n = s[size_t(axis)];
  for (int64_t i = 0; i < axis; ++i) outer *= s[size_t(i)];
  for (int64_t i = axis + 1; i < int64_t(s.size()); ++i) inner *= s[size_t(i)];
  Array out = Array::empty(out_avals.at(0));
  dispatch_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* src = x.data<T>();
      T* dst = out.mutable_data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          Acc<T> acc = Acc<T>(0);
          for (int64_t t = 0; t < n; ++t) {
            int64_t i = reverse ? n - 1 - t : t;
            int64_t off = (o * n + i) * inner + j;
            acc += to_acc<T>(src[off]);
            dst[off] = from_acc<T>(acc);
          }
        }
    }
  });
  return {out};
}

Registrar reg([] {
  const std::pair<const char*, RedKind> reds[] = {{"reduce_sum", RedKind::sum},
                                                  {"reduce_max", RedKind::max},
                                                  {"reduce_min", RedKind::min},
                                                  {"reduce_prod", RedKind::prod},
                                                  {"reduce_and", RedKind::and_},
                                                  {"reduce_or", RedKind::or_},
                                                  {"reduce_xor", RedKind::xor_}};
  for (auto [name, kind] : reds) {
    auto& p = get_or_create_primitive(name);
    set_classes(p, OpClass::reduction, CostClass::reduction, FusionClass::normal);
    p.shape_rule = [kind](const std::vector<ShapedArray>& in, const Params& ps) {
      return reduce_shape_rule(in, ps, kind);
    };
    p.impl = [kind](const std::vector<Array>& a, const Params& ps, const std::vector<ShapedArray>& o) {
      return reduce_impl(a, ps, o, kind);
    };
  }
  for (bool is_max : {true, false}) {
    const char* name = is_max ? "argmax" : "argmin";
    auto& p = get_or_create_primitive(name);
    set_classes(p, OpClass::reduction, CostClass::reduction, FusionClass::normal);
    p.shape_rule = [name](const std::vector<ShapedArray>& in, const Params& ps) {
      return arg_shape_rule(in, ps, name);
    };
    p.impl = [is_max](const std::vector<Array>& a, const Params& ps, const std::vector<ShapedArray>& o) {
      return arg_impl(a, ps, o, is_max);
    };
  }
  auto& c = get_or_create_primitive("cumsum");
  c.shape_rule = cumsum_shape_rule;
  c.impl = cumsum_impl;
  set_classes(c, OpClass::other, CostClass::custom, FusionClass::normal);
  // One add per operand element.
  c.cost = [](const Eqn& e, bool count_bytes, const JaxprCost&) {
    CostEstimate k = operand_and_result_bytes(e, count_bytes);
    k.flops = double(atom_aval(e.inputs[0]).size());
    return k;
  };
});

}  // namespace

namespace lax {

Array reduce_sum(const Array& x, const std::vector<int64_t>& axes, SL loc) {
  return minijax::bind1(primitive("reduce_sum"), {x}, Params{{"axes", axes}}, loc);
}
Array reduce_max(const Array& x, const std::vector<int64_t>& axes, SL loc) {
  return minijax::bind1(primitive("reduce_max"), {x}, Params{{"axes", axes}}, loc);
}
Array reduce_min(const Array& x, const std::vector<int64_t>& axes, SL loc) {
  return minijax::bind1(primitive("reduce_min"), {x}, Params{{"axes", axes}}, loc);
}
Array reduce_prod(const Array& x, const std::vector<int64_t>& axes, SL loc) {
  return minijax::bind1(primitive("reduce_prod"), {x}, Params{{"axes", axes}}, loc);
}
Array reduce_and(const Array& x, const std::vector<int64_t>& axes, SL loc) {
  return minijax::bind1(primitive("reduce_and"), {x}, Params{{"axes", axes}}, loc);
}
Array reduce_or(const Array& x, const std::vector<int64_t>& axes, SL loc) {
  return minijax::bind1(primitive("reduce_or"), {x}, Params{{"axes", axes}}, loc);
}
Array reduce_xor(const Array& x, const std::vector<int64_t>& axes, SL loc) {
  return minijax::bind1(primitive("reduce_xor"), {x}, Params{{"axes", axes}}, loc);
}
Array argmax(const Array& x, int64_t axis, DType index_dtype, SL loc) {
  return minijax::bind1(primitive("argmax"), {x},
                        Params{{"axes", std::vector<int64_t>{axis}}, {"index_dtype", index_dtype}}, loc);
}
Array argmin(const Array& x, int64_t axis, DType index_dtype, SL loc) {
  return minijax::bind1(primitive("argmin"), {x},
                        Params{{"axes", std::vector<int64_t>{axis}}, {"index_dtype", index_dtype}}, loc);
}
Array cumsum(const Array& x, int64_t axis, bool reverse, SL loc) {
  return minijax::bind1(primitive("cumsum"), {x}, Params{{"axis", axis}, {"reverse", reverse}}, loc);
}

}  // namespace lax

}  // namespace minijax
