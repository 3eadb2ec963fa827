// minijax typed views of the linear-algebra primitives' params: triangular_solve (typed params;
// see view.h and core/views/array_ops.h for the form every view has). cholesky has none.
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

}  // namespace minijax
