// minijax trace caches: callable identities, cached traces and TraceTable (traced once per key,
// thread-safe), and the process-wide table that jit and checkpoint objects share.
#include "core/trace_cache.h"

#include <cstdlib>
#include <cstring>
#include <vector>
#include <cxxabi.h>

#include "core/errors.h"
#include "core/pjit.h"
#include "core/staging.h"
#include "core/trace.h"

namespace minijax::detail {

namespace {
size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }
}  // namespace

size_t CallableId::hash() const {
  if (!type) return 0;
  return mix(mix(type->hash_code(), size_t(address)), value.type ? value.hash : 0);
}

bool CallableId::operator==(const CallableId& o) const {
  if (!type || !o.type) return !type && !o.type;
  if (!(*type == *o.type) || address != o.address) return false;
  if (!value.type || !o.value.type) return !value.type && !o.value.type;
  return value == o.value;
}

std::string type_name(const std::type_info& t) {
  int status = 0;
  char* d = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
  std::string r = status == 0 && d ? d : t.name();
  std::free(d);
  return r;
}

namespace {
std::string who(const char* what, const std::string& name) {
  return name.empty() ? std::string(what) : std::string(what) + " '" + name + "'";
}
}  // namespace

void throw_null_function(const char* what, const std::string& name, std::source_location loc) {
  throw ValueError(who(what, name) + ": the function is a null function pointer", loc);
}

void throw_unidentifiable(const char* what, const std::string& name, const std::type_info& type,
                          std::source_location loc) {
  throw TypeError(who(what, name) + ": share_traces is TraceSharing::required, but the callable (" +
                      type_name(type) +
                      ") cannot be identified across objects: it is not a function pointer, not an empty class "
                      "(a lambda without captures) and has no std::hash and operator==. Give its type std::hash "
                      "and ==, or use TraceSharing::automatic (its traces then stay with this object)",
                  loc);
}

bool CachedTrace::cacheable() const {
  for (const Array& c : consts)
    if (!c.is_concrete()) return false;
  return true;
}

Array abstract_array(const ShapedArray& aval) { return Array(std::make_shared<AbstractArray>(aval, nullptr)); }

CachedTracePtr make_cached_trace(const ClosedJaxpr& traced, std::any out_like) {
  auto t = std::make_shared<CachedTrace>();
  auto body = std::make_shared<ClosedJaxpr>();
  body->jaxpr = std::make_shared<Jaxpr>(convert_constvars_jaxpr(*traced.jaxpr));
  t->jaxpr = body;
  t->consts = traced.consts;
  t->out_like = std::move(out_like);
  return t;
}

size_t TraceKey::hash() const {
  size_t h = mix(std::hash<std::string_view>{}(kind), fn.hash());
  h = mix(h, sig.hash);
  for (const StaticKey& s : statics) h = mix(h, s.hash);
  return mix(h, std::hash<const void*>{}(context_id));
}

bool TraceKey::operator==(const TraceKey& o) const {
  if (std::strcmp(kind, o.kind) != 0 || context_id != o.context_id) return false;
  if (context_id && (context.owner_before(o.context) || o.context.owner_before(context))) return false;
  return fn == o.fn && sig == o.sig && statics == o.statics;
}

struct TraceTable::State {
  struct Slot {
    TraceKey key;
    CachedTracePtr trace;  // null while it is being made
    std::thread::id maker;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_multimap<size_t, std::shared_ptr<Slot>> slots;
  size_t scoped = 0;  // slots with a context

  // Removes the slot `it` points to; its trace (moved to `dropped`) is freed by the caller after
  // the lock is released (a trace's constants and bodies may be large).
  void erase_locked(std::unordered_multimap<size_t, std::shared_ptr<Slot>>::iterator& it,
                    std::vector<CachedTracePtr>& dropped) {
    if (it->second->key.context_id) --scoped;
    if (it->second->trace) {
      it->second->trace->node.leave();
      dropped.push_back(std::move(it->second->trace));
    }
    it = slots.erase(it);
  }

