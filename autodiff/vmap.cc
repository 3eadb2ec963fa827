// minijax batching transformation (see vmap.h): BatchTracer, BatchTrace and vmap_flat.
// Owns the trace-level batching engine; the per-primitive rules live in autodiff/rules/.
#include "autodiff/vmap.h"

#include "autodiff/batching.h"
#include "autodiff/batching_util.h"
#include "core/pjit.h"

namespace minijax {

BatchTracer::BatchTracer(std::shared_ptr<Trace> t, Array val, int64_t batch_dim)
    : Tracer(std::move(t)), val_(std::move(val)), batch_dim_(batch_dim) {
  aval_ = val_.aval();
  if (batch_dim_ != kNotMapped) {
    if (batch_dim_ < 0 || batch_dim_ >= aval_.ndim())
      throw ValueError("BatchTracer: batch dim " + std::to_string(batch_dim_) +
                       " out of range for a value of aval " + aval_.str());
    aval_.shape.erase(aval_.shape.begin() + batch_dim_);
  }
}

std::optional<Array> BatchTracer::concrete_value() const {
  if (batch_dim_ != kNotMapped) return std::nullopt;
  if (val_.is_concrete()) return val_;
  return val_.tracer()->concrete_value();
}

std::string BatchTracer::describe() const {
  return "a value batched by vmap (" + aval_.str() + " per batch element, batch dim " +
         std::to_string(batch_dim_) + " of " + val_.aval().str() +
         "): it differs across the batch, so C++ control flow cannot depend on it; use "
         "lax::select_n / where (or lax control flow) instead";
}

Array BatchTrace::lift(const Array& x) {
  return Array(std::make_shared<BatchTracer>(shared_from_this(), x, kNotMapped));
}

std::pair<Array, int64_t> batch_unpack(const Trace& t, const Array& x) {
  if (auto* tr = x.tracer(); tr && tr->trace().get() == &t) {
    auto* bt = static_cast<const BatchTracer*>(tr);
    return {bt->val(), bt->batch_dim()};
  }
  return {x, kNotMapped};
}

std::vector<Array> BatchTrace::process_primitive(const Primitive& p, const std::vector<Array>& in,
                                                 const Params& params, std::source_location loc) {
  std::vector<Array> vals;
  std::vector<int64_t> dims;
  vals.reserve(in.size());
  dims.reserve(in.size());
  bool any_batched = false;
  for (const auto& a : in) {
    auto [v, d] = batch_unpack(*this, a);
    vals.push_back(v);
    dims.push_back(d);
    any_batched |= d != kNotMapped;
  }
  // Nothing batched: the operation belongs to the enclosing traces (JAX's full_lower of inputs).
  if (!any_batched) return minijax::bind(p, vals, params, loc);

  // Shape-check the element operands first, so that user errors name p, the per-element avals
  // and the user's call site rather than some operation inside the batching rule.
  std::vector<ShapedArray> elem_avals;
  elem_avals.reserve(in.size());
  for (const auto& a : in) elem_avals.push_back(a.aval());
  auto out_avals = abstract_eval(p, elem_avals, params, loc);

  if (!p.batch) {
    std::string msg = "vmap: primitive '" + p.name + "' has no batching rule";
    if (!p.no_batch_reason.empty()) msg += " (" + p.no_batch_reason + ")";
    throw ValueError(msg, loc);
  }
  auto [outs, out_dims] = p.batch(vals, dims, params);
  if (outs.size() != out_dims.size() || outs.size() != out_avals.size())
    throw ValueError("vmap: the batching rule of '" + p.name + "' returned " +
                         std::to_string(outs.size()) + " outputs with " +
                         std::to_string(out_dims.size()) + " batch dims; the primitive has " +
                         std::to_string(out_avals.size()) + " outputs",
                     loc);
  std::vector<Array> result;
  result.reserve(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    const int64_t d = out_dims[i];
    Shape elem = outs[i].shape();
    bool ok = outs[i].dtype() == out_avals[i].dtype;
    if (d != kNotMapped) {
      ok = ok && d >= 0 && d < outs[i].ndim() && elem[size_t(d)] == axis_size_;
      if (ok) elem.erase(elem.begin() + d);
    }
    ok = ok && elem == out_avals[i].shape;
    if (!ok)
      throw ValueError("vmap: the batching rule of '" + p.name + "' returned output " +
                           std::to_string(i) + " " + outs[i].aval().str() + " with batch dim " +
                           std::to_string(d) + ", but the element output is " +
                           out_avals[i].str() + " and the batch size " +
                           std::to_string(axis_size_),
                       loc);
    // Unbatched outputs leave this trace (JAX's full_lower).
    if (d == kNotMapped) result.push_back(outs[i]);
    else result.push_back(Array(std::make_shared<BatchTracer>(shared_from_this(), outs[i], d)));
  }
  return result;
}

namespace {
std::string axis_list(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + (v[i] == kNotMapped ? std::string("kNotMapped") : std::to_string(v[i]));
  return s + ")";
}
}  // namespace

std::vector<Array> vmap_flat(const FlatFn& f, const std::vector<Array>& args,
                             const std::vector<int64_t>& in_axes,
                             const std::vector<int64_t>& out_axes, std::source_location loc) {
  if (args.size() != in_axes.size())
    throw ValueError("vmap in_axes has " + std::to_string(in_axes.size()) + " entries " +
                         axis_list(in_axes) + " but there are " + std::to_string(args.size()) +
                         " array arguments",
                     loc);
  // Normalise the axes and find the common axis size.
  std::vector<int64_t> axes = in_axes;
  int64_t size = -1;
  bool inconsistent = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].defined())
      throw ValueError("vmap: argument " + std::to_string(i) + " is an empty Array", loc);
    if (axes[i] == kNotMapped) continue;
    const int64_t nd = args[i].ndim();
    if (axes[i] < 0) axes[i] += nd;
    if (axes[i] < 0 || axes[i] >= nd)
      throw ValueError("vmap was requested to map argument " + std::to_string(i) + " (" +
                           args[i].aval().str() + ") over axis " + std::to_string(in_axes[i]) +
                           ", which is out of range for its rank " + std::to_string(nd) +
                           " (negative axes count from the end)",
                       loc);
    const int64_t s = args[i].shape()[size_t(axes[i])];
    if (size < 0) size = s;
    else if (s != size) inconsistent = true;
  }
  if (size < 0)
    throw ValueError("vmap must have at least one mapped argument: in_axes " + axis_list(in_axes) +
                         " maps none of the " + std::to_string(args.size()) + " arguments",
                     loc);
  if (inconsistent) {
    std::string msg = "vmap got inconsistent sizes for array axes to be mapped:";
    for (size_t i = 0; i < args.size(); ++i)
      if (axes[i] != kNotMapped)
        msg += "\n  * argument " + std::to_string(i) + " of type " + args[i].aval().str() +
               " has size " + std::to_string(args[i].shape()[size_t(axes[i])]) + " along axis " +
               std::to_string(axes[i]);
    throw ValueError(msg, loc);
  }

  std::vector<Array> vals;
  std::vector<int64_t> dims;
  {
    TraceScope<BatchTrace> scope(/*dynamic=*/false, size);
    std::vector<Array> ins;
    ins.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i)
      ins.push_back(axes[i] == kNotMapped
                        ? args[i]
                        : Array(std::make_shared<BatchTracer>(scope.get(), args[i], axes[i])));
    std::vector<Array> outs = f(ins);
    for (const auto& o : outs) {
      if (!o.defined())
        throw ValueError("vmap: the mapped function returned an empty Array", loc);
      auto [v, d] = batch_unpack(*scope, o);
      vals.push_back(v);
      dims.push_back(d);
    }
  }

  std::vector<int64_t> oaxes;
  if (out_axes.empty()) oaxes.assign(vals.size(), 0);
  else if (out_axes.size() == 1) oaxes.assign(vals.size(), out_axes[0]);
  else if (out_axes.size() == vals.size()) oaxes = out_axes;
  else
    throw ValueError("vmap out_axes has " + std::to_string(out_axes.size()) + " entries " +
                         axis_list(out_axes) + " but the function returned " +
                         std::to_string(vals.size()) + " arrays (give one per output, or one for all)",
                     loc);
  std::vector<Array> result;
  result.reserve(vals.size());
  for (size_t i = 0; i < vals.size(); ++i) {
    int64_t oa = oaxes[i];
    if (oa == kNotMapped) {
      if (dims[i] != kNotMapped)
        throw ValueError("vmap has mapped output but out_axes is kNotMapped: output " +
                             std::to_string(i) + " (" + vals[i].aval().str() +
                             ") depends on a mapped argument",
                         loc);
      result.push_back(vals[i]);
      continue;
    }
    const int64_t rank = vals[i].ndim() + (dims[i] == kNotMapped ? 1 : 0);
    if (oa < 0) oa += rank;
    if (oa < 0 || oa >= rank)
      throw ValueError("vmap out_axes " + std::to_string(oaxes[i]) + " is out of range for output " +
                           std::to_string(i) + " of batched rank " + std::to_string(rank) +
                           " (negative axes count from the end)",
                       loc);
    result.push_back(materialize_batch(vals[i], dims[i], size, oa));
  }
  return result;
}

