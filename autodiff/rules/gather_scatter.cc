// minijax autodiff rules of gather and the scatter family (JAX's rules, jax/_src/lax/slicing.py):
// JVP, transpose and batching of gather (_gather_jvp_rule, _gather_transpose_rule,
// _gather_batching_rule), scatter_add (_scatter_addsub_jvp, _scatter_addsub_transpose_rule),
// scatter_mul (_scatter_mul_jvp_rhs, _scatter_mul_transpose_rule), scatter_min/max
// (_scatter_extremal_jvp), scatter (_scatter_jvp, _scatter_transpose_rule), all batched by
// _scatter_batching_rule. The indices get no tangent and no cotangent.
#include "core/views/gather_scatter.h"
#include "autodiff/batching_util.h"
#include "autodiff/jvp.h"
#include "core/errors.h"
#include "core/gather_scatter_params.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/primitive.h"
#include "core/trace.h"

namespace minijax {

namespace {

using Outs = std::pair<std::vector<Array>, std::vector<Array>>;
using BOuts = std::pair<std::vector<Array>, std::vector<int64_t>>;
using Cts = std::vector<Array>;
using Args = std::vector<Array>;
using Avals = std::vector<ShapedArray>;
using Dims = std::vector<int64_t>;
using V = std::vector<int64_t>;

Array ct_zeros(const ShapedArray& a) { return lax::zeros_like_aval(tangent_aval(a)); }

V shifted(const V& v, int64_t by = 1) {
  V r;
  for (int64_t x : v) r.push_back(x + by);
  return r;
}
V front(int64_t x, const V& v) {
  V r{x};
  r.insert(r.end(), v.begin(), v.end());
  return r;
}

Array bind_gather(const Array& x, const Array& idx, const GatherParams& g) {
  return minijax::bind1(primitive("gather"), {x, idx}, g.to_params());
}

Array bind_scatter(const Primitive& prim, const Array& x, const Array& idx, const Array& u,
                   const ScatterParams& s) {
  return minijax::bind1(prim, {x, idx, u}, s.to_params());
}

// The gather that reads back what scatter `s` writes (its mirror), fill value 0: a dropped
// update window reads 0.
Array mirrored_gather(const Array& t, const Array& idx, const ScatterParams& s, const Shape& updates_shape,
                      std::optional<double> fill = 0.0) {
  GatherParams g;
  g.dimension_numbers = lax::mirrored_gather_dims(s.dimension_numbers);
  g.slice_sizes = lax::scatter_slice_sizes(s.dimension_numbers, size_t(t.ndim()), updates_shape);
  g.indices_are_sorted = s.indices_are_sorted;
  g.unique_indices = s.unique_indices;
  g.mode = s.mode;
  g.fill_value = s.mode == lax::GatherScatterMode::FILL_OR_DROP ? fill : std::nullopt;
  return bind_gather(t, idx, g);
}

// ---- gather -----------------------------------------------------------------------------------

// The tangent: the same gather of the tangent with fill value 0 (the fill is a constant).
Outs gather_jvp(const Args& primals, const Args& tangents, const Params& p) {
  Array out = minijax::bind1(primitive("gather"), primals, p);
  Array t;
  if (tangents[0].defined() && is_floating(out.dtype())) {
    GatherParams g = GatherParams::from(p);
    if (g.mode == lax::GatherScatterMode::FILL_OR_DROP) g.fill_value = 0.0;
    t = bind_gather(tangents[0], primals[1], g);
  }
  return {{out}, {t}};
}

// The transpose: scatter_add of the cotangent into zeros with the mirrored numbers, same mode.
Cts gather_transpose(const Cts& cts, const Args& args, const Avals& avals, const Params& p) {
  Cts r(2);
  if (!cts[0].defined() || args[0].defined()) return r;
  const GatherParams g = GatherParams::from(p);
  ScatterParams s;
  s.dimension_numbers = lax::mirrored_scatter_dims(g.dimension_numbers);
  s.indices_are_sorted = g.indices_are_sorted;
  s.unique_indices = g.unique_indices;
  s.mode = g.mode;
  r[0] = bind_scatter(primitive("scatter_add"), ct_zeros(avals[0]), args[1], cts[0], s);
  return r;
}

// Batch dims at the front; the operand's becomes a window dim of full size (operand only), the
// indices' a batch dim (indices only), or a pair of batching dims (both), as JAX.
BOuts gather_batch(const Args& args, const Dims& dims, const Params& p) {
  GatherParams g = GatherParams::from(p);
  auto& d = g.dimension_numbers;
  const int64_t size = batch_axis_size(args, dims);
  if (dims[1] == kNotMapped) {
    Array x = move_batch_dim(args[0], dims[0], 0);
    g.slice_sizes = front(size, g.slice_sizes);
    d.offset_dims = front(0, shifted(d.offset_dims));
    d.collapsed_slice_dims = shifted(d.collapsed_slice_dims);
    d.start_index_map = shifted(d.start_index_map);
    d.operand_batching_dims = shifted(d.operand_batching_dims);
    return {{bind_gather(x, args[1], g)}, {0}};
  }
  Array idx = move_batch_dim(args[1], dims[1], 0);
  if (dims[0] == kNotMapped) {  // batching can repeat or unsort the indices: no promises (as JAX)
    g.indices_are_sorted = g.unique_indices = false;
    d.offset_dims = shifted(d.offset_dims);
    d.start_indices_batching_dims = shifted(d.start_indices_batching_dims);
    return {{bind_gather(args[0], idx, g)}, {0}};
  }
  Array x = move_batch_dim(args[0], dims[0], 0);
  g.slice_sizes = front(size > 0 ? 1 : 0, g.slice_sizes);
  d.offset_dims = shifted(d.offset_dims);
  d.collapsed_slice_dims = shifted(d.collapsed_slice_dims);
  d.start_index_map = shifted(d.start_index_map);
  d.operand_batching_dims = front(0, shifted(d.operand_batching_dims));
  d.start_indices_batching_dims = front(0, shifted(d.start_indices_batching_dims));
  return {{bind_gather(x, idx, g)}, {0}};
}

// ---- the scatter family: batching ---------------------------------------------------------------

// JAX's _scatter_batching_rule: operand and updates batched at the front (broadcast if unmapped);
// unbatched indices make the batch a window dim, batched ones a pair of batching dims.
BatchRule scatter_batch(const char* name) {
  return [name](const Args& args, const Dims& dims, const Params& p) -> BOuts {
    ScatterParams s = ScatterParams::from(p);
    auto& d = s.dimension_numbers;
    const int64_t size = batch_axis_size(args, dims);
    Array x = materialize_batch(args[0], dims[0], size, 0);
    Array u = materialize_batch(args[2], dims[2], size, 0);
    Array idx = args[1];
    d.inserted_window_dims = shifted(d.inserted_window_dims);
    d.scatter_dims_to_operand_dims = shifted(d.scatter_dims_to_operand_dims);
    if (dims[1] == kNotMapped) {
      d.update_window_dims = front(0, shifted(d.update_window_dims));
      d.operand_batching_dims = shifted(d.operand_batching_dims);
    } else {
      idx = move_batch_dim(idx, dims[1], 0);
      d.update_window_dims = shifted(d.update_window_dims);
      d.operand_batching_dims = front(0, shifted(d.operand_batching_dims));
      d.scatter_indices_batching_dims = front(0, shifted(d.scatter_indices_batching_dims));
    }
    return {{bind_scatter(primitive(name), x, idx, u, s)}, {0}};
  };
}

// ---- scatter_add ------------------------------------------------------------------------------

// Linear in operand and updates: the tangent is the same scatter_add of the tangents.
Outs scatter_add_jvp(const Args& primals, const Args& tangents, const Params& p) {
  const Primitive& prim = primitive("scatter_add");
  Array out = minijax::bind1(prim, primals, p);
  if (!is_floating(out.dtype()) || (!tangents[0].defined() && !tangents[2].defined()))
    return {{out}, {Array()}};
  Array to = instantiate_zero(tangents[0], primals[0].aval());
  Array tu = instantiate_zero(tangents[2], primals[2].aval());
  return {{out}, {minijax::bind1(prim, {to, primals[1], tu}, p)}};
}

// The operand's cotangent is t; the updates' the mirrored gather of t with fill value 0 (a
// dropped update has no effect, so its cotangent is 0).
Cts scatter_add_transpose(const Cts& cts, const Args& args, const Avals& avals, const Params& p) {
  Cts r(3);
  const Array& t = cts[0];
  if (!t.defined()) return r;
  if (!args[0].defined()) r[0] = t;
  if (!args[2].defined()) r[2] = mirrored_gather(t, args[1], ScatterParams::from(p), avals[2].shape);
  return r;
}

// ---- scatter_mul ------------------------------------------------------------------------------

// JAX's defjvp: the operand's tangent through the same scatter_mul; the updates' (JAX's
// _scatter_mul_jvp_rhs) x * scatter_add(0, indices, g), only with unique_indices.
Outs scatter_mul_jvp(const Args& primals, const Args& tangents, const Params& p) {
  const Primitive& prim = primitive("scatter_mul");
  Array out = minijax::bind1(prim, primals, p);
  if (!is_floating(out.dtype()) || (!tangents[0].defined() && !tangents[2].defined()))
    return {{out}, {Array()}};
  const ScatterParams s = ScatterParams::from(p);
  Array t;
  if (tangents[0].defined()) t = minijax::bind1(prim, {tangents[0], primals[1], primals[2]}, p);
  if (tangents[2].defined()) {
    if (!s.unique_indices)
      throw NotDifferentiableError(
          "scatter_mul: the derivative with respect to the updates is only implemented "
          "with unique_indices=True (as JAX's _scatter_mul_jvp_rhs)");
    Array z = lax::full(primals[0].shape(), 0, primals[0].dtype());
    Array r = lax::mul(primals[0], bind_scatter(primitive("scatter_add"), z, primals[1], tangents[2], s));
    t = t.defined() ? lax::add(t, r) : r;
  }
  return {{out}, {t}};
}

// JAX's _scatter_mul_transpose_rule: the operand's cotangent is scatter_mul(t, indices, updates);
// the updates' (operand known, unique indices only) the mirrored gather of t * operand.
Cts scatter_mul_transpose(const Cts& cts, const Args& args, const Avals& avals, const Params& p) {
  Cts r(3);
  const Array& t = cts[0];
  if (!t.defined()) return r;
  const ScatterParams s = ScatterParams::from(p);
  if (!args[0].defined()) {
    if (!args[2].defined())
      throw NotDifferentiableError("scatter_mul transpose: both the operand and the updates are linear");
    r[0] = bind_scatter(primitive("scatter_mul"), t, args[1], args[2], s);
  }
  if (!args[2].defined()) {
    if (!s.unique_indices)
      throw NotDifferentiableError(
          "scatter_mul: the transpose with respect to the updates is only implemented "
          "with unique_indices=True (as JAX's _scatter_mul_transpose_rule)");
    r[2] = mirrored_gather(lax::mul(t, args[0]), args[1], s, avals[2].shape);
  }
  return r;
}

// ---- scatter_min / scatter_max -------------------------------------------------------------------

// JAX's _scatter_extremal_jvp: a window element's tangent is shared equally by the updates equal
// to the result there and the operand (when it is too). The helper gathers use the scatter's mode
// (JAX's use the default FILL_OR_DROP; the same for in-bounds indices).
JvpRule scatter_extremal_jvp(const char* name) {
  return [name](const Args& primals, const Args& tangents, const Params& p) -> Outs {
    const Primitive& prim = primitive(name);
    Array out = minijax::bind1(prim, primals, p);
    if (!is_floating(out.dtype()) || (!tangents[0].defined() && !tangents[2].defined()))
      return {{out}, {Array()}};
    const ScatterParams s = ScatterParams::from(p);
    const Array &x = primals[0], &idx = primals[1], &u = primals[2];
    const DType dt = x.dtype();
    Array gx = instantiate_zero(tangents[0], x.aval()), gu = instantiate_zero(tangents[2], u.aval());
    auto g = [&](const Array& a) { return mirrored_gather(a, idx, s, u.shape(), std::nullopt); };
    auto sel = [](const Array& c, const Array& t, const Array& f) { return lax::select_n(c, {f, t}); };
    const Primitive& add = primitive("scatter_add");
    Array zx = lax::full(x.shape(), 0, dt), zu = lax::full(u.shape(), 0, dt),
          ou = lax::full(u.shape(), 1, dt);
    Array initial = g(x), target = g(out);
    Array successful = lax::eq(u, target), retained = lax::eq(initial, target);
    Array num_updates = g(bind_scatter(add, zx, idx, sel(successful, ou, zu), s));
    Array num_refs = g(bind_scatter(add, zx, idx, ou, s));
    Array inv_plus1 = lax::div(ou, lax::add(num_updates, ou));
    Array updates_coef = sel(successful, sel(retained, inv_plus1, lax::div(ou, num_updates)), zu);
    Array operand_coef = lax::div(lax::sub(sel(retained, inv_plus1, zu), ou), num_refs);
    Array tangent_updates = lax::add(lax::mul(g(gx), operand_coef), lax::mul(gu, updates_coef));
    return {{out}, {bind_scatter(add, gx, idx, tangent_updates, s)}};
  };
}

// ---- scatter ------------------------------------------------------------------------------------

// JAX's _scatter_jvp: with unique_indices the scatter of the tangents; otherwise ids 1..n (one per
// update window) are scattered and gathered back, so the operand and the updates are masked to
// what the result holds, and a scatter_add of the masked values (and of the masked tangents) is the
// result (and its tangent).
Outs scatter_jvp(const Args& primals, const Args& tangents, const Params& p) {
  const Primitive& prim = primitive("scatter");
  const ScatterParams s = ScatterParams::from(p);
  if (!is_floating(primals[0].dtype()) || (!tangents[0].defined() && !tangents[2].defined()))
    return {{minijax::bind1(prim, primals, p)}, {Array()}};
  const Array &x = primals[0], &idx = primals[1], &u = primals[2];
  Array gx = instantiate_zero(tangents[0], x.aval()), gu = instantiate_zero(tangents[2], u.aval());
  if (s.unique_indices) return {{minijax::bind1(prim, primals, p)}, {bind_scatter(prim, gx, idx, gu, s)}};
  Shape ids_shape = u.shape();
  for (int64_t d : s.dimension_numbers.update_window_dims) ids_shape[size_t(d)] = 1;
  int64_t num_ids = 1;
  for (int64_t n : ids_shape) num_ids *= n;
  V all(ids_shape.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
  Array ids = lax::reshape(lax::iota(DType::i32, {num_ids}), ids_shape);
  Array update_ids = lax::add(lax::broadcast_in_dim(ids, u.shape(), all),
                              lax::full(u.shape(), 1, DType::i32));
  Array scattered_ids = bind_scatter(prim, lax::full(x.shape(), 0, DType::i32), idx, update_ids, s);
  Array gathered_ids = mirrored_gather(scattered_ids, idx, s, u.shape(), std::nullopt);
  Array keep_x = lax::eq(scattered_ids, lax::full(x.shape(), 0, DType::i32));
  Array keep_u = lax::eq(update_ids, gathered_ids);
  Array zx = lax::full(x.shape(), 0, x.dtype()), zu = lax::full(u.shape(), 0, u.dtype());
  auto masked = [&](const Array& a, const Array& b) {
    return bind_scatter(primitive("scatter_add"), lax::select_n(keep_x, {zx, a}), idx,
                        lax::select_n(keep_u, {zu, b}), s);
  };
  return {{masked(x, u)}, {masked(gx, gu)}};
}

// JAX's _scatter_transpose_rule (unique_indices only): the operand's cotangent is t with the
// scattered windows zeroed, the updates' the mirrored gather of t.
Cts scatter_transpose(const Cts& cts, const Args& args, const Avals& avals, const Params& p) {
  const ScatterParams s = ScatterParams::from(p);
  if (!s.unique_indices)
    throw NotDifferentiableError(
        "scatter transpose is only implemented where unique_indices=True (as JAX's "
        "_scatter_transpose_rule)");
  Cts r(3);
  const Array& t = cts[0];
  if (!t.defined()) return r;
  if (!args[0].defined())
    r[0] = bind_scatter(primitive("scatter"), t, args[1], lax::full(avals[2].shape, 0, t.dtype()), s);
  if (!args[2].defined()) r[2] = mirrored_gather(t, args[1], s, avals[2].shape);
  return r;
}

Registrar reg([] {
  auto set = [](const char* name, JvpRule j, TransposeRule t, BatchRule b) {
    auto& p = get_or_create_primitive(name);
    p.jvp = std::move(j);
    p.transpose = std::move(t);
    p.batch = std::move(b);
  };
  set("gather", gather_jvp, gather_transpose, gather_batch);
  set("scatter_add", scatter_add_jvp, scatter_add_transpose, scatter_batch("scatter_add"));
  set("scatter_mul", scatter_mul_jvp, scatter_mul_transpose, scatter_batch("scatter_mul"));
  set("scatter", scatter_jvp, scatter_transpose, scatter_batch("scatter"));
  set("scatter_min", scatter_extremal_jvp("scatter_min"), nullptr, scatter_batch("scatter_min"));
  set("scatter_max", scatter_extremal_jvp("scatter_max"), nullptr, scatter_batch("scatter_max"));
  for (const char* n : {"scatter_min", "scatter_max"})
    get_or_create_primitive(n).no_transpose_reason = "not linear (JAX defines no transpose)";
});

}  // namespace

}  // namespace minijax
