// minijax elementwise scalars: the compute type of an element type and the scalar operations
// every evaluator shares (NaN-propagating max/min, wrapping integer arithmetic), without the IR.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/dtype.h"

namespace minijax::elementwise {

/// The type arithmetic is done in: float for bf16 (compute in float, store rounded), else T.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, bfloat16>, float, T>;

template <class T>
inline Compute<T> load(T v) {
  if constexpr (std::is_same_v<T, bfloat16>) return float(v);
  else return v;
}
template <class T, class C>
inline T store(C v) {
  if constexpr (std::is_same_v<T, bfloat16>) return bfloat16(float(v));
  else return static_cast<T>(v);
}

/// max(a, b) on a compute value (Compute<T>), propagating NaN as XLA's max does: a NaN operand
/// (the first, when both are) is the result; otherwise the larger.
template <class C>
inline C nan_max(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return a > b ? a : b;
}
/// min(a, b), propagating NaN as nan_max does.
template <class C>
inline C nan_min(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return a < b ? a : b;
}

// ---- wrapping integer arithmetic (two's complement, as XLA; no signed-overflow UB) ----------------
template <class C>
inline C wrap_add(C a, C b) {
  if constexpr (std::is_same_v<C, int32_t>) return int32_t(uint32_t(a) + uint32_t(b));
  else return C(a + b);
}
template <class C>
inline C wrap_sub(C a, C b) {
  if constexpr (std::is_same_v<C, int32_t>) return int32_t(uint32_t(a) - uint32_t(b));
  else return C(a - b);
}
template <class C>
inline C wrap_mul(C a, C b) {
  if constexpr (std::is_same_v<C, int32_t>) return int32_t(uint32_t(a) * uint32_t(b));
  else return C(a * b);
}
template <class C>
inline C wrap_neg(C a) {
  if constexpr (std::is_same_v<C, int32_t>) return int32_t(0u - uint32_t(a));
  else if constexpr (std::is_same_v<C, uint32_t>) return 0u - a;
  else return -a;
}

}  // namespace minijax::elementwise
