// minijax program rules of the linear-algebra primitives: cholesky and triangular_solve, each one
// call of the runtime (mj_rt_cholesky, mj_rt_triangular_solve in jit/runtime/linalg.h) on the
// operands' and results' buffers.
#include <string>

#include "core/views/linalg.h"
#include "jit/codegen/lower/program.h"
#include "jit/runtime/linalg.h"

namespace minijax::lower {

namespace {

// mj_rt_cholesky(dtype, in, out, batch, n).
void lower_cholesky(ProgramEmitter& pe, const Eqn& e) {
  kir::Builder& b = pe.b;
  const ShapedArray& a = atom_aval(e.inputs.at(0));
  const int64_t n = a.shape.back();
  pe.note(e, "runtime call", "mj_rt_cholesky of " + a.str());
  if (a.size() == 0) return;
  pe.call_runtime("mj_rt_cholesky", kir::kVoid, {kir::kI32, kir::kPtr, kir::kPtr, kir::kI64, kir::kI64},
                  {b.i32(int32_t(a.dtype)), pe.addr(e.inputs[0]), pe.addr(e.outputs.at(0)),
                   b.i64(a.size() / (n * n)), b.i64(n)});
}

// mj_rt_triangular_solve(dtype, a, b, out, batch, rows, cols, flags).
void lower_triangular_solve(ProgramEmitter& pe, const Eqn& e) {
  kir::Builder& b = pe.b;
  const TriangularSolveParams tp = triangular_solve_params(e);
  const ShapedArray& bv = atom_aval(e.inputs.at(1));
  const int64_t rows = bv.shape[bv.shape.size() - 2], cols = bv.shape.back();
  pe.note(e, "runtime call",
          "mj_rt_triangular_solve of " + atom_aval(e.inputs[0]).str() + " and " + bv.str());
  if (bv.size() == 0) return;
  const int32_t flags = (tp.left_side ? MJ_RT_TRSM_LEFT_SIDE : 0) | (tp.lower ? MJ_RT_TRSM_LOWER : 0) |
                        (tp.transpose_a ? MJ_RT_TRSM_TRANSPOSE_A : 0) |
                        (tp.unit_diagonal ? MJ_RT_TRSM_UNIT_DIAGONAL : 0);
  pe.call_runtime("mj_rt_triangular_solve", kir::kVoid,
                  {kir::kI32, kir::kPtr, kir::kPtr, kir::kPtr, kir::kI64, kir::kI64, kir::kI64, kir::kI32},
                  {b.i32(int32_t(bv.dtype)), pe.addr(e.inputs[0]), pe.addr(e.inputs[1]),
                   pe.addr(e.outputs.at(0)), b.i64(bv.size() / (rows * cols)), b.i64(rows), b.i64(cols),
                   b.i32(flags)});
}

const RegisterProgramRule reg_cholesky("cholesky", "runtime call", lower_cholesky);
const RegisterProgramRule reg_triangular_solve("triangular_solve", "runtime call", lower_triangular_solve);

}  // namespace

}  // namespace minijax::lower
