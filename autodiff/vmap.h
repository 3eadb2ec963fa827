// minijax batching transformation: vmap_flat and vmap (the batch trace is autodiff/batching.h).
// Owns the flat engine and the user-level pytree templates.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/primitive.h"
#include "core/pytree.h"
#include "core/staging.h"
#include "core/trace.h"

namespace minijax {

/// Vectorizing map of a flat function (JAX's batching.batch over flat arguments).
/// in_axes[i] is the axis of args[i] to map over; kNotMapped means not mapped (args[i] is
/// passed unchanged to every element's computation). A negative axis a means ndim + a (-1 is the last
/// axis, as in JAX). All mapped axes
/// must have the same size.
/// out_axes: one per output, or a single entry for all, or empty (all 0): where the batch axis
/// goes in each output (negative axes count from the end of the output's rank). Outputs that do not
/// depend on a mapped input are broadcast along the batch axis.
/// Throws ValueError: in_axes size != args size; an axis out of range; no mapped argument;
/// "vmap got inconsistent sizes for array axes to be mapped" naming each argument's shape, axis
/// and size; out_axes size wrong; out_axes kNotMapped for a batched output.
/// Throws what f throws; ValueError if f uses a primitive without a batching rule.
/// Source: jax/_src/api.py vmap and jax/_src/interpreters/batching.py.
std::vector<Array> vmap_flat(const FlatFn& f, const std::vector<Array>& args,
                             const std::vector<int64_t>& in_axes,
                             const std::vector<int64_t>& out_axes,
                             std::source_location loc = std::source_location::current());

/// Options of vmap.
struct VmapOptions {
  /// One per positional argument, applied to every leaf of that argument; a single entry applies
  /// to every argument (JAX's integer in_axes); empty: all 0. kNotMapped: not mapped.
  std::vector<int64_t> in_axes;
  /// One per output leaf, or a single entry for all; empty: all 0.
  std::vector<int64_t> out_axes;
};

/// vmap(f, opts)(args...): f mapped over the in_axes of its (pytree) arguments, returning f's
/// result pytree with the batch axis at out_axes. Errors as vmap_flat, reported at the call site
/// of vmap(); ValueError if in_axes has neither 0, 1 nor one entry per argument.
/// Example: `auto bf = mj::vmap([](const Array& w, const Array& x){ return lax::dot_general(...); },
///                              {.in_axes = {kNotMapped, 0}});`
template <class F>
auto vmap(F f, VmapOptions opts = {}, std::source_location loc = std::source_location::current()) {
  return [f = std::move(f), opts = std::move(opts), loc](const auto&... args) {
    // A copy of f, so that callables with a non-const call operator (grad's) work too.
    F g = f;
    using R = std::decay_t<std::invoke_result_t<F&, const std::decay_t<decltype(args)>&...>>;
    static_assert(PyTree<R>, "vmap: f must return an Array or a pytree of Arrays");
    constexpr size_t n = sizeof...(args);
    auto like = std::make_tuple(std::decay_t<decltype(args)>(args)...);
    std::vector<int64_t> arg_axes;
    if (opts.in_axes.empty()) arg_axes.assign(n, 0);
    else if (opts.in_axes.size() == 1) arg_axes.assign(n, opts.in_axes[0]);
    else if (opts.in_axes.size() == n) arg_axes = opts.in_axes;
    else
      throw ValueError("vmap in_axes must have one entry per positional argument (" +
                           std::to_string(n) + "), or a single entry for all; got " +
                           std::to_string(opts.in_axes.size()),
                       loc);
    std::vector<Array> flat;
    std::vector<int64_t> flat_axes;
    size_t k = 0;
    std::apply(
        [&](const auto&... a) {
          ((void)[&] {
             size_t before = flat.size();
             pytree<std::decay_t<decltype(a)>>::flatten(a, flat);
             flat_axes.insert(flat_axes.end(), flat.size() - before, arg_axes[k++]);
           }(),
           ...);
        },
        like);
    std::optional<R> out_like;
    FlatFn flat_fn = [&](const std::vector<Array>& leaves) {
      const Array* next = leaves.data();
      R r = std::apply(
          [&](const auto&... a) {
            // Braced init: the arguments are rebuilt in order.
            std::tuple<std::decay_t<decltype(a)>...> rebuilt{
                pytree<std::decay_t<decltype(a)>>::unflatten(a, next)...};
            return std::apply([&](const auto&... b) { return R(g(b...)); }, rebuilt);
          },
          like);
      out_like.emplace(r);
      return tree_flatten(r);
    };
    auto outs = vmap_flat(flat_fn, flat, flat_axes, opts.out_axes, loc);
    return tree_unflatten(*out_like, outs, loc);
  };
}

}  // namespace minijax
