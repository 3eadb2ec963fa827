// minijax PRNG (namespace minijax::random): keys, split, fold_in and the samplers, built from the
// threefry2x32 primitive and lax ops as JAX >= 0.5 builds them (jax_threefry_partitionable=True).
#include "core/random.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "core/lax.h"
#include "core/numpy.h"

namespace minijax::random {

namespace {

using SL = std::source_location;

void check_key(const Array& key, const char* fn, SL loc) {
  if (!key.defined()) throw ValueError(std::string(fn) + ": empty key", loc);
  const auto& a = key.aval();
  if (a.dtype != DType::u32 || a.shape != Shape{2})
    throw TypeError(std::string(fn) + ": expected a PRNG key of type u32[2] (from PRNGKey or split), got " +
                        a.str(),
                    loc);
}

void check_shape(const Shape& shape, const char* fn, SL loc) {
  for (int64_t d : shape)
    if (d < 0)
      throw ValueError(std::string(fn) + ": negative dimension in shape " + shape_str(shape), loc);
}

/// The two halves of a key as rank-0 u32 arrays (JAX's `k1, k2 = key`: slice + squeeze).
std::pair<Array, Array> key_halves(const Array& key, SL loc) {
  Array k1 = lax::squeeze(lax::slice(key, {0}, {1}, {}, loc), {0}, loc);
  Array k2 = lax::squeeze(lax::slice(key, {1}, {2}, {}, loc), {0}, loc);
  return {k1, k2};
}

/// A rank-0 constant of dtype d broadcast to `shape` (a literal plus broadcast_in_dim when staged).
Array constant(double v, DType d, const Shape& shape, SL loc) {
  Array s = scalar(v, d);
  if (shape.empty()) return s;
  return lax::broadcast_in_dim(s, shape, {}, loc);
}

/// x with a new trailing dimension of size 1.
Array with_trailing_one(const Array& x, SL loc) {
  Shape s = x.shape();
  s.push_back(1);
  std::vector<int64_t> dims(size_t(x.ndim()));
  std::iota(dims.begin(), dims.end(), 0);
  return lax::broadcast_in_dim(x, s, dims, loc);
}

/// stack([a, b], axis=ndim) for two arrays of one shape.
Array stack_last(const Array& a, const Array& b, SL loc) {
  return lax::concatenate({with_trailing_one(a, loc), with_trailing_one(b, loc)}, a.ndim(), loc);
}

/// (y1, y2) = threefry2x32(key, iota_2x32_shape(shape)): the two 32-bit words per element.
std::pair<Array, Array> random_words(const Array& key, const Shape& shape, SL loc) {
  auto [k1, k2] = key_halves(key, loc);
  auto [hi, lo] = lax::iota_2x32_shape(shape, loc);
  return lax::threefry2x32(k1, k2, hi, lo, loc);
}

/// The value v converted to the element type of d and back (for exact constants).
double round_to(double v, DType d) {
  switch (d) {
    case DType::f32: return double(float(v));
    case DType::bf16: return double(float(bfloat16(float(v))));
    default: return v;
  }
}

}  // namespace

Array PRNGKey(uint64_t seed) {
  return array({double(uint32_t(seed >> 32)), double(uint32_t(seed & 0xffffffffu))}, {2}, DType::u32);
}

Array split(const Array& key, int64_t num, SL loc) {
  check_key(key, "random.split", loc);
  if (num < 0) throw ValueError("random.split: negative number of keys " + std::to_string(num), loc);
  auto [y1, y2] = random_words(key, {num}, loc);
  return stack_last(y1, y2, loc);
}

Array fold_in(const Array& key, uint32_t data, SL loc) {
  check_key(key, "random.fold_in", loc);
  // threefry_2x32(key, threefry_seed(data)) with threefry_seed(data) = [0, data]: the count
  // array [0, data] splits into halves x1 = [0], x2 = [data], and the output is [y1, y2].
  auto [k1, k2] = key_halves(key, loc);
  Array x1 = array({0.0}, {1}, DType::u32, loc);
  Array x2 = array({double(data)}, {1}, DType::u32, loc);
  auto [y1, y2] = lax::threefry2x32(k1, k2, x1, x2, loc);
  return lax::concatenate({y1, y2}, 0, loc);
}

Array fold_in(const Array& key, const Array& data, SL loc) {
  check_key(key, "random.fold_in", loc);
  if (!data.defined() || data.ndim() != 0 || !is_integer(data.dtype()))
    throw TypeError("random.fold_in: data must be a rank-0 integer array, got " +
                        (data.defined() ? data.aval().str() : std::string("an empty Array")),
                    loc);
  auto [k1, k2] = key_halves(key, loc);
  Array d = data.dtype() == DType::u32 ? data : lax::convert_element_type(data, DType::u32, false, loc);
  Array x1 = array({0.0}, {1}, DType::u32, loc);
  Array x2 = lax::broadcast_in_dim(d, {1}, {}, loc);
  auto [y1, y2] = lax::threefry2x32(k1, k2, x1, x2, loc);
  return lax::concatenate({y1, y2}, 0, loc);
}

Array bits(const Array& key, const Shape& shape, SL loc) {
  check_key(key, "random.bits", loc);
  check_shape(shape, "random.bits", loc);
  auto [y1, y2] = random_words(key, shape, loc);
  return lax::xor_(y1, y2, loc);
}

Array uniform(const Array& key, const Shape& shape, DType dtype, double minval, double maxval,
              SL loc) {
  check_key(key, "random.uniform", loc);
  check_shape(shape, "random.uniform", loc);
  if (!is_floating(dtype))
    throw TypeError(std::string("random.uniform: dtype must be a float dtype, got ") + dtype_name(dtype), loc);
  auto u32c = [&](double v) { return constant(v, DType::u32, shape, loc); };
  auto [y1, y2] = random_words(key, shape, loc);
  Array floats;  // in [0, 1), of dtype
  if (dtype == DType::f32) {
    // 23 mantissa bits: bits >> 9 | bits(1.0f), bitcast, minus 1.
    Array b = lax::xor_(y1, y2, loc);
    Array fb = lax::or_(lax::shift_right_logical(b, u32c(9), loc), u32c(0x3f800000u), loc);
    floats = lax::sub(lax::bitcast_convert_type(fb, DType::f32, loc), constant(1.0, dtype, shape, loc), loc);
  } else if (dtype == DType::f64) {
    // 52 mantissa bits of the 64-bit word (y1 << 32 | y2) >> 12, or-ed with bits(1.0), as two
    // u32 words: high = y1 >> 12 | 0x3ff00000, low = y1 << 20 | y2 >> 12.
    Array hi = lax::or_(lax::shift_right_logical(y1, u32c(12), loc), u32c(0x3ff00000u), loc);
    Array lo = lax::or_(lax::shift_left(y1, u32c(20), loc), lax::shift_right_logical(y2, u32c(12), loc), loc);
    Array words = stack_last(lo, hi, loc);  // little-endian: element 0 is the low word
    floats = lax::sub(lax::bitcast_convert_type(words, DType::f64, loc), constant(1.0, dtype, shape, loc), loc);
  } else {
    // bf16 (7 mantissa bits) uses 8 random bits, the low byte of y1 ^ y2 (JAX converts the
    // 32-bit draw to uint8), shifted right by 1. m / 128 is exact in f32 and bf16, so it is
    // built in f32 (bits (m << 16) | bits(1.0f)) and converted.
    Array b8 = lax::and_(lax::xor_(y1, y2, loc), u32c(0xff), loc);
    Array m = lax::shift_left(lax::shift_right_logical(b8, u32c(1), loc), u32c(16), loc);
    Array fb = lax::or_(m, u32c(0x3f800000u), loc);
    Array f = lax::sub(lax::bitcast_convert_type(fb, DType::f32, loc), constant(1.0, DType::f32, shape, loc), loc);
    floats = lax::convert_element_type(f, dtype, false, loc);
  }
  // floats * (maxval - minval) + minval, then max(minval, .), with bounds in dtype.
  double lo_v = round_to(minval, dtype), hi_v = round_to(maxval, dtype);
  double scale = round_to(hi_v - lo_v, dtype);
  Array lo_arr = constant(lo_v, dtype, shape, loc);
  Array out = lax::add(lax::mul(floats, constant(scale, dtype, shape, loc), loc), lo_arr, loc);
  return lax::max(lo_arr, out, loc);
}

Array normal(const Array& key, const Shape& shape, DType dtype, SL loc) {
  check_key(key, "random.normal", loc);
  check_shape(shape, "random.normal", loc);
  if (!is_floating(dtype))
    throw TypeError(std::string("random.normal: dtype must be a float dtype, got ") + dtype_name(dtype), loc);
  // lo = nextafter(-1, 0) in dtype: the open end of the uniform interval (-1, 1).
  double lo;
  if (dtype == DType::f64) lo = std::nextafter(-1.0, 0.0);
  else if (dtype == DType::f32) lo = double(std::nextafter(-1.0f, 0.0f));
  else lo = -1.0 + 1.0 / 256.0;  // bf16: 8 significant bits, spacing 2^-8 below 1 in magnitude
  Array u = uniform(key, shape, dtype, lo, 1.0, loc);
  return lax::mul(constant(std::sqrt(2.0), dtype, shape, loc), lax::erf_inv(u, loc), loc);
}

Array randint(const Array& key, const Shape& shape, int64_t minval, int64_t maxval, DType dtype,
              SL loc) {
  check_key(key, "random.randint", loc);
  check_shape(shape, "random.randint", loc);
  if (!is_integer(dtype))
    throw TypeError(std::string("random.randint: dtype must be an integer dtype, got ") + dtype_name(dtype), loc);
  // Clip the bounds into the dtype's range; remember when maxval lay above it (the span is then
  // one larger, so the dtype's maximum can be drawn).
  int64_t tmin = dtype == DType::i32 ? std::numeric_limits<int32_t>::min() : 0;
  int64_t tmax = dtype == DType::i32 ? std::numeric_limits<int32_t>::max()
                                     : int64_t(std::numeric_limits<uint32_t>::max());
  bool maxval_out_of_range = maxval > tmax;
  int64_t lo = std::clamp(minval, tmin, tmax), hi = std::clamp(maxval, tmin, tmax);
  uint32_t span = hi <= lo ? 1u : uint32_t(uint64_t(hi - lo));
  if (maxval_out_of_range && hi > lo) span += 1u;  // wraps to 0 for the full range: no reduction
  // multiplier = 2^32 % span = ((2^16 % span)^2) % span, in u32 arithmetic as JAX computes it.
  uint32_t mult = 0;
  if (span != 0) {
    mult = uint32_t(65536u % span);
    mult = uint32_t(mult * mult) % span;
  }
  Array keys = split(key, 2, loc);
  Array key1 = lax::squeeze(lax::slice(keys, {0, 0}, {1, 2}, {}, loc), {0}, loc);
  Array key2 = lax::squeeze(lax::slice(keys, {1, 0}, {2, 2}, {}, loc), {0}, loc);
  Array higher = bits(key1, shape, loc), lower = bits(key2, shape, loc);
  Array offset;
  if (span == 0) {
    // The whole 32-bit range: x % 2^32 = x, and 2^32 % 2^32 = 0, so the offset is lower.
    offset = lower;
  } else {
    Array sp = constant(double(span), DType::u32, shape, loc);
    offset = lax::add(lax::mul(lax::rem(higher, sp, loc), constant(double(mult), DType::u32, shape, loc), loc),
                      lax::rem(lower, sp, loc), loc);
    offset = lax::rem(offset, sp, loc);
  }
  Array off = dtype == DType::u32 ? offset : lax::convert_element_type(offset, dtype, false, loc);
  return lax::add(constant(double(lo), dtype, shape, loc), off, loc);
}

Array permutation(const Array& key, int64_t n, SL loc) {
  check_key(key, "random.permutation", loc);
  if (n < 0) throw ValueError("random.permutation: negative size " + std::to_string(n), loc);
  Array k = key.concrete(loc, "random.permutation's key (it shuffles eagerly)");
  std::vector<int32_t> x(static_cast<size_t>(n));
  std::iota(x.begin(), x.end(), 0);
  const double uint32max = double(std::numeric_limits<uint32_t>::max());
  int rounds = int(std::ceil(3.0 * std::log(double(std::max<int64_t>(1, n))) / std::log(uint32max)));
  std::vector<size_t> order(static_cast<size_t>(n));
  std::vector<int32_t> tmp(static_cast<size_t>(n));
  for (int r = 0; r < rounds; ++r) {
    Array keys = split(k, 2, loc);
    const uint32_t* kd = keys.data<uint32_t>(loc);
    k = array({double(kd[0]), double(kd[1])}, {2}, DType::u32, loc);
    Array sub = array({double(kd[2]), double(kd[3])}, {2}, DType::u32, loc);
    Array sort_keys = bits(sub, {n}, loc);
    const uint32_t* sk = sort_keys.data<uint32_t>(loc);
    // lax.sort_key_val(sort_keys, x) is a stable sort of x by sort_keys.
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sk[a] < sk[b]; });
    for (size_t i = 0; i < order.size(); ++i) tmp[i] = x[order[i]];
    x.swap(tmp);
  }
  Array out = Array::empty(ShapedArray{{n}, DType::i32, false, MemoryKind::device});
  std::copy(x.begin(), x.end(), out.mutable_data<int32_t>());
  return out;
}

}  // namespace minijax::random
