// minijax unary elementwise primitives: neg, sin ... erf, abs, sign, floor, ceil, round, not,
// integer_pow, stop_gradient and convert_element_type (shape rules, eager impls, lax:: binders).
#include <cmath>
#include <numbers>

#include "core/lax.h"
#include "core/param_reads.h"
#include "core/primitives/elementwise_family.h"
#include "core/trace.h"

namespace minijax {

using elementwise::Accept;
using elementwise::def_unary;

namespace {

// Numerically stable logistic: never evaluates exp of a large positive argument.
template <class C>
C stable_logistic(C v) {
  if (v >= C(0)) return C(1) / (C(1) + std::exp(-v));
  C e = std::exp(v);
  return e / (C(1) + e);
}

// x**y by repeated squaring (as XLA expands integer_pow); negative y on floats gives 1/x**|y|.
template <class C>
C integer_power(C v, int64_t y) {
  C acc = C(1), base = v;
  uint64_t e = y < 0 ? uint64_t(-(y + 1)) + 1 : uint64_t(y);
  while (e) {
    if (e & 1) acc = elementwise::wrap_mul(acc, base);
    e >>= 1;
    if (e) base = elementwise::wrap_mul(base, base);
  }
  if constexpr (std::is_floating_point_v<C>) {
    if (y < 0) return C(1) / acc;
  }
  return acc;
}

Registrar reg_unary([] {
  def_unary<Accept::numeric>("neg", [](auto v) { return elementwise::wrap_neg(v); });
  def_unary<Accept::floating>("sin", [](auto v) { return std::sin(v); }, elementwise::kTranscendental);
  def_unary<Accept::floating>("cos", [](auto v) { return std::cos(v); }, elementwise::kTranscendental);
  def_unary<Accept::floating>("tan", [](auto v) { return std::tan(v); }, elementwise::kTranscendental);
  def_unary<Accept::floating>("exp", [](auto v) { return std::exp(v); }, elementwise::kTranscendental);
  def_unary<Accept::floating>("log", [](auto v) { return std::log(v); }, elementwise::kTranscendental);
  def_unary<Accept::floating>("log1p", [](auto v) { return std::log1p(v); }, elementwise::kTranscendental);
  def_unary<Accept::floating>("expm1", [](auto v) { return std::expm1(v); }, elementwise::kTranscendental);
  def_unary<Accept::floating>("tanh", [](auto v) { return std::tanh(v); }, elementwise::kTranscendental);
  def_unary<Accept::floating>("logistic", [](auto v) { return stable_logistic(v); }, elementwise::kTranscendental);
  def_unary<Accept::floating>("sqrt", [](auto v) { return std::sqrt(v); }, elementwise::kTranscendental);
  def_unary<Accept::floating>("rsqrt", [](auto v) { return decltype(v)(1) / std::sqrt(v); }, elementwise::kTranscendental);
  def_unary<Accept::floating>("erf", [](auto v) { return std::erf(v); }, elementwise::kTranscendental);
  def_unary<Accept::floating>("floor", [](auto v) { return std::floor(v); });
  def_unary<Accept::floating>("ceil", [](auto v) { return std::ceil(v); });
  def_unary<Accept::numeric>("abs", [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_floating_point_v<C>) return std::abs(v);
    else if constexpr (std::is_signed_v<C>) return v < 0 ? elementwise::wrap_neg(v) : v;
    else return v;
  });
  // sign(±0) = ±0 and sign(NaN) = NaN, as XLA.
  def_unary<Accept::numeric>("sign", [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_unsigned_v<C>) return v > C(0) ? C(1) : C(0);
    else return v > C(0) ? C(1) : v < C(0) ? C(-1) : v;
  });
  def_unary<Accept::integral_or_bool>("not", [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_same_v<C, bool>) return !v;
    else return C(~v);
  });
  // No flops: the value passes through (its bytes are still accessed).
  def_unary<Accept::any_value>("stop_gradient", [](auto v) { return v; },
                               {CostClass::data_movement, FusionClass::normal});

  // round[rounding_method]: 0 = half away from zero (std::round), 1 = half to even (std::rint in
  // the default rounding mode).
  {
    auto& p = get_or_create_primitive("round");
    elementwise::set_elementwise(p);
    p.shape_rule = [](const std::vector<ShapedArray>& in, const Params& params) {
      elementwise::check_arity(in, 1);
      elementwise::check_dtype(in[0], Accept::floating);
      int64_t m = param_int(params, "rounding_method");
      if (m != 0 && m != 1)
        throw ValueError("rounding_method must be 0 (away from zero) or 1 (to nearest even), got " +
                         std::to_string(m));
      return std::vector<ShapedArray>{in[0]};
    };
    p.impl = [](const std::vector<Array>& args, const Params& params,
                const std::vector<ShapedArray>& out_avals) {
      Array out = Array::empty(out_avals[0]);
      if (param_int(params, "rounding_method") == 0)
        elementwise::unary_loop<Accept::floating>(args[0], out, [](auto v) { return std::round(v); });
      else
        elementwise::unary_loop<Accept::floating>(args[0], out, [](auto v) { return std::rint(v); });
      return std::vector<Array>{out};
    };
  }

