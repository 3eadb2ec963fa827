// minijax linear algebra: a batch of matrices' rows in a permuted order (lu's permutation applied),
// shared by lu's JVP rule (autodiff/rules/linalg.cc) and the LU solves of core/numpy_linalg.cc.
#pragma once
#include <source_location>

#include "core/array.h"

namespace minijax::linalg::detail {

/// The rows of x ([..., m, k], any dtype) in the order `perm` ([..., m] i32, x's batch dims, each
/// index in [0, m)): x[..., perm, :], one gather whose leading dims are batching dims (JAX's
/// x[iotas[:-1] + (permutation, slice(None))]); its derivative is gather's (scatter_add in
/// reverse). An empty x is returned as it is. Source: jax/_src/lax/linalg.py _lu_solve_core.
Array take_rows(const Array& x, const Array& perm,
                std::source_location loc = std::source_location::current());

}  // namespace minijax::linalg::detail
