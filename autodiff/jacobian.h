// minijax Jacobians: jacfwd, jacrev and hessian (JAX's jax.jacfwd / jax.jacrev / jax.hessian).
// Owns the flat engines (vmap of jvp over the standard basis, vmap of the vjp pullback).
#pragma once
#include <optional>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "autodiff/grad.h"
#include "core/pytree.h"
#include "core/staging.h"

namespace minijax {

/// The standard basis of the space of arrays of aval a: an array of shape [a.size(), a.shape...]
/// and dtype a.dtype whose slice i is one-hot at flat (row-major) index i. Concrete.
/// Throws TypeError for non-floating dtypes.
Array standard_basis(const ShapedArray& a, std::source_location loc = std::source_location::current());

/// Forward-mode Jacobians of the flat function f at x: one per output of f, of shape
/// out.shape + x.shape (JAX's jacfwd: vmap of jvp over the standard basis of x's tangent space).
/// Throws TypeError if x is not floating ("jacfwd requires real-valued inputs").
std::vector<Array> jacfwd_flat(const FlatFn& f, const Array& x,
                               std::source_location loc = std::source_location::current());

/// Reverse-mode Jacobians of f at x: one per output, of shape out.shape + x.shape (JAX's jacrev:
/// vmap of the vjp pullback over the standard basis of each output's cotangent space).
/// Throws TypeError if x or an output is not floating.
std::vector<Array> jacrev_flat(const FlatFn& f, const Array& x,
                               std::source_location loc = std::source_location::current());

namespace detail {

template <bool Fwd, int N, class F, class... A>
auto jacobian_one(F& f, std::source_location loc, const std::tuple<A...>& args) {
  static_assert(N < int(sizeof...(A)), "jacfwd/jacrev: argnums out of range");
  static_assert(std::is_same_v<std::decay_t<std::tuple_element_t<size_t(N), std::tuple<A...>>>, Array>,
                "jacfwd/jacrev: the differentiated argument must be an Array");
  using R = std::decay_t<std::invoke_result_t<F&, const A&...>>;
  static_assert(PyTree<R>, "jacfwd/jacrev: f must return an Array or a pytree of Arrays");
  std::optional<R> out_like;
  FlatFn g = [&](const std::vector<Array>& xs) {
    std::tuple<A...> a = args;
    std::get<N>(a) = xs.at(0);
    R r = std::apply(f, a);
    out_like.emplace(r);
    return tree_flatten(r);
  };
  const Array& x = std::get<N>(args);
  std::vector<Array> jacs = Fwd ? jacfwd_flat(g, x, loc) : jacrev_flat(g, x, loc);
  return tree_unflatten(*out_like, jacs, loc);
}

template <bool Fwd, int... N, class F>
auto jacobian(F f, std::source_location loc) {
  static_assert(sizeof...(N) >= 1, "jacfwd/jacrev: give at least one argnum");
  // Not `mutable`, so the result can be vmapped/called as const; f is copied per call (it may
  // itself be a mutable lambda such as grad's result).
  return [f, loc](const auto&... args) {
    auto tup = std::make_tuple(args...);
    F g = f;
    if constexpr (sizeof...(N) == 1) return jacobian_one<Fwd, N...>(g, loc, tup);
    else return std::make_tuple(jacobian_one<Fwd, N>(g, loc, tup)...);
  };
}

}  // namespace detail

/// JAX's jax.jacfwd: jacfwd(f, argnums<N>)(args...) is the Jacobian of f with respect to
/// argument N (an Array), with f's output structure and each leaf of shape out.shape + x.shape
/// (a std::tuple of those for several argnums). Computed by vmapping jvp over the standard basis
/// of the input, so it is efficient for "tall" Jacobians. Throws TypeError for integer inputs.
template <int... N, class F>
auto jacfwd(F f, ArgNums<N...>, std::source_location loc = std::source_location::current()) {
  return detail::jacobian<true, N...>(std::move(f), loc);
}
template <class F>
auto jacfwd(F f, std::source_location loc = std::source_location::current()) {
  return detail::jacobian<true, 0>(std::move(f), loc);
}

/// JAX's jax.jacrev: as jacfwd, computed by vmapping the vjp pullback over the standard basis of
/// each output (efficient for "wide" Jacobians). Throws TypeError for integer inputs or outputs.
template <int... N, class F>
auto jacrev(F f, ArgNums<N...>, std::source_location loc = std::source_location::current()) {
  return detail::jacobian<false, N...>(std::move(f), loc);
}
template <class F>
auto jacrev(F f, std::source_location loc = std::source_location::current()) {
  return detail::jacobian<false, 0>(std::move(f), loc);
}

/// JAX's jax.hessian = jacfwd(jacrev(f)): for a scalar f of an Array x of shape S, an array of
/// shape S + S (out.shape + S + S in general).
template <int N, class F>
auto hessian(F f, ArgNums<N>, std::source_location loc = std::source_location::current()) {
  return jacfwd(jacrev(std::move(f), argnums<N>, loc), argnums<N>, loc);
}
template <class F>
auto hessian(F f, std::source_location loc = std::source_location::current()) {
  return hessian(std::move(f), argnums<0>, loc);
}

}  // namespace minijax
