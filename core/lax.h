// minijax lax: one C++ function per primitive, with JAX's names and lax-level semantics (no
// promotion; binary ops broadcast only size-1 dims between equal ranks, as JAX's lax). Owns the binding API.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/array.h"
#include "core/params.h"
#include "core/pytree.h"

namespace minijax::lax {

using SL = std::source_location;

// ---- elementwise unary (float unless noted; shape and dtype preserved) --------------------------
Array neg(const Array& x, SL loc = SL::current());
Array sin(const Array& x, SL loc = SL::current());
Array cos(const Array& x, SL loc = SL::current());
Array tan(const Array& x, SL loc = SL::current());
Array exp(const Array& x, SL loc = SL::current());
Array log(const Array& x, SL loc = SL::current());
Array log1p(const Array& x, SL loc = SL::current());
Array expm1(const Array& x, SL loc = SL::current());
Array tanh(const Array& x, SL loc = SL::current());
Array logistic(const Array& x, SL loc = SL::current());
Array sqrt(const Array& x, SL loc = SL::current());
Array rsqrt(const Array& x, SL loc = SL::current());
Array erf(const Array& x, SL loc = SL::current());
Array abs(const Array& x, SL loc = SL::current());    ///< any numeric dtype
Array sign(const Array& x, SL loc = SL::current());   ///< any numeric dtype
Array floor(const Array& x, SL loc = SL::current());
Array ceil(const Array& x, SL loc = SL::current());
/// Rounds half away from zero (rounding_method=0, JAX's default) or to even (1).
Array round(const Array& x, int64_t rounding_method = 0, SL loc = SL::current());
Array not_(const Array& x, SL loc = SL::current());   ///< bool: logical not; ints: bitwise not
/// x**y for a static integer y (may be negative for floats).
Array integer_pow(const Array& x, int64_t y, SL loc = SL::current());
/// Identity whose tangent/cotangent is zero. ValueError for an empty Array.
Array stop_gradient(const Array& x, SL loc = SL::current());
/// jax.lax.stop_gradient of a pytree (std::pair/tuple/vector/map of Arrays, registered structs):
/// every leaf through stop_gradient(Array), the structure kept. ValueError (at `loc`) for an
/// empty leaf. Source: jax/_src/lax/lax.py stop_gradient (a tree_map over the leaves).
template <class T>
  requires(PyTree<T> && !std::is_same_v<T, Array>)
T stop_gradient(const T& tree, SL loc = SL::current()) {
  std::vector<Array> leaves = tree_flatten(tree);
  for (Array& leaf : leaves) leaf = stop_gradient(leaf, loc);
  return tree_unflatten(tree, leaves, loc);
}

// ---- elementwise binary ---------------------------------------------------------------------------
// Equal dtypes. Shapes as JAX's lax (_try_broadcast_shapes): equal; or one operand of rank 0 (the
// scalar rule); or equal ranks whose dims are equal or 1, the size-1 dims broadcast
// (broadcast_in_dim) to the other operand's size first, e.g. rem of [5,8] and [1,8] is [5,8].
// Other shapes (unequal ranks, sizes neither equal nor 1) are a ShapeError naming both shapes;
// unequal dtypes a TypeError naming both. Source: jax/_src/lax/lax.py broadcasting_shape_rule.
Array add(const Array& x, const Array& y, SL loc = SL::current());
/// Addition of tangents/cotangents (JAX's add_any / add_jaxvals); float0 operands allowed. One
/// aval for both operands (no broadcasting).
Array add_any(const Array& x, const Array& y, SL loc = SL::current());
Array sub(const Array& x, const Array& y, SL loc = SL::current());
Array mul(const Array& x, const Array& y, SL loc = SL::current());
Array div(const Array& x, const Array& y, SL loc = SL::current());  ///< ints: truncating
Array rem(const Array& x, const Array& y, SL loc = SL::current());  ///< C fmod semantics
Array pow(const Array& x, const Array& y, SL loc = SL::current());
Array max(const Array& x, const Array& y, SL loc = SL::current());
Array min(const Array& x, const Array& y, SL loc = SL::current());
Array atan2(const Array& x, const Array& y, SL loc = SL::current());
Array eq(const Array& x, const Array& y, SL loc = SL::current());   ///< -> bool
Array ne(const Array& x, const Array& y, SL loc = SL::current());
Array lt(const Array& x, const Array& y, SL loc = SL::current());
Array le(const Array& x, const Array& y, SL loc = SL::current());
Array gt(const Array& x, const Array& y, SL loc = SL::current());
Array ge(const Array& x, const Array& y, SL loc = SL::current());
Array and_(const Array& x, const Array& y, SL loc = SL::current());  ///< bool or ints (bitwise)
Array or_(const Array& x, const Array& y, SL loc = SL::current());

// ---- bits and float inspection (core/primitives/elementwise_special.cc) --------------------------
/// True where x (bf16, f32 or f64) is neither infinite nor NaN; a bool array of x's shape. Its
/// tangent is zero (float0). TypeError for a non-float x. Source: jax/_src/lax/lax.py is_finite.
Array is_finite(const Array& x, SL loc = SL::current());
/// The next representable value after x1 in the direction of x2, elementwise (C99's and numpy's
/// nextafter: NaN if either is NaN; x2 if x1 == x2, so nextafter(0, -0) = -0; ±0 steps to the
/// smallest subnormal with x2's sign; the largest finite value steps to ±inf). Float operands of
/// one dtype (TypeError naming both dtypes otherwise), shapes as the binary functions above. Not
/// differentiable (JAX defines no JVP): a nonzero float tangent reaching it throws
/// NotDifferentiableError naming nextafter. Source: jax/_src/lax/lax.py nextafter.
Array nextafter(const Array& x1, const Array& x2, SL loc = SL::current());
/// The number of set bits of each element's two's complement encoding (i32 or u32; the result
/// has x's dtype: i32 -1 gives 32). TypeError for a float or bool x. Its tangent is zero (float0).
/// Source: jax/_src/lax/lax.py population_count.
Array population_count(const Array& x, SL loc = SL::current());
/// The number of leading zero bits of each element's 32-bit encoding (i32 or u32, result of x's
/// dtype: clz(0) = 32, a negative i32 gives 0). TypeError for a float or bool x. Source:
/// jax/_src/lax/lax.py clz.
Array clz(const Array& x, SL loc = SL::current());

// ---- more transcendentals (core/primitives/elementwise_special.cc) --------------------------------
/// Hyperbolic sine, ±inf past overflow. JVP cosh(x) t. Source: jax/_src/lax/lax.py sinh.
/// x: bf16, f32 or f64, any shape; the result has x's shape and dtype. TypeError naming the
/// function and the dtype for any other dtype. Eager uses the C library in the element's type
/// (bf16 through f32); compiled code is minijax's own vectorized implementation, within 4 ulp
/// (jit/codegen/lower/transcendentals.h; measured by tests/jit/test_special_accuracy.cc).
Array sinh(const Array& x, SL loc = SL::current());
/// Hyperbolic cosine, +inf past overflow. JVP sinh(x) t. Source: jax/_src/lax/lax.py cosh.
/// x: bf16, f32 or f64, any shape; the result has x's shape and dtype. TypeError naming the
/// function and the dtype for any other dtype. Eager uses the C library in the element's type
/// (bf16 through f32); compiled code is minijax's own vectorized implementation, within 4 ulp
/// (jit/codegen/lower/transcendentals.h; measured by tests/jit/test_special_accuracy.cc).
Array cosh(const Array& x, SL loc = SL::current());
/// Arc sine on [-1, 1] (NaN outside). JVP rsqrt(1 - x^2) t. Source: jax/_src/lax/lax.py asin.
/// x: bf16, f32 or f64, any shape; the result has x's shape and dtype. TypeError naming the
/// function and the dtype for any other dtype. Eager uses the C library in the element's type
/// (bf16 through f32); compiled code is minijax's own vectorized implementation, within 4 ulp
/// (jit/codegen/lower/transcendentals.h; measured by tests/jit/test_special_accuracy.cc).
Array asin(const Array& x, SL loc = SL::current());
/// Arc cosine on [-1, 1] (NaN outside). JVP -rsqrt(1 - x^2) t. Source: jax/_src/lax/lax.py acos.
/// x: bf16, f32 or f64, any shape; the result has x's shape and dtype. TypeError naming the
/// function and the dtype for any other dtype. Eager uses the C library in the element's type
/// (bf16 through f32); compiled code is minijax's own vectorized implementation, within 4 ulp
/// (jit/codegen/lower/transcendentals.h; measured by tests/jit/test_special_accuracy.cc).
Array acos(const Array& x, SL loc = SL::current());
/// Arc tangent. JVP t / (1 + x^2). Source: jax/_src/lax/lax.py atan.
/// x: bf16, f32 or f64, any shape; the result has x's shape and dtype. TypeError naming the
/// function and the dtype for any other dtype. Eager uses the C library in the element's type
/// (bf16 through f32); compiled code is minijax's own vectorized implementation, within 4 ulp
/// (jit/codegen/lower/transcendentals.h; measured by tests/jit/test_special_accuracy.cc).
Array atan(const Array& x, SL loc = SL::current());
/// Inverse hyperbolic sine. JVP rsqrt(x^2 + 1) t. Source: jax/_src/lax/lax.py asinh.
/// x: bf16, f32 or f64, any shape; the result has x's shape and dtype. TypeError naming the
/// function and the dtype for any other dtype. Eager uses the C library in the element's type
/// (bf16 through f32); compiled code is minijax's own vectorized implementation, within 4 ulp
/// (jit/codegen/lower/transcendentals.h; measured by tests/jit/test_special_accuracy.cc).
Array asinh(const Array& x, SL loc = SL::current());
/// Inverse hyperbolic cosine on [1, inf) (NaN below). JVP rsqrt((x - 1)(x + 1)) t. Source:
/// jax/_src/lax/lax.py acosh.
/// x: bf16, f32 or f64, any shape; the result has x's shape and dtype. TypeError naming the
/// function and the dtype for any other dtype. Eager uses the C library in the element's type
/// (bf16 through f32); compiled code is minijax's own vectorized implementation, within 4 ulp
/// (jit/codegen/lower/transcendentals.h; measured by tests/jit/test_special_accuracy.cc).
Array acosh(const Array& x, SL loc = SL::current());
/// Inverse hyperbolic tangent on [-1, 1] (±inf at ±1, NaN beyond). JVP (1 / (1 + x)) (t / (1 - x)).
/// Source: jax/_src/lax/lax.py atanh.
/// x: bf16, f32 or f64, any shape; the result has x's shape and dtype. TypeError naming the
/// function and the dtype for any other dtype. Eager uses the C library in the element's type
/// (bf16 through f32); compiled code is minijax's own vectorized implementation, within 4 ulp
/// (jit/codegen/lower/transcendentals.h; measured by tests/jit/test_special_accuracy.cc).
Array atanh(const Array& x, SL loc = SL::current());
/// Real cube root (negative for negative x). JVP t / 3 * ans^-2. Source: jax/_src/lax/lax.py cbrt.
/// x: bf16, f32 or f64, any shape; the result has x's shape and dtype. TypeError naming the
/// function and the dtype for any other dtype. Eager uses the C library in the element's type
/// (bf16 through f32); compiled code is minijax's own vectorized implementation, within 4 ulp
/// (jit/codegen/lower/transcendentals.h; measured by tests/jit/test_special_accuracy.cc).
Array cbrt(const Array& x, SL loc = SL::current());
/// Complementary error function 1 - erf(x), accurate where it is tiny (subnormal results within
/// the smallest normal number). JVP -2/sqrt(pi) exp(-x^2) t. Source: jax/_src/lax/lax.py erfc.
/// x: bf16, f32 or f64, any shape; the result has x's shape and dtype. TypeError naming the
/// function and the dtype for any other dtype. Eager uses the C library in the element's type
/// (bf16 through f32); compiled code is minijax's own vectorized implementation, within 4 ulp
/// (jit/codegen/lower/transcendentals.h; measured by tests/jit/test_special_accuracy.cc).
Array erfc(const Array& x, SL loc = SL::current());


/// cases[which] elementwise: which is bool (2 cases) or i32 (any number of cases), all cases of
/// one aval, which of the same shape (or rank 0). Only the selected case reaches the output (NaN
/// in another does not, eagerly or compiled); the transpose gives each case exactly 0 where it
/// was not selected. Source: jax/_src/lax/lax.py select_n.
Array select_n(const Array& which, const std::vector<Array>& cases, SL loc = SL::current());
/// min(max(x, lo), hi) elementwise; lo/hi are rank 0 or of x's shape. NaN in x, lo or hi gives
/// NaN (max/min propagate NaN: XLA's clamp is min(max(x, lo), hi) with NaN-propagating max and
/// min).
Array clamp(const Array& lo, const Array& x, const Array& hi, SL loc = SL::current());
/// Converts dtype (float -> int truncates toward zero; -> bool is x != 0).
Array convert_element_type(const Array& x, DType new_dtype, bool weak_type = false,
                           SL loc = SL::current());

// ---- shape ops ----------------------------------------------------------------------------------
/// out[shape] with operand dim i mapped to out dim broadcast_dimensions[i] (strictly increasing;
/// operand dim size 1 or equal to the out dim).
Array broadcast_in_dim(const Array& x, const Shape& shape,
                       const std::vector<int64_t>& broadcast_dimensions, SL loc = SL::current());
/// Row-major reshape to new_sizes (same element count).
Array reshape(const Array& x, const Shape& new_sizes, SL loc = SL::current());
/// Removes the listed size-1 dims.
Array squeeze(const Array& x, const std::vector<int64_t>& dimensions, SL loc = SL::current());
/// Inserts size-1 dims at the listed positions of the output.
Array expand_dims(const Array& x, const std::vector<int64_t>& dimensions, SL loc = SL::current());
/// out dim i = operand dim permutation[i].
Array transpose(const Array& x, const std::vector<int64_t>& permutation, SL loc = SL::current());
/// Reverses the listed dims.
Array rev(const Array& x, const std::vector<int64_t>& dimensions, SL loc = SL::current());

// ---- reductions ---------------------------------------------------------------------------------
/// Sums over `axes` (removed from the shape); pairwise/blockwise accumulation.
Array reduce_sum(const Array& x, const std::vector<int64_t>& axes, SL loc = SL::current());
Array reduce_max(const Array& x, const std::vector<int64_t>& axes, SL loc = SL::current());
Array reduce_min(const Array& x, const std::vector<int64_t>& axes, SL loc = SL::current());
Array reduce_prod(const Array& x, const std::vector<int64_t>& axes, SL loc = SL::current());
/// Logical (bool) or bitwise (i32, u32) AND of the elements over `axes` (removed from the shape;
/// distinct dims in [0, rank), else ShapeError); the identity (true, all bits set) over none.
/// TypeError naming the function and the dtype for a floating operand. The output is bool or
/// integer: its tangent is float0. Source: jax/_src/lax/lax.py reduce_and (reduce_and_p).
Array reduce_and(const Array& x, const std::vector<int64_t>& axes, SL loc = SL::current());
/// Logical (bool) or bitwise (i32, u32) OR of the elements over `axes` (removed from the shape;
/// distinct dims in [0, rank), else ShapeError); the identity (false, 0) over none. TypeError
/// naming the function and the dtype for a floating operand; float0 tangent. Source:
/// jax/_src/lax/lax.py reduce_or (reduce_or_p).
Array reduce_or(const Array& x, const std::vector<int64_t>& axes, SL loc = SL::current());
/// Logical (bool) or bitwise (i32, u32) XOR of the elements over `axes` (removed from the shape;
/// distinct dims in [0, rank), else ShapeError); the identity (false, 0) over none. TypeError
/// naming the function and the dtype for a floating operand; float0 tangent. Source:
/// jax/_src/lax/lax.py reduce_xor (reduce_xor_p).
Array reduce_xor(const Array& x, const std::vector<int64_t>& axes, SL loc = SL::current());
/// Index of the max/min along `axis` (first occurrence; NaN counts as max), dtype index_dtype.
Array argmax(const Array& x, int64_t axis, DType index_dtype = DType::i32, SL loc = SL::current());
Array argmin(const Array& x, int64_t axis, DType index_dtype = DType::i32, SL loc = SL::current());
/// Inclusive prefix sum along axis (from the end if reverse).
Array cumsum(const Array& x, int64_t axis, bool reverse = false, SL loc = SL::current());
/// Inclusive prefix products along `axis` (from the end if reverse); x of any shape with
/// 0 <= axis < rank, dtype i32, u32, bf16, f32 or f64 (floats multiply in double, each output
/// rounded once; integers wrap modulo 2^32). ShapeError for an axis out of range, TypeError for a
/// bool operand. JVP: JAX's _cumulative_jvp_rule (the JVP of associative_scan with mul).
/// Source: jax/_src/lax/control_flow/loops.py cumprod.
Array cumprod(const Array& x, int64_t axis, bool reverse = false, SL loc = SL::current());
/// Running maximum along `axis` (from the end if reverse); NaN propagates to every later output.
/// Dtypes, errors and JVP as cumprod's (combine max: ties split the tangent 0.5/0.5 as max's
/// JVP does). Source: jax/_src/lax/control_flow/loops.py cummax.
Array cummax(const Array& x, int64_t axis, bool reverse = false, SL loc = SL::current());
/// Running minimum along `axis` (from the end if reverse); NaN propagates to every later output.
/// x of any shape, dtype i32, u32, bf16, f32 or f64; ShapeError for an axis out of range,
/// TypeError for a bool operand. JVP: JAX's _cumulative_jvp_rule with min (ties split the tangent
/// 0.5/0.5 as min's JVP does). Source: jax/_src/lax/control_flow/loops.py cummin.
Array cummin(const Array& x, int64_t axis, bool reverse = false, SL loc = SL::current());
/// log(cumsum(exp(x))) along `axis`, stably: each step is JAX's logaddexp, max(a, b) +
/// log1p(exp(-|a - b|)), in double (a + b where a - b is NaN, so -inf inputs give -inf). Floating
/// dtypes only (TypeError naming the dtype otherwise); ShapeError for an axis out of range.
/// Source: jax/_src/lax/control_flow/loops.py cumlogsumexp.
Array cumlogsumexp(const Array& x, int64_t axis, bool reverse = false, SL loc = SL::current());

/// A combine function of associative_scan over several operands: (a, b) -> a (+) b, elementwise
/// over the operands' matching slices, keeping each operand's shape and dtype.
using ScanCombine = std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&)>;
/// JAX's lax.associative_scan over a list of operands (JAX's pytree, flattened) that share their
/// size along `axis` (negative counts from the end): out[k] = elems[0] (+) ... (+) elems[k] along
/// axis (from the end if reverse), for an associative `fn`. Built from strided slices, pads with
/// interior padding, concatenation and fn (O(n) combines, O(log n) depth; Blelloch's scan), so it
/// is differentiable, batchable and compilable as fn is. As in JAX, the interleaving adds zeros,
/// so a -0.0 result may come back as +0.0. ValueError (at `loc`) for no operands, an axis out of
/// range, unequal sizes along it, or an fn that changes a shape, dtype or the operand count.
/// Source: jax/_src/lax/control_flow/loops.py associative_scan, _interleave (JAX v0.7.0).
std::vector<Array> associative_scan(const ScanCombine& fn, const std::vector<Array>& elems,
                                    bool reverse = false, int64_t axis = 0, SL loc = SL::current());
