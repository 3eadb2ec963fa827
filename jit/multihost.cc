// minijax arrays over several processes: make_array_from_callback / _single_device_arrays /
// _process_local_data (each process places only its own shards) and process_allgather.
#include "jit/multihost.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/device.h"
#include "core/distributed.h"
#include "core/errors.h"
#include "core/numpy.h"
#include "jit/jit.h"
#include "sharding/boxes.h"
#include "sharding/sharded_array.h"

namespace minijax {
namespace {

std::string this_process() { return "process " + std::to_string(process_index()); }

ShardIndex index_of(const Box& b) {
  ShardIndex ix;
  for (size_t d = 0; d < b.lo.size(); ++d) ix.push_back({b.lo[d], b.hi[d]});
  return ix;
}

Sharding checked_sharding(const NamedSharding& ns, const Shape& shape, const char* fn,
                          std::source_location loc) {
  try {
    Sharding s = to_sharding(ns, int64_t(shape.size()), loc);
    s.check(shape, loc);
    return s;
  } catch (const ShardingError& e) {
    throw ShardingError(std::string(fn) + " of a " + shape_str(shape) + " array: " + e.message(), loc);
  }
}

std::vector<size_t> local_positions(const Mesh& m, const char* fn, std::source_location loc) {
  std::vector<size_t> ps;
  for (size_t p = 0; p < m.num_devices(); ++p)
    if (detail::is_local_device(m.device_ids[p])) ps.push_back(p);
  if (ps.empty())
    throw ValueError(std::string(fn) + ": " + this_process() + " drives none of the devices of " + m.str(),
                     loc);
  return ps;
}

// An unsharded copy of a value that this process holds whole.
Array copy_of(const Array& x, std::source_location loc) {
  ShapedArray a = x.aval();
  a.weak_type = false;
  a.memory_kind = MemoryKind::device;
  Array out = Array::empty(a);
  if (a.nbytes() > 0) std::memcpy(const_cast<void*>(out.raw_data(loc)), x.raw_data(loc), size_t(a.nbytes()));
  return out;
}

}  // namespace

Array make_array_from_callback(const Shape& shape, const NamedSharding& sharding,
                               const std::function<Array(const ShardIndex&)>& cb, std::source_location loc) {
  const char* fn = "make_array_from_callback";
  const Sharding s = checked_sharding(sharding, shape, fn, loc);
  const Mesh& m = *s.mesh;
  const std::vector<Box> boxes = device_boxes(s, shape, loc);
  std::vector<Array> shards(m.num_devices());
  std::optional<DType> dtype;
  for (size_t p : local_positions(m, fn, loc)) {
    Array a = cb(index_of(boxes[p])).concrete(loc, "the callback's result");
    if (a.shape() != boxes[p].extent())
      throw ShapeError(std::string(fn) + ": the callback returned a " + a.aval().str() +
                           " array for the box " + boxes[p].str() + " of device " +
                           std::to_string(m.device_ids[p]) + " (" + this_process() + "), whose shape is " +
                           shape_str(boxes[p].extent()),
                       loc);
    if (dtype && a.dtype() != *dtype)
      throw TypeError(std::string(fn) + ": the callback returned " + dtype_name(a.dtype()) + " for device " +
                          std::to_string(m.device_ids[p]) + " but " + dtype_name(*dtype) + " before",
                      loc);
    dtype = a.dtype();
    shards[p] = a;
  }
  ShapedArray global;
  global.shape = shape;
  global.dtype = *dtype;
  return make_sharded_array(global, s, std::move(shards), loc);
}

Array make_array_from_single_device_arrays(const Shape& shape, const NamedSharding& sharding,
                                           const std::vector<Array>& arrays, std::source_location loc) {
  const char* fn = "make_array_from_single_device_arrays";
  const Sharding s = checked_sharding(sharding, shape, fn, loc);
  const Mesh& m = *s.mesh;
  const std::vector<Box> boxes = device_boxes(s, shape, loc);
  const std::vector<size_t> local = local_positions(m, fn, loc);
  if (arrays.size() != local.size())
    throw ValueError(std::string(fn) + ": " + std::to_string(arrays.size()) + " arrays, but " +
                         this_process() + " drives " + std::to_string(local.size()) + " devices of " +
                         m.str() + " (one array per device, in mesh order)",
                     loc);
  std::vector<Array> shards(m.num_devices());
  for (size_t k = 0; k < local.size(); ++k) {
    const size_t p = local[k];
    const Array a = arrays[k].concrete(loc, "a single-device array");
    if (a.shape() != boxes[p].extent())
      throw ShapeError(std::string(fn) + ": array " + std::to_string(k) + " is " + a.aval().str() +
                           " but device " + std::to_string(m.device_ids[p]) + " (" + this_process() +
                           ") holds the box " + boxes[p].str() + " of shape " + shape_str(boxes[p].extent()),
                       loc);
    if (a.dtype() != arrays[0].dtype())
      throw TypeError(std::string(fn) + ": array " + std::to_string(k) + " is " + dtype_name(a.dtype()) +
                          ", array 0 " + dtype_name(arrays[0].dtype()),
                      loc);
    shards[p] = a;
  }
  ShapedArray global;
  global.shape = shape;
  global.dtype = arrays[0].dtype();
  return make_sharded_array(global, s, std::move(shards), loc);
}

Array make_array_from_process_local_data(const NamedSharding& sharding, const Array& local_in,
                                         std::optional<Shape> global_shape, std::source_location loc) {
  const char* fn = "make_array_from_process_local_data";
  const Array local = local_in.concrete(loc, "process-local data");
  const size_t rank = size_t(local.ndim());
  Sharding s = to_sharding(sharding, int64_t(rank), loc);
  const Mesh& m = *s.mesh;
  const std::vector<size_t> mine = local_positions(m, fn, loc);
  Shape G;
  if (global_shape) {
    G = *global_shape;
  } else {
    // One element per partition of each dim: a device's box there is its partition's index.
    Shape parts(rank);
    for (size_t d = 0; d < rank; ++d) parts[d] = s.dims[d].num_shards(m);
    const std::vector<Box> fb = device_boxes(s, parts, loc);
    G.resize(rank);
    for (size_t d = 0; d < rank; ++d) {
      std::set<int64_t> held;
      for (size_t p : mine) held.insert(fb[p].lo[d]);
      const int64_t k = parts[d], h = int64_t(held.size());
      if ((local.shape()[d] * k) % h != 0)
        throw ValueError(std::string(fn) + ": dim " + std::to_string(d) + " of the local " +
                             local.aval().str() + " data: " + std::to_string(h) + " of its " +
                             std::to_string(k) + " partitions are on " + this_process() +
                             ", which does not divide; give global_shape",
                         loc);
      G[d] = local.shape()[d] * k / h;
    }
  }
  s = checked_sharding(sharding, G, fn, loc);
  const std::vector<Box> boxes = device_boxes(s, G, loc);
  Shape lo = boxes[mine[0]].lo, hi = boxes[mine[0]].hi;
  std::set<std::pair<Shape, Shape>> distinct;
  int64_t volume = 0;
  for (size_t p : mine) {
    for (size_t d = 0; d < rank; ++d) {
      lo[d] = std::min(lo[d], boxes[p].lo[d]);
      hi[d] = std::max(hi[d], boxes[p].hi[d]);
    }
    if (distinct.insert({boxes[p].lo, boxes[p].hi}).second) volume += boxes[p].volume();
  }
  Shape block(rank);
  for (size_t d = 0; d < rank; ++d) block[d] = hi[d] - lo[d];
  if (volume != shape_size(block))
    throw ValueError(std::string(fn) + ": the devices of " + this_process() + " hold boxes of the global " +
                         shape_str(G) + " array under " + s.str() + " that do not form one block",
                     loc);
  if (local.shape() != block)
    throw ShapeError(std::string(fn) + ": " + this_process() + "'s local data is " + local.aval().str() +
                         ", but its devices hold the block " + Box{lo, hi}.str() + " (shape " +
                         shape_str(block) + ") of the global " + shape_str(G) + " array under " + s.str(),
                     loc);
  const size_t isz = itemsize(local.dtype());
  const void* src = local.raw_data(loc);
  std::vector<Array> shards(m.num_devices());
  for (size_t p : mine) {
    ShapedArray a = local.aval();
    a.weak_type = false;
    a.shape = boxes[p].extent();
    Array piece = Array::empty(a);
    copy_region(src, lo, hi, const_cast<void*>(piece.raw_data(loc)), boxes[p].lo, boxes[p].hi, boxes[p].lo,
                boxes[p].hi, isz);
    shards[p] = piece;
  }
  ShapedArray global = local.aval();
  global.weak_type = false;
  global.shape = G;
  return make_sharded_array(global, s, std::move(shards), loc);
}

Array multihost_utils::process_allgather(const Array& x, bool tiled, std::source_location loc) {
  const Array c = x.concrete(loc, "process_allgather's operand");
  if (c.is_sharded()) {
    // Decided alike on every process (a process holding the whole array still joins the gather
    // the others need): a mesh of this process's devices only reads locally.
    if (c.is_fully_addressable(loc)) return copy_of(c, loc);
    const ArraySharding as = c.sharding(loc);
    const NamedSharding replicated(as.sharding.mesh, P(), c.memory_kind());
    auto gather = jit([replicated](const Array& a) { return with_sharding_constraint(a, replicated); },
                      JitOptions::builder().name("process_allgather").out_shardings({replicated}).build());
    return copy_of(gather(c), loc);
  }
  const int np = process_count();
  Shape stacked = c.shape();
  stacked.insert(stacked.begin(), 1);
  Array mine = reshape(copy_of(c, loc), stacked, loc);
  Array all;
  if (np == 1) {
    all = mine;
  } else {
    const int l = num_devices(loc) / np;
    std::vector<int> firsts;
    for (int p = 0; p < np; ++p) firsts.push_back(p * l);
    auto mesh = std::make_shared<const Mesh>(firsts, Shape{np}, std::vector<std::string>{"processes"}, loc);
    Shape global = stacked;
    global[0] = np;
    all = process_allgather(make_array_from_process_local_data(NamedSharding(mesh, P("processes")), mine,
                                                               global, loc),
                            false, loc);
  }
  if (!tiled) return all;
  if (c.ndim() == 0)
    throw ValueError(
        "process_allgather(tiled=true) of a rank-0 value: there is no dim 0 to concatenate along", loc);
  Shape cat = c.shape();
  cat[0] *= np;
  return reshape(all, cat, loc);
}

}  // namespace minijax
