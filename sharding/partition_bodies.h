// minijax SPMD partitioning of equations with bodies (pjit, closed_call, checkpoint,
// custom_jvp_call, custom_vjp_call, scan, while, cond): each body partitioned recursively.
#pragma once
#include <source_location>
#include <vector>

#include "core/array.h"
#include "core/jaxpr.h"
#include "sharding/mesh.h"
#include "sharding/propagate_shardings.h"

namespace minijax {

/// Whether partition_spmd hands equation `e` to partition_body_eqn (its primitive has bodies).
bool partitions_bodies(const Eqn& e);

/// Binds the partitioned form of equation `e` (one with bodies) on its local operands
/// `local_ops` (after the reshards placed before it) in the current trace, and returns its local
/// results (before the reshards placed after it). Every body is partitioned by partition_spmd
/// with its own propagated shardings and reshards (`shardings.reshards_in(body)`), so its invars
/// take local avals and its reshards are lowered inside it. Params: scan keeps `length` (the
/// scanned dim is never sharded) and its num_consts/num_carry/linear/reverse/unroll; while keeps
/// its const counts; cond its branch order; pjit/closed_call/checkpoint keep their other params.
/// custom_jvp_call and custom_vjp_call become a `closed_call` of the partitioned body (autodiff
/// runs before partitioning, so their rules are never used afterwards).
/// Throws what partition_spmd throws for a body (ShardingError naming the equation inside it).
std::vector<Array> partition_body_eqn(const Eqn& e, const std::vector<Array>& local_ops,
                                      const PropagationResult& shardings, const Mesh& mesh,
                                      std::source_location loc = std::source_location::current());

}  // namespace minijax
