// minijax saved_residuals: what the backward pass of a function keeps (JAX's
// print_saved_residuals, plus sizes, memory kinds and placement relative to loops).
#pragma once
#include <initializer_list>
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
  std::string description;          ///< JAX's wording: "from the argument x[0]", "output of cos"
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

/// Names of a function's positional arguments, for saved_residuals' wording (C++ cannot read a
/// parameter's name): `mj::saved_residuals(f, mj::ArgNames{"x", "y"}, x, y)` describes a
/// residual forwarding the first leaf of a pair x as "from the argument x[0]". Without names the
/// arguments are `args[0]`, `args[1]`, ... (JAX's names for `*args`).
/// More names than arguments is a ValueError naming both counts and the line that wrote the names.
struct ArgNames {
  std::vector<std::string> names;
  std::source_location loc;  ///< where the names were written (named by the count error)
  ArgNames(std::initializer_list<std::string> n, std::source_location l = std::source_location::current())
      : names(n), loc(l) {}
  explicit ArgNames(std::vector<std::string> n, std::source_location l = std::source_location::current())
      : names(std::move(n)), loc(l) {}
};

namespace detail {
/// JAX's keystr of a leaf: argument name `arg` followed by the leaf's path (flatten_with_path's
/// dotted keys; numeric keys are sequence indices): ("x", "0") -> "x[0]", ("p", "layers.1.w")
/// -> "p.layers[1].w", ("y", "") -> "y".
std::string argument_leaf_name(const std::string& arg, const std::string& path);

template <class... A>
std::vector<std::string> argument_leaf_names(const std::vector<std::string>& names, std::source_location loc,
                                             const A&... args) {
  if (names.size() > sizeof...(A))
    throw ValueError("saved_residuals: " + std::to_string(names.size()) + " argument names (ArgNames) for " +
                         std::to_string(sizeof...(A)) + " arguments",
                     loc);
  std::vector<std::string> out;
  size_t i = 0;
  auto add = [&](const auto& a) {
    PathLeaves leaves;
    flatten_with_path_into(a, "", leaves);
    std::string arg = i < names.size() ? names[i] : "args[" + std::to_string(i) + "]";
    for (auto& [path, leaf] : leaves) out.push_back(argument_leaf_name(arg, path));
    ++i;
  };
  (add(args), ...);
  return out;
}
}  // namespace detail

/// The residuals of the linearization of a flat function at arguments of the avals of `args`
/// (traced abstractly: f may not branch on values). Placement: forwarded (an argument of f, or a
/// value f closes over; `argument` is set for arguments only),
/// stacked (an extra stacked output of a known scan: one slice per iteration; named after the
/// scan body's checkpoint_name, in the body's memory kind), hoisted (a value of a scan body
/// that depends only on loop constants, which partial evaluation computes once before the
/// loop: its unstacked shape and bytes), computed (made once by an equation).
/// The list is in JAX's order (jax.ad_checkpoint.saved_residuals): literals, then constants,
/// then arguments, then values in the order the program computes them; each value once. JAX's
/// wording: "from a literal", "from a constant", "from the argument NAME" (NAME from
/// `arg_names`, one per flat argument; "from the argument at flattened index i" without),
/// "named 'N' (output of PRIM)", "output of jitted function 'NAME'", "output of PRIM", and
/// for values of loops "stacked by scan (per iteration: ...)" or "..., hoisted out of a loop".
/// Throws ValueError naming the leaf for an empty argument.
SavedResiduals saved_residuals_flat(const FlatFn& f, const std::vector<Array>& args,
                                    const std::vector<std::string>& arg_names = {},
                                    std::source_location loc = std::source_location::current());

/// saved_residuals with the arguments' names: `saved_residuals(f, ArgNames{"x", "y"}, x, y)`
/// describes the leaves of x as "x[0]", "x[1]" or "x.w" (JAX's names: the parameter's name and
/// the leaf's path). Arguments beyond the names given are `args[i]`; more names than arguments is
/// a ValueError.
template <class F, class... A>
  requires(PyTree<std::decay_t<A>> && ...)
SavedResiduals saved_residuals(F f, const ArgNames& names, const A&... args) {
  std::vector<Array> flat;
  (pytree<std::decay_t<A>>::flatten(args, flat), ...);
  FlatFn fn = [&](const std::vector<Array>& xs) {
    const Array* next = xs.data();
    std::tuple<std::decay_t<A>...> rebuilt{pytree<std::decay_t<A>>::unflatten(args, next)...};
    return tree_flatten(std::apply(f, rebuilt));
  };
  return saved_residuals_flat(fn, flat, detail::argument_leaf_names(names.names, names.loc, args...));
}

/// saved_residuals(f, args...): f over pytrees of Arrays returning a pytree. JAX:
/// jax.ad_checkpoint.saved_residuals (print it for print_saved_residuals). Arguments are named
/// `args[i]` followed by each leaf's path ("from the argument args[0][1]"). Throws what f throws
/// while tracing.
template <class F, class... A>
  requires(PyTree<std::decay_t<A>> && ...)
SavedResiduals saved_residuals(F f, const A&... args) {
  return saved_residuals(std::move(f), ArgNames(std::vector<std::string>{}), args...);
}

}  // namespace minijax
