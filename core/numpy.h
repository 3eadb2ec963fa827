// minijax numpy-style API: broadcasting and promoting operators and functions over lax.
// Owns the user-level array vocabulary (jax.numpy / jax.nn names).
#pragma once
#include <initializer_list>
#include <optional>
#include <source_location>
#include <string>
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
/// 1-D f32 array of the values. Integer literals become f32 too (`mj::array({2, 0, -1})` is
/// f32[3], where jnp.array gives int32): write `mj::array({2, 0, -1}, {3}, mj::i32)` for integers.
Array array(std::initializer_list<float> values, SL loc = SL::current());
/// 2-D f32 array from nested lists (rows must have equal lengths: ValueError otherwise).
Array array(std::initializer_list<std::initializer_list<float>> rows, SL loc = SL::current());
/// Array of `shape` from row-major values converted to dtype (ValueError if sizes differ).
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
/// out-of-range index, unlike before issue 23). The gradient is a scatter_add in the same mode.
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
