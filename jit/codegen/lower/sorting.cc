// minijax program rules of the sorting primitives: sort and top_k, each one call of the runtime
// (mj_rt_sort, mj_rt_top_k in jit/runtime/sort.h) on the operands' and results' buffers.
#include <string>

#include "core/views/sorting.h"
#include "jit/codegen/lower/program.h"

namespace minijax::lower {

using kir::Value;

namespace {

// mj_rt_sort(num_operands, num_keys, dtypes, ins, outs, outer, n, inner): the operands, results
// and dtypes as arrays in stack slots of the program function.
void lower_sort(ProgramEmitter& pe, const Eqn& e) {
  kir::Builder& b = pe.b;
  const SortParams sp = sort_params(e);
  const ShapedArray& a = atom_aval(e.inputs.at(0));
  const Shape& s = a.shape;
  int64_t outer = 1, inner = 1;
  const int64_t n = s.at(size_t(sp.dimension));
  for (int64_t i = 0; i < sp.dimension; ++i) outer *= s[size_t(i)];
  for (size_t i = size_t(sp.dimension) + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t m = int64_t(e.inputs.size());
  pe.note(e, "runtime call",
          "mj_rt_sort of " + std::to_string(m) + " operand(s) " + a.str() + " along dimension " +
              std::to_string(sp.dimension) + ", " + std::to_string(sp.num_keys) + " key(s)");
  if (a.size() == 0) return;
  Value ins = b.function_stack_slot(kir::kPtr, m), outs = b.function_stack_slot(kir::kPtr, m);
  Value dts = b.function_stack_slot(kir::kI32, m);
  for (int64_t k = 0; k < m; ++k) {
    b.store(ins, b.i64(k), pe.addr(e.inputs[size_t(k)]));
    b.store(outs, b.i64(k), pe.addr(e.outputs[size_t(k)]));
    b.store(dts, b.i64(k), b.i32(int32_t(atom_aval(e.inputs[size_t(k)]).dtype)));
  }
  pe.call_runtime("mj_rt_sort", kir::kVoid,
                  {kir::kI32, kir::kI32, kir::kPtr, kir::kPtr, kir::kPtr, kir::kI64, kir::kI64, kir::kI64},
                  {b.i32(int32_t(m)), b.i32(int32_t(sp.num_keys)), dts, ins, outs, b.i64(outer), b.i64(n),
                   b.i64(inner)});
}

// mj_rt_top_k(dtype, in, values, indices, rows, n, k) over the rows of the last axis.
void lower_top_k(ProgramEmitter& pe, const Eqn& e) {
  const ShapedArray& a = atom_aval(e.inputs.at(0));
  const int64_t k = top_k_params(e).k;
  const int64_t n = a.shape.back();
  const int64_t rows = n ? a.size() / n : 0;
  pe.note(e, "runtime call", "mj_rt_top_k k=" + std::to_string(k) + " of " + a.str());
  if (rows == 0 || k == 0) return;
  kir::Builder& b = pe.b;
  pe.call_runtime("mj_rt_top_k", kir::kVoid,
                  {kir::kI32, kir::kPtr, kir::kPtr, kir::kPtr, kir::kI64, kir::kI64, kir::kI64},
                  {b.i32(int32_t(a.dtype)), pe.addr(e.inputs[0]), pe.addr(e.outputs.at(0)),
                   pe.addr(e.outputs.at(1)), b.i64(rows), b.i64(n), b.i64(k)});
}

const RegisterProgramRule reg_sort("sort", "runtime call", lower_sort);
const RegisterProgramRule reg_top_k("top_k", "runtime call", lower_top_k);

}  // namespace

}  // namespace minijax::lower
