// minijax SPMD lowering of the reshards the structured collectives cannot express: ONE
// ragged_all_to_all over the whole mesh driven by plan_reshard's messages (or a collective_permute).
#pragma once
#include <source_location>

#include "core/array.h"
#include "sharding/mesh.h"
#include "sharding/sharding.h"

namespace minijax {

/// Lowers, inside the SPMD program being traced, the reshard of the local shard `x` (of the
/// array of global shape `global` and x's dtype) from `from` to `to` (both reduced, every dim
/// dividing evenly into its shards) following plan_reshard(from, to): when the plan is a
/// collective_permute between shards of one shape (every device receives its whole shard from one sender, or keeps its own
/// and sends nothing: a (d, d) pair), one `collective_permute` over all mesh axes; otherwise
/// ONE `ragged_all_to_all` over all mesh axes (rank = mesh position) inside a `closed_call`
/// named `reshard_ragged`, whose body:
///   p = axis_index(all mesh axes); the send buffer = gather(x flattened, pack[p]); the
///   exchange with input_offsets[p], send_sizes[p], output_offsets[p], recv_sizes[p]; the
///   result = gather(received, unpack[p]) reshaped to the target shard,
/// where pack, unpack and the four offset/size tables are constant i32 tables (the body's
/// consts) with one row per device: no branch per device, and the printed program is the same
/// for all of them. Each device sends A(d) ∩ B(d) to itself (no traffic) and each plan message
/// to its receiver, so the exchange moves exactly the plan's bytes (run_spmd measures them).
/// Throws ShardingError (at `loc`, naming both shardings and the shape) when a dim does not
/// divide evenly, or either sharding has unreduced axes, or plan_reshard does.
Array lower_reshard_ragged(const Array& x, const Sharding& from, const Sharding& to,
                           const Shape& global, const Mesh& mesh,
                           std::source_location loc = std::source_location::current());

}  // namespace minijax
