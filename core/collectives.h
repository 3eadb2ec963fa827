// minijax collective primitives of SPMD programs (XLA's names): all_gather, all_reduce,
// reduce_scatter, all_to_all, collective_permute, ragged_all_to_all and axis_index; their binders.
#pragma once
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/params.h"

namespace minijax {

/// The mesh axes a collective runs over: one name (`"x"`) or a tuple (`{"x", "y"}`, major
/// first: the rank of a device in its group is row-major over these axes' coordinates).
using AxisNames = std::vector<std::string>;

namespace detail {
/// Throws the ValueError of a collective bound eagerly (outside the SPMD executor), naming the
/// primitive, its axes and the call site.
[[noreturn]] void refuse_eager_collective(const std::string& primitive, const Params& params,
                                          std::source_location loc);
}  // namespace detail

// Collectives are equations of ONE SPMD program: the shapes are per-device (local) shapes, the
// shape rules know nothing of meshes (params carry the axis names and the group size
// `axis_size`), and the values exist only when the program runs on every device of a mesh under
// run_spmd (jit/reference/reference_executor.h). Called eagerly, they throw ValueError ("collective
// X runs only under the SPMD executor"). Shape-rule errors are ShapeError/ValueError naming the
// primitive, the operand avals, the axis and the call site.
namespace lax {
using SL = std::source_location;

/// XLA AllGather (JAX all_gather): every device of the group receives the operands of all of
/// them, in group-rank order. tiled: concatenated along `gather_dimension` (that dim times
/// axis_size); untiled: stacked in a new dim `gather_dimension` of size axis_size.
/// ShapeError if gather_dimension is out of range (0..rank-1 tiled, 0..rank untiled).
Array all_gather(const Array& x, const AxisNames& axis_name, int64_t axis_size, int64_t gather_dimension,
                 bool tiled = true, SL loc = SL::current());
/// XLA AllReduce (JAX psum/pmax/pmin): the elementwise reduction ("sum", "max" or "min"; "and",
/// "or" or "xor", bitwise, for bool and integer operands: the partial results of reduce_and/or/xor)
/// of the operands of the group, on every device; same shape. ValueError for another reduction,
/// TypeError for a bitwise one of floats.
Array all_reduce(const Array& x, const AxisNames& axis_name, int64_t axis_size,
                 const std::string& reduction = "sum", SL loc = SL::current());
/// JAX's psum: all_reduce with reduction "sum".
Array psum(const Array& x, const AxisNames& axis_name, int64_t axis_size, SL loc = SL::current());
/// XLA ReduceScatter with a sum (JAX psum_scatter tiled=True): the group's sum, split along
/// `scatter_dimension` into axis_size blocks; rank r keeps block r. ShapeError unless
/// x.shape[scatter_dimension] is divisible by axis_size.
Array reduce_scatter(const Array& x, const AxisNames& axis_name, int64_t axis_size,
                     int64_t scatter_dimension, SL loc = SL::current());
/// XLA AllToAll (JAX all_to_all): each device splits x along split_dimension into axis_size
/// blocks and sends block j to rank j; each receiver concatenates the blocks it gets along
/// concat_dimension in sender-rank order. Local result shape: split dim / axis_size, concat dim
/// * axis_size. ShapeError unless the split dim is divisible by axis_size.
Array all_to_all(const Array& x, const AxisNames& axis_name, int64_t axis_size, int64_t split_dimension,
                 int64_t concat_dimension, SL loc = SL::current());
/// XLA CollectivePermute (JAX ppermute): `source_target_pairs` = flat (source, target) rank
/// pairs along the group; the target receives the source's value, ranks that are no target get
/// zeros. ValueError for an odd-length list, a rank outside [0, axis_size), a repeated source
/// or a repeated target.
Array collective_permute(const Array& x, const AxisNames& axis_name, int64_t axis_size,
                         const std::vector<int64_t>& source_target_pairs, SL loc = SL::current());
/// XLA RaggedAllToAll: operands (input, output, input_offsets, send_sizes, output_offsets,
/// recv_sizes); the four index operands are i32[axis_size]. Device i sends rows
/// input[input_offsets[j] : input_offsets[j] + send_sizes[j]] (rows = dim 0) to rank j, which
/// writes them at rows output_offsets[j] (an offset in j's output, as XLA) of its `output`;
/// recv_sizes[j] is the row count device i receives from j (checked against j's send size).
/// Result: `output` with those rows replaced. ShapeError if input/output differ in dtype or in
/// dims after 0, or if an index operand is not i32[axis_size].
Array ragged_all_to_all(const Array& input, const Array& output, const Array& input_offsets,
                        const Array& send_sizes, const Array& output_offsets, const Array& recv_sizes,
                        const AxisNames& axis_name, int64_t axis_size, SL loc = SL::current());
/// JAX axis_index: the device's coordinate along the named axis (row-major rank over several
/// axes) as an i32 scalar.
Array axis_index(const AxisNames& axis_name, SL loc = SL::current());
}  // namespace lax

}  // namespace minijax