/// associative_scan of one operand with a binary fn (JAX's associative_scan(fn, x, reverse, axis)).
Array associative_scan(const std::function<Array(const Array&, const Array&)>& fn, const Array& elems,
                       bool reverse = false, int64_t axis = 0, SL loc = SL::current());

// ---- sorting ------------------------------------------------------------------------------------
/// JAX's lax.sort: sorts `operands` (one or more arrays of one shape, any dtypes but float0/token)
/// along `dimension` (negative counts from the end), lexicographically by the first `num_keys`,
/// the others permuted alike; returns the sorted operands. The order is JAX's _sort_lt_comparator
/// (jax/_src/lax/lax.py): floats compared after _canonicalize_float_for_sort, so -0.0 == +0.0 and
/// every NaN (either sign) sorts after +inf, equal to the other NaNs; bools false < true. The sort
/// is stable (equal keys keep their input order) whatever `is_stable` says: is_stable=false
/// allows any order of equal keys, and this is one. Equation:
/// `sort[dimension=d is_stable=True num_keys=1] a b ...`. Errors: no operands (TypeError);
/// `num_keys` < 1 or > the number of operands, `dimension` out of range for the rank (ValueError
/// naming the value and the rank); operands of different shapes (ShapeError naming both).
/// Gradient: JAX's _sort_jvp (the tangents gathered with the sort's permutation); differentiable
/// where the keys hold no ties.
std::vector<Array> sort(const std::vector<Array>& operands, int64_t dimension = -1, bool is_stable = true,
                        int64_t num_keys = 1, SL loc = SL::current());
