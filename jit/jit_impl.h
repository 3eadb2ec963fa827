// minijax jit: the template definitions of jit/jit.h (argument splitting, the signature cache,
// tracing with static arguments, execution, lower and compile). Included by jit/jit.h only.
#pragma once
#include <tuple>

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
  const std::vector<bool> st = argnum_mask(opts.static_argnums, n, "static_argnums", loc);
  const std::vector<bool> dn = argnum_mask(opts.donate_argnums, n, "donate_argnums", loc);
  CallArgs ca;
  ca.key.reserve(64);
  size_t i = 0;
  auto one = [&](const auto& a) {
    using T = std::decay_t<decltype(a)>;
    if constexpr (PyTree<T>) {
      if (st[i])
        throw TypeError("jit '" + opts.name + "': static_argnums names argument " + std::to_string(i) +
                            ", a pytree of Arrays; Arrays are not hashable (as in JAX): pass it traced, or "
                            "pass a hashable C++ value",
                        loc);
      const size_t before = ca.leaves.size();
      pytree<T>::flatten(a, ca.leaves);
      ca.donated.insert(ca.donated.end(), ca.leaves.size() - before, bool(dn[i]));
      ca.key += pytree<T>::structure(a);
      ca.is_static.push_back(false);
    } else {
      if (dn[i])
        throw TypeError("jit '" + opts.name + "': donate_argnums names argument " + std::to_string(i) +
                            ", which is static (only Arrays can be donated)",
                        loc);
      ca.statics.push_back(static_key(a));
      ca.key += "S";
      ca.key += std::to_string(ca.statics.back().hash);
      ca.is_static.push_back(true);
    }
    ca.key += '|';
    ++i;
  };
  (one(args), ...);
  append_leaf_signature(ca.key, ca.leaves, loc);
  return ca;
}

}  // namespace detail

template <class F>
template <class R, class... A>
std::shared_ptr<typename Jit<F>::Entry> Jit<F>::trace(const CallArgs& ca, const A&... args) const {
  State& s = *s_;
  std::vector<ShapedArray> avals;
  avals.reserve(ca.leaves.size());
  for (auto& a : ca.leaves) avals.push_back(a.aval());
  auto e = std::make_shared<Entry>();
  ++s.traces;
  ClosedJaxpr cj;
  try {
    cj = trace_to_jaxpr(
        [&](const std::vector<Array>& ins) {
          const Array* next = ins.data();
          size_t i = 0;
          // Braced initialization evaluates left to right: leaves are consumed in order.
          std::tuple<detail::traced_t<A>...> rebuilt{detail::rebuild_arg(args, ca.is_static[i++], next)...};
          R out = std::apply(s.f, rebuilt);
          std::vector<Array> leaves = tree_flatten(out);
          e->out_like = std::move(out);
          return leaves;
        },
        avals, s.loc);
  } catch (const ConcretizationError& err) {
    throw ConcretizationError(err.message() + " (while tracing jit function '" + s.opts.name + "')", err.where());
  }
  auto body = std::make_shared<ClosedJaxpr>();
  body->jaxpr = std::make_shared<Jaxpr>(convert_constvars_jaxpr(*cj.jaxpr));
  e->jaxpr = body;
  e->consts = cj.consts;
  e->donated.assign(cj.consts.size(), false);
  e->donated.insert(e->donated.end(), ca.donated.begin(), ca.donated.end());
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
    auto it = s.cache.find(ca.key);
    std::shared_ptr<Entry> found;
    if (it != s.cache.end())
      for (auto& e : it->second)
        if (e->statics == ca.statics) found = e;
    if (!found) break;
    if (found->ready) return found;
    s.cv.wait(g);  // another thread traces this signature; a failure removes its placeholder
  }
  // Traced once per signature: a placeholder makes concurrent callers of it wait.
  auto placeholder = std::make_shared<Entry>();
  placeholder->statics = ca.statics;
  s.cache[ca.key].push_back(placeholder);
  g.unlock();
  std::shared_ptr<Entry> made;
  std::exception_ptr error;
  try {
    made = trace<R>(ca, args...);
  } catch (...) {
    error = std::current_exception();
  }
  g.lock();
  auto& bucket = s.cache[ca.key];
  auto it = std::find(bucket.begin(), bucket.end(), placeholder);
  bool cacheable = made != nullptr;
  if (made)
    for (auto& c : made->consts) cacheable &= c.is_concrete();  // else: tracers of an enclosing trace
  if (cacheable) *it = made;
  else bucket.erase(it);
  if (bucket.empty()) s.cache.erase(ca.key);
  s.cv.notify_all();
  g.unlock();
  if (error) std::rethrow_exception(error);
  return made;
}

