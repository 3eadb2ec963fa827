// Test helpers shared by the SPMD tests: the (4, 2) mesh, specs as Shardings, ramp inputs, and
// the cutting of a global array into each device's block (sharding/boxes.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/lax.h"
#include "sharding/boxes.h"
#include "sharding/partition_spec.h"

namespace minijax::testing {

/// Mesh (4, 2) over devices 0..7 in natural order, axes named `names` ("x", "y" by default).
inline std::shared_ptr<const Mesh> mesh42(std::vector<std::string> names = {"x", "y"}) {
  return std::make_shared<const Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, Shape{4, 2},
                                      std::move(names));
}

/// The Sharding of `spec` on `m` for an array of rank `rank` (device memory).
inline Sharding named(const std::shared_ptr<const Mesh>& m, const P& spec, int64_t rank) {
  return to_sharding(NamedSharding{m, spec, MemoryKind::device}, rank);
}

/// f32 array of `shape` whose element k (row-major) is k * scale + offset.
inline Array ramp(Shape shape, float scale = 1, float offset = 0) {
  Array a = Array::allocate(ShapedArray{shape, DType::f32});
  float* p = a.mutable_data<float>();
  for (int64_t i = 0; i < a.aval().size(); ++i) p[i] = float(i) * scale + offset;
  return a;
}

/// Each device's block of `global` under `s`, in mesh order.
inline std::vector<Array> cut(const Array& global, const Sharding& s) {
  std::vector<Array> out;
  for (auto& b : device_boxes(s, global.shape())) out.push_back(lax::slice(global, b.lo, b.hi));
  return out;
}

}  // namespace minijax::testing
