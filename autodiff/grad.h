// minijax user-level autodiff API over pytrees: jvp, linearize, vjp, grad, value_and_grad.
// Owns argnums/has_aux/allow_int handling; the engines are jvp_flat, linearize_flat, vjp_flat.
#pragma once
#include <functional>
#include <optional>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "autodiff/jvp.h"
#include "autodiff/linearize.h"
#include "autodiff/transpose.h"
#include "core/lax.h"
#include "core/pytree.h"

namespace minijax {

/// Which positional arguments to differentiate: `mj::grad(f, mj::argnums<0, 2>)`.
template <int... N>
struct ArgNums {};
template <int... N>
inline constexpr ArgNums<N...> argnums{};

/// Options of grad/value_and_grad (JAX's has_aux and allow_int).
struct GradOptions {
  /// f returns std::pair<Array, Aux>: the scalar to differentiate and auxiliary data returned
  /// alongside the gradient (its primal values).
  bool has_aux = false;
  /// Integer/bool inputs are allowed; their gradients are float0 arrays. Without it they are a
  /// TypeError, as in JAX.
  bool allow_int = false;
};

namespace detail {

/// TypeError unless every leaf is floating (or allow_int).
void check_grad_inputs(const std::vector<Array>& leaves, int argnum, bool allow_int,
                       std::source_location loc);
/// TypeError unless the differentiated output is exactly one array.
void check_single_output(size_t n_leaves, bool has_aux, std::source_location loc);
/// TypeError unless out is a real scalar (shape [], floating dtype).
void check_scalar_output(const Array& out, std::source_location loc);

template <class T>
std::vector<Array> slice_leaves(const std::vector<Array>& xs, size_t off, size_t n) {
  return std::vector<Array>(xs.begin() + std::ptrdiff_t(off), xs.begin() + std::ptrdiff_t(off + n));
}

template <class R>
struct AuxSplit {
  static constexpr bool value = false;
};
template <class A, class B>
struct AuxSplit<std::pair<A, B>> {
  static constexpr bool value = true;
};

/// Shared core of grad and value_and_grad: returns (primal output of f, grads tuple).
template <int... N, class F, class... Args>
auto value_and_grad_core(const F& f, const GradOptions& opts, std::source_location loc, const Args&... args_in) {
  using Tuple = std::tuple<Args...>;
  using R = std::invoke_result_t<const F&, const Args&...>;
  Tuple args(args_in...);
  std::vector<Array> leaves;
  std::vector<size_t> counts;
  auto collect = [&](auto idx) {
    constexpr int I = decltype(idx)::value;
    static_assert(I < int(sizeof...(Args)), "argnums out of range");
    auto l = tree_flatten(std::get<I>(args));
    check_grad_inputs(l, I, opts.allow_int, loc);
    counts.push_back(l.size());
    leaves.insert(leaves.end(), l.begin(), l.end());
  };
  (collect(std::integral_constant<int, N>{}), ...);
  std::optional<R> out_like;
  FlatFn fn = [&](const std::vector<Array>& xs) {
    Tuple a = args;
    size_t off = 0, k = 0;
    auto rebuild = [&](auto idx) {
      constexpr int I = decltype(idx)::value;
      std::get<I>(a) = tree_unflatten(std::get<I>(args), slice_leaves<Array>(xs, off, counts[k]), loc);
      off += counts[k++];
    };
    (rebuild(std::integral_constant<int, N>{}), ...);
    R r = std::apply(f, a);
    out_like.emplace(r);
    return tree_flatten(r);
  };
  VjpResult vr = vjp_flat(fn, leaves, loc);
  if (opts.has_aux && !AuxSplit<R>::value)
    throw TypeError("grad with has_aux: the function must return std::pair<Array, Aux>", loc);
  if constexpr (AuxSplit<R>::value) {
    if (opts.has_aux) check_single_output(tree_flatten(out_like->first).size(), true, loc);
    else check_single_output(vr.primal_outs.size(), false, loc);
  } else {
    check_single_output(vr.primal_outs.size(), false, loc);
  }
  check_scalar_output(vr.primal_outs.at(0), loc);
  std::vector<Array> cts(vr.primal_outs.size());
  // The seed cotangent lives where the output does (a pinned_host output gets a host seed).
  cts[0] = lax::full({}, 1.0, vr.primal_outs[0].dtype());
  if (vr.primal_outs[0].memory_kind() != MemoryKind::device)
    cts[0] = lax::device_put(cts[0], vr.primal_outs[0].memory_kind(), loc);
  std::vector<Array> g = vr.pullback(cts, loc);
  R out = tree_unflatten(*out_like, vr.primal_outs, loc);
  size_t off = 0, k = 0;
  auto build = [&](auto idx) {
    constexpr int I = decltype(idx)::value;
    auto t = tree_unflatten(std::get<I>(args), slice_leaves<Array>(g, off, counts[k]), loc);
    off += counts[k++];
    return t;
  };
  auto grads = std::tuple{build(std::integral_constant<int, N>{})...};
  return std::pair{std::move(out), std::move(grads)};
}

/// value_and_grad_core, or for a function returning a C++ number one static_assert (and nothing
/// else instantiated, so that is the only error the compiler prints).
template <int... N, class F, class... Args>
auto value_and_grad_impl(const F& f, const GradOptions& opts, std::source_location loc, const Args&... args_in) {
  using R = std::remove_cvref_t<std::invoke_result_t<const F&, const Args&...>>;
  if constexpr (std::is_arithmetic_v<R>) {
    static_assert(!std::is_arithmetic_v<R>,
                  "mj::grad / mj::value_and_grad: the function returns a C++ number (float, double, "
                  "int), not an mj::Array: return a scalar mj::Array (e.g. mj::sum(...) or mj::scalar(v))");
    return std::pair{R{}, std::tuple<>{}};
  } else {
    return value_and_grad_core<N...>(f, opts, loc, args_in...);
  }
}

template <class Tup>
auto unwrap_single(Tup&& t) {
  if constexpr (std::tuple_size_v<std::decay_t<Tup>> == 1) return std::get<0>(std::forward<Tup>(t));
  else return std::forward<Tup>(t);
}

}  // namespace detail

/// Gradient of a scalar function with respect to arguments N... (JAX's jax.grad).
/// f: (pytrees of Arrays...) -> scalar floating Array (or std::pair<Array, Aux> with has_aux).
/// Returns a callable with f's signature returning the gradient with the structure of argument N
/// (a std::tuple for several argnums; std::pair{grad, aux} with has_aux).
/// Throws TypeError for non-scalar outputs and for integer inputs without allow_int. A function
/// returning a C++ float or double (not an Array) is a compile error: one static_assert saying
/// to return a scalar mj::Array.
template <int... N, class F>
auto grad(F f, ArgNums<N...>, GradOptions opts = {},
          std::source_location loc = std::source_location::current()) {
  return [f, opts, loc](const auto&... args) {
    auto [out, grads] = detail::value_and_grad_impl<N...>(f, opts, loc, args...);
    auto g = detail::unwrap_single(std::move(grads));
    if constexpr (detail::AuxSplit<std::decay_t<decltype(out)>>::value) {
      if (opts.has_aux) return std::pair{std::move(g), std::move(out.second)};
      throw TypeError("grad: function returned a pair; pass GradOptions{.has_aux = true}", loc);
    } else {
      return g;
    }
  };
}
template <class F>
auto grad(F f, GradOptions opts = {}, std::source_location loc = std::source_location::current()) {
  return grad(std::move(f), argnums<0>, opts, loc);
}

/// (f(args), grad f(args)) in one pass (JAX's value_and_grad). With has_aux the value is
/// std::pair{value, aux}.
template <int... N, class F>
auto value_and_grad(F f, ArgNums<N...>, GradOptions opts = {},
                    std::source_location loc = std::source_location::current()) {
  return [f, opts, loc](const auto&... args) {
    auto [out, grads] = detail::value_and_grad_impl<N...>(f, opts, loc, args...);
    return std::pair{std::move(out), detail::unwrap_single(std::move(grads))};
  };
}
template <class F>
auto value_and_grad(F f, GradOptions opts = {},
                    std::source_location loc = std::source_location::current()) {
  return value_and_grad(std::move(f), argnums<0>, opts, loc);
}

/// Forward mode (JAX's jax.jvp): (f(primals...), df·tangents) for a tuple of primal arguments and
/// a tuple of tangents of the same structures. Zero output tangents are materialized.
template <class F, class... A>
auto jvp(F f, const std::tuple<A...>& primals, const std::tuple<A...>& tangents,
         std::source_location loc = std::source_location::current()) {
  using R = std::invoke_result_t<F&, const A&...>;
  std::vector<Array> pl, tl;
  std::apply([&](const auto&... p) { (pytree<std::decay_t<decltype(p)>>::flatten(p, pl), ...); }, primals);
  std::apply([&](const auto&... t) { (pytree<std::decay_t<decltype(t)>>::flatten(t, tl), ...); }, tangents);
  if (pl.size() != tl.size())
    throw TypeError("jvp: primals and tangents have different structures", loc);
  std::optional<R> out_like;
  FlatFn fn = [&](const std::vector<Array>& xs) {
    const Array* next = xs.data();
    std::tuple<A...> a = std::apply(
        [&](const auto&... p) { return std::tuple<A...>{pytree<std::decay_t<decltype(p)>>::unflatten(p, next)...}; },
        primals);
    R r = std::apply(f, a);
    out_like.emplace(r);
    return tree_flatten(r);
  };
  auto [po, to] = jvp_flat(fn, pl, tl, loc);
  for (size_t i = 0; i < to.size(); ++i) to[i] = instantiate_zero(to[i], po[i].aval());
  return std::pair{tree_unflatten(*out_like, po, loc), tree_unflatten(*out_like, to, loc)};
}
/// jvp of a one-argument function: jvp(f, x, t).
template <class F, PyTree A>
auto jvp(F f, const A& primal, const A& tangent,
         std::source_location loc = std::source_location::current()) {
  return jvp([&f](const A& x) { return f(x); }, std::tuple<A>{primal}, std::tuple<A>{tangent}, loc);
}

namespace detail {

/// Leaves of a tuple of pytrees, in order.
template <class... A>
std::vector<Array> flatten_args(const std::tuple<A...>& args) {
  std::vector<Array> leaves;
  std::apply([&](const auto&... p) { (pytree<std::decay_t<decltype(p)>>::flatten(p, leaves), ...); }, args);
  return leaves;
}

/// A tuple with the structure of `like` rebuilt from leaves.
template <class... A>
std::tuple<A...> unflatten_args(const std::tuple<A...>& like, const std::vector<Array>& leaves) {
  const Array* next = leaves.data();
  return std::apply(
      [&](const auto&... p) { return std::tuple<A...>{pytree<std::decay_t<decltype(p)>>::unflatten(p, next)...}; },
      like);
}

/// f over flat leaves (the arguments rebuilt with args' structure); records the output
/// structure in out_like.
template <class R, class F, class... A>
FlatFn flat_fn(F& f, const std::tuple<A...>& args, std::optional<R>& out_like) {
  return [&f, &args, &out_like](const std::vector<Array>& xs) {
    R r = std::apply(f, unflatten_args(args, xs));
    out_like.emplace(r);
    return tree_flatten(r);
  };
}

}  // namespace detail

/// JAX's jax.vjp: returns (f(args...), pullback) where pullback(ct) -> gradients for every
/// argument (a single value for one argument, else a std::tuple). ct has f's output structure;
/// a mismatch is a TypeError reported at the pullback's call site.
template <class F, class... A>
auto vjp(F f, const A&... args_in) {
  using R = std::invoke_result_t<F&, const A&...>;
  std::tuple<A...> args(args_in...);
  std::optional<R> out_like;
  VjpResult vr = vjp_flat(detail::flat_fn<R>(f, args, out_like), detail::flatten_args(args));
  R out = tree_unflatten(*out_like, vr.primal_outs);
  R like = *out_like;
  auto pullback = [vr, like, args](const R& ct, std::source_location loc = std::source_location::current()) {
    tree_check_same(like, ct, loc);
    return detail::unwrap_single(detail::unflatten_args(args, vr.pullback(tree_flatten(ct), loc)));
  };
  return std::pair{std::move(out), std::move(pullback)};
}

/// JAX's jax.linearize: (f(args...), f_jvp) where f_jvp(tangents...) evaluates the linear map
/// (a staged jaxpr, reusable without re-running f).
template <class F, class... A>
auto linearize(F f, const A&... args_in) {
  using R = std::invoke_result_t<F&, const A&...>;
  std::tuple<A...> args(args_in...);
  std::optional<R> out_like;
  LinearizeResult lr = linearize_flat(detail::flat_fn<R>(f, args, out_like), detail::flatten_args(args));
  R out = tree_unflatten(*out_like, lr.primal_outs);
  R like = *out_like;
  ClosedJaxpr lin = lr.linear;
  auto f_jvp = [lin, like](const A&... tangents) {
    std::vector<Array> tl;
    (pytree<A>::flatten(tangents, tl), ...);
    return tree_unflatten(like, eval_jaxpr(lin, tl));
  };
  return std::pair{std::move(out), std::move(f_jvp)};
}

}  // namespace minijax
