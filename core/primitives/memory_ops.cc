// minijax memory and scheduling primitives: device_put (copy between memory kinds) and
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
