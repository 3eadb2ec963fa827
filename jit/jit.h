// minijax jit: JAX's staged API — jit(f)(args), jit(f).lower(args).compile() — with static and
// donated arguments and shardings: the templates that flatten and unflatten pytrees over JitCore.
#pragma once
#include <any>
#include <array>
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
#include "core/call_signature.h"
#include "core/jaxpr.h"
#include "core/staging.h"
#include "core/to_dot.h"
#include "core/trace_cache.h"
#include "jit/caches.h"
#include "jit/executable.h"
#include "jit/runtime/collective_stats.h"
#include "memory/memory_analysis.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"
#include "sharding/propagate_shardings.h"
#include "sharding/sharding.h"

namespace minijax {

/// Options of jit (JAX's jax.jit keyword arguments).
/// `in_shardings`: one entry per flattened argument leaf (pytree leaves of the traced arguments,
/// in order), or exactly one entry applied to every leaf (JAX's pytree-prefix rule at the root);
/// empty = none given. nullopt = unconstrained (propagation decides). `out_shardings`: the same
/// per flattened output leaf. A spec shorter than a leaf's rank leaves its trailing dims
/// unsharded (closed); UNCONSTRAINED entries are open dims. Memory kinds (JAX's): an
/// out_sharding places its output in its memory kind (a pinned_host value returned with a device
/// out_sharding is moved to the device, and the reverse); an in_sharding says where the argument
/// already is: one in another memory kind than the argument's is a ValueError naming the
/// function, the argument and both kinds.
/// `static_argnums`: positions (negative from the end) of arguments passed to f as they are, not
/// traced; arguments that are not pytrees of Arrays are always static. A static argument's type
/// needs std::hash and == (a static_assert says so); naming an Array argument throws TypeError
/// (Arrays are not hashable, as in JAX). Each new static value traces and compiles anew.
/// `donate_argnums`: positions whose Array leaves are donated: their buffers may hold outputs,
/// and reading them after the call throws ValueError.
/// `dump_dir`: the jaxpr after each compiler pass, one numbered file per pass
/// (`<dump_dir>/<name>-<16 hex digits of the traced program's hash>/NN-<pass>.txt`: one folder
/// per compiled signature). Throws IOError when the folder cannot be created or written.
/// `keep_llvm_ir`: keep the optimized LLVM IR for Compiled::as_text(true).
/// `share_traces`: whether the traces of f are shared with every other jit object of the same
/// callable (see TraceSharing, core/trace_cache.h, and Jit): by default they are when f is a
/// function pointer, a captureless lambda or empty function object, or has std::hash and ==.
///
/// Two ways to write them. C++20 designated initialisers, which must follow the declaration
/// order below (name, in_shardings, out_shardings, static_argnums, donate_argnums, dump_dir,
/// keep_llvm_ir, share_traces; fields may be left out, but out of order is a compile error):
///   mj::jit(f, {.name = "train_step", .donate_argnums = {0}})
/// or the builder, one setter per field, in any order; build() returns the same JitOptions, so
/// jit checks it exactly as the aggregate's (a bad static_argnums entry is the same error):
///   mj::jit(f, mj::JitOptions::builder().donate_argnums({0}).name("train_step").build())
struct JitOptions {
  std::string name = "jit";
  std::vector<std::optional<NamedSharding>> in_shardings, out_shardings;
  std::vector<int> static_argnums;
  std::vector<int> donate_argnums;
  std::string dump_dir;
  bool keep_llvm_ir = false;
  TraceSharing share_traces = TraceSharing::automatic;

  class Builder;
  /// A builder of JitOptions starting from the defaults above (see Builder).
  static Builder builder();
};

/// JitOptions set field by field in any order: each setter sets the field of its name and
/// returns the builder; build() returns the options (the fields not set keep their defaults).
class JitOptions::Builder {
 public:
  Builder& name(std::string v) { o_.name = std::move(v); return *this; }
  Builder& in_shardings(std::vector<std::optional<NamedSharding>> v) { o_.in_shardings = std::move(v); return *this; }
  Builder& out_shardings(std::vector<std::optional<NamedSharding>> v) { o_.out_shardings = std::move(v); return *this; }
  Builder& static_argnums(std::vector<int> v) { o_.static_argnums = std::move(v); return *this; }
  Builder& donate_argnums(std::vector<int> v) { o_.donate_argnums = std::move(v); return *this; }
  Builder& dump_dir(std::string v) { o_.dump_dir = std::move(v); return *this; }
  Builder& keep_llvm_ir(bool v = true) { o_.keep_llvm_ir = v; return *this; }
  Builder& share_traces(TraceSharing v) { o_.share_traces = v; return *this; }
  JitOptions build() const { return o_; }

