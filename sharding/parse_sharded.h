// minijax sharded jaxpr text: a printed jaxpr under `# mesh:`, `# in_shardings:` and
// `# out_shardings:` header lines, its `sharding=` params read against that mesh; printed shardings.
#pragma once
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "core/jaxpr.h"
#include "sharding/mesh.h"
#include "sharding/sharding.h"

namespace minijax {

/// A jaxpr read from text with its sharding header (parse_sharded_jaxpr).
struct ShardedJaxpr {
  ClosedJaxpr jaxpr;
  /// The `# mesh:` header's mesh; null when the text has no such line (an unsharded program).
  std::shared_ptr<const Mesh> mesh;
  /// With a mesh: one entry per invar / outvar of `jaxpr` (all nullopt when the header line is
  /// absent); nullopt (`None` in the header): unconstrained, propagation decides. Without a mesh:
  /// empty. Each given one fits its variable's shape (Sharding::check).
  std::vector<std::optional<Sharding>> in_shardings, out_shardings;
};

/// Reads a sharding as Sharding::str() prints it, against `mesh` (e.g.
/// `[{"data"}, {"model":(1)2, ?}p1, {}], replicated={"z"}, unreduced={"w"}, memory_kind=pinned_host`;
/// `replicated=`, `unreduced=` and `memory_kind=` optional, in that order or any). The result
/// has one DimSharding per `{...}` and is not checked against a shape (Sharding::check does that).
/// Throws ValueError at `loc`, naming the text, for a syntax error, an axis `mesh` lacks (naming
/// the axis and the mesh), an unknown memory kind, or a null mesh.
Sharding parse_sharding(const std::string& text, const std::shared_ptr<const Mesh>& mesh,
                        std::source_location loc = std::source_location::current());

/// Parses a printed jaxpr (parse_jaxpr's syntax) under optional header lines. Every line whose
/// first non-blank character is `#` is a comment (ignored; error lines keep the text's numbering);
/// three kinds of comment are the header, each at most once, in any order:
///   `# mesh: data=4, model=2`                   the mesh, JAX's axis order (major first);
///   `# mesh: data=4, model=2, devices=[0, 2, 4, 6, 1, 3, 5, 7]`   with its device order (row-major);
///   `# in_shardings: [{"data"}, {}], None`      one per invar, Sharding::str()'s form or None;
///   `# out_shardings: [{}, {"model"}]`          one per outvar, likewise.
/// The mesh is also read in Mesh::str()'s form, `Mesh('data': 4, 'model': 2, devices=[...])`,
/// and the device order as `device_ids=[[0, 1], [2, 3]]` (nested lists flattened row-major).
/// Without a device order the mesh holds devices 0..N-1 (N the product of the sizes, as
/// make_mesh); the device count the sizes must divide is the listed devices' count, or else the
/// process's (num_devices(), which this call fixes if it was not yet used). With a mesh, each
/// `sharding=` param of the jaxpr (sharding_constraint's) is read with parse_sharding against
/// it; every equation is type-checked as parse_jaxpr does (no declared type is trusted).
/// Without a `# mesh:` line the text is parse_jaxpr's: a printed sharding is refused as there
/// (ShapeError naming the param).
/// Throws at `loc`: ValueError naming the header's line number and text for a header that does
/// not parse (syntax, an axis size < 1 or repeated axis name, a size that does not divide the
/// device count, more devices than that count, a negative or repeated device, a sharding naming
/// an axis the mesh lacks or not fitting its variable's shape, a number of entries other than the
/// jaxpr's invars / outvars, in_shardings or out_shardings without a mesh, a header given twice);
/// ValueError naming the param, the line and the column for a `sharding=` param that does not
/// parse against the mesh (e.g. an axis the mesh lacks); every error of parse_jaxpr otherwise.
ShardedJaxpr parse_sharded_jaxpr(const std::string& text,
                                 std::source_location loc = std::source_location::current());

}  // namespace minijax
