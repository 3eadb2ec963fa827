// minijax PRNG: JAX's counter-based threefry2x32 generator (PRNGKey, split, fold_in, bits,
// uniform, normal, randint, permutation) and the lax-level bit primitives it is built from.
#pragma once
#include <cstdint>
#include <source_location>
#include <utility>

#include "core/array.h"

namespace minijax::lax {

/// JAX's threefry2x32 block function (Threefry-2x32, 20 rounds; Salmon et al., "Parallel Random
/// Numbers: As Easy as 1, 2, 3", SC11; JAX's jax/_src/prng.py `_threefry2x32_lowering`): key
/// (k1, k2) and counter (x1, x2) -> (y1, y2). All four operands are u32 and broadcast
/// numpy-style (a rank-0 key against counters of any shape); both outputs have the broadcast
/// shape. Throws TypeError for non-u32 operands, ShapeError for incompatible shapes.
std::pair<Array, Array> threefry2x32(const Array& k1, const Array& k2, const Array& x1,
                                     const Array& x2,
                                     std::source_location loc = std::source_location::current());
/// JAX's iota_2x32_shape: the row-major flat index of every element of `shape` as a 64-bit
/// integer split into (high 32 bits, low 32 bits), two u32 arrays of `shape`.
std::pair<Array, Array> iota_2x32_shape(const Shape& shape,
                                        std::source_location loc = std::source_location::current());
/// x >> y with zero fill (XLA: shift amounts >= 32 give 0). i32/u32 operands of one dtype and
/// shapes as lax's binary functions take them (core/lax.h: equal, rank 0, or size-1 dims broadcast).
/// Throws TypeError/ShapeError.
Array shift_right_logical(const Array& x, const Array& y,
                          std::source_location loc = std::source_location::current());
/// x << y (XLA: shift amounts >= 32 give 0). i32/u32 operands of one dtype, shapes as
/// shift_right_logical.
Array shift_left(const Array& x, const Array& y,
                 std::source_location loc = std::source_location::current());
/// Bitwise exclusive or (logical for bool); operands of one dtype, shapes as shift_right_logical
/// (JAX's `xor`).
Array xor_(const Array& x, const Array& y, std::source_location loc = std::source_location::current());
/// Reinterprets the bits of x as new_dtype (JAX's bitcast_convert_type). Equal item sizes keep
/// the shape; u32/i32/f32 -> f64 consumes a trailing dimension of size 2 (element 0 holds the
/// low 32 bits, little-endian order) and f64 -> u32/i32/f32 appends one. bool, bf16 and float0
/// are rejected (TypeError); a missing trailing 2 is a ShapeError.
Array bitcast_convert_type(const Array& x, DType new_dtype,
                           std::source_location loc = std::source_location::current());
/// Inverse error function on floats (JAX's erf_inv): -1 -> -inf, 1 -> inf, |x| > 1 -> NaN.
/// f32 and bf16 use Giles' single-precision polynomial ("Approximating the erfinv function",
/// GPU Computing Gems, 2011), as XLA's ErfInv does for f32; f64 refines it with two Newton
/// steps on erf. Throws TypeError for non-float operands.
Array erf_inv(const Array& x, std::source_location loc = std::source_location::current());

}  // namespace minijax::lax

namespace minijax::random {

/// A PRNG key from a seed: u32[2] = [seed >> 32, seed & 0xffffffff], as JAX's
/// jax.random.PRNGKey with the threefry2x32 implementation (for seeds below 2^32 this is
/// [0, seed] under either setting of jax_enable_x64; a negative int converts modulo 2^64 as
/// JAX does with x64 enabled).
Array PRNGKey(uint64_t seed);

/// `num` new keys u32[num, 2] derived from `key` (u32[2]): key i = threefry2x32(key, (0, i)),
/// JAX >= 0.5's split with jax_threefry_partitionable = True (`_threefry_split_foldlike`).
/// Throws TypeError if key is not u32[2], ValueError if num < 0.
Array split(const Array& key, int64_t num = 2,
            std::source_location loc = std::source_location::current());

/// A new key u32[2] from `key` and an integer: threefry2x32(key, (0, data)) (JAX's
/// threefry_fold_in). Throws TypeError if key is not u32[2].
Array fold_in(const Array& key, uint32_t data,
              std::source_location loc = std::source_location::current());
/// fold_in with the data as a rank-0 integer array (may be traced); converted to u32.
/// Throws TypeError for non-integer or non-rank-0 data.
Array fold_in(const Array& key, const Array& data,
              std::source_location loc = std::source_location::current());

/// Uniform random u32 bits of `shape`: element i (row-major) = y1 ^ y2 where
/// (y1, y2) = threefry2x32(key, (i >> 32, i & 0xffffffff)) (JAX's
/// `_threefry_random_bits_partitionable` for 32-bit width). Throws TypeError for a bad key.
Array bits(const Array& key, const Shape& shape,
           std::source_location loc = std::source_location::current());

/// Uniform floats in [minval, maxval) of `shape` and float `dtype` (f32, f64 or bf16), as
/// jax.random.uniform: the top mantissa-many random bits are placed under the exponent of 1.0,
/// bitcast to a float in [1, 2), minus 1, scaled by (maxval - minval), plus minval, then
/// max(minval, .). f64 uses 64 random bits (hi = y1, lo = y2); bf16 uses the low 8 bits of
/// y1 ^ y2. Throws TypeError for a non-float dtype or a bad key.
Array uniform(const Array& key, const Shape& shape, DType dtype = DType::f32, double minval = 0.0,
              double maxval = 1.0, std::source_location loc = std::source_location::current());

/// Standard normal floats of `shape` and float `dtype`, as jax.random.normal:
/// sqrt(2) * erf_inv(u) with u uniform in [nextafter(-1, 0), 1).
/// Throws TypeError for a non-float dtype or a bad key.
Array normal(const Array& key, const Shape& shape, DType dtype = DType::f32,
             std::source_location loc = std::source_location::current());

/// Uniform integers in [minval, maxval) of `shape` and integer `dtype` (i32 or u32), with
/// jax.random.randint's algorithm: bounds are clipped to the dtype's range, span = maxval -
/// minval (1 when maxval <= minval, so minval is returned), two independent 32-bit draws from
/// split(key) are combined as (hi % span * (2^32 % span) + lo % span) % span, which keeps the
/// bias below span / 2^32. Throws TypeError for a non-integer dtype or a bad key.
Array randint(const Array& key, const Shape& shape, int64_t minval, int64_t maxval,
              DType dtype = DType::i32, std::source_location loc = std::source_location::current());

/// A random permutation of [0, n) as i32[n], as jax.random.permutation(key, n): ceil(3 ln n /
/// ln(2^32 - 1)) rounds of a stable sort of the values by fresh random 32-bit keys (round r
/// uses key, subkey = split(key)). Evaluated eagerly (for data shuffling): throws
/// ConcretizationError when the key is a staged value, TypeError for a bad key, ValueError if
/// n < 0.
Array permutation(const Array& key, int64_t n,
                  std::source_location loc = std::source_location::current());

}  // namespace minijax::random
