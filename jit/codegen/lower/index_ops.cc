// minijax elemental lowering of index maps: broadcast_in_dim, transpose, slice, rev, pad,
// concatenate, iota, iota_2x32_shape, dynamic_slice and gather (lane patterns kept where they can
// be, so contiguous reads stay vector loads; computed or clamped indices become gathers).
#include <algorithm>
#include <optional>

#include "core/errors.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/views/array_ops.h"
#include "core/views/gather_scatter.h"
#include "jit/codegen/lower/elementwise_util.h"

namespace minijax::lower {

using kir::Op;
using kir::Pred;
using kir::Type;
using kir::Value;

namespace {

// ---- helpers ----------------------------------------------------------------------------------

// Whether d is the same index in every lane of an index of `lanes` lanes.
bool uniform(const DimIdx& d, int lanes) { return d.is_affine() && (d.coef == 0 || lanes == 1); }

// An index operand's value (i32 or u32 representation) as i64: i32 sign-extended, u32 zero-extended.
Value index_i64(FusionEmitter& fe, const EVal& v) {
  return fe.b.cast(v.dtype == DType::u32 ? Op::ZExt : Op::SExt, kir::kI64.with_lanes(v.lanes), v.v);
}

// clamp(v, lo, hi) of an i64 scalar or vector (lo <= hi).
Value clamp_i64(kir::Builder& b, Value v, int64_t lo, int64_t hi) {
  Type t = b.type(v);
  Value l = b.splat(b.i64(lo), t.lanes), h = b.splat(b.i64(hi), t.lanes);
  return b.intrinsic("smax", t, {b.intrinsic("smin", t, {v, h}), l});
}

// A rank-0 index operand (dynamic_slice start) as a scalar i64.
Value scalar_index_operand(FusionEmitter& fe, const Atom& a) {
  EVal v = fe.value1(a, fe.scalar_index(1));
  if (v.lanes != 1)
    throw ValueError("fusion emitter: a rank-0 index operand with " + std::to_string(v.lanes) + " lanes");
  return index_i64(fe, v);
}

// A value computed in several arms of an if/else chain (values do not cross blocks in KIR):
// each arm stores its EVal into the stack slot, the code after the chain loads it.
class ArmValue {
 public:
  ArmValue(FusionEmitter& fe, DType d, int lanes) : fe_(fe), d_(d), lanes_(lanes) {
    slot_ = fe.b.stack_slot(slot_type());
  }
  void put(EVal v) {
    v = fe_.widen(v, lanes_);
    Value raw = v.v;
    if (d_ == DType::bool_) raw = fe_.b.cast(Op::ZExt, slot_type(), raw);
    fe_.b.store(slot_, fe_.b.i64(0), raw);
  }
  EVal get() {
    Value raw = fe_.b.load(slot_type(), slot_, fe_.b.i64(0));
    if (d_ == DType::bool_)
      raw = fe_.b.icmp(Pred::ne, raw, fe_.b.splat(fe_.b.const_int(kir::kI8, 0), lanes_));
    return EVal{raw, d_, lanes_};
  }

