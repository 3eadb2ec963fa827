// minijax numpy-style API: broadcasting and promoting operators and functions over lax.
// Owns the user-level array vocabulary (jax.numpy / jax.nn names).
#pragma once
#include <initializer_list>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

#include "core/array.h"
#include "core/lax.h"

namespace minijax {

using SL = std::source_location;

/// An operand of an arithmetic operator: an Array, or a C++ scalar that becomes a weakly typed
/// rank-0 array (so `x * 2.0` keeps x's dtype). Captures the user's call site for errors.
struct Operand {
  Array value;
  SL loc;
  /// The exact value of a C++ scalar operand (nullopt for arrays): converting a literal to the
  /// other operand's dtype (e.g. f64) starts from it, not from the weak f32 `value`.
  std::optional<double> literal;
  Operand(const Array& a, SL l = SL::current()) : value(a), loc(l) {}
  Operand(double v, SL l = SL::current());
  Operand(float v, SL l = SL::current());
  Operand(int v, SL l = SL::current());
  Operand(bool v, SL l = SL::current());
};

// Broadcasting binary operators (numpy broadcasting, JAX promotion). Throw ShapeError for
// incompatible shapes, naming both shapes and the call site.
Array operator+(const Operand& a, const Operand& b);
Array operator-(const Operand& a, const Operand& b);
Array operator*(const Operand& a, const Operand& b);
Array operator/(const Operand& a, const Operand& b);
Array operator%(const Operand& a, const Operand& b);  ///< remainder(a, b)
Array operator-(const Array& a);
// Elementwise comparisons -> bool arrays.
Array operator<(const Operand& a, const Operand& b);
Array operator<=(const Operand& a, const Operand& b);
Array operator>(const Operand& a, const Operand& b);
Array operator>=(const Operand& a, const Operand& b);
Array operator==(const Operand& a, const Operand& b);
Array operator!=(const Operand& a, const Operand& b);
Array operator&(const Operand& a, const Operand& b);
Array operator|(const Operand& a, const Operand& b);
Array operator!(const Array& a);
Array& operator+=(Array& a, const Operand& b);
Array& operator-=(Array& a, const Operand& b);
Array& operator*=(Array& a, const Operand& b);
Array& operator/=(Array& a, const Operand& b);

// ---- constructors -------------------------------------------------------------------------------
namespace detail {
/// One number of an array literal (mj::array's nested lists and vectors), kept exactly, with the
/// kind of C++ type it came from: the kinds of all the numbers give the array's dtype.
struct LiteralNumber {
  enum class Kind : uint8_t { boolean, signed_int, unsigned_int, floating };
  Kind kind;
  int64_t i = 0;   ///< boolean, signed_int
  uint64_t u = 0;  ///< unsigned_int
  double f = 0;    ///< floating
  template <class T>
    requires std::is_arithmetic_v<T>
  LiteralNumber(T v) {  // NOLINT: implicit, so a braced list of mixed numbers converts
    if constexpr (std::is_same_v<T, bool>) kind = Kind::boolean, i = v;
    else if constexpr (std::is_floating_point_v<T>) kind = Kind::floating, f = double(v);
    else if constexpr (std::is_signed_v<T>) kind = Kind::signed_int, i = int64_t(v);
    else kind = Kind::unsigned_int, u = uint64_t(v);
  }
};

/// The dtype of an array of C++ numbers of type T (JAX with 64-bit types off): bool -> bool,
/// signed integers -> i32, unsigned -> u32, floating point -> f32.
template <class T>
constexpr DType literal_dtype() {
  if constexpr (std::is_same_v<T, bool>) return DType::bool_;
  else if constexpr (std::is_floating_point_v<T>) return DType::f32;
  else if constexpr (std::is_signed_v<T>) return DType::i32;
  else return DType::u32;
}
/// Collects a literal's numbers row-major with its shape: open(n) starts a list of n elements,
/// close() ends it. ShapeError naming the list's position when a list's length differs from the
/// first one's at its depth (a ragged list).
class LiteralCollector {
 public:
  explicit LiteralCollector(SL loc) : loc_(loc) {}
  void open(size_t n);
  void close();
  void add(const LiteralNumber& x) {
    values_.push_back(x);
    ++path_.back();
  }
  /// The array: of `shape` when given (ValueError unless the count fills it), else of the
  /// collected one; of `dtype` when given, else the dtype of the numbers' kinds (JAX with x64
  /// off: any float -> f32, else any signed integer -> i32, else unsigned -> u32, else bool;
  /// an empty literal is f32). ValueError naming the value and its position for an integer
  /// outside the range of an integer dtype.
  Array finish(const std::optional<Shape>& shape, std::optional<DType> dtype) const;

