// minijax loop nest of conv_general_dilated: any dimension numbers, strides, padding, dilations and
// groups, as a kernel vectorized along the output's innermost dimension and parallel over the rest.
#include <algorithm>
#include <array>

#include "core/errors.h"
#include "core/views/windowed.h"
#include "jit/codegen/lower/window_loops.h"
#include "jit/codegen/lower/window_loops_util.h"

namespace minijax::lower {

using kir::Value;
using window::WinDim;

namespace {

// What an output dimension (or the vectorized loop) indexes: the batch n, the feature group g, the
// feature j within its group (feature f = g * Og + j), or spatial dimension `d`.
enum class Var { n, g, j, spatial };

struct Geom {
  DType in_dt, out_dt, acc_dt;
  size_t S = 0;
  int64_t Nout = 1, Cg = 1, GC = 1, Og = 1;
  std::vector<WinDim> sp;                   // per spatial dim: X input, Y output, K kernel, ...
  int64_t sl_n = 0, sl_c = 0, grp_lhs = 0;  // lhs strides of batch, feature, and of one group
  std::vector<int64_t> sl_sp, sr_sp, so_sp;
  int64_t sr_o = 0, sr_i = 0, so_n = 0, so_f = 0;
  Shape out_shape;
  std::vector<int64_t> out_dims;  // out_spec: batch, feature, spatial...
  std::vector<int64_t> red_order;  // the reduction loops, outermost first: -1 = input feature c, d = spatial d
};

Geom geometry(const Eqn& e) {
  const ConvParams cp = conv_params(e);
  const ShapedArray& la = atom_aval(e.inputs.at(0));
  const ShapedArray& ra = atom_aval(e.inputs.at(1));
  const ShapedArray& oa = e.outputs.at(0).aval();
  Geom g;
  g.in_dt = la.dtype;
  g.out_dt = oa.dtype;
  g.acc_dt = window::accumulator_dtype(la.dtype, oa.dtype);
  g.S = size_t(cp.num_spatial());
  const auto sl = strides_of(la.shape), sr = strides_of(ra.shape), so = strides_of(oa.shape);
  const int64_t N = la.shape[size_t(cp.lhs_spec[0])], O = ra.shape[size_t(cp.rhs_spec[0])];
  const int64_t B = cp.batch_group_count, G = cp.feature_group_count;
  g.Cg = ra.shape[size_t(cp.rhs_spec[1])];
  g.GC = B * G;
  g.Og = g.GC > 0 ? O / g.GC : O;
  g.Nout = oa.shape[size_t(cp.out_spec[0])];
  g.sl_n = sl[size_t(cp.lhs_spec[0])];
  g.sl_c = sl[size_t(cp.lhs_spec[1])];
  g.grp_lhs = B > 1 ? (N / B) * g.sl_n : G > 1 ? g.Cg * g.sl_c : 0;
  g.sr_o = sr[size_t(cp.rhs_spec[0])];
  g.sr_i = sr[size_t(cp.rhs_spec[1])];
  g.so_n = so[size_t(cp.out_spec[0])];
  g.so_f = so[size_t(cp.out_spec[1])];
  for (size_t d = 0; d < g.S; ++d) {
    const size_t ld = size_t(cp.lhs_spec[2 + d]), rd = size_t(cp.rhs_spec[2 + d]), od = size_t(cp.out_spec[2 + d]);
    g.sp.push_back(WinDim{la.shape[ld], oa.shape[od], ra.shape[rd], cp.window_strides[d], cp.pad_lo(int64_t(d)),
                          cp.lhs_dilation[d], cp.rhs_dilation[d]});
    g.sl_sp.push_back(sl[ld]);
    g.sr_sp.push_back(sr[rd]);
    g.so_sp.push_back(so[od]);
  }
  g.out_shape = oa.shape;
  g.out_dims = cp.out_spec;
  // Reduction loops in the input's memory order (the innermost reads the input most contiguously).
  g.red_order.push_back(-1);
  for (size_t d = 0; d < g.S; ++d) g.red_order.push_back(int64_t(d));
  auto lhs_stride = [&](int64_t v) { return v < 0 ? g.sl_c : g.sl_sp[size_t(v)]; };
  std::stable_sort(g.red_order.begin(), g.red_order.end(),
                   [&](int64_t a, int64_t b) { return lhs_stride(a) > lhs_stride(b); });
  return g;
}

// The register block: `kBlock` outputs of one more index (output features j, or batch n) are
// computed together, sharing the loads of the operand that does not depend on that index.
constexpr int64_t kBlock = 4;

// One output point: its indices; which of them (if any) runs along `lanes` lanes; which runs
// over `reps` consecutive values (the register block; reps == 1: none).
struct Point {
  Value n, g, j;
  std::vector<Value> y;
  Var vec = Var::n;
  size_t vec_d = 0;
  int lanes = 1;
  Var blk = Var::n;
  int64_t reps = 1;
};

struct Ctx {
  kir::Builder& b;
  FusionEmitter& fe;
  const Geom& g;
  Value lhs, rhs, out;
};

// The (lhs, rhs, out) offset steps of one unit of index v (spatial: of output position y_d, whose
// taps all lie inside the input).
std::array<int64_t, 3> steps(const Geom& g, Var v, size_t d) {
  switch (v) {
    case Var::n: return {g.sl_n, 0, g.so_n};
    case Var::g: return {g.grp_lhs, g.Og * g.sr_o, g.Og * g.so_f};
    case Var::j: return {0, g.sr_o, g.so_f};
    case Var::spatial: return {g.sp[d].s * g.sl_sp[d], 0, g.so_sp[d]};
  }
  return {0, 0, 0};
}

Value mul_c(kir::Builder& b, Value v, int64_t c) { return c == 1 ? v : b.mul(v, b.i64(c)); }
Value add_c(kir::Builder& b, Value v, int64_t c) { return c == 0 ? v : b.add(v, b.i64(c)); }

// The spatial taps' bases (y*s - lo) and bounds of one point, computed before the reduction loops.
struct Taps {
  std::vector<Value> base, first, last;
  std::vector<bool> full;
};

Taps point_taps(Ctx& c, const Point& p) {
  Taps t;
  for (size_t d = 0; d < c.g.S; ++d) {
    const WinDim& w = c.g.sp[d];
    Value base = c.b.sub(mul_c(c.b, p.y[d], w.s), c.b.i64(w.lo));
    const bool full = (p.lanes > 1 && p.vec == Var::spatial && p.vec_d == d) || w.full();
    t.base.push_back(base);
    t.full.push_back(full);
    if (full) {
      t.first.push_back(c.b.i64(0));
      t.last.push_back(c.b.i64(w.K));
    } else {
      auto [k0, k1] = window::tap_range(c.b, w, base);
      t.first.push_back(k0);
      t.last.push_back(k1);
    }
  }
  return t;
}

// What the reduction loops of one point share: the lanes' and the block's offset steps and the
// accumulators (one slot per block member).
struct Reduction {
  const Point& p;
  const Taps& t;
  std::array<int64_t, 3> lane, blk;
  std::vector<Value> acc;
};

// acc[r] += lhs * rhs for every block member r, at lhs/rhs offsets lo/ro of member 0.
void multiply_add(Ctx& c, const Reduction& R, Value lo, Value ro) {
  kir::Builder& b = c.b;
  const Geom& g = c.g;
  const int lanes = R.p.lanes;
  const kir::Type at = FusionEmitter::compute_type(g.acc_dt, lanes);
  auto load = [&](Value ptr, Value off, int64_t lane_step) {
    return window::convert_compute(b, window::load_lanes(c.fe, g.in_dt, ptr, DimIdx{off, lane_step, {}}, lanes), g.acc_dt);
  };
  EVal a0 = load(c.lhs, lo, R.lane[0]), w0 = load(c.rhs, ro, R.lane[1]);
  for (int64_t r = 0; r < R.p.reps; ++r) {
    EVal a = r == 0 || R.blk[0] == 0 ? a0 : load(c.lhs, add_c(b, lo, r * R.blk[0]), R.lane[0]);
    EVal w = r == 0 || R.blk[1] == 0 ? w0 : load(c.rhs, add_c(b, ro, r * R.blk[1]), R.lane[1]);
    Value acc = b.load(at, R.acc[size_t(r)], b.i64(0));
    b.store(R.acc[size_t(r)], b.i64(0), at.is_float() ? b.fadd(acc, b.fmul(a.v, w.v)) : b.add(acc, b.mul(a.v, w.v)));
  }
}

// The reduction loops from red_order[level] in, at lhs/rhs offsets lo/ro.
void reduce(Ctx& c, const Reduction& R, size_t level, Value lo, Value ro) {
  kir::Builder& b = c.b;
  const Geom& g = c.g;
  if (level == g.red_order.size()) return multiply_add(c, R, lo, ro);
  const int64_t v = g.red_order[level];
  if (v < 0) {
    if (g.Cg == 1) return reduce(c, R, level + 1, lo, ro);
    b.for_(b.i64(0), b.i64(g.Cg), b.i64(1), [&](Value ci) {
      reduce(c, R, level + 1, b.add(lo, mul_c(b, ci, g.sl_c)), b.add(ro, mul_c(b, ci, g.sr_i)));
    });
    return;
  }
  const size_t d = size_t(v);
  const WinDim& w = g.sp[d];
  auto tap = [&](Value k) {
    Value q = b.add(R.t.base[d], mul_c(b, k, w.wd));
    Value ro2 = b.add(ro, mul_c(b, k, g.sr_sp[d]));
    if (w.bd == 1) return reduce(c, R, level + 1, b.add(lo, mul_c(b, q, g.sl_sp[d])), ro2);
    b.if_(b.icmp(kir::Pred::eq, b.binop(kir::Op::SRem, q, b.i64(w.bd)), b.i64(0)), [&] {
      Value x = b.binop(kir::Op::SDiv, q, b.i64(w.bd));
      reduce(c, R, level + 1, b.add(lo, mul_c(b, x, g.sl_sp[d])), ro2);
    });
  };
  if (R.t.full[d] && w.K == 1) return tap(b.i64(0));
  b.for_(R.t.first[d], R.t.last[d], b.i64(1), tap);
}

void point(Ctx& c, const Point& p) {
  kir::Builder& b = c.b;
  const Geom& g = c.g;
  const Taps t = point_taps(c, p);
  Reduction R{p, t, p.lanes > 1 ? steps(g, p.vec, p.vec_d) : std::array<int64_t, 3>{0, 0, 0},
              p.reps > 1 ? steps(g, p.blk, 0) : std::array<int64_t, 3>{0, 0, 0}, {}};
  Value f = b.add(mul_c(b, p.g, g.Og), p.j);
  Value lo = b.add(mul_c(b, p.n, g.sl_n), mul_c(b, p.g, g.grp_lhs));
  Value ro = mul_c(b, f, g.sr_o);
  Value oo = b.add(mul_c(b, p.n, g.so_n), mul_c(b, f, g.so_f));
  for (size_t d = 0; d < g.S; ++d) oo = b.add(oo, mul_c(b, p.y[d], g.so_sp[d]));
  const EVal zero = c.fe.constant_int(g.acc_dt, 0, p.lanes);
  for (int64_t r = 0; r < p.reps; ++r) {
    R.acc.push_back(b.stack_slot(b.type(zero.v)));
    b.store(R.acc.back(), b.i64(0), zero.v);
  }
  reduce(c, R, 0, lo, ro);
  for (int64_t r = 0; r < p.reps; ++r) {
    EVal v{b.load(b.type(zero.v), R.acc[size_t(r)], b.i64(0)), g.acc_dt, p.lanes};
    v = is_floating(g.out_dt) ? window::convert_compute(b, v, g.out_dt) : EVal{v.v, g.out_dt, v.lanes};
    c.fe.store(c.out, DimIdx{add_c(b, oo, r * R.blk[2]), R.lane[2], {}}, v);
  }
}

// The innermost output dimension (role `dim`: batch, feature, or spatial d) for the indices `p`
// already set: vectors where they fit (and, spatially, where every tap is inside the input).
void innermost(Ctx& c, Point p, int64_t dim, int lanes) {
  kir::Builder& b = c.b;
  const Geom& g = c.g;
  auto run = [&](Var v, size_t d, Value i, int l) {
    Point q = p;
    q.vec = v;
    q.vec_d = d;
    q.lanes = l;
    if (v == Var::n) q.n = i;
    else if (v == Var::g) q.g = i;
    else if (v == Var::j) q.j = i;
    else q.y[d] = i;
    point(c, q);
  };
  if (dim == 0) return window::vector_steps(b, 0, g.Nout, lanes, true, [&](Value i, int l) { run(Var::n, 0, i, l); });
  if (dim == 1) {
    if (g.Og == 1 && g.GC > 1) {
      p.j = b.i64(0);
      return window::vector_steps(b, 0, g.GC, lanes, true, [&](Value i, int l) { run(Var::g, 0, i, l); });
    }
    auto js = [&](Value gi) {
      p.g = gi;
      window::vector_steps(b, 0, g.Og, lanes, true, [&](Value i, int l) { run(Var::j, 0, i, l); });
    };
    if (g.GC == 1) return js(b.i64(0));
    b.for_(b.i64(0), b.i64(g.GC), b.i64(1), js);
    return;
  }
  const size_t d = size_t(dim - 2);
  const WinDim& w = g.sp[d];
  auto [first, last] = lanes > 1 ? w.interior() : std::pair<int64_t, int64_t>{0, 0};
  if (last - first < lanes) first = last = 0;
  auto scalar = [&](int64_t lo, int64_t hi) {
    if (lo < hi) b.for_(b.i64(lo), b.i64(hi), b.i64(1), [&](Value i) { run(Var::spatial, d, i, 1); });
  };
  scalar(0, first);
  window::vector_steps(b, first, last, lanes, true, [&](Value i, int l) { run(Var::spatial, d, i, l); });
  scalar(std::max(first, last), w.Y);
}

// The role of out_spec entry k: 0 batch, 1 feature, 2 + d spatial d; for each dim of the output.
std::vector<int64_t> out_roles(const Geom& g) {
  std::vector<int64_t> role(g.out_shape.size());
  for (size_t k = 0; k < g.out_dims.size(); ++k) role[size_t(g.out_dims[k])] = int64_t(k);
  return role;
}

// The kernel's loops: its outer index runs over the output's dims but the innermost, the block
// index (output features j within their group, or the batch) counted in blocks of kBlock.
struct Plan {
  std::vector<int64_t> role, outer;
  int64_t blk_role = -1;  // 0: batch blocked, 1: features j blocked, -1: none
  int lanes = 1;
};

Plan plan(const Geom& g) {
  Plan pl;
  pl.role = out_roles(g);
  pl.lanes = FusionEmitter::native_lanes(g.acc_dt);
  const int64_t inner = pl.role.back();
  if (inner != 1 && g.Og >= kBlock) pl.blk_role = 1;  // lanes along the batch or a spatial dim: block features
  else if (inner == 1 && g.Nout >= kBlock) pl.blk_role = 0;  // lanes along the features: block images
  for (size_t k = 0; k + 1 < pl.role.size(); ++k) {
    int64_t ext = g.out_shape[k];
    if (pl.role[k] == pl.blk_role) ext = pl.blk_role == 0 ? (g.Nout + kBlock - 1) / kBlock : g.GC * ((g.Og + kBlock - 1) / kBlock);
    pl.outer.push_back(ext);
  }
  return pl;
}

void kernel_body(kir::Builder& b, const Geom& g, const std::vector<Value>& ptrs, Value begin, Value end) {
  FusionEmitter fe(b, window::no_body(), {});
  Ctx c{b, fe, g, ptrs[0], ptrs[1], ptrs[2]};
  const Plan pl = plan(g);
  const int64_t nblk = (g.Og + kBlock - 1) / kBlock;
  b.for_(begin, end, b.i64(1), [&](Value o) {
    std::vector<Value> idx = window::decode_index(b, o, pl.outer);
    Point p;
    p.n = p.g = p.j = b.i64(0);
    p.y.assign(g.S, b.i64(0));
    for (size_t k = 0; k < idx.size(); ++k) {
      const int64_t role = pl.role[k];
      if (role == 0) {
        p.n = pl.blk_role == 0 ? mul_c(b, idx[k], kBlock) : idx[k];
      } else if (role == 1 && pl.blk_role == 1) {  // feature block: g = idx / nblk, j = (idx % nblk) * kBlock
        p.g = nblk == 1 ? idx[k] : b.binop(kir::Op::UDiv, idx[k], b.i64(nblk));
        p.j = mul_c(b, nblk == 1 ? b.i64(0) : b.binop(kir::Op::URem, idx[k], b.i64(nblk)), kBlock);
      } else if (role == 1) {  // feature f = g * Og + j
        p.g = g.Og == 1 ? idx[k] : g.GC == 1 ? b.i64(0) : b.binop(kir::Op::UDiv, idx[k], b.i64(g.Og));
        p.j = g.Og == 1 ? b.i64(0) : g.GC == 1 ? idx[k] : b.binop(kir::Op::URem, idx[k], b.i64(g.Og));
      } else {
        p.y[size_t(role - 2)] = idx[k];
      }
    }
    if (pl.blk_role < 0) return innermost(c, p, pl.role.back(), pl.lanes);
    // A whole block, or the last one's members one at a time.
    const Var bv = pl.blk_role == 0 ? Var::n : Var::j;
    const int64_t ext = pl.blk_role == 0 ? g.Nout : g.Og;
    Value start = pl.blk_role == 0 ? p.n : p.j;
    auto whole = [&] {
      Point q = p;
      q.blk = bv;
      q.reps = kBlock;
      innermost(c, q, pl.role.back(), pl.lanes);
    };
    if (ext % kBlock == 0) return whole();
    b.if_(b.icmp(kir::Pred::sle, b.i64(0), b.sub(b.i64(ext - kBlock), start)), whole, [&] {
      b.for_(start, b.i64(ext), b.i64(1), [&](Value i) {
        Point q = p;
        (bv == Var::n ? q.n : q.j) = i;
        innermost(c, q, pl.role.back(), pl.lanes);
      });
    });
  });
}

}  // namespace

void emit_conv_loop_nest(ProgramEmitter& pe, const Eqn& e, const std::string& reason) {
  const Geom g = geometry(e);
  const ShapedArray& oa = e.outputs.at(0).aval();
  const ConvParams cp = conv_params(e);
  std::string text = atom_aval(e.inputs.at(0)).str() + " * " + atom_aval(e.inputs.at(1)).str() + " -> " + oa.str() + ", " +
                     window::window_text(g.sp, cp.padding, true);
  if (cp.feature_group_count > 1) text += " feature groups " + std::to_string(cp.feature_group_count);
  if (cp.batch_group_count > 1) text += " batch groups " + std::to_string(cp.batch_group_count);
  if (oa.size() > 0) {
    int64_t taps = g.Cg;
    for (auto& w : g.sp) taps *= w.K;
    const Plan pl = plan(g);
    int64_t outer = 1;
    for (int64_t x : pl.outer) outer *= x;
    const int64_t reps = pl.blk_role < 0 ? 1 : kBlock;
    const window::KernelCall call{"conv_loop", outer, oa.shape.back() * reps * std::max<int64_t>(1, taps)};
    const int64_t inner = pl.role.back();
    text += "; " + std::to_string(pl.lanes) + " lanes along the output's " +
            (inner == 0 ? std::string("batch") : inner == 1 ? std::string("features") : "spatial dim " + std::to_string(inner - 2));
    if (pl.blk_role >= 0) text += std::string(", blocks of ") + std::to_string(kBlock) + (pl.blk_role == 0 ? " images" : " features");
    const std::vector<Value> addrs{pe.addr(e.inputs[0]), pe.addr(e.inputs[1]), pe.addr(e.outputs[0])};
    text += "; " + window::emit_loop_kernel(pe, e, call, addrs,
                                            [&](kir::Builder& b, const std::vector<Value>& ptrs, Value begin, Value end) {
                                              kernel_body(b, g, ptrs, begin, end);
                                            });
  }
  pe.note(e, "loop nest", reason.empty() ? text : text + " (" + reason + ")");
}

}  // namespace minijax::lower
