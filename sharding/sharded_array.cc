// minijax sharded Arrays: building them from per-device shards, slicing/resharding into shards,
// Array::sharding(), and the user entry points device_put(x, sharding) / with_sharding_constraint.
#include "sharding/sharded_array.h"

#include <cstring>

#include "core/device.h"
#include "core/lax.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/memory_ops.h"
#include "sharding/boxes.h"
#include "sharding/plan_reshard.h"
#include "sharding/sharding_param.h"

namespace minijax {

bool ShardingParam::equals(const ParamObject& o) const {
  auto* p = dynamic_cast<const ShardingParam*>(&o);
  return p && p->s_ == s_;
}

ParamObjectPtr sharding_param(Sharding s) { return std::make_shared<ShardingParam>(std::move(s)); }

const Sharding& sharding_of_param(const ParamObjectPtr& p, const char* what) {
  auto* sp = dynamic_cast<const ShardingParam*>(p.get());
  if (!sp)
    throw ValueError(std::string(what) + ": expected a sharding parameter, got " +
                     (p ? p->str() : std::string("None")));
  return sp->sharding();
}

const NamedSharding& ArraySharding::named_sharding(std::source_location loc) const {
  if (!named && !sharding.mesh)
    throw ShardingError(
        "ArraySharding::named_sharding: this ArraySharding has no mesh (default-constructed; "
        "Array::sharding() returns a complete one)",
        loc);
  if (!named)
    throw ShardingError("the sharding " + sharding.str() + " on " + sharding.mesh->str() +
                            " has no PartitionSpec form (sub-axes, priorities or open dims with "
                            "axes); use .sharding",
                        loc);
  return *named;
}

const Mesh& ArraySharding::mesh(std::source_location loc) const {
  if (!sharding.mesh)
    throw ShardingError(
        "ArraySharding::mesh: this ArraySharding has no mesh (default-constructed; "
        "Array::sharding() returns a complete one)",
        loc);
  return *sharding.mesh;
}

std::string ArraySharding::str() const {
  if (named) return named->str();
  if (!sharding.mesh) return "Sharding(mesh=None, " + sharding.str() + ")";
  return "Sharding(mesh=" + sharding.mesh->str() + ", " + sharding.str() + ")";
}

bool ArraySharding::operator==(const NamedSharding& o) const {
  if (!named || !o.mesh) return false;
  return *named->mesh == *o.mesh && named->spec.equivalent(o.spec) && named->memory_kind == o.memory_kind;
}

namespace {

// The stored form of a sharding: every dim closed (an open dim's axes are what it holds).
Sharding closed(Sharding s) {
  for (auto& d : s.dims) d.closed = true;
  return s;
}

std::string where(const Sharding& s, const Shape& shape) {
  return "sharding " + s.str() + " of a " + shape_str(shape) + " array on " +
         (s.mesh ? s.mesh->str() : std::string("no mesh"));
}

void check_reduced(const Sharding& s, const Shape& shape, const char* what, std::source_location loc) {
  try {
    s.check(shape, loc);
  } catch (const ShardingError& e) {
    throw ShardingError(std::string(what) + ": " + e.message(), loc);
  }
  if (!s.unreduced.empty())
    throw ShardingError(std::string(what) + ": the " + where(s, shape) +
                            " has unreduced axes; a concrete array holds reduced values (reduce "
                            "the partial sums first, e.g. with all_reduce)",
                        loc);
}

// A fresh buffer of `kind` on `device` holding region [0, extent) of `a`'s elements.
std::shared_ptr<Buffer> copy_leading(const Array& a, const Shape& extent, MemoryKind kind, int device) {
  size_t isz = itemsize(a.dtype());
  auto buf = std::make_shared<Buffer>(size_t(shape_size(extent)) * isz, kind, device);
  std::vector<int64_t> zero(extent.size(), 0);
  copy_region(a.raw_data(), zero, a.shape(), buf->data(), zero, extent, zero, extent, isz);
  return buf;
}

Array shard_array(const ShapedArray& global, const Shape& extent, std::shared_ptr<Buffer> buf) {
  ShapedArray a = global;
  a.shape = extent;
  return Array::from_buffer(a, std::move(buf));
}

// Whether some device of `m` is driven by another process.
bool spans_processes(const Mesh& m) {
  for (int d : m.device_ids)
    if (!detail::is_local_device(d)) return true;
  return false;
}

// c's own shards by mesh position (its sharding on `mesh`), an empty Array where another
// process holds the shard; moved to `kind` when it differs.
std::vector<Array> shards_by_position(const ConcreteArray& c, const Mesh& mesh, const ShapedArray& aval,
                                      MemoryKind kind) {
  std::vector<Array> out(mesh.num_devices());
  for (auto& sh : c.shards()) {
    size_t p = 0;
    while (p < mesh.num_devices() && mesh.device_ids[p] != sh.device_id) ++p;
    ShapedArray a = aval;
    a.weak_type = false;
    a.shape = sh.extent();
    a.memory_kind = kind;
    Array piece = Array::from_buffer(a, sh.buffer);
    if (sh.buffer->memory_kind() != kind)
      piece = Array::from_buffer(a, copy_leading(piece, sh.extent(), kind, sh.device_id));
    if (p < out.size()) out[p] = std::move(piece);
  }
  return out;
}

}  // namespace

Array make_sharded_array(const ShapedArray& global, const Sharding& s_in, std::vector<Array> shards,
                         std::source_location loc) {
  check_reduced(s_in, global.shape, "make_sharded_array", loc);
  Sharding s = closed(s_in);
  const Mesh& mesh = *s.mesh;
  if (shards.size() != mesh.num_devices())
    throw ShardingError("make_sharded_array: " + std::to_string(shards.size()) + " shards for the " +
                            where(s, global.shape) + " (" + std::to_string(mesh.num_devices()) + " devices)",
                        loc);
  std::vector<Box> boxes = device_boxes(s, global.shape, loc);
  std::vector<StoredShard> stored;
  stored.reserve(shards.size());
  for (size_t p = 0; p < shards.size(); ++p) {
    const Array& a = shards[p];
    int dev = mesh.device_ids[p];
    if (!detail::is_local_device(dev)) continue;  // another process holds it
    if (!a.defined())
      throw ValueError("make_sharded_array: shard " + std::to_string(p) + " (device " + std::to_string(dev) +
                           ", of this process) is an empty Array",
                       loc);
    if (a.dtype() != global.dtype)
      throw TypeError("make_sharded_array: shard " + std::to_string(p) + " is " + a.aval().str() +
                          " but the array is " + global.str(),
                      loc);
    Shape ext = boxes[p].extent();
    bool exact = a.shape() == ext, padded = a.ndim() == int64_t(ext.size());
    for (size_t i = 0; padded && i < ext.size(); ++i) padded = a.shape()[i] >= ext[i];
    if (!padded)
      throw ShapeError("make_sharded_array: shard " + std::to_string(p) + " (device " + std::to_string(dev) +
                           ") is " + a.aval().str() + " but its box " + boxes[p].str() + " under the " +
                           where(s, global.shape) + " is " + shape_str(ext),
                       loc);
    std::shared_ptr<Buffer> buf;
    const ConcreteArray& c = a.concrete_impl(loc);
    // Unsharded shards are taken as they are, pending or not (a compiled call's outputs).
    std::shared_ptr<Buffer> own = c.buffer_no_wait();
    if (exact && own && own->memory_kind() == s.memory_kind && own->device_id() == dev && !own->donated())
      buf = std::move(own);
    else buf = copy_leading(a, ext, s.memory_kind, dev);
    stored.push_back(StoredShard{dev, boxes[p].lo, boxes[p].hi, std::move(buf)});
  }
  ShapedArray aval = global;
  aval.memory_kind = s.memory_kind;
  return Array(std::make_shared<ConcreteArray>(aval, std::move(stored), sharding_param(s)));
}

std::vector<Array> local_shards(const Array& x_in, const Sharding& s_in, std::source_location loc) {
  Array x = x_in.concrete(loc, "the shards of a concrete array");
  check_reduced(s_in, x.shape(), "local_shards", loc);
  Sharding s = closed(s_in);
  const Mesh& mesh = *s.mesh;
  const ConcreteArray& c = x.concrete_impl(loc);
  std::vector<Box> dst = device_boxes(s, x.shape(), loc);
  ShapedArray global = x.aval();
  global.weak_type = false;
  global.memory_kind = s.memory_kind;
  const size_t isz = itemsize(x.dtype());
  std::vector<Array> out;
  out.reserve(dst.size());

  const bool spans = spans_processes(mesh) ||
                     (c.is_sharded() &&
                      spans_processes(*sharding_of_param(c.sharding(), "a sharded array's sharding").mesh));
  if (c.is_sharded() && spans) {
    const Sharding& src = sharding_of_param(c.sharding(), "a sharded array's sharding");
    Sharding same = closed(src);
    same.memory_kind = s.memory_kind;
    if (*src.mesh == mesh && same == s) return shards_by_position(c, mesh, x.aval(), s.memory_kind);
    if (!c.covers_all())
      throw ShardingError(
          "local_shards: the " + where(src, x.shape()) +
              " spans processes and this process does not hold all of it; moving it to the " +
              where(s, x.shape()) +
              " takes a compiled call (jit with that in_shardings, or with_sharding_constraint "
              "inside one)",
          loc);
  }
  if (!c.is_sharded() || spans) {  // slice the boxes out of the whole array
    std::vector<int64_t> zero(size_t(x.ndim()), 0);
    const void* src = x.raw_data(loc);
    for (size_t p = 0; p < dst.size(); ++p) {
      if (!detail::is_local_device(mesh.device_ids[p])) {  // another process makes that shard
        out.emplace_back();
        continue;
      }
      Shape ext = dst[p].extent();
      auto buf = std::make_shared<Buffer>(size_t(shape_size(ext)) * isz, s.memory_kind, mesh.device_ids[p]);
      copy_region(src, zero, x.shape(), buf->data(), dst[p].lo, dst[p].hi, dst[p].lo, dst[p].hi, isz);
      out.push_back(shard_array(global, ext, std::move(buf)));
    }
    return out;
  }

  const Sharding& src = sharding_of_param(c.sharding(), "a sharded array's sharding");
  std::vector<Array> src_shards;
  for (auto& sh : c.shards()) {
    ShapedArray a = x.aval();
    a.weak_type = false;
    a.shape = sh.extent();
    src_shards.push_back(Array::from_buffer(a, sh.buffer));
  }
  std::vector<Array> moved;
  if (*src.mesh == mesh) {
    Sharding src_k = src, dst_k = s;
    dst_k.memory_kind = src_k.memory_kind;  // the planner moves data; the kind is applied below
    if (src_k == dst_k) {
      moved = src_shards;
    } else {
      ShapedArray aval = x.aval();
      aval.weak_type = false;
      ReshardPlan plan = plan_reshard(src_k, dst_k, aval, loc);
      moved = execute_reshard(plan, src_shards);
    }
    for (size_t p = 0; p < moved.size(); ++p) {
      Shape ext = dst[p].extent();
      // Not waited for: a compiled call waits for its inputs on the device itself.
      std::shared_ptr<Buffer> m = moved[p].concrete_impl(loc).buffer_no_wait();
      if (m->memory_kind() == s.memory_kind && m->device_id() == mesh.device_ids[p])
        out.push_back(shard_array(global, ext, std::move(m)));
      else
        out.push_back(
            shard_array(global, ext, copy_leading(moved[p], ext, s.memory_kind, mesh.device_ids[p])));
    }
    return out;
  }
  // Another mesh: each target box is assembled from the source shards that intersect it.
  for (size_t p = 0; p < dst.size(); ++p) {
    Shape ext = dst[p].extent();
    auto buf = std::make_shared<Buffer>(size_t(shape_size(ext)) * isz, s.memory_kind, mesh.device_ids[p]);
    for (auto& sh : c.shards()) {
      sh.buffer->ready().wait();
      if (sh.buffer->donated())
        throw ValueError("local_shards: a shard of " + global.str() +
                             " was donated to an earlier call and cannot be read",
                         loc);
      Box r = intersect(Box{sh.start, sh.stop}, dst[p]);
      if (r.volume() == 0) continue;
      copy_region(sh.buffer->data(), sh.start, sh.stop, buf->data(), dst[p].lo, dst[p].hi, r.lo, r.hi, isz);
    }
    out.push_back(shard_array(global, ext, std::move(buf)));
  }
  return out;
}

namespace {

Sharding named_to_sharding(const NamedSharding& ns, const Array& x, const char* what,
                           std::source_location loc) {
  try {
    return to_sharding(ns, x.ndim(), loc);
  } catch (const ShardingError& e) {
    throw ShardingError(std::string(what) + " of a " + x.aval().str() + " array: " + e.message(), loc);
  }
}

Array constrain(const Array& x, const Sharding& s, const char* what, std::source_location loc) {
  try {
    s.check(x.shape(), loc);
  } catch (const ShardingError& e) {
    throw ShardingError(std::string(what) + " of a " + x.aval().str() + " array: " + e.message(), loc);
  }
  // Traced: the memory move is its own device_put (what memory scheduling reads). Concrete: the
  // constraint's eager implementation moves the shards itself (a sharded x is never gathered).
  Array y = x;
  if (x.is_tracer() && y.memory_kind() != s.memory_kind) y = lax::device_put(y, s.memory_kind, loc);
  ShardingConstraintParams c;
  c.sharding = sharding_param(s);
  return minijax::bind1(ShardingConstraintParams::primitive(), {y}, c.to_params(), loc);
}

}  // namespace

Array device_put(const Array& x, const NamedSharding& s, std::source_location loc) {
  return constrain(x, named_to_sharding(s, x, __func__, loc), __func__, loc);
}

Array device_put(const Array& x, const Sharding& s, std::source_location loc) {
  return constrain(x, s, __func__, loc);
}

Array with_sharding_constraint(const Array& x, const NamedSharding& s, std::source_location loc) {
  return constrain(x, named_to_sharding(s, x, "with_sharding_constraint", loc), "with_sharding_constraint",
                   loc);
}

Array with_sharding_constraint(const Array& x, const Sharding& s, std::source_location loc) {
  return constrain(x, s, "with_sharding_constraint", loc);
}

bool Array::is_fully_addressable(std::source_location loc) const {
  Array c = concrete(loc, "whether a concrete array is fully addressable");
  const ConcreteArray& ci = *static_cast<const ConcreteArray*>(c.impl());
  return !ci.is_sharded() ||
         !spans_processes(*sharding_of_param(ci.sharding(), "a sharded array's sharding").mesh);
}

// Array::sharding() is declared in core/array.h (core/ cannot name Sharding) and defined here.
ArraySharding Array::sharding(std::source_location loc) const {
  Array c = concrete(loc, "the sharding of a concrete array");
  const ConcreteArray& ci = *static_cast<const ConcreteArray*>(c.impl());
  ArraySharding r;
  if (ci.is_sharded()) {
    r.sharding = sharding_of_param(ci.sharding(), "a sharded array's sharding");
  } else {
    auto mesh = std::make_shared<const Mesh>(std::vector<int>{ci.buffer()->device_id()}, Shape{},
                                             std::vector<std::string>{}, loc);
    r.sharding = Sharding::replicated_on(mesh, c.ndim(), c.memory_kind());
  }
  r.named = to_named(r.sharding);
  return r;
}

}  // namespace minijax
