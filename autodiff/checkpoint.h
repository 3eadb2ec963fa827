// minijax rematerialization API (JAX's jax.checkpoint / jax.remat and checkpoint_name).
// Owns CheckpointOptions, mj::checkpoint/remat over pytrees with static arguments, checkpoint_name.
#pragma once
#include <initializer_list>
#include <memory>
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
#include "core/trace_cache.h"

namespace minijax {

/// JAX's `prevent_cse` of jax.checkpoint: one flag for every argument (`true`, `false`), or one
/// per argument f traces, in order (static arguments, see CheckpointOptions::static_argnums,
/// have none), e.g. `{true, false}`: an argument's flag holds for each of its pytree leaves.
/// Where a flag is set, the recomputing (differentiated) body reads that operand through an
/// optimization_barrier, so a compiler cannot merge the recomputation back into the forward
/// pass (`false` for an argument that a scan body's checkpoint recomputes anyway saves the
/// barrier). A per-argument list is printed as JAX prints it, per operand of the equation:
/// `prevent_cse=(False, True, False)`, closed-over values first (False); a bool prints as one.
/// Braces make a list: `{false}` is one flag for a one-argument f (for every argument, write
/// `false`); a list of another length than f's traced arguments is a ValueError at the call.
class PreventCse {
 public:
  /// The same flag for every argument.
  PreventCse(bool all = true) : all_(all) {}  // NOLINT: a bool converts, as in JAX
  /// One flag per traced argument.
  PreventCse(std::initializer_list<bool> per_argument) : per_argument_(per_argument), listed_(true) {}
  explicit PreventCse(std::vector<bool> per_argument) : per_argument_(std::move(per_argument)), listed_(true) {}
  /// Whether flags were given per argument.
  bool per_argument() const { return listed_; }
  /// The flags per argument (per_argument() only).
  const std::vector<bool>& flags() const { return per_argument_; }
  /// The flag for every argument (not per_argument()).
  bool all() const { return all_; }

 private:
  bool all_ = true;
  std::vector<bool> per_argument_;
  bool listed_ = false;
};

/// Options of mj::checkpoint (JAX's jax.checkpoint keyword arguments).
struct CheckpointOptions {
  /// Which values computed inside are saved for the backward pass; nullptr is JAX's default
  /// (nothing_saveable, printed `policy=None`).
  PolicyPtr policy;
  /// Put an optimization_barrier on the inputs of the differentiated (recomputing) body, so a
  /// compiler cannot merge the recomputation back into the forward pass: for every argument, or
  /// per traced argument (PreventCse).
  PreventCse prevent_cse = true;
  /// Arguments (by position; negative counts from the end) that are not traced: f receives the
  /// caller's value (an Array stays concrete and may be read with item()). Arguments that are
  /// not pytrees of Arrays (ints, floats, strings, enums, ...) are always static. Static values
  /// are part of the trace's key when hashable (std::hash and ==, as for jit's static_argnums;
  /// floating-point values by their bits): each distinct value gets its own trace. A call with a
  /// static value that is not hashable (an Array, a container of Arrays, a type without
  /// std::hash) is traced anew and not kept.
  std::vector<int> static_argnums;
  /// Whether the traces of f are shared with every other checkpoint object of the same callable
  /// (TraceSharing, core/trace_cache.h): by default when f is a function pointer, a captureless
  /// lambda or empty function object, or has std::hash and ==.
  TraceSharing share_traces = TraceSharing::automatic;
};

/// checkpoint_name(x, name): x tagged with `name` for the names policies (the `name`
/// primitive, printed `name[name=...]`). Identity on values; under differentiation the primal is
/// named and the tangent passes through. Throws TypeError naming `name` if x is not an array
/// (an empty Array). JAX: jax.ad_checkpoint.checkpoint_name.
Array checkpoint_name(const Array& x, const std::string& name,
                      std::source_location loc = std::source_location::current());

namespace detail {
/// Binds one `checkpoint` equation on a traced body whose constvars were converted to leading
/// invars (closed-over values -> leading operands): `consts`, then `args`, the leaves of the
/// traced arguments (`leaves_per_arg[i]` of the i-th). Throws ValueError when
/// opts.prevent_cse lists flags for another number of traced arguments, naming both counts.
std::vector<Array> bind_checkpoint(const ClosedJaxprPtr& body, const std::vector<Array>& consts,
                                   const std::vector<Array>& args, const std::vector<size_t>& leaves_per_arg,
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

/// Appends argument `a` (position static or traced) to a checkpoint's trace key: its type, then
/// its pytree structure (traced) or its static value's hash (the value itself in key.statics).
/// False when it is static and not hashable (an Array or a pytree of them, a type without
/// std::hash and ==): such a call is traced anew, not kept.
template <class T>
bool append_checkpoint_arg(const T& a, bool is_static, TraceKey& key) {
  key.sig.words.push_back(uint64_t(reinterpret_cast<uintptr_t>(&typeid(T))));
  key.sig.words.push_back(is_static);
  if constexpr (is_traced_type<T>) {
    if (!is_static) {
      append_structure(a, key.sig);
      return true;
    }
    return false;  // a static Array (or pytree of them): not hashable, as in JAX
  } else {
    using V = std::decay_t<decltype(static_value(a))>;
    if constexpr (StaticArgument<V> && std::is_copy_constructible_v<V>) {
      key.statics.push_back(static_key<V>(static_value(a)));
      key.sig.words.push_back(key.statics.back().hash);
      return true;
    } else {
      return false;
    }
  }
}
}  // namespace detail

/// The callable mj::checkpoint returns. Traces f once per signature (pytree structures, avals
/// with weak types and memory kinds, hashable static values): in the process-wide trace cache
/// shared by every checkpoint of the same callable when f is identifiable (TraceSharing), else in
/// this object's own cache (shared by its copies). A trace made under a transformation (grad,
/// vmap, jit, ...) of an object's own cache is found again only under that same transformation
/// (as JAX keys remat's trace on the current trace): a lambda capturing by reference a variable
/// that holds a tracer of one transformation and later another value never reuses a trace made
/// with the old one. A trace whose constants are tracers of an enclosing trace is never kept,
/// so no kept trace holds a tracer. Otherwise, values f reads through references or globals are
/// read when it is traced (as JAX reads a Python closure's variables): pass values that change
/// between calls as arguments, or make a new object (with TraceSharing::never when f is
/// identifiable). Policy and prevent_cse are parameters of the bound equation, not of the trace:
/// checkpoints of one f with different policies share its trace. Source:
/// jax/_src/ad_checkpoint.py (_trace_to_jaxpr under weakref_lru_cache, keyed on the function and
/// the trace context).
template <class F>
class Checkpointed {
 public:
  /// Throws ValueError for a null function pointer and TypeError when opts.share_traces is
  /// TraceSharing::required for a callable that cannot be identified, both naming the line `loc`.
  Checkpointed(F f, CheckpointOptions opts, std::source_location loc)
      : f_(std::move(f)), opts_(std::move(opts)), loc_(loc) {
    detail::check_callable(f_, "checkpoint", "", loc_);  // the API function's name
    fn_ = detail::sharing_id(f_, opts_.share_traces, "checkpoint", "", loc_);  // the API's name
    if (!fn_.type) own_ = std::make_shared<detail::TraceTable>();
  }

