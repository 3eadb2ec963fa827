// minijax numpy-level elementwise API: Operand scalars, operators, binary functions with JAX's
// promotion and numpy broadcasting, unary math, jax.nn activations, where/clip/astype/broadcast_to.
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <string>

#include "core/defined_arg.h"
#include "core/numpy.h"
#include "core/primitive.h"

namespace minijax {

// ---- Operand: C++ scalars are weakly typed rank-0 arrays ----------------------------------------

Operand::Operand(double v, SL l) : value(lax::scalar(v, f32, true)), loc(l), literal(v) {}
Operand::Operand(float v, SL l) : value(lax::scalar(v, f32, true)), loc(l), literal(double(v)) {}
Operand::Operand(int v, SL l) : value(lax::scalar(v, i32, true)), loc(l), literal(double(v)) {}
Operand::Operand(bool v, SL l) : value(lax::scalar(v ? 1.0 : 0.0, bool_, false)), loc(l), literal(v ? 1.0 : 0.0) {}

namespace {

WeakDType wd(const Array& a) { return {a.dtype(), a.weak_type()}; }

/// A concrete rank-0 array of value v in memory kind mk.
Array const_scalar(double v, DType d, bool weak, MemoryKind mk) {
  Array s = lax::scalar(v, d, weak);
  if (mk == MemoryKind::device) return s;
  Array out = Array::empty(ShapedArray{{}, d, weak, mk});
  std::memcpy(const_cast<void*>(out.raw_data()), s.raw_data(), itemsize(d));
  return out;
}

/// The operand converted to dtype t. A C++ scalar is converted at once from its exact value (as
/// JAX folds Python scalars: `x * 2` stages `mul x 2.0:f32[]`), in memory kind mk (the other
/// operand's, so `host_array * 2.0` stays on the host); arrays get convert_element_type.
Array to_dtype(const Operand& o, WeakDType t, MemoryKind mk, const char* fn) {
  const Array& x = o.value;
  if (o.literal && x.is_concrete()) {
    if (x.dtype() == t.dtype && x.weak_type() == t.weak && x.memory_kind() == mk) return x;
    double v = *o.literal;
    if (is_integer(t.dtype) && is_integer(x.dtype())) {
      double lo = t.dtype == u32 ? 0.0 : double(std::numeric_limits<int32_t>::min());
      double hi = t.dtype == u32 ? double(std::numeric_limits<uint32_t>::max())
                                 : double(std::numeric_limits<int32_t>::max());
      if (v < lo || v > hi)
        throw ValueError(std::string(fn) + ": the C++ integer " + std::to_string(int64_t(v)) +
                             " is out of bounds for " + dtype_name(t.dtype),
                         o.loc);
    }
    return const_scalar(v, t.dtype, t.weak, mk);
  }
  if (x.dtype() == t.dtype && x.weak_type() == t.weak) return x;
  return lax::convert_element_type(x, t.dtype, t.weak, o.loc);
}

/// x broadcast to `shape` by numpy's rules (trailing alignment, size-1 dims stretched). The
/// caller has checked compatibility.
Array broadcast_trailing(const Array& x, const Shape& shape, SL loc) {
  if (x.shape() == shape) return x;
  std::vector<int64_t> dims;
  const int64_t off = int64_t(shape.size()) - x.ndim();
  for (int64_t i = 0; i < x.ndim(); ++i) dims.push_back(off + i);
  return lax::broadcast_in_dim(x, shape, dims, loc);
}

Shape broadcast_shapes_named(const char* fn, const Shape& a, const Shape& b, SL loc) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError(std::string(fn) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                           " cannot be broadcast together (dimension " + std::to_string(i) +
                           " of the result: " + std::to_string(da) + " vs " + std::to_string(db) + ")",
                       loc);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

struct Promoted {
  Array x, y;
};

enum class Kind { any, inexact };

/// JAX's binary-op preamble: promote dtypes (weak types), convert, then broadcast to numpy's
/// broadcast shape. A rank-0 operand is left unbroadcast: lax ops accept it (JAX's scalar rule).
Promoted promote_broadcast(const char* fn, const Operand& a, const Operand& b, Kind kind = Kind::any) {
  WeakDType t = promote_types(wd(a.value), wd(b.value), a.loc);
  if (kind == Kind::inexact && !is_floating(t.dtype)) t = {f32, t.weak};
  // A C++ scalar lives where the other operand does.
  const MemoryKind d = MemoryKind::device;
  const MemoryKind mka = a.literal ? (b.literal ? d : b.value.memory_kind()) : a.value.memory_kind();
  const MemoryKind mkb = b.literal ? (a.literal ? d : a.value.memory_kind()) : b.value.memory_kind();
  Array x = to_dtype(a, t, mka, fn), y = to_dtype(b, t, mkb, fn);
  if (x.shape() == y.shape() || x.ndim() == 0 || y.ndim() == 0) return {x, y};
  Shape s = broadcast_shapes_named(fn, x.shape(), y.shape(), a.loc);
  return {broadcast_trailing(x, s, a.loc), broadcast_trailing(y, s, b.loc)};
}

/// Unary math on floats: integer and bool inputs are first converted to f32 (weak if weak), as
/// JAX's promote_args_inexact.
Array inexact(const Array& x, SL loc) {
  if (is_floating(x.dtype())) return x;
  return lax::convert_element_type(x, f32, x.weak_type(), loc);
}

/// A rank-0 constant of x's dtype (for comparisons and selects inside composite functions).
Array zero_of(const Array& x) { return const_scalar(0.0, x.dtype(), false, x.memory_kind()); }

}  // namespace

// ---- binary functions ---------------------------------------------------------------------------
// On two bool operands add/maximum are logical or and multiply/minimum logical and, as
// jax.numpy's _maybe_bool_binop (lax.add/mul reject bool).

Array add(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast(__func__, a, b);
  if (x.dtype() == bool_) return lax::or_(x, y, a.loc);  // jnp: bool add is logical
  return lax::add(x, y, a.loc);
}
Array subtract(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("subtract", a, b);
  return lax::sub(x, y, a.loc);
}
Array multiply(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("multiply", a, b);
  if (x.dtype() == bool_) return lax::and_(x, y, a.loc);  // jnp: bool multiply is logical
  return lax::mul(x, y, a.loc);
}
Array divide(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("true_divide", a, b, Kind::inexact);
  return lax::div(x, y, a.loc);
}
Array maximum(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("maximum", a, b);
  if (x.dtype() == bool_) return lax::or_(x, y, a.loc);  // jnp: bool maximum is logical
  return lax::max(x, y, a.loc);
}
Array minimum(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("minimum", a, b);
  if (x.dtype() == bool_) return lax::and_(x, y, a.loc);  // jnp: bool minimum is logical
  return lax::min(x, y, a.loc);
}
Array arctan2(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("arctan2", a, b, Kind::inexact);
  return lax::atan2(x, y, a.loc);
}

// x ** y. A C++ int exponent becomes integer_pow[y=n], as jnp.power does for Python ints.
Array power(const Operand& a, const Operand& b) {
  if (b.literal && b.value.dtype() == i32 && a.value.dtype() != bool_)
    return lax::integer_pow(a.value, int64_t(*b.literal), b.loc);
  auto [x, y] = promote_broadcast("power", a, b);
  return lax::pow(x, y, a.loc);
}

// ---- operators ----------------------------------------------------------------------------------

Array operator+(const Operand& a, const Operand& b) { return add(a, b); }
Array operator-(const Operand& a, const Operand& b) { return subtract(a, b); }
Array operator*(const Operand& a, const Operand& b) { return multiply(a, b); }
Array operator/(const Operand& a, const Operand& b) { return divide(a, b); }

namespace {

// promote_args_numeric: promoted and broadcast, bool counted as i32; an integer divisor of 0
// replaced by 1 (JAX's fmod and remainder do so: integer division by zero gives 0).
Promoted numeric_divisor_safe(const char* fn, const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast(fn, a, b);
  if (x.dtype() == bool_) {
    x = lax::convert_element_type(x, i32, x.weak_type(), a.loc);
    y = lax::convert_element_type(y, i32, y.weak_type(), b.loc);
  }
  if (is_integer(y.dtype())) {
    Array one = const_scalar(1.0, y.dtype(), y.weak_type(), y.memory_kind());
    if (y.ndim() > 0) one = lax::broadcast_in_dim(one, y.shape(), {}, b.loc);
    y = lax::select_n(lax::eq(y, zero_of(y), b.loc), {y, one}, b.loc);
  }
  return {x, y};
}

}  // namespace

// numpy's remainder (sign of the divisor), from lax.rem as jnp.remainder computes it.
Array remainder(const Operand& a, const Operand& b) {
  auto [x, y] = numeric_divisor_safe("remainder", a, b);
  Array trunc_mod = lax::rem(x, y, a.loc);
  if (is_unsigned(trunc_mod.dtype())) return trunc_mod;
  Array z = zero_of(trunc_mod);
  Array do_plus = lax::and_(lax::ne(lax::lt(trunc_mod, z), lax::lt(y, z)), lax::ne(trunc_mod, z));
  return lax::select_n(do_plus, {trunc_mod, lax::add(trunc_mod, y)}, a.loc);
}

Array mod(const Operand& a, const Operand& b) { return remainder(a, b); }

Array fmod(const Operand& a, const Operand& b) {
  auto [x, y] = numeric_divisor_safe("fmod", a, b);
  return lax::rem(x, y, a.loc);
}

Array operator%(const Operand& a, const Operand& b) { return remainder(a, b); }

Array operator-(const Array& a) { return negative(a); }

Array operator<(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("less", a, b);
  return lax::lt(x, y, a.loc);
}
Array operator<=(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("less_equal", a, b);
  return lax::le(x, y, a.loc);
}
Array operator>(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("greater", a, b);
  return lax::gt(x, y, a.loc);
}
Array operator>=(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("greater_equal", a, b);
  return lax::ge(x, y, a.loc);
}
Array operator==(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("equal", a, b);
  return lax::eq(x, y, a.loc);
}
Array operator!=(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("not_equal", a, b);
  return lax::ne(x, y, a.loc);
}
Array operator&(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("bitwise_and", a, b);
  return lax::and_(x, y, a.loc);
}
Array operator|(const Operand& a, const Operand& b) {
  auto [x, y] = promote_broadcast("bitwise_or", a, b);
  return lax::or_(x, y, a.loc);
}
// Logical not: bool -> not; other dtypes -> (x == 0).
Array operator!(const Array& a) {
  detail::defined_or_throw(a, "operator!", std::source_location::current());
  if (a.dtype() == bool_) return lax::not_(a);
  return lax::eq(a, zero_of(a));
}

Array& operator+=(Array& a, const Operand& b) { return a = add(Operand(a, b.loc), b); }
Array& operator-=(Array& a, const Operand& b) { return a = subtract(Operand(a, b.loc), b); }
Array& operator*=(Array& a, const Operand& b) { return a = multiply(Operand(a, b.loc), b); }
Array& operator/=(Array& a, const Operand& b) { return a = divide(Operand(a, b.loc), b); }

// ---- unary functions ----------------------------------------------------------------------------

Array negative(const Array& x, SL loc) {
  detail::defined_or_throw(x, "negative", loc);
  return lax::neg(x, loc);
}
Array exp(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return lax::exp(inexact(x, loc), loc);
}
Array log(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return lax::log(inexact(x, loc), loc);
}
Array log1p(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return lax::log1p(inexact(x, loc), loc);
}
Array expm1(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return lax::expm1(inexact(x, loc), loc);
}
Array sin(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return lax::sin(inexact(x, loc), loc);
}
Array cos(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return lax::cos(inexact(x, loc), loc);
}
Array tan(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return lax::tan(inexact(x, loc), loc);
}
Array tanh(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return lax::tanh(inexact(x, loc), loc);
}
Array sqrt(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return lax::sqrt(inexact(x, loc), loc);
}
Array rsqrt(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return lax::rsqrt(inexact(x, loc), loc);
}
Array erf(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return lax::erf(inexact(x, loc), loc);
}
Array sigmoid(const Array& x, SL loc) {
  detail::defined_or_throw(x, "sigmoid", loc);
  return lax::logistic(inexact(x, loc), loc);
}
Array square(const Array& x, SL loc) {
  detail::defined_or_throw(x, "square", loc);
  return lax::integer_pow(x, 2, loc);
}
Array abs(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return lax::abs(x, loc);
}
Array sign(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return lax::sign(x, loc);
}
// floor/ceil/round of integers and bools are the identity (jnp returns them unchanged).
Array floor(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return is_floating(x.dtype()) ? lax::floor(x, loc) : x;
}
Array ceil(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return is_floating(x.dtype()) ? lax::ceil(x, loc) : x;
}
// numpy rounds half to even.
Array round(const Array& x, SL loc) {
  detail::defined_or_throw(x, __func__, loc);
  return is_floating(x.dtype()) ? lax::round(x, 1, loc) : x;
}

// jax.nn.relu is max(x, 0) with the custom JVP select(x > 0, g, 0). Here, without a custom JVP:
//   relu(x) = select_n(x > 0, stop_gradient(select_n(x <= 0, x, 0)), x)
// x > 0 gives x (tangent g); x <= 0 gives +0 and NaN gives x itself (NaN, its payload kept), both
// through stop_gradient (tangent 0, so the derivative is 0 at 0 and at NaN, as JAX's). Integers
// have no NaN and no tangent: select_n(x > 0, 0, x).
Array relu(const Array& x, SL loc) {
  detail::defined_or_throw(x, "relu", loc);
  Array z = zero_of(x);
  Array zeros = x.ndim() == 0 ? z : lax::broadcast_in_dim(z, x.shape(), {}, loc);
  Array positive = lax::gt(x, z, loc);
  if (!is_floating(x.dtype())) return lax::select_n(positive, {zeros, x}, loc);
  Array rest = lax::stop_gradient(lax::select_n(lax::le(x, z, loc), {x, zeros}, loc), loc);
  return lax::select_n(positive, {rest, x}, loc);
}

// jax.nn.gelu: approximate = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); exact =
// x (erf(x / sqrt(2)) + 1) / 2.
Array gelu(const Array& x0, bool approximate, SL loc) {
  Array x = inexact(detail::defined_or_throw(x0, "gelu", loc), loc);
  if (approximate) {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    Array inner = multiply(Operand(k, loc), add(Operand(x, loc), multiply(Operand(0.044715, loc),
                                                                        Operand(lax::integer_pow(x, 3, loc), loc))));
    Array cdf = multiply(Operand(0.5, loc), add(Operand(1.0, loc), Operand(lax::tanh(inner, loc), loc)));
    return multiply(Operand(x, loc), Operand(cdf, loc));
  }
  Array e = lax::erf(divide(Operand(x, loc), Operand(std::numbers::sqrt2, loc)), loc);
  return divide(Operand(multiply(Operand(x, loc), add(Operand(e, loc), Operand(1.0, loc))), loc),
                Operand(2.0, loc));
}

// ---- selection, clipping, dtype and shape ------------------------------------------------------

Array where(const Array& cond, const Operand& x, const Operand& y) {
  SL loc = x.loc;
  Array c = cond.dtype() == bool_ ? cond : lax::convert_element_type(cond, bool_, false, loc);
  auto [a, b] = promote_broadcast("where", x, y);
  Shape s = broadcast_shapes_named("where", c.shape(), a.shape(), loc);
  s = broadcast_shapes_named("where", s, b.shape(), loc);
  a = broadcast_trailing(a, s, loc);
  b = broadcast_trailing(b, s, loc);
  if (c.ndim() != 0) c = broadcast_trailing(c, s, loc);
  return lax::select_n(c, {b, a}, loc);
}

// jnp.clip: maximum with lo, then minimum with hi.
Array clip(const Array& x, const Operand& lo, const Operand& hi) {
  Array r = maximum(Operand(x, lo.loc), lo);
  return minimum(Operand(r, hi.loc), hi);
}

Array astype(const Array& x, DType dtype, SL loc) {
  detail::defined_or_throw(x, "astype", loc);
  if (x.dtype() == dtype && !x.weak_type()) return x;
  return lax::convert_element_type(x, dtype, false, loc);
}

Array stop_gradient(const Array& x, SL loc) { return lax::stop_gradient(x, loc); }

Shape broadcast_shapes(const Shape& a, const Shape& b, SL loc) {
  return broadcast_shapes_named("broadcast_shapes", a, b, loc);
}

Array broadcast_to(const Array& x, const Shape& shape, SL loc) {
  bool ok = x.ndim() <= int64_t(shape.size());
  const int64_t off = int64_t(shape.size()) - x.ndim();
  for (int64_t i = 0; ok && i < x.ndim(); ++i) {
    int64_t d = x.shape()[size_t(i)];
    if (d != 1 && d != shape[size_t(off + i)]) ok = false;
  }
  for (int64_t d : shape)
    if (d < 0) ok = false;
  if (!ok)
    throw ShapeError("broadcast_to: cannot broadcast an array of shape " + shape_str(x.shape()) +
                         " to shape " + shape_str(shape),
                     loc);
  return broadcast_trailing(x, shape, loc);
}

}  // namespace minijax
