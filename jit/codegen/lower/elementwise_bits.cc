// minijax elemental lowering of the bit-level elementwise primitives: is_finite, nextafter (on the
// IEEE encoding), population_count and clz (LLVM's ctpop and ctlz), with eager's exact results.
#include <cmath>
#include <cstdint>

#include "core/errors.h"
#include "jit/codegen/lower/elementwise_util.h"
#include "jit/codegen/lower/transcendentals.h"

namespace minijax::lower {

using kir::Op;
using kir::Pred;
using kir::Value;

namespace {

void need(const Eqn& e, DType d, bool floating) {
  if (floating ? !is_floating(d) : !is_integer(d))
    throw TypeError("lowering " + e.primitive->name + ": operand dtype " + dtype_name(d) + " is not " +
                    (floating ? "a floating dtype" : "an integer dtype"));
}

// |x| < inf (ordered: false for NaN).
std::vector<EVal> is_finite(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  EVal x = fe.value1(e.inputs[0], at);
  need(e, x.dtype, true);
  math::VMath m(fe.b, fe.b.type(x.v));
  return {EVal{m.lt(m.abs(x.v), m.c(INFINITY)), DType::bool_, x.lanes}};
}

// nextafter(x, y) as eager's (C99 7.12.11.3) on the encoding: the magnitude bits step by one unit
// toward y; a bf16 value (an f32 whose low 16 bits are zero) steps by 2^16 in its f32 bits.
std::vector<EVal> nextafter(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  auto ops = operands_at(fe, e, at);
  EVal x = ops[0], y = ops[1];
  need(e, x.dtype, true);
  fe.match_lanes(x, y);
  math::VMath m(fe.b, fe.b.type(x.v));
  const int64_t step = x.dtype == DType::bf16 ? (int64_t(1) << 16) : 1;
  const int64_t sign = m.is_f64() ? INT64_MIN : int64_t(INT32_MIN);
  Value bx = m.bits(x.v), by = m.bits(y.v);
  Value mag = m.iand(bx, m.ci(~sign));
  Value from_zero = m.ior(m.iand(by, m.ci(sign)), m.ci(step));
  // The magnitude grows when y lies beyond x, away from zero: (x < y) == (x > 0).
  Value grow = fe.b.icmp(Pred::eq, m.lt(x.v, y.v), m.gt(x.v, m.c(0.0)));
  Value stepped = m.sel(grow, m.iadd(bx, m.ci(step)), m.isub(bx, m.ci(step)));
  Value r = m.sel(fe.b.icmp(Pred::eq, mag, m.ci(0)), from_zero, stepped);
  r = m.sel(m.eq(x.v, y.v), by, r);
  Value res = m.from_bits(r);
  res = m.sel(m.isnan(y.v), y.v, res);
  res = m.sel(m.isnan(x.v), x.v, res);
  return {EVal{res, x.dtype, x.lanes}};
}

// ctpop / ctlz of the 32-bit encoding (ctlz's "zero is poison" flag false: clz(0) = 32).
ElementalRule count_bits(const char* intrinsic) {
  return [intrinsic](FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
    EVal x = fe.value1(e.inputs[0], at);
    need(e, x.dtype, false);
    kir::Builder& k = fe.b;
    std::vector<Value> flags;
    if (std::string(intrinsic) == "ctlz") flags.push_back(k.i1(false));
    return std::vector<EVal>{EVal{k.intrinsic(intrinsic, k.type(x.v), {x.v}, flags), x.dtype, x.lanes}};
  };
}

const RegisterElemental r_is_finite("is_finite", is_finite);
const RegisterElemental r_nextafter("nextafter", nextafter);
const RegisterElemental r_popcount("population_count", count_bits("ctpop"));
const RegisterElemental r_clz("clz", count_bits("ctlz"));

}  // namespace

}  // namespace minijax::lower