/// lax.sort of one operand: `operand` sorted along `dimension` (as the list form with num_keys 1).
Array sort(const Array& operand, int64_t dimension = -1, bool is_stable = true, SL loc = SL::current());
/// JAX's lax.sort_key_val: `keys` sorted along `dimension` (JAX's order: NaNs last, -0.0 == +0.0)
/// and `values` permuted alike. keys and values: the same shape, any dtypes but float0/token;
/// ShapeError naming both shapes otherwise, ValueError naming a dimension out of range and the
/// rank. Differentiable in both (tangents gathered with the permutation). Source:
/// jax/_src/lax/lax.py sort_key_val.
std::pair<Array, Array> sort_key_val(const Array& keys, const Array& values, int64_t dimension = -1,
                                     bool is_stable = true, SL loc = SL::current());
/// JAX's lax.top_k: the `k` largest entries along the last axis of `operand` (rank >= 1, any
/// dtype but float0/token) and their i32 indices, largest first, ties in index order; result
/// shapes operand.shape[:-1] + [k]. The order is JAX v0.7.0's on the CPU, XLA:CPU's TopK
/// (the TopkDecomposer's stable sort with CreateScalarGtComputation's GtTotalOrder,
/// xla/hlo/builder/lib/comparators.cc, and __xla_cpu_runtime_TopKF32, xla/service/cpu/runtime_topk.cc):
/// floats in the IEEE total order of their bits, +NaN > +inf > ... > +0.0 > -0.0 > ... > -inf >
/// -NaN (so +0.0 ranks above -0.0, a positive NaN first and a negative NaN last), integers by
/// value. Equation: `top_k[k=3] a`. Errors: k < 0 or k > the last axis (ValueError naming k and the
/// shape); a rank-0 operand (TypeError). Gradient: JAX's _top_k_jvp (the tangent gathered at the
/// indices; the indices' tangent is zero).
std::pair<Array, Array> top_k(const Array& operand, int64_t k, SL loc = SL::current());

