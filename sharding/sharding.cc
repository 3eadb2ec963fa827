// minijax's internal sharding (Shardy's representation): axis refs, validation and printing.
// Owns the invariants of sharding_representation.md (known axes, no overlap, maximal sub-axes).
#include "sharding/sharding.h"

#include "core/errors.h"

namespace minijax {

int64_t AxisRef::resolved_size(const Mesh& mesh) const {
  return size == 0 ? mesh.axis_size(name) : size;
}

std::pair<int64_t, int64_t> AxisRef::factor_range(const Mesh& mesh) const {
  if (size == 0) return {1, mesh.axis_size(name)};
  return {pre_size, pre_size * size};
}

int64_t AxisRef::coord(const Mesh& mesh, const std::vector<int64_t>& mesh_coords) const {
  int64_t c = mesh_coords[size_t(mesh.axis_index(name))];
  if (size == 0) return c;
  // Axis of size n reshaped to [pre_size, size, post]; the sub-axis is the middle dimension.
  int64_t post = mesh.axis_size(name) / (pre_size * size);
  return (c / post) % size;
}

std::string AxisRef::str() const {
  std::string s = "\"" + name + "\"";
  if (size != 0) s += ":(" + std::to_string(pre_size) + ")" + std::to_string(size);
  return s;
}

int64_t DimSharding::num_shards(const Mesh& mesh) const {
  int64_t n = 1;
  for (auto& a : axes) n *= a.resolved_size(mesh);
  return n;
}

std::string DimSharding::str() const {
  std::string s = "{";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + axes[i].str();
  if (!closed) s += axes.empty() ? "?" : ", ?";
  s += "}";
  if (priority >= 0) s += "p" + std::to_string(priority);
  return s;
}

Sharding Sharding::replicated_on(std::shared_ptr<const Mesh> mesh, int64_t rank,
                                 MemoryKind memory_kind) {
  Sharding s;
  s.mesh = std::move(mesh);
  s.dims.assign(size_t(rank), DimSharding{});
  s.memory_kind = memory_kind;
  return s;
}

namespace {
std::string refs_str(const std::vector<AxisRef>& refs) {
  std::string s = "{";
  for (size_t i = 0; i < refs.size(); ++i) s += (i ? ", " : "") + refs[i].str();
  return s + "}";
}
}  // namespace

std::string Sharding::str() const {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].str();
  s += "]";
  if (!replicated.empty()) s += ", replicated=" + refs_str(replicated);
  if (!unreduced.empty()) s += ", unreduced=" + refs_str(unreduced);
  if (memory_kind != MemoryKind::device)
    s += std::string(", memory_kind=") + memory_kind_name(memory_kind);
  return s;
}

bool Sharding::operator==(const Sharding& o) const {
  bool same_mesh = mesh == o.mesh || (mesh && o.mesh && *mesh == *o.mesh);
  return same_mesh && dims == o.dims && replicated == o.replicated && unreduced == o.unreduced &&
         memory_kind == o.memory_kind;
}

void Sharding::check(const Shape& shape, std::source_location loc) const {
  auto fail = [&](const std::string& why) {
    throw ShardingError("invalid sharding " + str() + " for an array of shape " +
                            shape_str(shape) + " on " + (mesh ? mesh->str() : "no mesh") + ": " +
                            why,
                        loc);
  };
  if (!mesh) fail("the sharding has no mesh");
  if (dims.size() != shape.size())
    fail("it has " + std::to_string(dims.size()) + " dimension shardings but the array has rank " +
         std::to_string(shape.size()));
  struct Use {
    AxisRef ref;
    std::string where;
  };
  std::vector<Use> uses;
  auto check_ref = [&](const AxisRef& r, const std::string& where) {
    if (!mesh->has_axis(r.name)) {
      std::string axes;
      for (auto& n : mesh->axis_names) axes += (axes.empty() ? "'" : ", '") + n + "'";
      fail("axis '" + r.name + "' (in " + where + ") is not an axis of the mesh (axes: " + axes +
           ")");
    }
    int64_t n = mesh->axis_size(r.name);
    if (r.size != 0) {
      if (r.pre_size < 1 || r.size < 2 || n % (r.pre_size * r.size) != 0)
        fail("sub-axis " + r.str() + " (in " + where + ") does not split axis '" + r.name +
             "' of size " + std::to_string(n) +
             " (needs pre-size >= 1, size > 1, pre-size * size dividing the axis size)");
      if (r.pre_size == 1 && r.size == n)
        fail("sub-axis " + r.str() + " (in " + where + ") is the whole axis; write \"" + r.name +
             "\"");
    } else if (r.pre_size != 1) {
      fail("axis ref " + r.str() + " (in " + where + ") has a pre-size but no size");
    }
    auto [lo, hi] = r.factor_range(*mesh);
    for (auto& u : uses) {
      if (u.ref.name != r.name) continue;
      auto [ulo, uhi] = u.ref.factor_range(*mesh);
      if (lo < uhi && ulo < hi) {
        if (u.ref == r)
          fail("axis " + r.str() + " is used twice (in " + u.where + " and in " + where + ")");
        fail("axis refs " + u.ref.str() + " (in " + u.where + ") and " + r.str() + " (in " +
             where + ") overlap");
      }
    }
    uses.push_back({r, where});
  };
  for (size_t d = 0; d < dims.size(); ++d) {
    const auto& ds = dims[d];
    std::string where = "dimension " + std::to_string(d);
    if (ds.priority < -1) fail("dimension " + std::to_string(d) + " has a negative priority");
    for (size_t i = 0; i < ds.axes.size(); ++i) {
      check_ref(ds.axes[i], where);
      if (i > 0) {
        const AxisRef& a = ds.axes[i - 1];
        const AxisRef& b = ds.axes[i];
        if (a.size != 0 && b.size != 0 && a.name == b.name && a.pre_size * a.size == b.pre_size)
          fail("adjacent sub-axes " + a.str() + ", " + b.str() + " in " + where +
               " must be merged into \"" + a.name + "\":(" + std::to_string(a.pre_size) + ")" +
               std::to_string(a.size * b.size) + " (or the whole axis)");
      }
    }
  }
  for (auto& r : replicated) check_ref(r, "replicated");
  for (auto& r : unreduced) check_ref(r, "unreduced");
}

int64_t Sharding::replication_factor() const {
  int64_t shards = 1;
  for (auto& d : dims) shards *= d.num_shards(*mesh);
  return int64_t(mesh->num_devices()) / shards;
}

bool Sharding::is_fully_replicated() const {
  for (auto& d : dims)
    if (!d.axes.empty()) return false;
  return unreduced.empty();
}

}  // namespace minijax
