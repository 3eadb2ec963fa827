// minijax elemental lowering of arithmetic elementwise primitives (add ... select_n, clamp) and
// of the sum/max/min/prod reductions, with eager's exact semantics (wrapping ints, NaN rules).
#include "core/errors.h"
#include "jit/codegen/lower/elementwise_util.h"

namespace minijax::lower {

using kir::Op;
using kir::Pred;
using kir::Value;

namespace {

// ---- binary arithmetic ------------------------------------------------------------------------

EVal add(FusionEmitter& fe, EVal a, EVal b) {
  fe.match_lanes(a, b);
  return {is_floating(a.dtype) ? fe.b.fadd(a.v, b.v) : fe.b.add(a.v, b.v), a.dtype, a.lanes};
}
EVal sub(FusionEmitter& fe, EVal a, EVal b) {
  fe.match_lanes(a, b);
  return {is_floating(a.dtype) ? fe.b.fsub(a.v, b.v) : fe.b.sub(a.v, b.v), a.dtype, a.lanes};
}
EVal mul(FusionEmitter& fe, EVal a, EVal b) {
  fe.match_lanes(a, b);
  return {is_floating(a.dtype) ? fe.b.fmul(a.v, b.v) : fe.b.mul(a.v, b.v), a.dtype, a.lanes};
}

// Integer division with XLA's defined results: x / 0 = -1 (all bits set), INT_MIN / -1 = INT_MIN.
EVal div(FusionEmitter& fe, EVal a, EVal b) {
  fe.match_lanes(a, b);
  kir::Builder& k = fe.b;
  if (is_floating(a.dtype)) return {k.fdiv(a.v, b.v), a.dtype, a.lanes};
  const int L = a.lanes;
  Value zero = splat_i32(fe, 0, L), one = splat_i32(fe, 1, L);
  Value b_zero = k.icmp(Pred::eq, b.v, zero);
  Value safe_b = k.select(b_zero, one, b.v);
  Value q;
  if (a.dtype == DType::u32) {
    q = k.binop(Op::UDiv, a.v, safe_b);
  } else {
    Value overflow = k.binop(Op::And, k.icmp(Pred::eq, a.v, splat_i32(fe, INT32_MIN, L)),
                             k.icmp(Pred::eq, b.v, splat_i32(fe, -1, L)));
    safe_b = k.select(overflow, one, safe_b);
    q = k.binop(Op::SDiv, a.v, safe_b);  // INT_MIN / 1 = INT_MIN
  }
  return {k.select(b_zero, splat_i32(fe, -1, L), q), a.dtype, L};
}

// x % 0 = x, INT_MIN % -1 = 0; floats: fmod (LLVM's frem is C's fmod).
EVal rem(FusionEmitter& fe, EVal a, EVal b) {
  fe.match_lanes(a, b);
  kir::Builder& k = fe.b;
  if (is_floating(a.dtype)) return {k.binop(Op::FRem, a.v, b.v), a.dtype, a.lanes};
  const int L = a.lanes;
  Value zero = splat_i32(fe, 0, L), one = splat_i32(fe, 1, L);
  Value b_zero = k.icmp(Pred::eq, b.v, zero);
  Value safe_b = k.select(b_zero, one, b.v);
  Value r;
  if (a.dtype == DType::u32) {
    r = k.binop(Op::URem, a.v, safe_b);
  } else {
    Value overflow = k.binop(Op::And, k.icmp(Pred::eq, a.v, splat_i32(fe, INT32_MIN, L)),
                             k.icmp(Pred::eq, b.v, splat_i32(fe, -1, L)));
    safe_b = k.select(overflow, one, safe_b);  // INT_MIN % 1 = 0
    r = k.binop(Op::SRem, a.v, safe_b);
  }
  return {k.select(b_zero, a.v, r), a.dtype, L};
}

// NaN-propagating max/min (eager: NaN in a wins, then NaN in b, else a > b ? a : b).
EVal max_min(FusionEmitter& fe, EVal a, EVal b, bool is_max) {
  fe.match_lanes(a, b);
  kir::Builder& k = fe.b;
  Value pick_a;
  if (is_floating(a.dtype)) {
    pick_a = k.fcmp(is_max ? Pred::fogt : Pred::folt, a.v, b.v);
    Value a_nan = k.fcmp(Pred::funo, a.v, a.v), b_nan = k.fcmp(Pred::funo, b.v, b.v);
    Value r = k.select(pick_a, a.v, b.v);
    r = k.select(b_nan, b.v, r);
    return {k.select(a_nan, a.v, r), a.dtype, a.lanes};
  }
  bool uns = a.dtype == DType::u32 || a.dtype == DType::bool_;
  pick_a = k.icmp(is_max ? (uns ? Pred::ugt : Pred::sgt) : (uns ? Pred::ult : Pred::slt), a.v, b.v);
  return {k.select(pick_a, a.v, b.v), a.dtype, a.lanes};
}

// The predicates of one comparison primitive: on floats (C++ comparisons: ordered, except !=,
// which is true for NaN), on signed and on unsigned (u32, bool) integers.
struct Comparison {
  Pred on_float, on_signed, on_unsigned;
};

EVal compare(FusionEmitter& fe, EVal a, EVal b, Comparison c) {
  fe.match_lanes(a, b);
  kir::Builder& k = fe.b;
  Value r;
  if (is_floating(a.dtype)) {
    r = k.fcmp(c.on_float, a.v, b.v);
  } else {
    const bool uns = a.dtype == DType::u32 || a.dtype == DType::bool_;
    r = k.icmp(uns ? c.on_unsigned : c.on_signed, a.v, b.v);
  }
  return {r, DType::bool_, a.lanes};
}

EVal bitwise(FusionEmitter& fe, EVal a, EVal b, Op op) {
  fe.match_lanes(a, b);
  return {fe.b.binop(op, a.v, b.v), a.dtype, a.lanes};
}

ElementalRule binary(EVal (*f)(FusionEmitter&, EVal, EVal)) {
  return [f](FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
    auto x = operands_at(fe, e, at);
    return std::vector<EVal>{f(fe, x[0], x[1])};
  };
}

// ---- unary --------------------------------------------------------------------------------------

EVal neg(FusionEmitter& fe, EVal a) {
  if (is_floating(a.dtype)) return {fe.b.fneg(a.v), a.dtype, a.lanes};
  return {fe.b.sub(splat_i32(fe, 0, a.lanes), a.v), a.dtype, a.lanes};
}

EVal abs_(FusionEmitter& fe, EVal a) {
  kir::Builder& k = fe.b;
  if (is_floating(a.dtype)) return {k.intrinsic("fabs", k.type(a.v), {a.v}), a.dtype, a.lanes};
  if (a.dtype == DType::u32) return a;
  // llvm.abs's flag "INT_MIN is poison" is false: INT_MIN stays INT_MIN (it wraps), as in XLA.
  return {k.intrinsic("abs", k.type(a.v), {a.v}, {k.i1(false)}), a.dtype, a.lanes};
}

EVal float_intrinsic(FusionEmitter& fe, EVal a, const char* name) {
  return {fe.b.intrinsic(name, fe.b.type(a.v), {a.v}), a.dtype, a.lanes};
}

ElementalRule unary(std::function<EVal(FusionEmitter&, EVal)> f) {
  return [f](FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
    return std::vector<EVal>{f(fe, fe.value1(e.inputs[0], at))};
  };
}

// select_n(pred, *cases): case pred (bool: false -> 0, true -> 1; i32: clamped as eager does).
std::vector<EVal> select_n(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  auto x = operands_at(fe, e, at);
  EVal which = x[0];
  int L = which.lanes;
  for (auto& c : x) L = std::max(L, c.lanes);
  for (auto& c : x) c = fe.widen(c, L);
  which = x[0];
  kir::Builder& k = fe.b;
  EVal r = x.back();
  for (size_t c = x.size() - 1; c-- > 1;) {  // case c-1 when which == c-1 (0-based cases from x[1])
    Value is_c = which.dtype == DType::bool_
                     ? (c == 1 ? k.icmp(Pred::eq, which.v, k.splat(k.i1(false), L)) : k.splat(k.i1(false), L))
                     : k.icmp(Pred::sle, which.v, splat_i32(fe, int32_t(c - 1), L));
    r = {k.select(is_c, x[c].v, r.v), r.dtype, L};
  }
  return {r};
}

// clamp(lo, x, hi) = min(max(x, lo), hi) with eager's NaN rules.
std::vector<EVal> clamp(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  auto x = operands_at(fe, e, at);
  return {max_min(fe, max_min(fe, x[1], x[0], true), x[2], false)};
}

const RegisterElemental r_add("add", binary(add));
const RegisterElemental r_add_any("add_any", binary(add));
const RegisterElemental r_sub("sub", binary(sub));
const RegisterElemental r_mul("mul", binary(mul));
const RegisterElemental r_div("div", binary(div));
const RegisterElemental r_rem("rem", binary(rem));
const RegisterElemental r_max("max", binary([](FusionEmitter& fe, EVal a, EVal b) { return max_min(fe, a, b, true); }));
const RegisterElemental r_min("min", binary([](FusionEmitter& fe, EVal a, EVal b) { return max_min(fe, a, b, false); }));
const RegisterElemental r_and("and", binary([](FusionEmitter& fe, EVal a, EVal b) { return bitwise(fe, a, b, Op::And); }));
const RegisterElemental r_or("or", binary([](FusionEmitter& fe, EVal a, EVal b) { return bitwise(fe, a, b, Op::Or); }));
const RegisterElemental r_xor("xor", binary([](FusionEmitter& fe, EVal a, EVal b) { return bitwise(fe, a, b, Op::Xor); }));
#define MJ_CMP(name, f, s, u)                                                                           \
  const RegisterElemental r_##name(#name, [](FusionEmitter& fe, const Eqn& e, const ElemIndex& at) { \
    auto x = operands_at(fe, e, at);                                                                  \
    return std::vector<EVal>{compare(fe, x[0], x[1], Comparison{Pred::f, Pred::s, Pred::u})};        \
  });