// ---- contraction --------------------------------------------------------------------------------
/// ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)) as in lax.dot_general.
struct DotDimensionNumbers {
  std::vector<int64_t> lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
};
/// Output dims: batch..., lhs free..., rhs free... . f32 through the GEMM library.
Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims,
                  SL loc = SL::current());

/// JAX's lax.Precision: the speed/accuracy trade-off of f32 contractions on accelerators (TPU:
/// bf16 passes; GPU: tf32). minijax runs on the CPU, where, as on XLA:CPU, every precision
/// computes at full precision: f32 products in f32, f64 in f64, bf16 operands multiplied exactly
/// and summed in f32. The value is kept in the equation's params (printed and parsed as JAX
/// prints it) and changes no result.
enum class Precision : uint8_t { DEFAULT = 0, HIGH = 1, HIGHEST = 2 };
/// "DEFAULT", "HIGH" or "HIGHEST"; ValueError (at `loc`) for a value that is none of them.
const char* precision_name(Precision p, SL loc = SL::current());

/// JAX's PrecisionLike as the dot functions take it: None (the default, printed
/// `precision=None`), one Precision for both operands, an (lhs, rhs) pair, or their string
/// spellings ("highest"/"float32", "high"/"bfloat16_3x"/"tensorfloat32",
/// "default"/"bfloat16"/"fastest"), canonicalized as JAX's canonicalize_precision to None or a
/// pair (printed `precision=(Precision.HIGHEST, Precision.HIGHEST)`). JAX's DotAlgorithm and
/// DotAlgorithmPreset are not supported (their names are a ValueError).
struct DotPrecision {
  std::optional<std::pair<Precision, Precision>> operands;      ///< nullopt: None
  std::optional<std::pair<std::string, std::string>> names;     ///< string spellings, resolved by resolve()
  DotPrecision() = default;
  DotPrecision(Precision p);                                    // NOLINT(google-explicit-constructor)
  DotPrecision(Precision lhs, Precision rhs);
  DotPrecision(const char* s);                                  // NOLINT(google-explicit-constructor)
  DotPrecision(const std::string& s);                           // NOLINT(google-explicit-constructor)
  DotPrecision(const std::string& lhs, const std::string& rhs);
  /// None or the (lhs, rhs) pair. ValueError naming `fn`, the string, the accepted spellings and
  /// the call site `loc` for a string that names no precision.
  std::optional<std::pair<Precision, Precision>> resolve(const char* fn, SL loc = SL::current()) const;
};

