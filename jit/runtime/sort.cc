// minijax runtime sort and top_k (jit/runtime/sort.h): radix sorts of order-preserving unsigned keys,
// index permutations for several operands, and a one-pass selection of the k largest per row.
#include "jit/runtime/sort.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "jit/runtime/abi.h"
#include "jit/runtime/parallel_for.h"

namespace minijax {
namespace {

// ---- keys ---------------------------------------------------------------------------------------
// Sort keys (JAX's comparator): unsigned integers in the order of the values, floats with every
// NaN mapped to the largest key and -0.0 to +0.0's key (flip all bits of a negative float, set the
// sign bit of a positive one). Top-k keys (XLA's total order): the same map without the merging.

template <class U>
U float_key(U b) {
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  return (b & sign) ? U(~b) : U(b | sign);
}
template <class U>
U float_unkey(U k) {
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  return (k & sign) ? U(k & ~sign) : U(~k);
}
template <class U>
bool is_nan_bits(U b) {
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  constexpr U inf = sizeof(U) == 4 ? U(0x7f800000u) : U(0x7ff0000000000000ull);
  return U(b & ~sign) > inf;
}
template <class U>
U sort_float_key(U b) {
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  if (is_nan_bits(b)) return U(~U(0));
  return float_key(b == sign ? U(0) : b);
}

// The sort key (low bits of a u64) of element i of a buffer of dtype d.
uint64_t sort_key(DType d, const void* p, int64_t i) {
  switch (d) {
    case DType::bool_: return static_cast<const uint8_t*>(p)[i] ? 1 : 0;
    case DType::i32: return static_cast<const uint32_t*>(p)[i] ^ 0x80000000u;
    case DType::u32: return static_cast<const uint32_t*>(p)[i];
    case DType::bf16: return sort_float_key<uint32_t>(uint32_t(static_cast<const uint16_t*>(p)[i]) << 16);
    case DType::f32: return sort_float_key<uint32_t>(static_cast<const uint32_t*>(p)[i]);
    case DType::f64: return sort_float_key<uint64_t>(static_cast<const uint64_t*>(p)[i]);
    default: throw std::invalid_argument(std::string("unsupported dtype ") + dtype_name(d));
  }
}

// ---- radix sort -----------------------------------------------------------------------------------

// Stable LSD radix sort of a[0, n) by bytes [lo, hi) of each unsigned item, 8 bits a pass; a pass
// whose digit is the same in every item is skipped. tmp: scratch of n items. The result is in a.
template <class U>
void radix_sort(U* a, U* tmp, int64_t n, int lo, int hi) {
  const int passes = hi - lo;
  int64_t hist[8][256] = {};
  for (int64_t i = 0; i < n; ++i) {
    const U v = a[i];
    for (int p = 0; p < passes; ++p) ++hist[p][(v >> (8 * (lo + p))) & 0xff];
  }
  U *src = a, *dst = tmp;
  for (int p = 0; p < passes; ++p) {
    int64_t* h = hist[p];
    if (*std::max_element(h, h + 256) == n) continue;
    int64_t sum = 0;
    for (int d = 0; d < 256; ++d) {
      const int64_t c = h[d];
      h[d] = sum;
      sum += c;
    }
    const int shift = 8 * (lo + p);
    for (int64_t i = 0; i < n; ++i) {
      const U v = src[i];
      dst[h[(v >> shift) & 0xff]++] = v;
    }
    std::swap(src, dst);
  }
  if (src != a) std::memcpy(a, src, size_t(n) * sizeof(U));
}

template <class U>
void sort_keys(U* a, U* tmp, int64_t n, int lo, int hi) {
  if (n < 64) std::sort(a, a + n);  // items are unique or their order among equals is irrelevant
  else radix_sort(a, tmp, n, lo, hi);
}

// ---- one operand: sort the keys themselves --------------------------------------------------------

// Row of n elements of storage type U (f32/i32/u32 as u32, f64 as u64) at in[t * stride].
template <class U>
void sort_row_direct(DType d, const U* in, U* out, int64_t n, int64_t stride, std::vector<U>& keys,
                     std::vector<U>& tmp) {
  const bool fl = d == DType::f32 || d == DType::f64;
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  bool special = false;  // a -0.0 or a NaN: their keys were merged, so their bits are restored below
  for (int64_t t = 0; t < n; ++t) {
    const U b = in[t * stride];
    if (fl) {
      special |= b == sign || is_nan_bits(b);
      keys[size_t(t)] = sort_float_key(b);
    } else {
      keys[size_t(t)] = d == DType::i32 ? U(b ^ sign) : b;
    }
  }
  sort_keys(keys.data(), tmp.data(), n, 0, int(sizeof(U)));
  for (int64_t t = 0; t < n; ++t) {
    const U k = keys[size_t(t)];
    out[t * stride] = fl ? float_unkey(k) : d == DType::i32 ? U(k ^ sign) : k;
  }
  if (!special) return;
  // The zeros and the NaNs each form one block of equal keys; fill each with the row's own zeros
  // and NaNs in input order (what a stable sort of the values gives).
  const U* kb = keys.data();
  int64_t z = std::lower_bound(kb, kb + n, sort_float_key(U(0))) - kb;
  int64_t q = std::lower_bound(kb, kb + n, U(~U(0))) - kb;
  for (int64_t t = 0; t < n; ++t) {
    const U b = in[t * stride];
    if ((b & ~sign) == 0) out[z++ * stride] = b;
    else if (is_nan_bits(b)) out[q++ * stride] = b;
  }
}

// ---- several operands: a permutation ------------------------------------------------------------

struct SortJob {
  int32_t m, num_keys;
  const int32_t* dtypes;
  const void* const* ins;
  void* const* outs;
  int64_t outer, n, inner;
};

void copy_elem(void* dst, int64_t di, const void* src, int64_t si, size_t w) {
  std::memcpy(static_cast<char*>(dst) + size_t(di) * w, static_cast<const char*>(src) + size_t(si) * w, w);
}

// The permutation of row (base, inner stride) into perm, by the keys.
void row_permutation(const SortJob& j, int64_t base, std::vector<uint64_t>& items, std::vector<uint64_t>& tmp,
                     std::vector<int64_t>& perm) {
  const int64_t n = j.n;
  const DType d0 = DType(j.dtypes[0]);
  if (j.num_keys == 1 && d0 != DType::f64 && n <= int64_t(UINT32_MAX)) {
    // key << 32 | index: sorted by the key bytes only, stable (radix), or by the whole item (the
    // index breaks ties in input order).
    for (int64_t t = 0; t < n; ++t)
      items[size_t(t)] = sort_key(d0, j.ins[0], base + t * j.inner) << 32 | uint64_t(t);
    if (n < 64) std::sort(items.begin(), items.begin() + n);
    else radix_sort(items.data(), tmp.data(), n, 4, 8);
    for (int64_t t = 0; t < n; ++t) perm[size_t(t)] = int64_t(items[size_t(t)] & 0xffffffffu);
    return;
  }
  std::vector<uint64_t> keys(size_t(n) * size_t(j.num_keys));
  for (int32_t k = 0; k < j.num_keys; ++k)
    for (int64_t t = 0; t < n; ++t)
      keys[size_t(t) * size_t(j.num_keys) + size_t(k)] = sort_key(DType(j.dtypes[k]), j.ins[k],
                                                                  base + t * j.inner);
  std::iota(perm.begin(), perm.end(), int64_t(0));
  const size_t nk = size_t(j.num_keys);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    const uint64_t* ka = &keys[size_t(a) * nk];
    const uint64_t* kb = &keys[size_t(b) * nk];
    return std::lexicographical_compare(ka, ka + nk, kb, kb + nk);
  });
}

