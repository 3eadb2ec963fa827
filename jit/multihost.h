// minijax arrays over several processes: building a global sharded Array from what each process
// holds (JAX's make_array_from_*), and multihost_utils::process_allgather.
#pragma once
#include <functional>
#include <optional>
#include <source_location>
#include <utility>
#include <vector>

#include "core/array.h"
#include "sharding/partition_spec.h"

namespace minijax {

/// The index of one shard: [start, stop) per dim, as Array::addressable_shards() gives it.
using ShardIndex = std::vector<std::pair<int64_t, int64_t>>;

/// JAX's jax.make_array_from_callback(shape, sharding, data_callback): a global Array of `shape`
/// laid out as `sharding`, each of this process's devices getting `cb(index)` for the box it holds
/// (called once per local device, replicas included, in mesh order). Every result must have the
/// box's shape and one dtype (the array's). Devices of other processes get theirs from their own
/// process's call. ShapeError naming the result's shape, the box, the device and the process when a
/// result's shape differs; TypeError when the dtypes differ; ShardingError when `sharding` does not
/// fit `shape`.
Array make_array_from_callback(const Shape& shape, const NamedSharding& sharding,
                               const std::function<Array(const ShardIndex&)>& cb,
                               std::source_location loc = std::source_location::current());

/// JAX's jax.make_array_from_single_device_arrays(shape, sharding, arrays): `arrays` holds one
/// Array per device of `sharding`'s mesh driven by this process, in mesh order, each of its box's
/// shape (copied to its device when it lives elsewhere). ValueError for a wrong count, ShapeError
/// naming both shapes, the device and the process for a wrong shape; TypeError for mixed dtypes.
Array make_array_from_single_device_arrays(const Shape& shape, const NamedSharding& sharding,
                                           const std::vector<Array>& arrays,
                                           std::source_location loc = std::source_location::current());

/// JAX's jax.make_array_from_process_local_data(sharding, local_data, global_shape): this
/// process's devices hold one block of the global array (the bounding box of their boxes, which
/// they must fill), and `local_data` is that block. Without `global_shape`, each dim's global size
/// is the local one times the number of blocks of that dim over the number this process holds
/// (the sharding's partition of that dim; e.g. rows sharded over 2 processes: twice the local
/// rows). ShapeError naming the local shape, the expected block's shape and the process when they
/// differ; ValueError when this process's boxes do not form one block or a size does not divide.
Array make_array_from_process_local_data(const NamedSharding& sharding, const Array& local_data,
                                         std::optional<Shape> global_shape = std::nullopt,
                                         std::source_location loc = std::source_location::current());

namespace multihost_utils {

/// JAX's jax.experimental.multihost_utils.process_allgather(x, tiled): on every process, the whole
/// value as an ordinary (unsharded) Array. A global Array (sharded, possibly over other processes'
/// devices) gives its global value, gathered by a compiled call whose output is replicated (its
/// all_gathers between processes go through the MPI communicator): every process must call it.
/// An unsharded Array is this process's own value: the result stacks every process's value along a
/// new leading dim (tiled = false: [process_count(), ...]) or concatenates them along dim 0
/// (tiled = true); every process must give the same shape and dtype. In a run of one process it
/// returns x's value (stacked as [1, ...] when x is unsharded and tiled is false).
Array process_allgather(const Array& x, bool tiled = false,
                        std::source_location loc = std::source_location::current());

}  // namespace multihost_utils
}  // namespace minijax