/// The keyword arguments of dot_general, dot and matmul (jax.lax.dot_general's precision= and
/// preferred_element_type=).
struct DotOptions {
  /// See DotPrecision and Precision (no effect on the CPU).
  DotPrecision precision = {};
  /// The output dtype (nullopt: the operands' dtype). JAX's meaning: the product is accumulated
  /// in and returned as this dtype, e.g. bf16 operands with f32 give an f32 result summed in f32
  /// (operands converted exactly, as XLA's operand upcasting), i32 operands with f32 an f32
  /// result. Allowed: the operands' dtype; any floating dtype for floating operands (a narrower
  /// one, e.g. f32 -> bf16, rounds the f32 product once); any floating dtype for integer
  /// operands. Anything else is a TypeError naming both dtypes (JAX's
  /// _validate_preferred_element_type: (integral, integral) of the same signedness and width,
  /// (integral, floating), (floating, floating); minijax has one integer width).
  std::optional<DType> preferred_element_type = std::nullopt;
};

/// dot_general with JAX's keyword arguments (`options`): lax.dot_general(lhs, rhs, dims,
/// precision=..., preferred_element_type=...). The result has dtype
/// options.preferred_element_type (else the operands'); every rule (JVP, transpose, vmap, the
/// compiler, sharding, cost) keeps the precision and the output dtype. Throws as the overload
/// above, plus TypeError for a disallowed preferred_element_type and ValueError for an unknown
/// precision string, naming dot_general and the call site.
/// Source: jax/_src/lax/lax.py dot_general, _dot_general_dtype_rule, canonicalize_precision.
Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims,
                  const DotOptions& options, SL loc = SL::current());
