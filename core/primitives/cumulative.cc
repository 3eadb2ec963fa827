// minijax cumulative primitives beside cumsum: cumprod, cummax, cummin and cumlogsumexp. Owns their
// shape rules, eager implementations, cost and lax:: entry points (JAX's loops.py cum*_p).
//
// Params as JAX prints them: cumprod[axis=0 reverse=False]. Each output element combines the
// operand's elements up to it along `axis` (from the end when `reverse`), in order:
// - cumprod: floats multiply in double and each output is the running product rounded to the
//   dtype (bf16 through f32), as cumsum adds; i32/u32 wrap modulo 2^32 as in XLA;
// - cummax/cummin: the running extreme in the dtype; NaN propagates (once seen, every later
//   output is that NaN), as reduce_max/min; i32 compares signed, u32 unsigned;
// - cumlogsumexp: the running log(sum(exp)) in double, each step JAX's logaddexp
//   (jax/_src/numpy/ufuncs.py): max(a, b) + log1p(exp(-|a - b|)), and a + b where a - b is NaN
//   (both infinite of one sign, or a NaN), so -inf inputs give -inf, never NaN. Floating only.
// bool operands are refused by all four (JAX's _cumred_dtype_rule accepts numbers only).
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "core/lax.h"
#include "core/param_reads.h"
#include "core/primitive.h"
#include "core/trace.h"

namespace minijax {

namespace {

enum class CumKind { prod, max, min, logsumexp };

struct CumInfo {
  const char* name;
  CumKind kind;
};
constexpr CumInfo kCums[] = {{"cumprod", CumKind::prod},
                             {"cummax", CumKind::max},
                             {"cummin", CumKind::min},
                             {"cumlogsumexp", CumKind::logsumexp}};

std::vector<ShapedArray> cum_shape_rule(const std::vector<ShapedArray>& in, const Params& p,
                                        const CumInfo& c) {
  const ShapedArray& x = in.at(0);
  const std::string name = c.name;
  if (x.dtype == DType::float0 || x.dtype == DType::token || x.dtype == DType::bool_)
    throw TypeError(name + " does not accept operands of dtype " + dtype_name(x.dtype) +
                    " (accepted: i32, u32, bf16, f32, f64)");
  if (c.kind == CumKind::logsumexp && !is_floating(x.dtype))
    throw TypeError(name + " does not accept operands of dtype " + dtype_name(x.dtype) +
                    " (a floating dtype is required: bf16, f32 or f64)");
  const int64_t axis = param_int(p, "axis");
  if (axis < 0 || axis >= x.ndim())
    throw ShapeError(name + " axis " + std::to_string(axis) + " out of range for rank " +
                     std::to_string(x.ndim()) + " (operand " + x.str() + ")");
  param_bool(p, "reverse");
  return {x};
}

template <class T>
constexpr bool is_float_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                            std::is_same_v<T, bfloat16>;

template <class T>
double to_d(T v) {
  if constexpr (std::is_same_v<T, bfloat16>) return double(float(v));
  else return double(v);
}
template <class T>
T from_d(double v) {
  if constexpr (std::is_same_v<T, bfloat16>) return bfloat16(float(v));
  else return T(v);
}

/// JAX's logaddexp in double (see the file comment).
double logaddexp(double a, double b) {
  const double d = a - b;
  if (std::isnan(d)) return a + b;
  return std::max(a, b) + std::log1p(std::exp(-std::fabs(d)));
}

// The running combine of one line (n elements at stride `inner`, from `src` to `dst`).
template <class T>
void scan_line(const T* src, T* dst, int64_t n, int64_t inner, bool reverse, CumKind kind) {
  auto at = [&](int64_t t) { return (reverse ? n - 1 - t : t) * inner; };
  if (n == 0) return;
  if constexpr (is_float_v<T>) {
    if (kind == CumKind::prod || kind == CumKind::logsumexp) {
      double acc = to_d(src[at(0)]);
      dst[at(0)] = from_d<T>(acc);
      for (int64_t t = 1; t < n; ++t) {
        const double x = to_d(src[at(t)]);
        acc = kind == CumKind::prod ? acc * x : logaddexp(acc, x);
        dst[at(t)] = from_d<T>(acc);
      }
      return;
    }
  } else if (kind == CumKind::prod) {
    uint32_t acc = uint32_t(src[at(0)]);
    dst[at(0)] = T(acc);
    for (int64_t t = 1; t < n; ++t) {
      acc *= uint32_t(src[at(t)]);  // wraps modulo 2^32
      dst[at(t)] = T(acc);
    }
    return;
  }
  // max / min in the dtype; NaN propagates.
  const bool is_max = kind == CumKind::max;
  T acc = src[at(0)];
  dst[at(0)] = acc;
  for (int64_t t = 1; t < n; ++t) {
    const T x = src[at(t)];
    if constexpr (is_float_v<T>) {
      const double a = to_d(acc), v = to_d(x);
      if (!std::isnan(a) && (std::isnan(v) || (is_max ? v > a : v < a))) acc = x;
    } else {
      if (is_max ? x > acc : x < acc) acc = x;
    }
    dst[at(t)] = acc;
  }
}

std::vector<Array> cum_impl(const std::vector<Array>& args, const Params& p,
                            const std::vector<ShapedArray>& out_avals, CumKind kind) {
  const Array& x = args.at(0);
  const int64_t axis = param_int(p, "axis");
  const bool reverse = param_bool(p, "reverse");
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1;
  const int64_t n = s[size_t(axis)];
  for (int64_t i = 0; i < axis; ++i) outer *= s[size_t(i)];
  for (int64_t i = axis + 1; i < int64_t(s.size()); ++i) inner *= s[size_t(i)];
  Array out = Array::empty(out_avals.at(0));
  dispatch_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* src = x.data<T>();
      T* dst = out.mutable_data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          const int64_t base = o * n * inner + j;
          scan_line<T>(src + base, dst + base, n, inner, reverse, kind);
        }
    }
  });
  return {out};
}