 private:
  JitOptions o_;
};

inline JitOptions::Builder JitOptions::builder() { return Builder(); }

/// JAX's jax.ShapeDtypeStruct: an argument given by its shape and dtype alone, for
/// jit(f).lower(...). It converts to an abstract mj::Array (no buffer; reading it throws
/// ValueError), so it can fill any Array field of a user pytree; its sharding acts as that
/// leaf's in_sharding. Calling a jitted function (rather than lowering it) on one throws. The
/// conversion throws ValueError for a negative dimension or a size that overflows int64.
struct ShapeDtypeStruct {
  Shape shape;
  DType dtype = DType::f32;
  std::optional<NamedSharding> sharding = {};
  bool weak_type = false;
  operator Array() const;
};

template <>
struct pytree<ShapeDtypeStruct> {
  static void flatten(const ShapeDtypeStruct& s, std::vector<Array>& out) { out.push_back(Array(s)); }
  static void flatten_with_path(const ShapeDtypeStruct& s, const std::string& prefix, PathLeaves& out) {
    out.emplace_back(prefix, Array(s));
  }
  static Array unflatten(const ShapeDtypeStruct&, const Array*& next) { return *next++; }
  static std::string structure(const ShapeDtypeStruct&) { return "*"; }
  static void check_same(const ShapeDtypeStruct&, const ShapeDtypeStruct&, std::source_location) {}
};

namespace detail {
template <class T>
struct traced_type {
  using type = std::decay_t<T>;
};
template <class T, size_t N>
struct traced_type<T[N]> {
  using type = const T*;
};
template <>
struct traced_type<ShapeDtypeStruct> {
  using type = Array;
};
/// The type f sees for a jit argument of type T: an Array for a ShapeDtypeStruct, a pointer to
/// the elements for a C array (a string literal), else T.
template <class T>
using traced_t = typename traced_type<std::remove_cv_t<T>>::type;
}  // namespace detail

/// The traced, propagated and partitioned form of one call signature. With no sharding given
/// anywhere it is the traced program unpartitioned, on one device: `mesh` is null, `program` is
/// the traced program itself, the shardings and `propagation` are empty.
struct LoweredProgram {
  std::shared_ptr<const Mesh> mesh;  ///< null when unpartitioned (no sharding given)
  /// The traced program after dead-code elimination (every input kept); its invars are f's
  /// constants then its arguments' leaves.
  ClosedJaxprPtr jaxpr;
  size_t num_consts = 0;
  PropagationResult propagation;
  Jaxpr program;                       ///< the SPMD program (local shapes, collectives)
  /// Per stable collective site id of `program` (Eqn::site): the index of its top-level
  /// equation holding it (number_collective_sites), for the compiled run's statistics.
  std::vector<size_t> site_eqn_index;
  std::vector<Sharding> in_shardings;  ///< per invar of `jaxpr` (constants then arguments)
  std::vector<Sharding> out_shardings; ///< per output: the sharding each output is returned in
  /// Where the lower phase's dumps went (JitOptions::dump_dir), so compile() continues there.
  DumpState dump;

