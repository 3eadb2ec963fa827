// minijax custom derivatives: the primitives custom_jvp_call, custom_vjp_call and custom_lin.
// Owns their shape rules, evaluation, JVP, transpose and batching rules, and the flat calls.
#include "autodiff/custom_derivatives.h"

#include "autodiff/batching_util.h"
#include "autodiff/vmap.h"
#include "core/lax.h"
#include "core/primitive.h"
#include "core/views/control_flow.h"
#include "core/views/custom_lin.h"

namespace minijax {
namespace {

const char* kForwardModeError = "can't apply forward-mode autodiff (jvp) to a custom_vjp function.";

/// The user's rule as an equation parameter, printed as its name (JAX prints the function name).
/// `consts` are the values the function closed over when it was called (the leading operands),
/// kept to detect a rule that would see them through an enclosing differentiation.
struct RuleObject : ParamObject {
  std::string name;
  std::vector<Array> consts;
  std::source_location loc;
  std::string str() const override { return name; }
};
struct JvpRuleObject final : RuleObject {
  CustomJvpFlatRule rule;
};
struct FwdObject final : RuleObject {
  CustomFwdFlat fwd;
};
struct BwdObject final : RuleObject {
  CustomBwdFlat bwd;
  std::string fun_name;
};
/// custom_lin's out_avals, printed as a tuple of avals.
struct AvalsObject final : ParamObject {
  std::vector<ShapedArray> avals;
  std::string str() const override {
    std::string s = "(";
    for (size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + avals[i].str();
    return s + (avals.size() == 1 ? ",)" : ")");
  }
};

template <class T>
const T& object(const ParamObjectPtr& obj, const std::string& key) {
  const auto* o = dynamic_cast<const T*>(obj.get());
  if (!o) throw ValueError("parameter '" + key + "' does not hold the expected rule object");
  return *o;
}

int64_t num_consts(const CallParams& c) { return c.num_consts.value_or(0); }

std::vector<Array> slice_vec(const std::vector<Array>& v, size_t from, size_t to) {
  return std::vector<Array>(v.begin() + std::ptrdiff_t(from), v.begin() + std::ptrdiff_t(to));
}

/// call_jaxpr with its constvars turned into leading invars (JAX's convert_constvars_jaxpr).
ClosedJaxprPtr hoist_consts(const ClosedJaxpr& cj) {
  auto j = std::make_shared<Jaxpr>(*cj.jaxpr);
  std::vector<Var> invars = j->constvars;
  invars.insert(invars.end(), j->invars.begin(), j->invars.end());
  j->invars = std::move(invars);
  j->constvars.clear();
  auto out = std::make_shared<ClosedJaxpr>();
  out->jaxpr = j;
  return out;
}

/// ValueError if a closed-over value is being differentiated (nonzero tangent) or is a live
/// tracer of the trace now applying the rule (the rule would see it through its closure).
void check_closure(const RuleObject& o, const std::vector<Array>& primals,
                   const std::vector<Array>& tangents, size_t n, const char* kind) {
  for (size_t i = 0; i < n; ++i) {
    const Array& c = o.consts.at(i);
    bool seen_through = c.is_tracer() && c.tracer()->trace()->alive() &&
                        primals[i].impl() != c.impl();
    if (tangents[i].defined() || seen_through)
      throw ValueError(std::string(kind) + " function '" + o.name + "' closes over a value (" +
                           c.aval().str() +
                           ") that an enclosing transformation is differentiating; a custom "
                           "rule only covers the function's explicit arguments, so pass that "
                           "value as an argument (JAX: closure_convert)",
                       o.loc);
  }
}

void check_rule_outputs(const std::string& what, const std::string& name,
                        const std::vector<ShapedArray>& want, const std::vector<Array>& po,
                        const std::vector<Array>& to, std::source_location loc) {
  if (po.size() != want.size() || to.size() != want.size())
    throw TypeError("Custom JVP rule of '" + name + "' (" + what + ") must produce primal and "
                        "tangent outputs with the function's output structure: the function has " +
                        std::to_string(want.size()) + " outputs, the rule returned " +
                        std::to_string(po.size()) + " primal and " + std::to_string(to.size()) +
                        " tangent outputs",
                    loc);
  for (size_t i = 0; i < want.size(); ++i) {
    if (po[i].shape() != want[i].shape || po[i].dtype() != want[i].dtype)
      throw TypeError("Custom JVP rule of '" + name + "' (" + what + ") must produce primal "
                          "outputs with the function's shapes and dtypes: output " +
                          std::to_string(i) + " of the function is " + want[i].str() +
                          ", the rule's primal output is " + po[i].aval().str(),
                      loc);
    if (!to[i].defined() || !is_floating(want[i].dtype)) continue;
    ShapedArray ta = tangent_aval(want[i]);
    if (to[i].shape() != ta.shape || to[i].dtype() != ta.dtype)
      throw TypeError("Custom JVP rule of '" + name + "' (" + what + ") must produce primal and "
                          "tangent outputs with corresponding shapes and dtypes: primal output " +
                          std::to_string(i) + " is " + want[i].str() + " so its tangent must be " +
                          ta.str() + ", got " + to[i].aval().str(),
                      loc);
  }
}

std::vector<ShapedArray> call_shape_rule(const Primitive& p, const std::vector<ShapedArray>& in,
                                         const Params& ps) {
  const ClosedJaxprPtr cj = CallParams::from(p, ps).jaxpr;
  auto want = cj->in_avals();
  if (want.size() != in.size())
    throw TypeError("call_jaxpr takes " + std::to_string(want.size()) + " operands, got " +
                    std::to_string(in.size()));
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].same_type(want[i]))
      throw TypeError("operand " + std::to_string(i) + " is " + in[i].str() +
                      ", call_jaxpr expects " + want[i].str());
  return cj->out_avals();
}

std::vector<Array> call_impl(const Primitive& p, const std::vector<Array>& args, const Params& ps) {
  return eval_jaxpr(*CallParams::from(p, ps).jaxpr, args);
}

// The shape rule and impl of custom call `p`, whose body its body fact names.
void set_call_rules(Primitive& p) {
  p.shape_rule = [&p](const std::vector<ShapedArray>& in, const Params& ps) { return call_shape_rule(p, in, ps); };
  p.impl = [&p](const std::vector<Array>& args, const Params& ps, const std::vector<ShapedArray>&) {
    return call_impl(p, args, ps);
  };
}

/// Every operand batched at dim 0 (unbatched ones broadcast), and the batch size.
std::vector<Array> batch_all_at_front(const std::vector<Array>& vals, const std::vector<int64_t>& dims,
                                      int64_t* size) {
  *size = batch_axis_size(vals, dims);
  std::vector<Array> b;
  b.reserve(vals.size());
  for (size_t i = 0; i < vals.size(); ++i) b.push_back(materialize_batch(vals[i], dims[i], *size, 0));
  return b;
}

/// The vmapped call_jaxpr, all operands and outputs batched at 0.
FlatFn batched_call(const ClosedJaxprPtr& cj) {
  return [cj](const std::vector<Array>& xs) {
    FlatFn f = [cj](const std::vector<Array>& ys) { return eval_jaxpr(*cj, ys); };
    return vmap_flat(f, xs, std::vector<int64_t>(xs.size(), 0), {});
  };
}

ValueError batched_closure_error(const RuleObject& o, const char* kind) {
  return ValueError(std::string(kind) + " function '" + o.name +
                        "' closes over a value batched by an enclosing vmap and is differentiated "
                        "inside that vmap; its rule cannot see the batch through its closure, so "
                        "pass that value as an argument (JAX: closure_convert)",
                    o.loc);
}

// ---- custom_jvp_call ----------------------------------------------------------------------------

std::pair<std::vector<Array>, std::vector<Array>> custom_jvp_call_jvp(
    const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& ps) {
  const CallParams c = custom_jvp_call_params(ps);
  const auto& o = object<JvpRuleObject>(c.jvp, "jvp");
  size_t n = size_t(num_consts(c));
  check_closure(o, primals, tangents, n, "custom_jvp");
  auto [po, to] = o.rule(slice_vec(primals, n, primals.size()), slice_vec(tangents, n, tangents.size()));
  check_rule_outputs("jvp", c.name.value(), c.jaxpr->out_avals(), po, to, o.loc);
  return {po, to};
}

std::pair<std::vector<Array>, std::vector<int64_t>> custom_jvp_call_batch(
    const std::vector<Array>& vals, const std::vector<int64_t>& dims, const Params& ps) {
  int64_t size = 0;
  std::vector<Array> b = batch_all_at_front(vals, dims, &size);
  const CallParams c = custom_jvp_call_params(ps);
  size_t n = size_t(num_consts(c));
  bool const_batched = false;
  for (size_t i = 0; i < n; ++i) const_batched |= dims[i] != kNotMapped;
  auto obj = std::static_pointer_cast<const JvpRuleObject>(c.jvp);
  if (!dynamic_cast<const JvpRuleObject*>(c.jvp.get()))
    throw ValueError("custom_jvp_call: parameter 'jvp' does not hold a JVP rule");
  CustomJvpFlatRule brule = [obj, n, const_batched](const std::vector<Array>& P,
                                                    const std::vector<Array>& T) {
    for (size_t i = 0; i < n; ++i)
      if (T[i].defined() || const_batched) throw batched_closure_error(*obj, "custom_jvp");
    std::vector<Array> xs = slice_vec(P, n, P.size());
    size_t m = xs.size();
    for (size_t i = n; i < T.size(); ++i) xs.push_back(instantiate_zero(T[i], P[i].aval()));
    size_t nout = 0;
    FlatFn inner = [&](const std::vector<Array>& ys) {
      auto [o, t] = obj->rule(slice_vec(ys, 0, m), slice_vec(ys, m, ys.size()));
      nout = o.size();
      for (size_t i = 0; i < t.size() && i < o.size(); ++i) t[i] = instantiate_zero(t[i], o[i].aval());
      o.insert(o.end(), t.begin(), t.end());
      return o;
    };
    auto r = vmap_flat(inner, xs, std::vector<int64_t>(xs.size(), 0), {}, obj->loc);
    return std::pair{slice_vec(r, 0, nout), slice_vec(r, nout, r.size())};
  };
  const std::string& name = c.name.value();
  auto outs = custom_jvp_call(batched_call(c.jaxpr), brule, b, name, obj->name,
                              obj->loc);
  return {outs, std::vector<int64_t>(outs.size(), 0)};
}

// ---- custom_vjp_call and custom_lin -------------------------------------------------------------

std::pair<std::vector<Array>, std::vector<Array>> custom_vjp_call_jvp(
    const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& ps) {
  const CallParams c = custom_vjp_call_params(ps);
  auto fwd = std::static_pointer_cast<const FwdObject>(c.fwd);
  const auto& f = object<FwdObject>(c.fwd, "fwd");
  object<BwdObject>(c.bwd, "bwd");
  size_t n = size_t(num_consts(c));
  check_closure(f, primals, tangents, n, "custom_vjp");
  std::vector<Array> args = slice_vec(primals, n, primals.size());
  auto [outs, res] = fwd->fwd(args);
  auto want = c.jaxpr->out_avals();
  if (outs.size() != want.size())
    throw TypeError("custom_vjp fwd of '" + c.name.value() + "' returned " +
                        std::to_string(outs.size()) + " outputs; the function has " +
                        std::to_string(want.size()),
                    f.loc);
  auto avals = std::make_shared<AvalsObject>();
  for (size_t i = 0; i < want.size(); ++i) {
    if (outs[i].shape() != want[i].shape || outs[i].dtype() != want[i].dtype)
      throw TypeError("custom_vjp fwd of '" + c.name.value() +
                          "' must return the function's outputs first: output " +
                          std::to_string(i) + " of the function is " + want[i].str() +
                          ", fwd returned " + outs[i].aval().str(),
                      f.loc);
    avals->avals.push_back(tangent_aval(want[i]));
  }
  // The tangents of int/bool arguments (float0) are not operands (JAX's custom_lin takes the
  // nonzero tangents and `in_zeros`): no float0 value reaches a staged or compiled program.
  std::vector<Array> lin_in = res;
  std::vector<int64_t> in_zeros;
  for (size_t i = 0; i < args.size(); ++i) {
    in_zeros.push_back(tangent_aval(args[i].aval()).dtype == DType::float0);
    if (!in_zeros.back()) lin_in.push_back(instantiate_zero(tangents[n + i], args[i].aval()));
  }
  CustomLinParams lin;
  lin.bwd = c.bwd;
  lin.num_res = int64_t(res.size());
  lin.out_avals = ParamObjectPtr(avals);
  lin.in_zeros = in_zeros;
  const Params lp = lin.to_params();
  auto touts = minijax::bind(primitive("custom_lin"), lin_in, lp, f.loc);
  return {outs, touts};
}

std::vector<Array> custom_lin_transpose(const std::vector<Array>& cts_out, const std::vector<Array>& args,
                                        const std::vector<ShapedArray>& avals, const Params& ps) {
  const CustomLinParams lin = CustomLinParams::from(ps);
  const auto& b = object<BwdObject>(lin.bwd, "bwd");
  const auto& out_avals = object<AvalsObject>(lin.out_avals, "out_avals").avals;
  const size_t nres = size_t(lin.num_res);
  std::vector<Array> res = slice_vec(args, 0, nres);
  std::vector<Array> cts;
  for (size_t i = 0; i < out_avals.size(); ++i) cts.push_back(instantiate_zero(cts_out.at(i), out_avals[i]));
  std::vector<Array> g = b.bwd(res, cts);
  // One operand per argument whose tangent is not float0 (in_zeros[i] = 0).
  const std::vector<int64_t> in_zeros = lin.in_zeros.value_or(std::vector<int64_t>(avals.size() - nres, 0));
  const size_t nargs = in_zeros.size();
  if (g.size() != nargs)
    throw TypeError("Custom VJP bwd rule of '" + b.fun_name + "' must produce one cotangent per "
                        "array argument of the function: it has " + std::to_string(nargs) +
                        " array arguments, bwd returned " + std::to_string(g.size()),
                    b.loc);
  std::vector<Array> result(nres);
  for (size_t i = 0, op = nres; i < nargs; ++i) {
    if (in_zeros[i]) continue;  // an int/bool argument: its cotangent is float0, not an operand's
    const ShapedArray& a = avals.at(op++);
    if (a.dtype == DType::float0 || !g[i].defined()) {
      result.push_back(Array());
      continue;
    }
    if (g[i].shape() != a.shape || g[i].dtype() != a.dtype)
      throw TypeError("Custom VJP bwd rule of '" + b.fun_name + "' must produce an output with "
                          "the same shape/dtypes as the args tuple of the primal function, but "
                          "at output " + std::to_string(i) + " it produced " + g[i].aval().str() +
                          " for an input of tangent type " + a.str(),
                      b.loc);
    result.push_back(g[i]);
  }
  return result;
}

std::pair<std::vector<Array>, std::vector<int64_t>> custom_vjp_call_batch(
    const std::vector<Array>& vals, const std::vector<int64_t>& dims, const Params& ps) {
  int64_t size = 0;
  std::vector<Array> b = batch_all_at_front(vals, dims, &size);
  const CallParams c = custom_vjp_call_params(ps);
  size_t n = size_t(num_consts(c));
  bool const_batched = false;
  for (size_t i = 0; i < n; ++i) const_batched |= dims[i] != kNotMapped;
  object<FwdObject>(c.fwd, "fwd");
  object<BwdObject>(c.bwd, "bwd");
  auto fobj = std::static_pointer_cast<const FwdObject>(c.fwd);
  auto bobj = std::static_pointer_cast<const BwdObject>(c.bwd);
  std::vector<ShapedArray> arg_tangent_avals;  // per element, for instantiating bwd's zeros
  for (size_t i = n; i < vals.size(); ++i) {
    ShapedArray a = b[i].aval();
    a.shape.erase(a.shape.begin());
    arg_tangent_avals.push_back(tangent_aval(a));
  }
  CustomFwdFlat bfwd = [fobj, n, const_batched](const std::vector<Array>& xs) {
    if (const_batched) throw batched_closure_error(*fobj, "custom_vjp");
    std::vector<Array> args = slice_vec(xs, n, xs.size());
    size_t nout = 0;
    FlatFn inner = [&](const std::vector<Array>& ys) {
      auto [o, r] = fobj->fwd(ys);
      nout = o.size();
      o.insert(o.end(), r.begin(), r.end());
      return o;
    };
    auto r = vmap_flat(inner, args, std::vector<int64_t>(args.size(), 0), {}, fobj->loc);
    return std::pair{slice_vec(r, 0, nout), slice_vec(r, nout, r.size())};
  };
  CustomBwdFlat bbwd = [bobj, n, arg_tangent_avals](const std::vector<Array>& res,
                                                    const std::vector<Array>& cts) {
    size_t nr = res.size();
    std::vector<Array> xs = res;
    xs.insert(xs.end(), cts.begin(), cts.end());
    FlatFn inner = [&](const std::vector<Array>& ys) {
      auto g = bobj->bwd(slice_vec(ys, 0, nr), slice_vec(ys, nr, ys.size()));
      if (g.size() != arg_tangent_avals.size())
        throw TypeError("Custom VJP bwd rule of '" + bobj->fun_name + "' must produce one "
                            "cotangent per array argument of the function: it has " +
                            std::to_string(arg_tangent_avals.size()) + ", bwd returned " +
                            std::to_string(g.size()),
                        bobj->loc);
      for (size_t i = 0; i < g.size(); ++i)
        if (arg_tangent_avals[i].dtype == DType::float0) g[i] = Array::allocate(arg_tangent_avals[i]);
        else g[i] = instantiate_zero(g[i], arg_tangent_avals[i]);
      return g;
    };
    auto r = vmap_flat(inner, xs, std::vector<int64_t>(xs.size(), 0), {}, bobj->loc);
    std::vector<Array> out(n);
    out.insert(out.end(), r.begin(), r.end());
    return out;
  };
  const std::string& name = c.name.value();
  auto outs = detail::custom_vjp_call(batched_call(c.jaxpr), bfwd, bbwd, b, name,
                              fobj->name, bobj->name, fobj->loc);
  return {outs, std::vector<int64_t>(outs.size(), 0)};
}

Registrar reg([] {
  {
    auto& p = get_or_create_primitive("custom_jvp_call");
    p.multiple_results = true;
    set_call_rules(p);
    p.jvp = custom_jvp_call_jvp;
    p.batch = custom_jvp_call_batch;
    p.no_transpose_reason = "not linear (its JVP runs the custom rule)";
  }
  {
    auto& p = get_or_create_primitive("custom_vjp_call");
    p.multiple_results = true;
    set_call_rules(p);
    p.jvp = custom_vjp_call_jvp;
    p.batch = custom_vjp_call_batch;
    p.no_transpose_reason = "not linear (its JVP runs fwd and emits custom_lin)";
  }
  {
    auto& p = get_or_create_primitive("custom_lin");
    p.multiple_results = true;
    p.shape_rule = [](const std::vector<ShapedArray>& in, const Params& ps) {
      const CustomLinParams lin = CustomLinParams::from(ps);
      const size_t nres = size_t(lin.num_res);
      if (in.size() < nres)
        throw TypeError("custom_lin has " + std::to_string(nres) + " residuals but only " +
                        std::to_string(in.size()) + " operands");
      return object<AvalsObject>(lin.out_avals, "out_avals").avals;
    };
    // JAX's custom_lin is only ever transposed: evaluating, differentiating or batching it means
    // forward mode was applied to a custom_vjp function.
    p.impl = [](const std::vector<Array>&, const Params& ps,
                const std::vector<ShapedArray>&) -> std::vector<Array> {
      throw NotDifferentiableError(kForwardModeError, object<BwdObject>(CustomLinParams::from(ps).bwd, "bwd").loc);
    };
    p.jvp = [](const std::vector<Array>&, const std::vector<Array>&,
               const Params& ps) -> std::pair<std::vector<Array>, std::vector<Array>> {
      throw NotDifferentiableError(kForwardModeError, object<BwdObject>(CustomLinParams::from(ps).bwd, "bwd").loc);
    };
    p.batch = [](const std::vector<Array>&, const std::vector<int64_t>&,
                 const Params& ps) -> std::pair<std::vector<Array>, std::vector<int64_t>> {
      throw NotDifferentiableError(kForwardModeError, object<BwdObject>(CustomLinParams::from(ps).bwd, "bwd").loc);
    };
    p.transpose = custom_lin_transpose;
  }
});

template <class Obj>
std::shared_ptr<Obj> make_rule_object(const std::string& name, const std::vector<Array>& consts,
                                      std::source_location loc) {
  auto o = std::make_shared<Obj>();
  o->name = name;
  o->consts = consts;
  o->loc = loc;
  return o;
}

/// Traces fun on the avals of args; returns (call_jaxpr with consts hoisted, consts).
std::pair<ClosedJaxprPtr, std::vector<Array>> trace_call(const FlatFn& fun,
                                                         const std::vector<Array>& args,
                                                         std::source_location loc) {
  std::vector<ShapedArray> in_avals;
  for (auto& a : args) in_avals.push_back(a.aval());
  ClosedJaxpr cj = trace_to_jaxpr(fun, in_avals, loc);
  return {hoist_consts(cj), cj.consts};
}

// The params of a custom call `p` binds: its body, name, symbolic_zeros=False and the number of
// closed-over leading operands (when any).
CallParams custom_call_params(const Primitive& p, const ClosedJaxprPtr& cj, const std::string& name,
                              size_t nconsts) {
  CallParams c;
  c.body_key = p.body_params.at(0);
  c.jaxpr = cj;
  c.name = name;
  c.symbolic_zeros = false;
  if (nconsts) c.num_consts = int64_t(nconsts);
  return c;
}

}  // namespace

