// minijax cache budget: the one least-recently-used order over the entries of every process-wide
// cache (executables, shared traces, each Jit's per-signature traces) and its bounds.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>

namespace minijax::detail {

/// One entry of a bounded cache, as the budget sees it: its kind, its bytes and when it was last
/// used. A cache puts the entry in the budget with join() once the entry is kept, marks every use
/// with touch(), and the entry leaves the budget when the node is destroyed, leave() is called,
/// or the budget evicts it. Movable, not copyable; thread-safe.
///
/// The bounds (config().compilation_cache_max_entries, compilation_cache_max_bytes) apply to the
/// sum over every joined node: entries count one each, bytes their `bytes`. When a cache has
/// added an entry it calls enforce_cache_budget(), which evicts least recently used entries until
/// the sums are within the bounds.
class CacheNode {
 public:
  CacheNode() = default;
  CacheNode(CacheNode&&) noexcept = default;
  CacheNode& operator=(CacheNode&& o) noexcept;
  CacheNode(const CacheNode&) = delete;
  CacheNode& operator=(const CacheNode&) = delete;
  ~CacheNode() { leave(); }

  /// Puts the entry in the budget (as used now). Call it before the entry is shared with other
  /// threads (touch() reads what join() writes without a lock). `kind` names the cache ("executable", "trace",
  /// "jit trace"); `bytes` counts toward compilation_cache_max_bytes. `evict` removes the entry
  /// from its cache: the budget calls it at most once, holding no lock of its own, from the
  /// thread that enforces the budget; it must tolerate finding the entry gone (or replaced).
  void join(const char* kind, size_t bytes, std::function<void()> evict);
  /// Marks the entry used now (a few atomic operations; no lock). No effect when not joined.
  void touch() const noexcept;
  /// Takes the entry out of the budget without calling `evict` (the cache dropped it itself).
  /// Safe while other threads touch() the node.
  void leave() noexcept;
  /// Whether the entry is in the budget (false once evicted or left).
  bool joined() const noexcept;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

/// Evicts the least recently used entries until the entries and bytes of the budget are within
/// config()'s bounds (0: unbounded; a negative bound evicts nothing here: check_cache_bounds
/// raises at the next compile). Call it holding no cache's lock: it calls the evictees' `evict`.
void enforce_cache_budget();

/// Evicts every entry of the budget (clear_caches).
void evict_all_cache_entries();

/// The budget's sums and counters.
struct CacheBudgetTotals {
  size_t entries = 0;             ///< joined entries of every kind
  size_t bytes = 0;               ///< their bytes
  size_t executables = 0;         ///< entries of kind "executable"
  size_t executable_bytes = 0;    ///< their bytes
  size_t executable_evictions = 0;///< executables the budget evicted (bounds or clear_caches)
  size_t evictions = 0;           ///< entries of every kind evicted
};
CacheBudgetTotals cache_budget_totals();

/// ValueError at `loc` naming the setting when config().compilation_cache_max_bytes,
/// compilation_cache_max_entries or compilation_cache_dir_max_bytes is negative.
void check_cache_bounds(std::source_location loc);

}  // namespace minijax::detail
