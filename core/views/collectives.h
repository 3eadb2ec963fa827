// minijax typed view of the collective primitives' params (all_gather, all_reduce, reduce_scatter,
// all_to_all, collective_permute, ragged_all_to_all, axis_index): one family view with the kind.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/collectives.h"
#include "core/jaxpr.h"
#include "core/params.h"

namespace minijax {

/// The params of a collective equation (core/collectives.h), read once and typed. Which fields a
/// kind has: every kind `axis_name`; every kind but axis_index `axis_size`; all_gather
/// `gather_dimension`, `tiled`; all_reduce `reduction`; reduce_scatter `scatter_dimension`;
/// all_to_all `split_dimension`, `concat_dimension`; collective_permute `source_target_pairs`.
/// The other fields keep their defaults and are not written by to_params().
struct CollectiveParams {
  enum class Kind { all_gather, all_reduce, reduce_scatter, all_to_all, collective_permute, ragged_all_to_all, axis_index };
  Kind kind = Kind::all_reduce;
  AxisNames axis_name;            ///< the mesh axes of the group, major first
  int64_t axis_size = 0;          ///< devices in a group (0 for axis_index, which has no such param)
  int64_t gather_dimension = 0;   ///< all_gather
  bool tiled = true;              ///< all_gather: concatenated (true) or stacked in a new dim
  std::string reduction = "sum";  ///< all_reduce: "sum", "max" or "min"
  int64_t scatter_dimension = 0;  ///< reduce_scatter
  int64_t split_dimension = 0, concat_dimension = 0;  ///< all_to_all
  std::vector<int64_t> source_target_pairs;          ///< collective_permute: flat (source, target) pairs

  /// Whether `e` is an equation of one of the seven collective primitives.
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  /// Whether `e` is an equation of the collective of kind `k`.
  static bool is(const Eqn& e, Kind k);
  /// The kind of `e`'s primitive, or nullopt when it is not a collective.
  static std::optional<Kind> kind_of(const Eqn& e);
  static std::optional<Kind> kind_of(const Primitive& p);
  /// Reads the params of a `k` equation. ValueError "<primitive>: missing parameter 'x'" (or of
  /// a wrong type, or an unexpected one).
  static CollectiveParams from(Kind k, const Params& p);
  /// The params the binders in core/primitives/collectives.cc set (equal to the read ones).
  Params to_params() const;
  /// The primitive of `kind`, and its name.
  const Primitive& primitive() const;
  static const Primitive& primitive_of(Kind k);
  static const char* name(Kind k);
  /// Every kind but axis_index moves data between devices.
  bool moves_data() const { return kind != Kind::axis_index; }
};

/// `e`'s collective params; ValueError if `e` is not a collective.
CollectiveParams collective_params(const Eqn& e);

}  // namespace minijax
