// minijax data-movement kernels shared by the shape and slicing primitives' eager implementations.
// Owns the dtype-agnostic n-d strided copy (by element size, so float0 and bf16 need no dispatch).
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/aval.h"

namespace minijax::detail {

/// Copies n elements of type W between strided runs (strides in elements).
template <class W>
inline void copy_run(char* dst, int64_t ds, const char* src, int64_t ss, int64_t n) {
  constexpr int64_t w = int64_t(sizeof(W));
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds * w, src + i * ss * w, sizeof(W));
}

/// Copies the elements of an n-d block of extents `shape` from `src` to `dst`, element (i0..ik)
/// going from src element `src_off + sum(i_j * src_strides[j])` to dst element
/// `dst_off + sum(i_j * dst_strides[j])`. Offsets and strides count elements of `elem` bytes and
/// may be negative (reversal). Contiguous innermost runs are one memcpy.
inline void copy_strided(char* dst, int64_t dst_off, const std::vector<int64_t>& dst_strides,
                         const char* src, int64_t src_off, const std::vector<int64_t>& src_strides,
                         const Shape& shape, size_t elem) {
  if (elem == 0) return;
  const int64_t total = shape_size(shape);
  if (total == 0) return;
  const int64_t e = int64_t(elem);
  const size_t r = shape.size();
  if (r == 0) {
    std::memcpy(dst + dst_off * e, src + src_off * e, elem);
    return;
  }
  const int64_t inner = shape[r - 1];
  const int64_t ds = dst_strides[r - 1], ss = src_strides[r - 1];
  const int64_t outer = total / inner;
  std::vector<int64_t> idx(r - 1, 0);
  int64_t d = dst_off, s = src_off;
  for (int64_t o = 0; o < outer; ++o) {
    char* dp = dst + d * e;
    const char* sp = src + s * e;
    if (ds == 1 && ss == 1) {
      std::memcpy(dp, sp, size_t(inner * e));
    } else {
      switch (elem) {
        case 1: copy_run<uint8_t>(dp, ds, sp, ss, inner); break;
        case 2: copy_run<uint16_t>(dp, ds, sp, ss, inner); break;
        case 4: copy_run<uint32_t>(dp, ds, sp, ss, inner); break;
        case 8: copy_run<uint64_t>(dp, ds, sp, ss, inner); break;
        default:
          for (int64_t i = 0; i < inner; ++i) std::memcpy(dp + i * ds * e, sp + i * ss * e, elem);
      }
    }
    for (size_t k = r - 1; k-- > 0;) {
      ++idx[k];
      d += dst_strides[k];
      s += src_strides[k];
      if (idx[k] < shape[k]) break;
      d -= dst_strides[k] * shape[k];
      s -= src_strides[k] * shape[k];
      idx[k] = 0;
    }
  }
}

/// Fills n elements of `elem` bytes at dst with the element at `value`.
inline void fill_elems(char* dst, int64_t n, const void* value, size_t elem) {
  if (elem == 0) return;
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * int64_t(elem), value, elem);
}

}  // namespace minijax::detail
