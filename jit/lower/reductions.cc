// minijax reduction lowering: reduce_sum, reduce_prod, reduce_max, reduce_min as accumulator
// rules for the reduction kernels (jit/lower/kernels.cc), with eager's NaN and wrapping rules.
#include <cmath>
#include <limits>

#include "jit/lower/elementwise_util.h"

namespace minijax::lower {

using kir::Op;
using kir::Pred;
using kir::Value;

namespace {

// Sums accumulate in the array's dtype (f32 for f32/bf16, wrapping for ints) with the kernel's
// blocked partial sums; products likewise. max/min propagate NaN like the binary max/min.
EVal combine_arith(FusionEmitter& fe, EVal a, EVal x, bool prod) {
  fe.match_lanes(a, x);
  kir::Builder& b = fe.b;
  if (a.dtype == DType::bool_) return {b.binop(prod ? Op::And : Op::Or, a.v, x.v), a.dtype, a.lanes};
  bool fl = is_floating(a.dtype);
  Value r = prod ? (fl ? b.fmul(a.v, x.v) : b.mul(a.v, x.v)) : (fl ? b.fadd(a.v, x.v) : b.add(a.v, x.v));
  return {r, a.dtype, a.lanes};
}

EVal combine_extreme(FusionEmitter& fe, EVal a, EVal x, bool is_max) {
  fe.match_lanes(a, x);
  kir::Builder& b = fe.b;
  if (is_floating(a.dtype)) {
    // acc wins when it is NaN; x wins when it is NaN or beats acc.
    Value x_wins = b.fcmp(is_max ? Pred::fugt : Pred::fult, x.v, a.v);  // unordered: x NaN (or a NaN)
    Value a_nan = b.fcmp(Pred::funo, a.v, a.v);
    Value r = b.select(x_wins, x.v, a.v);
    return {b.select(a_nan, a.v, r), a.dtype, a.lanes};
  }
  bool uns = a.dtype == DType::u32 || a.dtype == DType::bool_;
  Value x_wins = b.icmp(is_max ? (uns ? Pred::ugt : Pred::sgt) : (uns ? Pred::ult : Pred::slt), x.v, a.v);
  return {b.select(x_wins, x.v, a.v), a.dtype, a.lanes};
}

EVal identity(FusionEmitter& fe, DType d, int lanes, const std::string& kind) {
  if (kind == "sum") return fe.constant_int(d, 0, lanes);
  if (kind == "prod") return fe.constant_int(d, 1, lanes);
  const bool mx = kind == "max";
  switch (d) {
    case DType::bool_: return fe.constant_int(d, mx ? 0 : 1, lanes);
    case DType::i32: return fe.constant_int(d, mx ? INT32_MIN : INT32_MAX, lanes);
    case DType::u32: return fe.constant_int(d, mx ? 0 : int64_t(UINT32_MAX), lanes);
    default: return fe.constant(d, mx ? -INFINITY : INFINITY, lanes);
  }
}

ReductionRule rule(const std::string& kind) {
  ReductionRule r;
  r.init = [kind](FusionEmitter& fe, const Eqn&, DType d, int lanes) { return std::vector<EVal>{identity(fe, d, lanes, kind)}; };
  auto comb = [kind](FusionEmitter& fe, EVal a, EVal x) {
    if (kind == "sum" || kind == "prod") return combine_arith(fe, a, x, kind == "prod");
    return combine_extreme(fe, a, x, kind == "max");
  };
  r.combine = [comb](FusionEmitter& fe, const Eqn&, const std::vector<EVal>& acc, EVal x, const DimIdx&) {
    return std::vector<EVal>{comb(fe, acc[0], x)};
  };
  r.merge = [comb](FusionEmitter& fe, const Eqn&, const std::vector<EVal>& a, const std::vector<EVal>& b) {
    return std::vector<EVal>{comb(fe, a[0], b[0])};
  };
  r.finish = [](FusionEmitter&, const Eqn&, const std::vector<EVal>& acc) { return acc[0]; };
  r.blocked = kind == "sum" || kind == "prod";
  return r;
}

const RegisterReduction r_sum("reduce_sum", rule("sum"));
const RegisterReduction r_prod("reduce_prod", rule("prod"));
const RegisterReduction r_max("reduce_max", rule("max"));
const RegisterReduction r_min("reduce_min", rule("min"));

}  // namespace

}  // namespace minijax::lower
