// Test helpers for the resharding tests: meshes, specs, and the tests' own ownership rule
// (which elements each device holds), written independently of sharding/boxes.
#pragma once
#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "sharding/partition_spec.h"
#include "sharding/sharding.h"

namespace minijax::testing {

namespace mj = minijax;
using minijax::AxisRef;
using minijax::Sharding;

inline std::shared_ptr<const mj::Mesh> make_mesh(std::vector<int> ids, mj::Shape shape,
                                          std::vector<std::string> names) {
  return std::make_shared<const mj::Mesh>(std::move(ids), std::move(shape), std::move(names));
}

inline std::vector<int> iota(int n) {
  std::vector<int> v(size_t(n), 0);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

using Spec = std::vector<std::vector<std::string>>;  // per dim, axes major first

inline Sharding from_spec(const std::shared_ptr<const mj::Mesh>& mesh, const Spec& spec) {
  std::vector<mj::PDim> dims;
  for (const auto& d : spec) dims.push_back(mj::PDim(d));
  return mj::to_sharding(mj::NamedSharding{mesh, mj::P(dims)}, int64_t(spec.size()));
}

// The test's own ownership rule (not device_boxes): along each dim the device's shard index is
// the mixed-radix number of its (sub-)axis coordinates, major first; a sub-axis "x":(pre)size of
// an axis of size n has coordinate (c / (n / (pre * size))) % size; shard size ceil(dim / count).
inline std::vector<std::pair<int64_t, int64_t>> own_ranges(const Sharding& s, const mj::Shape& shape,
                                                    size_t pos) {
  const mj::Mesh& m = *s.mesh;
  // Row-major coordinates of position pos, computed here.
  std::vector<int64_t> c(m.shape.size());
  size_t rest = pos;
  for (size_t a = m.shape.size(); a-- > 0;) {
    c[a] = int64_t(rest % size_t(m.shape[a]));
    rest /= size_t(m.shape[a]);
  }
  std::vector<std::pair<int64_t, int64_t>> r;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t idx = 0, count = 1;
    for (const AxisRef& ax : s.dims[d].axes) {
      size_t a = 0;
      while (m.axis_names[a] != ax.name) ++a;
      const int64_t n = m.shape[a];
      const int64_t size = ax.size == 0 ? n : ax.size;
      const int64_t coord = ax.size == 0 ? c[a] : (c[a] / (n / (ax.pre_size * size))) % size;
      idx = idx * size + coord;
      count *= size;
    }
    const int64_t len = (shape[d] + count - 1) / count;
    r.emplace_back(std::min(idx * len, shape[d]), std::min((idx + 1) * len, shape[d]));
  }
  return r;
}

// Flat global indices held by a device, as a membership vector.
inline std::vector<char> own_set(const std::vector<std::pair<int64_t, int64_t>>& r,
                          const mj::Shape& shape) {
  const int64_t total = mj::shape_size(shape);
  std::vector<char> in(size_t(total), 0);
  for (int64_t e = 0; e < total; ++e) {
    int64_t rest = e;
    bool ok = true;
    for (size_t d = shape.size(); d-- > 0 && ok;) {
      const int64_t i = rest % shape[d];
      rest /= shape[d];
      ok = i >= r[d].first && i < r[d].second;
    }
    in[size_t(e)] = ok;
  }
  return in;
}

// The elements of the global arange (value = flat index) inside ranges r, row-major.
inline std::vector<int32_t> slice_arange(const std::vector<std::pair<int64_t, int64_t>>& r,
                                  const mj::Shape& shape) {
  std::vector<char> in = own_set(r, shape);
  std::vector<int32_t> v;
  for (size_t e = 0; e < in.size(); ++e)
    if (in[e]) v.push_back(int32_t(e));
  return v;
}

inline mj::Shape extent(const std::vector<std::pair<int64_t, int64_t>>& r) {
  mj::Shape s;
  for (auto [lo, hi] : r) s.push_back(hi - lo);
  return s;
}

}  // namespace minijax::testing
