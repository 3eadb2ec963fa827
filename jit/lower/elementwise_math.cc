// minijax elemental lowering of the transcendental primitives (exp ... erf_inv, pow, atan2, rsqrt)
// onto the vectorized KIR functions of jit/lower/transcendentals.h; bf16 goes through f32.
#include "core/errors.h"
#include "jit/lower/elementwise_util.h"
#include "jit/lower/transcendentals.h"

namespace minijax::lower {

using kir::Value;

namespace {

using Fn1 = Value (*)(kir::Builder&, Value);
using Fn2 = Value (*)(kir::Builder&, Value, Value);

void need_float(const Eqn& e, DType d) {
  if (!is_floating(d))
    throw TypeError("lowering " + e.primitive->name + ": operand dtype " + dtype_name(d) +
                    " is not a floating dtype");
}

// f(x) elementwise: the f64 emitter for f64 arrays, the f32 one for f32 and bf16 (computed in f32,
// rounded to bf16 by the emitter afterwards, as eager rounds each result).
ElementalRule float_unary(Fn1 f32, Fn1 f64) {
  return [f32, f64](FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
    EVal x = fe.value1(e.inputs[0], at);
    need_float(e, x.dtype);
    Value r = (x.dtype == DType::f64 ? f64 : f32)(fe.b, x.v);
    return std::vector<EVal>{EVal{r, x.dtype, x.lanes}};
  };
}

ElementalRule float_binary(Fn2 f32, Fn2 f64) {
  return [f32, f64](FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
    auto x = operands_at(fe, e, at);
    need_float(e, x[0].dtype);
    fe.match_lanes(x[0], x[1]);
    Value r = (x[0].dtype == DType::f64 ? f64 : f32)(fe.b, x[0].v, x[1].v);
    return std::vector<EVal>{EVal{r, x[0].dtype, x[0].lanes}};
  };
}

Value logistic(kir::Builder& b, Value x) { return math::logistic(b, x); }

// rsqrt exactly as eager computes it: 1 / sqrt(x), both correctly rounded.
Value rsqrt(kir::Builder& b, Value x) {
  kir::Type t = b.type(x);
  Value one = b.splat(b.const_float(t.scalar(), 1.0), t.lanes);
  return b.fdiv(one, b.intrinsic("sqrt", t, {x}));
}

const RegisterElemental r_exp("exp", float_unary(math::exp_f32, math::exp_f64));
const RegisterElemental r_log("log", float_unary(math::log_f32, math::log_f64));
const RegisterElemental r_log1p("log1p", float_unary(math::log1p_f32, math::log1p_f64));
const RegisterElemental r_expm1("expm1", float_unary(math::expm1_f32, math::expm1_f64));
const RegisterElemental r_tanh("tanh", float_unary(math::tanh_f32, math::tanh_f64));
const RegisterElemental r_logistic("logistic", float_unary(logistic, logistic));
const RegisterElemental r_sin("sin", float_unary(math::sin_f32, math::sin_f64));
const RegisterElemental r_cos("cos", float_unary(math::cos_f32, math::cos_f64));
const RegisterElemental r_tan("tan", float_unary(math::tan_f32, math::tan_f64));
const RegisterElemental r_erf("erf", float_unary(math::erf_f32, math::erf_f64));
const RegisterElemental r_erf_inv("erf_inv", float_unary(math::erf_inv_f32, math::erf_inv_f64));
const RegisterElemental r_rsqrt("rsqrt", float_unary(rsqrt, rsqrt));
const RegisterElemental r_atan2("atan2", float_binary(math::atan2_f32, math::atan2_f64));

}  // namespace

}  // namespace minijax::lower
