// minijax remat policies: the built-in policies of jax.checkpoint_policies (ad_checkpoint.py),
// their validation, printing and identity, and the save_anything_except_these_names pre-pass.
#include "autodiff/checkpoint_policies.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "core/device.h"
#include "core/lax.h"
#include "core/primitive.h"
#include "core/views/array_ops.h"
#include "core/views/control_flow.h"

namespace minijax {

Policy::Policy(std::string printed, SaveablePolicy decide, bool by_value, bool may_offload,
               std::set<std::string> recompute_named, std::source_location loc)
    : printed_(std::move(printed)),
      decide_(std::move(decide)),
      by_value_(by_value),
      may_offload_(may_offload),
      recompute_named_(std::move(recompute_named)),
      loc_(loc) {}

bool Policy::equals(const ParamObject& o) const {
  if (this == &o) return true;
  auto* p = dynamic_cast<const Policy*>(&o);
  return p && by_value_ && p->by_value_ && p->printed_ == printed_;
}

std::string detail::describe_equation(const Primitive& p, const std::vector<ShapedArray>& avals,
                              const Params& params) {
  std::string s = p.name;
  std::string ps;
  for (auto& [k, v] : params.items()) {
    if (std::holds_alternative<ClosedJaxprPtr>(v) || std::holds_alternative<std::vector<ClosedJaxprPtr>>(v))
      continue;
    ps += (ps.empty() ? "" : " ") + k + "=" + param_to_string(v);
  }
  if (!ps.empty()) s += "[" + ps + "]";
  s += "(";
  for (size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + avals[i].str();
  return s + ")";
}

namespace {
bool valid_kind(MemoryKind k) {
  return k == MemoryKind::device || k == MemoryKind::pinned_host || k == MemoryKind::unpinned_host;
}

// Empty when the devices have memory kind k (every device of a process has the same memories,
// core/device.h); else why not, naming the device and the memories it has.
std::string missing_kind(MemoryKind k) {
  const Device d = device(0);
  std::string kinds;
  for (const MemorySpace& m : d.memories) {
    if (m.kind == k) return "";
    kinds += std::string(kinds.empty() ? "" : ", ") + memory_kind_name(m.kind);
  }
  const std::string name = valid_kind(k) ? std::string(memory_kind_name(k)) : std::to_string(int(k)) + " (an unknown memory kind)";
  return "memory kind " + name + ", which " + d.str() + " does not have (its memories: " + kinds + ")";
}
}  // namespace

PolicyDecision Policy::operator()(const Primitive& p, const std::vector<ShapedArray>& avals,
                                  const Params& params) const {
  PolicyDecision d = decide_(p, avals, params);
  if (d.valueless_by_exception())
    throw ValueError("remat policy " + printed_ + " returned an invalid decision for equation " +
                     detail::describe_equation(p, avals, params), loc_);
  if (auto* off = std::get_if<Offloadable>(&d)) {
    for (MemoryKind k : {off->src, off->dst})
      if (std::string missing = missing_kind(k); !missing.empty())
        throw ValueError("remat policy " + printed_ + " returned Offloadable " + (k == off->dst ? "to " : "from ") +
                         missing + ", for equation " + detail::describe_equation(p, avals, params), loc_);
    if (off->src == off->dst)
      throw ValueError("remat policy " + printed_ + " returned Offloadable from " +
                       memory_kind_name(off->src) + " to the same memory kind for equation " +
                       detail::describe_equation(p, avals, params), loc_);
  }
  return d;
}

SaveablePolicy Policy::saveable() const {
  // Copy the state so the function does not depend on this object's lifetime.
  Policy copy = *this;
  return [copy](const Primitive& p, const std::vector<ShapedArray>& a, const Params& ps) {
    return copy(p, a, ps);
  };
}

SaveablePolicy Policy::saveable_for(const Jaxpr& body) const {
  SaveablePolicy base = saveable();
  if (recompute_named_.empty()) return base;
  // The equations whose output is named with an excluded name (and the name equations) are
  // recomputed; they are recognised by the address of their params in `body`.
  std::unordered_set<Var, VarHash> named_inputs;
  auto forced = std::make_shared<std::unordered_set<const Params*>>();
  for (auto& e : body.eqns)
    if (CheckpointNameParams::is(e) && recompute_named_.count(checkpoint_name_params(e).name)) {
      forced->insert(&e.params);
      if (auto* v = std::get_if<Var>(&e.inputs[0])) named_inputs.insert(*v);
    }
  for (auto& e : body.eqns)
    for (auto& o : e.outputs)
      if (named_inputs.count(o)) forced->insert(&e.params);
  return [base, forced](const Primitive& p, const std::vector<ShapedArray>& a, const Params& ps) -> PolicyDecision {
    if (forced->count(&ps)) return Recompute{};
    return base(p, a, ps);
  };
}

MemoryKindArg::MemoryKindArg(const char* s, std::source_location loc)
    : MemoryKindArg(std::string(s), loc) {}
MemoryKindArg::MemoryKindArg(const std::string& s, std::source_location l) : loc(l) {
  if (s == "device" || s == "pinned_host" || s == "unpinned_host")
    kind = memory_kind_from_name(s, l);
  else
    unknown = s.empty() ? std::string("(empty)") : s;
}
MemoryKind MemoryKindArg::resolve(const char* fn) const {
  if (unknown.empty()) return kind;
  try {
    memory_kind_from_name(unknown, loc);
  } catch (const ValueError& e) {
    throw ValueError(std::string(fn) + ": " + e.message(), loc);
  }
  return kind;
}

PolicyPtr detail::policy_from_params(const Params& params) {
  const CallParams c = checkpoint_params(params);
  if (!c.policy) return checkpoint_policies::nothing_saveable();
  auto p = std::dynamic_pointer_cast<const Policy>(*c.policy);
  return p ? p : checkpoint_policies::nothing_saveable();
}

namespace checkpoint_policies {
namespace {

PolicyDecision from_bool(bool b) { return b ? PolicyDecision{Saveable{}} : PolicyDecision{Recompute{}}; }

bool is_dot_no_batch(const Primitive& p, const Params& params) {
  if (!DotGeneralParams::is(p)) return false;
  lax::DotDimensionNumbers d = DotGeneralParams::from(params).dimension_numbers;
  return d.lhs_batch.empty() && d.rhs_batch.empty();
}

std::string names_str(const std::vector<std::string>& names) {
  std::string s;
  // As Python prints a tuple of strings: ('a',) for one name, ('a', 'b') for more.
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + ("'" + names[i] + "'");
  return names.size() == 1 ? s + "," : s;
}

std::vector<std::string> sorted_unique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// The name a `name` (checkpoint_name) equation gives, or "" for any other primitive.
std::string name_of(const Primitive& prim, const Params& params) {
  return CheckpointNameParams::is(prim) ? CheckpointNameParams::from(params).name : std::string();
}

}  // namespace

PolicyPtr everything_saveable() {
  static PolicyPtr p = std::make_shared<Policy>(
      "everything_saveable", [](const Primitive&, const std::vector<ShapedArray>&, const Params&) {
        return PolicyDecision{Saveable{}};
      }, true, false);
  return p;
}

PolicyPtr nothing_saveable() {
  static PolicyPtr p = std::make_shared<Policy>(
      "nothing_saveable", [](const Primitive&, const std::vector<ShapedArray>&, const Params&) {
        return PolicyDecision{Recompute{}};
      }, true, false);
  return p;
}

PolicyPtr dots_saveable() {
  static PolicyPtr p = std::make_shared<Policy>(
      "dots_saveable", [](const Primitive& prim, const std::vector<ShapedArray>&, const Params&) {
        return from_bool(DotGeneralParams::is(prim));
      }, true, false);
  return p;
}

PolicyPtr dots_with_no_batch_dims_saveable() {
  static PolicyPtr p = std::make_shared<Policy>(
      "dots_with_no_batch_dims_saveable",
      [](const Primitive& prim, const std::vector<ShapedArray>&, const Params& params) {
        return from_bool(is_dot_no_batch(prim, params));
      }, true, false);
  return p;
}

PolicyPtr checkpoint_dots() { return dots_saveable(); }

PolicyPtr checkpoint_dots_with_no_batch_dims() { return dots_with_no_batch_dims_saveable(); }

PolicyPtr offload_dot_with_no_batch_dims(MemoryKindArg src, MemoryKindArg dst) {
  MemoryKind s = src.resolve("offload_dot_with_no_batch_dims"), d = dst.resolve("offload_dot_with_no_batch_dims");
  std::string printed = std::string("offload_dot_with_no_batch_dims(offload_src='") + memory_kind_name(s) +
                        "', offload_dst='" + memory_kind_name(d) + "')";
  return std::make_shared<Policy>(
      printed,
      [s, d](const Primitive& prim, const std::vector<ShapedArray>&, const Params& params) -> PolicyDecision {
        if (is_dot_no_batch(prim, params)) return Offloadable{s, d};
        return Recompute{};
      }, true, true);
}

PolicyPtr save_only_these_names(std::vector<std::string> names) {
  names = sorted_unique(std::move(names));
  std::set<std::string> set(names.begin(), names.end());
  return std::make_shared<Policy>(
      "save_only_these_names(" + names_str(names) + ")",
      [set](const Primitive& prim, const std::vector<ShapedArray>&, const Params& params) {
        return from_bool(CheckpointNameParams::is(prim) && set.count(name_of(prim, params)) > 0);
      }, true, false);
}

PolicyPtr save_any_names_but_these(std::vector<std::string> names) {
  names = sorted_unique(std::move(names));
  std::set<std::string> set(names.begin(), names.end());
  return std::make_shared<Policy>(
      "save_any_names_but_these(" + names_str(names) + ")",
      [set](const Primitive& prim, const std::vector<ShapedArray>&, const Params& params) {
        return from_bool(CheckpointNameParams::is(prim) && set.count(name_of(prim, params)) == 0);
      }, true, false);
}

PolicyPtr save_anything_except_these_names(std::vector<std::string> names) {
  names = sorted_unique(std::move(names));
  std::set<std::string> set(names.begin(), names.end());
  return std::make_shared<Policy>(
      "save_anything_except_these_names(" + names_str(names) + ")",
      [set](const Primitive& prim, const std::vector<ShapedArray>&, const Params& params) {
        if (CheckpointNameParams::is(prim)) return from_bool(set.count(name_of(prim, params)) == 0);
        return from_bool(true);
      }, true, false, set);
}

PolicyPtr save_and_offload_only_these_names(std::vector<std::string> saved,
                                            std::vector<std::string> offloaded, MemoryKindArg src,
                                            MemoryKindArg dst, std::source_location loc) {
  saved = sorted_unique(std::move(saved));
  offloaded = sorted_unique(std::move(offloaded));
  std::vector<std::string> both;
  std::set_intersection(saved.begin(), saved.end(), offloaded.begin(), offloaded.end(),
                        std::back_inserter(both));
  if (!both.empty())
    throw ValueError("save_and_offload_only_these_names: the names should be exclusive and should not "
                     "intersect in names_which_can_be_saved and names_which_can_be_offloaded; got "
                     "names_which_can_be_saved=(" + names_str(saved) + "), names_which_can_be_offloaded=(" +
                         names_str(offloaded) + ") and the intersection (" + names_str(both) + ")",
                     loc);
  MemoryKind s = src.resolve("save_and_offload_only_these_names"),
             d = dst.resolve("save_and_offload_only_these_names");
  std::set<std::string> sv(saved.begin(), saved.end()), of(offloaded.begin(), offloaded.end());
  std::string printed = "save_and_offload_only_these_names(names_which_can_be_saved=(" + names_str(saved) +
                        "), names_which_can_be_offloaded=(" + names_str(offloaded) + "), offload_src='" +
                        memory_kind_name(s) + "', offload_dst='" + memory_kind_name(d) + "')";
  return std::make_shared<Policy>(
      printed,
      [sv, of, s, d](const Primitive& prim, const std::vector<ShapedArray>&, const Params& params) -> PolicyDecision {
        if (CheckpointNameParams::is(prim)) {
          std::string n = name_of(prim, params);
          if (sv.count(n)) return Saveable{};
          if (of.count(n)) return Offloadable{s, d};
        }
        return Recompute{};
      }, true, true);
}

PolicyPtr save_from_both_policies(PolicyPtr a, PolicyPtr b, std::source_location loc) {
  if (!a || !b) throw ValueError("save_from_both_policies: a policy is null", loc);
  for (auto* p : {&a, &b})
    if ((*p)->may_offload())
      throw ValueError("save_from_both_policies: the policies must return only Saveable or Recompute "
                       "(JAX: booleans), but " + (*p)->str() + " can return Offloadable",
                       loc);
  std::string printed = "save_from_both_policies(" + a->str() + ", " + b->str() + ")";
  return std::make_shared<Policy>(
      printed,
      [a, b, printed, loc](const Primitive& prim, const std::vector<ShapedArray>& avals,
                      const Params& params) -> PolicyDecision {
        PolicyDecision x = (*a)(prim, avals, params), y = (*b)(prim, avals, params);
        for (auto* d : {&x, &y})
          if (std::holds_alternative<Offloadable>(*d))
            throw ValueError(printed + ": the policies must return only Saveable or Recompute (JAX: "
                             "booleans), got Offloadable for equation " +
                             detail::describe_equation(prim, avals, params), loc);
        return from_bool(std::holds_alternative<Saveable>(x) || std::holds_alternative<Saveable>(y));
      }, true, false, std::set<std::string>{}, loc);
}

PolicyPtr custom(std::string name, SaveablePolicy fn, std::source_location loc) {
  if (!fn) throw ValueError("checkpoint_policies::custom(" + name + "): the callback is empty", loc);
  // may_offload stays false: whether a callback offloads is only known when it is asked
  // (save_from_both_policies then rejects an Offloadable decision).
  return std::make_shared<Policy>(std::move(name), std::move(fn), false, false,
                                  std::set<std::string>{}, loc);
}

}  // namespace checkpoint_policies
}  // namespace minijax