namespace detail {
/// TypeError unless `out` is a preferred_element_type allowed for operands of `in` (DotOptions).
void check_preferred_element_type(DType in, DType out);
/// The dtype a dot_general of `in` operands and output dtype `out` computes in: `out` when it is
/// a wider float or `in` is an integer (the operands are converted to it first, XLA's operand
/// upcasting), else `in` (the product is converted to `out` after).
DType dot_accumulation_dtype(DType in, DType out);
}  // namespace detail

// ---- slicing and indexing -----------------------------------------------------------------------
/// Static slice [start, limit) with optional strides (empty = all 1).
Array slice(const Array& x, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
            const std::vector<int64_t>& strides = {}, SL loc = SL::current());
/// Slice of static sizes at traced start indices (rank-0 integer arrays), clamped into range as
/// in XLA.
Array dynamic_slice(const Array& x, const std::vector<Array>& start_indices,
                    const std::vector<int64_t>& slice_sizes, SL loc = SL::current());
/// x with `update` written at the (clamped) start indices.
Array dynamic_update_slice(const Array& x, const Array& update,
                           const std::vector<Array>& start_indices, SL loc = SL::current());
/// Concatenation along `dimension`.
Array concatenate(const std::vector<Array>& xs, int64_t dimension, SL loc = SL::current());
/// Per dim (low, high, interior) padding with a rank-0 padding value; negative low/high crop.
struct PadConfig {
  int64_t low, high, interior;
};
Array pad(const Array& x, const Array& padding_value, const std::vector<PadConfig>& config,
          SL loc = SL::current());
