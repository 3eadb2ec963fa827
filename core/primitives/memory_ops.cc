// minijax memory and scheduling primitives: device_put (copy between memory kinds), the
// asynchronous copies the offload stages (memory/) make of it (copy_start, copy_slice_start,
// copy_update_start, each finished by copy_done), allocate_buffer, and optimization_barrier
// (identity the compiler must not look through). Owns their rules and binders.
#include <cstring>

#include "core/lax.h"
#include "core/param_reads.h"
#include "core/primitive.h"
#include "core/trace.h"

namespace minijax {

namespace {

// device_put[memory_kind=K](x): x's aval with memory kind K; the value is copied into a new
// Buffer of kind K (even when K is x's kind: device_put always yields a fresh buffer).
std::vector<ShapedArray> device_put_shape(const std::vector<ShapedArray>& in, const Params& p) {
  if (in.size() != 1) throw ValueError("device_put takes one operand, got " + std::to_string(in.size()));
  if (in[0].is_token()) throw TypeError("a token cannot be moved between memory kinds");
  ShapedArray o = in[0];
  o.memory_kind = param_memory_kind(p, "memory_kind");
  return {o};
}

std::vector<Array> device_put_impl(const std::vector<Array>& a, const Params&,
                                   const std::vector<ShapedArray>& out) {
  Array o = Array::empty(out[0]);
  if (out[0].nbytes() > 0)
    std::memcpy(const_cast<void*>(o.raw_data()), a[0].raw_data(), size_t(out[0].nbytes()));
  return {o};
}

// copy_start[memory_kind=K](x): device_put's start: the destination (x's aval in kind K), whose
// bytes are complete once the matching copy_done has run. Eagerly: the copy itself.
// copy_done(h, *sources): the destination h, complete; the sources are operands so that they
// stay alive until the copy is done. Eagerly: h.
std::vector<ShapedArray> copy_done_shape(const std::vector<ShapedArray>& in, const Params&) {
  if (in.size() < 2)
    throw ValueError("copy_done takes the copy's destination and its source(s), got " + std::to_string(in.size()) +
                     " operand(s)");
  return {in[0]};
}

std::vector<Array> copy_done_impl(const std::vector<Array>& a, const Params&, const std::vector<ShapedArray>&) {
  return {a[0]};
}

// The index operand of the slice copies: an integer scalar.
void check_index(const ShapedArray& i, const char* prim) {
  if (i.ndim() != 0 || !is_integer(i.dtype))
    throw TypeError(std::string(prim) + ": the index must be an integer scalar, got " + i.str());
}

// `a` without dimension `axis` (ShapeError naming `prim` when a has no such axis).
ShapedArray without_axis(const ShapedArray& a, int64_t axis, const char* prim) {
  if (axis < 0 || axis >= int64_t(a.ndim()))
    throw ShapeError(std::string(prim) + ": axis " + std::to_string(axis) + " is out of range for " + a.str());
  ShapedArray r = a;
  r.shape.erase(r.shape.begin() + axis);
  r.weak_type = false;
  return r;
}

// The layout of index i of `stacked` along `axis` in row-major order: `count` chunks of `chunk`
// bytes, chunk c at c * extent * chunk + i * chunk.
struct SliceLayout {
  int64_t count = 1, extent = 0, chunk = 0;
};
SliceLayout slice_layout(const ShapedArray& stacked, int64_t axis) {
  SliceLayout l;
  for (int64_t d = 0; d < axis; ++d) l.count *= stacked.shape[size_t(d)];
  l.extent = stacked.shape[size_t(axis)];
  l.chunk = int64_t(itemsize(stacked.dtype));
  for (size_t d = size_t(axis) + 1; d < stacked.shape.size(); ++d) l.chunk *= stacked.shape[d];
  return l;
}

// copy_slice_start[memory_kind=K, axis=a, slices=k](x, i): the start of an asynchronous copy of
// x's index i along axis a (the axis removed) into a new buffer of kind K (a dynamic_slice across
// memory kinds). An index outside [0, x.shape[a]) copies nothing: the destination is zeros (the
// prefetch past a loop's last iteration, whose value nothing reads). `slices` (default 1) is how
// many iterations' slices of the original loop the copy moves (coalescing), for display.
std::vector<ShapedArray> copy_slice_start_shape(const std::vector<ShapedArray>& in, const Params& p) {
  if (in.size() != 2) throw ValueError("copy_slice_start takes the stacked buffer and an index, got " +
                                       std::to_string(in.size()) + " operand(s)");
  check_index(in[1], "copy_slice_start");
  ShapedArray o = without_axis(in[0], param_int(p, "axis"), "copy_slice_start");
  o.memory_kind = param_memory_kind(p, "memory_kind");
  return {o};
}

std::vector<Array> copy_slice_start_impl(const std::vector<Array>& a, const Params& p,
                                         const std::vector<ShapedArray>& out) {
  Array o = Array::allocate(out[0]);  // zeros: what an out-of-range index leaves
  const SliceLayout l = slice_layout(a[0].aval(), param_int(p, "axis"));
  const int64_t i = a[1].item<int64_t>();
  if (i < 0 || i >= l.extent || l.chunk == 0) return {o};
  const char* src = static_cast<const char*>(a[0].raw_data());
  char* dst = static_cast<char*>(const_cast<void*>(o.raw_data()));
  for (int64_t c = 0; c < l.count; ++c)
    std::memcpy(dst + c * l.chunk, src + (c * l.extent + i) * l.chunk, size_t(l.chunk));
  return {o};
}

// copy_update_start[axis=a, slices=k](r, u, i): the start of an asynchronous copy of u into
// index i of r along axis a (a dynamic_update_slice across memory kinds, in place of r: the
// result is r's buffer, r's aval). u must be r's slice shape and dtype, in any memory kind. An
// index outside [0, r.shape[a]) copies nothing.
std::vector<ShapedArray> copy_update_start_shape(const std::vector<ShapedArray>& in, const Params& p) {
  if (in.size() != 3)
    throw ValueError("copy_update_start takes the stacked buffer, the update and an index, got " +
                     std::to_string(in.size()) + " operand(s)");
  check_index(in[2], "copy_update_start");
  const ShapedArray row = without_axis(in[0], param_int(p, "axis"), "copy_update_start");
  if (row.shape != in[1].shape || row.dtype != in[1].dtype)
    throw TypeError("copy_update_start: the update " + in[1].str() + " is not a slice of " + in[0].str() +
                    " along axis " + std::to_string(param_int(p, "axis")));
  ShapedArray o = in[0];
  o.weak_type = false;
  return {o};
}

std::vector<Array> copy_update_start_impl(const std::vector<Array>& a, const Params& p,
                                          const std::vector<ShapedArray>& out) {
  Array o = Array::empty(out[0]);
  if (out[0].nbytes() > 0)
    std::memcpy(const_cast<void*>(o.raw_data()), a[0].raw_data(), size_t(out[0].nbytes()));
  const SliceLayout l = slice_layout(out[0], param_int(p, "axis"));
  const int64_t i = a[2].item<int64_t>();
  if (i < 0 || i >= l.extent || l.chunk == 0) return {o};
  const char* src = static_cast<const char*>(a[1].raw_data());
  char* dst = static_cast<char*>(const_cast<void*>(o.raw_data()));
  for (int64_t c = 0; c < l.count; ++c)
    std::memcpy(dst + (c * l.extent + i) * l.chunk, src + c * l.chunk, size_t(l.chunk));
  return {o};
}

// allocate_buffer[shape, dtype, memory_kind](): a buffer whose contents are unspecified, for
// values every element of which is written before any is read (XLA's AllocateBuffer: the initial
// value of a loop-carried stacked buffer filled one slice per iteration). Compiled: no code, no
// bytes of its own. Eagerly: zeros.
std::vector<ShapedArray> allocate_buffer_shape(const std::vector<ShapedArray>& in, const Params& p) {
  if (!in.empty()) throw ValueError("allocate_buffer takes no operands, got " + std::to_string(in.size()));
  const auto& shape = param_ints(p, "shape");
  for (auto d : shape)
    if (d < 0) throw ShapeError("allocate_buffer: shape " + param_to_string(Param(shape)) + " has a negative dimension");
  return {ShapedArray{shape, param_dtype(p, "dtype"), false, param_memory_kind(p, "memory_kind")}};
}

std::vector<Array> allocate_buffer_impl(const std::vector<Array>&, const Params&, const std::vector<ShapedArray>& out) {
  return {Array::allocate(out[0])};
}

// optimization_barrier(*xs): the operands unchanged (values are immutable, so the eager
// implementation returns the same arrays).
std::vector<ShapedArray> barrier_shape(const std::vector<ShapedArray>& in, const Params&) {
  return in;
}

std::vector<Array> barrier_impl(const std::vector<Array>& a, const Params&,
                                const std::vector<ShapedArray>&) {
  return a;
}

Registrar reg([] {
  {
    auto& p = get_or_create_primitive("device_put");
    set_classes(p, OpClass::other, CostClass::data_movement, FusionClass::normal);
    p.shape_rule = device_put_shape;
    p.impl = device_put_impl;
  }
  // The halves of a device_put exist only after fusion, in the compiler: no autodiff or
  // batching ever meets them.
  const char* internal = "compiler-internal: made by the offload stages (memory/) after autodiff, batching and fusion";
  auto internal_copy = [internal](const char* name, auto shape, auto impl) {
    auto& p = get_or_create_primitive(name);
    set_classes(p, OpClass::other, CostClass::data_movement, FusionClass::normal);
    p.shape_rule = shape;
    p.impl = impl;
    p.no_jvp_reason = internal;
    p.no_transpose_reason = internal;
    p.no_batch_reason = internal;
  };
  internal_copy("copy_start", device_put_shape, device_put_impl);
  internal_copy("copy_slice_start", copy_slice_start_shape, copy_slice_start_impl);
  internal_copy("copy_update_start", copy_update_start_shape, copy_update_start_impl);
  internal_copy("copy_done", copy_done_shape, copy_done_impl);
  internal_copy("allocate_buffer", allocate_buffer_shape, allocate_buffer_impl);
  {
    auto& p = get_or_create_primitive("optimization_barrier");
    set_classes(p, OpClass::other, CostClass::view, FusionClass::normal);
    // What keeps a rematerialized computation apart from the forward pass: CSE never merges it.
    p.never_merged = true;
    p.multiple_results = true;
    p.shape_rule = barrier_shape;
    p.impl = barrier_impl;
  }
});

}  // namespace

Array lax::device_put(const Array& x, MemoryKind memory_kind, SL loc) {
  if (uint8_t(memory_kind) > uint8_t(MemoryKind::unpinned_host))
    throw ValueError("device_put: memory kind " + std::to_string(int(memory_kind)) +
                         " is not a MemoryKind (device, pinned_host or unpinned_host)",
                     loc);
  return minijax::bind1(primitive("device_put"), {x}, Params{{"memory_kind", memory_kind}}, loc);
}

std::vector<Array> lax::optimization_barrier(const std::vector<Array>& xs, SL loc) {
  if (xs.empty()) return {};
  return minijax::bind(primitive("optimization_barrier"), xs, {}, loc);
}

}  // namespace minijax
