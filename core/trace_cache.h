// minijax trace caches: what a traced signature of a function keeps (CachedTrace), how a callable
// is identified across objects, and TraceTable (a thread-safe table; one process-wide, shared).
#pragma once
#include <any>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <source_location>
#include <string>
#include <thread>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "core/cache_budget.h"
#include "core/call_signature.h"
#include "core/jaxpr.h"
#include "core/pytree.h"

namespace minijax {

class Trace;

/// Whether a jit or checkpoint object shares its traces with the other jit (resp. checkpoint)
/// objects of the same callable (JitOptions::share_traces, CheckpointOptions::share_traces).
/// A callable is identifiable when it is a function pointer (identified by its type and
/// address), an object of an empty class such as a captureless lambda (by its type: every object
/// of the type is the same function), or an object whose type has std::hash and operator== (by
/// its type, hash and ==). Lambdas with captures, std::function and other stateful objects
/// without both are not: their traces stay with the object that made them.
enum class TraceSharing {
  /// Shared when the callable is identifiable, the object's own cache otherwise (the default).
  automatic,
  /// The object's own cache only: a new object traces anew (for a function that reads mutable
  /// global state at trace time and must see it again in each new object).
  never,
  /// Shared; a callable that is not identifiable is a TypeError where the object is made.
  required,
};

namespace detail {

template <class F>
constexpr bool is_function_pointer_v = std::is_pointer_v<F> && std::is_function_v<std::remove_pointer_t<F>>;

/// Whether callables of type F can be identified across objects (see TraceSharing).
template <class F>
constexpr bool is_identifiable_callable_v =
    is_function_pointer_v<F> || (std::is_class_v<F> && std::is_empty_v<F>) ||
    (StaticArgument<F> && std::is_copy_constructible_v<F>);

/// The identity of a callable across objects: its type, a function pointer's address, or a
/// hashable callable's hash and copy. `type` null: not identifiable (or sharing off).
struct CallableId {
  const std::type_info* type = nullptr;
  uintptr_t address = 0;
  StaticKey value;  ///< a hashable callable's hash and copy (type null for the other kinds)
  size_t hash() const;
  bool operator==(const CallableId& o) const;
};

/// The identity of `f` (an empty CallableId when F is not identifiable).
template <class F>
CallableId callable_id(const F& f) {
  CallableId id;
  if constexpr (is_function_pointer_v<F>) {
    id.type = &typeid(F);
    id.address = reinterpret_cast<uintptr_t>(f);
  } else if constexpr (std::is_class_v<F> && std::is_empty_v<F>) {
    id.type = &typeid(F);
  } else if constexpr (StaticArgument<F> && std::is_copy_constructible_v<F>) {
    id.type = &typeid(F);
    id.value = static_key(f);
  }
  return id;
}

/// The readable name of type `t` (demangled) for error messages.
std::string type_name(const std::type_info& t);

/// ValueError naming `what` ('jit' or 'checkpoint'), `name` (none when empty) and the line when
/// `f` is a null function pointer (calling it would crash).
void throw_null_function(const char* what, const std::string& name, std::source_location loc);
template <class F>
void check_callable(const F& f, const char* what, const std::string& name, std::source_location loc) {
  if constexpr (is_function_pointer_v<F>)
    if (f == nullptr) throw_null_function(what, name, loc);
}

/// The identity under which an object made by `what` ('jit', 'checkpoint') with `sharing` shares
/// f's traces: callable_id(f) when sharing is automatic or required, empty when never. TypeError
/// at `loc`, naming `what`, the object's `name` (none when empty), the callable's type and the value
/// TraceSharing::required, when sharing is required and F is not identifiable.
void throw_unidentifiable(const char* what, const std::string& name, const std::type_info& type,
                          std::source_location loc);
template <class F>
CallableId sharing_id(const F& f, TraceSharing sharing, const char* what, const std::string& name,
                      std::source_location loc) {
  if (sharing == TraceSharing::never) return {};
  if constexpr (!is_identifiable_callable_v<F>) {
    if (sharing == TraceSharing::required) throw_unidentifiable(what, name, typeid(F), loc);
  }
  return callable_id(f);
}

/// What one signature of a function traced to, as a trace cache keeps it.
struct CachedTrace {
  ClosedJaxprPtr jaxpr;       ///< the body: constvars converted to leading invars (consts, then leaves)
  std::vector<Array> consts;  ///< the values f closed over, the body's leading operands
  std::any out_like;          ///< f's result type R with abstract leaves: the output structure
  /// The trace's place in the cache budget while a TraceTable keeps it (core/cache_budget.h):
  /// holders touch it at every use; the budget's eviction drops the table's reference only.
  mutable CacheNode node;
  /// Whether every constant is concrete: a trace whose constants are tracers of an enclosing
  /// trace is valid for its own call only and is never kept.
  bool cacheable() const;
};
using CachedTracePtr = std::shared_ptr<const CachedTrace>;

/// An abstract Array of `aval` (no buffer): a leaf of a CachedTrace's out_like.
Array abstract_array(const ShapedArray& aval);

/// `tree` with each Array leaf replaced by an abstract Array of its aval: the structure of a
/// traced result or argument, without holding the values. A kept trace holds no tracer (so it
/// never keeps its finished trace alive), and the custom-derivative rules kept in the params of
/// the equation a trace records do not make the trace reachable from its own equations (a
/// reference cycle that is never freed).
template <class T>
T abstract_like(const T& tree) {
  std::vector<Array> leaves = tree_flatten(tree);
  for (Array& l : leaves)
    if (l.defined()) l = abstract_array(l.aval());
  return tree_unflatten(tree, leaves);
}

/// A CachedTrace of `traced` (constvars converted) with `out_like` (from abstract_like).
CachedTracePtr make_cached_trace(const ClosedJaxpr& traced, std::any out_like);

/// The key of a trace in a TraceTable.
struct TraceKey {
  const char* kind = "";  ///< "jit" or "checkpoint": their traces are kept apart
  CallableId fn;          ///< empty in an object's own table
  Signature sig;          ///< finished (Signature::finish)
  std::vector<StaticKey> statics;
  /// The innermost trace when the key is scoped to it (empty: any context). An entry made under
  /// a trace is found only under that same trace (compared by owner, so a finished trace's
  /// address reused by a new one never matches), and is dropped once the trace is freed.
  std::weak_ptr<const Trace> context;
  const void* context_id = nullptr;  ///< context's address (for the hash); null: not scoped
  size_t hash() const;
  bool operator==(const TraceKey& o) const;
};

/// The innermost trace of this thread's stack, or null at the eval trace (eager): the context of
/// a TraceKey scoped to it. Defined in core/trace.cc, beside the stack.
std::shared_ptr<Trace> innermost_trace();

/// A thread-safe table of traces, each made once. `get` returns the trace of a key: the kept
/// one, or the one `make` returns now. Concurrent callers of one key wait for the one that makes
/// it (nobody busy-waits); a `make` that throws keeps nothing and rethrows, and the waiting
/// callers then try themselves. A trace that is not cacheable() is returned to its caller and
/// not kept. A caller whose own thread is already making the key (f calls itself with the same
/// signature while it is traced) makes it again, unkept, instead of waiting for itself. `*made`
/// (when given) says whether this call ran `make`. Entries scoped to a trace that has been freed
/// are dropped at the next insertion.
///
/// Bounded: every kept trace is an entry of the cache budget (core/cache_budget.h, kind
/// "trace"), evicted least recently used first when config().compilation_cache_max_entries is
/// passed (a hit touches it). The table owns its traces; a caller holds a reference
/// (CachedTracePtr), so eviction or clear() drops the table's reference only and a trace is
/// freed with its last holder.
class TraceTable {
 public:
  TraceTable();
  CachedTracePtr get(const TraceKey& key, const std::function<CachedTracePtr()>& make, bool* made = nullptr);
  /// How many traces are kept.
  size_t size() const;
  /// Drops every kept trace (holders of one keep it alive).
  void clear();
  /// Drops the kept traces of callable `fn` made by `kind` ("jit", "checkpoint").
  void clear(const char* kind, const CallableId& fn);

  struct State;

 private:
  std::shared_ptr<State> st_;  // shared with the budget's eviction callbacks (weakly)
};

/// The process-wide table of traces shared by every jit and checkpoint object of an
/// identifiable callable (TraceSharing). It owns its traces; a Jit that uses one holds a
/// reference (CachedTracePtr), so dropping an entry never frees a trace in use. It lives until
/// the process ends.
TraceTable& shared_traces();

}  // namespace detail
}  // namespace minijax