std::vector<Array> custom_jvp_call(const FlatFn& fun, const CustomJvpFlatRule& jvp,
                                   const std::vector<Array>& args, const std::string& name,
                                   const std::string& jvp_name, std::source_location loc) {
  auto [cj, consts] = trace_call(fun, args, loc);
  auto obj = make_rule_object<JvpRuleObject>(jvp_name, consts, loc);
  obj->rule = jvp;
  const Primitive& p = custom_jvp_call_primitive();
  CallParams ps = custom_call_params(p, cj, name, consts.size());
  ps.jvp = ParamObjectPtr(obj);
  std::vector<Array> operands = consts;
  operands.insert(operands.end(), args.begin(), args.end());
  return minijax::bind(p, operands, ps.to_params(), loc);
}

namespace detail {
std::vector<Array> custom_vjp_call(const FlatFn& fun, const CustomFwdFlat& fwd,
                                   const CustomBwdFlat& bwd, const std::vector<Array>& args,
                                   const std::string& name, const std::string& fwd_name,
                                   const std::string& bwd_name, std::source_location loc) {
  auto [cj, consts] = trace_call(fun, args, loc);
  auto f = make_rule_object<FwdObject>(fwd_name, consts, loc);
  f->fwd = fwd;
  auto b = make_rule_object<BwdObject>(bwd_name, consts, loc);
  b->bwd = bwd;
  b->fun_name = name;
  const Primitive& p = custom_vjp_call_primitive();
  CallParams ps = custom_call_params(p, cj, name, consts.size());
  ps.fwd = ParamObjectPtr(f);
  ps.bwd = ParamObjectPtr(b);
  std::vector<Array> operands = consts;
  operands.insert(operands.end(), args.begin(), args.end());
  return minijax::bind(p, operands, ps.to_params(), loc);
}
}  // namespace detail

namespace {

// Classes: the custom calls cost their body and are removed by inline_calls before lowering;
// custom_lin exists only between linearize and transpose.
Registrar reg_custom_classes([] {
  for (const char* name : {"custom_jvp_call", "custom_vjp_call"}) {
    auto& p = get_or_create_primitive(name);
    set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
    p.cost = call_cost;
    p.inlined = true;
  }
  set_classes(get_or_create_primitive("custom_lin"), OpClass::other, CostClass::data_movement,
              FusionClass::normal);
});

}  // namespace

}  // namespace minijax
