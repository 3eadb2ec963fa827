// minijax custom derivatives: custom_jvp and custom_vjp (JAX's jax.custom_jvp / jax.custom_vjp).
// Owns the user-level templates and the flat calls that bind custom_jvp_call / custom_vjp_call.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "autodiff/jvp.h"
#include "core/params.h"
#include "core/pytree.h"
#include "core/staging.h"
#include "core/trace_cache.h"

namespace minijax {

// Design (JAX's, jax/_src/custom_derivatives.py): calling a custom function traces it into a
// jaxpr and binds one primitive whose params hold that jaxpr (`call_jaxpr`) and the user's rules
// as opaque ParamObjects. Values the function closes over are hoisted into leading operands
// (`num_consts`, printed only when nonzero, as JAX does).
//  - custom_jvp_call: impl evaluates call_jaxpr; under a JVP trace the user's JVP rule runs
//    (tangents instantiated: no symbolic zeros reach the user); under vmap the function and the
//    rule are vmapped and custom_jvp_call is bound again on the batched operands; make_jaxpr
//    stages `custom_jvp_call[name=.. call_jaxpr={..} jvp=.. symbolic_zeros=False]`.
//  - custom_vjp_call: its JVP rule runs `fwd` on the primals and emits the output tangents as a
//    `custom_lin` equation on (residuals, float args' tangents). custom_lin is linear: its transpose
//    calls `bwd(residuals, output cotangents)`; its evaluation, JVP and batching raise
//    "can't apply forward-mode autodiff (jvp) to a custom_vjp function." (JAX's behaviour).
// Limitation (JAX requires closure_convert for the same case in custom_vjp): the function and its
// rules may close over concrete values and over values staged by an enclosing make_jaxpr/jit, but
// not over values being differentiated by an enclosing grad/jvp; that raises a ValueError asking
// to pass the value as an explicit argument.

/// Flat JVP rule: primals and tangents (empty Array = symbolic zero) of the function's flat
/// arguments -> (primal outputs, tangent outputs).
using CustomJvpFlatRule = std::function<std::pair<std::vector<Array>, std::vector<Array>>(
    const std::vector<Array>& primals, const std::vector<Array>& tangents)>;
/// Flat forward pass of a custom_vjp: primals -> (outputs, residuals).
using CustomFwdFlat =
    std::function<std::pair<std::vector<Array>, std::vector<Array>>(const std::vector<Array>&)>;
/// Flat backward pass of a custom_vjp: (residuals, output cotangents, zeros instantiated) -> one
/// cotangent per flat argument (an empty Array is a zero cotangent).
using CustomBwdFlat = std::function<std::vector<Array>(const std::vector<Array>& residuals,
                                                       const std::vector<Array>& cts)>;

/// Binds custom_jvp_call for the flat function `fun` on `args` (JAX's custom_jvp.__call__ over
/// flattened arguments). `name`/`jvp_name` are what the jaxpr printer shows. Returns fun's flat
/// outputs. Throws what fun throws; the rule's errors surface when it is used (under jvp/grad):
/// TypeError if the rule's outputs do not have fun's output avals (primal) and their tangent avals
/// (tangent); ValueError for a closed-over value being differentiated.
std::vector<Array> custom_jvp_call(const FlatFn& fun, const CustomJvpFlatRule& jvp,
                                   const std::vector<Array>& args, const std::string& name,
                                   const std::string& jvp_name,
                                   std::source_location loc = std::source_location::current());

namespace detail {
/// Binds custom_vjp_call for the flat function `fun` on `args` with the flat fwd/bwd passes
/// (JAX's custom_vjp.__call__). Errors as custom_jvp_call; TypeError when fwd's outputs differ
/// from fun's or bwd returns cotangents of the wrong number/avals; forward mode (jvp, jacfwd,
/// linearize's evaluation) of the result raises NotDifferentiableError.
std::vector<Array> custom_vjp_call(const FlatFn& fun, const CustomFwdFlat& fwd,
                                   const CustomBwdFlat& bwd, const std::vector<Array>& args,
                                   const std::string& name, const std::string& fwd_name,
                                   const std::string& bwd_name,
                                   std::source_location loc = std::source_location::current());


template <class... A>
std::tuple<A...> unflatten_args(const std::tuple<A...>& like, const std::vector<Array>& leaves,
                                std::source_location loc) {
  return tree_unflatten(like, leaves, loc);
}

template <class T>
struct IsPair : std::false_type {};
template <class A, class B>
struct IsPair<std::pair<A, B>> : std::true_type {};

/// Calls a JVP rule in JAX's form rule(primals_tuple, tangents_tuple), or, when that does not
/// fit, spread over the arguments: rule(p0, ..., pn, t0, ..., tn).
template <class Rule, class... A>
auto call_jvp_rule(const Rule& rule, const std::tuple<A...>& p, const std::tuple<A...>& t) {
  if constexpr (std::is_invocable_v<const Rule&, const std::tuple<A...>&, const std::tuple<A...>&>) {
    return rule(p, t);
  } else {
    static_assert(std::is_invocable_v<const Rule&, const A&..., const A&...>,
                  "custom_jvp: the JVP rule must be callable as rule(primals_tuple, "
                  "tangents_tuple) or rule(primals..., tangents...)");
    return std::apply(
        [&](const auto&... ps) {
          return std::apply([&](const auto&... ts) { return rule(ps..., ts...); }, t);
        },
        p);
  }
}

}  // namespace detail

/// A function with a custom JVP rule; see custom_jvp().
template <class F, class Rule>
class CustomJvpFunction {
 public:
  CustomJvpFunction(F fun, Rule rule, std::string name, std::source_location loc)
      : fun_(std::move(fun)), rule_(std::move(rule)), name_(std::move(name)), loc_(loc) {}

