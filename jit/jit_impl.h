// minijax jit: the template definitions of jit/jit.h (argument splitting, the signature cache,
// tracing with static arguments, execution, lower and compile). Included by jit/jit.h only.
#pragma once
#include <algorithm>
#include <optional>
#include <thread>
#include <tuple>

#include "core/float_checks.h"
#include "jit/jit.h"

namespace minijax {

namespace detail {

template <class T>
traced_t<T> rebuild_arg(const T& a, bool is_static, const Array*& next) {
  if constexpr (PyTree<T>) {
    if (!is_static) return pytree<T>::unflatten(a, next);
  }
  if constexpr (std::is_same_v<T, ShapeDtypeStruct>) return *next++;
  else return a;
}

template <class... A>
CallArgs split_args(const JitOptions& opts, std::source_location loc, const A&... args) {
  constexpr size_t n = sizeof...(A);
  static_assert(n <= 64, "mj::jit: at most 64 positional arguments");
  CallArgs ca;
  ca.nargs = n;
  if (!opts.static_argnums.empty()) ca.static_mask = argnum_mask(opts.static_argnums, n, "static_argnums", loc);
  if (!opts.donate_argnums.empty()) ca.donate_mask = argnum_mask(opts.donate_argnums, n, "donate_argnums", loc);
  ca.sig.words.reserve(64);
  size_t i = 0;
  auto one = [&](const auto& a) {
    using T = std::decay_t<decltype(a)>;
    ca.first_leaf[i] = uint32_t(ca.leaves.size());
    ca.sig.words.push_back(uint64_t(reinterpret_cast<uintptr_t>(&typeid(traced_t<T>))));  // SDS = Array
    if constexpr (PyTree<T>) {
      if (ca.is_static(i))
        throw TypeError("jit '" + opts.name + "': static_argnums names argument " + std::to_string(i) +
                            ", a pytree of Arrays; Arrays are not hashable (as in JAX): pass it traced, or "
                            "pass a hashable C++ value",
                        loc);
      pytree<T>::flatten(a, ca.leaves);
      append_structure(a, ca.sig);
    } else {
      if ((ca.donate_mask >> i) & 1)
        throw TypeError("jit '" + opts.name + "': donate_argnums names argument " + std::to_string(i) +
                            ", which is static (only Arrays can be donated)",
                        loc);
      ca.static_mask |= uint64_t(1) << i;
      ca.statics.push_back(static_key(static_value(a)));
      ca.sig.words.push_back(ca.statics.back().hash);
    }
    ++i;
  };
  (one(args), ...);
  ca.first_leaf[n] = uint32_t(ca.leaves.size());
  append_leaf_signature(ca.sig, ca.leaves, loc);
  ca.sig.finish();
  return ca;
}

template <class... A>
std::string describe_args(const CallArgs& ca, std::source_location loc, const A&... args) {
  std::vector<std::string> structures;
  size_t i = 0, k = 0;
  auto one = [&](const auto& a) {
    using T = std::decay_t<decltype(a)>;
    if constexpr (PyTree<T>) {
      if (!ca.is_static(i)) structures.push_back(pytree<T>::structure(a));
    }
    if (ca.is_static(i)) structures.push_back("static(hash=" + std::to_string(ca.statics.at(k++).hash) + ")");
    ++i;
  };
  (one(args), ...);
  return signature_text(structures, ca.leaves, loc);
}

/// The output pytree of a call: `like` (the traced output, in `out_like`) with `outs` as leaves.
template <class R>
R unflatten_outputs(const std::any& out_like, const std::vector<Array>& outs) {
  const Array* next = outs.data();
  return pytree<R>::unflatten(std::any_cast<const R&>(out_like), next);
}


/// fn(), where a ResourceExhaustedError raised at a line of the library (the allocator's, inside
/// tracing, lowering or compiling) is thrown again at the user's `loc` with `what` before its
/// message (e.g. "jit 'f': compile: "), keeping its type. Errors at the user's own lines (inside
/// f) and every other error pass unchanged.
template <class Fn>
decltype(auto) at_user_line(const std::string& what, std::source_location loc, Fn&& fn) {
  try {
    return fn();
  } catch (const ResourceExhaustedError& e) {
    if (!is_library_location(e.where())) throw;
    rethrow_at(e, what, loc);
    throw;
  }
}
}  // namespace detail

template <class F>
template <class R, class... A>
detail::CachedTracePtr Jit<F>::trace(const CallArgs& ca, const A&... args) const {
  State& s = *s_;
  std::vector<ShapedArray> avals;
  avals.reserve(ca.leaves.size());
  for (auto& a : ca.leaves) avals.push_back(a.aval());
  ++s.traces;
  std::optional<R> out_like;
  ClosedJaxpr cj;
  profiler::detail::Scope trace_event("tracing", "trace");
  if (trace_event.active()) {
    trace_event.set_name("trace jit '" + s.opts.name + "'");
    trace_event.set_args(detail::trace_event_args(avals, s.loc));
  }
  try {
    cj = trace_to_jaxpr(
        [&](const std::vector<Array>& ins) {
          const Array* next = ins.data();
          // Braced initialization evaluates left to right: leaves are consumed in order.
          auto rebuild = [&]<size_t... I>(std::index_sequence<I...>) {
            return std::tuple<detail::traced_t<A>...>{detail::rebuild_arg(args, ca.is_static(I), next)...};
          };
          std::tuple<detail::traced_t<A>...> rebuilt = rebuild(std::index_sequence_for<A...>{});
          R out = std::apply(s.f, rebuilt);
          std::vector<Array> leaves = tree_flatten(out);
          out_like = std::move(out);
          return leaves;
        },
        avals, s.loc);
  } catch (const ConcretizationError& err) {
    throw ConcretizationError(err.message() + " (while tracing jit function '" + s.opts.name + "')", err.where());
  }
  return detail::make_cached_trace(cj, detail::abstract_like(*out_like));
}

template <class F>
template <class R, class... A>
std::shared_ptr<typename Jit<F>::Entry> Jit<F>::make_entry(const CallArgs& ca, const A&... args) const {
  const State& s = *s_;
  auto e = std::make_shared<Entry>();
  if (s.fn.type) {
    // The shared cache: keyed by f's identity, the signature, the static values and which
    // arguments are static (Jits of one f may differ in static_argnums).
    detail::TraceKey key;
    key.kind = "jit";
    key.fn = s.fn;
    key.sig = ca.sig;
    key.sig.words.push_back(ca.static_mask);
    key.sig.finish();
    key.statics = ca.statics;
    e->traced = detail::shared_traces().get(key, [&] { return trace<R>(ca, args...); });
  } else {
    e->traced = trace<R>(ca, args...);
  }
  e->donated.assign(e->traced->consts.size(), false);
  const std::vector<bool> donated = ca.donated_leaves();
  e->donated.insert(e->donated.end(), donated.begin(), donated.end());
  e->statics = ca.statics;
  e->ready = true;
  return e;
}

template <class F>
template <class R, class... A>
std::shared_ptr<typename Jit<F>::Entry> Jit<F>::entry_for(const CallArgs& ca, const A&... args) const {
  State& s = *s_;
  std::unique_lock<std::mutex> g(s.mu);
  for (;;) {
    auto it = s.cache.find(ca.sig);
    std::shared_ptr<Entry> found;
    if (it != s.cache.end())
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
      return make_entry<R>(ca, args...);
    }
    s.cv.wait(g);  // another thread traces this signature; a failure removes its placeholder
  }
  // Traced once per signature: a placeholder makes concurrent callers of it wait.
  auto placeholder = std::make_shared<Entry>();
  placeholder->statics = ca.statics;
  placeholder->maker = std::this_thread::get_id();
  s.cache[ca.sig].push_back(placeholder);
  g.unlock();
  std::shared_ptr<Entry> made;
  std::exception_ptr error;
  try {
    made = make_entry<R>(ca, args...);
  } catch (...) {
    error = std::current_exception();
  }
  g.lock();
  auto& bucket = s.cache[ca.sig];
  auto it = std::find(bucket.begin(), bucket.end(), placeholder);
  // Kept unless its constants are tracers of an enclosing trace (valid for this call only).
  const bool kept = made && made->traced->cacheable();
  if (kept) {
    join_budget(ca.sig, made);
    *it = made;
  } else {
    bucket.erase(it);
  }
  if (bucket.empty()) s.cache.erase(ca.sig);
  s.cv.notify_all();
  g.unlock();
  if (error) std::rethrow_exception(error);
  if (kept) detail::enforce_cache_budget();
  return made;
}

