// minijax binary and n-ary elementwise primitives: add, add_any, sub, mul, div, rem, pow, max,
// min, atan2, comparisons, and/or, select_n and clamp (shape rules, eager impls, lax:: binders).
#include <cmath>
#include <cstring>
#include <limits>

#include "core/lax.h"
#include "core/primitives/elementwise_family.h"
#include "core/trace.h"

namespace minijax {

using elementwise::Accept;
using elementwise::def_binary;
using elementwise::kExpensiveArithmetic;
using elementwise::kTranscendental;

namespace elementwise {

ShapedArray binary_out_aval(const std::vector<ShapedArray>& in, Accept acc, bool bool_out) {
  check_arity(in, 2);
  const ShapedArray &x = in[0], &y = in[1];
  check_dtype(x, acc, "lhs");
  check_dtype(y, acc, "rhs");
  if (x.dtype != y.dtype)
    throw TypeError(std::string("operand dtypes must be equal, got ") + dtype_name(x.dtype) +
                    " and " + dtype_name(y.dtype));
  check_same_memory_kind(in);
  ShapedArray out = x;
  if (x.shape != y.shape) {
    if (y.ndim() == 0) out.shape = x.shape;
    else if (x.ndim() == 0) out.shape = y.shape;
    else
      throw ShapeError("operand shapes must be equal (or one of rank 0), got " + shape_str(x.shape) +
                       " and " + shape_str(y.shape));
  }
  out.weak_type = bool_out ? false : (x.weak_type && y.weak_type);
  if (bool_out) out.dtype = DType::bool_;
  return out;
}

Array bind_broadcasting_binary(const Primitive& p, const Array& x, const Array& y, std::source_location loc) {
  if (!x.defined() || !y.defined() || x.ndim() != y.ndim() || x.ndim() == 0 || x.shape() == y.shape())
    return minijax::bind1(p, {x, y}, {}, loc);
  Shape out = x.shape();
  for (size_t d = 0; d < out.size(); ++d) {
    const int64_t a = x.shape()[d], b = y.shape()[d];
    if (a != b && a != 1 && b != 1) return minijax::bind1(p, {x, y}, {}, loc);  // the shape rule refuses
    out[d] = a == 1 ? b : a;
  }
  std::vector<int64_t> dims(out.size());
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = int64_t(d);
  auto up = [&](const Array& v) { return v.shape() == out ? v : lax::broadcast_in_dim(v, out, dims, loc); };
  return minijax::bind1(p, {up(x), up(y)}, {}, loc);
}

}  // namespace elementwise

namespace {

using elementwise::nan_max;
using elementwise::nan_min;

// Integer division and remainder with XLA's defined results where C's are undefined:
// x / 0 = -1 (all bits set), x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0.
template <class C>
C safe_div(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return a / b;
  } else {
    if (b == 0) return C(-1);
    if constexpr (std::is_signed_v<C>)
      if (a == std::numeric_limits<C>::min() && b == C(-1)) return a;
    return C(a / b);
  }
}
template <class C>
C safe_rem(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::fmod(a, b);
  } else {
    if (b == 0) return a;
    if constexpr (std::is_signed_v<C>)
      if (a == std::numeric_limits<C>::min() && b == C(-1)) return C(0);
    return C(a % b);
  }
}

// Integer power with XLA's results for negative exponents (1 for base 1, ±1 for base -1, else 0).
template <class C>
C int_pow(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::pow(a, b);
  } else {
    if constexpr (std::is_signed_v<C>) {
      if (b < 0) {
        if (a == 1) return C(1);
        if (a == -1) return (b & 1) ? C(-1) : C(1);
        return C(0);
      }
    }
    C acc = 1, base = a;
    auto e = b;
    while (e) {
      if (e & 1) acc = elementwise::wrap_mul(acc, base);
      e = decltype(e)(e >> 1);
      if (e) base = elementwise::wrap_mul(base, base);
    }
    return acc;
  }
}

// Copies element i of `src` (index k of a rank-0 operand when src has one element) into out[i].
inline void copy_elem(char* out, const char* src, size_t isz, int64_t i, int64_t j) {
  std::memcpy(out + size_t(i) * isz, src + size_t(j) * isz, isz);
}

// add_any: addition of tangents/cotangents. Operands of one aval (float0 allowed: the result is
// a float0 array with no elements' bytes).
void register_add_any() {
  auto& p = get_or_create_primitive("add_any");
  elementwise::set_elementwise(p);
  p.shape_rule = [](const std::vector<ShapedArray>& in, const Params&) {
    elementwise::check_arity(in, 2);
    if (in[0].dtype == DType::float0 && in[1].dtype == DType::float0) {
      if (in[0].shape != in[1].shape)
        throw ShapeError("operand shapes must be equal, got " + shape_str(in[0].shape) + " and " +
                         shape_str(in[1].shape));
      elementwise::check_same_memory_kind(in);
      return std::vector<ShapedArray>{in[0]};
    }
    ShapedArray out = elementwise::binary_out_aval(in, Accept::numeric);
    if (in[0].shape != in[1].shape)
      throw ShapeError("operand shapes must be equal, got " + shape_str(in[0].shape) + " and " +
                       shape_str(in[1].shape));
    return std::vector<ShapedArray>{out};
  };
  p.impl = [](const std::vector<Array>& args, const Params&,
              const std::vector<ShapedArray>& out_avals) {
    Array out = Array::empty(out_avals[0]);
    if (out.dtype() != DType::float0)
      elementwise::binary_loop<Accept::numeric, false>(
          args[0], args[1], out, [](auto a, auto b) { return elementwise::wrap_add(a, b); });
    return std::vector<Array>{out};
  };
}

