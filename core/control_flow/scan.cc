// minijax `scan` primitive: shape rule, eager implementation and DCE rule, and scan_flat (the
// flat user entry point that traces the body and binds one scan equation).
//
// Layout (JAX's): operands = consts (num_consts) + init carry (num_carry) + xs (each
// [length, ...]). Params: jaxpr (ClosedJaxprPtr without constvars; invars = consts + carry +
// x slices, outvars = carry out + y slices), num_consts, num_carry, length, reverse, unroll (an
// int >= 0 as JAX binds it: 0 or >= length unrolls the whole compiled loop; see ScanOptions),
// linear (int vector, one 0/1 per operand; printed `(0, 0)` — JAX prints `(False, False)`),
// _split_transpose (false). Outputs: final carry + ys stacked [length, ...] in the memory kind
// of the body's y avals.
#include <algorithm>
#include <cstring>

#include "core/control_flow.h"
#include "core/param_reads.h"
#include "core/dce.h"
#include "core/pjit.h"
#include "core/primitive.h"
#include "core/staging.h"
#include "core/trace.h"

namespace minijax {

namespace {

std::string leading_dims_str(const std::vector<ShapedArray>& xs) {
  std::string s = "(";
  for (size_t i = 0; i < xs.size(); ++i)
    s += (i ? ", " : "") + (xs[i].ndim() ? std::to_string(xs[i].shape[0]) : std::string("scalar"));
  return s + ")";
}

/// The aval of one slice of a stacked aval along axis 0.
ShapedArray slice_aval(const ShapedArray& a) {
  ShapedArray r = a;
  r.shape.erase(r.shape.begin());
  return r;
}

/// The aval of `a` stacked `length` times along a new axis 0.
ShapedArray stacked_aval(const ShapedArray& a, int64_t length) {
  ShapedArray r = a;
  r.shape.insert(r.shape.begin(), length);
  return r;
}

std::vector<ShapedArray> scan_shape_rule(const std::vector<ShapedArray>& in, const Params& params) {
  const ClosedJaxprPtr& cj = param_jaxpr(params, "jaxpr");
  if (!cj || !cj->jaxpr) throw ValueError("parameter 'jaxpr' is empty");
  const Jaxpr& j = *cj->jaxpr;
  if (!j.constvars.empty())
    throw ValueError("the scan body has " + std::to_string(j.constvars.size()) +
                     " constvars; closed-over values must be passed as leading consts");
  const int64_t nc = param_int(params, "num_consts"), ncar = param_int(params, "num_carry");
  const int64_t length = param_int(params, "length");
  if (nc < 0 || ncar < 0 || nc + ncar > int64_t(in.size()))
    throw ValueError("num_consts=" + std::to_string(nc) + " and num_carry=" + std::to_string(ncar) +
                     " do not fit the " + std::to_string(in.size()) + " operands");
  if (length < 0) throw ValueError("scan length must be >= 0, got " + std::to_string(length));
  if (params.has("unroll") && param_int(params, "unroll") < 0)
    throw ValueError("scan unroll must be >= 0, got " + std::to_string(param_int(params, "unroll")));
  if (in.size() != j.invars.size())
    throw TypeError("scan has " + std::to_string(in.size()) + " operands but its body takes " +
                    std::to_string(j.invars.size()) + " inputs");
  if (params.has("linear") && param_ints(params, "linear").size() != in.size())
    throw ValueError("scan param linear has " + std::to_string(param_ints(params, "linear").size()) +
                     " entries for " + std::to_string(in.size()) + " operands");
  if (j.outvars.size() < size_t(ncar))
    throw TypeError("the scan body returns " + std::to_string(j.outvars.size()) +
                    " values, fewer than num_carry=" + std::to_string(ncar));
  for (int64_t i = 0; i < nc + ncar; ++i) {
    const ShapedArray& want = j.invars[size_t(i)].aval();
    if (!in[size_t(i)].same_type(want))
      throw TypeError(std::string(i < nc ? "const " : "carry ") + std::to_string(i < nc ? i : i - nc) +
                      " is " + in[size_t(i)].str() + " but the scan body expects " + want.str());
  }
  std::vector<ShapedArray> xs(in.begin() + nc + ncar, in.end());
  for (size_t k = 0; k < xs.size(); ++k)
    if (xs[k].ndim() == 0 || xs[k].shape[0] != length)
      throw ShapeError("scan got xs with leading dimensions " + leading_dims_str(xs) +
                       " but length " + std::to_string(length) + " (xs " + std::to_string(k) +
                       " is " + xs[k].str() + ")");
  for (size_t k = 0; k < xs.size(); ++k) {
    const ShapedArray& want = j.invars[size_t(nc + ncar) + k].aval();
    if (!slice_aval(xs[k]).same_type(want))
      throw TypeError("xs " + std::to_string(k) + " is " + xs[k].str() + ", whose slices are " +
                      slice_aval(xs[k]).str() + ", but the scan body expects " + want.str());
  }
  auto outs = j.out_avals();
  for (int64_t i = 0; i < ncar; ++i) {
    const ShapedArray& cin = j.invars[size_t(nc + i)].aval();
    if (!outs[size_t(i)].same_type(cin))
      throw TypeError("scan body function carry input and carry output must have equal types, but "
                      "carry leaf " + std::to_string(i) + " is " + cin.str() + " on input and " +
                      outs[size_t(i)].str() + " on output");
  }
  for (size_t i = size_t(ncar); i < outs.size(); ++i) outs[i] = stacked_aval(outs[i], length);
  return outs;
}

/// Row `i` of the stacked concrete array `xs`, as a fresh array of aval `aval`.
Array copy_row(const Array& xs, int64_t i, const ShapedArray& aval) {
  Array r = Array::allocate(aval);
  const size_t bytes = size_t(aval.nbytes());
  if (bytes) {
    const char* src = static_cast<const char*>(xs.raw_data()) + size_t(i) * bytes;
    std::memcpy(const_cast<void*>(r.raw_data()), src, bytes);
  }
  return r;
}

std::vector<Array> scan_impl(const std::vector<Array>& args, const Params& params,
                             const std::vector<ShapedArray>& out_avals) {
  const ClosedJaxpr& body = *param_jaxpr(params, "jaxpr");
  const size_t nc = size_t(param_int(params, "num_consts")), ncar = size_t(param_int(params, "num_carry"));
  const int64_t length = param_int(params, "length");
  const bool reverse = param_bool(params, "reverse");
  const auto& invars = body.jaxpr->invars;
  std::vector<Array> consts(args.begin(), args.begin() + std::ptrdiff_t(nc));
  std::vector<Array> carry(args.begin() + std::ptrdiff_t(nc), args.begin() + std::ptrdiff_t(nc + ncar));
  std::vector<Array> xs(args.begin() + std::ptrdiff_t(nc + ncar), args.end());
  std::vector<Array> ys;
  for (size_t j = ncar; j < out_avals.size(); ++j) ys.push_back(Array::allocate(out_avals[j]));
  std::vector<Array> in(args.size());
  std::copy(consts.begin(), consts.end(), in.begin());
  for (int64_t t = 0; t < length; ++t) {
    const int64_t i = reverse ? length - 1 - t : t;
    std::copy(carry.begin(), carry.end(), in.begin() + std::ptrdiff_t(nc));
    for (size_t k = 0; k < xs.size(); ++k) in[nc + ncar + k] = copy_row(xs[k], i, invars[nc + ncar + k].aval());
    std::vector<Array> outs = eval_jaxpr(body, in);
    for (size_t c = 0; c < ncar; ++c) carry[c] = outs[c];
    for (size_t j = 0; j < ys.size(); ++j) {
      const Array y = outs[ncar + j].concrete();
      const size_t bytes = size_t(y.aval().nbytes());
      if (bytes)
        std::memcpy(static_cast<char*>(const_cast<void*>(ys[j].raw_data())) + size_t(i) * bytes,
                    y.raw_data(), bytes);
    }
  }
  std::vector<Array> result = carry;
  result.insert(result.end(), ys.begin(), ys.end());
  return result;
}

// JAX's _scan_dce_rule: a carry is live if its output is used or the body needs its input to
// compute live outputs (fixpoint); dead consts, xs and ys are removed.
std::pair<std::vector<bool>, std::optional<Eqn>> scan_dce_rule(const std::vector<bool>& used_outputs,
                                                               const Eqn& e) {
  bool any = false;
  for (bool b : used_outputs) any |= b;
  if (!any && !eqn_has_effects(e)) return {std::vector<bool>(e.inputs.size(), false), std::nullopt};
  const ClosedJaxprPtr& cj = param_jaxpr(e.params, "jaxpr");
  const size_t nc = size_t(param_int(e.params, "num_consts")), ncar = size_t(param_int(e.params, "num_carry"));
  const size_t nx = e.inputs.size() - nc - ncar;
  std::vector<bool> used_carry(used_outputs.begin(), used_outputs.begin() + std::ptrdiff_t(ncar));
  std::vector<bool> used_ys(used_outputs.begin() + std::ptrdiff_t(ncar), used_outputs.end());
  Jaxpr body_dce;
  std::vector<bool> used_ins;
  for (size_t iter = 0; iter <= ncar; ++iter) {
    std::vector<bool> used_outs = used_carry;
    used_outs.insert(used_outs.end(), used_ys.begin(), used_ys.end());
    std::vector<bool> inst(nc, false);
    inst.insert(inst.end(), used_carry.begin(), used_carry.end());
    inst.insert(inst.end(), nx, false);
    std::tie(body_dce, used_ins) = dce_jaxpr(*cj->jaxpr, used_outs, inst);
    bool changed = false;
    for (size_t c = 0; c < ncar; ++c)
      if (used_ins[nc + c] && !used_carry[c]) {
        used_carry[c] = true;
        changed = true;
      }
    if (!changed) break;
  }
  std::vector<bool> used_outs = used_carry;
  used_outs.insert(used_outs.end(), used_ys.begin(), used_ys.end());
  Eqn ne;
  ne.primitive = e.primitive;
  ne.effects = e.effects;
  ne.params = e.params;
  auto ncj = std::make_shared<ClosedJaxpr>();
  ncj->jaxpr = std::make_shared<Jaxpr>(std::move(body_dce));
  ncj->consts = cj->consts;
  ne.params.set("jaxpr", ClosedJaxprPtr(ncj));
  int64_t new_nc = 0, new_ncar = 0;
  for (size_t i = 0; i < nc; ++i) new_nc += used_ins[i];
  for (size_t i = 0; i < ncar; ++i) new_ncar += used_ins[nc + i];
  ne.params.set("num_consts", new_nc);
  ne.params.set("num_carry", new_ncar);
  std::vector<int64_t> linear;
  const std::vector<int64_t>* old_linear = e.params.has("linear") ? &param_ints(e.params, "linear") : nullptr;
  for (size_t i = 0; i < e.inputs.size(); ++i)
    if (used_ins[i]) {
      ne.inputs.push_back(e.inputs[i]);
      linear.push_back(old_linear && i < old_linear->size() ? (*old_linear)[i] : 0);
    }
  ne.params.set("linear", linear);
  for (size_t i = 0; i < e.outputs.size(); ++i)
    if (used_outs[i]) ne.outputs.push_back(e.outputs[i]);
  return {used_ins, std::move(ne)};
}

Registrar reg([] {
  auto& p = get_or_create_primitive("scan");
  p.body_params = {"jaxpr"};
  p.body_form = BodyForm::scan;
  p.multiple_results = true;
  p.shape_rule = scan_shape_rule;
  p.impl = scan_impl;
  p.dce = scan_dce_rule;
});

}  // namespace

int64_t detail::unroll_param(const Unroll& u, int64_t length, const char* fn, std::source_location loc) {
  if (const bool* b = std::get_if<bool>(&u)) return *b ? std::max<int64_t>(length, 1) : 1;
  const int64_t k = std::get<int64_t>(u);
  if (k < 0)
    throw ValueError(std::string(fn) + ": `unroll` must be a `bool` or a non-negative `int`, got unroll=" +
                         std::to_string(k), loc);
  return k;
}

std::vector<Array> scan_flat(const FlatFn& body, const std::vector<Array>& init_in,
                             const std::vector<Array>& xs, const ScanOptions& opts,
                             const std::string& carry_structure, std::source_location loc) {
  // Length: every xs leaf's leading dimension, and opts.length if given.
  std::optional<int64_t> length = opts.length;
  bool mismatch = false;
  std::vector<ShapedArray> xs_avals;
  for (auto& x : xs) {
    if (!x.defined()) throw ValueError("scan: an xs leaf is an empty Array", loc);
    xs_avals.push_back(x.aval());
    if (x.ndim() == 0)
      throw ShapeError("scan got a scalar xs leaf (" + x.aval().str() +
                           "); every xs leaf needs a leading axis to scan over",
                       loc);
  }
  // JAX's messages: a given length must equal every leading axis size; without one, the sizes
  // must agree with each other (ValueError either way).
  for (auto& a : xs_avals) {
    if (!length) length = a.shape[0];
    else if (a.shape[0] != *length) mismatch = true;
  }
  if (mismatch) {
    if (opts.length)
      throw ValueError("scan got length=" + std::to_string(*opts.length) +
                           ", which disagrees with the leading axis sizes of xs " + leading_dims_str(xs_avals),
                       loc);
    throw ValueError("scan got values with different leading axis sizes: " + leading_dims_str(xs_avals), loc);
  }
  if (!length)
    throw ValueError("scan got no xs to scan over and no length: pass ScanOptions{.length = n}", loc);
  if (*length < 0) throw ValueError("scan length must be >= 0, got " + std::to_string(*length), loc);
  const int64_t unroll = detail::unroll_param(opts.unroll, *length, "scan", loc);  // the API function's name
  for (auto& c : init_in)
    if (!c.defined()) throw ValueError("scan: a carry leaf is an empty Array", loc);

  std::vector<Array> init = init_in;
  const std::string where = carry_structure.empty() ? std::string() : " of carry " + carry_structure;
  ClosedJaxpr cj;
  // Traced at most twice: weakly typed init leaves whose dtype the body changes are promoted to
  // the body's output dtype and the body is retraced (JAX's _promote_weak_typed_inputs).
  for (int attempt = 0;; ++attempt) {
    std::vector<ShapedArray> in_avals;
    for (auto& c : init) in_avals.push_back(c.aval());
    for (auto& a : xs_avals) in_avals.push_back(slice_aval(a));
    try {
      cj = trace_to_jaxpr(body, in_avals, loc);
    } catch (const ConcretizationError& e) {
      throw ConcretizationError(e.message() + " (while tracing the scan body)", e.where());
    }
    auto outs = cj.out_avals();
    if (outs.size() < init.size())
      throw TypeError("scan body returned " + std::to_string(outs.size()) + " values but the carry has " +
                          std::to_string(init.size()) + " leaves",
                      loc);
    bool retrace = false;
    for (size_t i = 0; i < init.size(); ++i) {
      const ShapedArray& a = in_avals[i];
      const ShapedArray& b = outs[i];
      if (a.same_type(b)) continue;
      if (attempt == 0 && a.weak_type && a.shape == b.shape && a.memory_kind == b.memory_kind &&
          a.dtype != b.dtype) {
        init[i] = lax::convert_element_type(init[i], b.dtype, b.weak_type, loc);
        retrace = true;
        continue;
      }
      std::string why = a.shape != b.shape ? "the shapes do not match"
                        : a.dtype != b.dtype ? "the dtypes do not match"
                                             : "the memory kinds do not match";
      throw TypeError("scan body function carry input and carry output must have equal types "
                      "(shape, dtype and memory kind), but they differ: the input carry leaf " +
                          std::to_string(i) + where + " has type " + a.str() +
                          " but the corresponding output carry leaf has type " + b.str() + ", so " + why,
                      loc);
    }
    if (!retrace) break;
  }

  const size_t nconsts = cj.consts.size();
  auto body_ptr = std::make_shared<ClosedJaxpr>();
  body_ptr->jaxpr = std::make_shared<Jaxpr>(convert_constvars_jaxpr(*cj.jaxpr));
  std::vector<Array> operands = cj.consts;
  operands.insert(operands.end(), init.begin(), init.end());
  operands.insert(operands.end(), xs.begin(), xs.end());
  Params params;
  params.set("jaxpr", ClosedJaxprPtr(body_ptr));
  params.set("num_consts", int64_t(nconsts));
  params.set("num_carry", int64_t(init.size()));
  params.set("length", *length);
  params.set("reverse", opts.reverse);
  params.set("unroll", unroll);
  params.set("linear", std::vector<int64_t>(operands.size(), 0));
  params.set("_split_transpose", false);
  return minijax::bind(primitive("scan"), operands, params, loc);
}

namespace {

// Classes: cost_analysis counts the body, bytes included, once per iteration.
Registrar reg_scan_classes([] {
  auto& p = get_or_create_primitive("scan");
  set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
  p.cost = [](const Eqn& e, bool, const JaxprCost& cost) {
    return cost(*param_jaxpr(e.params, "jaxpr")->jaxpr, true) * double(param_int(e.params, "length"));
  };
});

}  // namespace

}  // namespace minijax