template <class F>
void Jit<F>::join_budget(const detail::Signature& sig, const std::shared_ptr<Entry>& e) const {
  std::weak_ptr<State> weak = s_;
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

template <class F>
std::shared_ptr<const Executable> Jit<F>::prepare(Entry& e, const CallArgs& ca) const {
  const State& s = *s_;
  const InputNames names{s.opts.name, e.traced->consts.size(), ca.first_leaf.data(), ca.nargs};
  std::lock_guard<std::mutex> lock(e.prepare_mu);
  if (e.prepared) {
    if (e.spmd) return nullptr;
    if (std::shared_ptr<const Executable> exe = e.exe.lock()) return exe;
    // Evicted from the executable cache: compiled again (or found there, compiled by another Jit).
    std::shared_ptr<const Executable> exe = detail::compile_traced(e.traced->jaxpr, s.opts, e.donated, s.loc);
    e.exe = exe;
    return exe;
  }
  std::shared_ptr<const Executable> exe;
  {
    std::vector<ShapedArray> in_avals = e.traced->jaxpr->jaxpr->in_avals();
    std::vector<ShapedArray> out_avals = e.traced->jaxpr->jaxpr->out_avals();
    std::shared_ptr<const Mesh> mesh;
    auto in = detail::resolve_shardings(s.opts.in_shardings, in_avals, ca.leaves, e.traced->consts.size(), "in_shardings",
                                        mesh, names, s.loc);
    auto out =
        detail::resolve_shardings(s.opts.out_shardings, out_avals, {}, 0, "out_shardings", mesh, names, s.loc);
    if (mesh) {
      e.spmd = detail::lower_sharded(e.traced->jaxpr, e.traced->consts.size(), in, out, mesh, s.opts, s.loc);
      e.spmd_exe = detail::compile_sharded(*e.spmd, s.opts, e.donated, s.loc);
    } else {
      exe = detail::compile_traced(e.traced->jaxpr, s.opts, e.donated, s.loc);
      e.exe = exe;
    }
  }
  e.prepared = true;
  return exe;
}

template <class F>
std::vector<Array> Jit<F>::bind_traced(const Entry& e, const CallArgs& ca) const {
  const State& s = *s_;
  const std::vector<Array>& leaves = ca.leaves;
  const InputNames names{s.opts.name, e.traced->consts.size(), ca.first_leaf.data(), ca.nargs};
  std::vector<ShapedArray> in_avals = e.traced->jaxpr->jaxpr->in_avals();
  std::vector<ShapedArray> out_avals = e.traced->jaxpr->jaxpr->out_avals();
  std::shared_ptr<const Mesh> mesh;
  auto in = detail::resolve_shardings(s.opts.in_shardings, in_avals, {}, e.traced->consts.size(), "in_shardings", mesh,
                                      names, s.loc);
  auto out =
      detail::resolve_shardings(s.opts.out_shardings, out_avals, {}, 0, "out_shardings", mesh, names, s.loc);
  std::vector<Array> operands;
  ClosedJaxprPtr body = e.traced->jaxpr;
  if (mesh) {
    auto [wrapped, consts] = detail::constrained_body(e.traced->jaxpr, in, out, s.loc);
    body = wrapped;
    operands = consts;
  }
  operands.insert(operands.end(), e.traced->consts.begin(), e.traced->consts.end());
  operands.insert(operands.end(), leaves.begin(), leaves.end());
  return bind_call(pjit_p(), body, s.opts.name, operands, s.loc);
}

template <class F>
template <class... A>
auto Jit<F>::operator()(const A&... args) const {
  using R = std::decay_t<std::invoke_result_t<F&, const detail::traced_t<A>&...>>;
  State& s = *s_;
  CallArgs ca = detail::split_args(s.opts, s.loc, args...);
  detail::check_not_abstract(ca.leaves, ca.first_leaf.data(), ca.nargs, s.opts.name, s.loc);
  std::shared_ptr<Entry> e =
      detail::at_user_line("jit '" + s.opts.name + "': trace: ", s.loc, [&] { return entry_for<R>(ca, args...); });
  if (!detail::executes_now(ca.leaves, e->traced->consts, s.loc)) {
    std::vector<Array> outs = bind_traced(*e, ca);
    return tree_unflatten(std::any_cast<const R&>(e->traced->out_like), outs, s.loc);
  }
  // Held for the whole call: clear_caches() or an eviction meanwhile frees nothing this call uses.
  std::shared_ptr<const Executable> exe =
      detail::at_user_line("jit '" + s.opts.name + "': compile: ", s.loc, [&] { return prepare(*e, ca); });
  e->node.touch();
  e->traced->node.touch();
  std::vector<Array> outs;
  if (e->spmd) {
    std::vector<Array> operands = e->traced->consts;
    operands.insert(operands.end(), ca.leaves.begin(), ca.leaves.end());
    std::shared_ptr<SpmdRun> run;
    outs = detail::run_sharded(e->spmd, e->spmd_exe, operands,
                               InputNames{s.opts.name, e->traced->consts.size(), ca.first_leaf.data(), ca.nargs}, &run,
                               s.loc);
    std::lock_guard<std::mutex> g(s.mu);
    s.last = run;
  } else {
    exe->cache_node.touch();
    outs = detail::run_compiled(*exe, e->traced->consts, ca.leaves, s.opts.name, ca.first_leaf.data(), ca.nargs,
                                s.loc);
  }
  if (detail::float_checks_on()) {
    // debug_nans / debug_infs: a NaN or Inf in an output re-runs f op by op on the same arguments
    // (JAX's de-optimized re-run), whose first offending primitive throws at the user's line.
    auto rerun = [&] {
      const Array* next = ca.leaves.data();
      auto rebuild = [&]<size_t... I>(std::index_sequence<I...>) {
        return std::tuple<detail::traced_t<A>...>{detail::rebuild_arg(args, ca.is_static(I), next)...};
      };
      std::tuple<detail::traced_t<A>...> rebuilt = rebuild(std::index_sequence_for<A...>{});
      (void)std::apply(s.f, rebuilt);
    };
    detail::check_jit_outputs(outs, s.opts.name, ca.donate_mask != 0, rerun, s.loc);
  }
  return detail::unflatten_outputs<R>(e->traced->out_like, outs);
}

template <class F>
template <class... A>
SpmdRun Jit<F>::run_spmd_shards(const A&... args) const {
  using R = std::decay_t<std::invoke_result_t<F&, const detail::traced_t<A>&...>>;
  State& s = *s_;
  CallArgs ca = detail::split_args(s.opts, s.loc, args...);
  std::shared_ptr<Entry> e = entry_for<R>(ca, args...);
  if (!detail::executes_now(ca.leaves, e->traced->consts, s.loc))
    throw ShardingError("jit '" + s.opts.name + "': run_spmd_shards needs concrete arguments", s.loc);
  prepare(*e, ca);
  if (!e->spmd)
    throw ShardingError("jit '" + s.opts.name + "': no in_shardings or out_shardings given, nothing to partition",
                        s.loc);
  std::vector<Array> operands = e->traced->consts;
  operands.insert(operands.end(), ca.leaves.begin(), ca.leaves.end());
  SpmdRun run = detail::run_lowered(e->spmd, operands, s.loc);
  std::lock_guard<std::mutex> g(s.mu);
  s.last = std::make_shared<SpmdRun>(run);
  return run;
}

template <class F>
template <class... A>
auto Jit<F>::lower(const A&... args) const {
  // C++ gives no call site to a function whose parameters end in a pack: errors name the jit's.
  return detail::at_user_line("jit '" + s_->opts.name + "': lower: ", s_->loc, [&] { return lower_impl(args...); });
}

template <class F>
template <class... A>
auto Jit<F>::lower_impl(const A&... args) const {
  using R = std::decay_t<std::invoke_result_t<F&, const detail::traced_t<A>&...>>;
  State& s = *s_;
  CallArgs ca = detail::split_args(s.opts, s.loc, args...);
  std::shared_ptr<Entry> e = entry_for<R>(ca, args...);
  for (auto& c : e->traced->consts)
    if (!c.is_concrete())
      throw ShardingError("jit '" + s.opts.name + "': lower needs concrete closed-over values", s.loc);
  std::vector<ShapedArray> in_avals = e->traced->jaxpr->jaxpr->in_avals();
  std::vector<ShapedArray> out_avals = e->traced->jaxpr->jaxpr->out_avals();
  std::shared_ptr<const Mesh> mesh;
  const InputNames names{s.opts.name, e->traced->consts.size(), ca.first_leaf.data(), ca.nargs};
  auto in = detail::resolve_shardings(s.opts.in_shardings, in_avals, ca.leaves, e->traced->consts.size(), "in_shardings",
                                      mesh, names, s.loc);
  auto out =
      detail::resolve_shardings(s.opts.out_shardings, out_avals, {}, 0, "out_shardings", mesh, names, s.loc);
  Lowered<R> low;
  std::shared_ptr<const LoweredProgram> lp =
      mesh ? detail::lower_sharded(e->traced->jaxpr, e->traced->consts.size(), in, out, mesh, s.opts, s.loc)
           : detail::lower_unsharded(e->traced->jaxpr, e->traced->consts.size(), s.opts);
  static_cast<LoweredProgram&>(low) = *lp;
  if (mesh) low.spmd = lp;
  low.consts = e->traced->consts;
  low.out_like = e->traced->out_like;
  low.donated = e->donated;
  low.statics = ca.statics;
  low.signature = ca.sig;
  low.signature_text = detail::describe_args(ca, s.loc, args...);
  low.options = s.opts;
  low.loc = s.loc;
  return low;
}

template <class R>
Compiled<R> Lowered<R>::compile(std::source_location loc) const {
  Compiled<R> c;
  c.low_ = *this;
  c.low_.loc = loc;  // the Compiled's own errors name the line that made it
  detail::at_user_line("compile '" + options.name + "': ", loc, [&] {
    if (spmd) {
      c.spmd_ = detail::compile_sharded(*spmd, options, donated, loc, &c.exe_);
    } else {
      c.exe_ = detail::compile_lowering(*this, options, donated, false, loc);
    }
  });
  return c;
}

template <class R>
template <class... A>
R Compiled<R>::operator()(const A&... args) const {
  const std::string& name = low_.options.name;
  CallArgs ca = detail::split_args(low_.options, low_.loc, args...);
  detail::check_not_abstract(ca.leaves, ca.first_leaf.data(), ca.nargs, name, low_.loc);
  if (!(ca.sig == low_.signature) || !(ca.statics == low_.statics))
    throw TypeError("compiled '" + name + "' was lowered for arguments " + low_.signature_text +
                        " and called with " + detail::describe_args(ca, low_.loc, args...) +
                        " (lower and compile again for another signature)",
                    low_.loc);
  if (!detail::executes_now(ca.leaves, low_.consts, low_.loc))
    throw TypeError("compiled '" + name + "' was called under a trace (grad, vmap, jit, make_jaxpr) or on "
                        "traced values: a Compiled runs concrete Arrays only; call the jit function itself "
                        "inside transformations",
                    low_.loc);
  std::vector<Array> outs;
  if (low_.spmd) {
    std::vector<Array> operands = low_.consts;
    operands.insert(operands.end(), ca.leaves.begin(), ca.leaves.end());
    outs = detail::run_sharded(low_.spmd, spmd_, operands,
                               InputNames{name, low_.consts.size(), ca.first_leaf.data(), ca.nargs}, nullptr,
                               low_.loc);
  } else {
    outs = detail::run_compiled(*exe_, low_.consts, ca.leaves, name, ca.first_leaf.data(), ca.nargs, low_.loc);
  }
  if (detail::float_checks_on()) detail::check_jit_outputs(outs, name, ca.donate_mask != 0, nullptr, low_.loc);
  return detail::unflatten_outputs<R>(low_.out_like, outs);
}

}  // namespace minijax