// select_n(which, *cases): cases[which] elementwise. which: bool (at most 2 cases) or i32;
// rank 0 or the cases' shape. Out-of-range i32 indices are clamped (XLA leaves them undefined).
void register_select_n() {
  auto& p = get_or_create_primitive("select_n");
  elementwise::set_elementwise(p);
  p.shape_rule = [](const std::vector<ShapedArray>& in, const Params&) {
    if (in.size() < 2) throw ValueError("select_n needs a predicate and at least one case");
    const ShapedArray& w = in[0];
    if (w.dtype != DType::bool_ && w.dtype != DType::i32)
      throw TypeError(std::string("which must be bool or i32, got ") + dtype_name(w.dtype));
    if (w.dtype == DType::bool_ && in.size() > 3)
      throw TypeError("a bool which selects among at most 2 cases, got " +
                      std::to_string(in.size() - 1));
    ShapedArray out = in[1];
    for (size_t i = 2; i < in.size(); ++i) {
      if (in[i].shape != in[1].shape)
        throw ShapeError("all cases must have the same shape, got " + shape_str(in[1].shape) +
                         " and " + shape_str(in[i].shape));
      if (in[i].dtype != in[1].dtype)
        throw TypeError(std::string("all cases must have the same dtype, got ") +
                        dtype_name(in[1].dtype) + " and " + dtype_name(in[i].dtype));
      out.weak_type = out.weak_type && in[i].weak_type;
    }
    if (w.ndim() != 0 && w.shape != in[1].shape)
      throw ShapeError("which must be rank 0 or of the cases' shape " + shape_str(in[1].shape) +
                       ", got " + shape_str(w.shape));
    elementwise::check_same_memory_kind(in);
    return std::vector<ShapedArray>{out};
  };
  p.impl = [](const std::vector<Array>& args, const Params&,
              const std::vector<ShapedArray>& out_avals) {
    Array out = Array::empty(out_avals[0]);
    const size_t isz = itemsize(out.dtype());
    if (isz == 0) return std::vector<Array>{out};
    const int64_t n = out.size(), ncases = int64_t(args.size()) - 1;
    std::vector<const char*> src;
    for (size_t i = 1; i < args.size(); ++i) src.push_back(static_cast<const char*>(args[i].raw_data()));
    char* po = static_cast<char*>(const_cast<void*>(out.raw_data()));
    const Array& w = args[0];
    const int64_t sw = w.ndim() == 0 ? 0 : 1;
    if (w.dtype() == DType::bool_) {
      const bool* pw = w.data<bool>();
      for (int64_t i = 0; i < n; ++i) copy_elem(po, src[pw[i * sw] && ncases > 1 ? 1 : 0], isz, i, i);
    } else {
      const int32_t* pw = w.data<int32_t>();
      for (int64_t i = 0; i < n; ++i) {
        int64_t k = std::min<int64_t>(std::max<int64_t>(pw[i * sw], 0), ncases - 1);
        copy_elem(po, src[size_t(k)], isz, i, i);
      }
    }
    return std::vector<Array>{out};
  };
}

// clamp(lo, x, hi) = min(max(x, lo), hi); lo and hi rank 0 or of x's shape.
void register_clamp() {
  auto& p = get_or_create_primitive("clamp");
  elementwise::set_elementwise(p);
  p.shape_rule = [](const std::vector<ShapedArray>& in, const Params&) {
    elementwise::check_arity(in, 3);
    const ShapedArray &lo = in[0], &x = in[1], &hi = in[2];
    elementwise::check_dtype(x, Accept::any_value);
    if (lo.dtype != x.dtype || hi.dtype != x.dtype)
      throw TypeError(std::string("lo, x and hi must have equal dtypes, got ") + dtype_name(lo.dtype) +
                      ", " + dtype_name(x.dtype) + " and " + dtype_name(hi.dtype));
    for (const ShapedArray* b : {&lo, &hi})
      if (b->ndim() != 0 && b->shape != x.shape)
        throw ShapeError("clamp bounds must be rank 0 or of the operand's shape " +
                         shape_str(x.shape) + ", got " + shape_str(b->shape));
    elementwise::check_same_memory_kind(in);
    return std::vector<ShapedArray>{x};
  };
  p.impl = [](const std::vector<Array>& args, const Params&,
              const std::vector<ShapedArray>& out_avals) {
    Array out = Array::empty(out_avals[0]);
    const Array &lo = args[0], &x = args[1], &hi = args[2];
    dispatch_dtype(x.dtype(), [&]<class T>() {
      const T *pl = lo.data<T>(), *px = x.data<T>(), *ph = hi.data<T>();
      T* po = out.mutable_data<T>();
      const int64_t n = x.size();
      const int64_t sl = lo.ndim() == 0 ? 0 : 1, sh = hi.ndim() == 0 ? 0 : 1;
      for (int64_t i = 0; i < n; ++i)
        po[i] = elementwise::store<T>(nan_min(nan_max(elementwise::load(px[i]),
                                                      elementwise::load(pl[i * sl])),
                                              elementwise::load(ph[i * sh])));
    });
    return std::vector<Array>{out};
  };
}

