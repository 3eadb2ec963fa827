// minijax index boxes: the part of an array each mesh position holds under a Sharding.
// Owns Box arithmetic and device_boxes (ceil-sized shards, trailing ones smaller or empty).
#include "sharding/boxes.h"

#include "core/errors.h"

#include <algorithm>

namespace minijax {

int64_t Box::volume() const {
  int64_t v = 1;
  for (size_t i = 0; i < lo.size(); ++i) v *= std::max<int64_t>(0, hi[i] - lo[i]);
  return v;
}

Shape Box::extent() const {
  Shape e(lo.size());
  for (size_t i = 0; i < e.size(); ++i) e[i] = hi[i] - lo[i];
  return e;
}

bool Box::contains(const std::vector<int64_t>& idx) const {
  if (idx.size() != lo.size()) return false;
  for (size_t i = 0; i < lo.size(); ++i)
    if (idx[i] < lo[i] || idx[i] >= hi[i]) return false;
  return true;
}

std::string Box::str() const {
  std::string s = "[";
  for (size_t i = 0; i < lo.size(); ++i)
    s += (i ? ", " : "") + std::to_string(lo[i]) + ":" + std::to_string(hi[i]);
  return s + "]";
}

Box intersect(const Box& a, const Box& b) {
  Box r;
  r.lo.resize(a.lo.size());
  r.hi.resize(a.lo.size());
  for (size_t i = 0; i < a.lo.size(); ++i) {
    r.lo[i] = std::max(a.lo[i], b.lo[i]);
    r.hi[i] = std::max(r.lo[i], std::min(a.hi[i], b.hi[i]));
  }
  return r;
}

std::vector<Box> device_boxes(const Sharding& s, const Shape& shape, std::source_location loc) {
  try {
    s.check(shape, loc);
  } catch (const ShardingError& e) {
    throw ShardingError("device_boxes: " + e.message(), loc);
  }
  const Mesh& mesh = *s.mesh;
  std::vector<Box> boxes;
  boxes.reserve(mesh.num_devices());
  for (size_t p = 0; p < mesh.num_devices(); ++p) {
    std::vector<int64_t> coords = mesh.coords_of(p);
    Box b;
    b.lo.resize(shape.size());
    b.hi.resize(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t index = 0, n = 1;
      for (auto& a : s.dims[d].axes) {
        int64_t k = a.resolved_size(mesh);
        index = index * k + a.coord(mesh, coords);
        n *= k;
      }
      int64_t dim = shape[d];
      int64_t c = (dim + n - 1) / n;
      b.lo[d] = std::min(index * c, dim);
      b.hi[d] = std::min((index + 1) * c, dim);
    }
    boxes.push_back(std::move(b));
  }
  return boxes;
}

}  // namespace minijax
