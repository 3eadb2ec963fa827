// minijax generic reduce_window (JAX's reduce_window_p): n operands of one shape and n scalar
// init values, reduced over each window by a jaxpr body. Owns its shape rule, eager
// implementation, DCE rule, classes and lax::reduce_window (body tracing, monoid detection).
//
// Operands are (operands..., init_values...); the body (param `jaxpr`, a closed jaxpr without
// constvars) maps (accumulators..., values...) -> new accumulators..., each a scalar of its init
// value's dtype. Each window starts from the init values, and padding and base-dilation holes
// hold the init values, as XLA's ReduceWindow; windows are reduced in window order (row-major).
// lax::reduce_window binds reduce_window_sum/max/min instead when the body is the add, max or
// min of its two arguments and the one init value is that monoid's identity, as JAX's
// _get_monoid_window_reducer does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <unordered_map>

#include "core/bodies.h"
#include "core/dce.h"
#include "core/primitives/window_geometry.h"
#include "core/staging.h"
#include "core/trace.h"
#include "core/windowed_reductions.h"

namespace minijax {
namespace {

using window_detail::window_output_shape;
using window_detail::window_size;

std::string types_str(const std::vector<ShapedArray>& avals) {
  std::string s = "(";
  for (size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + avals[i].str();
  return s + (avals.size() == 1 ? ",)" : ")");
}

// Throws TypeError unless `body` maps (init avals, init avals) -> init avals, all scalars.
void check_body(const Jaxpr& body, const std::vector<ShapedArray>& inits) {
  std::vector<ShapedArray> want_in = inits, want_out = inits;
  want_in.insert(want_in.end(), inits.begin(), inits.end());
  std::vector<ShapedArray> got_in, got_out;
  for (auto& v : body.invars) got_in.push_back(v.aval());
  for (auto& a : body.outvars) got_out.push_back(atom_aval(a));
  auto same = [](const std::vector<ShapedArray>& a, const std::vector<ShapedArray>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].shape != b[i].shape || a[i].dtype != b[i].dtype) return false;
    return true;
  };
  if (!same(got_in, want_in) || !same(got_out, want_out))
    throw TypeError("the body must map (scalar, scalar) -> scalar of the init values' dtypes, " +
                    types_str(want_in) + " -> " + types_str(want_out) + ", but it maps " + types_str(got_in) +
                    " -> " + types_str(got_out));
  if (jaxpr_has_effects(body)) throw TypeError("the body has effects; a reduce_window body must be pure");
  if (!body.constvars.empty())
    throw TypeError(
        "the body closes over a value of type " + body.constvars[0].aval().str() +
        " (a traced value or a non-scalar constant); it may use only its arguments and scalar constants");
}

std::vector<ShapedArray> shape_rule(const std::vector<ShapedArray>& in, const Params& p) {
  const ReduceWindowParams rp = ReduceWindowParams::from(p);
  if (in.empty() || in.size() % 2 != 0)
    throw TypeError(
        "reduce_window takes (operands..., init_values...), an even number of at least 2 operands, got " +
        std::to_string(in.size()));
  const size_t n = in.size() / 2;
  std::vector<ShapedArray> inits(in.begin() + std::ptrdiff_t(n), in.end()),
      ops(in.begin(), in.begin() + std::ptrdiff_t(n));
  for (auto& a : inits)
    if (a.ndim() != 0) throw TypeError("reduce_window expects scalar init_values, got " + types_str(inits));
  for (size_t k = 0; k < n; ++k) {
    if (ops[k].dtype != inits[k].dtype || ops[k].dtype == DType::float0 || ops[k].dtype == DType::token)
      throw TypeError("reduce_window got inconsistent dtypes for operands and init_values: operands " +
                      types_str(ops) + ", init_values " + types_str(inits));
    if (ops[k].shape != ops[0].shape)
      throw ShapeError("reduce_window's operands must have one shape, got " + types_str(ops));
    inits[k] = ShapedArray{{}, inits[k].dtype};
  }
  check_body(*rp.jaxpr->jaxpr, inits);
  const Shape out = window_output_shape(ops[0], rp.window);
  std::vector<ShapedArray> outs;
  for (auto& o : ops) outs.push_back(ShapedArray{out, o.dtype, o.weak_type, o.memory_kind});
  return outs;
}

// Whether the body evaluates on arrays as on scalars: elementwise equations only (their rank-0
// operands combine with any shape), no bodies, no effects.
bool elementwise_body(const Jaxpr& j) {
  if (!j.constvars.empty()) return false;
  for (const Eqn& e : j.eqns)
    if (!e.primitive || e.primitive->op_class != OpClass::elementwise || !e.effects.empty() ||
        has_bodies(e.params))
      return false;
  return true;
}

// An array of `aval` whose every element is the single element of `v` (same dtype).
Array filled(const ShapedArray& aval, const Array& v) {
  Array r = Array::empty(aval);
  const size_t w = itemsize(aval.dtype);
  const char* src = static_cast<const char*>(v.raw_data());
  char* dst = static_cast<char*>(const_cast<void*>(r.raw_data()));
  for (int64_t i = 0; i < aval.size(); ++i) std::memcpy(dst + size_t(i) * w, src, w);
  return r;
}

// Evaluates an elementwise body on flat arrays by binding its equations (eval_jaxpr checks that
// arguments have the invars' scalar avals, so it does not apply).
std::vector<Array> eval_elementwise(const Jaxpr& j, const std::vector<Array>& args) {
  std::unordered_map<Var, Array, VarHash> env;
  for (size_t i = 0; i < args.size(); ++i) env[j.invars[i]] = args[i];
  auto read = [&](const Atom& a) -> Array {
    if (auto* l = std::get_if<Literal>(&a)) return l->value;
    return env.at(std::get<Var>(a));
  };
  for (const Eqn& e : j.eqns) {
    std::vector<Array> ins;
    for (auto& a : e.inputs) ins.push_back(read(a));
    std::vector<Array> outs = minijax::bind(*e.primitive, ins, e.params);
    for (size_t i = 0; i < e.outputs.size(); ++i) env[e.outputs[i]] = outs[i];
  }
  std::vector<Array> r;
  for (auto& a : j.outvars) r.push_back(read(a));
  return r;
}

std::vector<Array> impl(const std::vector<Array>& args, const Params& p,
                        const std::vector<ShapedArray>& outs) {
  const ReduceWindowParams rp = ReduceWindowParams::from(p);
  const Jaxpr& body = *rp.jaxpr->jaxpr;
  const size_t n = args.size() / 2;
  const int64_t n_out = shape_size(outs.at(0).shape), n_win = window_size(rp.window);
  std::vector<Array> res;
  for (auto& o : outs) res.push_back(Array::empty(o));
  if (n_out == 0) return res;
  std::vector<int64_t> tab(size_t(n_out * n_win));  // tab[k * n_out + o]: operand offset or -1
  window_detail::for_each_window(args[0].shape(), rp.window, [&](int64_t o, const int64_t* offs) {
    for (int64_t k = 0; k < n_win; ++k) tab[size_t(k * n_out + o)] = offs[k];
  });
  std::vector<const char*> src(n), init(n);
  std::vector<size_t> width(n);
  for (size_t i = 0; i < n; ++i) {
    src[i] = static_cast<const char*>(args[i].raw_data());
    init[i] = static_cast<const char*>(args[n + i].raw_data());
    width[i] = itemsize(args[i].dtype());
  }
  // Element o of operand i under window element k (the init value on padding and holes).
  auto element = [&](size_t i, int64_t k, int64_t o) {
    const int64_t off = tab[size_t(k * n_out + o)];
    return off < 0 ? init[i] : src[i] + size_t(off) * width[i];
  };
  auto store = [&](size_t i, int64_t o, const Array& v) {
    std::memcpy(static_cast<char*>(const_cast<void*>(res[i].raw_data())) + size_t(o) * width[i], v.raw_data(),
                width[i]);
  };
  if (elementwise_body(body)) {  // one evaluation of the body per window element, over all outputs
    std::vector<Array> acc;
    for (size_t i = 0; i < n; ++i) acc.push_back(filled(ShapedArray{{n_out}, args[i].dtype()}, args[n + i]));
    for (int64_t k = 0; k < n_win; ++k) {
      std::vector<Array> in = acc;
      for (size_t i = 0; i < n; ++i) {
        Array col = Array::empty(ShapedArray{{n_out}, args[i].dtype()});
        char* dst = static_cast<char*>(const_cast<void*>(col.raw_data()));
        for (int64_t o = 0; o < n_out; ++o)
          std::memcpy(dst + size_t(o) * width[i], element(i, k, o), width[i]);
        in.push_back(col);
      }
      acc = eval_elementwise(body, in);
      for (size_t i = 0; i < n; ++i)
        if (acc[i].ndim() == 0) acc[i] = filled(ShapedArray{{n_out}, args[i].dtype()}, acc[i]);
    }
    for (size_t i = 0; i < n; ++i)
      std::memcpy(const_cast<void*>(res[i].raw_data()), acc[i].raw_data(), size_t(n_out) * width[i]);
    return res;
  }
  auto scalar = [&](size_t i, const char* bytes) {  // a rank-0 array of the body's invar aval
    Array a = Array::empty(body.invars[i].aval());
    std::memcpy(const_cast<void*>(a.raw_data()), bytes, width[i % n]);
    return a;
  };
  for (int64_t o = 0; o < n_out; ++o) {
    std::vector<Array> acc;
    for (size_t i = 0; i < n; ++i) acc.push_back(scalar(i, init[i]));
    for (int64_t k = 0; k < n_win; ++k) {
      std::vector<Array> in = acc;
      for (size_t i = 0; i < n; ++i) in.push_back(scalar(n + i, element(i, k, o)));
      acc = eval_jaxpr(*rp.jaxpr, in);
      for (size_t i = 0; i < n; ++i) acc[i] = scalar(i, static_cast<const char*>(acc[i].raw_data()));
    }
    for (size_t i = 0; i < n; ++i) store(i, o, acc[i]);
  }
  return res;
}

// DCE: the accumulators an used output needs (a fixpoint: an accumulator's body output may read
// other accumulators and values) are kept, with their operands and init values; the body is
// pruned to them. An equation none of whose outputs is used is removed (the body has no effects).
std::pair<std::vector<bool>, std::optional<Eqn>> dce(const std::vector<bool>& used_outs, const Eqn& e) {
  const size_t n = e.outputs.size();
  if (std::find(used_outs.begin(), used_outs.end(), true) == used_outs.end() && !eqn_has_effects(e))
    return {std::vector<bool>(e.inputs.size(), false), std::nullopt};
  ReduceWindowParams rp = reduce_window_params(e);
  const Jaxpr& body = *rp.jaxpr->jaxpr;
  std::vector<bool> keep = used_outs;
  for (bool changed = true; changed;) {
    changed = false;
    const std::vector<bool> used_in = dce_jaxpr(body, keep).second;
    for (size_t k = 0; k < n; ++k)
      if (!keep[k] && (used_in[k] || used_in[n + k])) keep[k] = changed = true;
  }
  std::vector<bool> inst(2 * n);
  for (size_t k = 0; k < n; ++k) inst[k] = inst[n + k] = keep[k];
  auto cj = std::make_shared<ClosedJaxpr>();
  cj->jaxpr = std::make_shared<Jaxpr>(dce_jaxpr(body, keep, inst).first);
  cj->consts = rp.jaxpr->consts;
  rp.jaxpr = cj;
  Eqn ne;
  ne.primitive = e.primitive;
  ne.effects = e.effects;
  ne.params = rp.to_params();
  std::vector<bool> used_ins(2 * n, false);
  for (size_t part = 0; part < 2; ++part)
    for (size_t k = 0; k < n; ++k)
      if (keep[k]) {
        used_ins[part * n + k] = true;
        ne.inputs.push_back(e.inputs[part * n + k]);
      }
  for (size_t k = 0; k < n; ++k)
    if (keep[k]) ne.outputs.push_back(e.outputs[k]);
  return {used_ins, std::move(ne)};
}

Registrar reg([] {
  auto& p = get_or_create_primitive("reduce_window");
  p.multiple_results = true;
  // The body maps scalars to scalars: no operand or result is one of its invars or outvars.
  p.body_params = {"jaxpr"};
  p.body_form = BodyForm::none;
  p.shape_rule = shape_rule;
  p.impl = impl;
  p.dce = dce;
  set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
  // The body's flops (at least one) per window element per output element.
  p.cost = [](const Eqn& e, bool count_bytes, const JaxprCost& cost) {
    CostEstimate c = operand_and_result_bytes(e, count_bytes);
    const ReduceWindowParams rp = reduce_window_params(e);
    const CostEstimate b = cost(*rp.jaxpr->jaxpr, false);
    const double per = double(shape_size(e.outputs.at(0).aval().shape)) * double(window_size(rp.window));
    c.flops = std::max(b.flops, 1.0) * per;
    c.transcendentals = b.transcendentals * per;
    return c;
  };
});

// The identity of the monoid `prim` (add, max or min) in dtype d, or NaN where it has none.
double monoid_identity(const Primitive& prim, DType d) {
  if (&prim == &primitive("add")) return d == DType::bool_ ? NAN : 0.0;
  const bool max = &prim == &primitive("max");
  if (!max && &prim != &primitive("min")) return NAN;
  switch (d) {
    case DType::bool_: return max ? 0.0 : 1.0;
    case DType::i32:
      return max ? double(std::numeric_limits<int32_t>::lowest())
                 : double(std::numeric_limits<int32_t>::max());
    case DType::u32: return max ? 0.0 : double(std::numeric_limits<uint32_t>::max());
    default: return max ? -INFINITY : INFINITY;
  }
}

// The reduce_window_sum/max/min primitive the body and init value amount to, or null.
const Primitive* monoid_of(const Jaxpr& body, const std::vector<Array>& inits) {
  if (inits.size() != 1 || !inits[0].is_concrete() || inits[0].ndim() != 0 || body.eqns.size() != 1 ||
      body.outvars.size() != 1 || body.invars.size() != 2)
    return nullptr;
  const Eqn& e = body.eqns[0];
  const Var* out = std::get_if<Var>(&body.outvars[0]);
  if (e.inputs.size() != 2 || e.outputs.size() != 1 || !out || !(*out == e.outputs[0])) return nullptr;
  const Var* a = std::get_if<Var>(&e.inputs[0]);
  const Var* b = std::get_if<Var>(&e.inputs[1]);
  const Var &acc = body.invars[0], &x = body.invars[1];
  if (!a || !b || !((*a == acc && *b == x) || (*a == x && *b == acc))) return nullptr;
  const double id = monoid_identity(*e.primitive, inits[0].dtype());
  if (std::isnan(id) || inits[0].item_f64() != id) return nullptr;
  if (e.primitive == &primitive("add")) return &primitive("reduce_window_sum");
  return &primitive(e.primitive == &primitive("max") ? "reduce_window_max" : "reduce_window_min");
}

// Checks the operands and init values of lax::reduce_window; returns the init values' avals.
std::vector<ShapedArray> check_operands(const std::vector<Array>& operands, const std::vector<Array>& inits,
                                        std::source_location loc) {
  if (operands.empty()) throw ValueError("reduce_window must have at least one operand", loc);
  if (operands.size() != inits.size())
    throw ValueError("reduce_window must have as many operands as init_values, got " +
                         std::to_string(operands.size()) + " and " + std::to_string(inits.size()),
                     loc);
  std::vector<ShapedArray> ops, avals;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i].defined() || !inits[i].defined())
      throw ValueError("reduce_window: operand or init value " + std::to_string(i) + " is an empty Array",
                       loc);
    ops.push_back(operands[i].aval());
    avals.push_back(inits[i].aval());
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    if (avals[i].ndim() != 0)
      throw TypeError("reduce_window expects scalar init_values, got " + types_str(avals), loc);
    if (ops[i].dtype != avals[i].dtype)
      throw TypeError("reduce_window got inconsistent dtypes for operands and init_values: operands " +
                          types_str(ops) + ", init_values " + types_str(avals),
                      loc);
    if (ops[i].shape != ops[0].shape)
      throw ShapeError("reduce_window's operands must have one shape, got " + types_str(ops), loc);
    avals[i] = ShapedArray{{}, avals[i].dtype};
  }
  return avals;
}

}  // namespace

