// minijax indexing: `x[i]` and `x.at(i).get/set/add/multiply/min/max` along the leading dim (JAX's x[i], x.at[i]),
// and jnp.take (axis, mode, fill_value) over lax::gather; owns their index checks and lowering.
#include <numeric>
#include <string>
#include <vector>

#include "core/defined_arg.h"

#include "core/array.h"
#include "core/errors.h"
#include "core/gather_scatter.h"
#include "core/lax.h"
#include "core/numpy.h"

namespace minijax {

namespace {

/// An index resolved against an array: static (value in [0, n)) or dynamic (a traced integer).
struct Resolved {
  bool dynamic = false;
  int64_t value = 0;  ///< static: the normalized index
  Array index;  ///< dynamic: the traced index as given
};

/// Checks `i` against the leading dim of `x` for `fn` (the name in messages).
Resolved resolve(const Array& x, const Index& i, const std::string& fn) {
  if (x.ndim() == 0)
    throw IndexError(fn + ": too many indices for an array of rank 0 (" + x.aval().str() +
                         "); index " + (i.array.defined() ? i.array.aval().str() : std::to_string(i.value)),
                     i.loc);
  const int64_t n = x.shape()[0];
  Resolved r;
  int64_t v = i.value;
  if (i.array.defined()) {
    const Array& a = i.array;
    if (!is_integer(a.dtype()))
      throw TypeError(fn + ": an Array index must be an integer, got " + a.aval().str() +
                          " (indexing " + x.aval().str() + ")",
                      i.loc);
    if (a.ndim() != 0)
      throw ShapeError(fn + ": an Array index must have rank 0, got " + a.aval().str() +
                           " (indexing " + x.aval().str() + "); mj::take(x, indices) reads many rows",
                       i.loc);
    if (!a.is_concrete()) {
      r.dynamic = true;
      r.index = a;
      return r;
    }
    v = a.item<int64_t>(i.loc);
  }
  if (v < -n || v >= n)
    throw IndexError(fn + ": index " + std::to_string(v) + " is out of bounds for axis 0 with size " +
                         std::to_string(n) + " (array " + x.aval().str() + ")",
                     i.loc);
  r.value = v < 0 ? v + n : v;
  return r;
}

/// The traced index with negative values counted from the end: where(i < 0, i + n, i)
/// (unsigned indices as they are).
Array normalized(const Array& i, int64_t n, SL loc) {
  const DType d = i.dtype();
  if (d == DType::u32) return i;
  Array neg = lax::lt(i, lax::scalar(0, d), loc);
  return lax::select_n(neg, {i, lax::add(i, lax::scalar(double(n), d), loc)}, loc);
}

/// Start indices of row `first` of x: {first, 0, ..., 0} (all of first's dtype).
std::vector<Array> row_start(const Array& x, const Array& first) {
  std::vector<Array> starts{first};
  for (int64_t d = 1; d < x.ndim(); ++d) starts.push_back(lax::scalar(0, first.dtype()));
  return starts;
}

Shape row_shape(const Array& x) { return Shape(x.shape().begin() + 1, x.shape().end()); }

/// Row r of x: static `slice` + `squeeze`, dynamic `dynamic_slice` (clamped) + `squeeze`.
Array read_row(const Array& x, const Resolved& r, SL loc) {
  Shape start(size_t(x.ndim()), 0), limit = x.shape();
  Shape sizes = x.shape();
  sizes[0] = 1;
  Array row;
  if (r.dynamic) {
    row = lax::dynamic_slice(x, row_start(x, normalized(r.index, x.shape()[0], loc)), sizes, loc);
  } else {
    start[0] = r.value;
    limit[0] = r.value + 1;
    row = lax::slice(x, start, limit, {}, loc);
  }
  return lax::squeeze(row, {0}, loc);
}

/// `v` as an update of one row of x: broadcast to x.shape[1:], x's dtype and memory kind.
Array as_row_update(const Array& x, const Operand& v, const std::string& fn) {
  const Shape rs = row_shape(x);
  const Shape& vs = v.value.shape();
  bool ok = vs.size() <= rs.size();
  for (size_t k = 0; ok && k < vs.size(); ++k) {
    const int64_t d = vs[vs.size() - 1 - k];
    ok = d == 1 || d == rs[rs.size() - 1 - k];
  }
  if (!ok)
    throw ShapeError(fn + ": the value of shape " + shape_str(vs) + " does not broadcast to the row shape " +
                         shape_str(rs) + " of " + x.aval().str(),
                     v.loc);
  // A C++ scalar converts from its exact value (as Operand's literal does for operators).
  Array u = v.literal ? broadcast_to(lax::scalar(*v.literal, x.dtype()), rs, v.loc)
                      : astype(broadcast_to(v.value, rs, v.loc), x.dtype(), v.loc);
  if (u.memory_kind() != x.memory_kind()) u = lax::device_put(u, x.memory_kind(), v.loc);
  return u;
}

/// x with row r combined with `row` (of shape x.shape[1:]) by the scatter `fn` (lax::scatter,
/// scatter_add, ...): indices [1] (the normalized index), updates the row (window dims all of it),
/// inserted dim 0, FILL_OR_DROP, so a dynamic index out of range leaves x (as JAX's x.at[i]). One
/// index: unique and sorted.
using ScatterFn = Array (*)(const Array&, const Array&, const Array&, const lax::ScatterDimensionNumbers&,
                            const lax::ScatterOptions&, SL);
Array scatter_row(ScatterFn fn, const Array& x, const Resolved& r, const Array& row, SL loc) {
  Array idx = r.dynamic ? normalized(r.index, x.shape()[0], loc) : lax::scalar(double(r.value), DType::i32);
  idx = lax::reshape(idx, {1}, loc);
  lax::ScatterDimensionNumbers d;
  for (int64_t k = 0; k + 1 < x.ndim(); ++k) d.update_window_dims.push_back(k);
  d.inserted_window_dims = {0};
  d.scatter_dims_to_operand_dims = {0};
  lax::ScatterOptions o;
  o.indices_are_sorted = o.unique_indices = true;
  o.mode = lax::GatherScatterMode::FILL_OR_DROP;
  return fn(x, idx, row, d, o, loc);
}

/// jnp.take's mode: "fill", "clip" or "wrap"; ValueError naming `mode` otherwise.
enum class TakeMode { fill, clip, wrap };
TakeMode take_mode(const std::string& mode, SL loc) {
  if (mode == "fill") return TakeMode::fill;
  if (mode == "clip") return TakeMode::clip;
  if (mode == "wrap") return TakeMode::wrap;
  if (mode == "raise")
    throw ValueError("take: mode \"raise\" is not supported (as in JAX, whose jnp.take raises "
                     "NotImplementedError: there is no way to report an out-of-bounds index from "
                     "compiled code); use mode \"fill\" (the default), \"clip\" or \"wrap\"",
                     loc);
  throw ValueError("take: invalid mode \"" + mode + "\"; expected \"fill\" (the default), \"clip\" or \"wrap\"",
                   loc);
}

}  // namespace

// jnp.take as JAX's _take (jax/_src/numpy/indexing.py): flatten when axis is unset; "fill" wraps
// negative indices once and gathers FILL_OR_DROP, "wrap" reduces mod n and gathers
// PROMISE_IN_BOUNDS (always in range then), "clip" gathers CLIP. lax::gather takes rows of dim 0,
// so another axis is moved to the front first and the index dims moved to its place after.
Array take(const Array& x0, const Array& indices, std::optional<int64_t> axis, const std::string& mode,
           std::optional<double> fill_value, SL loc) {
  detail::defined_or_throw(x0, "take", loc);
  detail::defined_or_throw(indices, "take", loc);
  const TakeMode m = take_mode(mode, loc);
  if (!is_integer(indices.dtype()))
    throw TypeError("take: indices must be an integer array (they feed a gather), got " + indices.aval().str() +
                        " for operand " + x0.aval().str(),
                    loc);
  Array x = x0;
  int64_t ax = 0;
  if (!axis) {
    x = lax::reshape(x0, {x0.size()}, loc);
  } else {
    const int64_t r = x0.ndim();
    if (*axis < -r || *axis >= r)
      throw ValueError("take: axis " + std::to_string(*axis) + " is out of bounds for an array of rank " +
                           std::to_string(r) + " (" + x0.aval().str() + ")",
                       loc);
    ax = *axis < 0 ? *axis + r : *axis;
  }
  const int64_t n = x.shape()[size_t(ax)];
  const int64_t k = indices.ndim();
  Shape out_shape(x.shape().begin(), x.shape().begin() + ax);
  out_shape.insert(out_shape.end(), indices.shape().begin(), indices.shape().end());
  out_shape.insert(out_shape.end(), x.shape().begin() + ax + 1, x.shape().end());
  if (n == 0) {
    if (indices.size() != 0)
      throw IndexError("take: cannot take " + indices.aval().str() + " indices from axis " + std::to_string(ax) +
                           " of size 0 of " + x.aval().str() + " (as JAX: a non-empty take from an empty axis)",
                       loc);
    return lax::full(out_shape, 0, x.dtype(), x.weak_type());
  }
  Array idx = indices;
  const DType d = idx.dtype();
  lax::GatherScatterMode gm = lax::GatherScatterMode::CLIP;
  if (m == TakeMode::fill) {
    gm = lax::GatherScatterMode::FILL_OR_DROP;
    if (d != DType::u32) idx = normalized(idx, n, loc);  // negative indices count from the end once
  } else if (m == TakeMode::wrap) {
    gm = lax::GatherScatterMode::PROMISE_IN_BOUNDS;
    idx = remainder(Operand(idx, loc), Operand(lax::scalar(double(n), d), loc));
  }
  // Move `ax` to the front: perm = (ax, 0, ..., ax - 1, ax + 1, ...).
  std::vector<int64_t> perm{ax};
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != ax) perm.push_back(i);
  Array xt = ax == 0 ? x : lax::transpose(x, perm, loc);
  Array g = lax::gather(xt, idx, gm, fill_value, loc);
  if (ax == 0) return g;
  // g: indices dims, then x's dims before ax, then after; put the indices dims at ax.
  std::vector<int64_t> back;
  for (int64_t i = 0; i < ax; ++i) back.push_back(k + i);
  for (int64_t i = 0; i < k; ++i) back.push_back(i);
  for (int64_t i = k + ax; i < g.ndim(); ++i) back.push_back(i);
  return lax::transpose(g, back, loc);
}

