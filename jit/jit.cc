// minijax jit: the non-template core of Jit (JitCore: the per-signature entries, tracing once,
// compiling once, running or staging), Lowered's and Compiled's calls, signatures and texts.
#include "jit/jit.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "core/views/control_flow.h"
#include "jit/passes/cost_analysis.h"
#include "jit/passes/fuse.h"
#include "jit/pipeline.h"
#include "jit/runtime/execute.h"
#include "jit/sharded_call.h"
#include "memory/memory_analysis.h"
#include "memory/offload_report.h"
#include "memory/plan_buffers.h"

#include "core/config.h"
#include "core/errors.h"
#include "core/float_checks.h"
#include "core/profiler_hooks.h"
#include "core/staging.h"
#include "core/views/collectives.h"
#include "core/views/memory_ops.h"
#include "sharding/collective_traffic.h"
#include "sharding/plan_reshard.h"
#include "sharding/reshard_api.h"
#include "sharding/sharded_array.h"
#include "sharding/sharding_dot.h"

namespace minijax {


ShapeDtypeStruct::operator Array() const {
  checked_nbytes(shape, dtype);  // ShapeError for a negative dim or a size that overflows int64
  ShapedArray aval{shape, dtype, weak_type, sharding ? sharding->memory_kind : MemoryKind::device};
  ParamObjectPtr sh = sharding ? std::make_shared<detail::ShapeDtypeShardingParam>(*sharding) : nullptr;
  return Array(std::make_shared<AbstractArray>(std::move(aval), std::move(sh)));
}

std::vector<bool> CallArgs::donated_leaves() const {
  std::vector<bool> d(leaves.size(), false);
  for (size_t p = 0; p < nargs; ++p)
    if ((donate_mask >> p) & 1)
      for (size_t l = first_leaf[p]; l < first_leaf[p + 1]; ++l) d[l] = true;
  return d;
}

namespace detail {

}  // namespace detail

namespace detail {

void check_not_abstract(const std::vector<Array>& leaves, const uint32_t* first_leaf, size_t nargs,
                        const std::string& name, std::source_location loc) {
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i].is_abstract()) {
      const InputNames names{name, 0, first_leaf, nargs};
      throw TypeError("jit '" + name + "': " + names(i) + " is an abstract " + leaves[i].aval().str() +
                          " (a ShapeDtypeStruct, no value): it can be lowered (jit(f).lower(...)), not run; "
                          "pass an Array",
                      loc);
    }
}

bool executes_now(const std::vector<Array>& a, const std::vector<Array>& b, std::source_location loc) {
  for (auto& v : a)
    if (!v.is_concrete()) return false;
  for (auto& v : b)
    if (!v.is_concrete()) return false;
  return dynamic_cast<EvalTrace*>(TraceStack::dynamic().get()) != nullptr;
}

uint64_t argnum_mask(const std::vector<int>& argnums, size_t nargs, const char* what, std::source_location loc) {
  uint64_t m = 0;
  for (int a : argnums) {
    int64_t i = a < 0 ? int64_t(nargs) + a : a;
    if (i < 0 || i >= int64_t(nargs))
      throw ValueError(std::string("jit: ") + what + " entry " + std::to_string(a) + " is out of range for " +
                           std::to_string(nargs) + " arguments",
                       loc);
    m |= uint64_t(1) << i;
  }
  return m;
}

