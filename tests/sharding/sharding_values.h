// minijax sharding tests: the mesh and the input values the sharded-program tests share.
// Owns mesh42 (a (4, 2) mesh of devices 0..7, axes "x" and "y") and ramp (f32 k * scale).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace sharding_values {

/// Mesh (4, 2) over devices 0..7 with axes "x" and "y".
inline std::shared_ptr<const mj::Mesh> mesh42() {
  return std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, mj::Shape{4, 2},
                                          std::vector<std::string>{"x", "y"});
}

/// f32 array of `shape` with element k (row-major) = scale * k.
inline mj::Array ramp(mj::Shape shape, float scale) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return mj::reshape(mj::arange(0, double(n), 1, mj::DType::f32) * scale, shape);
}

}  // namespace sharding_values
