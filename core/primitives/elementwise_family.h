// minijax elementwise family helpers (private to core/primitives): dtype classes, operand checks
// and the eager loops that define a unary/binary primitive from a lambda in a few lines.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

#include "core/array.h"
#include "core/dtype.h"
#include "core/errors.h"
#include "core/primitive.h"
#include "core/primitives/elementwise_scalar.h"

namespace minijax::elementwise {

/// The cost and fusion classes of an elementwise primitive (core/primitive.h).
struct Classes {
  CostClass cost = CostClass::arithmetic;
  FusionClass fusion = FusionClass::normal;
};
/// One flop per element, fused anywhere (add, mul, compare, select, ...).
inline constexpr Classes kArithmetic{};
/// One flop per element, but never fused into a group that reads it more than once (div, rem).
inline constexpr Classes kExpensiveArithmetic{CostClass::arithmetic, FusionClass::expensive};
/// One transcendental per element, never fused into a group that reads it more than once.
inline constexpr Classes kTranscendental{CostClass::transcendental, FusionClass::expensive};

/// Sets p's op class to elementwise and its cost and fusion classes to c.
inline void set_elementwise(Primitive& p, Classes c = kArithmetic) {
  p.op_class = OpClass::elementwise;
  p.cost_class = c.cost;
  p.fusion_class = c.fusion;
}

/// Which dtypes an elementwise primitive accepts.
enum class Accept {
  floating,          ///< bf16, f32, f64
  numeric,           ///< i32, u32 and the floats (not bool)
  integral_or_bool,  ///< bool, i32, u32
  integral,          ///< i32, u32 (not bool)
  any_value,         ///< bool, ints and floats (not float0/token)
};

inline bool accepts(Accept a, DType d) {
  switch (a) {
    case Accept::floating: return is_floating(d);
    case Accept::numeric: return is_floating(d) || is_integer(d);
    case Accept::integral_or_bool: return is_integer(d) || d == DType::bool_;
    case Accept::integral: return is_integer(d);
    case Accept::any_value: return is_floating(d) || is_integer(d) || d == DType::bool_;
  }
  return false;
}

inline const char* accept_name(Accept a) {
  switch (a) {
    case Accept::floating: return "a floating dtype (bf16, f32, f64)";
    case Accept::numeric: return "a numeric dtype (i32, u32, bf16, f32, f64)";
    case Accept::integral_or_bool: return "a bool or integer dtype";
    case Accept::integral: return "an integer dtype (i32, u32)";
    case Accept::any_value: return "a bool, integer or floating dtype";
  }
  return "?";
}

/// Compile-time form of accepts() for the C++ element type T.
template <Accept A, class T>
constexpr bool accepts_type() {
  constexpr bool fl = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                      std::is_same_v<T, bfloat16>;
  constexpr bool in = std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>;
  constexpr bool bo = std::is_same_v<T, bool>;
  if constexpr (A == Accept::floating) return fl;
  else if constexpr (A == Accept::numeric) return fl || in;
  else if constexpr (A == Accept::integral_or_bool) return in || bo;
  else if constexpr (A == Accept::integral) return in;
  else return fl || in || bo;
}

/// Throws TypeError unless the operand's dtype is in the class.
inline void check_dtype(const ShapedArray& a, Accept acc, const char* which = "operand") {
  if (!accepts(acc, a.dtype))
    throw TypeError(std::string(which) + " must have " + accept_name(acc) + ", got " +
                    dtype_name(a.dtype));
}

inline void check_arity(const std::vector<ShapedArray>& in, size_t n) {
  if (in.size() != n)
    throw ValueError("expected " + std::to_string(n) + " operands, got " + std::to_string(in.size()));
}

/// Binds the binary primitive `p` on x and y as lax's binary functions do (JAX's
/// _try_broadcast_shapes): operands of equal rank whose dims are equal or 1 are first broadcast
/// (broadcast_in_dim) to their common shape, e.g. [5,8] with [1,8]; every other pair (equal
/// shapes, a rank-0 operand, unequal ranks, sizes neither equal nor 1) is bound as given, where
/// the shape rule accepts or refuses it.
Array bind_broadcasting_binary(const Primitive& p, const Array& x, const Array& y, std::source_location loc);

/// Throws TypeError unless all avals share a memory kind.
inline void check_same_memory_kind(const std::vector<ShapedArray>& in) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].memory_kind != in[0].memory_kind)
      throw TypeError(std::string("operands must share a memory kind, got ") +
                      memory_kind_name(in[0].memory_kind) + " and " +
                      memory_kind_name(in[i].memory_kind));
}

