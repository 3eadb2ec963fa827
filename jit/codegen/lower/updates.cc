// minijax program rules of the update primitives: dynamic_update_slice and scatter_add (written in
// place of their operand when the buffer plan put them there) and cumsum (a loop along the axis).
#include "core/errors.h"
#include "core/lax.h"
#include "core/views/array_ops.h"
#include "jit/codegen/lower/program.h"

namespace minijax::lower {

using kir::Op;
using kir::Pred;
using kir::Type;
using kir::Value;

namespace {

// Typed loads and stores (bf16, bool representations) in the entry function: a FusionEmitter with
// no body, used only for FusionEmitter::load/store/compute_type.
const Jaxpr& no_body() {
  static const Jaxpr j;
  return j;
}

// for j in [0, n): body(j, lanes) in vector steps while a whole vector fits, then single elements.
void for_lanes(kir::Builder& b, int64_t n, int lanes, const std::function<void(Value, int)>& body) {
  const int64_t vend = lanes > 1 ? n / lanes * lanes : 0;
  if (vend > 0) b.for_(b.i64(0), b.i64(vend), b.i64(lanes), [&](Value j) { body(j, lanes); });
  if (vend < n) b.for_(b.i64(vend), b.i64(n), b.i64(1), [&](Value j) { body(j, 1); });
}

// Element `elem` (i64) of index operand `a` as i64: i32 sign-extended, u32 zero-extended.
Value load_index(ProgramEmitter& pe, const Atom& a, Value elem) {
  Value v = pe.b.load(kir::kI32, pe.addr(a), elem);
  return pe.b.cast(atom_aval(a).dtype == DType::u32 ? Op::ZExt : Op::SExt, kir::kI64, v);
}

Value clamp(kir::Builder& b, Value v, int64_t lo, int64_t hi) {
  return b.intrinsic("smax", kir::kI64, {b.intrinsic("smin", kir::kI64, {v, b.i64(hi)}), b.i64(lo)});
}

// ---- dynamic_update_slice ---------------------------------------------------------------------

// out = operand with the update written at starts clamped into [0, dim - update dim] (eager's
// dus_impl). The operand is copied into out only when the plan placed them apart (in place
// otherwise: O(update) work); the update goes in as contiguous chunks (the longest run of trailing
// dims the update spans fully), one memcpy each.
void lower_dynamic_update_slice(ProgramEmitter& pe, const Eqn& e) {
  kir::Builder& b = pe.b;
  const ShapedArray& xa = atom_aval(e.inputs[0]);
  const ShapedArray& ua = atom_aval(e.inputs[1]);
  Value out = pe.addr(e.outputs[0]);
  pe.copy_atom(out, e.inputs[0]);
  pe.note(e, "in-place update", "operand copied only when placed apart, then " + ua.str() + " written at clamped starts");
  if (ua.size() == 0 || xa.nbytes() == 0) return;
  const size_t r = xa.shape.size();
  if (r == 0) return pe.copy_atom(out, e.inputs[1]);
  const Shape &xs = xa.shape, &us = ua.shape;
  const int64_t item = int64_t(itemsize(xa.dtype));
  auto xst = strides_of(xs), ust = strides_of(us);
  Value dst = b.i64(0);
  for (size_t k = 0; k < r; ++k) {
    Value s = clamp(b, load_index(pe, e.inputs[2 + k], b.i64(0)), 0, xs[k] - us[k]);
    dst = b.add(dst, b.mul(s, b.i64(xst[k])));
  }
  size_t j = r - 1;
  while (j > 0 && us[j] == xs[j]) --j;
  int64_t chunk = 1;
  for (size_t k = j; k < r; ++k) chunk *= us[k];
  Value src_ptr = pe.addr(e.inputs[1]);
  std::function<void(size_t, Value, Value)> loops = [&](size_t k, Value d, Value s) {
    if (k == j) {
      b.memcpy(b.ptr_add(out, b.mul(d, b.i64(item))), b.ptr_add(src_ptr, b.mul(s, b.i64(item))), b.i64(chunk * item));
      return;
    }
    b.for_(b.i64(0), b.i64(us[k]), b.i64(1), [&](Value i) {
      loops(k + 1, b.add(d, b.mul(i, b.i64(xst[k]))), b.add(s, b.mul(i, b.i64(ust[k]))));
    });
  };
  loops(0, dst, b.i64(0));
}

// ---- scatter_add ------------------------------------------------------------------------------

// out = operand; then for each index position i in order, row clamp(indices[i], 0, rows - 1) of
// out += row i of updates (eager's scatter_add_impl). CLIP and PROMISE_IN_BOUNDS clamp (eager
// raises IndexError for a broken promise instead); FILL_OR_DROP skips an index outside [0, rows),
// as eager does. Sequential over i, so duplicate indices accumulate in one fixed order; each row
// is added in vectors (bf16 rounded after each add, bool or-ed).
void lower_scatter_add(ProgramEmitter& pe, const Eqn& e) {
  kir::Builder& b = pe.b;
  const ShapedArray& xa = atom_aval(e.inputs[0]);
  const ShapedArray& ia = atom_aval(e.inputs[1]);
  const bool drop = scatter_add_params(e).mode == lax::GatherScatterMode::FILL_OR_DROP;
  Value out = pe.addr(e.outputs[0]);
  pe.copy_atom(out, e.inputs[0]);
  pe.note(e, "in-place update", "operand copied only when placed apart, then " + std::to_string(ia.size()) +
                                    " rows added in index order" + (drop ? " (out-of-range rows dropped)" : ""));
  if (xa.dtype == DType::float0 || xa.size() == 0 || ia.size() == 0) return;
  const DType dt = xa.dtype;
  const int64_t rows = xa.shape[0], row = xa.size() / rows;
  Value upd = pe.addr(e.inputs[2]);
  FusionEmitter fe(b, no_body(), {});
  const int lanes = FusionEmitter::native_lanes(dt);
  b.for_(b.i64(0), b.i64(ia.size()), b.i64(1), [&](Value i) {
    Value idx = load_index(pe, e.inputs[1], i);
    auto add_row = [&] {
      Value dst = b.mul(clamp(b, idx, 0, rows - 1), b.i64(row));
      Value src = b.mul(i, b.i64(row));
      for_lanes(b, row, lanes, [&](Value j, int L) {
        DimIdx d{b.add(dst, j), L > 1 ? 1 : 0, {}}, s{b.add(src, j), L > 1 ? 1 : 0, {}};
        EVal o = fe.load(dt, out, d, L), u = fe.load(dt, upd, s, L);
        Value sum = dt == DType::bool_ ? b.binop(Op::Or, o.v, u.v) : is_floating(dt) ? b.fadd(o.v, u.v) : b.add(o.v, u.v);
        fe.store(out, d, EVal{sum, dt, L});
      });
    };
    if (drop) b.if_(b.icmp(Pred::ult, idx, b.i64(rows)), add_row);  // 0 <= idx < rows (unsigned compare)
    else add_row();
  });
}

// ---- cumsum -----------------------------------------------------------------------------------

// Inclusive prefix sums along `axis` (from the end when `reverse`), as eager's cumsum_impl: floats
// accumulate in f64 and each output is the running f64 sum rounded to the dtype (bf16 through
// f32), integers wrap mod 2^32. One sequential loop along the axis per position of the other
// dims, vectorized across the dims after the axis.
void lower_cumsum(ProgramEmitter& pe, const Eqn& e) {
  kir::Builder& b = pe.b;
  const ShapedArray& xa = atom_aval(e.inputs[0]);
  const CumsumParams cp = cumsum_params(e);
  const int64_t axis = cp.axis;
  const bool reverse = cp.reverse;
  const Shape& s = xa.shape;
  int64_t outer = 1, inner = 1, n = s.at(size_t(axis));
  for (int64_t i = 0; i < axis; ++i) outer *= s[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < s.size(); ++i) inner *= s[i];
  pe.note(e, "loop", "sequential along axis " + std::to_string(axis) + (reverse ? " (reversed)" : "") + " of " + xa.str());
  if (xa.size() == 0) return;
  const DType dt = xa.dtype;
  if (dt == DType::bool_) throw TypeError("cumsum lowering: bool operands are not accepted (as eager)");
  const bool fl = is_floating(dt);
  Value src = pe.addr(e.inputs[0]), out = pe.addr(e.outputs[0]);
  FusionEmitter fe(b, no_body(), {});
  const int lanes = FusionEmitter::native_lanes(fl ? DType::f64 : DType::i32);
  b.for_(b.i64(0), b.i64(outer), b.i64(1), [&](Value o) {
    for_lanes(b, inner, lanes, [&](Value j, int L) {
      Type at = (fl ? kir::kF64 : kir::kI32).with_lanes(L);
      Value acc = b.stack_slot(at);
      b.store(acc, b.i64(0), fl ? b.splat(b.f64(0), L) : b.splat(b.i32(0), L));
      b.for_(b.i64(0), b.i64(n), b.i64(1), [&](Value t) {
        Value i = reverse ? b.sub(b.i64(n - 1), t) : t;
        DimIdx off{b.add(b.mul(b.add(b.mul(o, b.i64(n)), i), b.i64(inner)), j), L > 1 ? 1 : 0, {}};
        EVal x = fe.widen(fe.load(dt, src, off, L), L);
        Value xv = fl && dt != DType::f64 ? b.cast(Op::FPExt, at, x.v) : x.v;
        Value sum = fl ? b.fadd(b.load(at, acc, b.i64(0)), xv) : b.add(b.load(at, acc, b.i64(0)), xv);
        b.store(acc, b.i64(0), sum);
        Value y = fl && dt != DType::f64 ? b.cast(Op::FPTrunc, kir::kF32.with_lanes(L), sum) : sum;
        fe.store(out, off, EVal{y, dt, L});  // bf16: rounded from f32 by the store
      });
    });
  });
}

const RegisterProgramRule reg_dus("dynamic_update_slice", "in-place update", lower_dynamic_update_slice);
const RegisterProgramRule reg_scatter_add("scatter_add", "in-place update", lower_scatter_add);
const RegisterProgramRule reg_cumsum("cumsum", "loop", lower_cumsum);

}  // namespace

}  // namespace minijax::lower
