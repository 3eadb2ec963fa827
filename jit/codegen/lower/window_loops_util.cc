// minijax loop nests of the windowed primitives: the shared kernel emission and parallel call,
// window geometry (interior, tap bounds), index decoding and accumulator helpers.
#include "jit/codegen/lower/window_loops_util.h"

#include <algorithm>

#include "core/errors.h"

namespace minijax::lower::window {

using kir::Op;
using kir::Pred;
using kir::Value;

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

const Jaxpr& no_body() {
  static const Jaxpr j;
  return j;
}

std::pair<int64_t, int64_t> WinDim::interior() const {
  const int64_t xd = dilated();
  if (bd != 1 || xd == 0 || Y == 0) return {0, 0};
  const int64_t first = std::min(Y, std::max<int64_t>(0, ceil_div(lo, s)));
  const int64_t last = std::min(Y, floor_div(xd - 1 + lo - (K - 1) * wd, s) + 1);
  return {first, std::max(first, last)};
}

bool WinDim::full() const {
  if (Y == 0) return true;
  return bd == 1 && interior() == std::pair<int64_t, int64_t>{0, Y};
}

std::pair<Value, Value> tap_range(kir::Builder& b, const WinDim& w, Value base) {
  const int64_t xd = w.dilated();
  if (xd == 0) return {b.i64(0), b.i64(0)};
  auto smax = [&](Value x, int64_t c) { return b.intrinsic("smax", kir::kI64, {x, b.i64(c)}); };
  auto smin = [&](Value x, int64_t c) { return b.intrinsic("smin", kir::kI64, {x, b.i64(c)}); };
  auto div = [&](Value x) { return w.wd == 1 ? x : b.binop(Op::SDiv, x, b.i64(w.wd)); };
  // q = base + k*wd >= 0  <=>  k >= ceil(-base / wd)
  Value first = div(b.add(smax(b.sub(b.i64(0), base), 0), b.i64(w.wd - 1)));
  // q <= xd - 1  <=>  k <= floor((xd - 1 - base) / wd), i.e. k < floor((xd - 1 - base + wd) / wd)
  Value last = smin(div(smax(b.sub(b.i64(xd - 1 + w.wd), base), 0)), w.K);
  return {first, last};
}

std::vector<Value> decode_index(kir::Builder& b, Value o, const std::vector<int64_t>& extents) {
  std::vector<Value> idx(extents.size());
  for (size_t d = extents.size(); d-- > 0;) {
    if (d == 0) {
      idx[d] = o;
      break;
    }
    idx[d] = extents[d] == 1 ? b.i64(0) : b.binop(Op::URem, o, b.i64(extents[d]));
    if (extents[d] != 1) o = b.binop(Op::UDiv, o, b.i64(extents[d]));
  }
  return idx;
}

void vector_steps(kir::Builder& b, int64_t lo, int64_t hi, int lanes, bool overlap,
                  const std::function<void(Value, int)>& point) {
  if (hi <= lo) return;
  int64_t vend = lo;
  if (lanes > 1 && hi - lo >= lanes) {
    vend = lo + (hi - lo) / lanes * lanes;
    if (vend - lo == lanes) point(b.i64(lo), lanes);
    else b.for_(b.i64(lo), b.i64(vend), b.i64(lanes), [&](Value y) { point(y, lanes); });
    if (vend < hi && overlap) return point(b.i64(hi - lanes), lanes);
  }
  if (vend < hi) b.for_(b.i64(vend), b.i64(hi), b.i64(1), [&](Value y) { point(y, 1); });
}

DType accumulator_dtype(DType in, DType out) {
  if (in == DType::bool_) return DType::bool_;
  if (is_floating(in) || is_floating(out)) return in == DType::f64 || out == DType::f64 ? DType::f64 : DType::f32;
  return in;
}

EVal convert_compute(kir::Builder& b, EVal v, DType to) {
  const kir::Type from_t = FusionEmitter::compute_type(v.dtype, v.lanes);
  const kir::Type to_t = FusionEmitter::compute_type(to, v.lanes);
  if (from_t == to_t) return EVal{v.v, to, v.lanes};
  if (from_t.s == kir::Scalar::f32 && to_t.s == kir::Scalar::f64) return EVal{b.cast(Op::FPExt, to_t, v.v), to, v.lanes};
  if (from_t.s == kir::Scalar::f64 && to_t.s == kir::Scalar::f32) return EVal{b.cast(Op::FPTrunc, to_t, v.v), to, v.lanes};
  throw TypeError(std::string("window loop nest: no conversion from ") + dtype_name(v.dtype) + " to " + dtype_name(to));
}

EVal load_lanes(FusionEmitter& fe, DType dt, Value ptr, const DimIdx& off, int lanes) {
  // A small stride: the elements the lanes span, loaded contiguously (no further), then every
  // coef-th kept, which the CPU does far faster than a gather.
  if (lanes > 1 && off.is_affine() && off.coef >= 2 && off.coef <= 4) {
    const int span = int(off.coef) * (lanes - 1) + 1;
    EVal wide = fe.load(dt, ptr, DimIdx{off.base, 1, {}}, span);
    std::vector<int> mask;
    for (int l = 0; l < lanes; ++l) mask.push_back(l * int(off.coef));
    return EVal{fe.b.shuffle(wide.v, wide.v, mask), dt, lanes};
  }
  return fe.widen(fe.load(dt, ptr, off, lanes), lanes);
}

std::vector<Value> acc_slots(kir::Builder& b, const std::vector<EVal>& init) {
  std::vector<Value> slots;
  for (const EVal& v : init) {
    Value s = b.stack_slot(b.type(v.v));
    b.store(s, b.i64(0), v.v);
    slots.push_back(s);
  }
  return slots;
}

std::vector<EVal> load_acc(kir::Builder& b, const std::vector<Value>& slots, const std::vector<EVal>& like) {
  std::vector<EVal> r;
  for (size_t i = 0; i < slots.size(); ++i)
    r.push_back(EVal{b.load(b.type(like[i].v), slots[i], b.i64(0)), like[i].dtype, like[i].lanes});
  return r;
}

void store_acc(kir::Builder& b, const std::vector<Value>& slots, const std::vector<EVal>& v) {
  for (size_t i = 0; i < slots.size(); ++i) b.store(slots[i], b.i64(0), v[i].v);
}

std::string window_text(const std::vector<WinDim>& dims, const std::vector<int64_t>& padding, bool conv) {
  auto list = [&](auto get) {
    std::string s = "(";
    for (size_t d = 0; d < dims.size(); ++d) s += (d ? ", " : "") + std::to_string(get(dims[d]));
    return s + (dims.size() == 1 ? ",)" : ")");
  };
  std::string t = (conv ? "kernel " : "window ") + list([](const WinDim& w) { return w.K; }) + " strides " +
                  list([](const WinDim& w) { return w.s; }) + " padding (";
  for (size_t d = 0; d < dims.size(); ++d)
    t += (d ? ", " : "") + std::string("(") + std::to_string(padding[2 * d]) + ", " + std::to_string(padding[2 * d + 1]) + ")";
  t += ")";
  bool bd = false, wd = false;
  for (auto& w : dims) {
    bd |= w.bd != 1;
    wd |= w.wd != 1;
  }
  if (bd) t += (conv ? " lhs dilation " : " base dilation ") + list([](const WinDim& w) { return w.bd; });
  if (wd) t += (conv ? " rhs dilation " : " window dilation ") + list([](const WinDim& w) { return w.wd; });
  return t;
}

std::string emit_loop_kernel(ProgramEmitter& pe, const Eqn& e, const KernelCall& k, const std::vector<Value>& addrs,
                             const KernelBody& body) {
  const std::string name = pe.fresh_name(k.stem);
  kir::Function f;
  f.name = name;
  f.params = {kir::kPtr, kir::kI64, kir::kI64};
  f.param_names = {"bufs", "begin", "end"};
  f.linkage = kir::Linkage::internal;
  {
    kir::Builder kb(f);
    Value bufs = kb.arg(0), begin = kb.arg(1), end = kb.arg(2);
    std::vector<Value> ptrs;
    for (size_t i = 0; i < addrs.size(); ++i) ptrs.push_back(kb.load(kir::kPtr, bufs, kb.i64(int64_t(i))));
    body(kb, ptrs, begin, end);
    kb.ret();
  }
  // As call_fusion: large kernels are split across threads in chunks of about 2^14 steps.
  constexpr int64_t kParallelWork = int64_t(1) << 16, kGrainWork = int64_t(1) << 14;
  const int64_t work = std::max<int64_t>(1, k.work_per_outer);
  const bool parallel = k.outer > 1 && double(k.outer) * double(work) >= double(kParallelWork);
  f.unroll_loops = parallel;
  f.comment = e.primitive->name + " loop nest over " + std::to_string(k.outer) + " outer indices";
  pe.module.functions.push_back(std::move(f));

  kir::Builder& b = pe.b;
  Value bufs = b.function_stack_slot(kir::kPtr, int64_t(addrs.size()));
  for (size_t i = 0; i < addrs.size(); ++i) b.store(bufs, b.i64(int64_t(i)), addrs[i]);
  const int32_t site = int32_t(pe.kernel_sites.size());
  profiler::detail::Args args;
  args.add("primitive", e.primitive->name).add("kind", "loop nest").add("outer", k.outer);
  args.add("work_per_outer", work).add("parallel", parallel);
  pe.kernel_sites.push_back({name, args.take()});
  pe.call_runtime("mj_rt_kernel_begin", kir::kVoid, {kir::kI32}, {b.i32(site)});
  if (parallel) {
    const int64_t grain = std::max<int64_t>(1, kGrainWork / work);
    pe.call_runtime("mj_rt_parallel_for", kir::kVoid, {kir::kPtr, kir::kPtr, kir::kI64, kir::kI64},
                    {b.func_addr(name), bufs, b.i64(k.outer), b.i64(grain)});
  } else {
    b.call(name, kir::kVoid, {bufs, b.i64(0), b.i64(k.outer)});
  }
  pe.call_runtime("mj_rt_kernel_end", kir::kVoid, {kir::kI32}, {b.i32(site)});
  return name + " over " + std::to_string(k.outer) + " outer indices" + (parallel ? " parallel" : "");
}

}  // namespace minijax::lower::window
