// minijax cache budget: the registry of every bounded cache entry with its recency (a global
// clock, touched without a lock), and least-recently-used eviction down to config()'s bounds.
#include "core/cache_budget.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/errors.h"

namespace minijax::detail {

struct CacheNode::Impl {
  std::atomic<uint64_t> last_use{0};
  const char* kind = "";
  size_t bytes = 0;
  std::function<void()> evict;
  size_t index = 0;     // in Registry::nodes while `in`
  bool in = false;      // guarded by Registry::mu
};

namespace {

std::atomic<uint64_t>& clock_ticks() {
  static std::atomic<uint64_t> c{0};
  return c;
}
uint64_t now() { return clock_ticks().fetch_add(1, std::memory_order_relaxed) + 1; }

bool is_executable(const char* kind) { return kind[0] == 'e'; }  // "executable"

struct Registry {
  std::mutex mu;
  std::vector<std::shared_ptr<CacheNode::Impl>> nodes;
  size_t bytes = 0, executables = 0, executable_bytes = 0;
  size_t evictions = 0, executable_evictions = 0;

  // Removes `n` (in) from the registry; the caller holds mu.
  void unlink_locked(CacheNode::Impl& n) {
    const size_t i = n.index;
    if (i + 1 != nodes.size()) {
      nodes[i] = std::move(nodes.back());
      nodes[i]->index = i;
    }
    nodes.pop_back();
    n.in = false;
    bytes -= n.bytes;
    if (is_executable(n.kind)) {
      --executables;
      executable_bytes -= n.bytes;
    }
  }
};

// Never destroyed: nodes of caches that live until exit leave it from static destructors.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// The configured bound, 0 (unbounded) when it is zero or negative (negative bounds are raised at
// the next compile by check_cache_bounds).
size_t bound(int64_t v) { return v > 0 ? size_t(v) : 0; }

// Evicts `victims` (already unlinked): their callbacks, holding no budget lock.
void run_evictions(std::vector<std::function<void()>>& victims) {
  for (auto& f : victims)
    if (f) f();
  victims.clear();
}

}  // namespace

CacheNode& CacheNode::operator=(CacheNode&& o) noexcept {
  if (this != &o) {
    leave();
    impl_ = std::move(o.impl_);
  }
  return *this;
}

void CacheNode::join(const char* kind, size_t bytes, std::function<void()> evict) {
  leave();
  auto n = std::make_shared<Impl>();
  n->kind = kind;
  n->bytes = bytes;
  n->evict = std::move(evict);
  n->last_use.store(now(), std::memory_order_relaxed);
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  n->index = r.nodes.size();
  n->in = true;
  r.nodes.push_back(n);
  r.bytes += bytes;
  if (is_executable(kind)) {
    ++r.executables;
    r.executable_bytes += bytes;
  }
  impl_ = std::move(n);
}

void CacheNode::touch() const noexcept {
  if (impl_) impl_->last_use.store(now(), std::memory_order_relaxed);
}

void CacheNode::leave() noexcept {
  if (!impl_) return;
  std::function<void()> dropped;  // destroyed after the lock is released
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> g(r.mu);
    if (impl_->in) r.unlink_locked(*impl_);
    dropped = std::move(impl_->evict);
  }
  // impl_ stays: a holder may touch() it concurrently (a no-op once out of the budget).
}

bool CacheNode::joined() const noexcept {
  if (!impl_) return false;
  std::lock_guard<std::mutex> g(registry().mu);
  return impl_->in;
}

void enforce_cache_budget() {
  const size_t max_entries = bound(config().compilation_cache_max_entries);
  const size_t max_bytes = bound(config().compilation_cache_max_bytes);
  Registry& r = registry();
  std::vector<std::function<void()>> victims;
  {
    std::lock_guard<std::mutex> g(r.mu);
    auto over = [&] {
      return (max_entries && r.nodes.size() > max_entries) || (max_bytes && r.bytes > max_bytes);
    };
    if (!over()) return;
    // Oldest first: a snapshot of the recencies (touches racing with this are newer anyway).
    std::vector<std::pair<uint64_t, std::shared_ptr<CacheNode::Impl>>> order;
    order.reserve(r.nodes.size());
    for (auto& n : r.nodes) order.emplace_back(n->last_use.load(std::memory_order_relaxed), n);
    std::sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.first < b.first; });
    for (size_t k = 0; k < order.size() && over(); ++k) {
      CacheNode::Impl& n = *order[k].second;
      const bool entries_over = max_entries && r.nodes.size() > max_entries;
      if (!entries_over && n.bytes == 0) continue;  // only bytes are over: evicting it frees none
      r.unlink_locked(n);
      ++r.evictions;
      if (is_executable(n.kind)) ++r.executable_evictions;
      victims.push_back(std::move(n.evict));
    }
  }
  run_evictions(victims);
}

void evict_all_cache_entries() {
  Registry& r = registry();
  std::vector<std::function<void()>> victims;
  {
    std::lock_guard<std::mutex> g(r.mu);
    while (!r.nodes.empty()) {
      std::shared_ptr<CacheNode::Impl> n = r.nodes.back();
      r.unlink_locked(*n);
      ++r.evictions;
      if (is_executable(n->kind)) ++r.executable_evictions;
      victims.push_back(std::move(n->evict));
    }
  }
  run_evictions(victims);
}

CacheBudgetTotals cache_budget_totals() {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  CacheBudgetTotals t;
  t.entries = r.nodes.size();
  t.bytes = r.bytes;
  t.executables = r.executables;
  t.executable_bytes = r.executable_bytes;
  t.executable_evictions = r.executable_evictions;
  t.evictions = r.evictions;
  return t;
}

void check_cache_bounds(std::source_location loc) {
  auto check = [&](const char* name, int64_t v) {
    if (v < 0)
      throw ValueError(std::string("config().") + name + " is " + std::to_string(v) +
                           ": a cache bound must be >= 0 (0: unbounded)",
                       loc);
  };
  check("compilation_cache_max_bytes", config().compilation_cache_max_bytes);
  check("compilation_cache_max_entries", config().compilation_cache_max_entries);
  check("compilation_cache_dir_max_bytes", config().compilation_cache_dir_max_bytes);
}

}  // namespace minijax::detail
