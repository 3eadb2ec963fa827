// minijax convolution and pooling lowering: each conv_general_dilated, reduce_window_max/sum and
// select_and_scatter_add equation as a oneDNN call site (mj_rt_dnnl) when a form applies, else a loop nest.
#include <algorithm>
#include <functional>

#include "core/views/array_ops.h"
#include "core/views/control_flow.h"
#include "core/views/windowed.h"
#include "jit/codegen/lower/conv_forms.h"
#include "jit/codegen/lower/pool_forms.h"
#include "jit/codegen/lower/program.h"
#include "jit/codegen/lower/window_loops.h"
#include "jit/runtime/dnnl_ops.h"

namespace minijax::lower {

namespace {

std::string ints(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

// The operand of the `rev` over exactly `dims` that produces `a` in the program emitted so far
// (or of a fusion whose body is that one rev), or nullptr: the kernel of JAX's transpose with
// respect to the lhs is `rev` of the forward's kernel.
const Atom* spatial_rev_operand(const ProgramEmitter& pe, const Atom& a, std::vector<int64_t> dims) {
  const Eqn* e = pe.producer(a);
  const Eqn* fusion = nullptr;
  if (e && CallParams::is(*e) && e->inputs.size() == 1) {
    const Jaxpr& body = *call_params(*e).jaxpr->jaxpr;
    if (body.eqns.size() != 1 || body.outvars.size() != 1) return nullptr;
    fusion = e;
    e = &body.eqns[0];
  }
  if (!e || !RevParams::is(*e)) return nullptr;
  std::vector<int64_t> got = rev_params(*e).dimensions;
  std::sort(got.begin(), got.end());
  std::sort(dims.begin(), dims.end());
  if (got != dims) return nullptr;
  return fusion ? &fusion->inputs[0] : &e->inputs[0];
}

// The site's buffers as a stack array, then the call mj_rt_dnnl(site, buffers).
void call_dnnl(ProgramEmitter& pe, int32_t site, const std::vector<kir::Value>& buffers) {
  kir::Builder& b = pe.b;
  const kir::Value slot = b.function_stack_slot(kir::kPtr, int64_t(buffers.size()));
  for (size_t k = 0; k < buffers.size(); ++k) b.store(slot, b.i64(int64_t(k)), buffers[k]);
  pe.call_runtime("mj_rt_dnnl", kir::kVoid, {kir::kI32, kir::kPtr}, {b.i32(site), slot});
}

// The OpenMP team the loaded program creates its primitives for (pipeline.cc's load): one per
// device thread in an SPMD program, the default otherwise.
int site_threads(const ProgramEmitter& pe) { return pe.collective_sites ? 1 : 0; }

// " (impl); reorder <value> <from> -> <to>, N bytes" for the note of a site.
std::string describe_site(const ProgramEmitter& pe, const DnnlSiteSpec& spec, const std::string& weights_value) {
  std::string s = " (" + dnnl_impl_name(spec, site_threads(pe)) + ")";
  const DnnlWeightsReorder r = dnnl_weights_reorder(spec, site_threads(pe));
  if (r.needed)
    s += "; reorder " + weights_value + " " + r.from + " -> " + r.to + ", " + std::to_string(r.bytes) + " bytes" +
         (r.after ? " (after)" : "");
  return s;
}

std::string value_name(const Atom& a) {
  const Var v = atom_var(a);
  return v.defined() ? "%" + std::to_string(v.id()) + ":" + v.aval().str() : atom_aval(a).str();
}

DnnlSiteSpec conv_spec(const ConvForm& f, DType in, DType out) {
  static const DnnlOp kOps[] = {DnnlOp::conv_forward, DnnlOp::conv_backward_data, DnnlOp::conv_backward_weights};
  DnnlSiteSpec s;
  s.kind = kOps[int(f.kind)];
  s.dtype = in;
  s.out_dtype = out;
  s.batch = f.src.dims[0];
  s.in_channels = f.src.dims[1];
  s.out_channels = f.dst.dims[1];
  s.groups = f.groups;
  for (size_t i = 2; i < f.src.dims.size(); ++i) {
    s.in_size.push_back(f.src.dims[i]);
    s.out_size.push_back(f.dst.dims[i]);
    s.kernel.push_back(f.weights.dims[i]);
  }
  s.strides = f.strides;
  s.dilations = f.dilates;
  s.padding_l = f.pad_l;
  s.padding_r = f.pad_r;
  s.src_strides = f.src.strides;
  s.dst_strides = f.dst.strides;
  s.weights_strides = f.weights.strides;
  s.weights_any = true;
  return s;
}

// A backward-data site reads the forward's kernel: the rev's operand itself when its bytes are
// intact at `e` (pe.intact_at: a parameter, or a value read later), else the reversed buffer,
// which the runtime flips back on every call (weights_flipped).
void lower_conv(ProgramEmitter& pe, const Eqn& e) {
  const ConvParams p = conv_params(e);
  const ShapedArray& lhs = atom_aval(e.inputs[0]);
  const ShapedArray& rhs = atom_aval(e.inputs[1]);
  const ShapedArray& out = e.outputs[0].aval();
  const std::vector<int64_t> rhs_spatial(p.rhs_spec.begin() + 2, p.rhs_spec.end());
  const Atom* unreversed = spatial_rev_operand(pe, e.inputs[1], rhs_spatial);
  ConvForm f = classify_convolution(p, lhs.shape, rhs.shape, out.shape, lhs.dtype, out.dtype, unreversed != nullptr);
  if (f.kind != ConvFormKind::loop_nest) {
    DnnlSiteSpec spec = conv_spec(f, lhs.dtype, out.dtype);
    const bool direct = f.kind == ConvFormKind::backward_data && unreversed && pe.intact_at(*unreversed, e);
    spec.weights_flipped = f.kind == ConvFormKind::backward_data && !direct;
    std::string why;
    if (dnnl_supported(spec, &why)) {
      const int32_t site = pe.dnnl_site(e, spec);
      const Atom& kernel = direct ? *unreversed : e.inputs[1];
      const kir::Value l = pe.addr(e.inputs[0]), r = pe.addr(kernel), o = pe.addr(e.outputs[0]);
      // conv_forward: src, weights, dst; backward_data: diff_dst, weights, diff_src;
      // backward_weights: src, diff_dst, diff_weights (jit/runtime/dnnl_site.h).
      call_dnnl(pe, site, {l, r, o});
      const Atom& weights = f.kind == ConvFormKind::backward_weights ? Atom(e.outputs[0]) : kernel;
      std::string kernel_note;
      if (direct) kernel_note = "; reads the kernel " + value_name(kernel) + " unreversed";
      else if (spec.weights_flipped) kernel_note = "; flips the kernel back on every call";
      pe.note(e, conv_form_name(f.kind),
              std::string(dnnl_op_name(spec.kind)) + " " + lhs.str() + " * " + rhs.str() + " -> " + out.str() +
                  " strides " + ints(f.strides) + " pad " + ints(f.pad_l) + "/" + ints(f.pad_r) +
                  describe_site(pe, spec, value_name(weights)) + kernel_note);
      return;
    }
    f.reason = "oneDNN refused it: " + why;
  }
  emit_conv_loop_nest(pe, e, f.reason);
}

DnnlSiteSpec pool_spec(const PoolForm& f, DnnlOp op, DType dt) {
  DnnlSiteSpec s;
  s.kind = op;
  s.dtype = s.out_dtype = dt;
  s.batch = f.src.dims[0];
  s.in_channels = s.out_channels = f.src.dims[1];
  for (size_t i = 2; i < f.src.dims.size(); ++i) {
    s.in_size.push_back(f.src.dims[i]);
    s.out_size.push_back(f.dst.dims[i]);
  }
  s.kernel = f.kernel;
  s.strides = f.strides;
  s.dilations = f.dilates;
  s.padding_l = f.pad_l;
  s.padding_r = f.pad_r;
  s.src_strides = f.src.strides;
  s.dst_strides = f.dst.strides;
  return s;
}

// The pool_forward_max site emitted so far whose operand is `x` with window `w`, or -1: its
// workspace is what a select_and_scatter_add of the same operand and window reads.
int32_t forward_pool_site(const ProgramEmitter& pe, const Atom& x, const WindowParams& w) {
  const Var xv = atom_var(x);
  if (!xv.defined()) return -1;
  for (size_t i = 0; i < pe.dnnl_sites.size(); ++i) {
    const Eqn& f = *pe.dnnl_site_eqns[i];
    if (pe.dnnl_sites[i].kind == DnnlOp::pool_forward_max && atom_var(f.inputs[0]) == xv &&
        reduce_window_monoid_params(f).window == w)
      return int32_t(i);
  }
  return -1;
}

// oneDNN's max pooling skips NaNs and starts each window at the lowest finite value, where
// reduce_window_max propagates a NaN and keeps -inf (and the gradient goes to the first NaN): the
// site runs when the operand `x` holds neither, the loop nest otherwise (emitted muted: the
// equation's note is the site's). The loop fusion that wrote `x` noted whether it stored either
// (pe.nonfinite_flag; these rules watch the operand); any other operand is scanned
// (mj_rt_max_pool_needs_loop).
void unless_nan_or_neg_inf(ProgramEmitter& pe, const Atom& x, const std::function<void()>& site,
                           const std::function<void()>& loop_nest) {
  kir::Builder& b = pe.b;
  const ShapedArray& a = atom_aval(x);
  const kir::Value flag = pe.nonfinite_flag(x);
  const kir::Value bad =
      flag.valid() ? b.load(kir::kI32, flag, b.i64(0))
                   : pe.call_runtime("mj_rt_max_pool_needs_loop", kir::kI32, {kir::kPtr, kir::kI32, kir::kI64},
                                     {pe.addr(x), b.i32(int32_t(a.dtype)), b.i64(a.size())});
  b.if_(b.icmp(kir::Pred::ne, bad, b.i32(0)), [&] { pe.emit_copy_of_scope(true, loop_nest); }, site);
}

// reduce_window_max (pool_forward_max) and reduce_window_sum (pool_forward_avg_include_padding
// scaled back to sums by the runtime); a reduce_window_sum with base dilation that is the
// gradient of a sum pooling (classify_transposed_pooling) as pool_backward_sum; other windows and
// dtypes: a loop nest.
void lower_pool_forward(ProgramEmitter& pe, const Eqn& e) {
  const ReduceWindowMonoidParams p = reduce_window_monoid_params(e);
  const ShapedArray& x = atom_aval(e.inputs[0]);
  const ShapedArray& out = e.outputs[0].aval();
  const bool is_max = window_monoid(e) == WindowMonoid::max;
  PoolForm f = classify_pooling(p.window, x.shape, out.shape, x.dtype);
  DnnlOp op = is_max ? DnnlOp::pool_forward_max : DnnlOp::pool_forward_sum;
  if (!f.pooling && !is_max) {
    if (PoolForm t = classify_transposed_pooling(p.window, x.shape, out.shape, x.dtype); t.pooling) {
      f = std::move(t);
      op = DnnlOp::pool_backward_sum;
    }
  }
  if (f.pooling) {
    const DnnlSiteSpec spec = pool_spec(f, op, x.dtype);
    std::string why;
    if (dnnl_supported(spec, &why)) {
      const int32_t site = pe.dnnl_site(e, spec);
      auto call = [&] { call_dnnl(pe, site, {pe.addr(e.inputs[0]), pe.addr(e.outputs[0])}); };
      if (is_max)
        unless_nan_or_neg_inf(pe, e.inputs[0], call, [&] { emit_reduce_window_loop_nest(pe, e); });
      else
        call();
      const bool backward = op == DnnlOp::pool_backward_sum;
      pe.note(e, backward ? "oneDNN pooling backward" : "oneDNN pooling forward",
              std::string(dnnl_op_name(spec.kind)) + " " + x.str() + " -> " + out.str() + " window " +
                  ints(f.kernel) + " strides " + ints(f.strides) +
                  (backward ? " (the gradient of that sum pooling)" : "") + " (" +
                  dnnl_impl_name(spec, site_threads(pe)) + ")" +
                  (is_max ? "; a loop nest when the input holds a NaN or -inf" : ""));
      return;
    }
    f.reason = "oneDNN refused it: " + why;
  }
  emit_reduce_window_loop_nest(pe, e, f.reason);
}

// select_and_scatter_add with the ge selector (the gradient of reduce_window_max) as
// pool_backward_max, reading the workspace of the pool_forward_max of the same operand and window.
void lower_pool_backward(ProgramEmitter& pe, const Eqn& e) {
  const SelectAndWindowParams p = select_and_window_params(e);
  const ShapedArray& source = atom_aval(e.inputs[0]);
  const ShapedArray& x = atom_aval(e.inputs[1]);
  PoolForm f = classify_pooling(p.window, x.shape, source.shape, x.dtype);
  if (!p.selects_maximum()) {
    f = PoolForm{};
    f.reason = "the le selector (a min window: oneDNN pools max and average)";
  }
  if (f.pooling) {
    DnnlSiteSpec spec = pool_spec(f, DnnlOp::pool_backward_max, x.dtype);
    spec.forward_site = forward_pool_site(pe, e.inputs[1], p.window);
    std::string why;
    if (dnnl_supported(spec, &why)) {
      const int32_t site = pe.dnnl_site(e, spec);
      auto run_site = [&] { call_dnnl(pe, site, {pe.addr(e.inputs[0]), pe.addr(e.outputs[0]), pe.addr(e.inputs[1])}); };
      auto checked = [&] {
        unless_nan_or_neg_inf(pe, e.inputs[1], run_site, [&] { emit_select_and_scatter_add_loop_nest(pe, e); });
      };
      if (spec.forward_site >= 0) {  // the forward's site ran on this operand: it held neither
        kir::Builder& b = pe.b;
        const kir::Value ran = pe.call_runtime("mj_rt_dnnl_forward_ran_once", kir::kI32, {kir::kI32},
                                               {b.i32(spec.forward_site)});
        b.if_(b.icmp(kir::Pred::ne, ran, b.i32(0)), run_site, checked);
      } else {
        checked();
      }
      pe.note(e, "oneDNN pooling backward",
              std::string(dnnl_op_name(spec.kind)) + " " + source.str() + " -> " + e.outputs[0].aval().str() +
                  " window " + ints(f.kernel) +
                  (spec.forward_site >= 0 ? " (the workspace of site " + std::to_string(spec.forward_site) + ")"
                                          : " (reruns the forward for its workspace)") +
                  "; a loop nest when the operand holds a NaN or -inf");
      return;
    }
    f.reason = "oneDNN refused it: " + why;
  }
  emit_select_and_scatter_add_loop_nest(pe, e, f.reason);
}

const RegisterProgramRule reg_conv("conv_general_dilated", "library call", lower_conv);
const RegisterProgramRule reg_max("reduce_window_max", "library call", lower_pool_forward,
                                  [](const Eqn&) { return std::vector<size_t>{0}; });
const RegisterProgramRule reg_sum("reduce_window_sum", "library call", lower_pool_forward);
const RegisterProgramRule reg_scatter("select_and_scatter_add", "library call", lower_pool_backward,
                                      [](const Eqn&) { return std::vector<size_t>{1}; });

}  // namespace

}  // namespace minijax::lower
