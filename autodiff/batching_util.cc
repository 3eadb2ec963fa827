// minijax batching helpers (see batching_util.h).
// Owns the batch-dimension bookkeeping shared by every primitive's vmap rule.
#include "autodiff/batching_util.h"

#include <algorithm>

#include "core/lax.h"
#include "core/trace.h"

namespace minijax {

Array move_batch_dim(const Array& x, int64_t from, int64_t to) {
  const int64_t n = x.ndim();
  if (from < 0 || from >= n || to < 0 || to >= n)
    throw ValueError("move_batch_dim: dims " + std::to_string(from) + " -> " + std::to_string(to) +
                     " out of range for a value of shape " + shape_str(x.shape()));
  if (from == to) return x;
  std::vector<int64_t> perm;
  perm.reserve(size_t(n));
  for (int64_t i = 0; i < n; ++i)
    if (i != from) perm.push_back(i);
  perm.insert(perm.begin() + to, from);
  return lax::transpose(x, perm);
}

Array materialize_batch(const Array& x, int64_t dim, int64_t size, int64_t to) {
  if (dim != kNotMapped) {
    if (dim < 0 || dim >= x.ndim() || x.shape()[size_t(dim)] != size)
      throw ValueError("materialize_batch: batch dim " + std::to_string(dim) + " of a value of shape " +
                       shape_str(x.shape()) + " does not have size " + std::to_string(size));
    return move_batch_dim(x, dim, to);
  }
  const int64_t n = x.ndim();
  if (to < 0 || to > n)
    throw ValueError("materialize_batch: position " + std::to_string(to) +
                     " out of range for a new dim of a value of shape " + shape_str(x.shape()));
  Shape out = x.shape();
  out.insert(out.begin() + to, size);
  std::vector<int64_t> bdims;
  bdims.reserve(size_t(n));
  for (int64_t i = 0; i < n; ++i) bdims.push_back(i < to ? i : i + 1);
  return lax::broadcast_in_dim(x, out, bdims);
}

int64_t batch_axis_size(const std::vector<Array>& args, const std::vector<int64_t>& dims) {
  if (args.size() != dims.size())
    throw ValueError("batching: " + std::to_string(args.size()) + " operands but " +
                     std::to_string(dims.size()) + " batch dims");
  int64_t size = -1;
  bool mismatch = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (dims[i] == kNotMapped) continue;
    if (dims[i] < 0 || dims[i] >= args[i].ndim())
      throw ValueError("batching: batch dim " + std::to_string(dims[i]) + " of operand " +
                       std::to_string(i) + " out of range for shape " + shape_str(args[i].shape()));
    int64_t s = args[i].shape()[size_t(dims[i])];
    if (size < 0) size = s;
    else if (s != size) mismatch = true;
  }
  if (size < 0) throw ValueError("batching: no operand is batched");
  if (mismatch) {
    std::string msg = "batching: operands have inconsistent batch sizes:";
    for (size_t i = 0; i < args.size(); ++i)
      if (dims[i] != kNotMapped)
        msg += " operand " + std::to_string(i) + " " + shape_str(args[i].shape()) + " at dim " +
               std::to_string(dims[i]) + ";";
    throw ValueError(msg);
  }
  return size;
}

std::pair<std::vector<Array>, int64_t> batch_to_front(const std::vector<Array>& args,
                                                      const std::vector<int64_t>& dims,
                                                      bool materialize_unmapped) {
  const int64_t size = batch_axis_size(args, dims);
  std::vector<Array> out;
  out.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (dims[i] == kNotMapped && !materialize_unmapped) out.push_back(args[i]);
    else out.push_back(materialize_batch(args[i], dims[i], size, 0));
  }
  return {std::move(out), size};
}

int64_t batched_axis(int64_t axis, int64_t bdim) {
  return (bdim == kNotMapped || axis < bdim) ? axis : axis + 1;
}

std::vector<int64_t> batched_axes(const std::vector<int64_t>& axes, int64_t bdim) {
  std::vector<int64_t> r;
  r.reserve(axes.size());
  for (int64_t a : axes) r.push_back(batched_axis(a, bdim));
  return r;
}

int64_t bdim_after_removing(int64_t bdim, const std::vector<int64_t>& removed) {
  if (bdim == kNotMapped) return kNotMapped;
  int64_t before = 0;
  for (int64_t a : removed) {
    if (a == bdim) throw ValueError("bdim_after_removing: the batch dim itself is removed");
    if (a < bdim) ++before;
  }
  return bdim - before;
}

BatchRule elementwise_batch_rule(const std::string& name) {
  return [name](const std::vector<Array>& args, const std::vector<int64_t>& dims,
                const Params& params) -> std::pair<std::vector<Array>, std::vector<int64_t>> {
    const Primitive& p = primitive(name);
    const int64_t size = batch_axis_size(args, dims);
    // Fast path: every operand batched at the same dim with the same shape.
    bool aligned = true;
    for (size_t i = 0; i < args.size(); ++i)
      if (dims[i] != dims[0] || args[i].shape() != args[0].shape()) aligned = false;
    if (aligned) {
      auto outs = minijax::bind(p, args, params);
      return {outs, std::vector<int64_t>(outs.size(), dims[0])};
    }
    // The element output shape: the operand element shape of the highest rank.
    Shape elem;
    for (size_t i = 0; i < args.size(); ++i) {
      int64_t r = args[i].ndim() - (dims[i] == kNotMapped ? 0 : 1);
      if (r > int64_t(elem.size())) {
        elem = args[i].shape();
        if (dims[i] != kNotMapped) elem.erase(elem.begin() + dims[i]);
      }
    }
    Shape full = elem;
    full.insert(full.begin(), size);
    std::vector<Array> moved;
    moved.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      Array x = materialize_batch(args[i], dims[i], size, 0);
      if (x.shape() != full) {
        // A rank-0 element operand ([size] now) broadcast against the element shape.
        if (x.ndim() != 1)
          throw ValueError("batching " + name + ": operand " + std::to_string(i) + " of shape " +
                           shape_str(x.shape()) + " cannot be broadcast to " + shape_str(full));
        x = lax::broadcast_in_dim(x, full, {0});
      }
      moved.push_back(x);
    }
    auto outs = minijax::bind(p, moved, params);
    return {outs, std::vector<int64_t>(outs.size(), 0)};
  };
}

}  // namespace minijax