MJ_CMP(eq, foeq, eq, eq)
MJ_CMP(ne, fune, ne, ne)
MJ_CMP(lt, folt, slt, ult)
MJ_CMP(le, fole, sle, ule)
MJ_CMP(gt, fogt, sgt, ugt)
MJ_CMP(ge, foge, sge, uge)
#undef MJ_CMP
const RegisterElemental r_neg("neg", unary(neg));
const RegisterElemental r_abs("abs", unary(abs_));
const RegisterElemental r_sqrt("sqrt", unary([](FusionEmitter& fe, EVal a) { return float_intrinsic(fe, a, "sqrt"); }));
const RegisterElemental r_floor("floor", unary([](FusionEmitter& fe, EVal a) { return float_intrinsic(fe, a, "floor"); }));
const RegisterElemental r_ceil("ceil", unary([](FusionEmitter& fe, EVal a) { return float_intrinsic(fe, a, "ceil"); }));
const RegisterElemental r_stop("stop_gradient", unary([](FusionEmitter&, EVal a) { return a; }));
const RegisterElemental r_not("not", unary([](FusionEmitter& fe, EVal a) {
  Value ones = a.dtype == DType::bool_ ? fe.b.splat(fe.b.i1(true), a.lanes) : splat_i32(fe, -1, a.lanes);
  return EVal{fe.b.binop(Op::Xor, a.v, ones), a.dtype, a.lanes};
}));
const RegisterElemental r_select("select_n", select_n);
const RegisterElemental r_clamp("clamp", clamp);

}  // namespace

}  // namespace minijax::lower