std::pair<Jaxpr, std::vector<Array>> batch_body_at_front(const ClosedJaxprPtr& body,
                                                         const std::vector<Array>& args,
                                                         const std::vector<int64_t>& dims) {
  batch_axis_size(args, dims);  // validates the sizes
  std::vector<Array> moved;
  std::vector<int64_t> in_axes;
  std::vector<ShapedArray> in_avals;
  for (size_t i = 0; i < args.size(); ++i) {
    bool mapped = dims[i] != kNotMapped;
    moved.push_back(mapped ? move_batch_dim(args[i], dims[i], 0) : args[i]);
    in_axes.push_back(mapped ? 0 : kNotMapped);
    in_avals.push_back(moved.back().aval());
  }
  FlatFn fn = [body](const std::vector<Array>& xs) { return eval_jaxpr(*body, xs); };
  const size_t nout = body->jaxpr->outvars.size();
  ClosedJaxpr batched = trace_to_jaxpr(
      [&](const std::vector<Array>& xs) { return vmap_flat(fn, xs, in_axes, std::vector<int64_t>(nout, 0)); },
      in_avals);
  std::vector<Array> call_args = batched.consts;
  call_args.insert(call_args.end(), moved.begin(), moved.end());
  return {convert_constvars_jaxpr(*batched.jaxpr), call_args};
}

}  // namespace minijax
