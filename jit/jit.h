// minijax jit with in_shardings/out_shardings: traces once per signature (core's Staged), then
// propagates shardings, partitions to one SPMD program and runs it on the virtual devices.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/api.h"
#include "core/jaxpr.h"
#include "jit/runtime/reference_executor.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"
#include "sharding/propagate_shardings.h"
#include "sharding/sharded_array.h"
#include "sharding/sharding.h"

namespace minijax {

/// Options of the sharded jit (JAX's jax.jit keyword arguments).
/// `in_shardings`: one entry per flattened argument leaf (pytree leaves of all arguments, in
/// order), or exactly one entry applied to every leaf (JAX's pytree-prefix rule at the root);
/// empty = none given. nullopt = unconstrained (propagation decides). `out_shardings`: the same
/// per flattened output leaf. A spec shorter than a leaf's rank leaves its trailing dims
/// unsharded (closed); UNCONSTRAINED entries are open dims.
struct JitOptions {
  std::string name = "jit";
  std::vector<std::optional<NamedSharding>> in_shardings, out_shardings;
};

/// The partitioned form of one call signature (JAX's `jit(f).lower(...)`): the traced global
/// program, its propagated shardings and the SPMD program every device runs. With no sharding
/// given anywhere it is the traced program unpartitioned, on one device: `mesh` is null,
/// `program` is the traced program itself, the shardings and `propagation` are empty.
struct Lowered {
  std::shared_ptr<const Mesh> mesh;  ///< null when unpartitioned (no sharding given)
  /// The traced program after dead-code elimination (every input kept); its invars are f's
  /// constants then its arguments.
  ClosedJaxprPtr jaxpr;
  size_t num_consts = 0;
  PropagationResult propagation;
  Jaxpr program;                       ///< the SPMD program (local shapes, collectives)
  std::vector<Sharding> in_shardings;  ///< per invar of `jaxpr` (constants then arguments)
  std::vector<Sharding> out_shardings; ///< per output: the sharding each output is returned in

  /// The global program annotated with its shardings and reshards (propagation.text), then the
  /// SPMD program, then one line per collective of the SPMD program (bodies included) with the
  /// bytes and messages each device sends and receives under run_spmd's traffic model
  /// (spmd_collectives_text, sharding/reshard_api.h: all_reduce in its two-phase form,
  /// collective_permute from its pairs, the partitioner's ragged exchange from its tables).
  /// Unpartitioned (no mesh): a header line, then the traced program.
  std::string as_text() const;
};

/// One sharded run: the per-device outputs and what run_spmd measured.
struct SpmdRun {
  std::shared_ptr<const Lowered> lowered;
  std::vector<std::vector<Array>> outputs;  ///< [mesh position][output], local shards
  SpmdStats stats;
};

/// One line per collective run_spmd measured (`stats`, in run order; a loop's once per
/// iteration), printed by collective_line (sharding/reshard_api.h) as spmd_collectives_text
/// prints the static model, without message counts: `eqn 12 all_reduce over data: 256 B sent,
/// 256 B received per device` (`lo..hi B` when devices differ). The axes are the collective's
/// own, also inside a body; a collective inside a body is placed by its top-level equation of
/// `program` (`eqn 1 closed_call reshard_ragged / ragged_all_to_all over ('x', 'y'): ...`;
/// loops and conds without naming the body or branch).
std::string collectives_text(const SpmdStats& stats, const Jaxpr& program);

namespace detail {

/// The sharding each operand is given: from `given` (one per leaf, or one for all, or empty;
/// to_sharding against the leaf's rank), else the sharding of the leaf's value in `values` when
/// it is a sharded Array (`values` empty: none), else nullopt. Operands 0..num_consts-1 (f's
/// constants) get nullopt. Throws ShardingError at `loc` when `given` has a count other than 0, 1
/// or the number of leaves `what` ("in_shardings"/"out_shardings"), a spec does not fit its
/// leaf, or two shardings are on different meshes. `mesh` receives the common mesh (if any).
std::vector<std::optional<Sharding>> resolve_shardings(
    const std::vector<std::optional<NamedSharding>>& given, const std::vector<ShapedArray>& avals,
    const std::vector<Array>& values, size_t num_consts, const char* what,
    std::shared_ptr<const Mesh>& mesh, std::source_location loc);

/// Propagates and partitions `jaxpr` (constvars already converted to invars) for the resolved
/// in/out shardings on `mesh`. Dead equations are removed first (dce_jaxpr, every input kept).
/// Outputs are never partial sums unless an out_sharding asks: propagate_shardings reduces them.
std::shared_ptr<const Lowered> lower_sharded(const ClosedJaxprPtr& jaxpr, size_t num_consts,
                                             const std::vector<std::optional<Sharding>>& in,
                                             const std::vector<std::optional<Sharding>>& out,
                                             const std::shared_ptr<const Mesh>& mesh,
                                             std::source_location loc);

/// The unpartitioned Lowered of `jaxpr` (constvars already converted to invars, `num_consts`
/// of them leading): dead equations removed (dce_jaxpr, every input kept), no mesh, `program`
/// the traced program itself. What lower() returns when no sharding is given anywhere.
std::shared_ptr<const Lowered> lower_unsharded(const ClosedJaxprPtr& jaxpr, size_t num_consts);

/// Puts each operand onto its propagated input sharding (local_shards: an unsharded operand is
/// sliced, a sharded one keeps its shards or is resharded without being gathered) and runs the
/// SPMD program with run_spmd. Operands are concrete arrays. ShardingError for an unpartitioned
/// Lowered (no mesh).
SpmdRun run_lowered(const std::shared_ptr<const Lowered>& lowered, const std::vector<Array>& operands,
                    std::source_location loc);

/// Under a trace: the body of the pjit a sharded jit binds. `body` (constvars converted) wrapped
/// so that each operand i with in[i] passes through sharding_constraint(in[i]) before the body
/// and each output k with out[k] after it (JAX's pjit inside a trace: autodiff and vmap carry
/// the constraints, their JVP/transpose constrain tangents and cotangents the same way). Returns
/// the wrapped jaxpr (constvars converted) and its extra constants (leading operands).
std::pair<ClosedJaxprPtr, std::vector<Array>> constrained_body(
    const ClosedJaxprPtr& body, const std::vector<std::optional<Sharding>>& in,
    const std::vector<std::optional<Sharding>>& out, std::source_location loc);

}  // namespace detail

/// The object `jit(f, JitOptions)` returns. Calling it on concrete arguments: traces f once per
/// signature (core's Staged cache), propagates the shardings (in_shardings from the options; an
/// argument without one keeps its own sharding when it is a sharded Array, else is
/// unconstrained), partitions the program into one SPMD program (sharding/partition_spmd.h;
/// cached per signature and argument shardings), puts each argument onto its propagated input
/// sharding (local_shards), runs the program on the mesh's virtual devices (run_spmd) and
/// returns the outputs (pytree of f's result) as sharded Arrays in their propagated (or given)
/// out shardings (make_sharded_array; reading one gathers it). With no sharding anywhere (options
/// or sharded arguments) it is plain jit (one pjit equation, evaluated eagerly). Called under a
/// trace (grad, vmap, an outer jit or make_jaxpr) it binds one pjit whose body constrains the
/// inputs and outputs that have shardings (sharding_constraint), as JAX does.
template <class F>
class ShardedJit {
 public:
  ShardedJit(F f, JitOptions opts, std::source_location loc)
      : staged_(std::move(f), opts.name, &pjit_p(), loc),
        state_(std::make_shared<State>(State{std::move(opts), loc, {}, nullptr})) {}