void append_leaf_signature(Signature& sig, const std::vector<Array>& leaves, std::source_location loc) {
  for (const Array& l : leaves) {
    if (!l.defined()) throw ValueError("jit: an argument leaf is an empty (default-constructed) Array", loc);
    const ShapedArray& av = l.aval();
    // A ShapeDtypeStruct's sharding counts as the sharding of an Array laid out that way.
    const detail::ShapeDtypeShardingParam* sds = nullptr;
    if (l.is_abstract())
      sds = dynamic_cast<const detail::ShapeDtypeShardingParam*>(static_cast<const AbstractArray*>(l.impl())->sharding().get());
    const bool sharded = sds || l.is_sharded();
    sig.words.push_back(uint64_t(av.dtype) | uint64_t(av.weak_type) << 8 | uint64_t(av.memory_kind) << 9 |
                        uint64_t(sharded) << 12 | uint64_t(av.shape.size()) << 16);
    for (int64_t d : av.shape) sig.words.push_back(uint64_t(d));
    if (sharded) {
      const Sharding s = sds ? to_sharding(sds->sharding, int64_t(av.shape.size()), loc) : l.sharding(loc).sharding;
      const std::string t = s.mesh->str() + " " + s.str();
      sig.words.push_back(t.size());
      sig.text += t;
    }
  }
}

std::string signature_text(const std::vector<std::string>& structures, const std::vector<Array>& leaves,
                           std::source_location loc) {
  std::string r = "(";
  for (size_t i = 0; i < structures.size(); ++i) r += (i ? ", " : "") + structures[i];
  r += ") with leaves [";
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Array& l = leaves[i];
    r += (i ? ", " : "") + l.aval().str();
    if (l.weak_type()) r += "{weak}";
    if (l.is_sharded()) r += " @ " + l.sharding(loc).str();
    if (l.is_abstract())
      if (auto* p = dynamic_cast<const detail::ShapeDtypeShardingParam*>(static_cast<const AbstractArray*>(l.impl())->sharding().get()))
        r += " @ " + p->sharding.str();
  }
  return r + "]";
}

void wait_ready(const std::vector<Array>& leaves) {
  for (const Array& a : leaves) {
    if (!a.is_concrete()) continue;
    const auto& c = *static_cast<const ConcreteArray*>(a.impl());
    if (c.is_sharded()) {
      for (const StoredShard& s : c.shards()) s.buffer->ready().wait();
    } else {
      c.buffer()->ready().wait();
    }
  }
}

std::vector<Array> run_compiled(const Executable& exe, const std::vector<Array>& consts,
                                const std::vector<Array>& leaves, const std::string& name,
                                const uint32_t* first_leaf, size_t nargs, std::source_location loc) {
  return execute(exe.loaded, consts, leaves, loc, InputNames{name, consts.size(), first_leaf, nargs});
}

CompileOptions compile_options(const JitOptions& opts, const std::vector<bool>& donated, bool spmd) {
  CompileOptions co;
  co.name = opts.name;
  co.donated = donated;
  co.dump_dir = opts.dump_dir;
  co.keep_llvm_ir = opts.keep_llvm_ir;
  co.spmd = spmd;
  co.offload.coalesce_bytes = config().offload_coalesce_bytes;
  co.offload.prefetch_bytes = config().offload_prefetch_bytes;
  co.offload.host_link_bytes_per_s = config().host_link_bytes_per_s;
  return co;
}

std::shared_ptr<const Executable> compile_traced(const ClosedJaxprPtr& jaxpr, const JitOptions& opts,
                                                 const std::vector<bool>& donated, std::source_location loc) {
  check_cache_bounds(loc);  // a negative bound names the user's line
  check_max_fusion_equations(loc);
  std::shared_ptr<const Executable> exe = compile_executable(*jaxpr->jaxpr, compile_options(opts, donated, false));
  check_compiled_capacity(*exe, 1, loc);
  return exe;
}

std::shared_ptr<const Executable> compile_lowering(const LoweredProgram& low, const JitOptions& opts,
                                                   const std::vector<bool>& donated, bool spmd,
                                                   std::source_location loc) {
  check_cache_bounds(loc);  // a negative bound names the user's line
  check_max_fusion_equations(loc);
  Compilation c;
  c.options = compile_options(opts, donated, spmd);
  c.program = low.program;
  c.dump = low.dump;
  std::shared_ptr<const Executable> exe = compile_lowered(std::move(c));
  check_compiled_capacity(*exe, low.mesh ? low.mesh->num_devices() : 1, loc);
  return exe;
}

