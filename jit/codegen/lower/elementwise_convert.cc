// minijax elemental lowering of convert_element_type, integer_pow, pow, sign, round, shift_left and
// shift_right_logical, each with eager's exact results (core/primitives/elementwise_*.cc).
#include <cmath>
#include <limits>

#include "core/errors.h"
#include "core/views/array_ops.h"
#include "jit/codegen/lower/elementwise_util.h"
#include "jit/codegen/lower/transcendentals.h"

namespace minijax::lower {

using kir::Op;
using kir::Pred;
using kir::Type;
using kir::Value;

namespace {

bool is_int_dtype(DType d) { return d == DType::i32 || d == DType::u32; }

// ---- convert_element_type ---------------------------------------------------------------------

// float -> i32/u32 as eager's convert_value: NaN -> 0, v <= T(min) -> min, v >= T(max) -> max,
// else truncation toward zero (T: the source's compute type, f32 for bf16).
Value float_to_int(FusionEmitter& fe, EVal x, DType to) {
  kir::Builder& k = fe.b;
  const bool f64 = x.dtype == DType::f64;
  const bool uns = to == DType::u32;
  double lo, hi;
  if (f64) {
    lo = uns ? 0.0 : double(std::numeric_limits<int32_t>::min());
    hi = uns ? double(std::numeric_limits<uint32_t>::max()) : double(std::numeric_limits<int32_t>::max());
  } else {
    lo = uns ? 0.0 : double(float(std::numeric_limits<int32_t>::min()));
    hi = uns ? double(float(std::numeric_limits<uint32_t>::max())) : double(float(std::numeric_limits<int32_t>::max()));
  }
  math::VMath m(k, k.type(x.v));
  const int L = x.lanes;
  Value below = m.le(x.v, m.c(lo)), above = m.ge(x.v, m.c(hi));
  Value inside = m.mand(m.gt(x.v, m.c(lo)), m.lt(x.v, m.c(hi)));
  Value safe = m.sel(inside, x.v, m.c(0.0));
  Value conv = k.cast(uns ? Op::FPToUI : Op::FPToSI, kir::kI32.with_lanes(L), safe);
  int32_t vmin = uns ? 0 : std::numeric_limits<int32_t>::min();
  int32_t vmax = uns ? int32_t(std::numeric_limits<uint32_t>::max()) : std::numeric_limits<int32_t>::max();
  Value r = k.select(above, splat_i32(fe, vmax, L), conv);
  r = k.select(below, splat_i32(fe, vmin, L), r);
  return k.select(m.isnan(x.v), splat_i32(fe, 0, L), r);  // NaN -> 0
}

EVal convert(FusionEmitter& fe, EVal x, DType to) {
  kir::Builder& k = fe.b;
  const DType from = x.dtype;
  const int L = x.lanes;
  if (from == to) return x;
  Type ct = FusionEmitter::compute_type(to, L);
  if (is_floating(from)) {
    Type ft = k.type(x.v);
    if (to == DType::bool_) return {k.fcmp(Pred::fune, x.v, k.splat(k.const_float(ft.scalar(), 0.0), L)), to, L};
    if (is_int_dtype(to)) return {float_to_int(fe, x, to), to, L};
    if (ct == ft) return {x.v, to, L};  // bf16 <-> f32: the value (rounded to bf16 on output)
    return {k.cast(ct.s == kir::Scalar::f64 ? Op::FPExt : Op::FPTrunc, ct, x.v), to, L};
  }
  if (from == DType::bool_) {
    if (is_floating(to)) return {k.cast(Op::UIToFP, ct, x.v), to, L};
    return {k.cast(Op::ZExt, ct, x.v), to, L};
  }
  if (!is_int_dtype(from))
    throw TypeError(std::string("lowering convert_element_type: unsupported source dtype ") + dtype_name(from));
  if (to == DType::bool_) return {k.icmp(Pred::ne, x.v, splat_i32(fe, 0, L)), to, L};
  if (is_floating(to)) return {k.cast(from == DType::u32 ? Op::UIToFP : Op::SIToFP, ct, x.v), to, L};
  if (is_int_dtype(to)) return {x.v, to, L};  // i32 <-> u32: the same bits
  throw TypeError(std::string("lowering convert_element_type: unsupported target dtype ") + dtype_name(to));
}

std::vector<EVal> convert_rule(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  return {convert(fe, fe.value1(e.inputs[0], at), convert_element_type_params(e).new_dtype)};
}

// ---- powers -------------------------------------------------------------------------------------

EVal mul_same(FusionEmitter& fe, EVal a, EVal c) {
  fe.match_lanes(a, c);
  return {is_floating(a.dtype) ? fe.b.fmul(a.v, c.v) : fe.b.mul(a.v, c.v), a.dtype, a.lanes};
}

// integer_pow[y]: eager's integer_power, the same multiplications in the same order.
std::vector<EVal> integer_pow_rule(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  EVal x = fe.value1(e.inputs[0], at);
  const int64_t y = integer_pow_params(e).y;
  EVal acc = fe.constant(x.dtype, 1.0, x.lanes), base = x;
  bool acc_is_one = true;
  uint64_t n = y < 0 ? uint64_t(-(y + 1)) + 1 : uint64_t(y);
  while (n) {
    if (n & 1) {
      acc = acc_is_one ? base : mul_same(fe, acc, base);  // 1 * base == base exactly
      acc_is_one = false;
    }
    n >>= 1;
    if (n) base = mul_same(fe, base, base);
  }
  if (is_floating(x.dtype) && y < 0) {
    EVal one = fe.constant(x.dtype, 1.0, acc.lanes);
    acc = {fe.b.fdiv(one.v, acc.v), acc.dtype, acc.lanes};
  }
  return {acc};
}

// Integer pow(a, b) as eager's int_pow: b < 0 (signed): 1 for a == 1, ±1 for a == -1, else 0;
// otherwise repeated squaring over the 32 bits of b (wrapping products).
EVal int_pow(FusionEmitter& fe, EVal a, EVal b) {
  fe.match_lanes(a, b);
  kir::Builder& k = fe.b;
  const int L = a.lanes;
  Value zero = splat_i32(fe, 0, L), one = splat_i32(fe, 1, L);
  Value acc = one, base = a.v, ex = b.v;
  for (int i = 0; i < 32; ++i) {
    Value bit = k.icmp(Pred::ne, k.binop(Op::And, ex, one), zero);
    acc = k.select(bit, k.mul(acc, base), acc);
    ex = k.binop(Op::LShr, ex, one);
    base = k.mul(base, base);
  }
  if (a.dtype == DType::i32) {
    Value neg = k.icmp(Pred::slt, b.v, zero);
    Value odd = k.icmp(Pred::ne, k.binop(Op::And, b.v, one), zero);
    Value minus_one = splat_i32(fe, -1, L);
    Value r_neg = k.select(k.icmp(Pred::eq, a.v, one), one,
                           k.select(k.icmp(Pred::eq, a.v, minus_one), k.select(odd, minus_one, one), zero));
    acc = k.select(neg, r_neg, acc);
  }
  return {acc, a.dtype, L};
}

std::vector<EVal> pow_rule(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  auto x = operands_at(fe, e, at);
  fe.match_lanes(x[0], x[1]);
  if (is_floating(x[0].dtype))
    return {EVal{math::call_outlined(fe.b, "pow", {x[0].v, x[1].v}), x[0].dtype, x[0].lanes}};
  return {int_pow(fe, x[0], x[1])};
}

// ---- sign, round ------------------------------------------------------------------------------------

// sign: floats keep ±0 and NaN; signed ints -1/0/1; u32 0/1.
EVal sign(FusionEmitter& fe, EVal x) {
  kir::Builder& k = fe.b;
  const int L = x.lanes;
  if (is_floating(x.dtype)) {
    math::VMath m(k, k.type(x.v));
    Value r = m.sel(m.lt(x.v, m.c(0.0)), m.c(-1.0), x.v);
    return {m.sel(m.gt(x.v, m.c(0.0)), m.c(1.0), r), x.dtype, L};
  }
  Value zero = splat_i32(fe, 0, L), one = splat_i32(fe, 1, L);
  if (x.dtype == DType::u32) return {k.select(k.icmp(Pred::ne, x.v, zero), one, zero), x.dtype, L};
  Value r = k.select(k.icmp(Pred::slt, x.v, zero), splat_i32(fe, -1, L), zero);
  return {k.select(k.icmp(Pred::sgt, x.v, zero), one, r), x.dtype, L};
}

// round[rounding_method]: 0 half away from zero (std::round), 1 half to even (std::rint), without
// relying on SSE4.1: |x| + 2^p - 2^p rounds to nearest even for |x| < 2^p (p = mantissa bits),
// a tie rounded down is moved up for method 0; the sign is restored (std::round(-0.4) = -0).
EVal round(FusionEmitter& fe, EVal x, int64_t method) {
  math::VMath m(fe.b, fe.b.type(x.v));
  Value a = m.abs(x.v);
  Value two_p = m.c(std::ldexp(1.0, m.mant_bits()));
  Value t = m.sub(m.add(a, two_p), two_p);
  if (method == 0) t = m.sel(m.eq(m.sub(t, a), m.c(-0.5)), m.add(t, m.c(1.0)), t);
  Value r = m.copysign(t, x.v);
  Value keep = m.mnot(m.lt(a, two_p));  // |x| >= 2^p (already integral), inf, NaN
  return {m.sel(keep, x.v, r), x.dtype, x.lanes};
}

// ---- shifts -------------------------------------------------------------------------------------

// x << y / x >>> y with eager's result 0 for shift counts >= 32 (y read as unsigned).
EVal shift(FusionEmitter& fe, EVal x, EVal y, Op op) {
  fe.match_lanes(x, y);
  kir::Builder& k = fe.b;
  const int L = x.lanes;
  Value zero = splat_i32(fe, 0, L);
  Value wide = k.icmp(Pred::uge, y.v, splat_i32(fe, 32, L));
  Value r = k.binop(op, x.v, k.select(wide, zero, y.v));
  return {k.select(wide, zero, r), x.dtype, L};
}

ElementalRule shift_rule(Op op) {
  return [op](FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
    auto x = operands_at(fe, e, at);
    return std::vector<EVal>{shift(fe, x[0], x[1], op)};
  };
}

const RegisterElemental r_convert("convert_element_type", convert_rule);
const RegisterElemental r_integer_pow("integer_pow", integer_pow_rule);
const RegisterElemental r_pow("pow", pow_rule);
const RegisterElemental r_sign("sign", [](FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  return std::vector<EVal>{sign(fe, fe.value1(e.inputs[0], at))};
});
const RegisterElemental r_round("round", [](FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  return std::vector<EVal>{round(fe, fe.value1(e.inputs[0], at), round_params(e).rounding_method)};
});
const RegisterElemental r_shl("shift_left", shift_rule(Op::Shl));
const RegisterElemental r_shr("shift_right_logical", shift_rule(Op::LShr));

}  // namespace

}  // namespace minijax::lower
