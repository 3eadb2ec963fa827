// minijax saved_residuals: what the backward pass of a function keeps (JAX's
// print_saved_residuals, plus sizes, memory kinds and placement relative to loops).
#pragma once
#include <iosfwd>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <vector>

#include "autodiff/partial_eval.h"
#include "core/pytree.h"
#include "core/staging.h"

namespace minijax {

/// One residual kept for the backward pass.
struct SavedResidual {
  ShapedArray aval;                 ///< shape and dtype (memory kind included)
  int64_t bytes = 0;                ///< size in bytes
  MemoryKind memory_kind = MemoryKind::device;
  /// Its checkpoint_name, if any: the value a `name` equation made, or the value it names
  /// (whichever policy saved it, e.g. a dot saved by dots_saveable; jax PR #20285).
  std::string name;
  std::string made_by;              ///< primitive of the equation that made it ("" for arguments)
  ResidualPlacement placement = ResidualPlacement::computed;
  std::optional<int> argument;      ///< flat index of the argument it forwards, if forwarded
  std::string description;          ///< JAX's wording: "from the argument x[0]", "from sin ..."
};

/// The residuals of a function, iterable and printable one line per residual, e.g.
/// `f32[2,3] stacked pinned_host 24 bytes named 'save_remat' from device_put (scan)`.
struct SavedResiduals {
  std::vector<SavedResidual> items;
  auto begin() const { return items.begin(); }
  auto end() const { return items.end(); }
  size_t size() const { return items.size(); }
  const SavedResidual& operator[](size_t i) const { return items.at(i); }
};
std::ostream& operator<<(std::ostream& os, const SavedResidual& r);
std::ostream& operator<<(std::ostream& os, const SavedResiduals& r);

/// The residuals of the linearization of a flat function at arguments of the avals of `args`
/// (traced abstractly: f may not branch on values). Placement: forwarded (an argument of f, or a
/// value f closes over; `argument` is set for arguments only),
/// stacked (an extra stacked output of a known scan: one slice per iteration; named after the
/// scan body's checkpoint_name, in the body's memory kind), hoisted (a value of a scan body
/// that depends only on loop constants, which partial evaluation computes once before the
/// loop: its unstacked shape and bytes), computed (made once by an equation).
SavedResiduals saved_residuals_flat(const FlatFn& f, const std::vector<Array>& args,
                                    std::source_location loc = std::source_location::current());

/// saved_residuals(f, args...): f over pytrees of Arrays returning a pytree. JAX:
/// jax.ad_checkpoint.print_saved_residuals (as data). Throws what f throws while tracing.
template <class F, class... A>
SavedResiduals saved_residuals(F f, const A&... args) {
  std::vector<Array> flat;
  (pytree<std::decay_t<A>>::flatten(args, flat), ...);
  FlatFn fn = [&](const std::vector<Array>& xs) {
    const Array* next = xs.data();
    std::tuple<std::decay_t<A>...> rebuilt{pytree<std::decay_t<A>>::unflatten(args, next)...};
    return tree_flatten(std::apply(f, rebuilt));
  };
  return saved_residuals_flat(fn, flat);
}

}  // namespace minijax