  template <class... A>
  auto operator()(const A&... args) const {
    using R = std::decay_t<std::invoke_result_t<const F&, const A&...>>;
    static_assert(PyTree<R>, "mj::checkpoint: the function must return a pytree of Arrays");
    std::vector<bool> st = detail::static_mask(opts_.static_argnums, sizeof...(A), loc_);
    std::vector<Array> flat;
    std::vector<size_t> leaves_per_arg;  // per traced argument
    {
      size_t i = 0;
      auto add = [&](const auto& a) {
        const size_t before = flat.size();
        detail::flatten_if_traced(a, st[i], flat);
        if (detail::is_traced_type<decltype(a)> && !st[i]) leaves_per_arg.push_back(flat.size() - before);
        ++i;
      };
      (add(args), ...);
    }
    std::vector<ShapedArray> avals;
    for (auto& a : flat) avals.push_back(a.aval());
    detail::TraceKey key;
    key.kind = "checkpoint";  // the trace cache's kind: the API function
    bool keyed = true;
    {
      size_t i = 0;
      ((keyed = detail::append_checkpoint_arg(args, st[i], key) && keyed, ++i), ...);
    }
    auto make = [&] { return trace<R>(st, avals, args...); };
    detail::CachedTracePtr traced;
    if (!keyed) {
      traced = make();
    } else {
      detail::append_aval_signature(key.sig, avals);
      key.sig.finish();
      if (fn_.type) {
        key.fn = fn_;
        traced = detail::shared_traces().get(key, make);
      } else {
        std::shared_ptr<Trace> context = detail::innermost_trace();
        key.context = context;
        key.context_id = context.get();
        traced = own_->get(key, make);
      }
    }
    std::vector<Array> outs = detail::bind_checkpoint(traced->jaxpr, traced->consts, flat, leaves_per_arg, opts_, loc_);
    return tree_unflatten(std::any_cast<const R&>(traced->out_like), outs, loc_);
  }

 private:
  template <class R, class... A>
  detail::CachedTracePtr trace(const std::vector<bool>& st, const std::vector<ShapedArray>& avals,
                               const A&... args) const {
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
    return detail::make_cached_trace(traced, detail::abstract_like(*out_like));
  }

  F f_;
  CheckpointOptions opts_;
  std::source_location loc_;
  std::shared_ptr<detail::TraceTable> own_;  // the traces of a callable that is not shared (else null)
  detail::CallableId fn_;                    // f's identity in the shared cache (empty: not shared)
};

/// checkpoint(f, options): f made rematerializable (JAX's jax.checkpoint). Calling the result
/// traces f (on its pytree-of-Array arguments; see CheckpointOptions::static_argnums) into a body
/// jaxpr and binds one `checkpoint` equation, printed
/// `checkpoint[differentiated=False jaxpr={...} policy=None prevent_cse=True]`. Values f closes
/// over become leading operands. f is traced once per signature (see Checkpointed for the
/// caches; JAX's remat caches its trace the same way). Eagerly it evaluates the body; under grad
/// the policy decides what the backward pass saves (Saveable), recomputes (Recompute) or keeps
/// in another memory kind (Offloadable). Inside f a traced value cannot be used as a C++ value
/// (ConcretizationError). Throws ValueError for static_argnums out of range (at the call) and as
/// Checkpointed's constructor. Source: jax/_src/ad_checkpoint.py (checkpoint, _trace_to_jaxpr
/// with weakref_lru_cache).
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
