// minijax tests: an Array's elements as a vector for value checks, shared by the test folders.
// Owns vals(): the f32 element list that the comparisons in these tests start from.
#pragma once

#include <minijax/minijax.h>
#include <vector>

namespace minijax_test {

/// The elements of `a` (any shape, any dtype) converted to f32, in row-major order.
inline std::vector<float> vals(const mj::Array& a) {
  mj::Array f = mj::astype(a, mj::f32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.size());
}

}  // namespace minijax_test
