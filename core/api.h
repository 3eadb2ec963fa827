// minijax user-level staging API over pytrees: make_jaxpr and closed_call (jit is jit/jit.h).
// Owns argument flattening, Staged (the per-signature trace cache of closed_call) and binding calls.
#pragma once
#include <any>
#include <concepts>
#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "core/jaxpr.h"
#include "core/pjit.h"
#include "core/profiler_hooks.h"
#include "core/pytree.h"
#include "core/staging.h"

namespace minijax {

namespace detail {

template <class... A>
std::vector<Array> flatten_args(const A&... args) {
  std::vector<Array> flat;
  (pytree<std::decay_t<A>>::flatten(args, flat), ...);
  return flat;
}

/// Calls f on args rebuilt (same pytree structures) from the flat leaves `ins`.
template <class F, class... A>
auto call_unflattened(F& f, const std::vector<Array>& ins, const A&... like) {
  const Array* next = ins.data();
  // Braced initialization evaluates left to right, so leaves are consumed in order.
  std::tuple<std::decay_t<A>...> rebuilt{pytree<std::decay_t<A>>::unflatten(like, next)...};
  return std::apply(f, rebuilt);
}

inline std::string avals_key(const std::vector<Array>& flat) {
  std::string k;
  for (auto& a : flat) k += a.aval().str() + (a.weak_type() ? "~w" : "") + ";";
  return k;
}

/// A tracing event's args (profiler): the input avals and the call site.
inline std::string trace_event_args(const std::vector<ShapedArray>& avals, std::source_location loc) {
  std::string in = "[";
  for (auto& a : avals) in += (in.size() > 1 ? ", " : "") + a.str();
  return profiler::detail::Args().add("inputs", in + "]").add("at", format_location(loc)).take();
}

}  // namespace detail

/// make_jaxpr(f)(args...): traces f (a function of pytrees of Arrays returning a pytree of
/// Arrays) on abstract values with the avals of args and returns the ClosedJaxpr (printable with
/// <<, to_string). Values f closes over become constvars (or literals if scalar). Throws what f
/// throws while tracing — e.g. ConcretizationError when f converts a traced value to C++
/// (`x.item<float>()`, `if (x > 0)`) — and TypeError/ShapeError from the primitives it applies.
/// Source: jax.make_jaxpr.
template <class F>
auto make_jaxpr(F f, std::source_location loc = std::source_location::current()) {
  return [f, loc](const auto&... args) -> ClosedJaxpr {
    std::vector<Array> flat = detail::flatten_args(args...);
    std::vector<ShapedArray> avals;
    for (auto& a : flat) avals.push_back(a.aval());
    profiler::detail::Scope trace("tracing", "make_jaxpr");
    if (trace.active()) trace.set_args(detail::trace_event_args(avals, loc));
    F g = f;
    return trace_to_jaxpr(
        [&](const std::vector<Array>& ins) {
          return tree_flatten(detail::call_unflattened(g, ins, args...));
        },
        avals, loc);
  };
}

/// A staged function: traced once per signature (pytree structure and avals of the arguments)
/// into a jaxpr, then applied as one call equation (`pjit` for jit, `closed_call` for
/// closed_call). Eagerly the equation evaluates the jaxpr on the concrete arguments; under an
/// outer make_jaxpr/jit it appears as one equation with the body nested in its params.
template <class F>
class Staged {
 public:
  Staged(F f, std::string name, const Primitive* prim, std::source_location loc)
      : state_(std::make_shared<State>(State{std::move(f), std::move(name), prim, loc, {}, 0})) {}

  /// What one signature traced to: the body jaxpr (constvars converted to leading invars), the
  /// constants to pass as its leading operands, and the output pytree (an `R`, the function's
  /// result type, held in a std::any: the structure for unflattening the flat outputs).
  struct Entry {
    ClosedJaxprPtr jaxpr;
    std::vector<Array> consts;
    std::any out_like;
  };

