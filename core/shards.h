// minijax shard storage: the generic per-device pieces of a sharded concrete array.
// Owns StoredShard (device id, index box, buffer) and copy_region (moving a box between buffers).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/aval.h"
#include "core/buffer.h"

namespace minijax {

/// One device's piece of a sharded concrete array. core/ knows nothing of meshes or shardings:
/// a shard is the device id, the box of global indices it holds ([start[i], stop[i]) along each
/// dim i; empty when some stop[i] == start[i]) and a dense row-major buffer of exactly that box's
/// elements (prod(stop - start) * itemsize(dtype) bytes; no padding). Devices that hold replicas
/// have equal boxes.
struct StoredShard {
  int device_id = 0;
  std::vector<int64_t> start, stop;
  std::shared_ptr<Buffer> buffer;

  /// The shape of the box: stop - start.
  Shape extent() const;
};

/// Copies the elements of the region [lo, hi) (global indices, one pair per dim) from `src`, a
/// dense row-major buffer holding the box [src_lo, src_hi), into `dst`, a dense row-major buffer
/// holding the box [dst_lo, dst_hi). Elements are `itemsize` bytes. The region must lie inside
/// both boxes (ValueError otherwise); an empty region copies nothing. Rank 0: one element.
/// Cost: one memcpy per contiguous run along the last dim.
void copy_region(const void* src, const std::vector<int64_t>& src_lo,
                 const std::vector<int64_t>& src_hi, void* dst, const std::vector<int64_t>& dst_lo,
                 const std::vector<int64_t>& dst_hi, const std::vector<int64_t>& lo,
                 const std::vector<int64_t>& hi, size_t itemsize);

}  // namespace minijax
