// minijax runtime: the sort and top_k functions compiled code calls (jit/runtime/sort.cc; listed in
// runtime_symbols()), on raw buffers through the C ABI.
#pragma once
#include <cstdint>

extern "C" {
/// sort: `num_operands` arrays of one shape, laid out as outer × n × inner (the dims before the
/// sorted one, the sorted one, the dims after it; row-major), each row of n sorted
/// lexicographically by the first `num_keys` operands and every operand permuted alike, written
/// to outs[i] (not overlapping ins[i]). dtypes[i] is operand i's minijax DType (bool, i32, u32,
/// bf16, f32, f64). The order is eager sort's (core/primitives/sorting.cc, JAX's
/// _sort_lt_comparator): -0.0 == +0.0, every NaN after +inf and equal to the others, always
/// stable. One f32/f64/i32/u32 operand: its order-preserving unsigned keys are radix sorted (LSD,
/// 8-bit digits; std::sort below 64 elements) and the zeros and NaNs, whose keys were merged,
/// written back in input order; otherwise a key of 32 bits or less is radix sorted with its index
/// beside it, and longer or several keys by std::stable_sort of indices, then each operand
/// gathered. Rows run in parallel on the oneTBB pool. Unknown dtypes record a runtime error.
void mj_rt_sort(int32_t num_operands, int32_t num_keys, const int32_t* dtypes, const void* const* ins,
                void* const* outs, int64_t outer, int64_t n, int64_t inner);
/// top_k: for each of `rows` contiguous rows of `n` elements of dtype `dtype` in `in`, the `k`
/// largest in XLA:CPU's order (the IEEE total order of a float's bits, +NaN > +inf > ... > +0 > -0
/// > ... > -inf > -NaN; integers by value), largest first, ties to the lower index, written to
/// `values` (rows × k, the dtype) and `indices` (rows × k, i32). Per row, one pass keeps the k best
/// in a sorted buffer (k <= 128; a row element enters only when it beats the k-th), else
/// std::partial_sort of indices. Rows run in parallel on the oneTBB pool.
void mj_rt_top_k(int32_t dtype, const void* in, void* values, int32_t* indices, int64_t rows, int64_t n,
                 int64_t k);
}
