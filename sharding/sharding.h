// minijax's internal sharding: OpenXLA Shardy's representation (axes per dim, sub-axes, open or
// closed dims, priorities, replicated and unreduced axes). Owns Sharding, its validation and text.
#pragma once
#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "core/aval.h"
#include "sharding/mesh.h"

namespace minijax {

/// A reference to a mesh axis or to a sub-axis of it (Shardy's AxisRefAttr).
///
/// size == 0: the whole axis `name`. Otherwise the sub-axis `"name":(pre_size)size`: axis
/// `name` of size n is reshaped into [pre_size, size, n / (pre_size * size)] (major first) and
/// the sub-axis is the middle dimension, so a device with coordinate c along the axis has
/// sub-axis coordinate (c / (n / (pre_size * size))) % size. Hence on an axis of size 4,
/// `"x":(1)2` is the major half (c / 2) and `"x":(2)2` the minor half (c % 2): sharding a dim on
/// [`"x":(1)2`, `"x":(2)2`] is the same as sharding it on `"x"`.
/// Valid sub-axes: pre_size >= 1, size > 1, pre_size * size divides n, and not the whole axis
/// (pre_size == 1 && size == n). (Shardy docs, sharding_representation.md, "Axis splitting and
/// sub-axes".)
struct AxisRef {
  std::string name;
  int64_t pre_size = 1;
  int64_t size = 0;

  /// A whole axis.
  static AxisRef axis(std::string name) { return AxisRef{std::move(name), 1, 0}; }
  /// The sub-axis "name":(pre_size)size.
  static AxisRef sub(std::string name, int64_t pre_size, int64_t size) {
    return AxisRef{std::move(name), pre_size, size};
  }
  bool is_sub_axis() const { return size != 0; }
  /// Number of devices along this (sub-)axis of `mesh` (the axis size for a whole axis).
  /// ShardingError if the axis is unknown.
  int64_t resolved_size(const Mesh& mesh) const;
  /// The part of the axis this ref covers, as [lo, hi) in the "log space" of the axis: the
  /// whole axis of size n is [1, n) multiplicatively, returned as (pre_size, pre_size * size),
  /// i.e. the sub-axis covers the factor range starting at pre_size. Two refs of one axis
  /// overlap iff their ranges intersect. A whole axis returns (1, n).
  std::pair<int64_t, int64_t> factor_range(const Mesh& mesh) const;
  /// This ref's coordinate for the device at mesh coordinates `coords` (see above).
  int64_t coord(const Mesh& mesh, const std::vector<int64_t>& mesh_coords) const;
  /// `"x"` or `"x":(1)2`, as Shardy prints axis refs.
  std::string str() const;

  bool operator==(const AxisRef& o) const = default;
};

/// The sharding of one array dimension: axes major first; closed (fixed) or open (propagation may
/// add minor axes: printed `?`); priority -1 = none (Shardy's implicit p0 ... printed nothing),
/// else printed `p<N>`.
struct DimSharding {
  std::vector<AxisRef> axes;
  bool closed = true;
  int64_t priority = -1;

  /// Number of shards of the dim: product of the axes' sizes (1 when none).
  int64_t num_shards(const Mesh& mesh) const;
  /// `{"x", "y":(1)2}`, `{"x", ?}`, `{?}`, `{}`, with `p<N>` appended for a priority.
  std::string str() const;

  bool operator==(const DimSharding& o) const = default;
};

/// A sharding in Shardy's representation, bound to a mesh: one DimSharding per array dim, plus
/// explicitly replicated axes (propagation may not shard on them) and unreduced axes (the array
/// holds partial sums over them, not yet reduced). Not part of avals: propagated shardings
/// annotate variables.
struct Sharding {
  std::shared_ptr<const Mesh> mesh;
  std::vector<DimSharding> dims;
  std::vector<AxisRef> replicated;
  std::vector<AxisRef> unreduced;
  MemoryKind memory_kind = MemoryKind::device;

  /// The fully replicated (all dims closed, no axes) sharding of a rank-`rank` array.
  static Sharding replicated_on(std::shared_ptr<const Mesh> mesh, int64_t rank,
                                MemoryKind memory_kind = MemoryKind::device);

  /// Validates the sharding for an array of `shape`. Throws ShardingError at `loc` naming the
  /// sharding (str()), the shape and the mesh when: the mesh is null; dims.size() != rank; an
  /// axis is not in the mesh; a sub-axis is invalid (see AxisRef); an axis or sub-axis is used
  /// twice or two refs of one axis overlap (across dims, replicated and unreduced); two adjacent
  /// sub-axes of one dim could merge into one (Shardy's "as big as possible" invariant, e.g.
  /// "x":(1)2 followed by "x":(2)2); a priority is < -1. Shard counts that do not divide a
  /// dimension are valid (uneven shards; see device_boxes in sharding/boxes.h).
  void check(const Shape& shape, std::source_location loc = std::source_location::current()) const;

  /// Number of devices holding each piece of the array: num_devices / product of all dims'
  /// shard counts.
  int64_t replication_factor() const;
  /// Whether no dim is sharded and there are no unreduced axes.
  bool is_fully_replicated() const;

  /// Shardy's printed form without the mesh reference:
  /// `[{"x"}, {"y":(1)2, ?}p1, {}], replicated={"z"}, unreduced={"w"}` where `replicated=`
  /// and `unreduced=` appear only when non-empty and `, memory_kind=pinned_host` is appended when
  /// the memory kind is not device. (Shardy prints `#sdy.sharding<@mesh, ...>`; our meshes are
  /// unnamed, see mesh->str().)
  std::string str() const;

  /// Equal meshes (by value), dims, replicated and unreduced axes (in order) and memory kind.
  bool operator==(const Sharding& o) const;
};

}  // namespace minijax