 private:
  SL loc_;
  std::vector<LiteralNumber> values_;
  Shape shape_;
  std::vector<int64_t> path_;
};

template <class T>
struct is_init_list : std::false_type {};
template <class T>
struct is_init_list<std::initializer_list<T>> : std::true_type {};

template <class T>
void collect_literal(const T& x, LiteralCollector& c) {
  if constexpr (is_init_list<T>::value) {
    c.open(x.size());
    for (const auto& e : x) collect_literal(e, c);
    c.close();
  } else {
    c.add(LiteralNumber(x));
  }
}

/// The array of a nested list; of `dtype` when given (a list of one C++ type, even empty), else
/// of the dtype its numbers' kinds give (a mixed list).
template <class L>
Array array_literal(const L& list, std::optional<DType> dtype, SL loc) {
  LiteralCollector c(loc);
  collect_literal(list, c);
  return c.finish(std::nullopt, dtype);
}

template <class T>
Array array_from_vector(const std::vector<T>& v, const std::optional<Shape>& shape,
                        std::optional<DType> dtype, SL loc) {
  LiteralCollector c(loc);
  c.open(v.size());
  for (size_t k = 0; k < v.size(); ++k) c.add(LiteralNumber(T(v[k])));
  c.close();
  return c.finish(shape, dtype);
}

/// The call site parameter of mj::array's list and vector overloads: an SL that an empty braced
/// list cannot initialize (it has no default constructor), so `mj::array({2.5}, {})` stays the
/// rank-0 array of the (values, shape) overload rather than a list with a default call site.
struct LiteralSite {
  SL loc;
  LiteralSite(SL l) : loc(l) {}  // NOLINT: implicit, from SL::current() or a caller's SL
};

}  // namespace detail

/// A C++ number type mj::array accepts: bool, any integer, float or double.
template <class T>
concept ArrayElement = std::is_arithmetic_v<T>;

/// JAX's jnp.array of C++ numbers, with JAX's dtypes when 64-bit types are off (minijax has no
/// 8-, 16- or 64-bit integers): a list of one C++ type T gives
///   bool -> bool, signed integers (int, int64_t, char...) -> i32, unsigned ones -> u32,
///   float and double -> f32;
/// so `mj::array({2, 0, -1})` is i32[3], `mj::array({1.f, 2.f})` is f32[2] and
/// `mj::array({true, false})` is bool[2]. A list mixing types (`{1, 2.5}`) promotes as JAX does:
/// any float -> f32, else any signed -> i32, else unsigned -> u32. Nested lists, 1 to 4 levels,
/// give rank 1 to 4 (`mj::array({{1, 2}, {3, 4}})` is i32[2,2]); an empty list is f32[0].
/// Throws ShapeError naming the list's position (e.g. `[1]`) for a ragged nested list, and
/// ValueError naming the value and its position (e.g. `[1][2]`) for an integer outside the
/// 32-bit range of its dtype (never a silent wrap).
template <ArrayElement T>
Array array(std::initializer_list<T> values, detail::LiteralSite loc = SL::current()) {
  return detail::array_literal(values, detail::literal_dtype<T>(), loc.loc);
}
template <ArrayElement T>
Array array(std::initializer_list<std::initializer_list<T>> values, detail::LiteralSite loc = SL::current()) {
  return detail::array_literal(values, detail::literal_dtype<T>(), loc.loc);
}
template <ArrayElement T>
Array array(std::initializer_list<std::initializer_list<std::initializer_list<T>>> values,
            detail::LiteralSite loc = SL::current()) {
  return detail::array_literal(values, detail::literal_dtype<T>(), loc.loc);
}
template <ArrayElement T>
Array array(
    std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>> values,
    detail::LiteralSite loc = SL::current()) {
  return detail::array_literal(values, detail::literal_dtype<T>(), loc.loc);
}
/// The same for lists mixing number types (`{1, 2.5}`, `{{1, 2}, {0.5, 3}}`), which no single
/// type T deduces from. (A mixed list whose innermost lists hold one number each, as
/// `{{1}, {2.5}}`, is ambiguous between two of these: write `{{1.}, {2.5}}`.)
Array array(std::initializer_list<detail::LiteralNumber> values, detail::LiteralSite loc = SL::current());
Array array(std::initializer_list<std::initializer_list<detail::LiteralNumber>> values,
            detail::LiteralSite loc = SL::current());
Array array(std::initializer_list<std::initializer_list<std::initializer_list<detail::LiteralNumber>>> values,
            detail::LiteralSite loc = SL::current());
Array array(std::initializer_list<
                std::initializer_list<std::initializer_list<std::initializer_list<detail::LiteralNumber>>>>
                values,
            detail::LiteralSite loc = SL::current());
/// 1-D array [n] of a vector's numbers, with the dtype of its element type as for lists above
/// (std::vector<int> -> i32, <int64_t> -> i32 with each value checked, <uint32_t> -> u32,
/// <float>/<double> -> f32, <bool> -> bool). ValueError naming the value and its index for an
/// integer outside the 32-bit range.
template <ArrayElement T>
Array array(const std::vector<T>& values, detail::LiteralSite loc = SL::current()) {
  return detail::array_from_vector(values, std::nullopt, detail::literal_dtype<T>(), loc.loc);
}
/// Array of `shape` from a vector's row-major numbers converted to dtype (by default the dtype
/// of T, as above). ValueError if the count does not fill the shape, and naming the value and
/// its position for an integer outside the range of an integer dtype.
template <ArrayElement T>
  requires(!std::is_same_v<T, double>)
Array array(const std::vector<T>& values, const Shape& shape, DType dtype = detail::literal_dtype<T>(),
            SL loc = SL::current()) {
  return detail::array_from_vector(values, shape, dtype, loc);
}
/// Array of `shape` from row-major values converted to dtype (ValueError if sizes differ). Also
/// the overload of a braced list with a shape: `mj::array({1, 2, 3}, {3}, mj::i32)`. Values
/// convert as astype does (floats truncate toward zero for an integer dtype).
Array array(const std::vector<double>& values, const Shape& shape, DType dtype = f32,
            SL loc = SL::current());
/// Rank-0 array of v converted to dtype (strongly typed). TypeError for float0/token.
Array scalar(double v, DType dtype = f32, SL loc = SL::current());
/// Array of `shape` filled with 0 / 1 / value (on the device). ValueError for a negative
/// dimension or a size beyond int64 (no silent wraparound), TypeError for float0/token; both
/// name the caller's `loc`.
Array zeros(const Shape& shape, DType dtype = f32, SL loc = SL::current());
Array ones(const Shape& shape, DType dtype = f32, SL loc = SL::current());
Array full(const Shape& shape, double value, DType dtype = f32, SL loc = SL::current());
/// 0 / 1 / value with x's shape, dtype, weak type and memory kind (x may be a tracer).
Array zeros_like(const Array& x, SL loc = SL::current());
Array ones_like(const Array& x, SL loc = SL::current());
Array full_like(const Array& x, double value, SL loc = SL::current());
/// [0, 1, ..., n-1] (empty for n <= 0, as numpy).
Array arange(int64_t n, DType dtype = i32, SL loc = SL::current());
/// [start, start+step, ...) below stop: ceil((stop - start) / step) elements, as numpy.
/// ValueError for a zero or NaN step or NaN bounds.
Array arange(double start, double stop, double step = 1, DType dtype = f32, SL loc = SL::current());
/// n x n identity matrix. ValueError for n < 0.
Array eye(int64_t n, DType dtype = f32, SL loc = SL::current());

// ---- elementwise functions (broadcasting where binary) ------------------------------------------
Array add(const Operand& a, const Operand& b);
Array subtract(const Operand& a, const Operand& b);
Array multiply(const Operand& a, const Operand& b);
Array divide(const Operand& a, const Operand& b);   ///< true division: ints promote to f32
Array power(const Operand& a, const Operand& b);
Array maximum(const Operand& a, const Operand& b);
Array minimum(const Operand& a, const Operand& b);
Array arctan2(const Operand& a, const Operand& b);
/// jnp.remainder (numpy's mod; also `a % b`): x1 - floor(x1 / x2) * x2, the sign of the divisor,
/// computed from lax::rem. Broadcasting and promotion as add; bool operands count as i32; an
/// integer divisor of 0 gives 0 (JAX divides by 1 there); floats give NaN for x2 = 0. TypeError
/// (unpromotable dtypes) or ShapeError (shapes numpy cannot broadcast) naming both operands.
/// Source: jax/_src/numpy/ufuncs.py remainder.
Array remainder(const Operand& a, const Operand& b);
/// jnp.mod: remainder(a, b).
Array mod(const Operand& a, const Operand& b);
/// jnp.fmod: C's fmod, the sign of the dividend (lax::rem after promotion and broadcasting as
/// remainder; an integer divisor of 0 gives 0). Errors as remainder.
/// Source: jax/_src/numpy/ufuncs.py fmod.
Array fmod(const Operand& a, const Operand& b);
Array negative(const Array& x, SL loc = SL::current());
Array exp(const Array& x, SL loc = SL::current());
Array log(const Array& x, SL loc = SL::current());
Array log1p(const Array& x, SL loc = SL::current());
Array expm1(const Array& x, SL loc = SL::current());
Array sin(const Array& x, SL loc = SL::current());
Array cos(const Array& x, SL loc = SL::current());
Array tan(const Array& x, SL loc = SL::current());
Array tanh(const Array& x, SL loc = SL::current());
Array sqrt(const Array& x, SL loc = SL::current());
Array rsqrt(const Array& x, SL loc = SL::current());
Array square(const Array& x, SL loc = SL::current());
Array abs(const Array& x, SL loc = SL::current());
Array sign(const Array& x, SL loc = SL::current());
Array floor(const Array& x, SL loc = SL::current());
Array ceil(const Array& x, SL loc = SL::current());
Array round(const Array& x, SL loc = SL::current());
Array erf(const Array& x, SL loc = SL::current());
Array sigmoid(const Array& x, SL loc = SL::current());
/// jax.nn.relu: max(x, 0) elementwise (ints and floats; dtype kept). NaN gives NaN, -inf 0,
/// +inf +inf. Its derivative is 1 where x > 0 and 0 elsewhere (0 at x = 0 and at NaN), as
/// jax.nn.relu's custom JVP `select(x > 0, g, 0)`. ValueError for an empty Array.
/// Source: jax/_src/nn/functions.py relu.
Array relu(const Array& x, SL loc = SL::current());
/// GELU; tanh approximation when approximate (jax.nn.gelu's default), else the erf form.
Array gelu(const Array& x, bool approximate = true, SL loc = SL::current());
/// cond ? x : y with broadcasting and promotion of x, y (a non-bool cond counts as cond != 0,
/// so NaN is true). Only the selected value reaches the output: NaN or inf in the other operand
/// does not, eagerly or compiled, and the cotangent of the unselected operand is exactly 0 (not
/// 0 times the incoming cotangent). Source: jax/_src/numpy/lax_numpy.py where (lax.select_n).
Array where(const Array& cond, const Operand& x, const Operand& y);
/// jnp.clip: minimum(maximum(x, lo), hi). NaN in x, lo or hi gives NaN (maximum and minimum
/// propagate NaN, as XLA's max/min). Source: jax/_src/numpy/lax_numpy.py clip.
Array clip(const Array& x, const Operand& lo, const Operand& hi);
Array astype(const Array& x, DType dtype, SL loc = SL::current());
Array stop_gradient(const Array& x, SL loc = SL::current());
/// stop_gradient of every leaf of a pytree (lax::stop_gradient's pytree overload).
template <class T>
  requires(PyTree<T> && !std::is_same_v<T, Array>)
T stop_gradient(const T& tree, SL loc = SL::current()) {
  return lax::stop_gradient(tree, loc);
}

// ---- reductions (axis may be negative; nullopt = all axes) --------------------------------------
using Axes = std::optional<std::vector<int64_t>>;
Array sum(const Array& x, SL loc = SL::current());
Array sum(const Array& x, int64_t axis, bool keepdims = false, SL loc = SL::current());
Array sum(const Array& x, const std::vector<int64_t>& axes, bool keepdims = false, SL loc = SL::current());
Array mean(const Array& x, SL loc = SL::current());
Array mean(const Array& x, int64_t axis, bool keepdims = false, SL loc = SL::current());
/// Population variance (ddof = 0).
Array var(const Array& x, SL loc = SL::current());
Array var(const Array& x, int64_t axis, bool keepdims = false, SL loc = SL::current());
Array max(const Array& x, SL loc = SL::current());
Array max(const Array& x, int64_t axis, bool keepdims = false, SL loc = SL::current());
Array min(const Array& x, SL loc = SL::current());
Array min(const Array& x, int64_t axis, bool keepdims = false, SL loc = SL::current());
Array prod(const Array& x, SL loc = SL::current());
Array prod(const Array& x, int64_t axis, bool keepdims = false, SL loc = SL::current());
Array argmax(const Array& x, int64_t axis, SL loc = SL::current());
Array argmin(const Array& x, int64_t axis, SL loc = SL::current());
Array cumsum(const Array& x, int64_t axis, SL loc = SL::current());
/// jnp.cumprod along `axis` (negative counts from the end): lax::cumprod, bool promoted to i32
/// as cumsum does. ShapeError naming the axis and the shape when it is out of range.
Array cumprod(const Array& x, int64_t axis, SL loc = SL::current());
/// jnp.argsort: the i32 indices that sort `x` along `axis` (negative counts from the end), with
/// lax::sort's order (NaNs last, -0.0 == +0.0). `descending`: largest first; with `stable`, equal
/// elements keep their input order (JAX: the sort of the reversed array, its indices reversed
/// back; jax/_src/numpy/sorting.py argsort). Errors: `axis` out of range (ShapeError naming it and
/// the shape, as the other numpy-level functions).
Array argsort(const Array& x, int64_t axis = -1, bool stable = true, bool descending = false,
              SL loc = SL::current());
Array logsumexp(const Array& x, int64_t axis = -1, bool keepdims = false, SL loc = SL::current());
Array softmax(const Array& x, int64_t axis = -1, SL loc = SL::current());
Array log_softmax(const Array& x, int64_t axis = -1, SL loc = SL::current());
/// labels (integer, any shape) -> labels.shape + [num_classes] of dtype (1 where equal).
Array one_hot(const Array& labels, int64_t num_classes, DType dtype = f32, SL loc = SL::current());

// ---- linear algebra -----------------------------------------------------------------------------
/// numpy matmul: 1-D and 2-D operands and batched (leading dims broadcast) operands.
Array matmul(const Array& a, const Array& b, SL loc = SL::current());
/// jnp.matmul(a, b, precision=..., preferred_element_type=...): `options` as lax::DotOptions
/// (the result has dtype options.preferred_element_type when given, not weak; the precision
/// changes nothing on the CPU). Errors as matmul, plus dot_general's for the options.
Array matmul(const Array& a, const Array& b, const lax::DotOptions& options, SL loc = SL::current());
Array dot(const Array& a, const Array& b, SL loc = SL::current());
/// jnp.dot(a, b, precision=..., preferred_element_type=...), `options` as matmul's. A rank-0
/// operand multiplies (computed in the preferred_element_type's accumulation dtype).
Array dot(const Array& a, const Array& b, const lax::DotOptions& options, SL loc = SL::current());

// ---- shape manipulation -------------------------------------------------------------------------
/// Reshape; one dim may be -1 (inferred).
Array reshape(const Array& x, const Shape& shape, SL loc = SL::current());
/// Reverses dims when axes is empty.
Array transpose(const Array& x, const std::vector<int64_t>& axes = {}, SL loc = SL::current());
Array expand_dims(const Array& x, int64_t axis, SL loc = SL::current());
Array squeeze(const Array& x, const std::vector<int64_t>& axes = {}, SL loc = SL::current());
Array broadcast_to(const Array& x, const Shape& shape, SL loc = SL::current());
Array concatenate(const std::vector<Array>& xs, int64_t axis = 0, SL loc = SL::current());
Array stack(const std::vector<Array>& xs, int64_t axis = 0, SL loc = SL::current());
Array flip(const Array& x, int64_t axis, SL loc = SL::current());
/// jnp.take(x, indices, axis, mode=mode, fill_value=fill_value): the elements of x at integer
/// `indices` (any shape) along `axis`; out shape x.shape[:axis] + indices.shape +
/// x.shape[axis+1:]. `axis` unset (nullopt) takes from x flattened (row-major), as JAX; a negative
/// axis counts from the end. An embedding lookup of rows is `take(table, ids, 0)`.
/// `mode` says what an index outside [0, n) of that axis gives (n its size):
/// - "fill" (the default, JAX's mode=None): a negative index counts from the end once (-1 is
///   n - 1); an index still outside [0, n) gives `fill_value` (nullopt: NaN for floating dtypes,
///   the most negative value for signed integers, the largest for unsigned, True for bool);
///   its gradient is 0.
/// - "clip": the index is clamped into [0, n - 1].
/// - "wrap": the index is taken mod n (Python's mod: -1 is n - 1, n is 0).
/// Eager and compiled code give the same values in every mode (there is no IndexError for an
/// out-of-range index, as in JAX). The gradient is a scatter_add in the same mode.
/// Errors: ValueError for mode "raise" (not supported, as in JAX) or any other mode, naming it;
/// ValueError for an axis outside [-rank, rank), naming it and the rank; TypeError for
/// non-integer indices (naming gather and both avals); IndexError for non-empty indices into an
/// axis of size 0 (as JAX). Source: jax/_src/numpy/lax_numpy.py (indexing.py) take / _take.
Array take(const Array& x, const Array& indices, std::optional<int64_t> axis = std::nullopt,
           const std::string& mode = "fill", std::optional<double> fill_value = std::nullopt,
           SL loc = SL::current());
/// The broadcast shape of two shapes (numpy rules). Throws ShapeError.
Shape broadcast_shapes(const Shape& a, const Shape& b, SL loc = SL::current());

/// Copies x to another memory kind ("device", "pinned_host", "unpinned_host").
Array device_put(const Array& x, MemoryKind kind, SL loc = SL::current());
Array device_put(const Array& x, const std::string& kind, SL loc = SL::current());

}  // namespace minijax
