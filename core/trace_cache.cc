// minijax trace caches: callable identities, cached traces and TraceTable (traced once per key,
// thread-safe), and the process-wide table that jit and checkpoint objects share.
#include "core/trace_cache.h"

#include <cstdlib>
#include <cstring>
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

CachedTracePtr TraceTable::get(const TraceKey& key, const std::function<CachedTracePtr()>& make, bool* made) {
  if (made) *made = false;
  const size_t h = key.hash();
  const std::thread::id self = std::this_thread::get_id();
  auto mine = std::make_shared<Slot>();
  {
    std::unique_lock<std::mutex> g(mu_);
    for (;;) {
      std::shared_ptr<Slot> found;
      for (auto [it, end] = slots_.equal_range(h); it != end; ++it)
        if (it->second->key == key) {
          found = it->second;
          break;
        }
      if (!found) break;
      if (found->trace) return found->trace;
      if (found->maker == self) {  // f asks for itself while this thread traces it: never wait for oneself
        g.unlock();
        if (made) *made = true;
        return make();
      }
      cv_.wait(g);  // another thread makes it; a failure removes its slot
    }
    drop_finished_locked();
    mine->key = key;
    mine->maker = self;
    slots_.emplace(h, mine);
    if (key.context_id) ++scoped_;
  }
  if (made) *made = true;
  CachedTracePtr t;
  std::exception_ptr error;
  try {
    t = make();
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    if (t && t->cacheable()) {
      mine->trace = t;
    } else {
      for (auto [it, end] = slots_.equal_range(h); it != end; ++it)
        if (it->second == mine) {
          slots_.erase(it);
          break;
        }
      if (key.context_id) --scoped_;
    }
  }
  cv_.notify_all();
  if (error) std::rethrow_exception(error);
  return t;
}

void TraceTable::drop_finished_locked() {
  if (scoped_ == 0) return;
  for (auto it = slots_.begin(); it != slots_.end();) {
    const Slot& s = *it->second;
    if (s.trace && s.key.context_id && s.key.context.expired()) {
      it = slots_.erase(it);
      --scoped_;
    } else {
      ++it;
    }
  }
}

size_t TraceTable::size() const {
  std::lock_guard<std::mutex> g(mu_);
  size_t n = 0;
  for (auto& [h, s] : slots_) n += s->trace != nullptr;
  return n;
}

void TraceTable::clear() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto it = slots_.begin(); it != slots_.end();) {
    if (it->second->trace) {
      if (it->second->key.context_id) --scoped_;
      it = slots_.erase(it);
    } else {
      ++it;  // being made: its maker fills or removes it
    }
  }
}

TraceTable& shared_traces() {
  // Never destroyed: traces hold Arrays, whose buffers must not be freed after the allocator's
  // own statics at exit.
  static TraceTable* table = new TraceTable();
  return *table;
}

}  // namespace minijax::detail
