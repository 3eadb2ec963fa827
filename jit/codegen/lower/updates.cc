// minijax program rules of the update primitives: dynamic_update_slice and the scatter family (written
// in place of their operand when the buffer plan put them there) and cumsum (a loop along the axis).
#include <algorithm>

#include "core/errors.h"
#include "core/gather_scatter_params.h"
#include "core/lax.h"
#include "core/views/array_ops.h"
#include "core/views/gather_scatter.h"
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
  pe.note(e, "in-place update",
          "operand copied only when placed apart, then " + ua.str() + " written at clamped starts");
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
      b.memcpy(b.ptr_add(out, b.mul(d, b.i64(item))), b.ptr_add(src_ptr, b.mul(s, b.i64(item))),
               b.i64(chunk * item));
      return;
    }
    b.for_(b.i64(0), b.i64(us[k]), b.i64(1), [&](Value i) {
      loops(k + 1, b.add(d, b.mul(i, b.i64(xst[k]))), b.add(s, b.mul(i, b.i64(ust[k]))));
    });
  };
  loops(0, dst, b.i64(0));
}

// ---- the scatter family ---------------------------------------------------------------------------

enum class Combine { set, add, mul, min, max };

// o combined with u as eager's combine (bf16 rounded by the store; bool: add and max are or, mul
// and min are and; float min/max propagate NaN; u32 compares unsigned).
Value combine(kir::Builder& b, Combine c, DType dt, Value o, Value u) {
  const bool fl = is_floating(dt), bl = dt == DType::bool_;
  switch (c) {
    case Combine::set: return u;
    case Combine::add: return bl ? b.binop(Op::Or, o, u) : fl ? b.fadd(o, u) : b.add(o, u);
    case Combine::mul: return bl ? b.binop(Op::And, o, u) : fl ? b.fmul(o, u) : b.mul(o, u);
    case Combine::min:
    case Combine::max: {
      const bool mx = c == Combine::max;
      if (bl) return b.binop(mx ? Op::Or : Op::And, o, u);
      if (!fl) {
        const bool un = dt == DType::u32;
        return b.select(b.icmp(mx ? (un ? Pred::ugt : Pred::sgt) : (un ? Pred::ult : Pred::slt), u, o), u, o);
      }
      Value pick = b.select(b.fcmp(mx ? Pred::fogt : Pred::folt, u, o), u, o);
      return b.select(b.fcmp(Pred::funo, o, u), b.fadd(o, u), pick);  // NaN in either: NaN
    }
  }
  return u;
}