  /// The global program annotated with its shardings and reshards (propagation.text), then the
  /// SPMD program, then one line per collective of the SPMD program (bodies included) with the
  /// bytes and messages each device sends and receives under run_spmd's traffic model.
  /// Unpartitioned (no mesh): a header line, then the traced program.
  std::string as_text() const;
};

/// JAX's picture of a lowered program: to_dot (core/to_dot.h) of `lowered.jaxpr`, the traced
/// program (`jit(f).lower(args...)`), its variables labelled with their propagated shardings
/// when it is partitioned (sharding/sharding_dot.h), with no sharding line when it is not.
std::string to_dot(const LoweredProgram& lowered, DotOptions opts = {});

struct SpmdExecutable;  // jit/runtime/execute_spmd.h
struct SpmdCall;

/// One sharded run: the per-device outputs and what was measured. From run_spmd_shards (the
/// reference executor): its traffic model's bytes and the live bytes. From a compiled call
/// (last_run()): stats.collectives holds the bytes each device's communicator counted per
/// collective executed (no peak_live_bytes: the allocator's memory_stats has those).
struct SpmdRun {
  std::shared_ptr<const LoweredProgram> lowered;
  std::vector<std::vector<Array>> outputs;  ///< [mesh position][output], local shards
  SpmdStats stats;
  /// A compiled call still running (null once finished_run has copied its statistics).
  std::shared_ptr<const SpmdCall> call;
};

/// One line per collective run_spmd measured (`stats`, in run order; a loop's once per
/// iteration), printed as spmd_collectives_text prints the static model, without message counts.
std::string collectives_text(const SpmdStats& stats, const Jaxpr& program);

namespace detail {

/// Whether the current trace is the eval trace and every value in `a` and `b` (a call's leaves
/// and its function's constants) is concrete: then a jitted call executes; otherwise it is
/// staged as one pjit equation.
bool executes_now(const std::vector<Array>& a, const std::vector<Array>& b, std::source_location loc);

/// Normalizes argnums (negative from the end) against nargs (at most 64) into a bit mask (bit i:
/// argument i); ValueError for out-of-range ones.
uint64_t argnum_mask(const std::vector<int>& argnums, size_t nargs, const char* what, std::source_location loc);

/// Throws TypeError naming jit `name` and the positional argument when a leaf is abstract (a
/// ShapeDtypeStruct): only lower() accepts those. `first_leaf[p]` is argument p's first leaf.
void check_not_abstract(const std::vector<Array>& leaves, const uint32_t* first_leaf, size_t nargs,
                        const std::string& name, std::source_location loc);

/// Appends each leaf's dtype, weak type, memory kind and shape and, for sharded Arrays, its mesh
/// and sharding to `sig` (see Signature).
void append_leaf_signature(Signature& sig, const std::vector<Array>& leaves, std::source_location loc);

/// The readable form of a call's signature (structures, static values by hash, leaf avals with
/// weak types and shardings) for error messages.
std::string signature_text(const std::vector<std::string>& structures, const std::vector<Array>& leaves,
                           std::source_location loc);

/// The text of Compiled::as_text: the program after the passes, the kernels (KIR), the buffer
/// plan, how each equation was lowered, memory and cost; the optimized LLVM IR when asked.
std::string compiled_text(const Executable& exe, bool llvm_ir);

}  // namespace detail

/// The arguments of one jit call split into traced leaves and static values (at most 64).
struct CallArgs {
  uint64_t static_mask = 0;             ///< bit p: positional argument p is static
  uint64_t donate_mask = 0;             ///< bit p: positional argument p is donated
  std::vector<Array> leaves;            ///< the traced arguments' leaves, in order
  std::array<uint32_t, 65> first_leaf{};///< per positional argument its first leaf; [nargs] = #leaves
  size_t nargs = 0;
  std::vector<detail::StaticKey> statics;
  detail::Signature sig;                ///< the signature: types, structures, avals, static hashes

  bool is_static(size_t p) const { return (static_mask >> p) & 1; }
  /// Per leaf: whether its argument is donated.
  std::vector<bool> donated_leaves() const;
};

namespace detail {
/// Splits jit arguments by JitOptions (static_argnums, donate_argnums; non-pytree arguments are
/// static) and builds the signature. TypeError for a static_argnums entry naming a pytree of
/// Arrays or a donate_argnums entry naming a static argument.
template <class... A>
CallArgs split_args(const JitOptions& opts, std::source_location loc, const A&... args);
/// The readable signature of a call (signature_text of its structures and leaves).
template <class... A>
std::string describe_args(const CallArgs& ca, std::source_location loc, const A&... args);

/// A non-owning reference to a callable: the template part of jit hands its core the functions
/// that need f's type (tracing, re-running); the core calls them only while that call runs.
template <class Sig>
class FunctionRef;
template <class Ret, class... Args>
class FunctionRef<Ret(Args...)> {
 public:
  template <class Fn>
    requires(!std::is_same_v<std::remove_cvref_t<Fn>, FunctionRef>)
  FunctionRef(Fn& fn)  // NOLINT(google-explicit-constructor)
      : obj_(static_cast<void*>(&fn)),
        call_([](void* o, Args... a) -> Ret { return (*static_cast<Fn*>(o))(std::forward<Args>(a)...); }) {}
  Ret operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }

 private:
  void* obj_;
  Ret (*call_)(void*, Args...);
};

/// Traces f on abstract leaves of `avals` (the call's static values as given) into a jaxpr, and
/// stores f's result with abstract leaves (abstract_like) in `out_like`.
using TraceFn = FunctionRef<ClosedJaxpr(const std::vector<ShapedArray>& avals, std::any& out_like)>;
/// Calls f again, op by op, on the call's own arguments (debug_nans / debug_infs).
using RerunFn = FunctionRef<void()>;
/// The readable signature of the call (describe_args), made only for an error.
using DescribeFn = FunctionRef<std::string()>;

/// The non-template part of Lowered: the lowering and what compile() and the Compiled need.
struct LoweredCall : LoweredProgram {
  std::vector<Array> consts;
  std::any out_like;
  std::vector<bool> donated;               ///< per program input
  std::vector<StaticKey> statics;
  Signature signature;                     ///< CallArgs::sig of the lowered call
  std::string signature_text;              ///< its readable form (for error messages)
  JitOptions options;
  std::source_location loc;
  std::shared_ptr<const LoweredProgram> spmd;  ///< the sharded lowering (null when unsharded)
};

/// What one call of a jit gives its template part: the flat outputs, f's result structure (the
/// trace's out_like, alive while `keep` is) and whether the call was staged (under a trace).
struct JitCallResult {
  std::vector<Array> outs;
  const std::any* out_like = nullptr;
  std::shared_ptr<const void> keep;  ///< the signature's entry, which holds its trace
  bool staged = false;
};

/// The non-template core of Jit (jit/jit.cc): one entry per signature (traced once, through the
/// shared trace cache when f is identifiable), compiled once (sharded: lowered, partitioned and
/// compiled for its mesh), run or staged. Copies share one state (a Jit's copies share their
/// cache). Thread-safe.
class JitCore {
 public:
  JitCore(JitOptions opts, std::source_location loc, CallableId fn);
  const JitOptions& options() const;
  std::source_location loc() const;
  /// Jit::operator() on the split arguments `ca`.
  JitCallResult call(const CallArgs& ca, TraceFn trace, RerunFn rerun) const;
  /// Jit::run_spmd_shards on the split arguments `ca`.
  SpmdRun run_spmd_shards(const CallArgs& ca, TraceFn trace) const;
  /// Jit::lower on the split arguments `ca`.
  LoweredCall lower(const CallArgs& ca, TraceFn trace, DescribeFn describe) const;
  std::shared_ptr<const SpmdRun> last_run() const;
  int trace_count() const;
  void clear_cache() const;
  size_t cache_size() const;

 private:
  struct State;
  std::shared_ptr<State> s_;
};

/// Lowered::compile: the executable of `low` (sharded: also bound to its mesh, `*spmd`), with
/// capacity errors at `loc`.
void compile_lowered_call(const LoweredCall& low, std::source_location loc, std::shared_ptr<const Executable>* exe,
                          std::shared_ptr<const SpmdExecutable>* spmd);
/// Compiled::operator() on the split arguments `ca`: TypeError for another signature than the
/// lowered one (`describe` names it) or a call under a trace; the flat outputs.
std::vector<Array> call_compiled(const LoweredCall& low, const std::shared_ptr<const Executable>& exe,
                                 const std::shared_ptr<const SpmdExecutable>& spmd, const CallArgs& ca,
                                 DescribeFn describe);
/// The analyses of Compiled (the executable's).
std::map<std::string, double> executable_cost(const Executable& exe);
CompiledMemoryStats executable_memory(const Executable& exe);
}  // namespace detail

template <class R>
class Compiled;

/// JAX's `jit(f).lower(args...)`: the traced (and, with shardings, partitioned) program of one
/// signature. `as_text()` prints it; `compile()` compiles it.
template <class R>
struct Lowered : detail::LoweredCall {
  /// Compiles the program (shared with jit calls of the same program: the executable cache) and
  /// returns the callable executable; a sharded program's SPMD program is compiled once and runs
  /// on every device of its mesh. Throws ResourceExhaustedError when the predicted peak exceeds
  /// a capacity (detail::check_compiled_capacity), read at every call; at `loc`.
  Compiled<R> compile(std::source_location loc = std::source_location::current()) const;
};