  // Drops kept slots whose context was freed.
  void drop_finished_locked(std::vector<CachedTracePtr>& dropped) {
    if (scoped == 0) return;
    for (auto it = slots.begin(); it != slots.end();) {
      const Slot& s = *it->second;
      if (s.trace && s.key.context_id && s.key.context.expired()) erase_locked(it, dropped);
      else ++it;
    }
  }
};

TraceTable::TraceTable() : st_(std::make_shared<State>()) {}

CachedTracePtr TraceTable::get(const TraceKey& key, const std::function<CachedTracePtr()>& make, bool* made) {
  if (made) *made = false;
  State& st = *st_;
  const size_t h = key.hash();
  const std::thread::id self = std::this_thread::get_id();
  auto mine = std::make_shared<State::Slot>();
  std::vector<CachedTracePtr> dropped;
  {
    std::unique_lock<std::mutex> g(st.mu);
    for (;;) {
      std::shared_ptr<State::Slot> found;
      for (auto [it, end] = st.slots.equal_range(h); it != end; ++it)
        if (it->second->key == key) {
          found = it->second;
          break;
        }
      if (!found) break;
      if (found->trace) {
        found->trace->node.touch();
        return found->trace;
      }
      if (found->maker == self) {  // f asks for itself while this thread traces it: never wait for oneself
        g.unlock();
        if (made) *made = true;
        return make();
      }
      st.cv.wait(g);  // another thread makes it; a failure removes its slot
    }
    st.drop_finished_locked(dropped);
    mine->key = key;
    mine->maker = self;
    st.slots.emplace(h, mine);
    if (key.context_id) ++st.scoped;
  }
  dropped.clear();
  if (made) *made = true;
  CachedTracePtr t;
  std::exception_ptr error;
  try {
    t = make();
  } catch (...) {
    error = std::current_exception();
  }
  bool kept = false;
  {
    std::lock_guard<std::mutex> g(st.mu);
    if (t && t->cacheable() && !t->node.joined()) {
      mine->trace = t;
      kept = true;
      // Evicted by the budget: the table's reference is dropped (when the slot is still this one).
      std::weak_ptr<State> weak = st_;
      State::Slot* slot = mine.get();
      t->node.join("trace", 0, [weak, h, slot] {
        std::shared_ptr<State> s = weak.lock();
        if (!s) return;
        std::vector<CachedTracePtr> gone;
        {
          std::lock_guard<std::mutex> g(s->mu);
          for (auto [it, end] = s->slots.equal_range(h); it != end; ++it)
            if (it->second.get() == slot) {
              if (it->second->key.context_id) --s->scoped;
              gone.push_back(std::move(it->second->trace));
              s->slots.erase(it);
              break;
            }
        }
      });
    } else {
      for (auto [it, end] = st.slots.equal_range(h); it != end; ++it)
        if (it->second == mine) {
          st.slots.erase(it);
          break;
        }
      if (key.context_id) --st.scoped;
    }
  }
  st.cv.notify_all();
  if (error) std::rethrow_exception(error);
  if (kept) enforce_cache_budget();
  return t;
}

size_t TraceTable::size() const {
  std::lock_guard<std::mutex> g(st_->mu);
  size_t n = 0;
  for (auto& [h, s] : st_->slots) n += s->trace != nullptr;
  return n;
}

void TraceTable::clear() {
  std::vector<CachedTracePtr> dropped;
  std::lock_guard<std::mutex> g(st_->mu);
  for (auto it = st_->slots.begin(); it != st_->slots.end();) {
    if (it->second->trace) st_->erase_locked(it, dropped);
    else ++it;  // being made: its maker fills or removes it
  }
}

void TraceTable::clear(const char* kind, const CallableId& fn) {
  std::vector<CachedTracePtr> dropped;
  std::lock_guard<std::mutex> g(st_->mu);
  for (auto it = st_->slots.begin(); it != st_->slots.end();) {
    const State::Slot& s = *it->second;
    if (s.trace && std::strcmp(s.key.kind, kind) == 0 && s.key.fn == fn) st_->erase_locked(it, dropped);
    else ++it;
  }
}

TraceTable& shared_traces() {
  // Never destroyed: traces hold Arrays, whose buffers must not be freed after the allocator's
  // own statics at exit.
  static TraceTable* table = new TraceTable();
  return *table;
}

}  // namespace minijax::detail
