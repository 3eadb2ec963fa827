// minijax loop-nest lowering of the windowed primitives: conv_general_dilated, reduce_window_sum/
// max/min, the generic reduce_window, select_and_scatter_add and select_and_gather_add as kernels.
#pragma once
#include <string>

#include "core/jaxpr.h"
#include "jit/codegen/lower/program.h"

namespace minijax::lower {

// Each emit_*_loop_nest notes its equation as strategy "loop nest", with one line saying what it
// computes (shapes, window, kernel name, whether parallel) and, when `reason` is not empty, why
// it is a loop nest (e.g. the oneDNN-aware rule's "f64 operands"), in parentheses after it.

/// conv_general_dilated (core/views/windowed.h ConvParams) as a loop nest in a kernel function run
/// over the output's outer dimensions (all but its innermost memory dimension) in parallel through
/// mj_rt_parallel_for; the innermost output dimension is vectorized (output feature, batch, or the
/// innermost spatial dimension where its window lies inside the input: border positions run scalar
/// with their taps clipped by bounds arithmetic). Any dimension numbers, strides, padding (negative
/// crops), lhs_dilation (holes skipped), rhs_dilation, feature_group_count and batch_group_count
/// (group g of the output features reads input feature group g, or input batch group g).
/// Products are accumulated in f32 for bf16 and f32 operands, in f64 when the operands or
/// preferred_element_type are f64, wrapping in i32 for i32/u32; each output is rounded once to its
/// dtype. Four output features (or, when the features are vectorized, four images) are computed
/// together in registers, sharing the loads of the operand they have in common. Every output
/// element is computed by one thread in one fixed order (the reduction dimensions in the input's
/// memory order), so results do not depend on the thread count; they differ from eager's GEMM in
/// the order of the sums only. Taps on padding and on lhs-dilation holes are skipped rather than
/// multiplied by zero: a kernel value of inf or NaN that meets only padding does not make an
/// output NaN (eager's im2col multiplies it by 0; oneDNN skips padding too). Throws TypeError for
/// a dtype compiled code has no representation of.
void emit_conv_loop_nest(ProgramEmitter& pe, const Eqn& e, const std::string& reason = "");

/// reduce_window_sum / reduce_window_max / reduce_window_min (core/views/windowed.h
/// ReduceWindowMonoidParams) and the generic reduce_window (ReduceWindowParams; operands:
/// operands..., init_values...) as a loop nest, XLA's ReduceWindow as eager computes it
/// (core/primitives/windowed_reductions.cc, reduce_window.cc): the monoids start from their
/// identity and combine the window's elements in window order (row-major over the window
/// dimensions), padding and base-dilation holes skipped by bounds arithmetic; sums accumulate in
/// f32 for bf16 (rounded once) and wrap for integers; max/min keep the first NaN, as eager. The
/// generic one starts from the init values and applies its body to every window position in
/// window order, padding and holes holding the init values; the body's equations (and those of
/// the calls in it, such as the fusions the compiler made of it) are emitted on scalars through
/// the elemental rules (RegisterElemental), one output element at a time. The monoids vectorize
/// the innermost output dimension (its border positions, whose windows reach padding, run
/// scalar). Parallel over the outer output dimensions. Throws ValueError naming the primitive
/// when a body equation has no elemental lowering.
void emit_reduce_window_loop_nest(ProgramEmitter& pe, const Eqn& e, const std::string& reason = "");

/// select_and_scatter_add(source, operand) (SelectAndWindowParams) as a loop nest: the result
/// (operand's shape) is zeroed, then for each window in row-major order of source, source's
/// element is added at the window's selected operand element, as eager's select_in_window picks
/// it: the first element of the window (padding and holes are never selected), replaced by a
/// later one when the selected one is not NaN and the later one is NaN or beats it (> for
/// select_prim "ge", < for "le"): ties keep the first, as XLA's ge/le selector. A window of
/// padding only adds nothing. Parallel over the leading dimensions whose window is trivial
/// (size 1, stride 1, no padding or dilation), whose windows touch disjoint parts of the result,
/// and vectorized along a trivial innermost dimension: each element receives its additions in
/// source's row-major order whatever the thread count.
void emit_select_and_scatter_add_loop_nest(ProgramEmitter& pe, const Eqn& e, const std::string& reason = "");

/// select_and_gather_add(tangents, operand) (SelectAndWindowParams) as a loop nest: each output
/// element is the tangent at the operand element the window selects (as select_and_scatter_add
/// selects it), 0 for a window of padding only. Vectorized and parallel as reduce_window_max.
void emit_select_and_gather_add_loop_nest(ProgramEmitter& pe, const Eqn& e, const std::string& reason = "");

}  // namespace minijax::lower