/// JAX's lax.GatherScatterMode: what gather and the scatters do with a window start outside
/// [0, dim - window size] of an indexed operand dim (for the row forms: an index outside [0, n)).
/// - CLIP: the start is clamped into range (gather reads, a scatter combines at the edge).
/// - FILL_OR_DROP: gather gives the fill value for the whole window; a scatter drops it.
/// - PROMISE_IN_BOUNDS: the caller promises every start is in range. Eager code checks the
///   promise and raises IndexError naming the index; compiled code cannot raise: gather clamps
///   and a scatter drops the window, as XLA does (jnp.take's "wrap" mode uses it on indices
///   already reduced mod n).
/// The equation param `mode` prints as JAX prints it, `mode=GatherScatterMode.CLIP`, and parses
/// back. Source: jax/_src/lax/slicing.py GatherScatterMode.
enum class GatherScatterMode : uint8_t { CLIP = 0, FILL_OR_DROP = 1, PROMISE_IN_BOUNDS = 2 };
/// "GatherScatterMode.CLIP", "GatherScatterMode.FILL_OR_DROP" or
/// "GatherScatterMode.PROMISE_IN_BOUNDS" (the param's printed value).
const char* gather_scatter_mode_name(GatherScatterMode mode);
/// The `mode` param of a gather/scatter_add equation: GatherScatterMode's printed name (or the
/// bare CLIP/FILL_OR_DROP/PROMISE_IN_BOUNDS); absent means PROMISE_IN_BOUNDS (equations written
/// before modes existed). ValueError naming the text for anything else.
GatherScatterMode gather_scatter_mode(const Params& params);
/// The `fill_value` param of a gather equation: nullopt for None (the default fill of the
/// operand's dtype, default_fill_value) or absent. ValueError if it is not a number or None.
std::optional<double> gather_fill_value(const Params& params);
/// JAX's default fill of a FILL_OR_DROP gather (jax/_src/lax/slicing.py _gather_fill): NaN for
/// floating dtypes, the most negative value for signed integers (-2^31 for i32), the largest for
/// unsigned ones (2^32 - 1 for u32), 1 (True) for bool.
double default_fill_value(DType dtype);
/// The value a FILL_OR_DROP gather of dtype `dtype` writes for an out-of-range index:
/// default_fill_value(dtype) for nullopt, else `fill_value` as that dtype holds it (floats as
/// is, bf16 rounded by the caller's store; integers truncated toward zero and saturated to the
/// dtype's range, NaN as 0; bool: 1 for nonzero, NaN included).
double gather_fill(DType dtype, std::optional<double> fill_value);

