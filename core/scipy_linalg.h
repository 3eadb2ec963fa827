// minijax jax.scipy.linalg: triangular solves, Cholesky and LU factor-and-solve with scipy's names,
// arguments and defaults, built on the lax.linalg primitives (core/linalg.h).
#pragma once
#include <string>
#include <utility>

#include "core/array.h"

namespace minijax::scipy::linalg {

using SL = std::source_location;

/// scipy's `trans` argument: 0, 1, 2 or "N", "T", "C" (op(a) = a, a^T, a^H; on real operands "C"
/// is "T"). Any other value is a ValueError naming it when the function reads it.
struct Trans {
  int code = 0;
  std::string name;  ///< the string spelling, if one was given
  Trans(int c) : code(c) {}                          // NOLINT(google-explicit-constructor)
  Trans(const char* s) : code(-1), name(s) {}        // NOLINT(google-explicit-constructor)
  Trans(std::string s) : code(-1), name(std::move(s)) {}  // NOLINT(google-explicit-constructor)
};

/// jax.scipy.linalg.solve_triangular: x with op(a) x = b, a of shape [..., m, m] read in its
/// `lower` (else upper) triangle, its diagonal taken as ones if `unit_diagonal`; b of shape
/// [..., m, k] or [..., m] (a's batch dims). Integer operands are promoted to f32 first, mixed
/// float dtypes to the wider (JAX's promote_dtypes_inexact). Staged as one `triangular_solve`
/// (left_side=True). Errors: a `trans` other than 0/1/2 or N/T/C (ValueError naming it), shapes
/// that do not fit (ShapeError naming both shapes and the side), other dtypes (TypeError).
/// Source: jax/_src/scipy/linalg.py solve_triangular.
Array solve_triangular(const Array& a, const Array& b, Trans trans = 0, bool lower = false,
                       bool unit_diagonal = false, SL loc = SL::current());

/// jax.scipy.linalg.cho_factor: the Cholesky factor of `a` ([..., n, n], symmetric positive
/// definite) and the `lower` flag, as (c, lower): c is lower triangular with c c^T = a if
/// `lower`, else upper triangular with c^T c = a (scipy's default); only the triangle named by
/// `lower` is read (JAX's symmetrize_input=False). A matrix that is not positive definite gives
/// NaN for that batch element (core/linalg.h). Source: jax/_src/scipy/linalg.py cho_factor.
std::pair<Array, bool> cho_factor(const Array& a, bool lower = false, SL loc = SL::current());

/// jax.scipy.linalg.cho_solve: x with a x = b from cho_factor's (c, lower): two triangular solves
/// (c then c^T, or c^T then c). b is [..., n, k] or [..., n]. Errors: shapes other than
/// c [..., n, n] with b [..., n, k] or [..., n] (ShapeError naming both). Source:
/// jax/_src/scipy/linalg.py cho_solve.
Array cho_solve(const std::pair<Array, bool>& c_and_lower, const Array& b, SL loc = SL::current());

/// jax.scipy.linalg.lu_factor: the LU factorization with partial pivoting of `a` ([..., m, n];
/// integers promoted to f32, then f32 or f64) as (lu, piv): lu of a's shape holds L below the
/// diagonal (its unit diagonal implicit) and U on and above it; piv (i32, [..., min(m, n)]) says
/// that row i was swapped with row piv[i] (0-based, in order), as LAPACK's ?getrf_. A singular
/// matrix keeps its factors (a zero on U's diagonal). One `lu`; derivative lu's (JAX's
/// _lu_jvp_rule). Errors: rank < 2 (ShapeError naming the shape), other dtypes (TypeError).
/// Source: jax/_src/scipy/linalg.py lu_factor.
std::pair<Array, Array> lu_factor(const Array& a, SL loc = SL::current());

/// jax.scipy.linalg.lu_solve: x with op(a) x = b from lu_factor's (lu, piv) of a square a
/// ([..., m, m]); op(a) is a (trans 0), a^T (1) or a^H (2, a^T on real operands). b is [..., m]
/// when its rank is lu's minus one (one right-hand side per matrix), else [..., m, k]; the batch
/// dims of lu, piv and b broadcast. The pivots become a permutation (a fori_loop of swaps, JAX's
/// _generic_lu_pivots_to_permutation), then two `triangular_solve`s and a gather (JAX's
/// lax.linalg.lu_solve); the derivative is the composition's. A singular factor gives inf or NaN.
/// Errors: a non-square lu or b whose m does not fit (ShapeError naming both shapes and the
/// side), batch dims that do not broadcast (ShapeError), trans other than 0, 1, 2 (ValueError
/// naming it). Source: jax/_src/scipy/linalg.py lu_solve, jax/_src/lax/linalg.py _lu_solve.
Array lu_solve(const std::pair<Array, Array>& lu_and_piv, const Array& b, int trans = 0,
               SL loc = SL::current());

}  // namespace minijax::scipy::linalg
