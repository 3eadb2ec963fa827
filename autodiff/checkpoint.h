// minijax rematerialization API (JAX's jax.checkpoint / jax.remat and checkpoint_name).
// Owns CheckpointOptions, mj::checkpoint/remat over pytrees with static arguments, checkpoint_name.
#pragma once
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "autodiff/checkpoint_policies.h"
#include "core/pytree.h"
#include "core/staging.h"

namespace minijax {

/// Options of mj::checkpoint (JAX's jax.checkpoint keyword arguments).
struct CheckpointOptions {
  /// Which values computed inside are saved for the backward pass; nullptr is JAX's default
  /// (nothing_saveable, printed `policy=None`).
  PolicyPtr policy;
  /// Put an optimization_barrier on the inputs of the differentiated (recomputing) body, so a
  /// compiler cannot merge the recomputation back into the forward pass.
  bool prevent_cse = true;
  /// Arguments (by position; negative counts from the end) that are not traced: f receives the
  /// caller's value (an Array stays concrete and may be read with item()). Arguments that are
  /// not pytrees of Arrays (ints, floats, strings, enums, ...) are always static. The function is
  /// traced anew at every call, so each static value gets its own trace.
  std::vector<int> static_argnums;
};

/// checkpoint_name(x, name): x tagged with `name` for the names policies (the `name`
/// primitive, printed `name[name=...]`). Identity on values; under differentiation the primal is
/// named and the tangent passes through. Throws TypeError naming `name` if x is not an array
/// (an empty Array). JAX: jax.ad_checkpoint.checkpoint_name.
Array checkpoint_name(const Array& x, const std::string& name,
                      std::source_location loc = std::source_location::current());

namespace detail {
/// Binds one `checkpoint` equation: traced body (closed-over values -> leading operands).
std::vector<Array> bind_checkpoint(const ClosedJaxpr& traced, const std::vector<Array>& args,
                                   const CheckpointOptions& opts, std::source_location loc);
/// Normalizes static_argnums against the number of arguments (ValueError if out of range).
std::vector<bool> static_mask(const std::vector<int>& static_argnums, size_t nargs,
                              std::source_location loc);

template <class T>
constexpr bool is_traced_type = PyTree<std::decay_t<T>>;

template <class T>
void flatten_if_traced(const T& a, bool is_static, std::vector<Array>& flat) {
  if constexpr (is_traced_type<T>) {
    if (!is_static) pytree<std::decay_t<T>>::flatten(a, flat);
  }
}

template <class T>
T rebuild_if_traced(const T& a, bool is_static, const Array*& next) {
  if constexpr (is_traced_type<T>) {
    if (!is_static) return pytree<std::decay_t<T>>::unflatten(a, next);
  }
  return a;
}
}  // namespace detail

/// The callable mj::checkpoint returns.
template <class F>
class Checkpointed {
 public:
  Checkpointed(F f, CheckpointOptions opts, std::source_location loc)
      : f_(std::move(f)), opts_(std::move(opts)), loc_(loc) {}

  template <class... A>
  auto operator()(const A&... args) const {
    using R = std::decay_t<std::invoke_result_t<const F&, const A&...>>;
    static_assert(PyTree<R>, "mj::checkpoint: the function must return a pytree of Arrays");
    std::vector<bool> st = detail::static_mask(opts_.static_argnums, sizeof...(A), loc_);
    std::vector<Array> flat;
    {
      size_t i = 0;
      ((detail::flatten_if_traced(args, st[i], flat), ++i), ...);
    }
    std::vector<ShapedArray> avals;
    for (auto& a : flat) avals.push_back(a.aval());
    std::optional<R> out_like;
    ClosedJaxpr traced = trace_to_jaxpr(
        [&](const std::vector<Array>& ins) {
          const Array* next = ins.data();
          // Braced initialization evaluates left to right: leaves are consumed in order.
          auto rebuild = [&]<size_t... I>(std::index_sequence<I...>) {
            return std::tuple<A...>{detail::rebuild_if_traced(args, st[I], next)...};
          };
          std::tuple<A...> rebuilt = rebuild(std::index_sequence_for<A...>{});
          R out = std::apply(f_, rebuilt);
          std::vector<Array> leaves = tree_flatten(out);
          out_like = std::move(out);
          return leaves;
        },
        avals, loc_);
    std::vector<Array> outs = detail::bind_checkpoint(traced, flat, opts_, loc_);
    return tree_unflatten(*out_like, outs, loc_);
  }

 private:
  F f_;
  CheckpointOptions opts_;
  std::source_location loc_;
};

/// checkpoint(f, options): f made rematerializable (JAX's jax.checkpoint). Calling the result
/// traces f (on its pytree-of-Array arguments; see CheckpointOptions::static_argnums) into a body
/// jaxpr and binds one `checkpoint` equation, printed
/// `checkpoint[differentiated=False jaxpr={...} policy=None prevent_cse=True]`. Values f closes
/// over become leading operands. Eagerly it evaluates the body; under grad the policy decides
/// what the backward pass saves (Saveable), recomputes (Recompute) or keeps in another memory
/// kind (Offloadable). Inside f a traced value cannot be used as a C++ value
/// (ConcretizationError). Throws ValueError for static_argnums out of range.
template <class F>
Checkpointed<F> checkpoint(F f, CheckpointOptions opts = {},
                           std::source_location loc = std::source_location::current()) {
  return Checkpointed<F>(std::move(f), std::move(opts), loc);
}

/// Alias of checkpoint (JAX's jax.remat).
template <class F>
Checkpointed<F> remat(F f, CheckpointOptions opts = {},
                      std::source_location loc = std::source_location::current()) {
  return Checkpointed<F>(std::move(f), std::move(opts), loc);
}

}  // namespace minijax