template <class F>
void Jit<F>::prepare(Entry& e, const std::vector<Array>& leaves) const {
  const State& s = *s_;
  std::call_once(e.prepared, [&] {
    std::vector<ShapedArray> in_avals = e.jaxpr->jaxpr->in_avals();
    std::vector<ShapedArray> out_avals = e.jaxpr->jaxpr->out_avals();
    std::shared_ptr<const Mesh> mesh;
    auto in = detail::resolve_shardings(s.opts.in_shardings, in_avals, leaves, e.consts.size(), "in_shardings",
                                        mesh, s.loc);
    auto out = detail::resolve_shardings(s.opts.out_shardings, out_avals, {}, 0, "out_shardings", mesh, s.loc);
    if (mesh) e.spmd = detail::lower_sharded(e.jaxpr, e.consts.size(), in, out, mesh, s.loc);
    else e.exe = detail::compile_traced(e.jaxpr, s.opts, e.donated);
  });
}

template <class F>
std::vector<Array> Jit<F>::bind_traced(const Entry& e, const std::vector<Array>& leaves) const {
  const State& s = *s_;
  std::vector<ShapedArray> in_avals = e.jaxpr->jaxpr->in_avals();
  std::vector<ShapedArray> out_avals = e.jaxpr->jaxpr->out_avals();
  std::shared_ptr<const Mesh> mesh;
  auto in = detail::resolve_shardings(s.opts.in_shardings, in_avals, {}, e.consts.size(), "in_shardings", mesh, s.loc);
  auto out = detail::resolve_shardings(s.opts.out_shardings, out_avals, {}, 0, "out_shardings", mesh, s.loc);
  std::vector<Array> operands;
  ClosedJaxprPtr body = e.jaxpr;
  if (mesh) {
    auto [wrapped, consts] = detail::constrained_body(e.jaxpr, in, out, s.loc);
    body = wrapped;
    operands = consts;
  }
  operands.insert(operands.end(), e.consts.begin(), e.consts.end());
  operands.insert(operands.end(), leaves.begin(), leaves.end());
  return bind_call(pjit_p(), body, s.opts.name, operands, s.loc);
}

template <class F>
template <class... A>
auto Jit<F>::operator()(const A&... args) const {
  using R = std::decay_t<std::invoke_result_t<F&, const detail::traced_t<A>&...>>;
  State& s = *s_;
  CallArgs ca = detail::split_args(s.opts, s.loc, args...);
  detail::check_not_abstract(ca.leaves, s.opts.name, s.loc);
  std::shared_ptr<Entry> e = entry_for<R>(ca, args...);
  std::vector<Array> probe = ca.leaves;
  probe.insert(probe.end(), e->consts.begin(), e->consts.end());
  if (!detail::executes_now(probe, s.loc)) {
    std::vector<Array> outs = bind_traced(*e, ca.leaves);
    return tree_unflatten(std::any_cast<const R&>(e->out_like), outs, s.loc);
  }
  prepare(*e, ca.leaves);
  std::vector<Array> outs;
  if (e->spmd) {
    std::vector<Array> operands = e->consts;
    operands.insert(operands.end(), ca.leaves.begin(), ca.leaves.end());
    auto run = std::make_shared<SpmdRun>(detail::run_lowered(e->spmd, operands, s.loc));
    outs = detail::sharded_outputs(*e->spmd, *run, s.loc);
    std::lock_guard<std::mutex> g(s.mu);
    s.last = run;
  } else {
    outs = detail::run_compiled(*e->exe, e->consts, ca.leaves, s.loc);
  }
  return tree_unflatten(std::any_cast<const R&>(e->out_like), outs, s.loc);
}