Registrar reg_binary([] {
  def_binary<Accept::numeric>("add", [](auto a, auto b) { return elementwise::wrap_add(a, b); });
  def_binary<Accept::numeric>("sub", [](auto a, auto b) { return elementwise::wrap_sub(a, b); });
  def_binary<Accept::numeric>("mul", [](auto a, auto b) { return elementwise::wrap_mul(a, b); });
  def_binary<Accept::numeric>("div", [](auto a, auto b) { return safe_div(a, b); }, kExpensiveArithmetic);
  def_binary<Accept::numeric>("rem", [](auto a, auto b) { return safe_rem(a, b); }, kExpensiveArithmetic);
  def_binary<Accept::numeric>("pow", [](auto a, auto b) { return int_pow(a, b); }, kTranscendental);
  def_binary<Accept::any_value>("max", [](auto a, auto b) { return nan_max(a, b); });
  def_binary<Accept::any_value>("min", [](auto a, auto b) { return nan_min(a, b); });
  def_binary<Accept::floating>("atan2", [](auto a, auto b) { return std::atan2(a, b); }, kTranscendental);
  def_binary<Accept::any_value, true>("eq", [](auto a, auto b) { return a == b; });
  def_binary<Accept::any_value, true>("ne", [](auto a, auto b) { return a != b; });
  def_binary<Accept::any_value, true>("lt", [](auto a, auto b) { return a < b; });
  def_binary<Accept::any_value, true>("le", [](auto a, auto b) { return a <= b; });
  def_binary<Accept::any_value, true>("gt", [](auto a, auto b) { return a > b; });
  def_binary<Accept::any_value, true>("ge", [](auto a, auto b) { return a >= b; });
  def_binary<Accept::integral_or_bool>("and", [](auto a, auto b) { return decltype(a)(a & b); });
  def_binary<Accept::integral_or_bool>("or", [](auto a, auto b) { return decltype(a)(a | b); });
  register_add_any();
  register_select_n();
  register_clamp();
});

}  // namespace

namespace lax {

#define MJ_LAX_BINARY(fn, name)                                            \
  Array fn(const Array& x, const Array& y, SL loc) {                       \
    static const Primitive& p = get_or_create_primitive(name);             \
    return elementwise::bind_broadcasting_binary(p, x, y, loc);            \
  }

// add_any sums tangents of one aval: no broadcasting.
Array add_any(const Array& x, const Array& y, SL loc) {
  static const Primitive& p = get_or_create_primitive("add_any");
  return minijax::bind1(p, {x, y}, {}, loc);
}

MJ_LAX_BINARY(add, "add")
MJ_LAX_BINARY(sub, "sub")
MJ_LAX_BINARY(mul, "mul")
MJ_LAX_BINARY(div, "div")
MJ_LAX_BINARY(rem, "rem")
MJ_LAX_BINARY(pow, "pow")
MJ_LAX_BINARY(max, "max")
MJ_LAX_BINARY(min, "min")
MJ_LAX_BINARY(atan2, "atan2")
MJ_LAX_BINARY(eq, "eq")
MJ_LAX_BINARY(ne, "ne")
MJ_LAX_BINARY(lt, "lt")
MJ_LAX_BINARY(le, "le")
MJ_LAX_BINARY(gt, "gt")
MJ_LAX_BINARY(ge, "ge")
MJ_LAX_BINARY(and_, "and")
MJ_LAX_BINARY(or_, "or")
#undef MJ_LAX_BINARY

Array select_n(const Array& which, const std::vector<Array>& cases, SL loc) {
  static const Primitive& p = get_or_create_primitive("select_n");
  std::vector<Array> args;
  args.reserve(cases.size() + 1);
  args.push_back(which);
  args.insert(args.end(), cases.begin(), cases.end());
  return minijax::bind1(p, args, {}, loc);
}

Array clamp(const Array& lo, const Array& x, const Array& hi, SL loc) {
  static const Primitive& p = get_or_create_primitive("clamp");
  return minijax::bind1(p, {lo, x, hi}, {}, loc);
}

}  // namespace lax
}  // namespace minijax
