// minijax memory and scheduling primitives: device_put (copy between memory kinds), its
// asynchronous halves copy_start / copy_done (made by memory/schedule_offloads), and
// optimization_barrier (identity the compiler must not look through). Owns their rules and binders.
#include <cstring>

#include "core/lax.h"
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
  o.memory_kind = p.get_memory_kind("memory_kind");
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
// copy_done(h, x): the destination h, complete; x (the source) is an operand so that it stays
// alive until the copy is done. Eagerly: h.
std::vector<ShapedArray> copy_done_shape(const std::vector<ShapedArray>& in, const Params&) {
  if (in.size() != 2) throw ValueError("copy_done takes the copy's destination and source, got " +
                                       std::to_string(in.size()) + " operands");
  if (in[0].shape != in[1].shape || in[0].dtype != in[1].dtype)
    throw TypeError("copy_done: destination " + in[0].str() + " and source " + in[1].str() + " differ");
  return {in[0]};
}

std::vector<Array> copy_done_impl(const std::vector<Array>& a, const Params&, const std::vector<ShapedArray>&) {
  return {a[0]};
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
    p.shape_rule = device_put_shape;
    p.impl = device_put_impl;
  }
  // The halves of a device_put exist only after fusion, in the compiler: no autodiff or
  // batching ever meets them.
  const char* internal = "compiler-internal: made by memory/schedule_offloads after autodiff, batching and fusion";
  auto internal_copy = [internal](const char* name, auto shape, auto impl) {
    auto& p = get_or_create_primitive(name);
    p.shape_rule = shape;
    p.impl = impl;
    p.no_jvp_reason = internal;
    p.no_transpose_reason = internal;
    p.no_batch_reason = internal;
  };
  internal_copy("copy_start", device_put_shape, device_put_impl);
  internal_copy("copy_done", copy_done_shape, copy_done_impl);
  {
    auto& p = get_or_create_primitive("optimization_barrier");
    p.multiple_results = true;
    p.shape_rule = barrier_shape;
    p.impl = barrier_impl;
  }
});

}  // namespace

Array lax::device_put(const Array& x, MemoryKind memory_kind, SL loc) {
  return minijax::bind1(primitive("device_put"), {x}, Params{{"memory_kind", memory_kind}}, loc);
}

std::vector<Array> lax::optimization_barrier(const std::vector<Array>& xs, SL loc) {
  if (xs.empty()) return {};
  return minijax::bind(primitive("optimization_barrier"), xs, {}, loc);
}

}  // namespace minijax