/// JAX's `lowered.compile()`: a compiled program, callable with arguments of the lowered
/// signature (same pytree structure, avals and static values; TypeError otherwise). A call's
/// errors name the line of the compile() that made it: C++ cannot give a call site to a
/// function whose parameters end in a pack, as operator()'s do.
template <class R>
class Compiled {
 public:
  /// The program after the compiler's passes, its fused kernels (KIR), its buffer plan, how
  /// each equation was lowered, the memory and cost analyses; with llvm_ir the optimized LLVM IR
  /// (compile with JitOptions::keep_llvm_ir). Sharded: the lowering's text (global program,
  /// SPMD program, traffic model), then the compiled SPMD program's.
  std::string as_text(bool llvm_ir = false) const {
    if (!low_.spmd) return detail::compiled_text(*exe_, llvm_ir);
    return low_.as_text() + "\n" + detail::compiled_text(*exe_, llvm_ir);
  }
  /// JAX's keys: "flops", "transcendentals", "bytes accessed" (jit/passes/cost_analysis.h). Sharded:
  /// one device's share, counted on the compiled SPMD program (local shapes, collectives' bytes).
  std::map<std::string, double> cost_analysis() const { return detail::executable_cost(*exe_); }
  /// The planner's prediction (memory/memory_analysis.h). Sharded: one device's.
  CompiledMemoryStats memory_analysis() const { return detail::executable_memory(*exe_); }
  /// The executable (sharded: the SPMD program every device of the mesh runs).
  const std::shared_ptr<const Executable>& executable() const { return exe_; }

  template <class... A>
  R operator()(const A&... args) const;

 private:
  friend struct Lowered<R>;
  Lowered<R> low_;
  std::shared_ptr<const Executable> exe_;
  std::shared_ptr<const SpmdExecutable> spmd_;  ///< sharded: exe_ bound to the mesh
};

/// The object every jit overload returns (JAX's jax.jit). Calling it on concrete arguments
/// compiles the function on the first call of a signature (pytree structure, avals, weak types,
/// shardings, static values) and runs native code from then on; the signature cache is looked up
/// before tracing and hashes no constant by value. Concurrent calls of one signature trace and
/// compile once. Under a trace (grad, vmap, an outer jit, make_jaxpr) it binds one `pjit`
/// equation, which the compiler inlines; with shardings its body constrains inputs and outputs.
/// With shardings (options or sharded arguments) it propagates, partitions, compiles the SPMD
/// program once and runs it on every device of the mesh at once (jit/runtime/execute_spmd.h);
/// a call returns once its work is enqueued, its outputs pending until it completes.
///
/// Traces. A Jit keeps one entry per signature. When f is identifiable (TraceSharing: a function
/// pointer, by its type and address; a captureless lambda or other empty function object, by its
/// type; a type with std::hash and ==, by value) the trace behind an entry is taken from the
/// process-wide trace cache shared by every Jit of that callable, so `jit(f)(x); jit(f)(x);`
/// traces f once (JAX's jit keys its cache on the function, so does the same). Different
/// functions of one pointer type are different callables. A lambda with captures is never
/// shared: each Jit (with its copies) traces it once per signature. A trace is kept only when
/// every value f closed over is concrete, never a tracer of an enclosing trace; so no kept trace
/// holds a tracer. Values f reads through references or globals are read when it is traced (as
/// JAX reads a Python closure's variables): pass values that change as arguments, or use
/// TraceSharing::never for a function reading mutable global state. The shared cache owns its
/// traces and an entry of a Jit holds a reference to its trace, so dropping a shared trace
/// (a cache bound, clearing) never frees one a live Jit uses. Executables are shared anyway
/// (jit/compile_cache.h, keyed by the compiled program).
///
/// Bounds. Each per-signature entry is an entry of the process-wide cache budget (kind "jit
/// trace"; core/cache_budget.h): with the shared traces and the executables it counts toward
/// config().compilation_cache_max_entries, least recently used evicted first (a call touches its
/// entry, trace and executable). An entry refers to its unsharded executable weakly: the
/// process-wide executable cache owns executables (bounded by compilation_cache_max_bytes too), so
/// an executable evicted there is compiled again at the entry's next call (a call running holds
/// it). A sharded entry holds its SPMD executable until the entry goes. clear_cache() drops this
/// Jit's entries; clear_caches() every cache's.
/// Source: jax/_src/pjit.py (_infer_params' cache keyed on the function and the signature).
template <class F>
class Jit {
 public:
  /// Throws ValueError for a null function pointer and TypeError when opts.share_traces is
  /// TraceSharing::required for a callable that cannot be identified, both naming opts.name and
  /// the line `loc` (mj::jit's call site).
  Jit(F f, JitOptions opts, std::source_location loc)
      : f_(std::make_shared<F>(std::move(f))), core_(make_core(*f_, std::move(opts), loc)) {}