// out = operand; then every element of updates, in row-major order (eager's scatter_impl_of, so
// repeated indices combine in the same order), is combined into out at its window position:
// loops over the updates dims up to the last scatter (batch) dim read the index vector and clamp
// each start into [0, dim - window] (CLIP); FILL_OR_DROP and PROMISE_IN_BOUNDS skip a window any
// part of which is out of bounds (XLA discards out-of-bounds scatter windows; eager raises
// IndexError for a broken promise instead). The remaining (window) dims
// loop inside; the innermost in vectors when it is the operand's last dim.
void lower_scatter(ProgramEmitter& pe, const Eqn& e, Combine c) {
  kir::Builder& b = pe.b;
  const ShapedArray& xa = atom_aval(e.inputs[0]);
  const ShapedArray& ia = atom_aval(e.inputs[1]);
  const ShapedArray& ua = atom_aval(e.inputs[2]);
  const ScatterParams sp = scatter_params(e);
  const auto gd = lax::mirrored_gather_dims(sp.dimension_numbers);
  const auto sizes = lax::scatter_slice_sizes(sp.dimension_numbers, xa.shape.size(), ua.shape);
  const bool drop = sp.mode != lax::GatherScatterMode::CLIP;
  Value out = pe.addr(e.outputs[0]);
  pe.copy_atom(out, e.inputs[0]);
  pe.note(e, "in-place update",
          "operand copied only when placed apart, then " + ua.str() + " combined in update order" +
              (drop ? " (out-of-bounds windows dropped)" : ""));
  const DType dt = xa.dtype;
  if (dt == DType::float0 || xa.size() == 0 || ua.size() == 0) return;
  auto has = [](const std::vector<int64_t>& v, int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  const Shape &xs = xa.shape, &us = ua.shape;
  const size_t r = xs.size(), ur = us.size();
  const Shape bs(ia.shape.begin(), ia.shape.end() - 1);
  const int64_t K = ia.shape.back();
  const auto xst = strides_of(xs), ust = strides_of(us), bst = strides_of(bs);
  std::vector<int64_t> wdims;  // the operand's window dims, in order
  for (size_t i = 0; i < r; ++i)
    if (!has(gd.collapsed_slice_dims, int64_t(i)) && !has(gd.operand_batching_dims, int64_t(i)))
      wdims.push_back(int64_t(i));
  std::vector<int64_t> xstride(ur, 0), bstride(ur, 0), bdim(ur, -1);  // per updates dim
  int64_t last_b = -1;
  for (size_t i = 0, w = 0, bi = 0; i < ur; ++i) {
    if (has(gd.offset_dims, int64_t(i))) xstride[i] = xst[size_t(wdims[w++])];
    else {
      bdim[i] = int64_t(bi);
      bstride[i] = bst[bi++];
      last_b = int64_t(i);
    }
  }
  const bool vec = ur > 0 && int64_t(ur) - 1 > last_b && xstride[ur - 1] == 1;
  Value upd = pe.addr(e.inputs[2]);
  FusionEmitter fe(b, no_body(), {});
  const int lanes = FusionEmitter::native_lanes(dt);
  std::vector<Value> iv(ur);
  auto leaf = [&](Value uoff, Value xoff, int L) {
    DimIdx dd{xoff, L > 1 ? 1 : 0, {}}, sd{uoff, L > 1 ? 1 : 0, {}};
    EVal o = fe.load(dt, out, dd, L), u = fe.load(dt, upd, sd, L);
    fe.store(out, dd, EVal{combine(b, c, dt, o.v, u.v), dt, L});
  };
  // Window dims from k on (all past the last scatter dim).
  std::function<void(size_t, Value, Value)> window = [&](size_t k, Value uoff, Value xoff) {
    if (k == ur) return leaf(uoff, xoff, 1);
    if (vec && k == ur - 1)
      return for_lanes(b, us[k], lanes, [&](Value j, int L) { leaf(b.add(uoff, j), b.add(xoff, j), L); });
    b.for_(b.i64(0), b.i64(us[k]), b.i64(1), [&](Value j) {
      window(k + 1, b.add(uoff, b.mul(j, b.i64(ust[k]))), b.add(xoff, b.mul(j, b.i64(xstride[k]))));
    });
  };
  // The window start of the batch position bflat: the clamped index vector plus the batching dims.
  auto start = [&](Value bflat, Value uoff, Value xoff) {
    Value soff = b.i64(0), ok;
    for (int64_t k = 0; k < K; ++k) {
      Value v = load_index(pe, e.inputs[1], b.add(b.mul(bflat, b.i64(K)), b.i64(k)));
      const size_t od = size_t(gd.start_index_map[size_t(k)]);
      const int64_t hi = xs[od] - sizes[od];
      soff = b.add(soff, b.mul(clamp(b, v, 0, std::max<int64_t>(hi, 0)), b.i64(xst[od])));
      Value in = b.icmp(Pred::ult, v, b.i64(hi + 1));  // 0 <= v <= hi (unsigned compare)
      ok = ok.valid() ? b.binop(Op::And, ok, in) : in;
    }
    for (size_t i = 0; i < gd.operand_batching_dims.size(); ++i) {
      const int64_t ib = gd.start_indices_batching_dims[i];
      for (size_t u = 0; u < ur; ++u)
        if (bdim[u] == ib) soff = b.add(soff, b.mul(iv[u], b.i64(xst[size_t(gd.operand_batching_dims[i])])));
    }
    auto body = [&] { window(size_t(last_b + 1), uoff, b.add(xoff, soff)); };
    if (drop && ok.valid()) b.if_(ok, body);
    else body();
  };
  // Dims up to the last scatter dim.
  std::function<void(size_t, Value, Value, Value)> outer = [&](size_t k, Value uoff, Value bflat,
                                                               Value xoff) {
    if (int64_t(k) == last_b + 1) return start(bflat, uoff, xoff);
    b.for_(b.i64(0), b.i64(us[k]), b.i64(1), [&](Value j) {
      iv[k] = j;
      outer(k + 1, b.add(uoff, b.mul(j, b.i64(ust[k]))), b.add(bflat, b.mul(j, b.i64(bstride[k]))),
            b.add(xoff, b.mul(j, b.i64(xstride[k]))));
    });
  };
  outer(0, b.i64(0), b.i64(0), b.i64(0));
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
  pe.note(e, "loop",
          "sequential along axis " + std::to_string(axis) + (reverse ? " (reversed)" : "") + " of " +
              xa.str());
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
ProgramRule scatter_rule(Combine c) {
  return [c](ProgramEmitter& pe, const Eqn& e) { lower_scatter(pe, e, c); };
}
const RegisterProgramRule reg_scatter("scatter", "in-place update", scatter_rule(Combine::set));
const RegisterProgramRule reg_scatter_add("scatter_add", "in-place update", scatter_rule(Combine::add));
const RegisterProgramRule reg_scatter_mul("scatter_mul", "in-place update", scatter_rule(Combine::mul));
const RegisterProgramRule reg_scatter_min("scatter_min", "in-place update", scatter_rule(Combine::min));
const RegisterProgramRule reg_scatter_max("scatter_max", "in-place update", scatter_rule(Combine::max));
const RegisterProgramRule reg_cumsum("cumsum", "loop", lower_cumsum);

}  // namespace

}  // namespace minijax::lower