std::string compiled_text(const Executable& exe, bool llvm_ir) {
  std::ostringstream os;
  os << "# compiled '" << exe.name << "': program after the passes\n" << to_string(exe.program) << "\n";
  os << "# lowering, one line per equation\n";
  for (auto& l : exe.lowered) os << "  [" << l.strategy << "] " << l.text << "\n";
  os << "# buffer plan\n" << exe.plan.str(exe.program);
  os << offload_report(exe.program).str();
  os << "# memory_analysis: " << exe.memory.str() << "\n";
  os << "# cost_analysis:";
  for (auto& [k, v] : exe.cost) os << " " << k << "=" << v;
  os << "\n# kernels (KIR)\n" << exe.kernels;
  if (llvm_ir) {
    os << "\n# optimized LLVM IR\n";
    os << (exe.llvm_ir.empty() ? std::string("(not kept: compile with JitOptions::keep_llvm_ir)\n") : exe.llvm_ir);
  }
  return os.str();
}

namespace {

// Whether j (or a body nested in it) constrains a sharding: the body of a sharded jit.
bool has_sharding_constraint(const Jaxpr& j) {
  for (const Eqn& e : j.eqns) {
    if (ShardingConstraintParams::is(e)) return true;
    for (auto& [k, v] : e.params.items()) {
      if (auto* cj = std::get_if<ClosedJaxprPtr>(&v)) {
        if (*cj && (*cj)->jaxpr && has_sharding_constraint(*(*cj)->jaxpr)) return true;
      } else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&v)) {
        for (auto& c : *cjs)
          if (c && c->jaxpr && has_sharding_constraint(*c->jaxpr)) return true;
      }
    }
  }
  return false;
}

// Eagerly bound pjit equations (grad/vmap of a jit) run compiled: the body is compiled once per
// distinct program (the executable cache is keyed by the program after the passes). Sharded
// values and bodies with sharding constraints (a sharded jit under grad or vmap) are evaluated
// equation by equation instead: the one-device compiler does not partition.
std::vector<Array> run_pjit_compiled(const ClosedJaxprPtr& body, const std::string& name,
                                     const std::vector<Array>& args) {
  std::vector<Array> operands = body->consts;
  operands.insert(operands.end(), args.begin(), args.end());
  for (auto& a : operands)
    if (a.is_sharded()) return eval_jaxpr(*body, args);
  if (has_sharding_constraint(*body->jaxpr)) return eval_jaxpr(*body, args);
  Jaxpr j = body->consts.empty() ? *body->jaxpr : convert_constvars_jaxpr(*body->jaxpr);
  CompileOptions co;
  co.name = name;
  return execute(compile_executable(j, co)->loaded, operands);
}

const bool pjit_executor_installed = [] {
  set_pjit_executor(&run_pjit_compiled);
  return true;
}();

}  // namespace

}  // namespace detail

std::string LoweredProgram::as_text() const {
  std::ostringstream os;
  if (!mesh) {
    os << "# unpartitioned program (no sharding given: one device)\n" << to_string(program);
    return os.str();
  }
  os << "# global program on " << mesh->str() << " with propagated shardings\n"
     << propagation.text << "\n# SPMD program (one per device, local shapes)\n"
     << to_string(program) << "\n# collectives (bytes and messages per device, run_spmd's traffic model)\n"
     << spmd_collectives_text(program, *mesh);
  return os.str();
}

std::string to_dot(const LoweredProgram& lowered, DotOptions opts) {
  const Jaxpr& j = *lowered.jaxpr->jaxpr;
  return lowered.mesh ? to_dot(j, lowered.propagation, std::move(opts)) : to_dot(j, opts);
}

// ---- JitCore: the non-template part of Jit --------------------------------------------------------