namespace lax {

std::vector<Array> reduce_window(const std::vector<Array>& operands, const std::vector<Array>& init_values,
                                 const WindowReducer& computation,
                                 const std::vector<int64_t>& window_dimensions,
                                 const std::vector<int64_t>& window_strides, const Padding& padding,
                                 const std::vector<int64_t>& base_dilation,
                                 const std::vector<int64_t>& window_dilation, std::source_location loc) {
  const std::vector<ShapedArray> init_avals = check_operands(operands, init_values, loc);
  const size_t n = operands.size();
  const WindowParams w = window_detail::resolve_window("reduce_window", operands[0].aval(), window_dimensions,
                                                       window_strides, padding, base_dilation,
                                                       window_dilation, loc);
  std::vector<ShapedArray> body_avals = init_avals;
  body_avals.insert(body_avals.end(), init_avals.begin(), init_avals.end());
  FlatFn f = [&](const std::vector<Array>& xs) {
    std::vector<Array> acc(xs.begin(), xs.begin() + std::ptrdiff_t(n)),
        x(xs.begin() + std::ptrdiff_t(n), xs.end());
    std::vector<Array> r = computation(acc, x);
    if (r.size() != n)
      throw TypeError("reduce_window: the body must return " + std::to_string(n) +
                          " accumulators, it returned " + std::to_string(r.size()),
                      loc);
    return r;
  };
  auto body = std::make_shared<ClosedJaxpr>(trace_to_jaxpr(f, body_avals, loc));
  try {
    check_body(*body->jaxpr, init_avals);
  } catch (const Error& e) {
    minijax::detail::rethrow_at(e, "reduce_window: ", loc);
    throw;
  }
  if (const Primitive* m = monoid_of(*body->jaxpr, init_values))
    return {minijax::bind1(*m, {operands[0]}, ReduceWindowMonoidParams{w}.to_params(), loc)};
  std::vector<Array> args = operands;
  args.insert(args.end(), init_values.begin(), init_values.end());
  return minijax::bind(primitive("reduce_window"), args, ReduceWindowParams{body, w}.to_params(), loc);
}

Array reduce_window(const Array& operand, const Array& init_value,
                    const std::function<Array(const Array&, const Array&)>& computation,
                    const std::vector<int64_t>& window_dimensions, const std::vector<int64_t>& window_strides,
                    const Padding& padding, const std::vector<int64_t>& base_dilation,
                    const std::vector<int64_t>& window_dilation, std::source_location loc) {
  WindowReducer r = [&computation](const std::vector<Array>& acc, const std::vector<Array>& x) {
    return std::vector<Array>{computation(acc[0], x[0])};
  };
  return reduce_window(std::vector<Array>{operand}, std::vector<Array>{init_value}, r, window_dimensions,
                       window_strides, padding, base_dilation, window_dilation, loc)
      .at(0);
}

}  // namespace lax

}  // namespace minijax