  /// Calls the function (eagerly, staged, or transformed) on pytrees of Arrays.
  template <class... A>
  auto operator()(const A&... args) const {
    using R = std::decay_t<std::invoke_result_t<const F&, const A&...>>;
    static_assert(PyTree<R>, "custom_jvp: the function must return an Array or a pytree of Arrays");
    std::tuple<A...> args_tuple(args...);
    std::vector<Array> leaves = tree_flatten(args_tuple);
    const std::tuple<A...> like = detail::abstract_like(args_tuple);
    auto out_like = std::make_shared<std::optional<R>>();
    std::source_location loc = loc_;
    F fun = fun_;
    Rule rule = rule_;
    FlatFn flat_fun = [fun, like, out_like, loc](const std::vector<Array>& xs) {
      auto a = detail::unflatten_args(like, xs, loc);
      R r = std::apply(fun, a);
      out_like->emplace(detail::abstract_like(r));
      return tree_flatten(r);
    };
    CustomJvpFlatRule flat_rule = [rule, like, loc](const std::vector<Array>& ps,
                                                    const std::vector<Array>& ts) {
      std::vector<Array> ti(ts.size());
      for (size_t i = 0; i < ts.size(); ++i) ti[i] = instantiate_zero(ts[i], ps[i].aval());
      auto pa = detail::unflatten_args(like, ps, loc);
      auto ta = detail::unflatten_args(like, ti, loc);
      auto res = detail::call_jvp_rule(rule, pa, ta);
      static_assert(detail::IsPair<std::decay_t<decltype(res)>>::value,
                    "custom_jvp: the JVP rule must return std::pair{primal_out, tangent_out}");
      return std::pair{tree_flatten(res.first), tree_flatten(res.second)};
    };
    std::string jvp_name = name_ == "<lambda>" ? name_ : name_ + "_jvp";
    auto outs = custom_jvp_call(flat_fun, flat_rule, leaves, name_, jvp_name, loc);
    return tree_unflatten(**out_like, outs, loc);
  }

 private:
  F fun_;
  Rule rule_;
  std::string name_;
  std::source_location loc_;
};

/// JAX's jax.custom_jvp with its rule attached (`f.defjvp(rule)`).
/// fun: (pytrees of Arrays...) -> Array or pytree R.
/// jvp_rule: (const std::tuple<A...>& primals, const std::tuple<A...>& tangents) ->
///   std::pair{primal_out R, tangent_out R}, as JAX's rule(primals, tangents); for convenience
///   also rule(p0, ..., pn, t0, ..., tn). Tangents are materialized zeros where the caller has
///   symbolic zeros. The rule must be linear in the tangents for reverse mode (grad), as in JAX;
///   it is itself differentiated for higher-order derivatives.
/// name: printed in the jaxpr (`name=`, and `jvp=<name>_jvp`); JAX prints the Python function
/// name, "<lambda>" for anonymous ones.
/// Example (JAX docs' log1pexp):
///   auto log1pexp = mj::custom_jvp(
///       [](const Array& x) { return lax::log1p(lax::exp(x)); },
///       [](const auto& p, const auto& t) { auto [x] = p; auto [dx] = t; ... return std::pair{y, dy}; },
///       "log1pexp");
template <class F, class Rule>
auto custom_jvp(F fun, Rule jvp_rule, std::string name = "<lambda>",
                std::source_location loc = std::source_location::current()) {
  return CustomJvpFunction<F, Rule>(std::move(fun), std::move(jvp_rule), std::move(name), loc);
}

/// A function with a custom VJP; see custom_vjp().
template <class F, class Fwd, class Bwd>
class CustomVjpFunction {
 public:
  CustomVjpFunction(F fun, Fwd fwd, Bwd bwd, std::string name, std::source_location loc)
      : fun_(std::move(fun)), fwd_(std::move(fwd)), bwd_(std::move(bwd)), name_(std::move(name)),
        loc_(loc) {}

