// minijax device meshes: a grid of (virtual) devices with named axes, as jax.sharding.Mesh.
// Owns Mesh, its validation and coordinate arithmetic, and make_mesh (as jax.make_mesh).
#pragma once
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "core/aval.h"
#include "core/device.h"

namespace minijax {

/// A logical device mesh (JAX's `jax.sharding.Mesh`, Shardy's `sdy.mesh` with `device_ids`):
/// `device_ids` laid out row-major over `shape`, one name per mesh axis. Position p in
/// `device_ids` has the row-major coordinates `coords_of(p)`.
struct Mesh {
  std::vector<int> device_ids;
  Shape shape;
  std::vector<std::string> axis_names;

  /// Builds and validates a mesh. Throws ShardingError (at `loc`, the user's call site; the
  /// message names the mesh shape and the device count) when: shape and axis_names differ in
  /// length, an axis size is < 1, prod(shape) != devices.size(), an axis name is empty or
  /// repeated, a device id is negative or repeated.
  Mesh(std::vector<int> devices, Shape shape, std::vector<std::string> axis_names,
       std::source_location loc = std::source_location::current());

  /// Number of mesh axes.
  size_t ndim() const { return shape.size(); }
  /// Number of devices (prod(shape)).
  size_t num_devices() const { return device_ids.size(); }
  /// Whether the mesh has an axis of that name.
  bool has_axis(const std::string& name) const;
  /// Index of the axis in `axis_names`. ShardingError (naming the mesh's axes) if unknown.
  int64_t axis_index(const std::string& name,
                     std::source_location loc = std::source_location::current()) const;
  /// Size of the named axis. ShardingError (naming the mesh's axes) if unknown.
  int64_t axis_size(const std::string& name,
                    std::source_location loc = std::source_location::current()) const;
  /// Row-major mesh coordinates of position `position` in device_ids (one per axis).
  /// IndexError if position >= num_devices().
  std::vector<int64_t> coords_of(size_t position) const;
  /// Position in device_ids of the device at `coords` (row-major). IndexError if a coordinate
  /// is out of range or the rank is wrong.
  size_t position_of(const std::vector<int64_t>& coords) const;
  /// Device id at `coords`: device_ids[position_of(coords)].
  int device_at(const std::vector<int64_t>& coords) const;
  /// Position of device `id` in device_ids, or -1 if the mesh does not hold it.
  int64_t position_of_device(int id) const;
  /// `Mesh('x': 4, 'y': 2)` (JAX's repr without the device list); when the device order is not
  /// 0..N-1, ` devices=[...]` is appended inside the parentheses.
  std::string str() const;

  bool operator==(const Mesh& o) const = default;
};

/// JAX's `jax.make_mesh(axis_shapes, axis_names)`: a Mesh of the first prod(axis_shapes) devices
/// of devices() (ids 0..prod-1, row-major), e.g. `mj::make_mesh({4, 2}, {"data", "model"})` on 8
/// or more virtual devices. Throws ShardingError at `loc` (naming make_mesh, the shape, the axis
/// names and the device count) when: the shape and the names differ in length, an axis size is
/// < 1, or the process has fewer than prod(axis_shapes) devices (mj::set_num_devices,
/// config().num_cpu_devices or MINIJAX_NUM_DEVICES set the count before first use); and as Mesh's
/// constructor for an empty or repeated axis name.
Mesh make_mesh(const Shape& axis_shapes, const std::vector<std::string>& axis_names,
               std::source_location loc = std::source_location::current());

// devices(), num_devices() and set_num_devices() are declared in core/device.h.

}  // namespace minijax