// Sorts rows [lo, hi) of the job (row r = (o, i): elements (o * n + t) * inner + i).
void sort_rows(const SortJob& j, int64_t lo, int64_t hi) {
  const int64_t n = j.n;
  const DType d0 = DType(j.dtypes[0]);
  const bool direct = j.m == 1 &&
                      (d0 == DType::f32 || d0 == DType::i32 || d0 == DType::u32 || d0 == DType::f64);
  std::vector<uint32_t> k32, t32;
  std::vector<uint64_t> k64, t64;
  std::vector<int64_t> perm;
  if (direct && d0 != DType::f64) k32.resize(size_t(n)), t32.resize(size_t(n));
  else k64.resize(size_t(n)), t64.resize(size_t(n));
  if (!direct) perm.resize(size_t(n));
  for (int64_t r = lo; r < hi; ++r) {
    const int64_t base = (r / j.inner) * n * j.inner + r % j.inner;
    if (direct) {
      if (d0 == DType::f64)
        sort_row_direct<uint64_t>(d0, static_cast<const uint64_t*>(j.ins[0]) + base,
                                  static_cast<uint64_t*>(j.outs[0]) + base, n, j.inner, k64, t64);
      else
        sort_row_direct<uint32_t>(d0, static_cast<const uint32_t*>(j.ins[0]) + base,
                                  static_cast<uint32_t*>(j.outs[0]) + base, n, j.inner, k32, t32);
      continue;
    }
    row_permutation(j, base, k64, t64, perm);
    for (int32_t q = 0; q < j.m; ++q) {
      const size_t w = itemsize(DType(j.dtypes[q]));
      for (int64_t t = 0; t < n; ++t)
        copy_elem(j.outs[q], base + t * j.inner, j.ins[q], base + perm[size_t(t)] * j.inner, w);
    }
  }
}

