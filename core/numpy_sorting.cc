// minijax numpy-level sorting (jax.numpy names) over lax::sort.
// Owns argsort.
#include <string>

#include "core/lax.h"
#include "core/numpy.h"

namespace minijax {

Array argsort(const Array& x, int64_t axis, bool stable, bool descending, SL loc) {
  const int64_t n = x.ndim();
  if (axis < -n || axis >= n)
    throw ShapeError("argsort: axis " + std::to_string(axis) + " is out of bounds for an array of shape " +
                         shape_str(x.shape()) + " (rank " + std::to_string(n) + ")",
                     loc);
  const int64_t d = axis < 0 ? axis + n : axis;
  Array arr = x;
  Array iota = lax::iota(DType::i32, x.shape(), d, loc);
  // jnp.argsort: a stable descending sort sorts the reversed array (and indices), so that equal
  // elements, reversed back at the end, keep their input order.
  if (descending && stable) {
    arr = lax::rev(arr, {d}, loc);
    iota = lax::rev(iota, {d}, loc);
  }
  Array indices = lax::sort_key_val(arr, iota, d, stable, loc).second;
  return descending ? lax::rev(indices, {d}, loc) : indices;
}

}  // namespace minijax
