// minijax gradient checking: check_jvp, check_vjp and check_grads (JAX's jax.test_util).
// Owns GradCheckError, JAX's default gradient tolerances per dtype and the finite differences.
#pragma once
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <vector>

#include "core/errors.h"
#include "core/pytree.h"
#include "core/staging.h"

namespace minijax {

/// A gradient check failed: what() names the check ("JVP of VJP tangent", ...), the derivative
/// order, the max absolute and relative errors, the tolerances and the worst element.
class GradCheckError : public Error {
  using Error::Error;
};

/// Options of the gradient checks; unset values take JAX's defaults.
struct GradCheckOptions {
  /// Absolute/relative tolerance for every dtype. Default: JAX's default_gradient_tolerance
  /// (bf16 1e-1, f32 2e-3, f64 1e-5; integers 0, i.e. numpy's rtol 1e-7). As in JAX, the
  /// tolerance used for a compared array is multiplied by its number of elements.
  std::optional<double> atol, rtol;
  /// Finite-difference step (JAX's EPS = 1e-4 for every dtype).
  std::optional<double> eps;
};

/// JAX's default_gradient_tolerance for dtype d (0 for non-floating dtypes).
double default_gradient_tolerance(DType d);

/// JAX's check_jvp: the JVP of f at args along one random direction (normal, fixed seed 0)
/// against central finite differences (f(x + eps v) - f(x - eps v)) / (2 eps), and the JVP's
/// primal output against f(args). `what` prefixes the message ("JVP of VJP").
/// Throws GradCheckError; TypeError for non-floating args.
void check_jvp(const FlatFn& f, const std::vector<Array>& args, const GradCheckOptions& opts = {},
               const std::string& what = "JVP", int order = 1,
               std::source_location loc = std::source_location::current());

/// JAX's check_vjp: the dot-product test <u, vjp(w)> == <jvp_fd(u), w> with random u (input
/// space) and w (output space), the JVP side by finite differences; and the vjp's primal output
/// against f(args). Throws GradCheckError; TypeError for non-floating args.
void check_vjp(const FlatFn& f, const std::vector<Array>& args, const GradCheckOptions& opts = {},
               const std::string& what = "VJP", int order = 1,
               std::source_location loc = std::source_location::current());

/// JAX's check_grads modes, and its default: forward ("fwd", JVPs) and reverse ("rev", VJPs).
inline const std::vector<std::string> kCheckGradsModes{"fwd", "rev"};  // modes, not the rev primitive

/// JAX's check_grads over flat arguments: for each mode in `modes` ("fwd", "rev"), checks the
/// first derivative, then recursively (order > 1) the derivatives of the derivative functions:
/// fwd: (x, v) -> jvp(f, x, v) (primal and tangent outputs); rev: x -> vjp(f, x)(f(x)).
/// Throws GradCheckError naming the chain ("JVP of VJP"), ValueError for an unknown mode or
/// order < 1, TypeError for non-floating args.
void check_grads_flat(const FlatFn& f, const std::vector<Array>& args, int order,
                      const std::vector<std::string>& modes = kCheckGradsModes,
                      const GradCheckOptions& opts = {},
                      std::source_location loc = std::source_location::current());

/// check_grads(f, std::tuple{x, y}, order, modes, opts): JAX's jax.test_util.check_grads for f
/// taking pytrees of floating Arrays and returning a pytree of Arrays. See check_grads_flat.
template <class F, class... A>
void check_grads(F f, const std::tuple<A...>& args, int order,
                 const std::vector<std::string>& modes = kCheckGradsModes,
                 const GradCheckOptions& opts = {},
                 std::source_location loc = std::source_location::current()) {
  std::vector<Array> leaves = tree_flatten(args);
  FlatFn fn = [f, args, loc](const std::vector<Array>& xs) {
    std::tuple<A...> a = tree_unflatten(args, xs, loc);
    return tree_flatten(std::apply(f, a));
  };
  check_grads_flat(fn, leaves, order, modes, opts, loc);
}

/// check_grads of a one-argument function.
template <class F>
void check_grads(F f, const Array& x, int order,
                 const std::vector<std::string>& modes = kCheckGradsModes,
                 const GradCheckOptions& opts = {},
                 std::source_location loc = std::source_location::current()) {
  check_grads(std::move(f), std::tuple<Array>{x}, order, modes, opts, loc);
}

}  // namespace minijax
