// minijax PartitionSpec and NamedSharding: printing and conversion to and from Sharding.
// Owns the mapping between JAX's user-facing spec and Shardy's per-dim axis lists.
#include "sharding/partition_spec.h"

#include "core/errors.h"

namespace minijax {

std::string PDim::str() const {
  switch (kind) {
    case Kind::none: return "None";
    case Kind::unconstrained: return "UNCONSTRAINED";
    case Kind::axes: break;
  }
  if (axes.size() == 1) return "'" + axes[0] + "'";
  std::string s = "(";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", '" : "'") + axes[i] + "'";
  return s + ")";
}

std::string P::str() const {
  std::string s = "P(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].str();
  return s + ")";
}

namespace {
// Entries without the trailing None ones; one-element tuples are already single axes.
std::vector<PDim> trimmed(const std::vector<PDim>& d) {
  size_t n = d.size();
  while (n > 0 && d[n - 1].is_none()) --n;
  return std::vector<PDim>(d.begin(), d.begin() + std::ptrdiff_t(n));
}
}  // namespace

bool P::equivalent(const P& o) const { return trimmed(dims) == trimmed(o.dims); }

std::string NamedSharding::str() const {
  return "NamedSharding(mesh=" + (mesh ? mesh->str() : std::string("None")) +
         ", spec=" + spec.str() + ", memory_kind=" + memory_kind_name(memory_kind) + ")";
}

bool NamedSharding::operator==(const NamedSharding& o) const {
  bool same_mesh = mesh == o.mesh || (mesh && o.mesh && *mesh == *o.mesh);
  return same_mesh && spec == o.spec && memory_kind == o.memory_kind;
}

Sharding to_sharding(const NamedSharding& ns, int64_t rank, std::source_location loc) {
  auto fail = [&](const std::string& why) {
    throw ShardingError("NamedSharding with spec " + ns.spec.str() + " on " +
                            (ns.mesh ? ns.mesh->str() : std::string("no mesh")) +
                            " for an array of rank " + std::to_string(rank) + ": " + why,
                        loc);
  };
  if (!ns.mesh) fail("the sharding has no mesh");
  if (int64_t(ns.spec.size()) > rank)
    fail("the spec has " + std::to_string(ns.spec.size()) + " entries, more than the rank " +
         std::to_string(rank));
  Sharding s = Sharding::replicated_on(ns.mesh, rank, ns.memory_kind);
  std::vector<std::pair<std::string, size_t>> used;  // axis name, dim
  for (size_t d = 0; d < ns.spec.size(); ++d) {
    const PDim& e = ns.spec.dims[d];
    if (e.is_unconstrained()) {
      s.dims[d].closed = false;
      continue;
    }
    for (auto& a : e.axes) {
      if (!ns.mesh->has_axis(a)) {
        std::string axes;
        for (auto& n : ns.mesh->axis_names) axes += (axes.empty() ? "'" : ", '") + n + "'";
        fail("axis '" + a + "' (dimension " + std::to_string(d) +
             ") is not an axis of the mesh (axes: " + axes + ")");
      }
      for (auto& [n, ud] : used)
        if (n == a)
          fail("axis '" + a + "' appears twice (dimensions " + std::to_string(ud) + " and " +
               std::to_string(d) + ")");
      used.emplace_back(a, d);
      s.dims[d].axes.push_back(AxisRef::axis(a));
    }
  }
  return s;
}

std::optional<NamedSharding> to_named(const Sharding& s) {
  if (!s.mesh || !s.unreduced.empty()) return std::nullopt;
  std::vector<PDim> dims;
  for (auto& d : s.dims) {
    if (d.priority >= 0) return std::nullopt;
    if (!d.closed) {
      if (!d.axes.empty()) return std::nullopt;
      dims.emplace_back(P::UNCONSTRAINED);
      continue;
    }
    std::vector<std::string> names;
    for (auto& a : d.axes) {
      if (a.is_sub_axis()) return std::nullopt;
      names.push_back(a.name);
    }
    dims.emplace_back(std::move(names));
  }
  return NamedSharding{s.mesh, P(trimmed(dims)), s.memory_kind};
}

}  // namespace minijax
