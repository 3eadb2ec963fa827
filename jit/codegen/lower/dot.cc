// minijax dot_general lowering: one call of the GEMM library (runtime mj_rt_gemm) with transpose
// flags, leading dimensions and batch strides read off the operands' row-major layouts.
#include "core/errors.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/views/array_ops.h"
#include "jit/passes/dot_layout.h"
#include "jit/codegen/lower/program.h"

namespace minijax::lower {

namespace {

// The GEMM call of one dot_general. Operands whose dims do not form single-stride groups were
// packed by pack_dot_operands; reaching here with one is a compiler bug (ValueError).
void lower_dot_general(ProgramEmitter& pe, const Eqn& e) {
  kir::Builder& b = pe.b;
  auto dn = dot_general_params(e).dimension_numbers;
  const Shape& ls = atom_aval(e.inputs[0]).shape;
  const Shape& rs = atom_aval(e.inputs[1]).shape;
  auto g = gemm_layout(ls, rs, dn);
  if (!g)
    throw ValueError("dot_general operands " + shape_str(ls) + " x " + shape_str(rs) +
                     " reached the GEMM call unpacked (pack_dot_operands should have packed them)");
  kir::Value out = pe.addr(e.outputs[0]);
  const int64_t out_bytes = e.outputs[0].aval().nbytes();
  if (g->batch * g->m * g->n == 0) {
    pe.note(e, "library call", "empty product");
    return;
  }
  if (g->k == 0) {
    b.memset(out, b.const_int(kir::kI8, 0), b.i64(out_bytes));
    pe.note(e, "library call", "k = 0: zeros");
    return;
  }
  const DType dt = e.outputs[0].aval().dtype;
  pe.call_runtime("mj_rt_gemm", kir::kVoid,
                  {kir::kI32, kir::kI32, kir::kI32, kir::kI64, kir::kI64, kir::kI64, kir::kPtr, kir::kI64, kir::kI64,
                   kir::kPtr, kir::kI64, kir::kI64, kir::kPtr, kir::kI64, kir::kI64, kir::kI64},
                  {b.i32(int32_t(dt)), b.i32(g->trans_a), b.i32(g->trans_b), b.i64(g->m), b.i64(g->n), b.i64(g->k),
                   pe.addr(e.inputs[0]), b.i64(g->lda), b.i64(g->stride_a), pe.addr(e.inputs[1]), b.i64(g->ldb),
                   b.i64(g->stride_b), out, b.i64(g->n), b.i64(g->m * g->n), b.i64(g->batch)});
  pe.note(e, "library call",
          std::string("gemm ") + (g->trans_a ? "T" : "N") + (g->trans_b ? "T" : "N") + " batch " +
              std::to_string(g->batch) + " m " + std::to_string(g->m) + " n " + std::to_string(g->n) + " k " +
              std::to_string(g->k) + " lda " + std::to_string(g->lda) + " ldb " + std::to_string(g->ldb) +
              " (operands read in place)");
}

const RegisterProgramRule reg_dot("dot_general", "library call", lower_dot_general);

}  // namespace

}  // namespace minijax::lower
