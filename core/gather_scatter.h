// minijax general gather and scatter family (jax.lax.gather, scatter, scatter_add, scatter_mul,
// scatter_min, scatter_max) with JAX's dimension numbers: the public structs and functions.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "core/lax.h"

namespace minijax::lax {

/// JAX's lax.GatherDimensionNumbers. The indices' index vector dim is their last dim (as
/// jax.lax.gather's). `offset_dims`: output dims holding the slice's window dims (sorted);
/// `collapsed_slice_dims`: operand dims of slice size 1 dropped from the window (sorted);
/// `start_index_map`: the operand dim each entry of an index vector starts; the batching dims
/// pair operand dims with indices dims that index them in lockstep (slice size 1, dropped).
/// Printed as JAX prints it: `GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
/// start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())`.
struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map, operand_batching_dims,
      start_indices_batching_dims;
  bool operator==(const GatherDimensionNumbers&) const = default;
};
/// JAX's lax.ScatterDimensionNumbers (the mirror of GatherDimensionNumbers): `update_window_dims`
/// are updates dims (sorted), `inserted_window_dims` operand dims of window size 1 (sorted),
/// `scatter_dims_to_operand_dims` the operand dim of each index vector entry.
struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims,
      operand_batching_dims, scatter_indices_batching_dims;
  bool operator==(const ScatterDimensionNumbers&) const = default;
};
/// jax.lax.gather's keyword arguments (its defaults: mode None = PROMISE_IN_BOUNDS, as
/// jax/_src/lax/slicing.py gather; fill_value None).
struct GatherOptions {
  bool indices_are_sorted = false;
  bool unique_indices = false;
  GatherScatterMode mode = GatherScatterMode::PROMISE_IN_BOUNDS;
  std::optional<double> fill_value;
};
/// jax.lax.scatter*'s keyword arguments (mode None = FILL_OR_DROP, as JAX's
/// GatherScatterMode.from_any(None)).
struct ScatterOptions {
  bool indices_are_sorted = false;
  bool unique_indices = false;
  GatherScatterMode mode = GatherScatterMode::FILL_OR_DROP;
};
/// XLA's general gather (jax.lax.gather): for each index vector indices[b..., :], the slice of
/// `operand` of `slice_sizes` starting at the vector's entries (on start_index_map's dims; the
/// batching dims start at the batch position), with collapsed and batching dims dropped.
/// Output rank len(offset_dims) + indices.ndim - 1. Modes: CLIP clamps each start so the whole
/// slice fits; FILL_OR_DROP fills the whole slice with `fill_value` when any part of it is out
/// of bounds (fill_value None: NaN for floats, the lowest i32, the largest u32, true);
/// PROMISE_IN_BOUNDS (the default, as JAX's) raises IndexError eagerly for a broken promise and
/// clamps when compiled, as XLA. operand: any dtype but float0/token; indices: i32 or u32, the
/// index vector last; slice_sizes: one per operand dim, 1 on collapsed dims, 0 or 1 on batching
/// dims. ShapeError (jax's _gather_shape_rule checks) naming the shapes and the parameter; TypeError
/// for non-integer indices. Differentiable in `operand` (JVP: the same gather of the tangent;
/// transpose: scatter_add with the mirrored numbers). Source: jax/_src/lax/slicing.py gather.
Array gather(const Array& operand, const Array& indices, const GatherDimensionNumbers& dimension_numbers,
             const std::vector<int64_t>& slice_sizes, const GatherOptions& options = {},
             SL loc = SL::current());
/// XLA's general scatter-add (jax.lax.scatter_add): each update window updates[u...] is added
/// into `operand` at the window its index vector selects; repeated indices accumulate in update
/// order. Modes: CLIP clamps each start so the window fits; FILL_OR_DROP (the default, as JAX's)
/// drops a window any part of which is out of bounds; PROMISE_IN_BOUNDS raises IndexError eagerly
/// for a broken promise, and compiled code drops the window, as XLA. A window that cannot fit at
/// all (an indexed dim of size 0) is dropped in every mode. operand and updates: the same dtype
/// (any but float0/token; i32 wraps); indices: i32 or u32, the index vector last; updates' shape:
/// the scatter (batch) dims of indices with the window dims at update_window_dims, each window
/// dim at most its operand dim. ShapeError (jax's _scatter_shape_rule checks) naming the shapes
/// and the parameter; TypeError for non-integer indices or updates of another dtype. Linear in
/// operand and updates.
/// Source: jax/_src/lax/slicing.py scatter_add.
Array scatter_add(const Array& operand, const Array& indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options = {},
                  SL loc = SL::current());
/// jax.lax.scatter: updates overwrite the windows they select; for repeated indices the last
/// update in row-major order of updates wins (JAX leaves it unspecified). Modes, shapes and errors
/// as scatter_add. JVP: JAX's _scatter_jvp (with unique_indices the scatter of the tangents;
/// otherwise ids scattered and gathered back mask the operand and updates, then scatter_add);
/// transpose (linear in operand and updates) only with unique_indices, as JAX
/// (NotDifferentiableError naming scatter otherwise; JAX raises NotImplementedError). Source: jax/_src/lax/slicing.py scatter.
Array scatter(const Array& operand, const Array& indices, const Array& updates,
              const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options = {},
              SL loc = SL::current());
/// jax.lax.scatter_mul: the windows multiplied by the updates (bool: and). JVP in the operand: the
/// same scatter_mul of its tangent; in the updates (JAX's _scatter_mul_jvp_rhs) only with
/// unique_indices: NotDifferentiableError naming scatter_mul otherwise. Source: slicing.py.
Array scatter_mul(const Array& operand, const Array& indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options = {},
                  SL loc = SL::current());
/// jax.lax.scatter_min: the elementwise minimum of each window and its updates (NaN propagates;
/// bool: and). Modes, shapes and errors as scatter_add. JVP: JAX's _scatter_extremal_jvp (tied
/// values share the tangent equally). Source: jax/_src/lax/slicing.py scatter_min.
Array scatter_min(const Array& operand, const Array& indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options = {},
                  SL loc = SL::current());
/// jax.lax.scatter_max: the elementwise maximum of each window and its updates (NaN propagates;
/// bool: or). Modes, shapes and errors as scatter_add. JVP: JAX's _scatter_extremal_jvp (tied
/// values share the tangent equally). Source: jax/_src/lax/slicing.py scatter_max.
Array scatter_max(const Array& operand, const Array& indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options = {},
                  SL loc = SL::current());

}  // namespace minijax::lax
