// minijax typed views of the linear-algebra primitives' params: triangular_solve, qr, eigh, svd
// (typed params; see view.h and core/views/array_ops.h for the form every view has). cholesky and
// lu have none.
#pragma once

#include "core/views/view.h"

namespace minijax {

/// triangular_solve: which side a is on, which triangle is read, whether a is transposed (and
/// conjugated: always False for real operands) and whether its diagonal is taken as ones.
struct TriangularSolveParams {
  bool left_side = false;
  bool lower = false;
  bool transpose_a = false;
  bool conjugate_a = false;
  bool unit_diagonal = false;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static TriangularSolveParams from(const Params& p);
  Params to_params() const;
};
TriangularSolveParams triangular_solve_params(const Eqn& e);

/// qr: full or reduced factors; `pivoting` is JAX's column pivoting, always false (the wrapper
/// refuses true).
struct QrParams {
  bool pivoting = false;
  bool full_matrices = true;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static QrParams from(const Params& p);
  Params to_params() const;
};
QrParams qr_params(const Eqn& e);

/// eigh: which triangle is read (`lower`) and whether the eigenvalues are sorted ascending.
struct EighParams {
  bool lower = true;
  bool sort_eigenvalues = true;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static EighParams from(const Params& p);
  Params to_params() const;
};
EighParams eigh_params(const Eqn& e);

/// svd: full or reduced singular vectors, and whether they are computed at all (outputs: s, then
/// u and vh when `compute_uv`).
struct SvdParams {
  bool full_matrices = true;
  bool compute_uv = true;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static SvdParams from(const Params& p);
  Params to_params() const;
};
SvdParams svd_params(const Eqn& e);

}  // namespace minijax