  /// The traced entry for `args`: from the per-signature cache, or traced now on a new signature
  /// (and cached unless its constants are tracers of an enclosing trace). Used by operator() and
  /// by the sharded jit (jit/jit.h), which partitions the same jaxpr instead of binding it.
  template <class... A>
  Entry traced(const A&... args) const {
    using R = std::decay_t<std::invoke_result_t<F&, const std::decay_t<A>&...>>;
    State& s = *state_;
    std::vector<Array> flat = detail::flatten_args(args...);
    std::string key = detail::avals_key(flat);
    ((key += pytree<std::decay_t<A>>::structure(args) + "|"), ...);
    key += typeid(std::tuple<std::decay_t<A>...>).name();
    auto it = s.cache.find(key);
    if (it != s.cache.end()) return it->second;
    Entry fresh = trace<R>(flat, args...);
    bool cacheable = true;
    for (auto& c : fresh.consts) cacheable &= c.is_concrete();
    if (cacheable) s.cache.emplace(key, fresh);
    // else: constants are tracers of an enclosing trace, valid for this call only
    return fresh;
  }

  template <class... A>
  auto operator()(const A&... args) const {
    using R = std::decay_t<std::invoke_result_t<F&, const std::decay_t<A>&...>>;
    const State& s = *state_;
    Entry entry = traced(args...);
    std::vector<Array> operands = entry.consts;
    std::vector<Array> flat = detail::flatten_args(args...);
    operands.insert(operands.end(), flat.begin(), flat.end());
    std::vector<Array> outs = bind_call(*s.prim, entry.jaxpr, s.name, operands, s.loc);
    return tree_unflatten(std::any_cast<const R&>(entry.out_like), outs, s.loc);
  }

  /// How many times the function was traced (once per new signature).
  int trace_count() const { return state_->traces; }
  /// Number of cached signatures.
  size_t cache_size() const { return state_->cache.size(); }

 private:
  struct State {
    F f;
    std::string name;
    const Primitive* prim;
    std::source_location loc;
    std::map<std::string, Entry> cache;
    int traces;
  };

  template <class R, class... A>
  Entry trace(const std::vector<Array>& flat, const A&... args) const {
    State& s = *state_;
    std::vector<ShapedArray> avals;
    for (auto& a : flat) avals.push_back(a.aval());
    std::any out_like;
    ClosedJaxpr cj;
    ++s.traces;
    profiler::detail::Scope trace("tracing", "trace");
    if (trace.active()) {
      trace.set_name("trace " + s.prim->name + " '" + s.name + "'");
      trace.set_args(detail::trace_event_args(avals, s.loc));
    }
    try {
      cj = trace_to_jaxpr(
          [&](const std::vector<Array>& ins) {
            R out = detail::call_unflattened(s.f, ins, args...);
            std::vector<Array> leaves = tree_flatten(out);
            out_like = std::move(out);
            return leaves;
          },
          avals, s.loc);
    } catch (const ConcretizationError& e) {
      throw ConcretizationError(e.message() + " (while tracing " + s.prim->name + " function '" +
                                    s.name + "')",
                                e.where());
    }
    Entry entry;
    auto body = std::make_shared<ClosedJaxpr>();
    body->jaxpr = std::make_shared<Jaxpr>(convert_constvars_jaxpr(*cj.jaxpr));
    entry.jaxpr = body;
    entry.consts = cj.consts;
    entry.out_like = std::move(out_like);
    return entry;
  }

  std::shared_ptr<State> state_;
};

/// closed_call(f, name): f staged as one `closed_call` equation (params call_jaxpr, name), for
/// named sub-computations; same caching and evaluation as jit. Source: JAX's core.closed_call_p.
template <class F>
Staged<F> closed_call(F f, std::string name, std::source_location loc = std::source_location::current()) {
  return Staged<F>(std::move(f), std::move(name), &closed_call_p(), loc);
}

}  // namespace minijax