/// Output aval of a binary elementwise op: equal dtypes; shapes equal or one of rank 0 (JAX's
/// scalar rule); weak iff both weak. `bool_out` gives a bool, not weak, result (comparisons).
ShapedArray binary_out_aval(const std::vector<ShapedArray>& in, Accept acc,
                            bool bool_out = false);

/// out[i] = f(x[i]) for the element types accepted by A; out has x's dtype. f receives and
/// returns Compute<T>.
template <Accept A, class F>
void unary_loop(const Array& x, Array& out, F f) {
  dispatch_dtype(x.dtype(), [&]<class T>() {
    if constexpr (accepts_type<A, T>()) {
      const T* px = x.data<T>();
      T* po = out.mutable_data<T>();
      const int64_t n = x.size();
      for (int64_t i = 0; i < n; ++i) po[i] = store<T>(f(load(px[i])));
    } else {
      throw TypeError(std::string("unsupported dtype ") + dtype_name(x.dtype()));
    }
  });
}

/// out[i] = f(x[i], y[i]) with a rank-0 operand broadcast against the other. Out has the
/// operands' dtype, or bool if BoolOut.
template <Accept A, bool BoolOut, class F>
void binary_loop(const Array& x, const Array& y, Array& out, F f) {
  dispatch_dtype(x.dtype(), [&]<class T>() {
    if constexpr (accepts_type<A, T>()) {
      using O = std::conditional_t<BoolOut, bool, T>;
      const T* px = x.data<T>();
      const T* py = y.data<T>();
      O* po = out.mutable_data<O>();
      const int64_t n = out.size();
      const int64_t sx = x.size() == n ? 1 : 0, sy = y.size() == n ? 1 : 0;
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (BoolOut) po[i] = bool(f(load(px[i * sx]), load(py[i * sy])));
        else po[i] = store<T>(f(load(px[i * sx]), load(py[i * sy])));
      }
    } else {
      throw TypeError(std::string("unsupported dtype ") + dtype_name(x.dtype()));
    }
  });
}

/// Defines a unary elementwise primitive (shape and dtype preserved, weak type kept) from a lambda
/// over Compute<T> values.
template <Accept A, class F>
void def_unary(const char* name, F f, Classes c = kArithmetic) {
  auto& p = get_or_create_primitive(name);
  set_elementwise(p, c);
  p.shape_rule = [](const std::vector<ShapedArray>& in, const Params&) {
    check_arity(in, 1);
    check_dtype(in[0], A);
    return std::vector<ShapedArray>{in[0]};
  };
  p.impl = [f](const std::vector<Array>& args, const Params&,
               const std::vector<ShapedArray>& out_avals) {
    Array out = Array::empty(out_avals[0]);
    unary_loop<A>(args[0], out, f);
    return std::vector<Array>{out};
  };
}

/// Defines a binary elementwise primitive from a lambda over Compute<T> values.
template <Accept A, bool BoolOut = false, class F>
void def_binary(const char* name, F f, Classes c = kArithmetic) {
  auto& p = get_or_create_primitive(name);
  set_elementwise(p, c);
  p.shape_rule = [](const std::vector<ShapedArray>& in, const Params&) {
    return std::vector<ShapedArray>{binary_out_aval(in, A, BoolOut)};
  };
  p.impl = [f](const std::vector<Array>& args, const Params&,
               const std::vector<ShapedArray>& out_avals) {
    Array out = Array::empty(out_avals[0]);
    binary_loop<A, BoolOut>(args[0], args[1], out, f);
    return std::vector<Array>{out};
  };
}

/// Converts one element value between element types with XLA's semantics: float -> int
/// truncates toward zero and saturates (NaN -> 0); -> bool is v != 0; int <-> int wraps.
template <class U, class T>
inline U convert_value(T v) {
  if constexpr (std::is_same_v<U, T>) {
    return v;
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return convert_value<U, float>(float(v));
  } else if constexpr (std::is_same_v<U, bfloat16>) {
    return bfloat16(float(v));
  } else if constexpr (std::is_same_v<U, bool>) {
    return v != T(0);
  } else if constexpr (std::is_integral_v<U> && std::is_floating_point_v<T>) {
    if (std::isnan(v)) return U(0);
    if (v <= T(std::numeric_limits<U>::min())) return std::numeric_limits<U>::min();
    if (v >= T(std::numeric_limits<U>::max())) return std::numeric_limits<U>::max();
    return static_cast<U>(v);
  } else {
    return static_cast<U>(v);
  }
}

}  // namespace minijax::elementwise
