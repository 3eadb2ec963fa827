// minijax remat policies (JAX's jax.checkpoint_policies) as printable, comparable ParamObjects.
// Owns Policy, the built-in policies, their combinators and user-callback policies.
#pragma once
#include <memory>
#include <set>
#include <source_location>
#include <string>
#include <vector>

#include "autodiff/policy.h"
#include "core/jaxpr.h"
#include "core/params.h"

namespace minijax {

/// A remat policy: a SaveablePolicy with an identity. It is the `policy` parameter of a
/// `checkpoint` equation; str() prints its name with its arguments (e.g.
/// `save_only_these_names('a', 'b')`); built-in policies compare by value (same name and
/// arguments), user callbacks by identity.
class Policy : public ParamObject {
 public:
  /// `decide` is the raw callback; `printed` its printed form; `by_value`: compare by printed
  /// form; `may_offload`: it can return Offloadable (not accepted by save_from_both_policies);
  /// `recompute_named`: names whose producing equations are recomputed
  /// (save_anything_except_these_names); `loc`: where the user made the policy (the call site
  /// reported by the errors operator() throws for an invalid decision).
  Policy(std::string printed, SaveablePolicy decide, bool by_value, bool may_offload,
         std::set<std::string> recompute_named = {},
         std::source_location loc = std::source_location::current());
  std::string str() const override { return printed_; }
  bool equals(const ParamObject& o) const override;
  /// The decision for one equation, validated: an Offloadable must name valid memory kinds
  /// (ValueError naming the policy and the equation otherwise, at the policy's creation site).
  PolicyDecision operator()(const Primitive& p, const std::vector<ShapedArray>& avals,
                            const Params& params) const;
  /// A checking SaveablePolicy for partial_eval_jaxpr_custom (keeps this policy alive).
  SaveablePolicy saveable() const;
  /// As saveable(), specialized to `body` (which must outlive the returned policy and be the
  /// jaxpr given to partial_eval_jaxpr_custom): for save_anything_except_these_names the
  /// equations producing an excluded named value are recomputed too (the documented intent;
  /// JAX's code saves them).
  SaveablePolicy saveable_for(const Jaxpr& body) const;
  /// A built-in policy that can return Offloadable.
  bool may_offload() const { return may_offload_; }
  /// The raw, unchecked callback.
  const SaveablePolicy& raw() const { return decide_; }

 private:
  std::string printed_;
  SaveablePolicy decide_;
  bool by_value_, may_offload_;
  std::set<std::string> recompute_named_;
  std::source_location loc_;
};
using PolicyPtr = std::shared_ptr<const Policy>;

/// A memory kind given as JAX spells it ("device", "pinned_host", "unpinned_host") or as the
/// enum. A string that is not a memory kind is kept, and the policy taking it throws ValueError
/// naming itself, the string and the call site (resolve()).
struct MemoryKindArg {
  MemoryKind kind = MemoryKind::device;
  std::string unknown;       ///< the string when it names no memory kind, else empty
  std::source_location loc;  ///< where the string was given
  MemoryKindArg(MemoryKind k) : kind(k) {}  // NOLINT(google-explicit-constructor)
  MemoryKindArg(const char* s, std::source_location loc = std::source_location::current());
  MemoryKindArg(const std::string& s, std::source_location loc = std::source_location::current());
  /// `kind`; ValueError naming `fn`, the string and the call site when it named no memory kind.
  MemoryKind resolve(const char* fn) const;
};

namespace detail {
/// The printed form of one equation for error messages: `prim[params](avals)`.
std::string describe_equation(const Primitive& p, const std::vector<ShapedArray>& avals,
                              const Params& params);
}  // namespace detail

namespace checkpoint_policies {

/// Saves every value (no recomputation). JAX: everything_saveable.
PolicyPtr everything_saveable();
/// Saves nothing computed inside the checkpoint: everything is recomputed from its inputs
/// (JAX's default policy, printed `policy=None` when given as None). JAX: nothing_saveable.
PolicyPtr nothing_saveable();
/// Saves the outputs of dot_general; recomputes the rest. JAX: dots_saveable (checkpoint_dots).
PolicyPtr dots_saveable();
/// Saves the outputs of dot_general without batch dimensions. JAX: dots_with_no_batch_dims_saveable.
PolicyPtr dots_with_no_batch_dims_saveable();
/// JAX's alias of dots_saveable (jax.checkpoint_policies.checkpoint_dots = dots_saveable): the
/// same policy object, printed `dots_saveable`.
PolicyPtr checkpoint_dots();
/// JAX's alias of dots_with_no_batch_dims_saveable (checkpoint_dots_with_no_batch_dims): the same
/// policy object, printed `dots_with_no_batch_dims_saveable`.
PolicyPtr checkpoint_dots_with_no_batch_dims();
/// Offloads (src -> dst) the outputs of dot_general without batch dimensions; recomputes the
/// rest. ValueError for an unknown memory kind. JAX: offload_dot_with_no_batch_dims.
PolicyPtr offload_dot_with_no_batch_dims(MemoryKindArg src, MemoryKindArg dst);
/// Saves only values named by checkpoint_name with one of `names`. JAX: save_only_these_names.
PolicyPtr save_only_these_names(std::vector<std::string> names);
/// Saves named values whose name is not in `names`; recomputes everything else.
/// JAX: save_any_names_but_these.
PolicyPtr save_any_names_but_these(std::vector<std::string> names);
/// Saves everything except the values named with one of `names`, which are recomputed (and so
/// are the equations producing them, in the checkpoint's own body). JAX:
/// save_anything_except_these_names (with the documented intent).
PolicyPtr save_anything_except_these_names(std::vector<std::string> names);
/// Saves the values named in `saved`, offloads (src -> dst) those named in `offloaded`,
/// recomputes the rest. Throws ValueError naming the names in both sets, or an unknown memory
/// kind. JAX: save_and_offload_only_these_names.
PolicyPtr save_and_offload_only_these_names(std::vector<std::string> saved,
                                            std::vector<std::string> offloaded, MemoryKindArg src,
                                            MemoryKindArg dst,
                                            std::source_location loc = std::source_location::current());
/// Saves what either policy saves. Both must return only Saveable/Recompute (JAX: booleans):
/// a built-in offloading policy is rejected here (ValueError), a callback returning Offloadable
/// throws ValueError when asked. JAX: save_from_both_policies.
PolicyPtr save_from_both_policies(PolicyPtr a, PolicyPtr b,
                                  std::source_location loc = std::source_location::current());
/// A user policy `(primitive, input avals, params) -> Saveable | Recompute | Offloadable{src,dst}`
/// with a name: it prints as `name` and compares by identity. Throws ValueError for an empty
/// callback. Invalid decisions (an Offloadable with an unknown memory kind or src == dst) throw
/// ValueError when the policy is asked, at this call site (the equation has no source location).
PolicyPtr custom(std::string name, SaveablePolicy fn,
                 std::source_location loc = std::source_location::current());

}  // namespace checkpoint_policies

namespace detail {
/// The policy stored in a checkpoint equation's params (`policy`; None = nothing_saveable).
PolicyPtr policy_from_params(const Params& params);
}  // namespace detail

}  // namespace minijax
