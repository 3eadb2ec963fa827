// minijax <-> xtensor conversion: from_xtensor (copy an xt::xarray / xt::xtensor into an Array) and
// to_xtensor (copy a concrete Array of any dtype into an xt::xarray<T>). Header-only templates.
#pragma once
#include <cstddef>
#include <source_location>
#include <type_traits>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

#include "core/array.h"

namespace minijax {

namespace detail {

/// The minijax element type holding values of C++ type T (bool, int32_t, uint32_t, bfloat16,
/// float, double map to themselves; other integers and long double are not accepted).
template <class T>
inline constexpr bool is_element_type_v =
    std::is_same_v<T, bool> || std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t> ||
    std::is_same_v<T, bfloat16> || std::is_same_v<T, float> || std::is_same_v<T, double>;

/// Copies the row-major elements of an xtensor expression into a fresh concrete Array.
template <class T, class E>
Array copy_from_xexpression(const E& e) {
  static_assert(is_element_type_v<T>,
                "from_xtensor: element type must be bool, int32_t, uint32_t, bfloat16, float or "
                "double");
  Shape shape(e.shape().begin(), e.shape().end());
  Array out = Array::allocate(ShapedArray{shape, dtype_of<T>(), false, MemoryKind::device});
  T* p = out.template mutable_data<T>();
  std::size_t i = 0;
  // Row-major traversal regardless of the expression's own layout.
  for (auto it = e.template cbegin<xt::layout_type::row_major>();
       it != e.template cend<xt::layout_type::row_major>(); ++it)
    p[i++] = static_cast<T>(*it);
  return out;
}

template <class To, class From>
To convert_element(From v) {
  if constexpr (std::is_same_v<From, bfloat16>) {
    return convert_element<To>(float(v));
  } else if constexpr (std::is_same_v<To, bfloat16>) {
    return bfloat16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace detail

/// Copies an xt::xarray<T> into a new concrete Array of the same shape (row-major) and the
/// dtype of T (bool -> bool, int32_t -> i32, uint32_t -> u32, bfloat16 -> bf16, float -> f32,
/// double -> f64); weak_type false, memory kind device. Example:
/// `mj::from_xtensor(xt::xarray<float>{{1, 2}, {3, 4}})` is an f32[2,2].
template <class T>
Array from_xtensor(const xt::xarray<T>& x) {
  return detail::copy_from_xexpression<T>(x);
}

/// Copies an xt::xtensor<T, N> (static rank) into a new concrete Array; as the xarray overload.
template <class T, std::size_t N>
Array from_xtensor(const xt::xtensor<T, N>& x) {
  return detail::copy_from_xexpression<T>(x);
}

/// Copies the value of `a` into an xt::xarray<T> of a's shape, converting from any dtype as
/// numpy's astype does (floats -> ints truncate, -> bool is != 0, bf16 via f32). Under eager
/// grad/jvp the concrete primal is used. Throws ConcretizationError when `a` is a staged value
/// (inside jit/make_jaxpr), TypeError for float0/token arrays, ValueError for an empty handle
/// or a donated buffer.
template <class T>
xt::xarray<T> to_xtensor(const Array& a, std::source_location loc = std::source_location::current()) {
  static_assert(detail::is_element_type_v<T>,
                "to_xtensor: element type must be bool, int32_t, uint32_t, bfloat16, float or "
                "double");
  Array c = a.concrete(loc, "to_xtensor's argument");
  const ShapedArray& av = c.aval();
  std::vector<std::size_t> shape(av.shape.begin(), av.shape.end());
  xt::xarray<T> out(shape);
  const void* raw = c.raw_data(loc);
  int64_t n = av.size();
  T* dst = out.data();
  dispatch_dtype(av.dtype, [&]<class S>() {
    const S* src = static_cast<const S*>(raw);
    for (int64_t i = 0; i < n; ++i) dst[i] = detail::convert_element<T>(src[i]);
  });
  return out;
}

}  // namespace minijax