 private:
  Type slot_type() const {
    return d_ == DType::bool_ ? kir::kI8.with_lanes(lanes_) : FusionEmitter::compute_type(d_, lanes_);
  }
  FusionEmitter& fe_;
  DType d_;
  int lanes_;
  Value slot_;
};

// An output index mapped into one operand dim through a window: raw = i - shift is an element
// of the operand when 0 <= raw <= (n - 1) * step and step divides raw; it reads raw / step.
// (pad: shift = low, step = interior + 1; concatenate: shift = the operand's offset, step = 1.)
struct Window {
  int64_t shift = 0, step = 1, n = 0;
};

// Per-dim windows of one read; nullopt dims read the output index unchanged.
using Windows = std::vector<std::optional<Window>>;

// The operand index of window w at d when it is valid (no clamping): (d - shift) / step.
DimIdx window_index(FusionEmitter& fe, const DimIdx& d, const Window& w, int lanes) {
  DimIdx r = w.shift ? fe.offset(d, fe.b.i64(-w.shift)) : d;
  if (w.step == 1) return r;
  Value v = r.is_affine() && uniform(r, lanes) ? r.base : fe.dim_vector(r, lanes);
  Value q = fe.b.binop(Op::SDiv, v, fe.b.splat(fe.b.i64(w.step), fe.b.type(v).lanes));
  return fe.b.type(q).lanes == 1 ? FusionEmitter::affine(q) : DimIdx{{}, 0, q};
}

// Validity of window w at d: an i1 scalar (uniform d) or vector.
Value window_valid(FusionEmitter& fe, const DimIdx& d, const Window& w, int lanes) {
  kir::Builder& b = fe.b;
  Value raw = uniform(d, lanes) ? d.base : fe.dim_vector(d, lanes);
  const int L = b.type(raw).lanes;
  auto c = [&](int64_t k) { return b.splat(b.i64(k), L); };
  raw = b.sub(raw, c(w.shift));
  Value ok = b.binop(Op::And, b.icmp(Pred::sge, raw, c(0)), b.icmp(Pred::sle, raw, c((w.n - 1) * w.step)));
  if (w.step > 1) ok = b.binop(Op::And, ok, b.icmp(Pred::eq, b.binop(Op::SRem, raw, c(w.step)), c(0)));
  return ok;
}

// The operand index of window w at d clamped into [0, n): in bounds in every lane.
DimIdx window_clamped(FusionEmitter& fe, const DimIdx& d, const Window& w, int lanes) {
  kir::Builder& b = fe.b;
  Value raw = uniform(d, lanes) ? d.base : fe.dim_vector(d, lanes);
  const int L = b.type(raw).lanes;
  raw = clamp_i64(b, b.sub(raw, b.splat(b.i64(w.shift), L)), 0, (w.n - 1) * w.step);
  if (w.step > 1) raw = b.binop(Op::SDiv, raw, b.splat(b.i64(w.step), L));
  return L == 1 ? FusionEmitter::affine(raw) : DimIdx{{}, 0, raw};
}

// i1 scalar: every lane of affine d is valid for window w (step 1: the first and last lanes are).
Value window_all_valid(FusionEmitter& fe, const DimIdx& d, const Window& w, int lanes) {
  kir::Builder& b = fe.b;
  Value first = b.sub(d.base, b.i64(w.shift));
  Value last = b.add(first, b.i64(d.coef * (lanes - 1)));
  Value lo = b.intrinsic("smin", kir::kI64, {first, last}),
        hi = b.intrinsic("smax", kir::kI64, {first, last});
  return b.binop(Op::And, b.icmp(Pred::sge, lo, b.i64(0)), b.icmp(Pred::slt, hi, b.i64(w.n)));
}

// x read at `at` with every windowed dim clamped into x: in bounds in every lane (gathers where a
// clamped dim varies across lanes).
EVal read_clamped(FusionEmitter& fe, const Atom& x, const ElemIndex& at, const Windows& win) {
  std::vector<DimIdx> dims = at.dims;
  for (size_t k = 0; k < win.size(); ++k)
    if (win[k]) dims[k] = window_clamped(fe, at.dims[k], *win[k], at.lanes);
  return fe.value1(x, fe.index(std::move(dims), at.lanes));
}

// x read at `at` with every windowed dim at its plain operand index (valid lanes only).
EVal read_plain(FusionEmitter& fe, const Atom& x, const ElemIndex& at, const Windows& win) {
  std::vector<DimIdx> dims = at.dims;
  for (size_t k = 0; k < win.size(); ++k)
    if (win[k]) dims[k] = window_index(fe, at.dims[k], *win[k], at.lanes);
  return fe.value1(x, fe.index(std::move(dims), at.lanes));
}

// Validity of every windowed dim of `at`: an i1 vector of at.lanes lanes.
Value windows_valid(FusionEmitter& fe, const ElemIndex& at, const Windows& win) {
  kir::Builder& b = fe.b;
  Value ok = b.splat(b.i1(true), at.lanes);
  for (size_t k = 0; k < win.size(); ++k) {
    if (!win[k]) continue;
    Value v = window_valid(fe, at.dims[k], *win[k], at.lanes);
    ok = b.binop(Op::And, ok, b.type(v).lanes == 1 ? b.splat(v, at.lanes) : v);
  }
  return ok;
}

// x read at `at` through `win`, `fill()` where a windowed dim is not an element of x (pad). Every
// read stays in bounds. When all lanes are known valid at once (windowed dims uniform across the
// lanes, or affine with step 1 and every lane checked by its first and last) one arm of a branch
// reads at the plain index -- contiguous runs stay vector loads -- and the other fills (uniform)
// or reads at clamped indices (gathers) and selects the fill into the invalid lanes.
EVal read_window(FusionEmitter& fe, const Atom& x, const ElemIndex& at, const Windows& win, DType dt,
                 const std::function<EVal()>& fill) {
  kir::Builder& b = fe.b;
  const int lanes = at.lanes;
  bool any = false, all_uniform = true, fast = true;
  for (size_t k = 0; k < win.size(); ++k) {
    if (!win[k]) continue;
    any = true;
    const DimIdx& d = at.dims[k];
    if (!uniform(d, lanes)) {
      all_uniform = false;
      if (!d.is_affine() || win[k]->step != 1) fast = false;
    }
  }
  if (!any) return fe.value1(x, at);
  auto general = [&] {
    EVal v = fe.widen(read_clamped(fe, x, at, win), lanes);
    EVal f = fe.widen(fill(), lanes);
    return EVal{b.select(windows_valid(fe, at, win), v.v, f.v), dt, lanes};
  };
  if (!fast) return general();
  Value all_ok = b.i1(true);
  for (size_t k = 0; k < win.size(); ++k) {
    if (!win[k]) continue;
    const DimIdx& d = at.dims[k];
    Value v = uniform(d, lanes) ? window_valid(fe, d, *win[k], lanes)
                                : window_all_valid(fe, d, *win[k], lanes);
    all_ok = b.binop(Op::And, all_ok, v);
  }
  ArmValue r(fe, dt, lanes);
  b.if_(all_ok, [&] { r.put(read_plain(fe, x, at, win)); }, [&] { r.put(all_uniform ? fill() : general()); });
  return r.get();
}

// ---- broadcast_in_dim, transpose ----------------------------------------------------------------

// out[i...] = x[j...] with j_k = i_{broadcast_dimensions[k]} (0 where x's dim k has size 1).
std::vector<EVal> broadcast_in_dim(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  const auto bd = broadcast_in_dim_params(e).broadcast_dimensions;
  const Shape& xs = atom_aval(e.inputs[0]).shape;
  std::vector<DimIdx> dims;
  for (size_t k = 0; k < bd.size(); ++k)
    dims.push_back(xs[k] == 1 ? FusionEmitter::affine(fe.b.i64(0)) : at.dims.at(size_t(bd[k])));
  return {fe.value1(e.inputs[0], fe.index(std::move(dims), at.lanes))};
}

// out[i_0, ..., i_{r-1}] = x[j] with j_{perm[k]} = i_k.
std::vector<EVal> transpose(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  const auto perm = transpose_params(e).permutation;
  std::vector<DimIdx> dims(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) dims[size_t(perm[k])] = at.dims.at(k);
  return {fe.value1(e.inputs[0], fe.index(std::move(dims), at.lanes))};
}

// ---- slice, rev, dynamic_slice ------------------------------------------------------------------

// out[i] = x[start + i * stride] per dim (eager: slice_impl's strided copy).
std::vector<EVal> slice(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  const SliceParams sp = slice_params(e);
  const auto& start = sp.start_indices;
  const std::vector<int64_t> strides = sp.strides_or_ones(start.size());
  std::vector<DimIdx> dims;
  for (size_t k = 0; k < start.size(); ++k) {
    DimIdx d = strides[k] == 1 ? at.dims.at(k) : fe.scale(at.dims.at(k), strides[k]);
    dims.push_back(start[k] ? fe.offset(d, fe.b.i64(start[k])) : d);
  }
  return {fe.value1(e.inputs[0], fe.index(std::move(dims), at.lanes))};
}

// out[i] = x[n - 1 - i] along `dimensions`. A vector index whose varying dims are all reversed
// with coef > 0 reads x forwards at the mirrored lanes and reverses the lanes (one shuffle), so a
// contiguous output run stays a vector load.
std::vector<EVal> rev(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  const auto rd = rev_params(e).dimensions;
  const Shape& xs = atom_aval(e.inputs[0]).shape;
  std::vector<bool> reversed(xs.size(), false);
  for (int64_t d : rd) reversed[size_t(d)] = true;
  const int lanes = at.lanes;
  bool mirror = lanes > 1;
  for (size_t k = 0; k < xs.size(); ++k) {
    const DimIdx& d = at.dims[k];
    if (!d.is_affine()) mirror = false;
    else if (d.coef != 0 && !(reversed[k] && d.coef > 0)) mirror = false;
  }
  bool varying = false;
  for (auto& d : at.dims) varying |= !uniform(d, lanes);
  mirror &= varying;
  std::vector<DimIdx> dims;
  kir::Builder& b = fe.b;
  for (size_t k = 0; k < xs.size(); ++k) {
    const DimIdx& d = at.dims[k];
    if (!reversed[k]) {
      dims.push_back(d);
    } else if (mirror && d.coef != 0) {
      // lane l' reads n-1-(base + coef*(lanes-1-l')) = (n-1-base-coef*(lanes-1)) + coef*l'
      dims.push_back(DimIdx{b.sub(b.i64(xs[k] - 1 - d.coef * (lanes - 1)), d.base), d.coef, {}});
    } else {
      dims.push_back(fe.offset(fe.scale(d, -1), b.i64(xs[k] - 1)));
    }
  }
  EVal v = fe.value1(e.inputs[0], fe.index(std::move(dims), lanes));
  if (mirror && v.lanes > 1) {
    std::vector<int> mask;
    for (int l = lanes - 1; l >= 0; --l) mask.push_back(l);
    v.v = b.shuffle(v.v, v.v, mask);
  }
  return {v};
}

// out[i] = x[s + i] with each start s clamped into [0, dim - size] (XLA's rule; eager's
// clamped_starts): i32 starts sign-extended, u32 starts zero-extended.
std::vector<EVal> dynamic_slice(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  const Shape& xs = atom_aval(e.inputs[0]).shape;
  const auto sizes = dynamic_slice_params(e).slice_sizes;
  std::vector<DimIdx> dims;
  for (size_t k = 0; k < xs.size(); ++k) {
    Value s = clamp_i64(fe.b, scalar_index_operand(fe, e.inputs[k + 1]), 0, xs[k] - sizes[k]);
    dims.push_back(fe.offset(at.dims.at(k), s));
  }
  return {fe.value1(e.inputs[0], fe.index(std::move(dims), at.lanes))};
}

// ---- pad, concatenate -----------------------------------------------------------------------------

// out[i] = x[(i - low) / (interior + 1)] where that is an element of x, else the padding value
// (negative low/high crop). Eager: pad_impl (fill, then a strided copy).
std::vector<EVal> pad(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  const Shape& xs = atom_aval(e.inputs[0]).shape;
  const DType dt = atom_aval(e.inputs[0]).dtype;
  auto cfg = pad_params(e).padding_config;
  auto fill = [&] { return fe.value1(e.inputs[1], fe.scalar_index(1)); };
  Windows win(xs.size());
  for (size_t k = 0; k < xs.size(); ++k) {
    if (xs[k] == 0) return {fill()};  // no element of x: all padding
    if (cfg[k].low == 0 && cfg[k].high == 0 && cfg[k].interior == 0) continue;
    win[k] = Window{cfg[k].low, cfg[k].interior + 1, xs[k]};
  }
  return {read_window(fe, e.inputs[0], at, win, dt, fill)};
}

// Operands tile `dimension` in order; a lane reads the operand its index falls in. A uniform
// index (or a vector inside one operand) reads that operand alone, in one arm of a branch chain;
// a vector straddling operands reads each at clamped indices and selects.
std::vector<EVal> concatenate(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  const size_t dim = size_t(concatenate_params(e).dimension);
  const DType dt = e.outputs[0].aval().dtype;
  std::vector<size_t> ops;
  std::vector<int64_t> off;
  int64_t pos = 0;
  for (size_t j = 0; j < e.inputs.size(); ++j) {
    int64_t n = atom_aval(e.inputs[j]).shape[dim];
    if (n > 0) ops.push_back(j), off.push_back(pos);
    pos += n;
  }
  if (ops.empty())
    throw ValueError("concatenate lowering: every operand is empty along dimension " + std::to_string(dim));
  auto win = [&](size_t t) {
    Windows w(at.dims.size());
    w[dim] = Window{off[t], 1, atom_aval(e.inputs[ops[t]]).shape[dim]};
    return w;
  };
  if (ops.size() == 1) {
    std::vector<DimIdx> dims = at.dims;
    dims[dim] = fe.offset(dims[dim], fe.b.i64(-off[0]));
    return {fe.value1(e.inputs[ops[0]], fe.index(std::move(dims), at.lanes))};
  }
  const DimIdx& d = at.dims[dim];
  const int lanes = at.lanes;
  kir::Builder& b = fe.b;
  auto read_in = [&](size_t t) {  // valid only when every lane falls in operand t
    std::vector<DimIdx> dims = at.dims;
    dims[dim] = fe.offset(d, b.i64(-off[t]));
    return fe.value1(e.inputs[ops[t]], fe.index(std::move(dims), lanes));
  };
  auto straddling = [&]() {
    EVal r = fe.widen(read_clamped(fe, e.inputs[ops.back()], at, win(ops.size() - 1)), lanes);
    for (size_t t = ops.size() - 1; t-- > 0;) {
      Windows w = win(t);
      EVal v = fe.widen(read_clamped(fe, e.inputs[ops[t]], at, w), lanes);
      r = EVal{b.select(windows_valid(fe, at, w), v.v, r.v), dt, lanes};
    }
    return r;
  };
  if (!d.is_affine()) return {straddling()};
  const bool uni = uniform(d, lanes);
  ArmValue r(fe, dt, lanes);
  std::function<void(size_t)> chain = [&](size_t t) {
    if (t == ops.size()) return r.put(straddling());  // only reached by straddling vectors
    if (uni && t + 1 == ops.size()) return r.put(read_in(t));
    Window w = *win(t)[dim];
    Value inside = uni ? window_valid(fe, d, w, lanes) : window_all_valid(fe, d, w, lanes);
    b.if_(inside, [&] { r.put(read_in(t)); }, [&] { chain(t + 1); });
  };
  chain(0);
  return {r.get()};
}

// ---- iota, iota_2x32_shape ------------------------------------------------------------------------

// The i64 lanes of d: a scalar when uniform.
Value index_value(FusionEmitter& fe, const DimIdx& d, int lanes) {
  return uniform(d, lanes) ? d.base : fe.dim_vector(d, lanes);
}

// out[i] = i_dimension converted as eager converts an int64 (T(v); bf16: bfloat16(float(v))).
std::vector<EVal> iota(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  const IotaParams ip = iota_params(e);
  const DType dt = ip.dtype;
  Value i = index_value(fe, at.dims.at(size_t(ip.dimension)), at.lanes);
  const int L = fe.b.type(i).lanes;
  Type ct = FusionEmitter::compute_type(dt, L);
  Value v = is_floating(dt) ? fe.b.cast(Op::SIToFP, ct, i) : fe.b.cast(Op::Trunc, ct, i);
  return {EVal{v, dt, L}};  // bf16: value() rounds results to storage precision
}

// (hi, lo) = the high and low 32 bits of the row-major linear index (eager's iota_2x32_shape).
std::vector<EVal> iota_2x32_shape(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  const Shape& s = e.outputs[0].aval().shape;
  Value i = index_value(fe, fe.linear_offset(at, s), at.lanes);
  const int L = fe.b.type(i).lanes;
  Type t = kir::kI32.with_lanes(L);
  Value hi = fe.b.cast(Op::Trunc, t, fe.b.binop(Op::LShr, i, fe.b.splat(fe.b.i64(32), L)));
  Value lo = fe.b.cast(Op::Trunc, t, i);
  return {EVal{hi, DType::u32, L}, EVal{lo, DType::u32, L}};
}

// ---- gather ---------------------------------------------------------------------------------------

// d + start, where start is an i64 scalar or a vector of `lanes` lanes.
DimIdx add_start(FusionEmitter& fe, const DimIdx& d, Value start, int lanes) {
  if (fe.b.type(start).lanes == 1) return fe.offset(d, start);
  return DimIdx{{}, 0, fe.b.add(fe.dim_vector(d, lanes), start)};
}

// The general gather (core/primitives/gather_scatter.cc): the output element's batch position
// reads its index vector from the indices operand (the index vector dim last); each entry starts
// its operand dim (start_index_map), clamped into [0, dim - slice size] so every load stays in
// bounds (CLIP, and PROMISE_IN_BOUNDS as XLA: eager raises IndexError instead); a batching dim
// starts at the batch position; window dims add the output's offset index. FILL_OR_DROP then
// selects the fill value into the lanes whose window is not wholly in bounds, as eager does.
// i32 indices are signed, u32 unsigned.
std::vector<EVal> gather(FusionEmitter& fe, const Eqn& e, const ElemIndex& at) {
  kir::Builder& b = fe.b;
  const ShapedArray& xa = atom_aval(e.inputs[0]);
  const ShapedArray& ia = atom_aval(e.inputs[1]);
  const GatherParams gp = gather_params(e);
  const auto& d = gp.dimension_numbers;
  const bool fill = gp.mode == lax::GatherScatterMode::FILL_OR_DROP;
  auto has = [](const std::vector<int64_t>& v, int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  // The output dims: offset dims (window dims of the operand, in order) and batch dims.
  std::vector<DimIdx> batch;
  std::vector<size_t> window_out;
  for (size_t j = 0; j < at.dims.size(); ++j) {
    if (has(d.offset_dims, int64_t(j))) window_out.push_back(j);
    else batch.push_back(at.dims[j]);
  }
  const size_t r = xa.shape.size();
  std::vector<DimIdx> dims(r);
  std::vector<Value> start(r);
  Value valid;
  const int64_t K = ia.shape.back();
  for (int64_t k = 0; k < K; ++k) {
    std::vector<DimIdx> id = batch;
    id.push_back(FusionEmitter::affine(b.i64(k)));
    EVal iv = fe.value1(e.inputs[1], fe.index(std::move(id), at.lanes));
    const size_t od = size_t(d.start_index_map[size_t(k)]);
    const int64_t hi = xa.shape[od] - gp.slice_sizes[od];
    Value v = index_i64(fe, iv);
    start[od] = clamp_i64(b, v, 0, std::max<int64_t>(hi, 0));
    if (fill) {  // 0 <= v <= hi: one unsigned compare (a negative i64 is a huge unsigned one)
      Value ok = b.icmp(Pred::ult, v, b.splat(b.i64(hi + 1), iv.lanes));
      if (!valid.valid()) valid = ok;
      else {
        const int L = std::max(b.type(valid).lanes, b.type(ok).lanes);
        if (b.type(valid).lanes != L) valid = b.splat(valid, L);
        if (b.type(ok).lanes != L) ok = b.splat(ok, L);
        valid = b.binop(Op::And, valid, ok);
      }
    }
  }
  size_t w = 0;
  for (size_t od = 0; od < r; ++od) {
    auto bi = std::find(d.operand_batching_dims.begin(), d.operand_batching_dims.end(), int64_t(od));
    if (bi != d.operand_batching_dims.end()) {
      dims[od] = batch.at(
          size_t(d.start_indices_batching_dims[size_t(bi - d.operand_batching_dims.begin())]));
      continue;
    }
    const bool collapsed = has(d.collapsed_slice_dims, int64_t(od));
    DimIdx base = collapsed ? FusionEmitter::affine(b.i64(0)) : at.dims.at(window_out.at(w++));
    dims[od] = start[od].valid() ? add_start(fe, base, start[od], at.lanes) : base;
  }
  EVal v = fe.value1(e.inputs[0], fe.index(std::move(dims), at.lanes));
  if (!fill || !valid.valid()) return {v};
  const int lanes = std::max(v.lanes, b.type(valid).lanes);
  v = fe.widen(v, lanes);
  if (b.type(valid).lanes != lanes) valid = b.splat(valid, lanes);
  EVal f = fe.constant(xa.dtype, lax::gather_fill(xa.dtype, gp.fill_value), lanes);
  return {EVal{b.select(valid, v.v, f.v), xa.dtype, lanes}};
}

const RegisterElemental r_bcast("broadcast_in_dim", broadcast_in_dim);
const RegisterElemental r_transpose("transpose", transpose);
const RegisterElemental r_slice("slice", slice);
const RegisterElemental r_rev("rev", rev);
const RegisterElemental r_dynamic_slice("dynamic_slice", dynamic_slice);
const RegisterElemental r_pad("pad", pad);
const RegisterElemental r_concatenate("concatenate", concatenate);
const RegisterElemental r_iota("iota", iota);
const RegisterElemental r_iota_2x32("iota_2x32_shape", iota_2x32_shape);
const RegisterElemental r_gather("gather", gather);

}  // namespace

}  // namespace minijax::lower