// ---- top_k ----------------------------------------------------------------------------------------

// The total-order key of element i (XLA's order: the float map without merging NaNs or zeros).
template <class T, class U>
U top_key(const T* x, int64_t i) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    U b;
    std::memcpy(&b, &x[i], sizeof(U));
    return float_key(b);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return float_key(U(x[i].bits) << 16);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return U(uint32_t(x[i]) ^ 0x80000000u);
  } else {
    return U(x[i]);
  }
}

template <class T, class U>
void top_k_rows(const T* in, T* vals, int32_t* idx, int64_t lo, int64_t hi, int64_t n, int64_t k) {
  struct Best {
    U key;
    int32_t i;
  };
  std::vector<Best> buf(static_cast<size_t>(std::max<int64_t>(k, 1)));
  std::vector<int32_t> perm;
  for (int64_t r = lo; r < hi; ++r) {
    const T* x = in + r * n;
    if (k == 0) continue;
    if (k <= 128) {
      // The k best so far, sorted (key descending, index ascending); an element enters only when
      // its key beats the k-th's (an equal key has a higher index, so it loses the tie).
      int64_t m = 0;
      for (int64_t j = 0; j < n; ++j) {
        const U key = top_key<T, U>(x, j);
        int64_t pos;
        if (m == k) {
          if (!(key > buf[size_t(k - 1)].key)) continue;
          pos = k - 1;
        } else {
          pos = m++;
        }
        while (pos > 0 && buf[size_t(pos - 1)].key < key) {
          buf[size_t(pos)] = buf[size_t(pos - 1)];
          --pos;
        }
        buf[size_t(pos)] = Best{key, int32_t(j)};
      }
      for (int64_t j = 0; j < k; ++j) idx[r * k + j] = buf[size_t(j)].i;
    } else {
      perm.resize(size_t(n));
      std::iota(perm.begin(), perm.end(), 0);
      std::partial_sort(perm.begin(), perm.begin() + k, perm.end(), [&](int32_t a, int32_t b) {
        const U ka = top_key<T, U>(x, a), kb = top_key<T, U>(x, b);
        return ka > kb || (ka == kb && a < b);
      });
      std::copy(perm.begin(), perm.begin() + k, idx + r * k);
    }
    for (int64_t j = 0; j < k; ++j) vals[r * k + j] = x[idx[r * k + j]];
  }
}

// Rows per parallel block: about 64k elements each.
int64_t row_grain(int64_t n) { return std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(n, 1)); }

}  // namespace
}  // namespace minijax

extern "C" void mj_rt_sort(int32_t num_operands, int32_t num_keys, const int32_t* dtypes,
                           const void* const* ins, void* const* outs, int64_t outer, int64_t n,
                           int64_t inner) {
  using namespace minijax;
  try {
    const SortJob j{num_operands, num_keys, dtypes, ins, outs, outer, n, inner};
    for (int32_t q = 0; q < num_operands; ++q) (void)itemsize(DType(dtypes[q]));
    const int64_t rows = outer * inner;
    if (rows == 0 || n == 0) return;
    if (rows == 1) return sort_rows(j, 0, 1);
    parallel_for_blocks(rows, row_grain(n), [&](int64_t lo, int64_t hi) { sort_rows(j, lo, hi); });
  } catch (const std::exception& e) {
    detail::record_runtime_error(std::string("mj_rt_sort: ") + e.what());
  }
}

extern "C" void mj_rt_top_k(int32_t dtype, const void* in, void* values, int32_t* indices, int64_t rows,
                            int64_t n, int64_t k) {
  using namespace minijax;
  try {
    if (rows == 0 || k == 0) return;
    auto run = [&]<class T, class U>() {
      const T* x = static_cast<const T*>(in);
      T* v = static_cast<T*>(values);
      if (rows == 1) return top_k_rows<T, U>(x, v, indices, 0, 1, n, k);
      parallel_for_blocks(rows, row_grain(n),
                          [&](int64_t lo, int64_t hi) { top_k_rows<T, U>(x, v, indices, lo, hi, n, k); });
    };
    switch (DType(dtype)) {
      case DType::bool_: return run.template operator()<uint8_t, uint32_t>();
      case DType::i32: return run.template operator()<int32_t, uint32_t>();
      case DType::u32: return run.template operator()<uint32_t, uint32_t>();
      case DType::bf16: return run.template operator()<bfloat16, uint32_t>();
      case DType::f32: return run.template operator()<float, uint32_t>();
      case DType::f64: return run.template operator()<double, uint64_t>();
      default: throw std::invalid_argument(std::string("unsupported dtype ") + dtype_name(DType(dtype)));
    }
  } catch (const std::exception& e) {
    detail::record_runtime_error(std::string("mj_rt_top_k: ") + e.what());
  }
}