/// Rows of x (dim 0) picked by integer `indices` of any shape: out shape
/// indices.shape + x.shape[1:] (embedding lookup; JAX's gather with offset_dims = the row dims,
/// collapsed_slice_dims = (0,), start_index_map = (0,)). i32 indices are signed, u32 unsigned.
/// Equations: a `reshape` of the indices to indices.shape + [1], then the general gather
/// (core/gather_scatter.h) with offset_dims the trailing x.ndim - 1 output dims,
/// collapsed_slice_dims = start_index_map = (0,), slice_sizes = (1, *x.shape[1:]).
/// This overload is PROMISE_IN_BOUNDS (as JAX's lax.gather's default): eager raises
/// IndexError (naming the index, its position and the row count) for an index outside [0, n),
/// compiled code clamps. Use the overload with a mode for defined out-of-range results.
/// TypeError for non-integer indices, ShapeError for a rank-0 operand.
Array gather(const Array& x, const Array& indices, SL loc = SL::current());
/// gather in `mode` (see GatherScatterMode), eager and compiled alike for CLIP and
/// FILL_OR_DROP. `fill_value` (FILL_OR_DROP only; nullopt: default_fill_value of x's dtype) is
/// converted to x's dtype as a C++ cast would (bool: nonzero is True). Its tangent is 0, its
/// transpose scatter_add in the same mode. Source: jax/_src/lax/slicing.py gather, _gather_fill.
Array gather(const Array& x, const Array& indices, GatherScatterMode mode,
             std::optional<double> fill_value = std::nullopt, SL loc = SL::current());
/// Transpose of gather: `operand` with the rows of `updates` added at `indices` (updates of
/// shape indices.shape + operand.shape[1:]; duplicates accumulate in index order).
/// PROMISE_IN_BOUNDS as the gather overload above (eager IndexError, compiled clamps).
Array scatter_add(const Array& operand, const Array& indices, const Array& updates,
                  SL loc = SL::current());
/// scatter_add in `mode`: CLIP adds at the clamped row, FILL_OR_DROP drops updates whose index
/// is outside [0, n) (the transpose of a FILL_OR_DROP gather). Param `mode` as gather's.
/// Source: jax/_src/lax/slicing.py scatter_add.
Array scatter_add(const Array& operand, const Array& indices, const Array& updates,
                  GatherScatterMode mode, SL loc = SL::current());
/// Integers 0..n-1 along `dimension` of `shape`.
Array iota(DType dtype, const Shape& shape, int64_t dimension = 0, SL loc = SL::current());

// ---- memory and scheduling ----------------------------------------------------------------------
/// Copy to another memory kind (the aval's memory kind changes).
Array device_put(const Array& x, MemoryKind memory_kind, SL loc = SL::current());
/// Identity on a group of values that the compiler must not look through (prevent_cse).
std::vector<Array> optimization_barrier(const std::vector<Array>& xs, SL loc = SL::current());

/// A concrete rank-0 array of value v and dtype d (weak if `weak`).
Array scalar(double v, DType d, bool weak = false);
/// A concrete array of the given aval filled with v.
Array full(const Shape& shape, double v, DType d, bool weak = false);

}  // namespace minijax::lax