  /// Calls f compiled: f's result pytree, computed on device 0 (or on the mesh with shardings).
  /// Throws TypeError for a ShapeDtypeStruct argument or a static_argnums entry naming Arrays,
  /// ValueError for an argument on another device or donated twice (or before). The errors name
  /// the line that made this Jit (mj::jit(f)) and the jit's name: C++ cannot give a call site to
  /// a function whose parameters end in a pack. Errors raised inside f name their own lines.
  template <class... A>
  auto operator()(const A&... args) const;

  /// JAX's jit(f).lower(args...): never fails for lack of shardings (unsharded: one device).
  /// Arguments may be ShapeDtypeStructs (anywhere an Array goes in a pytree).
  /// A capacity exceeded while tracing, lowering or compiling (ResourceExhaustedError raised by
  /// the allocator) names this jit's line (mj::jit(f)), as operator()'s compile does.
  template <class... A>
  auto lower(const A&... args) const;

  /// Runs like operator() but returns the per-device output shards and statistics.
  /// ShardingError when no sharding is given anywhere, or under a trace.
  template <class... A>
  SpmdRun run_spmd_shards(const A&... args) const;

  /// The last sharded run (its program, per-device outputs, collectives and bytes), or nullptr;
  /// waits for a compiled call to finish (its bytes are the communicator's counts).
  std::shared_ptr<const SpmdRun> last_run() const { return core_.last_run(); }
  /// How many times this Jit traced f itself: once per new signature, less the signatures whose
  /// trace it took from the shared trace cache (a trace another Jit of the same callable made
  /// counts there, not here; so `jit(f)(x); auto g = jit(f); g(x);` leaves g.trace_count() 0).
  int trace_count() const { return core_.trace_count(); }
  /// JAX's jitted.clear_cache(): drops this Jit's per-signature entries and the shared trace
  /// cache's traces of its callable, so the next call of each signature traces again (and counts
  /// in trace_count()). Executables stay in the process-wide cache (other Jits of the same
  /// program share them): the next compile of an equal program finds its executable there.
  /// A call running now keeps what it uses and finishes. Thread-safe.
  void clear_cache() const { core_.clear_cache(); }
  /// Number of cached signatures (static values that hash alike counted apart).
  size_t cache_size() const { return core_.cache_size(); }

 private:
  static detail::JitCore make_core(const F& f, JitOptions opts, std::source_location loc) {
    detail::check_callable(f, "jit", opts.name, loc);
    detail::CallableId id = detail::sharing_id(f, opts.share_traces, "jit", opts.name, loc);
    return detail::JitCore(std::move(opts), loc, std::move(id));
  }
  /// The tracing function of one call (detail::TraceFn): f on the rebuilt arguments.
  template <class R, class... A>
  auto tracer(const CallArgs& ca, const A&... args) const;

  std::shared_ptr<F> f_;  ///< shared by this Jit's copies, as the core's state is
  detail::JitCore core_;
};

/// jit(f, options): see Jit and JitOptions.
template <class F>
Jit<F> jit(F f, JitOptions options = {}, std::source_location loc = std::source_location::current()) {
  return Jit<F>(std::move(f), std::move(options), loc);
}

/// jit(f, name): jit with options {name}.
template <class F, class Name>
  requires std::constructible_from<std::string, Name>
Jit<F> jit(F f, Name name, std::source_location loc = std::source_location::current()) {
  JitOptions o;
  o.name = std::string(std::move(name));
  return Jit<F>(std::move(f), std::move(o), loc);
}

namespace detail {
/// Waits until the buffers of `leaves` are written: each shard's buffer of a sharded Array (never
/// gathering it), the buffer of an unsharded one; tracers and abstract Arrays are skipped.
void wait_ready(const std::vector<Array>& leaves);
}  // namespace detail

/// Waits until every Array of `tree` is computed (JAX's jax.block_until_ready) and returns it:
/// the same object for an lvalue, the moved value for an rvalue (so `auto y =
/// block_until_ready(jf(x));` never dangles). Sharded Arrays are waited for shard by shard and
/// not gathered. Every benchmark times up to it.
template <class T>
const T& block_until_ready(const T& tree) {
  detail::wait_ready(tree_flatten(tree));
  return tree;
}
template <class T>
  requires(!std::is_lvalue_reference_v<T>)
T block_until_ready(T&& tree) {
  detail::wait_ready(tree_flatten(tree));
  return std::move(tree);
}

}  // namespace minijax

#include "jit/jit_impl.h"