template <class F>
template <class... A>
SpmdRun Jit<F>::run_spmd_shards(const A&... args) const {
  using R = std::decay_t<std::invoke_result_t<F&, const detail::traced_t<A>&...>>;
  State& s = *s_;
  CallArgs ca = detail::split_args(s.opts, s.loc, args...);
  std::shared_ptr<Entry> e = entry_for<R>(ca, args...);
  std::vector<Array> probe = ca.leaves;
  probe.insert(probe.end(), e->consts.begin(), e->consts.end());
  if (!detail::executes_now(probe, s.loc))
    throw ShardingError("jit '" + s.opts.name + "': run_spmd_shards needs concrete arguments", s.loc);
  prepare(*e, ca.leaves);
  if (!e->spmd)
    throw ShardingError("jit '" + s.opts.name + "': no in_shardings or out_shardings given, nothing to partition",
                        s.loc);
  std::vector<Array> operands = e->consts;
  operands.insert(operands.end(), ca.leaves.begin(), ca.leaves.end());
  SpmdRun run = detail::run_lowered(e->spmd, operands, s.loc);
  std::lock_guard<std::mutex> g(s.mu);
  s.last = std::make_shared<SpmdRun>(run);
  return run;
}

template <class F>
template <class... A>
auto Jit<F>::lower(const A&... args) const {
  using R = std::decay_t<std::invoke_result_t<F&, const detail::traced_t<A>&...>>;
  State& s = *s_;
  CallArgs ca = detail::split_args(s.opts, s.loc, args...);
  std::shared_ptr<Entry> e = entry_for<R>(ca, args...);
  for (auto& c : e->consts)
    if (!c.is_concrete())
      throw ShardingError("jit '" + s.opts.name + "': lower needs concrete closed-over values", s.loc);
  std::vector<ShapedArray> in_avals = e->jaxpr->jaxpr->in_avals();
  std::vector<ShapedArray> out_avals = e->jaxpr->jaxpr->out_avals();
  std::shared_ptr<const Mesh> mesh;
  auto in = detail::resolve_shardings(s.opts.in_shardings, in_avals, ca.leaves, e->consts.size(), "in_shardings",
                                      mesh, s.loc);
  auto out = detail::resolve_shardings(s.opts.out_shardings, out_avals, {}, 0, "out_shardings", mesh, s.loc);
  Lowered<R> low;
  std::shared_ptr<const LoweredProgram> lp =
      mesh ? detail::lower_sharded(e->jaxpr, e->consts.size(), in, out, mesh, s.loc)
           : detail::lower_unsharded(e->jaxpr, e->consts.size());
  static_cast<LoweredProgram&>(low) = *lp;
  if (mesh) low.spmd = lp;
  low.consts = e->consts;
  low.out_like = e->out_like;
  low.donated = e->donated;
  low.is_static = ca.is_static;
  low.statics = ca.statics;
  low.signature = ca.key;
  low.options = s.opts;
  low.loc = s.loc;
  return low;
}

template <class R>
Compiled<R> Lowered<R>::compile() const {
  Compiled<R> c;
  c.low_ = *this;
  if (!spmd) c.exe_ = detail::compile_traced(jaxpr, options, donated);
  return c;
}

template <class R>
template <class... A>
R Compiled<R>::operator()(const A&... args) const {
  CallArgs ca = detail::split_args(low_.options, low_.loc, args...);
  detail::check_not_abstract(ca.leaves, low_.options.name, low_.loc);
  if (ca.key != low_.signature || !(ca.statics == low_.statics))
    throw TypeError("compiled '" + low_.options.name + "' was lowered for arguments " + low_.signature +
                        " and called with " + ca.key + " (lower and compile again for another signature)",
                    low_.loc);
  std::vector<Array> outs;
  if (low_.spmd) {
    std::vector<Array> operands = low_.consts;
    operands.insert(operands.end(), ca.leaves.begin(), ca.leaves.end());
    SpmdRun run = detail::run_lowered(low_.spmd, operands, low_.loc);
    outs = detail::sharded_outputs(*low_.spmd, run, low_.loc);
  } else {
    outs = detail::run_compiled(*exe_, low_.consts, ca.leaves, low_.loc);
  }
  return tree_unflatten(std::any_cast<const R&>(low_.out_like), outs, low_.loc);
}

}  // namespace minijax