Array Array::operator[](const Index& i) const { return read_row(*this, resolve(*this, i, "Array::operator[]"), i.loc); }

IndexUpdateRef Array::at(const Index& i) const {
  resolve(*this, i, "Array::at");
  return IndexUpdateRef(*this, i);
}

Array IndexUpdateRef::get(SL loc) const {
  return read_row(x_, resolve(x_, i_, "Array::at(i).get"), loc);
}

Array IndexUpdateRef::set(const Operand& v) const {
  const Resolved r = resolve(x_, i_, "Array::at(i).set");
  return scatter_row(&lax::scatter, x_, r, as_row_update(x_, v, "Array::at(i).set"), v.loc);
}

Array IndexUpdateRef::add(const Operand& v) const {
  const Resolved r = resolve(x_, i_, "Array::at(i).add");
  return scatter_row(&lax::scatter_add, x_, r, as_row_update(x_, v, "Array::at(i).add"), v.loc);
}

Array IndexUpdateRef::multiply(const Operand& v) const {
  const Resolved r = resolve(x_, i_, "Array::at(i).multiply");
  return scatter_row(&lax::scatter_mul, x_, r, as_row_update(x_, v, "Array::at(i).multiply"), v.loc);
}

Array IndexUpdateRef::min(const Operand& v) const {
  const Resolved r = resolve(x_, i_, "Array::at(i).min");
  return scatter_row(&lax::scatter_min, x_, r, as_row_update(x_, v, "Array::at(i).min"), v.loc);
}

Array IndexUpdateRef::max(const Operand& v) const {
  const Resolved r = resolve(x_, i_, "Array::at(i).max");
  return scatter_row(&lax::scatter_max, x_, r, as_row_update(x_, v, "Array::at(i).max"), v.loc);
}

}  // namespace minijax
