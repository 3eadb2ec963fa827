// minijax loop nests of the windowed primitives: what the conv and window kernels share (the kernel
// function and its parallel call, window geometry and tap bounds). Private to jit/codegen/lower.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "jit/codegen/lower/lowering.h"
#include "jit/codegen/lower/program.h"

namespace minijax::lower::window {

/// floor(a / b) and ceil(a / b) for b > 0, any sign of a.
int64_t floor_div(int64_t a, int64_t b);
int64_t ceil_div(int64_t a, int64_t b);

/// A jaxpr without equations, for FusionEmitters used only for load/store/constants.
const Jaxpr& no_body();

/// Emits the body of a kernel: the code computing outer indices [begin, end) (i64 values) with
/// `ptrs` the buffer addresses, in the order given to emit_loop_kernel.
using KernelBody = std::function<void(kir::Builder& b, const std::vector<kir::Value>& ptrs, kir::Value begin,
                                      kir::Value end)>;

/// How a kernel is called: over outer indices [0, outer), each costing about `work_per_outer`
/// inner steps (multiply-adds, window taps).
struct KernelCall {
  std::string stem;
  int64_t outer = 1;
  int64_t work_per_outer = 1;
};

/// Emits kernel function `stem` (fresh name) `void(ptr bufs, i64 begin, i64 end)` into pe.module
/// with `body`, and its call in the entry function with the addresses `addrs` (entry values):
/// through mj_rt_parallel_for in chunks of about 2^14 steps when the whole is at least 2^16 steps
/// and outer > 1, otherwise one call on the calling thread. The call is bracketed by
/// mj_rt_kernel_begin/end with a kernel site of its own (profiler events name the equation).
/// Returns "<kernel name> over <outer> outer indices[ parallel]" for the equation's note.
std::string emit_loop_kernel(ProgramEmitter& pe, const Eqn& e, const KernelCall& k, const std::vector<kir::Value>& addrs,
                             const KernelBody& body);

/// One dimension of a window over an operand: operand size X, output size Y, window size K,
/// stride s, low padding lo, base (lhs) dilation bd, window (rhs) dilation wd. Output position y
/// and tap k read position q = y*s + k*wd - lo of the dilated operand (size dilated()), which is
/// operand element q / bd when 0 <= q < dilated() and q % bd == 0 (otherwise padding or a hole).
struct WinDim {
  int64_t X = 1, Y = 1, K = 1, s = 1, lo = 0, bd = 1, wd = 1;
  int64_t dilated() const { return X == 0 ? 0 : (X - 1) * bd + 1; }
  /// The output positions [first, second) all of whose K taps read operand elements (bd == 1: no
  /// holes); empty (first == second) when none or bd > 1.
  std::pair<int64_t, int64_t> interior() const;
  /// Every tap of every output position reads an operand element: no bounds to check.
  bool full() const;
  /// The window is the identity: size 1, stride 1, no padding, no dilation (then Y == X).
  bool trivial(int64_t hi) const { return K == 1 && s == 1 && lo == 0 && hi == 0 && bd == 1 && wd == 1; }
};

/// The taps [first, second) of output position y (an i64 value) whose positions q fall in
/// [0, dilated()) (still to be checked for q % bd == 0 when bd > 1): bounds arithmetic, no
/// per-tap branch. `base` = y*s - lo (so q = base + k*wd).
std::pair<kir::Value, kir::Value> tap_range(kir::Builder& b, const WinDim& w, kir::Value base);

/// Decodes outer index o into the indices of `extents` (row-major; empty: nothing).
std::vector<kir::Value> decode_index(kir::Builder& b, kir::Value o, const std::vector<int64_t>& extents);

/// for y in [lo, hi): point(y, lanes) with `lanes` lanes while a whole vector fits in [lo, hi),
/// then the rest: with `overlap`, one more vector ending at hi (it recomputes some positions, the
/// same way: only for points that store their results rather than accumulate into them), else
/// single positions (lanes == 1: all single). lo, hi are compile-time.
void vector_steps(kir::Builder& b, int64_t lo, int64_t hi, int lanes, bool overlap,
                  const std::function<void(kir::Value, int)>& point);

/// The accumulator dtype of a product or sum of `in` values stored as `out`: f64 if either is
/// f64, else f32 for floats; i32 for integers (wrapping), bool for bool.
DType accumulator_dtype(DType in, DType out);
/// v (compute representation of v.dtype) converted to the compute representation of float or
/// integer dtype `to` of the same kind (f32 <-> f64 widening/narrowing; bf16 rides in f32).
EVal convert_compute(kir::Builder& b, EVal v, DType to);

/// Loads element(s) of `dt` at `off` (lanes wide), widened to `lanes` (a scalar load is splat); a
/// stride of 2 to 4 elements is one contiguous load of the span and a shuffle, not a gather.
EVal load_lanes(FusionEmitter& fe, DType dt, kir::Value ptr, const DimIdx& off, int lanes);

/// A stack slot per value of `init`, holding it: the accumulators of one output point.
std::vector<kir::Value> acc_slots(kir::Builder& b, const std::vector<EVal>& init);
std::vector<EVal> load_acc(kir::Builder& b, const std::vector<kir::Value>& slots, const std::vector<EVal>& like);
void store_acc(kir::Builder& b, const std::vector<kir::Value>& slots, const std::vector<EVal>& v);

/// The window params as "window (2, 2) strides (2, 2) padding ((0, 0), (1, 1))" (dilations when
/// not 1); `conv`: "kernel (3, 3) ...", "lhs dilation", "rhs dilation".
std::string window_text(const std::vector<WinDim>& dims, const std::vector<int64_t>& padding, bool conv = false);

// ---- the window nest (window_loops_window.cc) ---------------------------------------------------

/// What a window nest computes per output point (lanes consecutive output positions along the
/// innermost dimension, or one): `init` its accumulators; `step` combines the operand element(s)
/// at linear operand offset `off` (lanes wide: off.coef is the lanes' stride); `valid` is an i1
/// saying whether the tap reads an element (only in a nest of every tap, where padding and holes
/// are steps too and `off` is then 0; otherwise invalid: every step reads an element); `done`
/// emits the result at linear output offset `out_off` (coef 1 when lanes > 1).
struct WindowOps {
  std::function<std::vector<EVal>(int lanes)> init;
  std::function<std::vector<EVal>(const std::vector<EVal>& acc, const DimIdx& off, int lanes, kir::Value valid)> step;
  std::function<void(const std::vector<EVal>& acc, const DimIdx& out_off, int lanes)> done;
};

/// A window nest over a row-major operand and output: one WinDim per dimension (rank >= 1); the
/// first `parallel_dims` (<= rank - 1) output dimensions are the kernel's outer index; `lanes` > 1
/// vectorizes the innermost output dimension where all its taps are in bounds (WinDim::interior).
/// `every_tap`: padding and holes are steps too (the generic reduce_window's body sees its init
/// values there); otherwise they are skipped.
struct WindowNest {
  std::vector<WinDim> dims;
  size_t parallel_dims = 0;
  int lanes = 1;
  bool every_tap = false;
  /// The points store their results (not accumulate): a last partial vector may overlap the one
  /// before it (vector_steps).
  bool overlap = true;
  /// The outer extent (product of the parallel output dims) and the taps per outer index.
  int64_t outer() const;
  int64_t work_per_outer() const;
};

/// Emits, for outer indices [begin, end), every output point of `w`: its taps in window order
/// (row-major over the window; padding and holes skipped by bounds arithmetic and, for base
/// dilation, a divisibility test), through `ops`.
void emit_window_points(kir::Builder& b, const WindowNest& w, const WindowOps& ops, kir::Value begin, kir::Value end);

}  // namespace minijax::lower::window
