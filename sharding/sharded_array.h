// minijax sharded Arrays: the NamedSharding-facing side of per-device shard storage.
// Owns ArraySharding, make_sharded_array, local_shards, device_put to a sharding and with_sharding_constraint.
#pragma once
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "core/array.h"
#include "core/params.h"
#include "sharding/partition_spec.h"
#include "sharding/sharding.h"

namespace minijax {

/// What Array::sharding() returns (JAX's `x.sharding`): the Shardy Sharding always, and the
/// NamedSharding when a PartitionSpec expresses it (to_named; not with sub-axes or priorities).
struct ArraySharding {
  Sharding sharding;
  std::optional<NamedSharding> named;

  bool is_named() const { return named.has_value(); }
  /// The NamedSharding. ShardingError (naming the Sharding) when it is not expressible or there
  /// is no mesh (a default-constructed ArraySharding).
  const NamedSharding& named_sharding(
      std::source_location loc = std::source_location::current()) const;
  /// The PartitionSpec (as named_sharding().spec).
  const P& spec(std::source_location loc = std::source_location::current()) const {
    return named_sharding(loc).spec;
  }
  /// The mesh. ShardingError at `loc` for a default-constructed ArraySharding (no mesh).
  const Mesh& mesh(std::source_location loc = std::source_location::current()) const;
  MemoryKind memory_kind() const { return sharding.memory_kind; }
  /// NamedSharding's str() when named, else the Sharding's str() prefixed by the mesh.
  std::string str() const;
  /// Same mesh, memory kind and an equivalent spec (trailing None entries ignored).
  bool operator==(const NamedSharding& o) const;
  /// Equal Shardings.
  bool operator==(const Sharding& o) const { return sharding == o; }
};

/// Builds a sharded Array (for jit outputs and device_put) from its global aval `global`, its
/// sharding `s` (on s.mesh) and one shard per mesh position (mesh->device_ids order). Shard p
/// is a concrete array of global.dtype whose shape is the extent of device_boxes(s)[p] (its real
/// data, uneven trailing shards smaller or empty) or a padded shape (each dim >= the extent; the
/// leading extent is kept, the padding dropped). Its buffer is shared when its shape is the
/// extent and its memory kind is s.memory_kind, else copied. Open dims of `s` are stored closed.
/// The result's aval is `global` with s.memory_kind. Never gathers.
/// Throws ShardingError at `loc` (naming the sharding and the shape) when s does not fit
/// global.shape (Sharding::check), s has unreduced axes (partial sums must be reduced first,
/// e.g. by all_reduce), or the shard count is not the mesh's device count; TypeError for a
/// shard of another dtype; ShapeError for a shard whose shape is neither the extent nor padded.
Array make_sharded_array(const ShapedArray& global, const Sharding& s, std::vector<Array> shards,
                         std::source_location loc = std::source_location::current());

/// The local shards of `x` under `s`: one concrete Array per mesh position (device_ids order) of
/// the shape of its box (device_boxes), in s.memory_kind. An unsharded x is sliced. A sharded x
/// already in `s` gives its own shards (no copy unless the memory kind changes); sharded on the
/// same mesh in another sharding, it is resharded by plan_reshard + execute_reshard; on another
/// mesh, each target box is copied from the intersecting source shards. The global array is
/// never assembled when x is sharded. Open dims of `s` count as unsharded.
/// Throws ShardingError at `loc` (sharding, shape) as Sharding::check, or when s has unreduced
/// axes; ConcretizationError when x is staged.
std::vector<Array> local_shards(const Array& x, const Sharding& s,
                                std::source_location loc = std::source_location::current());

/// jax.device_put(x, sharding): eagerly, a sharded Array laid out as `s` (uneven dims allowed:
/// trailing shards smaller or empty, see device_boxes), in s.memory_kind. Under a trace it
/// binds sharding_constraint (preceded by device_put[memory_kind] when the kind changes), as
/// JAX's device_put inside jit. Throws ShardingError at `loc` naming the spec, the array's shape
/// and the mesh when the spec does not fit (more entries than the rank, an unknown axis, an
/// axis used twice).
Array device_put(const Array& x, const NamedSharding& s,
                 std::source_location loc = std::source_location::current());
/// device_put to a Shardy Sharding (sub-axes allowed); errors as Sharding::check at `loc`.
Array device_put(const Array& x, const Sharding& s,
                 std::source_location loc = std::source_location::current());

/// jax.lax.with_sharding_constraint(x, sharding): the `sharding_constraint` primitive (strict:
/// propagation never moves it; partitioning reshards the operand to it). Eagerly the same as
/// device_put(x, s). The memory kind of `s` is applied as device_put does. Errors as device_put.
Array with_sharding_constraint(const Array& x, const NamedSharding& s,
                               std::source_location loc = std::source_location::current());
/// with_sharding_constraint to a Shardy Sharding.
Array with_sharding_constraint(const Array& x, const Sharding& s,
                               std::source_location loc = std::source_location::current());

}  // namespace minijax
