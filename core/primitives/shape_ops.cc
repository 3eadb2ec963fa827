// minijax shape primitives: reshape, squeeze, expand_dims, transpose, rev.
// Owns their shape rules, eager implementations (dtype-agnostic strided copies) and lax:: binders.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/lax.h"
#include "core/param_reads.h"
#include "core/primitive.h"
#include "core/primitives/strided_copy.h"
#include "core/trace.h"

namespace minijax {

namespace {

std::string tuple_str(const std::vector<int64_t>& v) { return param_to_string(Param(v)); }

/// Each of these primitives takes one operand: a parsed jaxpr can give any number, and the shape
/// rules read in[0] (out of bounds for none: found by the parser fuzzer through verify_jaxpr).
void expect_one_operand(const std::vector<ShapedArray>& in, const char* prim) {
  if (in.size() != 1) throw ValueError(std::string(prim) + " takes one operand, got " + std::to_string(in.size()));
}

/// Axes canonicalized against rank n when all are in range; otherwise returned as given (the
/// shape rule then reports the bad axis with the call site).
std::vector<int64_t> canonical_axes(const std::vector<int64_t>& axes, int64_t n) {
  std::vector<int64_t> r;
  for (auto a : axes) {
    if (a < -n || a >= n) return axes;
    r.push_back(a < 0 ? a + n : a);
  }
  return r;
}

/// Checks that axes are distinct and in [0, n); throws ValueError naming `what`.
void check_axes(const std::vector<int64_t>& axes, int64_t n, const char* what) {
  std::vector<bool> seen(size_t(std::max<int64_t>(n, 0)), false);
  for (auto a : axes) {
    if (a < 0 || a >= n)
      throw ValueError(std::string(what) + " " + tuple_str(axes) + " has axis " + std::to_string(a) +
                       " out of range for rank " + std::to_string(n));
    if (seen[size_t(a)])
      throw ValueError(std::string(what) + " " + tuple_str(axes) + " repeats axis " + std::to_string(a));
    seen[size_t(a)] = true;
  }
}

/// Output aval: the operand's with a new shape.
ShapedArray with_shape(const ShapedArray& x, Shape s) {
  ShapedArray o = x;
  o.shape = std::move(s);
  return o;
}

char* out_bytes(Array& a) { return static_cast<char*>(const_cast<void*>(a.raw_data())); }
const char* in_bytes(const Array& a) { return static_cast<const char*>(a.raw_data()); }

/// Copies x's elements into a new array of aval `out` read through the given strides/offset.
Array strided_read(const Array& x, const ShapedArray& out, int64_t src_off,
                   const std::vector<int64_t>& src_strides) {
  Array o = Array::empty(out);
  detail::copy_strided(out_bytes(o), 0, strides_of(out.shape), in_bytes(x), src_off, src_strides,
                       out.shape, itemsize(out.dtype));
  return o;
}

// ---- reshape -------------------------------------------------------------------------------------

std::vector<ShapedArray> reshape_shape(const std::vector<ShapedArray>& in, const Params& p) {
  expect_one_operand(in, "reshape");
  const auto& ns = param_ints(p, "new_sizes");
  for (auto d : ns)
    if (d < 0) throw ShapeError("new_sizes " + tuple_str(ns) + " has a negative dimension");
  if (shape_size(ns) != in[0].size())
    throw ShapeError("cannot reshape array of shape " + tuple_str(in[0].shape) + " (size " +
                     std::to_string(in[0].size()) + ") into shape " + tuple_str(ns) + " (size " +
                     std::to_string(shape_size(ns)) + ")");
  return {with_shape(in[0], ns)};
}

std::vector<Array> reshape_impl(const std::vector<Array>& a, const Params&,
                                const std::vector<ShapedArray>& out) {
  Array o = Array::empty(out[0]);
  if (out[0].nbytes() > 0) std::memcpy(out_bytes(o), in_bytes(a[0]), size_t(out[0].nbytes()));
  return {o};
}

// ---- squeeze -------------------------------------------------------------------------------------

std::vector<ShapedArray> squeeze_shape(const std::vector<ShapedArray>& in, const Params& p) {
  expect_one_operand(in, "squeeze");
  const auto& dims = param_ints(p, "dimensions");
  check_axes(dims, in[0].ndim(), "dimensions");
  Shape s;
  for (int64_t i = 0; i < in[0].ndim(); ++i) {
    bool drop = std::find(dims.begin(), dims.end(), i) != dims.end();
    if (drop && in[0].shape[size_t(i)] != 1)
      throw ShapeError("cannot squeeze dimension " + std::to_string(i) + " of size " +
                       std::to_string(in[0].shape[size_t(i)]) + " (only size-1 dimensions)");
    if (!drop) s.push_back(in[0].shape[size_t(i)]);
  }
  return {with_shape(in[0], s)};
}

// ---- expand_dims ---------------------------------------------------------------------------------

std::vector<ShapedArray> expand_dims_shape(const std::vector<ShapedArray>& in, const Params& p) {
  expect_one_operand(in, "expand_dims");
  const auto& dims = param_ints(p, "dimensions");
  const int64_t n = in[0].ndim() + int64_t(dims.size());
  check_axes(dims, n, "dimensions");
  Shape s;
  size_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::find(dims.begin(), dims.end(), i) != dims.end()) s.push_back(1);
    else s.push_back(in[0].shape[k++]);
  }
  return {with_shape(in[0], s)};
}

