// minijax jit: the template definitions of jit/jit.h: splitting arguments into leaves and static
// values, rebuilding them for f, and the pytree of outputs; the rest is JitCore's. Included by jit/jit.h only.
#pragma once
#include <algorithm>
#include <optional>
#include <tuple>

#include "jit/jit.h"

namespace minijax {

namespace detail {

template <class T>
traced_t<T> rebuild_arg(const T& a, bool is_static, const Array*& next) {
  if constexpr (PyTree<T>) {
    if (!is_static) return pytree<T>::unflatten(a, next);
  }
  if constexpr (std::is_same_v<T, ShapeDtypeStruct>) return *next++;
  else return a;
}

template <class... A>
CallArgs split_args(const JitOptions& opts, std::source_location loc, const A&... args) {
  constexpr size_t n = sizeof...(A);
  static_assert(n <= 64, "mj::jit: at most 64 positional arguments");
  CallArgs ca;
  ca.nargs = n;
  if (!opts.static_argnums.empty()) ca.static_mask = argnum_mask(opts.static_argnums, n, "static_argnums", loc);
  if (!opts.donate_argnums.empty()) ca.donate_mask = argnum_mask(opts.donate_argnums, n, "donate_argnums", loc);
  ca.sig.words.reserve(64);
  size_t i = 0;
  auto one = [&](const auto& a) {
    using T = std::decay_t<decltype(a)>;
    ca.first_leaf[i] = uint32_t(ca.leaves.size());
    ca.sig.words.push_back(uint64_t(reinterpret_cast<uintptr_t>(&typeid(traced_t<T>))));  // SDS = Array
    if constexpr (PyTree<T>) {
      if (ca.is_static(i))
        throw TypeError("jit '" + opts.name + "': static_argnums names argument " + std::to_string(i) +
                            ", a pytree of Arrays; Arrays are not hashable (as in JAX): pass it traced, or "
                            "pass a hashable C++ value",
                        loc);
      pytree<T>::flatten(a, ca.leaves);
      append_structure(a, ca.sig);
    } else {
      if ((ca.donate_mask >> i) & 1)
        throw TypeError("jit '" + opts.name + "': donate_argnums names argument " + std::to_string(i) +
                            ", which is static (only Arrays can be donated)",
                        loc);
      ca.static_mask |= uint64_t(1) << i;
      ca.statics.push_back(static_key(static_value(a)));
      ca.sig.words.push_back(ca.statics.back().hash);
    }
    ++i;
  };
  (one(args), ...);
  ca.first_leaf[n] = uint32_t(ca.leaves.size());
  append_leaf_signature(ca.sig, ca.leaves, loc);
  ca.sig.finish();
  return ca;
}

template <class... A>
std::string describe_args(const CallArgs& ca, std::source_location loc, const A&... args) {
  std::vector<std::string> structures;
  size_t i = 0, k = 0;
  auto one = [&](const auto& a) {
    using T = std::decay_t<decltype(a)>;
    if constexpr (PyTree<T>) {
      if (!ca.is_static(i)) structures.push_back(pytree<T>::structure(a));
    }
    if (ca.is_static(i)) structures.push_back("static(hash=" + std::to_string(ca.statics.at(k++).hash) + ")");
    ++i;
  };
  (one(args), ...);
  return signature_text(structures, ca.leaves, loc);
}

/// The output pytree of a call: `like` (the traced output, in `out_like`) with `outs` as leaves.
template <class R>
R unflatten_outputs(const std::any& out_like, const std::vector<Array>& outs) {
  const Array* next = outs.data();
  return pytree<R>::unflatten(std::any_cast<const R&>(out_like), next);
}


/// The arguments of one call as f takes them: leaves from `next` (in order) in place of the
/// traced arguments' leaves, static arguments as given.
template <class... A>
std::tuple<traced_t<A>...> rebuild_args(const CallArgs& ca, const Array* next, const A&... args) {
  // Braced initialization evaluates left to right: leaves are consumed in order.
  auto rebuild = [&]<size_t... I>(std::index_sequence<I...>) {
    return std::tuple<traced_t<A>...>{rebuild_arg(args, ca.is_static(I), next)...};
  };
  return rebuild(std::index_sequence_for<A...>{});
}
}  // namespace detail

template <class F>
template <class R, class... A>
auto Jit<F>::tracer(const CallArgs& ca, const A&... args) const {
  return [this, &ca, &args...](const std::vector<ShapedArray>& avals, std::any& out_like) {
    std::optional<R> out;
    ClosedJaxpr cj = trace_to_jaxpr(
        [&](const std::vector<Array>& ins) {
          std::tuple<detail::traced_t<A>...> rebuilt = detail::rebuild_args(ca, ins.data(), args...);
          R o = std::apply(*f_, rebuilt);
          std::vector<Array> leaves = tree_flatten(o);
          out = std::move(o);
          return leaves;
        },
        avals, core_.loc());
    out_like = detail::abstract_like(*out);
    return cj;
  };
}

template <class F>
template <class... A>
auto Jit<F>::operator()(const A&... args) const {
  using R = std::decay_t<std::invoke_result_t<F&, const detail::traced_t<A>&...>>;
  CallArgs ca = detail::split_args(core_.options(), core_.loc(), args...);
  auto trace = tracer<R>(ca, args...);
  // debug_nans / debug_infs: a NaN or Inf in an output re-runs f op by op on the same arguments
  // (JAX's de-optimized re-run), whose first offending primitive throws at the user's line.
  auto rerun = [&] { (void)std::apply(*f_, detail::rebuild_args(ca, ca.leaves.data(), args...)); };
  detail::JitCallResult r = core_.call(ca, trace, rerun);
  if (r.staged) return tree_unflatten(std::any_cast<const R&>(*r.out_like), r.outs, core_.loc());
  return detail::unflatten_outputs<R>(*r.out_like, r.outs);
}

template <class F>
template <class... A>
SpmdRun Jit<F>::run_spmd_shards(const A&... args) const {
  using R = std::decay_t<std::invoke_result_t<F&, const detail::traced_t<A>&...>>;
  CallArgs ca = detail::split_args(core_.options(), core_.loc(), args...);
  auto trace = tracer<R>(ca, args...);
  return core_.run_spmd_shards(ca, trace);
}

template <class F>
template <class... A>
auto Jit<F>::lower(const A&... args) const {
  using R = std::decay_t<std::invoke_result_t<F&, const detail::traced_t<A>&...>>;
  CallArgs ca = detail::split_args(core_.options(), core_.loc(), args...);
  auto trace = tracer<R>(ca, args...);
  auto describe = [&] { return detail::describe_args(ca, core_.loc(), args...); };
  Lowered<R> low;
  static_cast<detail::LoweredCall&>(low) = core_.lower(ca, trace, describe);
  return low;
}

template <class R>
Compiled<R> Lowered<R>::compile(std::source_location loc) const {
  Compiled<R> c;
  c.low_ = *this;
  c.low_.loc = loc;  // the Compiled's own errors name the line that made it
  detail::compile_lowered_call(*this, loc, &c.exe_, &c.spmd_);
  return c;
}

template <class R>
template <class... A>
R Compiled<R>::operator()(const A&... args) const {
  CallArgs ca = detail::split_args(low_.options, low_.loc, args...);
  auto describe = [&] { return detail::describe_args(ca, low_.loc, args...); };
  std::vector<Array> outs = detail::call_compiled(low_, exe_, spmd_, ca, describe);
  return detail::unflatten_outputs<R>(low_.out_like, outs);
}

}  // namespace minijax
