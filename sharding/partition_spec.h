// minijax's user-facing shardings: PartitionSpec (mj::P) and NamedSharding, as in jax.sharding.
// Owns their construction, printing and conversion to and from the internal Shardy Sharding.
#pragma once
#include <concepts>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <initializer_list>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "core/aval.h"
#include "core/pytree.h"
#include "sharding/mesh.h"
#include "sharding/sharding.h"

namespace minijax {

/// The marker of an unconstrained (open) PartitionSpec entry: JAX's P.UNCONSTRAINED.
struct Unconstrained {
  bool operator==(const Unconstrained&) const = default;
};

/// One PartitionSpec entry: None (the dim is not sharded), one axis, a tuple of axes (major
/// first), or UNCONSTRAINED (propagation decides: an open dim). A one-element tuple is the same
/// as the single axis.
struct PDim {
  enum class Kind : uint8_t { none, axes, unconstrained };
  Kind kind = Kind::none;
  std::vector<std::string> axes;  ///< non-empty iff kind == axes

  PDim() = default;
  PDim(None) {}
  PDim(Unconstrained) : kind(Kind::unconstrained) {}
  PDim(const char* axis) : kind(Kind::axes), axes{axis} {}
  PDim(std::string axis) : kind(Kind::axes), axes{std::move(axis)} {}
  /// A tuple of axes, major first; the empty tuple is None.
  PDim(std::initializer_list<std::string> tuple) : PDim(std::vector<std::string>(tuple)) {}
  explicit PDim(std::vector<std::string> tuple)
      : kind(tuple.empty() ? Kind::none : Kind::axes), axes(std::move(tuple)) {}

  bool is_none() const { return kind == Kind::none; }
  bool is_unconstrained() const { return kind == Kind::unconstrained; }
  /// `None`, `'x'`, `('x', 'y')`, `UNCONSTRAINED` (JAX's repr of the entry).
  std::string str() const;
  bool operator==(const PDim& o) const = default;
};

/// jax.sharding.PartitionSpec: one entry per leading array dim; missing trailing entries are
/// None. Built like JAX's: `mj::P("x", mj::None{}, {"y", "z"}, mj::P::UNCONSTRAINED)` (up to 8
/// entries this way), or `mj::P(std::vector<mj::PDim>{...})` for any rank.
struct P {
  std::vector<PDim> dims;

  static constexpr Unconstrained UNCONSTRAINED{};

  P() = default;
  /// From a vector of entries (any rank). A template so that a single braced tuple,
  /// `P({"y", "z"})`, is one tuple entry (as JAX's P(("y", "z"))), not a list of entries.
  template <class V>
    requires std::same_as<std::remove_cvref_t<V>, std::vector<PDim>>
  explicit P(V&& d) : dims(std::forward<V>(d)) {}
  P(PDim a) : dims{std::move(a)} {}
  /// One tuple entry: `P({"y", "z"})` is JAX's P(("y", "z")) (an exact match, so it wins over
  /// reading the braces as two entries). Note that `P{"y", "z"}` (braces, no parentheses) is
  /// also this single tuple; write `P("y", "z")` for two entries.
  P(std::initializer_list<const char*> tuple)
      : dims{PDim(std::vector<std::string>(tuple.begin(), tuple.end()))} {}
  P(PDim a, PDim b) : dims{std::move(a), std::move(b)} {}
  P(PDim a, PDim b, PDim c) : dims{std::move(a), std::move(b), std::move(c)} {}
  P(PDim a, PDim b, PDim c, PDim d)
      : dims{std::move(a), std::move(b), std::move(c), std::move(d)} {}
  P(PDim a, PDim b, PDim c, PDim d, PDim e)
      : dims{std::move(a), std::move(b), std::move(c), std::move(d), std::move(e)} {}
  P(PDim a, PDim b, PDim c, PDim d, PDim e, PDim f)
      : dims{std::move(a), std::move(b), std::move(c), std::move(d), std::move(e), std::move(f)} {}
  P(PDim a, PDim b, PDim c, PDim d, PDim e, PDim f, PDim g)
      : dims{std::move(a), std::move(b), std::move(c), std::move(d), std::move(e), std::move(f),
             std::move(g)} {}
  P(PDim a, PDim b, PDim c, PDim d, PDim e, PDim f, PDim g, PDim h)
      : dims{std::move(a), std::move(b), std::move(c), std::move(d), std::move(e), std::move(f),
             std::move(g), std::move(h)} {}

  size_t size() const { return dims.size(); }
  /// `P('x', None, ('y', 'z'), UNCONSTRAINED)` (JAX's repr).
  std::string str() const;
  /// Entry-wise equality (P("x") != P("x", None); see equivalent()).
  bool operator==(const P& o) const = default;
  /// Equality after dropping trailing None entries (JAX's equivalence for a given array).
  bool equivalent(const P& o) const;
};

/// jax.sharding.PartitionSpec, JAX's full name of mj::P.
using PartitionSpec = P;

/// jax.sharding.NamedSharding: a mesh, a PartitionSpec over its axis names and a memory kind.
/// Built from a shared mesh (`NamedSharding{mesh_ptr, P("x")}`, held as is) or, as in JAX, from
/// a mesh value (`NamedSharding(mj::make_mesh({4}, {"x"}), P("x"))`, copied into a shared
/// mesh). Meshes compare by value everywhere (equality, jit's one-mesh rule), so both forms of
/// one mesh mix freely. Nothing is validated here: a spec is checked against its mesh and the
/// array's rank where it is used (to_sharding, device_put, jit), which throw ShardingError.
struct NamedSharding {
  std::shared_ptr<const Mesh> mesh;
  P spec;
  MemoryKind memory_kind = MemoryKind::device;

  /// No mesh (to_sharding throws ShardingError for it).
  NamedSharding() = default;
  /// Shares `mesh` (may be null: to_sharding throws ShardingError for it).
  NamedSharding(std::shared_ptr<const Mesh> mesh, P spec = P(),
                MemoryKind memory_kind = MemoryKind::device)
      : mesh(std::move(mesh)), spec(std::move(spec)), memory_kind(memory_kind) {}
  /// A copy of `mesh` (jax.sharding.NamedSharding(mesh, spec, memory_kind=...)).
  NamedSharding(const Mesh& mesh, P spec = P(), MemoryKind memory_kind = MemoryKind::device)
      : mesh(std::make_shared<const Mesh>(mesh)), spec(std::move(spec)), memory_kind(memory_kind) {}

  /// `NamedSharding(mesh=Mesh('x': 4), spec=P('x',), memory_kind=device)`.
  std::string str() const;
  bool operator==(const NamedSharding& o) const;
};

/// The internal sharding of a rank-`rank` array under `ns`: entry i -> dim i's axes (closed);
/// UNCONSTRAINED -> an open dim with no axes; missing trailing entries -> closed, unsharded.
/// Throws ShardingError at `loc` (naming the spec, the mesh and the rank) when the mesh is null,
/// the spec has more entries than `rank`, an axis is not in the mesh, or an axis appears twice.
Sharding to_sharding(const NamedSharding& ns, int64_t rank,
                     std::source_location loc = std::source_location::current());

/// The NamedSharding a Sharding is, or nullopt when PartitionSpec cannot express it: a sub-axis,
/// a priority, an open dim that has axes, or unreduced axes. Explicitly replicated axes are
/// dropped (a NamedSharding replicates over every unused axis). Trailing None entries are
/// dropped, so to_named(to_sharding(ns, r)) is equivalent() to ns (equal when ns has no
/// trailing None).
std::optional<NamedSharding> to_named(const Sharding& s);

}  // namespace minijax
