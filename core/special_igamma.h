// minijax's regularised lower incomplete gamma function igamma(a, x) and its derivative with
// respect to a, igamma_grad_a (jax.lax.igamma, jax.lax.igamma_grad_a; issue 29).
#pragma once
#include <source_location>

#include "core/array.h"

namespace minijax {
namespace lax {

using SL = std::source_location;

/// The regularised lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a) (scipy's
/// gammainc), elementwise. a and x: one floating dtype (bf16, f32 or f64; TypeError naming igamma
/// and the dtype otherwise, e.g. for i32), shapes as the binary lax functions (equal, one of rank
/// 0, or dims equal or 1); the result has their dtype and shape. NaN where a <= 0, x < 0, either
/// is NaN, or a = x = inf; 0 at x = 0 and at a = inf; 1 at x = inf. Algorithm (XLA's math.cc
/// Igamma, Numerical Recipes 6.2): the power series of P for x < a + 1, Legendre's continued
/// fraction for Q = 1 - P otherwise, each under a fixed iteration bound
/// (jit/codegen/lower/transcendentals.h), times exp(a log x - x - lgamma(a + 1)); f32 and bf16
/// are computed in f64 and rounded once. JVPs are JAX's (jax/_src/lax/special.py): d/da =
/// igamma_grad_a(a, x), d/dx = exp(-x + (a - 1) log x - lgamma(a)).
/// Accuracy (tests/jit/test_special_accuracy_igamma.cc, mpmath references): relative 1e-12 (f64),
/// 1e-4 (f32) for a in (0, 100], x in [0, 200] where P >= 1e-290 (f64) / 1e-30 (f32), absolute
/// below.
Array igamma(const Array& a, const Array& x, SL loc = SL::current());

/// dP(a, x) / da, the derivative of igamma with respect to a, elementwise (jax.lax.igamma_grad_a).
/// Operands, dtypes, shapes and errors as igamma. NaN where a <= 0, x < 0 or either is NaN; 0 at
/// x = 0, x = inf and a = inf. Algorithm: the series and continued fraction of igamma with their
/// derivatives with respect to a carried alongside (forward mode, as XLA's IgammaGradA), and
/// d/da log(x^a e^-x / Gamma(a)) = log x - digamma(a). Not differentiable (JAX defines no JVP): a
/// nonzero float tangent reaching it throws NotDifferentiableError naming igamma_grad_a.
/// Accuracy: relative 1e-9 (f64), 1e-3 (f32) on igamma's domain.
Array igamma_grad_a(const Array& a, const Array& x, SL loc = SL::current());

}  // namespace lax

}  // namespace minijax
