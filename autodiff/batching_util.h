// minijax batching helpers: moving, materializing and aligning batch dimensions for vmap rules.
// Owns move_batch_dim, materialize_batch, batch_to_front, axis bookkeeping and the elementwise rule.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/array.h"
#include "core/primitive.h"

namespace minijax {

// Conventions (as in jax/_src/interpreters/batching.py): a batched value carries its batch
// dimension at `bdim` (0 <= bdim < ndim); kNotMapped means the value is the same for every
// batch element and has the element's shape. "Element" shapes/axes are those the primitive sees
// without the batch dimension.

/// x with dimension `from` moved to position `to` (the other dims keep their order), via
/// lax::transpose; x itself if from == to. Both must be in [0, x.ndim()); ValueError otherwise.
/// JAX: batching.moveaxis.
Array move_batch_dim(const Array& x, int64_t from, int64_t to);

/// x batched with its batch dimension at `to`, of size `size`: if dim == kNotMapped, x (an
/// element value) is broadcast along a new dimension inserted at `to` (lax::broadcast_in_dim);
/// otherwise its batch dim `dim` is moved to `to` (and must have size `size`, ValueError
/// otherwise). `to` is in [0, rank of the result). JAX: batching.broadcast / bdim_at_front.
Array materialize_batch(const Array& x, int64_t dim, int64_t size, int64_t to = 0);

/// The common size of the batch dimensions of the mapped args (dims[i] != kNotMapped). Throws
/// ValueError if there are none or if they disagree (naming each operand's shape and dim).
int64_t batch_axis_size(const std::vector<Array>& args, const std::vector<int64_t>& dims);

/// Every arg with its batch dim moved to the front (dim 0), and the batch size. Unmapped args
/// are broadcast to [size, ...] when materialize_unmapped, otherwise returned unchanged (still
/// unbatched: the caller keeps track with `dims`). ValueError as batch_axis_size.
std::pair<std::vector<Array>, int64_t> batch_to_front(const std::vector<Array>& args,
                                                      const std::vector<int64_t>& dims,
                                                      bool materialize_unmapped = true);

/// The axis of a batched value (batch dim at bdim, kNotMapped allowed) that holds element axis
/// `axis` (already non-negative): axis < bdim ? axis : axis + 1.
int64_t batched_axis(int64_t axis, int64_t bdim);
/// batched_axis over a list of element axes (order kept).
std::vector<int64_t> batched_axes(const std::vector<int64_t>& axes, int64_t bdim);
/// Where the batch dim `bdim` ends up after the (batched-value) axes `removed` are deleted, as
/// in a reduction: bdim minus the number of removed axes before it. `removed` must not contain
/// bdim. JAX: reducer_batcher's bdim_out.
int64_t bdim_after_removing(int64_t bdim, const std::vector<int64_t>& removed);

/// The batching rule of an elementwise primitive `name` (n operands, any number of results, each
/// operand either of the element output shape or rank 0 — as select_n's predicate or clamp's
/// bounds). When every operand is batched at the same dim with the same element shape, the
/// primitive is bound directly and the outputs keep that dim; otherwise every operand is
/// materialized to [size, element shape...] and the outputs are batched at 0. JAX:
/// batching.broadcast_batcher.
BatchRule elementwise_batch_rule(const std::string& name);

}  // namespace minijax