// ---- transpose -----------------------------------------------------------------------------------

std::vector<ShapedArray> transpose_shape(const std::vector<ShapedArray>& in, const Params& p) {
  expect_one_operand(in, "transpose");
  const auto& perm = param_ints(p, "permutation");
  if (int64_t(perm.size()) != in[0].ndim())
    throw ShapeError("permutation " + tuple_str(perm) + " has " + std::to_string(perm.size()) +
                     " entries for an operand of rank " + std::to_string(in[0].ndim()));
  try {
    check_axes(perm, in[0].ndim(), "permutation");
  } catch (const ValueError& e) {
    throw ShapeError(e.message() + " (not a permutation of 0.." + std::to_string(in[0].ndim() - 1) + ")");
  }
  Shape s;
  for (auto d : perm) s.push_back(in[0].shape[size_t(d)]);
  return {with_shape(in[0], s)};
}

std::vector<Array> transpose_impl(const std::vector<Array>& a, const Params& p,
                                  const std::vector<ShapedArray>& out) {
  const auto& perm = param_ints(p, "permutation");
  auto st = strides_of(a[0].shape());
  std::vector<int64_t> src(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) src[i] = st[size_t(perm[i])];
  return {strided_read(a[0], out[0], 0, src)};
}

// ---- rev -----------------------------------------------------------------------------------------

std::vector<ShapedArray> rev_shape(const std::vector<ShapedArray>& in, const Params& p) {
  expect_one_operand(in, "rev");
  check_axes(param_ints(p, "dimensions"), in[0].ndim(), "dimensions");
  return {in[0]};
}

std::vector<Array> rev_impl(const std::vector<Array>& a, const Params& p,
                            const std::vector<ShapedArray>& out) {
  const auto& shape = a[0].shape();
  auto st = strides_of(shape);
  int64_t off = 0;
  for (auto d : param_ints(p, "dimensions")) {
    off += (shape[size_t(d)] - 1) * st[size_t(d)];
    st[size_t(d)] = -st[size_t(d)];
  }
  if (a[0].size() == 0) off = 0;
  return {strided_read(a[0], out[0], off, st)};
}

Registrar reg([] {
  {
    auto& p = get_or_create_primitive("reshape");
    set_classes(p, OpClass::other, CostClass::view, FusionClass::normal);
    p.shape_rule = reshape_shape;
    p.impl = reshape_impl;
  }
  {
    auto& p = get_or_create_primitive("squeeze");
    set_classes(p, OpClass::other, CostClass::view, FusionClass::normal);
    p.shape_rule = squeeze_shape;
    p.impl = reshape_impl;  // same row-major elements
  }
  {
    auto& p = get_or_create_primitive("expand_dims");
    set_classes(p, OpClass::other, CostClass::view, FusionClass::normal);
    p.shape_rule = expand_dims_shape;
    p.impl = reshape_impl;
  }
  {
    auto& p = get_or_create_primitive("transpose");
    set_classes(p, OpClass::index_map, CostClass::data_movement, FusionClass::normal);
    p.shape_rule = transpose_shape;
    p.impl = transpose_impl;
  }
  {
    auto& p = get_or_create_primitive("rev");
    set_classes(p, OpClass::index_map, CostClass::data_movement, FusionClass::normal);
    p.shape_rule = rev_shape;
    p.impl = rev_impl;
  }
});

}  // namespace

Array lax::reshape(const Array& x, const Shape& new_sizes, SL loc) {
  // JAX's params: dimensions=None (we support only row-major reshapes) and new_sizes.
  Params p{{"dimensions", ParamObjectPtr{}}, {"new_sizes", std::vector<int64_t>(new_sizes)}};
  return minijax::bind1(primitive("reshape"), {x}, p, loc);
}

Array lax::squeeze(const Array& x, const std::vector<int64_t>& dimensions, SL loc) {
  auto d = canonical_axes(dimensions, x.ndim());
  std::sort(d.begin(), d.end());
  return minijax::bind1(primitive("squeeze"), {x}, Params{{"dimensions", d}}, loc);
}

Array lax::expand_dims(const Array& x, const std::vector<int64_t>& dimensions, SL loc) {
  auto d = canonical_axes(dimensions, x.ndim() + int64_t(dimensions.size()));
  std::sort(d.begin(), d.end());
  return minijax::bind1(primitive("expand_dims"), {x}, Params{{"dimensions", d}}, loc);
}

Array lax::transpose(const Array& x, const std::vector<int64_t>& permutation, SL loc) {
  return minijax::bind1(primitive("transpose"), {x},
                        Params{{"permutation", canonical_axes(permutation, x.ndim())}}, loc);
}

Array lax::rev(const Array& x, const std::vector<int64_t>& dimensions, SL loc) {
  auto d = canonical_axes(dimensions, x.ndim());
  std::sort(d.begin(), d.end());
  return minijax::bind1(primitive("rev"), {x}, Params{{"dimensions", d}}, loc);
}

}  // namespace minijax
