// minijax typed view of the collectives' params: reading, writing and the registry's params check.
// The primitives' names appear here and in core/primitives/collectives.cc only.
#include "core/views/collectives.h"
#include "core/collective_params.h"
#include "core/param_reads.h"

#include <array>

#include "core/primitive.h"
#include "core/views/param_keys.h"
#include "core/views/view.h"

namespace minijax {

namespace {

using Kind = CollectiveParams::Kind;
constexpr size_t kKinds = 7;
constexpr std::array<Kind, kKinds> kAll = {Kind::all_gather,         Kind::all_reduce,        Kind::reduce_scatter,
                                           Kind::all_to_all,         Kind::collective_permute, Kind::ragged_all_to_all,
                                           Kind::axis_index};

// The registered primitive of each kind, by kind index (pointer comparison in is()).
const std::array<const Primitive*, kKinds>& primitives() {
  static const std::array<const Primitive*, kKinds> ps = [] {
    std::array<const Primitive*, kKinds> r{};
    for (Kind k : kAll) r[size_t(k)] = &get_or_create_primitive(CollectiveParams::name(k));
    return r;
  }();
  return ps;
}

CollectiveParams read(Kind k, const Params& p) {
  CollectiveParams c;
  c.kind = k;
  c.axis_name = axis_names_of(p);
  switch (k) {
    case Kind::axis_index: views::check_known_keys(p, {"axis_name"}); return c;
    case Kind::all_gather:
      views::check_known_keys(p, {"axis_name", "axis_size", "gather_dimension", "tiled"});
      c.gather_dimension = param_int(p, "gather_dimension");
      c.tiled = param_bool(p, "tiled");
      break;
    case Kind::all_reduce:
      views::check_known_keys(p, {"axis_name", "axis_size", "reduction"});
      c.reduction = param_string(p, "reduction");
      break;
    case Kind::reduce_scatter:
      views::check_known_keys(p, {"axis_name", "axis_size", "scatter_dimension"});
      c.scatter_dimension = param_int(p, "scatter_dimension");
      break;
    case Kind::all_to_all:
      views::check_known_keys(p, {"axis_name", "axis_size", "split_dimension", "concat_dimension"});
      c.split_dimension = param_int(p, "split_dimension");
      c.concat_dimension = param_int(p, "concat_dimension");
      break;
    case Kind::collective_permute:
      views::check_known_keys(p, {"axis_name", "axis_size", "source_target_pairs"});
      c.source_target_pairs = param_ints(p, "source_target_pairs");
      break;
    case Kind::ragged_all_to_all: views::check_known_keys(p, {"axis_name", "axis_size"}); break;
  }
  c.axis_size = param_int(p, "axis_size");
  return c;
}

const Registrar reg([] {
  for (Kind k : kAll)
    get_or_create_primitive(CollectiveParams::name(k)).check_params = [k](const Params& p) {
      return CollectiveParams::from(k, p).to_params();
    };
});

}  // namespace

const char* CollectiveParams::name(Kind k) {
  switch (k) {
    case Kind::all_gather: return "all_gather";
    case Kind::all_reduce: return "all_reduce";
    case Kind::reduce_scatter: return "reduce_scatter";
    case Kind::all_to_all: return "all_to_all";
    case Kind::collective_permute: return "collective_permute";
    case Kind::ragged_all_to_all: return "ragged_all_to_all";
    case Kind::axis_index: return "axis_index";
  }
  return "?";
}

std::optional<CollectiveParams::Kind> CollectiveParams::kind_of(const Primitive& p) {
  const auto& ps = primitives();
  for (size_t i = 0; i < kKinds; ++i)
    if (&p == ps[i]) return kAll[i];
  return std::nullopt;
}

std::optional<CollectiveParams::Kind> CollectiveParams::kind_of(const Eqn& e) {
  return e.primitive ? kind_of(*e.primitive) : std::nullopt;
}

bool CollectiveParams::is(const Primitive& p) { return kind_of(p).has_value(); }
bool CollectiveParams::is(const Eqn& e) { return kind_of(e).has_value(); }

bool CollectiveParams::is(const Eqn& e, Kind k) { return views::is_primitive(e, primitives()[size_t(k)]); }

CollectiveParams CollectiveParams::from(Kind k, const Params& p) {
  return views::read_view(name(k), [&] { return read(k, p); });
}

Params CollectiveParams::to_params() const {
  Params p;
  p.set("axis_name", axis_name_param(axis_name, name(kind)));
  if (kind == Kind::axis_index) return p;
  p.set("axis_size", axis_size);
  switch (kind) {
    case Kind::all_gather:
      p.set("gather_dimension", gather_dimension);
      p.set("tiled", tiled);
      break;
    case Kind::all_reduce: p.set("reduction", reduction); break;
    case Kind::reduce_scatter: p.set("scatter_dimension", scatter_dimension); break;
    case Kind::all_to_all:
      p.set("split_dimension", split_dimension);
      p.set("concat_dimension", concat_dimension);
      break;
    case Kind::collective_permute: p.set("source_target_pairs", source_target_pairs); break;
    default: break;
  }
  return p;
}

const Primitive& CollectiveParams::primitive() const { return primitive_of(kind); }
const Primitive& CollectiveParams::primitive_of(Kind k) { return *primitives()[size_t(k)]; }

CollectiveParams collective_params(const Eqn& e) {
  auto k = CollectiveParams::kind_of(e);
  if (!k) views::wrong_primitive("collective", e);
  return CollectiveParams::from(*k, e.params);
}

}  // namespace minijax