namespace detail {

namespace {

/// fn(), where a ResourceExhaustedError raised at a line of the library (the allocator's, inside
/// tracing, lowering or compiling) is thrown again at the user's `loc` with "<kind> '<name>': <stage>"
/// before its message (e.g. "jit 'f': compile: "), keeping its type. Errors at the user's own lines
/// (inside f) and every other error pass unchanged. The prefix is made only for an error: a call
/// allocates nothing here.
template <class Fn>
decltype(auto) at_user_line(const char* kind, const std::string& name, const char* stage, std::source_location loc,
                            Fn&& fn) {
  try {
    return fn();
  } catch (const ResourceExhaustedError& e) {
    if (!is_library_location(e.where())) throw;
    rethrow_at(e, std::string(kind) + " '" + name + "': " + stage, loc);
    throw;
  }
}

/// One signature of a Jit: its trace, and what it compiled to.
struct alignas(64) Entry {
  // The trace (jaxpr with constvars converted: invars = consts + leaves, consts, out_like):
  // this Jit's own, or a reference to the shared cache's.
  CachedTracePtr traced;
  std::vector<bool> donated;  // per program input
  std::shared_ptr<const LoweredProgram> spmd;
  std::shared_ptr<const SpmdExecutable> spmd_exe;  // spmd compiled
  // Unsharded: the executable, owned by the process-wide cache (which may evict it; the next
  // call compiles it again). Guarded by prepare_mu.
  std::weak_ptr<const Executable> exe;
  CacheNode node;  // this entry in the cache budget (kind "jit trace")
  std::vector<StaticKey> statics;
  bool ready = false;
  std::thread::id maker;  // the thread tracing a placeholder
  // The sharded lowering or the executable, made once: a mutex and a flag, not std::call_once,
  // so that a compile that throws (RESOURCE_EXHAUSTED) leaves the next call free to try again
  // (ThreadSanitizer's pthread_once never releases a once whose function threw: a hang).
  std::mutex prepare_mu;
  bool prepared = false;
};

}  // namespace

struct alignas(64) JitCore::State : std::enable_shared_from_this<JitCore::State> {
  State(JitOptions o, std::source_location l, CallableId id) : opts(std::move(o)), loc(l), fn(std::move(id)) {}
  JitOptions opts;
  std::source_location loc;
  CallableId fn;  // f's identity in the shared trace cache (empty: not shared)
  mutable std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<Signature, std::vector<std::shared_ptr<Entry>>, SignatureHash> cache;
  std::atomic<int> traces{0};
  std::shared_ptr<const SpmdRun> last;

