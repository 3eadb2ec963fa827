// minijax program rules of the linear-algebra primitives: cholesky, triangular_solve, lu, qr, eigh
// and svd, each one call of the runtime (jit/runtime/linalg.h) on the operands' and results'
// buffers and, for the factorisations, the workspace the buffer plan reserved.
#include <string>
#include <vector>

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

// The workspace arguments of a factorisation's runtime call: (work, slot_bytes, slots).
std::vector<kir::Value> workspace_args(ProgramEmitter& pe, const Eqn& e) {
  const Scratch* s = pe.plan.scratch_of(e);
  if (!s) return {pe.b.stack_slot(kir::kI64), pe.b.i64(0), pe.b.i64(1)};  // nothing to do needs one
  return {pe.scratch(e), pe.b.i64(s->slot_bytes), pe.b.i64(s->slots)};
}

struct MatrixDims {
  int64_t m, n, batch;
};
MatrixDims matrix_dims(const Eqn& e) {
  const ShapedArray& a = atom_aval(e.inputs.at(0));
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < a.shape.size(); ++i) batch *= a.shape[i];
  return {a.shape[a.shape.size() - 2], a.shape.back(), batch};
}

// Calls `fn` with (dtype, in, outputs..., batch, dims..., extra..., work, slot_bytes, slots).
void call_factorization(ProgramEmitter& pe, const Eqn& e, const char* fn, std::vector<kir::Value> dims) {
  kir::Builder& b = pe.b;
  const ShapedArray& a = atom_aval(e.inputs.at(0));
  std::vector<kir::Value> args{b.i32(int32_t(a.dtype)), pe.addr(e.inputs[0])};
  for (auto& o : e.outputs) args.push_back(pe.addr(o));
  args.insert(args.end(), dims.begin(), dims.end());
  for (auto& w : workspace_args(pe, e)) args.push_back(w);
  std::vector<kir::Type> types;
  for (auto& v : args) types.push_back(b.type(v));
  pe.call_runtime(fn, kir::kVoid, types, args);
}

// mj_rt_lu(dtype, in, lu, pivots, perm, batch, m, n, work...).
void lower_lu(ProgramEmitter& pe, const Eqn& e) {
  const MatrixDims d = matrix_dims(e);
  pe.note(e, "runtime call", "mj_rt_lu of " + atom_aval(e.inputs[0]).str());
  if (d.batch == 0) return;
  call_factorization(pe, e, "mj_rt_lu", {pe.b.i64(d.batch), pe.b.i64(d.m), pe.b.i64(d.n)});
}

// mj_rt_qr(dtype, in, q, r, batch, m, n, full_matrices, work...).
void lower_qr(ProgramEmitter& pe, const Eqn& e) {
  const MatrixDims d = matrix_dims(e);
  pe.note(e, "runtime call", "mj_rt_qr of " + atom_aval(e.inputs[0]).str());
  if (d.batch == 0) return;
  call_factorization(pe, e, "mj_rt_qr",
                     {pe.b.i64(d.batch), pe.b.i64(d.m), pe.b.i64(d.n), pe.b.i32(qr_params(e).full_matrices)});
}

// mj_rt_eigh(dtype, in, v, w, batch, n, lower, work...).
void lower_eigh(ProgramEmitter& pe, const Eqn& e) {
  const MatrixDims d = matrix_dims(e);
  pe.note(e, "runtime call", "mj_rt_eigh of " + atom_aval(e.inputs[0]).str());
  if (d.batch == 0) return;
  call_factorization(pe, e, "mj_rt_eigh", {pe.b.i64(d.batch), pe.b.i64(d.n), pe.b.i32(eigh_params(e).lower)});
}

// mj_rt_svd(dtype, in, s, u, vt, batch, m, n, flags, work...); u and vt null without compute_uv.
void lower_svd(ProgramEmitter& pe, const Eqn& e) {
  kir::Builder& b = pe.b;
  const MatrixDims d = matrix_dims(e);
  const SvdParams sp = svd_params(e);
  pe.note(e, "runtime call", "mj_rt_svd of " + atom_aval(e.inputs[0]).str());
  const int64_t batch = d.batch;
  if (batch == 0) return;
  const ShapedArray& a = atom_aval(e.inputs.at(0));
  std::vector<kir::Value> args{b.i32(int32_t(a.dtype)), pe.addr(e.inputs[0]), pe.addr(e.outputs.at(0))};
  // Without compute_uv the runtime never reads u and vt: s's address stands in.
  args.push_back(pe.addr(e.outputs.at(sp.compute_uv ? 1 : 0)));
  args.push_back(pe.addr(e.outputs.at(sp.compute_uv ? 2 : 0)));
  const int32_t flags = (sp.full_matrices ? MJ_RT_SVD_FULL_MATRICES : 0) |
                        (sp.compute_uv ? MJ_RT_SVD_COMPUTE_UV : 0);
  for (auto v : {b.i64(batch), b.i64(d.m), b.i64(d.n)}) args.push_back(v);
  args.push_back(b.i32(flags));
  for (auto& w : workspace_args(pe, e)) args.push_back(w);
  std::vector<kir::Type> types;
  for (auto& v : args) types.push_back(b.type(v));
  pe.call_runtime("mj_rt_svd", kir::kVoid, types, args);
}

const RegisterProgramRule reg_lu("lu", "runtime call", lower_lu);
const RegisterProgramRule reg_qr("qr", "runtime call", lower_qr);
const RegisterProgramRule reg_eigh("eigh", "runtime call", lower_eigh);
const RegisterProgramRule reg_svd("svd", "runtime call", lower_svd);

}  // namespace

}  // namespace minijax::lower
