// minijax autodiff rules of the slicing primitives: JVP, transpose and batching of slice,
// dynamic_slice, dynamic_update_slice, concatenate and pad (JAX's rules,
// jax/_src/lax/slicing.py and lax.py); iota is declared as having none (it has no operands).
//
// Each is linear in its array operands; index operands (start indices, gather indices) get
// zero (empty) cotangents. Transposes: slice -> pad with zeros (interior padding for strides);
// dynamic_slice -> dynamic_update_slice into zeros; dynamic_update_slice -> (ct with the update
// region zeroed, dynamic_slice of ct); concatenate -> slices; pad -> slice of the operand part
// and sum(ct) - sum(operand part) for the padding value (gather and scatters: gather_scatter.cc).
// Batching moves the batch dim to the front and shifts the params. Where an index operand is
// batched (per-example start indices or gather indices), the rule loops over the batch
// (rules::per_example_batch): exact, one equation group per example.
#include <algorithm>

#include "autodiff/batching_util.h"
#include "autodiff/jvp.h"
#include "autodiff/rules/linear_util.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/array_ops.h"

namespace minijax {

namespace {

using Outs = std::pair<std::vector<Array>, std::vector<Array>>;
using BOuts = std::pair<std::vector<Array>, std::vector<int64_t>>;
using Cts = std::vector<Array>;
using Args = std::vector<Array>;
using Avals = std::vector<ShapedArray>;
using Dims = std::vector<int64_t>;

std::vector<Array> tail(const Args& a, size_t from) { return {a.begin() + long(from), a.end()}; }

bool any_mapped(const Dims& d, size_t from) {
  for (size_t i = from; i < d.size(); ++i)
    if (d[i] != kNotMapped) return true;
  return false;
}

/// Zeros of the cotangent aval of a primal aval.
Array ct_zeros(const ShapedArray& a) { return lax::zeros_like_aval(tangent_aval(a)); }

/// A zero start index for a new leading batch dim, of the dtype of the existing ones.
Array zero_index(const Args& starts) {
  return lax::scalar(0, starts.empty() ? DType::i32 : starts[0].dtype());
}

// ---- slice ---------------------------------------------------------------------------------------

Cts slice_transpose(const Cts& cts, const Args&, const Avals& avals, const Params& p) {
  const Array& t = cts[0];
  if (!t.defined()) return {Array()};
  const Shape& shape = avals[0].shape;
  const SliceParams sp = SliceParams::from(p);
  const auto& start = sp.start_indices;
  auto strides = sp.strides_or_ones(shape.size());
  std::vector<lax::PadConfig> cfg;
  for (size_t i = 0; i < shape.size(); ++i) {
    // The last operand position read: start + (n - 1) * stride (nothing read when n == 0).
    const int64_t n = t.shape()[i];
    const int64_t real_limit = start[i] + (n == 0 ? 0 : 1 + (n - 1) * strides[i]);
    cfg.push_back({start[i], shape[i] - real_limit, strides[i] - 1});
  }
  return {lax::pad(t, lax::scalar(0, t.dtype()), cfg)};
}

BOuts slice_batch(const Args& args, const Dims& dims, const Params& p) {
  const int64_t d = dims[0];
  const Array& x = args[0];
  const SliceParams sp = SliceParams::from(p);
  auto start = sp.start_indices;
  auto limit = sp.limit_indices;
  start.insert(start.begin() + d, 0);
  limit.insert(limit.begin() + d, x.shape()[size_t(d)]);
  std::vector<int64_t> strides;
  if (sp.strides) {
    strides = *sp.strides;
    strides.insert(strides.begin() + d, 1);
  }
  return {{lax::slice(x, start, limit, strides)}, {d}};
}

// ---- dynamic_slice -------------------------------------------------------------------------------

Outs dynamic_slice_jvp(const Args& primals, const Args& tangents, const Params& p) {
  const Primitive& prim = primitive("dynamic_slice");
  Array out = minijax::bind1(prim, primals, p);
  Array t;
  if (tangents[0].defined() && is_floating(out.dtype())) {
    Args targs = primals;
    targs[0] = tangents[0];
    t = minijax::bind1(prim, targs, p);
  }
  return {{out}, {t}};
}

Cts dynamic_slice_transpose(const Cts& cts, const Args& args, const Avals& avals, const Params&) {
  Cts r(args.size());
  if (!cts[0].defined() || args[0].defined()) return r;
  r[0] = lax::dynamic_update_slice(ct_zeros(avals[0]), cts[0], tail(args, 1));
  return r;
}

BOuts dynamic_slice_batch(const Args& args, const Dims& dims, const Params& p) {
  if (any_mapped(dims, 1)) return rules::per_example_batch(primitive("dynamic_slice"), args, dims, p);
  Array x = move_batch_dim(args[0], dims[0], 0);
  Args starts = tail(args, 1);
  starts.insert(starts.begin(), zero_index(starts));
  auto sizes = DynamicSliceParams::from(p).slice_sizes;
  sizes.insert(sizes.begin(), x.shape()[0]);
  return {{lax::dynamic_slice(x, starts, sizes)}, {0}};
}

// ---- dynamic_update_slice ------------------------------------------------------------------------

Outs dus_jvp(const Args& primals, const Args& tangents, const Params& p) {
  const Primitive& prim = primitive("dynamic_update_slice");
  Array out = minijax::bind1(prim, primals, p);
  Array t;
  if ((tangents[0].defined() || tangents[1].defined()) && is_floating(out.dtype())) {
    Args targs = primals;
    targs[0] = instantiate_zero(tangents[0], primals[0].aval());
    targs[1] = instantiate_zero(tangents[1], primals[1].aval());
    t = minijax::bind1(prim, targs, p);
  }
  return {{out}, {t}};
}

Cts dus_transpose(const Cts& cts, const Args& args, const Avals& avals, const Params&) {
  Cts r(args.size());
  const Array& t = cts[0];
  if (!t.defined()) return r;
  Args starts = tail(args, 2);
  if (!args[0].defined()) r[0] = lax::dynamic_update_slice(t, ct_zeros(avals[1]), starts);
  if (!args[1].defined()) r[1] = lax::dynamic_slice(t, starts, avals[1].shape);
  return r;
}

BOuts dus_batch(const Args& args, const Dims& dims, const Params& p) {
  if (any_mapped(dims, 2)) return rules::per_example_batch(primitive("dynamic_update_slice"), args, dims, p);
  const int64_t size = batch_axis_size(args, dims);
  Array x = materialize_batch(args[0], dims[0], size, 0);
  Array u = materialize_batch(args[1], dims[1], size, 0);
  Args starts = tail(args, 2);
  starts.insert(starts.begin(), zero_index(starts));
  return {{lax::dynamic_update_slice(x, u, starts)}, {0}};
}

// ---- concatenate ---------------------------------------------------------------------------------

Outs concatenate_jvp(const Args& primals, const Args& tangents, const Params& p) {
  const Primitive& prim = primitive("concatenate");
  Array out = minijax::bind1(prim, primals, p);
  if (!is_floating(out.dtype())) return {{out}, {Array()}};
  Args ts;
  for (size_t i = 0; i < primals.size(); ++i) ts.push_back(instantiate_zero(tangents[i], primals[i].aval()));
  return {{out}, {minijax::bind1(prim, ts, p)}};
}

Cts concatenate_transpose(const Cts& cts, const Args& args, const Avals& avals, const Params& p) {
  Cts r(args.size());
  const Array& t = cts[0];
  if (!t.defined()) return r;
  const int64_t d = ConcatenateParams::from(p).dimension;
  int64_t pos = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const int64_t n = avals[i].shape[size_t(d)];
    if (!args[i].defined()) {
      std::vector<int64_t> start(t.shape().size(), 0), limit = t.shape();
      start[size_t(d)] = pos;
      limit[size_t(d)] = pos + n;
      r[i] = lax::slice(t, start, limit);
    }
    pos += n;
  }
  return r;
}

BOuts concatenate_batch(const Args& args, const Dims& dims, const Params& p) {
  auto [xs, size] = batch_to_front(args, dims, true);
  return {{lax::concatenate(xs, ConcatenateParams::from(p).dimension + 1)}, {0}};
}

// ---- pad -----------------------------------------------------------------------------------------

Outs pad_jvp(const Args& primals, const Args& tangents, const Params& p) {
  const Primitive& prim = primitive("pad");
  Array out = minijax::bind1(prim, primals, p);
  if (!is_floating(out.dtype())) return {{out}, {Array()}};
  Array tx = instantiate_zero(tangents[0], primals[0].aval());
  Array tv = instantiate_zero(tangents[1], primals[1].aval());
  return {{out}, {minijax::bind1(prim, {tx, tv}, p)}};
}

Cts pad_transpose(const Cts& cts, const Args& args, const Avals& avals, const Params& p) {
  Cts r(2);
  const Array& t = cts[0];
  if (!t.defined()) return r;
  auto cfg = PadParams::from(p).padding_config;
  // JAX's _pad_transpose: undo low/high padding (a pad by their negatives), then take every
  // (interior + 1)-th element.
  std::vector<lax::PadConfig> unpad;
  for (auto& c : cfg) unpad.push_back({-c.low, -c.high, 0});
  Array unpadded = lax::pad(t, lax::scalar(0, t.dtype()), unpad);
  std::vector<int64_t> start(cfg.size(), 0), strides;
  for (auto& c : cfg) strides.push_back(c.interior + 1);
  Array t_op = lax::slice(unpadded, start, unpadded.shape(), strides);
  if (!args[0].defined()) r[0] = t_op;
  if (!args[1].defined()) {
    auto all = [](const Array& a) {
      std::vector<int64_t> axes;
      for (int64_t i = 0; i < a.ndim(); ++i) axes.push_back(i);
      return lax::reduce_sum(a, axes);
    };
    r[1] = lax::sub(all(t), all(t_op));
  }
  (void)avals;
  return r;
}

BOuts pad_batch(const Args& args, const Dims& dims, const Params& p) {
  const int64_t size = batch_axis_size(args, dims);
  auto cfg = PadParams::from(p).padding_config;
  cfg.insert(cfg.begin(), lax::PadConfig{0, 0, 0});
  Array x = materialize_batch(args[0], dims[0], size, 0);
  if (dims[1] == kNotMapped) return {{lax::pad(x, args[1], cfg)}, {0}};
  // A batched padding value (JAX's _pad_batch_rule): pad with a placeholder, then select the
  // per-example padding value wherever a mask padded the same way is false.
  Array padded = lax::pad(x, lax::scalar(0, x.dtype()), cfg);
  Array ones = lax::broadcast_in_dim(lax::scalar(1, DType::bool_), x.shape(), {});
  Array mask = lax::pad(ones, lax::scalar(0, DType::bool_), cfg);
  Array pv = lax::broadcast_in_dim(args[1], padded.shape(), {0});
  return {{lax::select_n(mask, {pv, padded})}, {0}};
}

Registrar reg([] {
  auto set = [](const char* name, JvpRule j, TransposeRule t, BatchRule b) {
    auto& p = get_or_create_primitive(name);
    p.jvp = std::move(j);
    p.transpose = std::move(t);
    p.batch = std::move(b);
  };
  set("slice", rules::linear_unary_jvp(get_or_create_primitive("slice")), slice_transpose, slice_batch);
  set("dynamic_slice", dynamic_slice_jvp, dynamic_slice_transpose, dynamic_slice_batch);
  set("dynamic_update_slice", dus_jvp, dus_transpose, dus_batch);
  set("concatenate", concatenate_jvp, concatenate_transpose, concatenate_batch);
  set("pad", pad_jvp, pad_transpose, pad_batch);
  auto& iota = get_or_create_primitive("iota");
  iota.no_jvp_reason = "no operands";
  iota.no_transpose_reason = "no operands";
  iota.no_batch_reason = "no operands";
});

}  // namespace

}  // namespace minijax
