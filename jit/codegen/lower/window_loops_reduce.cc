// minijax loop nests of the windowed reductions: reduce_window_sum/max/min, the generic reduce_window
// (its body emitted on scalars by the elemental rules), select_and_gather_add, select_and_scatter_add.
#include <cmath>
#include <cstdint>

#include "core/errors.h"
#include "core/views/control_flow.h"
#include "core/views/windowed.h"
#include "jit/codegen/lower/window_loops.h"
#include "jit/codegen/lower/window_loops_util.h"

namespace minijax::lower {

using kir::Op;
using kir::Pred;
using kir::Value;
using window::WindowNest;
using window::WindowOps;
using window::WinDim;

namespace {

// The window nest of params `wp` from operand shape xs to output shape ys; rank 0 is one trivial dim.
WindowNest nest_of(const WindowParams& wp, const Shape& xs, const Shape& ys) {
  WindowNest w;
  for (size_t d = 0; d < xs.size(); ++d)
    w.dims.push_back(WinDim{xs[d], ys[d], wp.window_dimensions[d], wp.window_strides[d], wp.pad_lo(int64_t(d)),
                            wp.base_dilation[d], wp.window_dilation[d]});
  if (w.dims.empty()) w.dims.push_back(WinDim{});
  w.parallel_dims = w.dims.size() - 1;
  return w;
}

std::string shapes_text(const Eqn& e, const WindowNest& w, const WindowParams& wp) {
  std::string in, out;
  for (auto& a : e.inputs) in += (in.empty() ? "" : ", ") + atom_aval(a).str();
  for (auto& o : e.outputs) out += (out.empty() ? "" : ", ") + o.aval().str();
  std::vector<int64_t> pad = wp.padding;
  if (pad.empty()) pad = {0, 0};
  return in + " -> " + out + ", " + window::window_text(w.dims, pad);
}

using Monoid = WindowMonoid;

// The note of a loop nest: what it computes, and why it is one when the caller says.
std::string with_reason(std::string text, const std::string& reason) {
  return reason.empty() ? text : text + " (" + reason + ")";
}

EVal identity(FusionEmitter& fe, DType d, Monoid m, int lanes) {
  if (m == Monoid::sum) return fe.constant_int(d, 0, lanes);
  const bool mx = m == Monoid::max;
  switch (d) {
    case DType::bool_: return fe.constant_int(d, mx ? 0 : 1, lanes);
    case DType::i32: return fe.constant_int(d, mx ? INT32_MIN : INT32_MAX, lanes);
    case DType::u32: return fe.constant_int(d, mx ? 0 : int64_t(UINT32_MAX), lanes);
    default: return fe.constant(d, mx ? -INFINITY : INFINITY, lanes);
  }
}

// acc (+) x: sums wrap for integers (bool: or); max/min propagate NaN as lax.max/min.
EVal combine(FusionEmitter& fe, Monoid m, EVal a, EVal x) {
  fe.match_lanes(a, x);
  kir::Builder& b = fe.b;
  const bool fl = is_floating(a.dtype);
  if (m == Monoid::sum) {
    Value r = a.dtype == DType::bool_ ? b.binop(Op::Or, a.v, x.v) : fl ? b.fadd(a.v, x.v) : b.add(a.v, x.v);
    return {r, a.dtype, a.lanes};
  }
  const bool mx = m == Monoid::max;
  if (fl) {
    Value x_wins = b.fcmp(mx ? Pred::fugt : Pred::fult, x.v, a.v);  // x NaN, or x beats a (a not NaN)
    Value a_nan = b.fcmp(Pred::funo, a.v, a.v);
    return {b.select(a_nan, a.v, b.select(x_wins, x.v, a.v)), a.dtype, a.lanes};
  }
  const bool uns = a.dtype == DType::u32 || a.dtype == DType::bool_;
  Value x_wins = b.icmp(mx ? (uns ? Pred::ugt : Pred::sgt) : (uns ? Pred::ult : Pred::slt), x.v, a.v);
  return {b.select(x_wins, x.v, a.v), a.dtype, a.lanes};
}

// Whether a window's selection `sel` (none yet where `none`) moves to a later element x, as eager's
// select_in_window: the first element is taken; then x is taken when sel is not NaN and x is NaN
// or beats it (x > sel for "ge", x < sel for "le"), so ties and NaNs keep the first.
Value takes(kir::Builder& b, bool ge, Value none, const EVal& sel, const EVal& x) {
  Value beats;
  if (is_floating(sel.dtype)) {
    Value sel_num = b.fcmp(Pred::ford, sel.v, sel.v);
    beats = b.binop(Op::And, sel_num, b.fcmp(ge ? Pred::fugt : Pred::fult, x.v, sel.v));
  } else {
    const bool uns = sel.dtype == DType::u32 || sel.dtype == DType::bool_;
    beats = b.icmp(ge ? (uns ? Pred::ugt : Pred::sgt) : (uns ? Pred::ult : Pred::slt), x.v, sel.v);
  }
  return b.binop(Op::Or, none, beats);
}

// select_prim is "ge" or "le" (the view checks it): whether it selects the maximum.
bool selects_max(const SelectAndWindowParams& sp) { return sp.select_prim.at(0) == 'g'; }

void lower_monoid(ProgramEmitter& pe, const Eqn& e, Monoid m, const std::string& reason) {
  const WindowParams wp = reduce_window_monoid_params(e).window;
  const ShapedArray& xa = atom_aval(e.inputs.at(0));
  const ShapedArray& ya = e.outputs.at(0).aval();
  WindowNest w = nest_of(wp, xa.shape, ya.shape);
  const DType dt = xa.dtype;
  w.lanes = FusionEmitter::native_lanes(dt);
  std::string text = shapes_text(e, w, wp);
  if (ya.size() > 0) {
    const window::KernelCall call{"reduce_window_loop", w.outer(), w.work_per_outer()};
    text += "; " + window::emit_loop_kernel(pe, e, call, {pe.addr(e.inputs[0]), pe.addr(e.outputs[0])},
                                            [&](kir::Builder& b, const std::vector<Value>& ptrs, Value begin, Value end) {
      FusionEmitter fe(b, window::no_body(), {});
      WindowOps ops;
      ops.init = [&](int lanes) { return std::vector<EVal>{identity(fe, dt, m, lanes)}; };
      ops.step = [&](const std::vector<EVal>& acc, const DimIdx& off, int lanes, Value) {
        return std::vector<EVal>{combine(fe, m, acc[0], window::load_lanes(fe, dt, ptrs[0], off, lanes))};
      };
      ops.done = [&](const std::vector<EVal>& acc, const DimIdx& off, int) { fe.store(ptrs[1], off, acc[0]); };
      window::emit_window_points(b, w, ops, begin, end);
    });
  }
  pe.note(e, "loop nest", with_reason(text, reason));
}

// The results of scalar jaxpr `j` (consts `consts`) for `args`, through the elemental rules. A
// call in it (a fusion the compiler made of the body, a pjit) is evaluated the same way on its
// operands' values, in order, and its results bound before anything reads them.
std::vector<EVal> eval_scalar_jaxpr(kir::Builder& b, const Jaxpr& j, const std::vector<Array>& consts,
                                    const std::vector<EVal>& args) {
  FusionEmitter fe(b, j, {});
  ElemIndex at = fe.scalar_index(1);
  for (size_t i = 0; i < j.invars.size(); ++i) fe.bind(j.invars[i], at, {args.at(i)});
  for (size_t i = 0; i < j.constvars.size(); ++i) fe.bind(j.constvars[i], at, {fe.literal(Literal{consts.at(i)})});
  for (const Eqn& e : j.eqns) {
    if (!CallParams::is(e)) continue;
    const ClosedJaxpr& body = *call_params(e).jaxpr;
    std::vector<EVal> in;
    for (const Atom& a : e.inputs) in.push_back(fe.value1(a, at));
    std::vector<EVal> out = eval_scalar_jaxpr(b, *body.jaxpr, body.consts, in);
    for (size_t k = 0; k < e.outputs.size(); ++k) fe.bind(e.outputs[k], at, {out.at(k)});
  }
  std::vector<EVal> out;
  for (const Atom& o : j.outvars) out.push_back(fe.value1(o, at));
  return out;
}

// Compile-time checks of a scalar body (and the bodies of its calls): each other equation has an
// elemental rule, consts are concrete scalars. ValueError naming `prim` and the equation.
void check_scalar_jaxpr(const std::string& prim, const ClosedJaxpr& body) {
  for (const Eqn& be : body.jaxpr->eqns) {
    if (CallParams::is(be)) {
      check_scalar_jaxpr(prim, *call_params(be).jaxpr);
      continue;
    }
    if (!elemental_rules().count(be.primitive->name))
      throw ValueError(prim + " lowering: its body's equation " + be.primitive->name +
                       " has no elemental lowering (jit/codegen/lower/), so the body cannot be compiled as a loop nest");
  }
  if (body.consts.size() != body.jaxpr->constvars.size())
    throw ValueError(prim + " lowering: the body has " + std::to_string(body.jaxpr->constvars.size()) + " constvars and " +
                     std::to_string(body.consts.size()) + " consts");
  for (const Array& c : body.consts)
    if (c.aval().ndim() != 0 || !c.is_concrete())
      throw ValueError(prim + " lowering: the body closes over " + c.aval().str() + ", not a concrete scalar");
  for (const Var& v : body.jaxpr->invars)
    if (v.aval().ndim() != 0) throw ValueError(prim + " lowering: the body takes " + v.aval().str() + ", not a scalar");
}

// The equations of a scalar body, those inside its calls counted instead of the calls.
size_t count_equations(const Jaxpr& j) {
  size_t n = 0;
  for (const Eqn& e : j.eqns) n += CallParams::is(e) ? count_equations(*call_params(e).jaxpr->jaxpr) : 1;
  return n;
}

void lower_generic(ProgramEmitter& pe, const Eqn& e, const std::string& reason) {
  const ReduceWindowParams rp = reduce_window_params(e);
  const ClosedJaxpr& body = *rp.jaxpr;
  check_scalar_jaxpr(e.primitive->name, body);
  const size_t n = e.outputs.size();
  const ShapedArray& ya = e.outputs.at(0).aval();
  WindowNest w = nest_of(rp.window, atom_aval(e.inputs.at(0)).shape, ya.shape);
  w.every_tap = true;
  const bool empty = atom_aval(e.inputs.at(0)).size() == 0;
  std::string text = shapes_text(e, w, rp.window) + ", body of " + std::to_string(count_equations(*body.jaxpr)) + " equations";
  if (ya.size() > 0) {
    std::vector<Value> addrs;
    for (auto& in : e.inputs) addrs.push_back(pe.addr(in));
    for (auto& o : e.outputs) addrs.push_back(pe.addr(o));
    const window::KernelCall call{"reduce_window_loop", w.outer(), w.work_per_outer() * int64_t(1 + count_equations(*body.jaxpr))};
    text += "; " + window::emit_loop_kernel(pe, e, call, addrs,
                                            [&](kir::Builder& b, const std::vector<Value>& ptrs, Value begin, Value end) {
      FusionEmitter fe(b, window::no_body(), {});
      std::vector<EVal> init;
      for (size_t i = 0; i < n; ++i) init.push_back(fe.load(atom_aval(e.inputs[n + i]).dtype, ptrs[n + i], FusionEmitter::affine(b.i64(0)), 1));
      WindowOps ops;
      ops.init = [&](int) { return init; };
      // Padding and holes hold the init values (as eager's reduce_window); an empty operand is never read.
      ops.step = [&](const std::vector<EVal>& acc, const DimIdx& off, int, Value valid) {
        std::vector<EVal> args = acc;
        for (size_t i = 0; i < n; ++i) {
          if (empty) {
            args.push_back(init[i]);
            continue;
          }
          EVal x = fe.load(atom_aval(e.inputs[i]).dtype, ptrs[i], off, 1);
          args.push_back(valid.valid() ? EVal{b.select(valid, x.v, init[i].v), x.dtype, 1} : x);
        }
        return eval_scalar_jaxpr(b, *body.jaxpr, body.consts, args);
      };
      ops.done = [&](const std::vector<EVal>& acc, const DimIdx& off, int) {
        for (size_t i = 0; i < n; ++i) fe.store(ptrs[2 * n + i], off, acc[i]);
      };
      window::emit_window_points(b, w, ops, begin, end);
    });
  }
  pe.note(e, "loop nest", with_reason(text, reason));
}

}  // namespace

void emit_reduce_window_loop_nest(ProgramEmitter& pe, const Eqn& e, const std::string& reason) {
  if (ReduceWindowParams::is(e)) return lower_generic(pe, e, reason);
  lower_monoid(pe, e, window_monoid(e), reason);
}

void emit_select_and_gather_add_loop_nest(ProgramEmitter& pe, const Eqn& e, const std::string& reason) {
  const SelectAndWindowParams sp = select_and_window_params(e);
  const bool ge = selects_max(sp);
  const ShapedArray& ta = atom_aval(e.inputs.at(0));
  const ShapedArray& xa = atom_aval(e.inputs.at(1));
  const ShapedArray& ya = e.outputs.at(0).aval();
  WindowNest w = nest_of(sp.window, xa.shape, ya.shape);
  w.lanes = std::min(FusionEmitter::native_lanes(xa.dtype), FusionEmitter::native_lanes(ta.dtype));
  std::string text = shapes_text(e, w, sp.window) + ", select " + sp.select_prim;
  if (ya.size() > 0) {
    const window::KernelCall call{"select_and_gather_loop", w.outer(), w.work_per_outer()};
    const std::vector<Value> addrs{pe.addr(e.inputs[0]), pe.addr(e.inputs[1]), pe.addr(e.outputs[0])};
    text += "; " + window::emit_loop_kernel(pe, e, call, addrs,
                                            [&](kir::Builder& b, const std::vector<Value>& ptrs, Value begin, Value end) {
      FusionEmitter fe(b, window::no_body(), {});
      WindowOps ops;
      // (selected value, its tangent, whether one is selected): a window of padding only gives 0.
      ops.init = [&](int lanes) {
        return std::vector<EVal>{fe.constant_int(xa.dtype, 0, lanes), fe.constant_int(ta.dtype, 0, lanes),
                                 fe.constant_int(DType::bool_, 0, lanes)};
      };
      ops.step = [&](const std::vector<EVal>& acc, const DimIdx& off, int lanes, Value) {
        EVal x = window::load_lanes(fe, xa.dtype, ptrs[1], off, lanes), t = window::load_lanes(fe, ta.dtype, ptrs[0], off, lanes);
        Value take = takes(b, ge, b.binop(Op::Xor, acc[2].v, b.splat(b.i1(true), lanes)), acc[0], x);
        return std::vector<EVal>{EVal{b.select(take, x.v, acc[0].v), x.dtype, lanes},
                                 EVal{b.select(take, t.v, acc[1].v), t.dtype, lanes},
                                 EVal{b.splat(b.i1(true), lanes), DType::bool_, lanes}};
      };
      ops.done = [&](const std::vector<EVal>& acc, const DimIdx& off, int) { fe.store(ptrs[2], off, acc[1]); };
      window::emit_window_points(b, w, ops, begin, end);
    });
  }
  pe.note(e, "loop nest", with_reason(text, reason));
}

void emit_select_and_scatter_add_loop_nest(ProgramEmitter& pe, const Eqn& e, const std::string& reason) {
  const SelectAndWindowParams sp = select_and_window_params(e);
  const bool ge = selects_max(sp);
  const ShapedArray& sa = atom_aval(e.inputs.at(0));
  const ShapedArray& xa = atom_aval(e.inputs.at(1));
  const ShapedArray& ra = e.outputs.at(0).aval();
  WindowNest w = nest_of(sp.window, xa.shape, sa.shape);
  // Windows of different outer indices touch disjoint parts of the result when the outer dims'
  // windows are trivial; vectors run along a trivial innermost dim (lanes never collide).
  size_t p = 0;
  while (p + 1 < w.dims.size() && w.dims[p].trivial(sp.window.pad_hi(int64_t(p)))) ++p;
  w.parallel_dims = xa.ndim() == 0 ? 0 : p;
  const bool last_trivial = xa.ndim() > 0 && w.dims.back().trivial(sp.window.pad_hi(xa.ndim() - 1));
  w.overlap = false;  // the points add into the result
  w.lanes = last_trivial ? std::min(FusionEmitter::native_lanes(xa.dtype), FusionEmitter::native_lanes(sa.dtype)) : 1;
  std::string text = shapes_text(e, w, sp.window) + ", select " + sp.select_prim;
  Value out = pe.addr(e.outputs[0]);
  if (ra.size() == 0) return pe.note(e, "loop nest", with_reason(text, reason));
  if (sa.size() == 0) {
    pe.b.memset(out, pe.b.const_int(kir::kI8, 0), pe.b.i64(ra.nbytes()));
    return pe.note(e, "loop nest", with_reason(text + "; zeros", reason));
  }
  int64_t slab = 1;  // result elements per outer index
  for (size_t d = w.parallel_dims; d < w.dims.size(); ++d) slab *= w.dims[d].X;
  const int64_t item = int64_t(itemsize(ra.dtype));
  const window::KernelCall call{"select_and_scatter_loop", w.outer(), w.work_per_outer()};
  const std::vector<Value> addrs{pe.addr(e.inputs[0]), pe.addr(e.inputs[1]), out};
  text += "; " + window::emit_loop_kernel(pe, e, call, addrs,
                                          [&](kir::Builder& b, const std::vector<Value>& ptrs, Value begin, Value end) {
    b.memset(b.ptr_add(ptrs[2], b.mul(begin, b.i64(slab * item))), b.const_int(kir::kI8, 0),
             b.mul(b.sub(end, begin), b.i64(slab * item)));
    FusionEmitter fe(b, window::no_body(), {});
    WindowOps ops;
    // (selected value, its operand offset, or -1 while none is selected).
    ops.init = [&](int lanes) {
      return std::vector<EVal>{fe.constant_int(xa.dtype, 0, lanes), EVal{b.splat(b.i64(-1), lanes), DType::i32, lanes}};
    };
    ops.step = [&](const std::vector<EVal>& acc, const DimIdx& off, int lanes, Value) {
      EVal x = window::load_lanes(fe, xa.dtype, ptrs[1], off, lanes);
      Value take = takes(b, ge, b.icmp(Pred::slt, acc[1].v, b.splat(b.i64(0), lanes)), acc[0], x);
      return std::vector<EVal>{EVal{b.select(take, x.v, acc[0].v), x.dtype, lanes},
                               EVal{b.select(take, fe.dim_vector(off, lanes), acc[1].v), DType::i32, lanes}};
    };
    ops.done = [&](const std::vector<EVal>& acc, const DimIdx& src_off, int lanes) {
      Value pos = acc[1].v;
      b.if_(b.icmp(Pred::sge, b.extract(pos, 0), b.i64(0)), [&] {
        const DimIdx at = lanes > 1 ? DimIdx{{}, 0, pos} : FusionEmitter::affine(pos);
        EVal cur = window::load_lanes(fe, ra.dtype, ptrs[2], at, lanes);
        EVal src = window::load_lanes(fe, sa.dtype, ptrs[0], src_off, lanes);
        fe.store(ptrs[2], at, combine(fe, Monoid::sum, cur, src));
      });
    };
    window::emit_window_points(b, w, ops, begin, end);
  });
  pe.note(e, "loop nest", with_reason(text, reason));
}

}  // namespace minijax::lower