Registrar reg([] {
  for (const CumInfo& c : kCums) {
    auto& p = get_or_create_primitive(c.name);
    p.shape_rule = [c](const std::vector<ShapedArray>& in, const Params& ps) {
      return cum_shape_rule(in, ps, c);
    };
    const CumKind kind = c.kind;
    p.impl = [kind](const std::vector<Array>& a, const Params& ps, const std::vector<ShapedArray>& o) {
      return cum_impl(a, ps, o, kind);
    };
    set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
    // One combine per operand element: a multiply or a compare; logaddexp counts its exp, log1p,
    // max, subtraction, absolute value and addition (6).
    p.cost = [kind](const Eqn& e, bool count_bytes, const JaxprCost&) {
      CostEstimate k = operand_and_result_bytes(e, count_bytes);
      k.flops = double(atom_aval(e.inputs[0]).size()) * (kind == CumKind::logsumexp ? 6.0 : 1.0);
      return k;
    };
  }
});

}  // namespace

namespace lax {

Array cumprod(const Array& x, int64_t axis, bool reverse, SL loc) {
  return minijax::bind1(primitive("cumprod"), {x}, Params{{"axis", axis}, {"reverse", reverse}}, loc);
}
Array cummax(const Array& x, int64_t axis, bool reverse, SL loc) {
  return minijax::bind1(primitive("cummax"), {x}, Params{{"axis", axis}, {"reverse", reverse}}, loc);
}
Array cummin(const Array& x, int64_t axis, bool reverse, SL loc) {
  return minijax::bind1(primitive("cummin"), {x}, Params{{"axis", axis}, {"reverse", reverse}}, loc);
}
Array cumlogsumexp(const Array& x, int64_t axis, bool reverse, SL loc) {
  return minijax::bind1(primitive("cumlogsumexp"), {x}, Params{{"axis", axis}, {"reverse", reverse}}, loc);
}

}  // namespace lax

}  // namespace minijax
