// minijax elemental lowering of the transcendentals (exp ... erf_inv, sinh ... erfc, pow, atan2, igamma,
// igamma_grad_a, rsqrt) onto the vectorized KIR functions of transcendentals.h; bf16 through f32.
#include "core/errors.h"
#include "jit/codegen/lower/elementwise_util.h"
#include "jit/codegen/lower/transcendentals.h"

namespace minijax::lower {

using kir::Value;

namespace {

void need_float(const Eqn& e, DType d) {
  if (!is_floating(d))
    throw TypeError("lowering " + e.primitive->name + ": operand dtype " + dtype_name(d) +
                    " is not a floating dtype");
}

// f(x) elementwise through the module's outlined function of f (math::call_outlined: one
// definition per function and type, called from every use): f64 arrays in f64, f32 and
// bf16 in f32 (bf16 rounded by the emitter afterwards, as eager rounds each result).
ElementalRule float_unary(const char* fn) {
  return [fn](FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
    EVal x = fe.value1(e.inputs[0], at);
    need_float(e, x.dtype);
    Value r = math::call_outlined(fe.b, fn, {x.v});
    return std::vector<EVal>{EVal{r, x.dtype, x.lanes}};
  };
}

ElementalRule float_binary(const char* fn) {
  return [fn](FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
    auto x = operands_at(fe, e, at);
    need_float(e, x[0].dtype);
    fe.match_lanes(x[0], x[1]);
    Value r = math::call_outlined(fe.b, fn, {x[0].v, x[1].v});
    return std::vector<EVal>{EVal{r, x[0].dtype, x[0].lanes}};
  };
}

// rsqrt exactly as eager computes it: 1 / sqrt(x), both correctly rounded (two instructions:
// inline).
Value rsqrt(kir::Builder& b, Value x) {
  kir::Type t = b.type(x);
  Value one = b.splat(b.const_float(t.scalar(), 1.0), t.lanes);
  return b.fdiv(one, b.intrinsic("sqrt", t, {x}));
}

ElementalRule float_unary_inline(Value (*f)(kir::Builder&, Value)) {
  return [f](FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
    EVal x = fe.value1(e.inputs[0], at);
    need_float(e, x.dtype);
    return std::vector<EVal>{EVal{f(fe.b, x.v), x.dtype, x.lanes}};
  };
}

const RegisterElemental r_exp("exp", float_unary("exp"));
const RegisterElemental r_log("log", float_unary("log"));
const RegisterElemental r_log1p("log1p", float_unary("log1p"));
const RegisterElemental r_expm1("expm1", float_unary("expm1"));
const RegisterElemental r_tanh("tanh", float_unary("tanh"));
const RegisterElemental r_logistic("logistic", float_unary("logistic"));
const RegisterElemental r_sin("sin", float_unary("sin"));
const RegisterElemental r_cos("cos", float_unary("cos"));
const RegisterElemental r_tan("tan", float_unary("tan"));
const RegisterElemental r_erf("erf", float_unary("erf"));
const RegisterElemental r_erf_inv("erf_inv", float_unary("erf_inv"));
const RegisterElemental r_rsqrt("rsqrt", float_unary_inline(rsqrt));
const RegisterElemental r_atan2("atan2", float_binary("atan2"));
const RegisterElemental r_sinh("sinh", float_unary("sinh"));
const RegisterElemental r_cosh("cosh", float_unary("cosh"));
const RegisterElemental r_asin("asin", float_unary("asin"));
const RegisterElemental r_acos("acos", float_unary("acos"));
const RegisterElemental r_atan("atan", float_unary("atan"));
const RegisterElemental r_asinh("asinh", float_unary("asinh"));
const RegisterElemental r_acosh("acosh", float_unary("acosh"));
const RegisterElemental r_atanh("atanh", float_unary("atanh"));
const RegisterElemental r_cbrt("cbrt", float_unary("cbrt"));
const RegisterElemental r_erfc("erfc", float_unary("erfc"));
const RegisterElemental r_lgamma("lgamma", float_unary("lgamma"));
const RegisterElemental r_digamma("digamma", float_unary("digamma"));
const RegisterElemental r_polygamma("polygamma", float_binary("polygamma"));
const RegisterElemental r_igamma("igamma", float_binary("igamma"));
const RegisterElemental r_igamma_grad_a("igamma_grad_a", float_binary("igamma_grad_a"));

}  // namespace

}  // namespace minijax::lower