  template <class... A>
  auto operator()(const A&... args) const {
    using R = std::decay_t<std::invoke_result_t<F&, const std::decay_t<A>&...>>;
    auto entry = staged_.traced(args...);
    if (!all_concrete(entry, args...)) {
      std::vector<Array> outs = bind_constrained(entry, args...);
      return tree_unflatten(std::any_cast<const R&>(entry.out_like), outs, state_->loc);
    }
    std::shared_ptr<const Lowered> low = lowering(entry, args...);
    if (!low) return staged_(args...);
    SpmdRun run = run_entry(entry, low, args...);
    std::vector<Array> outs;
    const std::vector<ShapedArray> out_avals = low->jaxpr->jaxpr->out_avals();
    for (size_t k = 0; k < low->out_shardings.size(); ++k) {
      std::vector<Array> shards;
      for (auto& dev : run.outputs) shards.push_back(dev[k]);
      outs.push_back(make_sharded_array(out_avals[k], low->out_shardings[k], std::move(shards),
                                        state_->loc));
    }
    state_->last = std::make_shared<SpmdRun>(std::move(run));
    return tree_unflatten(std::any_cast<const R&>(entry.out_like), outs, state_->loc);
  }

  /// Runs like operator() but returns the per-device output shards and statistics instead of
  /// sharded Arrays. ShardingError when no sharding is given anywhere (nothing to partition) or
  /// when called under a trace.
  template <class... A>
  SpmdRun run_spmd_shards(const A&... args) const {
    auto entry = staged_.traced(args...);
    if (!all_concrete(entry, args...))
      throw ShardingError("jit '" + state_->opts.name + "': run_spmd_shards needs concrete arguments",
                          state_->loc);
    std::shared_ptr<const Lowered> low = lowering(entry, args...);
    if (!low)
      throw ShardingError("jit '" + state_->opts.name +
                              "': no in_shardings or out_shardings given, nothing to partition",
                          state_->loc);
    SpmdRun run = run_entry(entry, low, args...);
    state_->last = std::make_shared<SpmdRun>(run);
    return run;
  }

  /// JAX's jit(f).lower(args...): the propagated and partitioned program for this signature
  /// and these argument shardings; never null: with no sharding given anywhere, the traced
  /// program unpartitioned on one device (detail::lower_unsharded; as JAX's lower, which always
  /// works). Arguments may be abstract only in their values: they must be concrete Arrays
  /// (ShardingError otherwise).
  template <class... A>
  std::shared_ptr<const Lowered> lower(const A&... args) const {
    auto entry = staged_.traced(args...);
    if (!all_concrete(entry, args...))
      throw ShardingError("jit '" + state_->opts.name + "': lower needs concrete arguments",
                          state_->loc);
    if (auto low = lowering(entry, args...)) return low;
    return detail::lower_unsharded(entry.jaxpr, entry.consts.size());
  }