  template <class... A>
  auto operator()(const A&... args) const {
    using R = std::decay_t<std::invoke_result_t<const F&, const A&...>>;
    using FwdR = std::decay_t<std::invoke_result_t<const Fwd&, const A&...>>;
    static_assert(PyTree<R>, "custom_vjp: the function must return an Array or a pytree of Arrays");
    static_assert(detail::IsPair<FwdR>::value,
                  "custom_vjp: fwd must return std::pair{output, residuals}");
    using Res = std::decay_t<typename FwdR::second_type>;
    static_assert(std::is_same_v<std::decay_t<typename FwdR::first_type>, R>,
                  "custom_vjp: fwd's output (pair.first) must have the function's return type");
    static_assert(PyTree<Res>, "custom_vjp: residuals must be an Array or a pytree of Arrays");
    std::tuple<A...> args_tuple(args...);
    std::vector<Array> leaves = tree_flatten(args_tuple);
    const std::tuple<A...> like = detail::abstract_like(args_tuple);
    auto out_like = std::make_shared<std::optional<R>>();
    auto res_like = std::make_shared<std::optional<Res>>();
    std::source_location loc = loc_;
    F fun = fun_;
    Fwd fwd = fwd_;
    Bwd bwd = bwd_;
    FlatFn flat_fun = [fun, like, out_like, loc](const std::vector<Array>& xs) {
      auto a = detail::unflatten_args(like, xs, loc);
      R r = std::apply(fun, a);
      out_like->emplace(detail::abstract_like(r));
      return tree_flatten(r);
    };
    CustomFwdFlat flat_fwd = [fwd, like, res_like, loc](const std::vector<Array>& xs) {
      auto a = detail::unflatten_args(like, xs, loc);
      FwdR r = std::apply(fwd, a);
      res_like->emplace(detail::abstract_like(r.second));
      return std::pair{tree_flatten(r.first), tree_flatten(r.second)};
    };
    CustomBwdFlat flat_bwd = [bwd, res_like, out_like, loc](const std::vector<Array>& res,
                                                            const std::vector<Array>& cts) {
      Res r = tree_unflatten(**res_like, res, loc);
      R ct = tree_unflatten(**out_like, cts, loc);
      auto g = bwd(r, ct);
      static_assert(PyTree<std::decay_t<decltype(g)>>,
                    "custom_vjp: bwd must return the cotangents (an Array, or a std::tuple with one "
                    "entry per argument)");
      return tree_flatten(g);
    };
    std::string fwd_name = name_ == "<lambda>" ? name_ : name_ + "_fwd";
    std::string bwd_name = name_ == "<lambda>" ? name_ : name_ + "_bwd";
    auto outs = detail::custom_vjp_call(flat_fun, flat_fwd, flat_bwd, leaves, name_, fwd_name, bwd_name, loc);
    return tree_unflatten(**out_like, outs, loc);
  }

 private:
  F fun_;
  Fwd fwd_;
  Bwd bwd_;
  std::string name_;
  std::source_location loc_;
};

/// JAX's jax.custom_vjp with `f.defvjp(fwd, bwd)`.
/// fun: (pytrees A...) -> R.  fwd: (A...) -> std::pair{R, Res} (Res: any pytree of Arrays, the
/// residuals).  bwd: (const Res&, const R& ct) -> the cotangents of the arguments: an Array for
/// a one-argument function, else a std::tuple (or any pytree whose leaves are the arguments'
/// leaves in order), with the arguments' shapes and dtypes. Output cotangents reaching bwd are
/// materialized (zeros where symbolic).
/// grad/vjp use fwd and bwd; jvp/jacfwd raise NotDifferentiableError ("can't apply forward-mode
/// autodiff (jvp) to a custom_vjp function."), as JAX does.
template <class F, class Fwd, class Bwd>
auto custom_vjp(F fun, Fwd fwd, Bwd bwd, std::string name = "<lambda>",
                std::source_location loc = std::source_location::current()) {
  return CustomVjpFunction<F, Fwd, Bwd>(std::move(fun), std::move(fwd), std::move(bwd),
                                        std::move(name), loc);
}

}  // namespace minijax