  // integer_pow[y]: static integer exponent; negative exponents only for floats (as JAX).
  {
    auto& p = get_or_create_primitive("integer_pow");
    elementwise::set_elementwise(p);
    p.shape_rule = [](const std::vector<ShapedArray>& in, const Params& params) {
      elementwise::check_arity(in, 1);
      elementwise::check_dtype(in[0], Accept::numeric);
      int64_t y = param_int(params, "y");
      if (y < 0 && !is_floating(in[0].dtype))
        throw TypeError("integers cannot be raised to negative powers, got y=" + std::to_string(y));
      return std::vector<ShapedArray>{in[0]};
    };
    p.impl = [](const std::vector<Array>& args, const Params& params,
                const std::vector<ShapedArray>& out_avals) {
      Array out = Array::empty(out_avals[0]);
      int64_t y = param_int(params, "y");
      elementwise::unary_loop<Accept::numeric>(args[0], out,
                                               [y](auto v) { return integer_power(v, y); });
      return std::vector<Array>{out};
    };
  }

  // convert_element_type[new_dtype, weak_type].
  {
    auto& p = get_or_create_primitive("convert_element_type");
    // Duplicated into every consumer group by fusion: recomputing a convert is cheaper than a store.
    elementwise::set_elementwise(p, {CostClass::arithmetic, FusionClass::cheap});
    p.shape_rule = [](const std::vector<ShapedArray>& in, const Params& params) {
      elementwise::check_arity(in, 1);
      elementwise::check_dtype(in[0], Accept::any_value);
      DType nd = param_dtype(params, "new_dtype");
      if (!elementwise::accepts(Accept::any_value, nd))
        throw TypeError(std::string("cannot convert to dtype ") + dtype_name(nd));
      ShapedArray out = in[0];
      out.dtype = nd;
      out.weak_type = param_bool(params, "weak_type");
      return std::vector<ShapedArray>{out};
    };
    p.impl = [](const std::vector<Array>& args, const Params&,
                const std::vector<ShapedArray>& out_avals) {
      Array out = Array::empty(out_avals[0]);
      const Array& x = args[0];
      const int64_t n = x.size();
      dispatch_dtype(x.dtype(), [&]<class T>() {
        const T* px = x.data<T>();
        dispatch_dtype(out.dtype(), [&]<class U>() {
          U* po = out.mutable_data<U>();
          for (int64_t i = 0; i < n; ++i) po[i] = elementwise::convert_value<U, T>(px[i]);
        });
      });
      return std::vector<Array>{out};
    };
  }
});

}  // namespace

namespace lax {

#define MJ_LAX_UNARY(fn, name)                                   \
  Array fn(const Array& x, SL loc) {                             \
    static const Primitive& p = get_or_create_primitive(name);   \
    return minijax::bind1(p, {x}, {}, loc);                      \
  }

MJ_LAX_UNARY(neg, "neg")
MJ_LAX_UNARY(sin, "sin")
MJ_LAX_UNARY(cos, "cos")
MJ_LAX_UNARY(tan, "tan")
MJ_LAX_UNARY(exp, "exp")
MJ_LAX_UNARY(log, "log")
MJ_LAX_UNARY(log1p, "log1p")
MJ_LAX_UNARY(expm1, "expm1")
MJ_LAX_UNARY(tanh, "tanh")
MJ_LAX_UNARY(logistic, "logistic")
MJ_LAX_UNARY(sqrt, "sqrt")
MJ_LAX_UNARY(rsqrt, "rsqrt")
MJ_LAX_UNARY(erf, "erf")
MJ_LAX_UNARY(abs, "abs")
MJ_LAX_UNARY(sign, "sign")
MJ_LAX_UNARY(floor, "floor")
MJ_LAX_UNARY(ceil, "ceil")
MJ_LAX_UNARY(not_, "not")
MJ_LAX_UNARY(stop_gradient, "stop_gradient")
#undef MJ_LAX_UNARY

Array round(const Array& x, int64_t rounding_method, SL loc) {
  static const Primitive& p = get_or_create_primitive("round");
  return minijax::bind1(p, {x}, Params{{"rounding_method", rounding_method}}, loc);
}

Array integer_pow(const Array& x, int64_t y, SL loc) {
  static const Primitive& p = get_or_create_primitive("integer_pow");
  return minijax::bind1(p, {x}, Params{{"y", y}}, loc);
}

Array convert_element_type(const Array& x, DType new_dtype, bool weak_type, SL loc) {
  static const Primitive& p = get_or_create_primitive("convert_element_type");
  return minijax::bind1(p, {x}, Params{{"new_dtype", new_dtype}, {"weak_type", weak_type}}, loc);
}

}  // namespace lax
}  // namespace minijax
