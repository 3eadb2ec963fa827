// minijax shard storage: box extents and region copies between row-major box buffers.
// Owns the element-moving loop used by gathering, slicing and cross-mesh resharding.
#include "core/shards.h"

#include <cstring>
#include <string>

#include "core/errors.h"

namespace minijax {

Shape StoredShard::extent() const {
  Shape s(start.size());
  for (size_t i = 0; i < start.size(); ++i) s[i] = stop[i] - start[i];
  return s;
}

void copy_region(const void* src, const std::vector<int64_t>& src_lo,
                 const std::vector<int64_t>& src_hi, void* dst, const std::vector<int64_t>& dst_lo,
                 const std::vector<int64_t>& dst_hi, const std::vector<int64_t>& lo,
                 const std::vector<int64_t>& hi, size_t itemsize) {
  const size_t r = lo.size();
  if (src_lo.size() != r || src_hi.size() != r || dst_lo.size() != r || dst_hi.size() != r ||
      hi.size() != r)
    throw ValueError("copy_region: boxes of different ranks");
  for (size_t i = 0; i < r; ++i) {
    if (hi[i] <= lo[i]) return;  // empty region
    if (lo[i] < src_lo[i] || hi[i] > src_hi[i] || lo[i] < dst_lo[i] || hi[i] > dst_hi[i])
      throw ValueError("copy_region: region dim " + std::to_string(i) + " [" +
                       std::to_string(lo[i]) + ", " + std::to_string(hi[i]) +
                       ") is outside a box");
  }
  if (r == 0) {
    std::memcpy(dst, src, itemsize);
    return;
  }
  // Row-major strides (in elements) of both boxes.
  std::vector<int64_t> ss(r, 1), ds(r, 1);
  for (size_t i = r - 1; i > 0; --i) {
    ss[i - 1] = ss[i] * (src_hi[i] - src_lo[i]);
    ds[i - 1] = ds[i] * (dst_hi[i] - dst_lo[i]);
  }
  const size_t run = size_t(hi[r - 1] - lo[r - 1]) * itemsize;
  std::vector<int64_t> idx(lo);  // current index over the leading r-1 dims
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  while (true) {
    int64_t so = 0, doff = 0;
    for (size_t i = 0; i < r; ++i) {
      so += (idx[i] - src_lo[i]) * ss[i];
      doff += (idx[i] - dst_lo[i]) * ds[i];
    }
    std::memcpy(d + size_t(doff) * itemsize, s + size_t(so) * itemsize, run);
    size_t k = r - 1;
    while (k > 0) {
      --k;
      if (++idx[k] < hi[k]) break;
      idx[k] = lo[k];
      if (k == 0) return;
    }
    if (r == 1) return;
  }
}

}  // namespace minijax
