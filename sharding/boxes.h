// minijax index boxes: which part of an array each device of a mesh holds under a Sharding.
// Owns Box and device_boxes (the ground truth the resharding planner and its bounds reason on).
#pragma once
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "core/aval.h"
#include "sharding/sharding.h"

namespace minijax {

/// A half-open box of array indices: [lo[i], hi[i]) along each dim i. Empty when some
/// hi[i] == lo[i].
struct Box {
  std::vector<int64_t> lo, hi;

  /// Number of elements: prod(hi - lo) (1 for rank 0).
  int64_t volume() const;
  /// The shape of a dense buffer holding the box: hi[i] - lo[i] per dim.
  Shape extent() const;
  /// Whether index `idx` (one per dim) lies in the box.
  bool contains(const std::vector<int64_t>& idx) const;
  /// `[0:3, 0:16]` (numpy-style slices).
  std::string str() const;
  bool operator==(const Box& o) const = default;
};

/// The intersection of two boxes of the same rank (lo = max, hi = max(lo, min)); an empty box
/// when they do not overlap.
Box intersect(const Box& a, const Box& b);

/// The box of `shape` each device holds under `s`, one per mesh position (in mesh->device_ids
/// order: box i belongs to device mesh->device_ids[i]). Along dim d with axes a_1..a_k (major
/// first, sub-axes included) the device's shard index is the mixed-radix number of its axis
/// coordinates (AxisRef::coord), n = prod of the axes' sizes shards; shard size
/// c = ceil(shape[d] / n) and shard i is [min(i*c, shape[d]), min((i+1)*c, shape[d])), so when n
/// does not divide shape[d] the trailing shards are smaller or empty (e.g. 17 rows over 8: five
/// devices hold 3 rows, one holds 2, two hold none — the real data of a padded layout whose
/// shards are all c rows; docs/cases/uneven-shards.md). Dims without axes are whole. Devices
/// that differ only in replicated or unused axes get equal boxes; unreduced axes do not change
/// the box (each holds a partial sum of the same indices).
/// Throws ShardingError (at `loc`) as s.check(shape, loc) does.
std::vector<Box> device_boxes(const Sharding& s, const Shape& shape,
                              std::source_location loc = std::source_location::current());

}  // namespace minijax
