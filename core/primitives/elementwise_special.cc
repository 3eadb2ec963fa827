// minijax elementwise primitives of jax.lax beyond the basic ones: is_finite, nextafter,
// population_count, clz and sinh ... erfc (shape rules, eager implementations, lax:: binders).
#include <bit>
#include <cmath>
#include <cstring>

#include "core/lax.h"
#include "core/primitives/elementwise_family.h"
#include "core/trace.h"

namespace minijax {

using elementwise::Accept;
using elementwise::def_unary;
using elementwise::kTranscendental;

namespace {

// nextafter(x, y) on the encoding of a float type whose bits are U (C99 7.12.11.3, as numpy's
// nextafter): NaN if either is NaN; y if x == y (so nextafter(0, -0) = -0); the smallest
// subnormal with y's sign from ±0; otherwise the magnitude bits step by one toward y.
template <class U>
U nextafter_bits(U bx, U by, bool x_nan, bool y_nan, bool equal, bool x_less_y) {
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  if (x_nan) return bx;
  if (y_nan) return by;
  if (equal) return by;
  if ((bx & ~sign) == 0) return U((by & sign) | 1);
  const bool positive = (bx & sign) == 0;
  return x_less_y == positive ? U(bx + 1) : U(bx - 1);
}

// bf16 has no std::nextafter: its 16 bits step as an f32's 32 do.
bfloat16 nextafter_bf16(bfloat16 x, bfloat16 y) {
  const float fx = float(x), fy = float(y);
  bfloat16 r;
  r.bits = nextafter_bits<uint16_t>(x.bits, y.bits, std::isnan(fx), std::isnan(fy), fx == fy, fx < fy);
  return r;
}

// is_finite: a float operand, a bool result of its shape (JAX's is_finite_p).
void register_is_finite() {
  auto& p = get_or_create_primitive("is_finite");
  elementwise::set_elementwise(p);
  p.shape_rule = [](const std::vector<ShapedArray>& in, const Params&) {
    elementwise::check_arity(in, 1);
    elementwise::check_dtype(in[0], Accept::floating);
    ShapedArray out = in[0];
    out.dtype = DType::bool_;
    out.weak_type = false;
    return std::vector<ShapedArray>{out};
  };
  p.impl = [](const std::vector<Array>& args, const Params&, const std::vector<ShapedArray>& out_avals) {
    Array out = Array::empty(out_avals[0]);
    const Array& x = args[0];
    bool* po = out.mutable_data<bool>();
    dispatch_dtype(x.dtype(), [&]<class T>() {
      if constexpr (elementwise::accepts_type<Accept::floating, T>()) {
        const T* px = x.data<T>();
        for (int64_t i = 0; i < x.size(); ++i) po[i] = std::isfinite(elementwise::load(px[i]));
      } else {
        throw TypeError(std::string("unsupported dtype ") + dtype_name(x.dtype()));
      }
    });
    return std::vector<Array>{out};
  };
}

// nextafter: f32 and f64 by <cmath>, bf16 on its own encoding.
void register_nextafter() {
  auto& p = get_or_create_primitive("nextafter");
  elementwise::set_elementwise(p);
  p.shape_rule = [](const std::vector<ShapedArray>& in, const Params&) {
    elementwise::check_arity(in, 2);
    if (in[0].dtype != in[1].dtype)
      throw TypeError(std::string("nextafter needs operands of one dtype, got ") + dtype_name(in[0].dtype) +
                      " and " + dtype_name(in[1].dtype));
    return std::vector<ShapedArray>{elementwise::binary_out_aval(in, Accept::floating)};
  };
  p.impl = [](const std::vector<Array>& args, const Params&, const std::vector<ShapedArray>& out_avals) {
    Array out = Array::empty(out_avals[0]);
    const Array &x = args[0], &y = args[1];
    const int64_t n = out.size(), sx = x.size() == n ? 1 : 0, sy = y.size() == n ? 1 : 0;
    dispatch_dtype(x.dtype(), [&]<class T>() {
      if constexpr (elementwise::accepts_type<Accept::floating, T>()) {
        const T *px = x.data<T>(), *py = y.data<T>();
        T* po = out.mutable_data<T>();
        for (int64_t i = 0; i < n; ++i) {
          if constexpr (std::is_same_v<T, bfloat16>) po[i] = nextafter_bf16(px[i * sx], py[i * sy]);
          else po[i] = std::nextafter(px[i * sx], py[i * sy]);
        }
      } else {
        throw TypeError(std::string("unsupported dtype ") + dtype_name(x.dtype()));
      }
    });
    return std::vector<Array>{out};
  };
}

Registrar reg_special([] {
  register_is_finite();
  register_nextafter();
  // The bits of the two's complement encoding (i32 -1: 32 set bits, clz 0), as XLA's popcnt/clz.
  def_unary<Accept::integral>("population_count",
                              [](auto v) { return decltype(v)(std::popcount(static_cast<uint32_t>(v))); });
  def_unary<Accept::integral>("clz",
                              [](auto v) { return decltype(v)(std::countl_zero(static_cast<uint32_t>(v))); });
  // The C library in the element's compute type (bf16 in f32, rounded once).
  def_unary<Accept::floating>("sinh", [](auto v) { return std::sinh(v); }, kTranscendental);
  def_unary<Accept::floating>("cosh", [](auto v) { return std::cosh(v); }, kTranscendental);
  def_unary<Accept::floating>("asin", [](auto v) { return std::asin(v); }, kTranscendental);
  def_unary<Accept::floating>("acos", [](auto v) { return std::acos(v); }, kTranscendental);
  def_unary<Accept::floating>("atan", [](auto v) { return std::atan(v); }, kTranscendental);
  def_unary<Accept::floating>("asinh", [](auto v) { return std::asinh(v); }, kTranscendental);
  def_unary<Accept::floating>("acosh", [](auto v) { return std::acosh(v); }, kTranscendental);
  def_unary<Accept::floating>("atanh", [](auto v) { return std::atanh(v); }, kTranscendental);
  def_unary<Accept::floating>("cbrt", [](auto v) { return std::cbrt(v); }, kTranscendental);
  def_unary<Accept::floating>("erfc", [](auto v) { return std::erfc(v); }, kTranscendental);
});

}  // namespace

namespace lax {

#define MJ_LAX_UNARY(fn)                                      \
  Array fn(const Array& x, SL loc) {                          \
    static const Primitive& p = get_or_create_primitive(#fn); \
    return minijax::bind1(p, {x}, {}, loc);                   \
  }

MJ_LAX_UNARY(is_finite)
MJ_LAX_UNARY(population_count)
MJ_LAX_UNARY(clz)
MJ_LAX_UNARY(sinh)
MJ_LAX_UNARY(cosh)
MJ_LAX_UNARY(asin)
MJ_LAX_UNARY(acos)
MJ_LAX_UNARY(atan)
MJ_LAX_UNARY(asinh)
MJ_LAX_UNARY(acosh)
MJ_LAX_UNARY(atanh)
MJ_LAX_UNARY(cbrt)
MJ_LAX_UNARY(erfc)
#undef MJ_LAX_UNARY

Array nextafter(const Array& x1, const Array& x2, SL loc) {
  static const Primitive& p = get_or_create_primitive("nextafter");
  return elementwise::bind_broadcasting_binary(p, x1, x2, loc);
}

}  // namespace lax
}  // namespace minijax
