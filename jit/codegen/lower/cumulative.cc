// minijax program rules of cumprod, cummax, cummin and cumlogsumexp: one sequential loop along the
// axis per position of the other dims, vectorized across the dims after it (as cumsum's).
//
// Each computes what eager's cum_impl (core/primitives/cumulative.cc) computes, in the same order:
// the first element is stored as is, then acc = acc (+) x along the axis. cumprod multiplies
// floats in f64 (each output rounded to the dtype) and integers in i32 (wrapping); cummax/cummin
// keep the running extreme in the compute type (NaN propagates: once the accumulator is NaN it
// stays, a NaN element replaces it); cumlogsumexp runs JAX's logaddexp in f64 with the project's
// vectorized exp and log1p (jit/codegen/lower/transcendentals.h, within 2 ulp each; eager uses the
// C library, so the two agree to a few f64 ulp, and f32 outputs almost always bit for bit).
#include "core/errors.h"
#include "core/views/array_ops.h"
#include "jit/codegen/lower/program.h"
#include "jit/codegen/lower/transcendentals.h"

namespace minijax::lower {

using kir::Op;
using kir::Pred;
using kir::Type;
using kir::Value;

namespace {

const Jaxpr& no_body() {
  static const Jaxpr j;
  return j;
}

enum class Kind { prod, max, min, logsumexp };

// for j in [0, n): body(j, lanes) in vector steps while a whole vector fits, then single elements.
void for_lanes(kir::Builder& b, int64_t n, int lanes, const std::function<void(Value, int)>& body) {
  const int64_t vend = lanes > 1 ? n / lanes * lanes : 0;
  if (vend > 0) b.for_(b.i64(0), b.i64(vend), b.i64(lanes), [&](Value j) { body(j, lanes); });
  if (vend < n) b.for_(b.i64(vend), b.i64(n), b.i64(1), [&](Value j) { body(j, 1); });
}

// JAX's logaddexp on f64 vectors: max(a, x) + log1p(exp(-|a - x|)); a + x where a - x is NaN.
Value logaddexp(kir::Builder& b, Value a, Value x) {
  const Type t = b.type(a);
  Value d = b.fsub(a, x);
  Value mx = b.select(b.fcmp(Pred::fogt, a, x), a, x);
  Value e = math::call_outlined(b, "exp", {b.fneg(b.intrinsic("fabs", t, {d}))});
  Value r = b.fadd(mx, math::call_outlined(b, "log1p", {e}));
  return b.select(b.fcmp(Pred::funo, d, d), b.fadd(a, x), r);
}

// acc (+) x in the accumulator's type.
Value combine(kir::Builder& b, Kind k, DType dt, Value acc, Value x) {
  const bool fl = is_floating(dt);
  switch (k) {
    case Kind::prod: return fl ? b.fmul(acc, x) : b.mul(acc, x);
    case Kind::logsumexp: return logaddexp(b, acc, x);
    case Kind::max:
    case Kind::min: {
      const bool mx = k == Kind::max;
      if (fl) {
        // x wins when it beats acc or is NaN (unordered compare), unless acc is NaN already.
        Value x_wins = b.fcmp(mx ? Pred::fugt : Pred::fult, x, acc);
        Value a_nan = b.fcmp(Pred::funo, acc, acc);
        return b.select(a_nan, acc, b.select(x_wins, x, acc));
      }
      const bool uns = dt == DType::u32;
      Value x_wins = b.icmp(mx ? (uns ? Pred::ugt : Pred::sgt) : (uns ? Pred::ult : Pred::slt), x, acc);
      return b.select(x_wins, x, acc);
    }
  }
  return acc;
}

void lower_cumulative(ProgramEmitter& pe, const Eqn& e, Kind kind) {
  kir::Builder& b = pe.b;
  const ShapedArray& xa = atom_aval(e.inputs[0]);
  const CumulativeParams cp = cumulative_params(e);
  const int64_t axis = cp.axis;
  const bool reverse = cp.reverse;
  const Shape& s = xa.shape;
  int64_t outer = 1, inner = 1;
  const int64_t n = s.at(size_t(axis));
  for (int64_t i = 0; i < axis; ++i) outer *= s[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < s.size(); ++i) inner *= s[i];
  pe.note(e, "loop",
          "sequential along axis " + std::to_string(axis) + (reverse ? " (reversed)" : "") + " of " +
              xa.str());
  if (xa.size() == 0) return;
  const DType dt = xa.dtype;
  if (dt == DType::bool_ || (kind == Kind::logsumexp && !is_floating(dt)))
    throw TypeError(e.primitive->name + " lowering: operands of dtype " + dtype_name(dt) +
                    " are not accepted (as eager)");
  const bool fl = is_floating(dt);
  // Products and log-sum-exps of floats run in f64; extremes in the compute type.
  const bool wide = fl && (kind == Kind::prod || kind == Kind::logsumexp) && dt != DType::f64;
  Value src = pe.addr(e.inputs[0]), out = pe.addr(e.outputs[0]);
  FusionEmitter fe(b, no_body(), {});
  const int lanes = FusionEmitter::native_lanes(wide ? DType::f64 : dt);
  b.for_(b.i64(0), b.i64(outer), b.i64(1), [&](Value o) {
    for_lanes(b, inner, lanes, [&](Value j, int L) {
      auto offset = [&](Value t) {
        Value i = reverse ? b.sub(b.i64(n - 1), t) : t;
        return DimIdx{b.add(b.mul(b.add(b.mul(o, b.i64(n)), i), b.i64(inner)), j), L > 1 ? 1 : 0, {}};
      };
      auto load = [&](Value t) {
        EVal x = fe.widen(fe.load(dt, src, offset(t), L), L);
        return wide ? b.cast(Op::FPExt, kir::kF64.with_lanes(L), x.v) : x.v;
      };
      auto store = [&](Value t, Value v) {
        Value y = wide ? b.cast(Op::FPTrunc, kir::kF32.with_lanes(L), v) : v;
        fe.store(out, offset(t), EVal{y, dt, L});  // bf16: rounded from f32 by the store
      };
      const Type at = wide ? kir::kF64.with_lanes(L) : FusionEmitter::compute_type(dt, L);
      Value acc = b.stack_slot(at);
      Value first = load(b.i64(0));
      b.store(acc, b.i64(0), first);
      store(b.i64(0), first);
      b.for_(b.i64(1), b.i64(n), b.i64(1), [&](Value t) {
        Value r = combine(b, kind, wide ? DType::f64 : dt, b.load(at, acc, b.i64(0)), load(t));
        b.store(acc, b.i64(0), r);
        store(t, r);
      });
    });
  });
}

const RegisterProgramRule reg_cumprod("cumprod", "loop", [](ProgramEmitter& pe, const Eqn& e) {
  lower_cumulative(pe, e, Kind::prod);
});
const RegisterProgramRule reg_cummax("cummax", "loop", [](ProgramEmitter& pe, const Eqn& e) {
  lower_cumulative(pe, e, Kind::max);
});
const RegisterProgramRule reg_cummin("cummin", "loop", [](ProgramEmitter& pe, const Eqn& e) {
  lower_cumulative(pe, e, Kind::min);
});
const RegisterProgramRule reg_cumlogsumexp("cumlogsumexp", "loop", [](ProgramEmitter& pe, const Eqn& e) {
  lower_cumulative(pe, e, Kind::logsumexp);
});

}  // namespace

}  // namespace minijax::lower