  InputNames names(const Entry& e, const CallArgs& ca) const {
    return InputNames{opts.name, e.traced->consts.size(), ca.first_leaf.data(), ca.nargs};
  }
  CachedTracePtr trace(const CallArgs& ca, TraceFn fn);
  std::shared_ptr<Entry> make_entry(const CallArgs& ca, TraceFn fn);
  std::shared_ptr<Entry> entry_for(const CallArgs& ca, TraceFn fn);
  void join_budget(const Signature& sig, const std::shared_ptr<Entry>& e);
  /// Compiles e once (sharded: its SPMD executable); returns the unsharded executable (compiled
  /// again when the executable cache evicted it), null for a sharded entry.
  std::shared_ptr<const Executable> prepare(Entry& e, const CallArgs& ca);
  std::vector<Array> bind_traced(const Entry& e, const CallArgs& ca);
};

CachedTracePtr JitCore::State::trace(const CallArgs& ca, TraceFn fn) {
  std::vector<ShapedArray> avals;
  avals.reserve(ca.leaves.size());
  for (auto& a : ca.leaves) avals.push_back(a.aval());
  ++traces;
  std::any out_like;
  ClosedJaxpr cj;
  profiler::detail::Scope trace_event("tracing", "trace");
  if (trace_event.active()) {
    trace_event.set_name("trace jit '" + opts.name + "'");
    trace_event.set_args(trace_event_args(avals, loc));
  }
  try {
    cj = fn(avals, out_like);
  } catch (const ConcretizationError& err) {
    throw ConcretizationError(err.message() + " (while tracing jit function '" + opts.name + "')", err.where());
  }
  return make_cached_trace(cj, std::move(out_like));
}

std::shared_ptr<Entry> JitCore::State::make_entry(const CallArgs& ca, TraceFn fn) {
  auto e = std::make_shared<Entry>();
  if (this->fn.type) {
    // The shared cache: keyed by f's identity, the signature, the static values and which
    // arguments are static (Jits of one f may differ in static_argnums).
    TraceKey key;
    key.kind = "jit";
    key.fn = this->fn;
    key.sig = ca.sig;
    key.sig.words.push_back(ca.static_mask);
    key.sig.finish();
    key.statics = ca.statics;
    e->traced = shared_traces().get(key, [&] { return trace(ca, fn); });
  } else {
    e->traced = trace(ca, fn);
  }
  e->donated.assign(e->traced->consts.size(), false);
  const std::vector<bool> donated = ca.donated_leaves();
  e->donated.insert(e->donated.end(), donated.begin(), donated.end());
  e->statics = ca.statics;
  e->ready = true;
  return e;
}

std::shared_ptr<Entry> JitCore::State::entry_for(const CallArgs& ca, TraceFn fn) {
  std::unique_lock<std::mutex> g(mu);
  for (;;) {
    auto it = cache.find(ca.sig);
    std::shared_ptr<Entry> found;
    if (it != cache.end())
      for (auto& e : it->second)
        if (e->statics == ca.statics) found = e;
    if (!found) break;
    if (found->ready) {
      found->node.touch();
      return found;
    }
    if (found->maker == std::this_thread::get_id()) {
      // f calls this Jit with the signature being traced: never wait for oneself (unkept).
      g.unlock();
      return make_entry(ca, fn);
    }
    cv.wait(g);  // another thread traces this signature; a failure removes its placeholder
  }
  // Traced once per signature: a placeholder makes concurrent callers of it wait.
  auto placeholder = std::make_shared<Entry>();
  placeholder->statics = ca.statics;
  placeholder->maker = std::this_thread::get_id();
  cache[ca.sig].push_back(placeholder);
  g.unlock();
  std::shared_ptr<Entry> made;
  std::exception_ptr error;
  try {
    made = make_entry(ca, fn);
  } catch (...) {
    error = std::current_exception();
  }
  g.lock();
  auto& bucket = cache[ca.sig];
  auto it = std::find(bucket.begin(), bucket.end(), placeholder);
  // Kept unless its constants are tracers of an enclosing trace (valid for this call only).
  const bool kept = made && made->traced->cacheable();
  if (kept) {
    join_budget(ca.sig, made);
    *it = made;
  } else {
    bucket.erase(it);
  }
  if (bucket.empty()) cache.erase(ca.sig);
  cv.notify_all();
  g.unlock();
  if (error) std::rethrow_exception(error);
  if (kept) enforce_cache_budget();
  return made;
}

void JitCore::State::join_budget(const Signature& sig, const std::shared_ptr<Entry>& e) {
  std::weak_ptr<State> weak = weak_from_this();
  const Entry* raw = e.get();
  e->node.join("jit trace", 0, [weak, sig, raw] {
    std::shared_ptr<State> st = weak.lock();
    if (!st) return;  // the Jit is gone, and its entries with it
    std::shared_ptr<Entry> gone;  // freed after the lock is released
    std::lock_guard<std::mutex> g(st->mu);
    auto it = st->cache.find(sig);
    if (it == st->cache.end()) return;
    auto pos = std::find_if(it->second.begin(), it->second.end(), [&](auto& x) { return x.get() == raw; });
    if (pos == it->second.end()) return;
    gone = std::move(*pos);
    it->second.erase(pos);
    if (it->second.empty()) st->cache.erase(it);
  });
}

std::shared_ptr<const Executable> JitCore::State::prepare(Entry& e, const CallArgs& ca) {
  std::lock_guard<std::mutex> lock(e.prepare_mu);
  if (e.prepared) {
    if (e.spmd) return nullptr;
    if (std::shared_ptr<const Executable> exe = e.exe.lock()) return exe;
    // Evicted from the executable cache: compiled again (or found there, compiled by another Jit).
    std::shared_ptr<const Executable> exe = compile_traced(e.traced->jaxpr, opts, e.donated, loc);
    e.exe = exe;
    return exe;
  }
  std::shared_ptr<const Executable> exe;
  std::vector<ShapedArray> in_avals = e.traced->jaxpr->jaxpr->in_avals();
  std::vector<ShapedArray> out_avals = e.traced->jaxpr->jaxpr->out_avals();
  std::shared_ptr<const Mesh> mesh;
  auto in = resolve_shardings(opts.in_shardings, in_avals, ca.leaves, e.traced->consts.size(), "in_shardings", mesh,
                              names(e, ca), loc);
  auto out = resolve_shardings(opts.out_shardings, out_avals, {}, 0, "out_shardings", mesh, names(e, ca), loc);
  if (mesh) {
    e.spmd = lower_sharded(e.traced->jaxpr, e.traced->consts.size(), in, out, mesh, opts, loc);
    e.spmd_exe = compile_sharded(*e.spmd, opts, e.donated, loc);
  } else {
    exe = compile_traced(e.traced->jaxpr, opts, e.donated, loc);
    e.exe = exe;
  }
  e.prepared = true;
  return exe;
}

std::vector<Array> JitCore::State::bind_traced(const Entry& e, const CallArgs& ca) {
  std::vector<ShapedArray> in_avals = e.traced->jaxpr->jaxpr->in_avals();
  std::vector<ShapedArray> out_avals = e.traced->jaxpr->jaxpr->out_avals();
  std::shared_ptr<const Mesh> mesh;
  auto in = resolve_shardings(opts.in_shardings, in_avals, {}, e.traced->consts.size(), "in_shardings", mesh,
                              names(e, ca), loc);
  auto out = resolve_shardings(opts.out_shardings, out_avals, {}, 0, "out_shardings", mesh, names(e, ca), loc);
  std::vector<Array> operands;
  ClosedJaxprPtr body = e.traced->jaxpr;
  if (mesh) {
    auto [wrapped, consts] = constrained_body(e.traced->jaxpr, in, out, loc);
    body = wrapped;
    operands = consts;
  }
  operands.insert(operands.end(), e.traced->consts.begin(), e.traced->consts.end());
  operands.insert(operands.end(), ca.leaves.begin(), ca.leaves.end());
  return bind_call(pjit_p(), body, opts.name, operands, loc);
}

JitCore::JitCore(JitOptions opts, std::source_location loc, CallableId fn)
    : s_(std::make_shared<State>(std::move(opts), loc, std::move(fn))) {}

const JitOptions& JitCore::options() const { return s_->opts; }

std::source_location JitCore::loc() const { return s_->loc; }

JitCallResult JitCore::call(const CallArgs& ca, TraceFn trace, RerunFn rerun) const {
  State& s = *s_;
  check_not_abstract(ca.leaves, ca.first_leaf.data(), ca.nargs, s.opts.name, s.loc);
  std::shared_ptr<Entry> e =
      at_user_line("jit", s.opts.name, "trace: ", s.loc, [&] { return s.entry_for(ca, trace); });
  JitCallResult r;
  r.out_like = &e->traced->out_like;
  if (!executes_now(ca.leaves, e->traced->consts, s.loc)) {
    r.outs = s.bind_traced(*e, ca);
    r.staged = true;
    r.keep = std::move(e);
    return r;
  }
  // Held for the whole call: clear_caches() or an eviction meanwhile frees nothing this call uses.
  std::shared_ptr<const Executable> exe =
      at_user_line("jit", s.opts.name, "compile: ", s.loc, [&] { return s.prepare(*e, ca); });
  e->node.touch();
  e->traced->node.touch();
  if (e->spmd) {
    std::vector<Array> operands = e->traced->consts;
    operands.insert(operands.end(), ca.leaves.begin(), ca.leaves.end());
    std::shared_ptr<SpmdRun> run;
    r.outs = run_sharded(e->spmd, e->spmd_exe, operands, s.names(*e, ca), &run, s.loc);
    std::lock_guard<std::mutex> g(s.mu);
    s.last = run;
  } else {
    exe->cache_node.touch();
    r.outs = run_compiled(*exe, e->traced->consts, ca.leaves, s.opts.name, ca.first_leaf.data(), ca.nargs, s.loc);
  }
  if (float_checks_on()) {
    std::function<void()> again = [&] { rerun(); };
    check_jit_outputs(r.outs, s.opts.name, ca.donate_mask != 0, again, s.loc);
  }
  r.keep = std::move(e);
  return r;
}

SpmdRun JitCore::run_spmd_shards(const CallArgs& ca, TraceFn trace) const {
  State& s = *s_;
  std::shared_ptr<Entry> e = s.entry_for(ca, trace);
  if (!executes_now(ca.leaves, e->traced->consts, s.loc))
    throw ShardingError("jit '" + s.opts.name + "': run_spmd_shards needs concrete arguments", s.loc);
  s.prepare(*e, ca);
  if (!e->spmd)
    throw ShardingError("jit '" + s.opts.name + "': no in_shardings or out_shardings given, nothing to partition",
                        s.loc);
  std::vector<Array> operands = e->traced->consts;
  operands.insert(operands.end(), ca.leaves.begin(), ca.leaves.end());
  SpmdRun run = run_lowered(e->spmd, operands, s.loc);
  std::lock_guard<std::mutex> g(s.mu);
  s.last = std::make_shared<SpmdRun>(run);
  return run;
}

LoweredCall JitCore::lower(const CallArgs& ca, TraceFn trace, DescribeFn describe) const {
  State& s = *s_;
  // C++ gives no call site to a function whose parameters end in a pack: errors name the jit's.
  return at_user_line("jit", s.opts.name, "lower: ", s.loc, [&] {
    std::shared_ptr<Entry> e = s.entry_for(ca, trace);
    for (auto& c : e->traced->consts)
      if (!c.is_concrete())
        throw ShardingError("jit '" + s.opts.name + "': lower needs concrete closed-over values", s.loc);
    std::vector<ShapedArray> in_avals = e->traced->jaxpr->jaxpr->in_avals();
    std::vector<ShapedArray> out_avals = e->traced->jaxpr->jaxpr->out_avals();
    std::shared_ptr<const Mesh> mesh;
    auto in = resolve_shardings(s.opts.in_shardings, in_avals, ca.leaves, e->traced->consts.size(), "in_shardings",
                                mesh, s.names(*e, ca), s.loc);
    auto out =
        resolve_shardings(s.opts.out_shardings, out_avals, {}, 0, "out_shardings", mesh, s.names(*e, ca), s.loc);
    LoweredCall low;
    std::shared_ptr<const LoweredProgram> lp =
        mesh ? lower_sharded(e->traced->jaxpr, e->traced->consts.size(), in, out, mesh, s.opts, s.loc)
             : lower_unsharded(e->traced->jaxpr, e->traced->consts.size(), s.opts);
    static_cast<LoweredProgram&>(low) = *lp;
    if (mesh) low.spmd = lp;
    low.consts = e->traced->consts;
    low.out_like = e->traced->out_like;
    low.donated = e->donated;
    low.statics = ca.statics;
    low.signature = ca.sig;
    low.signature_text = describe();
    low.options = s.opts;
    low.loc = s.loc;
    return low;
  });
}

std::shared_ptr<const SpmdRun> JitCore::last_run() const {
  std::shared_ptr<const SpmdRun> last;
  {
    std::lock_guard<std::mutex> g(s_->mu);
    last = s_->last;
  }
  std::shared_ptr<const SpmdRun> done = finished_run(last);
  std::lock_guard<std::mutex> g(s_->mu);
  if (s_->last == last) s_->last = done;  // kept: later calls of last_run() return this object
  return done;
}

int JitCore::trace_count() const { return s_->traces.load(); }

void JitCore::clear_cache() const {
  std::vector<std::shared_ptr<Entry>> dropped;  // freed after the lock is released
  {
    std::lock_guard<std::mutex> g(s_->mu);
    for (auto& [sig, entries] : s_->cache)
      for (auto& e : entries)
        if (e->ready) dropped.push_back(e);
    for (auto it = s_->cache.begin(); it != s_->cache.end();) {
      std::erase_if(it->second, [](const std::shared_ptr<Entry>& e) { return e->ready; });
      it = it->second.empty() ? s_->cache.erase(it) : std::next(it);
    }
    for (auto& e : dropped) e->node.leave();
  }
  if (s_->fn.type) shared_traces().clear("jit", s_->fn);
}

size_t JitCore::cache_size() const {
  std::lock_guard<std::mutex> g(s_->mu);
  size_t n = 0;
  for (auto& [sig, entries] : s_->cache) n += entries.size();
  return n;
}

void compile_lowered_call(const LoweredCall& low, std::source_location loc, std::shared_ptr<const Executable>* exe,
                          std::shared_ptr<const SpmdExecutable>* spmd) {
  at_user_line("compile", low.options.name, "", loc, [&] {
    if (low.spmd) {
      *spmd = compile_sharded(*low.spmd, low.options, low.donated, loc, exe);
    } else {
      *exe = compile_lowering(low, low.options, low.donated, false, loc);
    }
  });
}

std::vector<Array> call_compiled(const LoweredCall& low, const std::shared_ptr<const Executable>& exe,
                                 const std::shared_ptr<const SpmdExecutable>& spmd, const CallArgs& ca,
                                 DescribeFn describe) {
  const std::string& name = low.options.name;
  check_not_abstract(ca.leaves, ca.first_leaf.data(), ca.nargs, name, low.loc);
  if (!(ca.sig == low.signature) || !(ca.statics == low.statics))
    throw TypeError("compiled '" + name + "' was lowered for arguments " + low.signature_text + " and called with " +
                        describe() + " (lower and compile again for another signature)",
                    low.loc);
  if (!executes_now(ca.leaves, low.consts, low.loc))
    throw TypeError("compiled '" + name + "' was called under a trace (grad, vmap, jit, make_jaxpr) or on "
                        "traced values: a Compiled runs concrete Arrays only; call the jit function itself "
                        "inside transformations",
                    low.loc);
  std::vector<Array> outs;
  if (low.spmd) {
    std::vector<Array> operands = low.consts;
    operands.insert(operands.end(), ca.leaves.begin(), ca.leaves.end());
    outs = run_sharded(low.spmd, spmd, operands, InputNames{name, low.consts.size(), ca.first_leaf.data(), ca.nargs},
                       nullptr, low.loc);
  } else {
    outs = run_compiled(*exe, low.consts, ca.leaves, name, ca.first_leaf.data(), ca.nargs, low.loc);
  }
  if (float_checks_on()) check_jit_outputs(outs, name, ca.donate_mask != 0, nullptr, low.loc);
  return outs;
}

std::map<std::string, double> executable_cost(const Executable& exe) { return exe.cost; }

CompiledMemoryStats executable_memory(const Executable& exe) { return exe.memory; }

}  // namespace detail

}  // namespace minijax
