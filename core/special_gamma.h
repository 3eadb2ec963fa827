// minijax lax's gamma-family functions lgamma, digamma and polygamma (JAX v0.7.0's lgamma_p,
// digamma_p, polygamma_p); their primitives live in core/primitives/elementwise_gamma.cc.
#pragma once
#include <cstdint>
#include <source_location>

#include "core/array.h"

namespace minijax::lax {

/// log|Γ(x)| elementwise. x: bf16, f32 or f64 (TypeError naming lgamma and the dtype otherwise);
/// the result has x's shape and dtype. +inf at 0, the negative integers and ±inf; NaN for NaN.
/// JVP digamma(x) t (jax/_src/lax/special.py lgamma_p). Eager: the C library's lgamma_r in
/// long double, rounded once; compiled: minijax's own vectorized code (a Chebyshev fit of
/// lgamma(1 + t) / (t (t - 1)) on [0, 1], recurrences to [1, 3] below 10, Stirling's series
/// from 10, the reflection formula below 0; jit/codegen/lower/transcendentals.h states the bounds).
Array lgamma(const Array& x, std::source_location loc = std::source_location::current());

/// ψ(x) = d/dx log Γ(x) elementwise. x: bf16, f32 or f64 (TypeError otherwise); result of x's
/// shape and dtype. NaN at 0 (either sign), the negative integers, -inf and NaN (JAX's values:
/// XLA's chlo.digamma decomposition); +inf at +inf. JVP polygamma(1, x) t. Eager: recurrence to
/// x >= 10 and the asymptotic series in long double (reflection ψ(1 - x) - π / tan(πx) below 0);
/// compiled: a fit of ψ(1 + t) / (t - t0) around the zero t0 = 0.4616..., recurrences, the
/// asymptotic series and the reflection (jit/codegen/lower/transcendentals.h).
Array digamma(const Array& x, std::source_location loc = std::source_location::current());

/// ψ^(m)(x), the m-th derivative of digamma, elementwise (JAX's polygamma_p: m and x of one
/// floating dtype, bf16, f32 or f64, TypeError naming both dtypes otherwise; shapes as lax's
/// binary functions). m = 0 gives digamma(x); m >= 1: (-1)^(m+1) m! ζ(m + 1, x) with the Hurwitz
/// zeta as XLA's chlo.zeta computes it: the ten terms (x + k)^-(m+1), k = 0..9, then the
/// Euler–Maclaurin tail at a = x + 10 with the Bernoulli terms B_2 .. B_24 (Cephes' zeta.c
/// arrangement). At x = 0 and the negative integers: +inf for odd m, NaN for even m (JAX v0.7.0);
/// at other x < 0 the same formula (the function's value for -10 < x < 0, tested against mpmath).
/// A concrete m that is negative or not an integer throws ValueError naming polygamma and m; a
/// traced one gives NaN there (as JAX). JVP: polygamma(m + 1, x) t for x; a nonzero tangent of m
/// throws NotDifferentiableError naming polygamma (JAX raises: "polygamma gradient with respect
/// to m is not supported").
Array polygamma(const Array& m, const Array& x, std::source_location loc = std::source_location::current());

/// polygamma with an integer order m (a constant of x's dtype): ValueError naming m for m < 0.
Array polygamma(int64_t m, const Array& x, std::source_location loc = std::source_location::current());

}  // namespace minijax::lax
