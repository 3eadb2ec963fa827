// minijax reduction lowering: reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and,
// reduce_or, reduce_xor, argmax, argmin as accumulator rules for the reduction kernels
// (jit/codegen/lower/kernels.cc), with eager's NaN, wrapping and tie-breaking rules.
#include <cmath>
#include <limits>

#include "core/errors.h"
#include "core/views/array_ops.h"
#include "jit/codegen/lower/elementwise_util.h"

namespace minijax::lower {

using kir::Op;
using kir::Pred;
using kir::Value;

namespace {

// Sums accumulate in the array's dtype (f32 for f32/bf16, wrapping for ints) in the kernels' fixed
// pairwise order, which eager's reduce_sum shares bit for bit (core/primitives/reductions.cc
// sum_reduce); products likewise (eager multiplies in double). max/min propagate NaN like the
// binary max/min.
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

// The monoid a reduction combines its elements with.
enum class Monoid { sum, prod, max, min, and_, or_, xor_ };

// Bitwise and/or/xor of bool (i1: logical) or i32/u32 values: exact in any order.
EVal combine_bitwise(FusionEmitter& fe, EVal a, EVal x, Monoid kind) {
  fe.match_lanes(a, x);
  const Op op = kind == Monoid::and_ ? Op::And : kind == Monoid::or_ ? Op::Or : Op::Xor;
  return {fe.b.binop(op, a.v, x.v), a.dtype, a.lanes};
}

EVal identity(FusionEmitter& fe, DType d, int lanes, Monoid kind) {
  if (kind == Monoid::and_) return fe.constant_int(d, d == DType::bool_ ? 1 : -1, lanes);  // all bits set
  if (kind == Monoid::or_ || kind == Monoid::xor_) return fe.constant_int(d, 0, lanes);
  if (kind == Monoid::sum) return fe.constant_int(d, 0, lanes);
  if (kind == Monoid::prod) return fe.constant_int(d, 1, lanes);
  const bool mx = kind == Monoid::max;
  switch (d) {
    case DType::bool_: return fe.constant_int(d, mx ? 0 : 1, lanes);
    case DType::i32: return fe.constant_int(d, mx ? INT32_MIN : INT32_MAX, lanes);
    case DType::u32: return fe.constant_int(d, mx ? 0 : int64_t(UINT32_MAX), lanes);
    default: return fe.constant(d, mx ? -INFINITY : INFINITY, lanes);
  }
}

ReductionRule rule(Monoid kind) {
  ReductionRule r;
  r.init = [kind](FusionEmitter& fe, const Eqn&, DType d, int lanes) { return std::vector<EVal>{identity(fe, d, lanes, kind)}; };
  auto comb = [kind](FusionEmitter& fe, EVal a, EVal x) {
    if (kind == Monoid::and_ || kind == Monoid::or_ || kind == Monoid::xor_)
      return combine_bitwise(fe, a, x, kind);
    if (kind == Monoid::sum || kind == Monoid::prod) return combine_arith(fe, a, x, kind == Monoid::prod);
    return combine_extreme(fe, a, x, kind == Monoid::max);
  };
  r.combine = [comb](FusionEmitter& fe, const Eqn&, const std::vector<EVal>& acc, EVal x, const DimIdx&) {
    return std::vector<EVal>{comb(fe, acc[0], x)};
  };
  r.merge = [comb](FusionEmitter& fe, const Eqn&, const std::vector<EVal>& a, const std::vector<EVal>& b) {
    return std::vector<EVal>{comb(fe, a[0], b[0])};
  };
  // A bf16 sum is accumulated in f32 and rounded once, as eager stores it, before an epilogue reads it.
  r.finish = [](FusionEmitter& fe, const Eqn&, const std::vector<EVal>& acc) { return fe.round_storage(acc[0]); };
  r.pairwise = kind == Monoid::sum || kind == Monoid::prod;
  return r;
}


// ---- argmax / argmin ----------------------------------------------------------------------------
// The accumulator is (value, index): the best value seen and its position along the axis (i32).
// Eager (core/primitives/reductions.cc arg_impl) returns the first NaN if there is one, else the
// first position of the extreme value (compared as doubles: -0 == +0). Both are "the smallest
// index among the winners", so the merge breaks ties by the smaller index and the result does not
// depend on how the kernel splits and merges partial results. The start accumulator holds the
// identity value at index INT32_MAX, which any element ties or beats.

using Acc2 = std::vector<EVal>;

Acc2 arg_pick(FusionEmitter& fe, Acc2 a, Acc2 c, bool is_max) {
  kir::Builder& b = fe.b;
  const int L = std::max(a[0].lanes, c[0].lanes);
  for (auto* v : {&a, &c})
    for (auto& x : *v) x = fe.widen(x, L);
  const DType d = a[0].dtype;
  Value idx_less = b.icmp(Pred::slt, c[1].v, a[1].v);
  Value pick_c;
  if (is_floating(d)) {
    Value a_nan = b.fcmp(Pred::funo, a[0].v, a[0].v), c_nan = b.fcmp(Pred::funo, c[0].v, c[0].v);
    Value better = b.fcmp(is_max ? Pred::fogt : Pred::folt, c[0].v, a[0].v);
    Value tie = b.binop(Op::And, b.fcmp(Pred::foeq, c[0].v, a[0].v), idx_less);
    Value when_a_num = b.binop(Op::Or, c_nan, b.binop(Op::Or, better, tie));
    pick_c = b.select(a_nan, b.binop(Op::And, c_nan, idx_less), when_a_num);
  } else {
    const bool uns = d == DType::u32 || d == DType::bool_;
    Value better = b.icmp(is_max ? (uns ? Pred::ugt : Pred::sgt) : (uns ? Pred::ult : Pred::slt), c[0].v, a[0].v);
    Value tie = b.binop(Op::And, b.icmp(Pred::eq, c[0].v, a[0].v), idx_less);
    pick_c = b.binop(Op::Or, better, tie);
  }
  return {EVal{b.select(pick_c, c[0].v, a[0].v), d, L}, EVal{b.select(pick_c, c[1].v, a[1].v), DType::i32, L}};
}

ReductionRule arg_rule(bool is_max) {
  ReductionRule r;
  r.init = [is_max](FusionEmitter& fe, const Eqn& e, DType d, int lanes) {
    const auto axes = arg_reduce_params(e).axes;
    const int64_t extent = atom_aval(e.inputs.at(0)).shape.at(size_t(axes.at(0)));
    if (extent >= INT32_MAX)
      throw ValueError(e.primitive->name + " lowering: the reduced axis has " +
                       std::to_string(extent) + " elements; positions are kept as i32 (at most 2^31 - 2)");
    return Acc2{identity(fe, d, lanes, is_max ? Monoid::max : Monoid::min), fe.constant_int(DType::i32, INT32_MAX, lanes)};
  };
  r.combine = [is_max](FusionEmitter& fe, const Eqn&, const Acc2& acc, EVal x, const DimIdx& pos) {
    Value p = fe.dim_vector(pos, x.lanes);
    if (fe.b.type(p).lanes != x.lanes) p = fe.b.splat(p, x.lanes);
    EVal pi{fe.b.cast(Op::Trunc, kir::kI32.with_lanes(x.lanes), p), DType::i32, x.lanes};
    return arg_pick(fe, acc, Acc2{x, pi}, is_max);
  };
  r.merge = [is_max](FusionEmitter& fe, const Eqn&, const Acc2& a, const Acc2& c) { return arg_pick(fe, a, c, is_max); };
  r.finish = [](FusionEmitter&, const Eqn& e, const Acc2& acc) {
    return EVal{acc[1].v, e.outputs[0].aval().dtype, acc[1].lanes};  // i32 and u32: both i32 bits
  };
  r.pairwise = false;  // exact in any order
  return r;
}

const RegisterReduction r_sum("reduce_sum", rule(Monoid::sum));
const RegisterReduction r_prod("reduce_prod", rule(Monoid::prod));
const RegisterReduction r_max("reduce_max", rule(Monoid::max));
const RegisterReduction r_min("reduce_min", rule(Monoid::min));
const RegisterReduction r_and("reduce_and", rule(Monoid::and_));
const RegisterReduction r_or("reduce_or", rule(Monoid::or_));
const RegisterReduction r_xor("reduce_xor", rule(Monoid::xor_));
const RegisterReduction r_argmax("argmax", arg_rule(true));
const RegisterReduction r_argmin("argmin", arg_rule(false));

}  // namespace

}  // namespace minijax::lower
