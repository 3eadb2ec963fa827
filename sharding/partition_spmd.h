// minijax SPMD partitioner: turns a jaxpr with propagated shardings into ONE per-device program
// (local shard shapes, collectives for the reshards), parameterized only by axis_index.
#pragma once
#include <source_location>

#include "core/jaxpr.h"
#include "sharding/mesh.h"
#include "sharding/propagate_shardings.h"

namespace minijax {

/// Partitions `jaxpr` for `mesh` given its propagated shardings (propagate_shardings on the same
/// jaxpr and mesh). The result is one SPMD program, identical on every device (device-dependent
/// values come only from axis_index), to run with run_spmd (jit/reference/reference_executor.h):
/// its invars are the jaxpr's constvars then invars, each with its local (per-device shard)
/// aval; its outputs are the local shards of the outputs in their propagated shardings (after
/// the output reshards). Local shapes: dim d of a value of global shape S with sharding s has
/// S[d] / s.dims[d].num_shards(mesh).
///
/// Equations with bodies (pjit, closed_call, checkpoint, custom_jvp_call, custom_vjp_call, scan,
/// while, cond) are partitioned by partition_body_eqn (sharding/partition_bodies.h): each body
/// recursively by this function with its own propagated reshards (`reshards_in`), including
/// those at a body's inputs (`on_input`) and outputs.
/// Each other equation is re-bound on local values with the params that carry shapes adjusted
/// (broadcast_in_dim's `shape`, reshape's `new_sizes`, iota's `shape`: the local result shape;
/// an iota along a sharded dim adds the device's offset, from axis_index; slice's
/// `limit_indices` and dynamic_slice's and gather's `slice_sizes` on dims kept whole),
/// after checking that its operand and result shardings agree with its sharding rule's factors
/// (sharding/sharding_rule.h). Each reshard the propagation recorded is lowered to collectives
/// (axis tuples in the sharding's major-first order):
/// - partial sums (unreduced axes U) to the same dims: all_reduce(sum) over U; to the same dims
///   with U appended (minor) to one dim: reduce_scatter over U on that dim; to anything else:
///   all_reduce(sum) over U, then the reshard of the reduced values as below;
/// - otherwise, per dim, the axes after the common prefix of the two shardings are released
///   (source) or acquired (target); axes released in one dim and acquired in another move by
///   ONE all_to_all over all of them; released axes acquired nowhere are all_gathered (one
///   untiled all_gather over all of them); acquired axes released nowhere are taken by a local
///   dynamic_slice at axis_index; local reshapes and transposes arrange the blocks. A dim that
///   both releases and acquires axes (e.g. [{"x"}] -> [{"y"}]) goes in two such reshards: to
///   the common prefix of that dim first, then to the target;
/// - between memory kinds (a program output whose out_sharding names another memory kind): the
///   layout changes as above in device memory (after the move onto the device, before the move
///   off it; between two host kinds in the source's kind) and a device_put moves each local shard.
/// A sharding_constraint is the identity on its (already resharded) local operand, followed by a
/// device_put when its sharding names another memory kind than the operand's (device_put of a
/// concrete Array under jit binds the constraint alone).
///
/// Throws ShardingError (at `loc`, naming the equation or the reshard and the shardings) when a
/// dim does not divide evenly by its shard count (uneven shards are not supported by this
/// partitioner); a reshard involves sub-axes that change dims,
/// turns sharded values into partial sums; an
/// equation's shardings disagree with its rule (a factor sharded differently in two places, a
/// sharded need-replication factor, result unreduced axes other than its sharded reduction
/// factors' axes, a multi-factor (reshaped) dim whose axes, dealt to its factors as
/// propagation projects them, shard a minor factor while a major one is not fully sharded);
/// an operand holds partial sums (except add/sub/neg of equally unreduced operands); the
/// re-bound equation's local result avals differ from the sharded ones (a parameter with global
/// sizes this partitioner does not adjust); the primitive has no sharding rule.
/// Source: the SPMD partitioning of XLA/Shardy (sdy export to per-device programs), simplified.
Jaxpr partition_spmd(const Jaxpr& jaxpr, const PropagationResult& shardings, const Mesh& mesh,
                     std::source_location loc = std::source_location::current());

}  // namespace minijax