  /// The last sharded run (its program, per-device outputs, collectives and bytes), or nullptr.
  std::shared_ptr<const SpmdRun> last_run() const { return state_->last; }
  /// How many times f was traced (once per new signature).
  int trace_count() const { return staged_.trace_count(); }

 private:
  struct State {
    JitOptions opts;
    std::source_location loc;
    std::map<std::string, std::shared_ptr<const Lowered>> lowered;  // per jaxpr + shardings
    std::shared_ptr<const SpmdRun> last;
  };

  template <class E, class... A>
  static bool all_concrete(const E& entry, const A&... args) {
    bool concrete = true;
    for (auto& c : entry.consts) concrete &= c.is_concrete();
    for (auto& a : detail::flatten_args(args...)) concrete &= a.is_concrete();
    return concrete;
  }

  // Under a trace: one pjit whose body constrains the inputs/outputs given shardings.
  template <class E, class... A>
  std::vector<Array> bind_constrained(const E& entry, const A&... args) const {
    State& s = *state_;
    std::vector<ShapedArray> in_avals = entry.jaxpr->jaxpr->in_avals();
    std::vector<ShapedArray> out_avals = entry.jaxpr->jaxpr->out_avals();
    std::shared_ptr<const Mesh> mesh;
    auto in = detail::resolve_shardings(s.opts.in_shardings, in_avals, {}, entry.consts.size(),
                                        "in_shardings", mesh, s.loc);
    auto out = detail::resolve_shardings(s.opts.out_shardings, out_avals, {}, 0, "out_shardings",
                                         mesh, s.loc);
    std::vector<Array> operands;
    ClosedJaxprPtr body = entry.jaxpr;
    if (mesh) {
      auto [wrapped, consts] = detail::constrained_body(entry.jaxpr, in, out, s.loc);
      body = wrapped;
      operands = consts;
    }
    operands.insert(operands.end(), entry.consts.begin(), entry.consts.end());
    std::vector<Array> flat = detail::flatten_args(args...);
    operands.insert(operands.end(), flat.begin(), flat.end());
    return bind_call(pjit_p(), body, s.opts.name, operands, s.loc);
  }

  template <class E, class... A>
  std::shared_ptr<const Lowered> lowering(const E& entry, const A&... args) const {
    State& s = *state_;
    std::vector<ShapedArray> in_avals = entry.jaxpr->jaxpr->in_avals();
    std::vector<ShapedArray> out_avals = entry.jaxpr->jaxpr->out_avals();
    const size_t num_consts = entry.consts.size();
    std::vector<Array> flat = detail::flatten_args(args...);
    std::shared_ptr<const Mesh> mesh;
    auto in = detail::resolve_shardings(s.opts.in_shardings, in_avals, flat, num_consts,
                                        "in_shardings", mesh, s.loc);
    auto out = detail::resolve_shardings(s.opts.out_shardings, out_avals, {}, 0, "out_shardings",
                                         mesh, s.loc);
    if (!mesh) return nullptr;
    // One lowering per traced program and input shardings (those of sharded arguments vary).
    std::string key = std::to_string(reinterpret_cast<uintptr_t>(entry.jaxpr.get()));
    for (auto& sh : in) key += "|" + (sh ? sh->mesh->str() + sh->str() : std::string("-"));
    auto it = s.lowered.find(key);
    if (it != s.lowered.end()) return it->second;
    auto low = detail::lower_sharded(entry.jaxpr, num_consts, in, out, mesh, s.loc);
    s.lowered.emplace(key, low);
    return low;
  }

  template <class E, class... A>
  SpmdRun run_entry(const E& entry, const std::shared_ptr<const Lowered>& low, const A&... args) const {
    std::vector<Array> operands = entry.consts;
    std::vector<Array> flat = detail::flatten_args(args...);
    operands.insert(operands.end(), flat.begin(), flat.end());
    return detail::run_lowered(low, operands, state_->loc);
  }

  Staged<F> staged_;
  std::shared_ptr<State> state_;
};

/// jit(f, options): jax.jit(f, in_shardings=..., out_shardings=...). See ShardedJit for what a
/// call does, JitOptions for the prefix rule. Errors (ShardingError at the call site `loc`): a
/// shardings list whose length is neither 0, 1 nor the number of leaves; a spec longer than its
/// leaf's rank, naming an axis twice or an axis the mesh lacks; shardings on different meshes;
/// a program the partitioner cannot split (uneven shards and the other cases listed in
/// sharding/partition_spmd.h). Source: jax.jit; JAX's pjit partitioning.
template <class F>
ShardedJit<F> jit(F f, JitOptions options, std::source_location loc = std::source_location::current()) {
  return ShardedJit<F>(std::move(f), std::move(options), loc);
}

}  // namespace minijax
