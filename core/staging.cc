// minijax staging trace, trace_to_jaxpr and eval_jaxpr.
// Owns closure conversion (captured values -> constvars/literals) and jaxpr evaluation.
#include "core/staging.h"
#include "core/param_reads.h"

#include <unordered_set>

#include "core/config.h"
#include "core/pjit.h"
#include "core/trace.h"
#include "core/verify.h"

namespace minijax {

Array JaxprTrace::lift(const Array& x) {
  auto it = const_tracers_.find(x.impl());
  if (it != const_tracers_.end()) return it->second;
  Var v(x.aval());
  Array t(std::make_shared<JaxprTracer>(shared_from_this(), v));
  constvars_.push_back(v);
  consts_.push_back(x);
  const_tracers_[x.impl()] = t;
  const_values_[t.impl()] = x;
  return t;
}

Atom JaxprTrace::atom_of(const Array& t) {
  auto it = const_values_.find(t.impl());
  if (it != const_values_.end() && it->second.is_concrete() && it->second.ndim() == 0)
    return Literal{it->second};
  return static_cast<const JaxprTracer*>(t.impl())->var();
}

Array JaxprTrace::new_arg(const ShapedArray& aval) {
  return Array(std::make_shared<JaxprTracer>(shared_from_this(), Var(aval)));
}

std::vector<Array> JaxprTrace::add_eqn(const Primitive& p, const std::vector<Array>& in,
                                       const Params& params,
                                       const std::vector<ShapedArray>& out_avals) {
  Eqn e;
  e.primitive = &p;
  e.params = params;
  e.effects = p.effects;
  // A call or control-flow equation has the effects of the jaxprs it nests.
  for (auto& [k, v] : params.items()) {
    if (auto* cj = std::get_if<ClosedJaxprPtr>(&v)) {
      if (*cj) e.effects.insert((*cj)->jaxpr->effects.begin(), (*cj)->jaxpr->effects.end());
    } else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&v)) {
      for (auto& c : *cjs)
        if (c) e.effects.insert(c->jaxpr->effects.begin(), c->jaxpr->effects.end());
    }
  }
  for (auto& a : in) e.inputs.push_back(atom_of(a));
  std::vector<Array> outs;
  for (auto& av : out_avals) {
    Var v(av);
    e.outputs.push_back(v);
    outs.push_back(Array(std::make_shared<JaxprTracer>(shared_from_this(), v)));
  }
  eqns_.push_back(std::move(e));
  return outs;
}

std::vector<Array> JaxprTrace::process_primitive(const Primitive& p, const std::vector<Array>& in,
                                                 const Params& params, std::source_location loc) {
  std::vector<ShapedArray> avals;
  for (auto& a : in) avals.push_back(a.aval());
  return add_eqn(p, in, params, abstract_eval(p, avals, params, loc));
}

ClosedJaxpr JaxprTrace::to_jaxpr(const std::vector<Array>& ins, const std::vector<Array>& outs,
                                 std::source_location loc) {
  auto j = std::make_shared<Jaxpr>();
  for (auto& a : ins) j->invars.push_back(static_cast<const JaxprTracer*>(a.impl())->var());
  for (auto& o : outs) {
    Array t = full_raise(*this, o, loc);
    auto it = const_values_.find(t.impl());
    if (it != const_values_.end() && it->second.is_concrete() && it->second.ndim() == 0) {
      j->outvars.push_back(Literal{it->second});
    } else {
      j->outvars.push_back(static_cast<const JaxprTracer*>(t.impl())->var());
    }
  }
  j->eqns = eqns_;
  // Keep only the constvars that are used.
  std::unordered_set<Var, VarHash> used;
  for (auto& e : j->eqns)
    for (auto& a : e.inputs)
      if (auto* v = std::get_if<Var>(&a)) used.insert(*v);
  for (auto& a : j->outvars)
    if (auto* v = std::get_if<Var>(&a)) used.insert(*v);
  ClosedJaxpr cj;
  for (size_t i = 0; i < constvars_.size(); ++i) {
    if (!used.count(constvars_[i])) continue;
    j->constvars.push_back(constvars_[i]);
    cj.consts.push_back(consts_[i]);
  }
  for (auto& e : j->eqns) j->effects.insert(e.effects.begin(), e.effects.end());
  cj.jaxpr = j;
  // Every staged jaxpr (make_jaxpr, jit, linearize's linear jaxpr, bodies) is checked here.
  if (config().verify_jaxprs) verify_jaxpr(*cj.jaxpr, loc);
  return cj;
}

void JaxprTrace::release() {
  const_tracers_.clear();
  const_values_.clear();
}

ClosedJaxpr trace_to_jaxpr(const FlatFn& f, const std::vector<ShapedArray>& in_avals,
                           std::source_location loc) {
  check_trace_depth(loc);
  TraceScope<JaxprTrace> scope(/*dynamic=*/true);
  std::vector<Array> ins;
  for (auto& av : in_avals) ins.push_back(scope->new_arg(av));
  std::vector<Array> outs = f(ins);
  return scope->to_jaxpr(ins, outs, loc);
}

namespace {
// The body of call equation e when eval_jaxpr may evaluate it in place: a closed_call, or a
// pjit while no executor compiles pjit bodies, on concrete operands outside any trace, whose
// body takes operands of those avals; null otherwise (e is bound as any equation).
const Jaxpr* eager_call_body(const Eqn& e, const std::vector<Array>& ins, std::source_location loc) {
  const bool call = e.primitive == &closed_call_p() || (e.primitive == &pjit_p() && !pjit_executor());
  if (!call) return nullptr;
  const char* key = e.primitive == &pjit_p() ? "jaxpr" : "call_jaxpr";
  if (!e.params.has(key)) return nullptr;
  auto* cj = std::get_if<ClosedJaxprPtr>(&param_at(e.params, key));
  if (!cj || !*cj || !(*cj)->jaxpr) return nullptr;
  const Jaxpr& b = *(*cj)->jaxpr;
  if (b.invars.size() != ins.size() || b.constvars.size() != (*cj)->consts.size() ||
      b.outvars.size() != e.outputs.size())
    return nullptr;
  if (find_top_trace(ins, loc) != TraceStack::eval()) return nullptr;
  for (size_t i = 0; i < ins.size(); ++i)
    if (!ins[i].aval().same_type(b.invars[i].aval())) return nullptr;
  return &b;
}
}  // namespace

std::vector<Array> eval_jaxpr(const Jaxpr& j, const std::vector<Array>& consts,
                              const std::vector<Array>& args, std::source_location loc) {
  if (consts.size() != j.constvars.size() || args.size() != j.invars.size())
    throw ShapeError("eval_jaxpr: expected " + std::to_string(j.constvars.size()) + " consts and " +
                         std::to_string(j.invars.size()) + " args, got " +
                         std::to_string(consts.size()) + " and " + std::to_string(args.size()),
                     loc);
  std::unordered_map<Var, Array, VarHash> env;
  for (size_t i = 0; i < consts.size(); ++i) env[j.constvars[i]] = consts[i];
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].aval().same_type(j.invars[i].aval()))
      throw ShapeError("eval_jaxpr: argument " + std::to_string(i) + " is " + args[i].aval().str() +
                           ", the jaxpr expects " + j.invars[i].aval().str(),
                       loc);
    env[j.invars[i]] = args[i];
  }
  // Eager closed_call (and pjit without an executor) equations are evaluated in place from an
  // explicit stack of bodies, not by binding them (their impl would call eval_jaxpr again): a
  // 10,000-deep nest of calls is evaluated in constant stack.
  struct Frame {
    const Jaxpr* j;
    std::unordered_map<Var, Array, VarHash> env;
    size_t next = 0;
    const Eqn* call = nullptr;  // the call equation of the frame below that this frame evaluates
  };
  std::vector<Frame> stack;
  stack.push_back(Frame{&j, std::move(env), 0, nullptr});
  while (true) {
    Frame& f = stack.back();
    auto read = [&f](const Atom& a) -> Array {
      if (auto* v = std::get_if<Var>(&a)) return f.env.at(*v);
      return std::get<Literal>(a).value;
    };
    if (f.next == f.j->eqns.size()) {
      std::vector<Array> r;
      for (auto& a : f.j->outvars) r.push_back(read(a));
      const Eqn* call = f.call;
      stack.pop_back();
      if (stack.empty()) return r;
      for (size_t i = 0; i < call->outputs.size(); ++i)
        if (!call->outputs[i].is_dropvar()) stack.back().env[call->outputs[i]] = r[i];
      continue;
    }
    const Eqn& e = f.j->eqns[f.next++];
    std::vector<Array> ins;
    ins.reserve(e.inputs.size());
    for (auto& a : e.inputs) ins.push_back(read(a));
    if (const Jaxpr* body = eager_call_body(e, ins, loc)) {
      const ClosedJaxpr& cj = *param_jaxpr(e.params, e.primitive == &pjit_p() ? "jaxpr" : "call_jaxpr");
      Frame inner{body, {}, 0, &e};
      for (size_t i = 0; i < cj.consts.size(); ++i) inner.env[body->constvars[i]] = cj.consts[i];
      for (size_t i = 0; i < ins.size(); ++i) inner.env[body->invars[i]] = ins[i];
      stack.push_back(std::move(inner));  // f is stale from here
      continue;
    }
    auto outs = minijax::bind(*e.primitive, ins, e.params, loc);
    for (size_t i = 0; i < e.outputs.size(); ++i)
      if (!e.outputs[i].is_dropvar()) f.env[e.outputs[i]] = outs[i];
  }
}

std::vector<Array> eval_jaxpr(const ClosedJaxpr& j, const std::vector<Array>& args,
                              std::source_location loc) {
  return eval_jaxpr(*j.jaxpr, j.consts, args, loc);
}

}  // namespace minijax

namespace minijax {

std::vector<Array> eval_jaxpr_at(const Jaxpr& j, const std::vector<Array>& consts,
                                 const std::vector<Array>& args, const std::shared_ptr<Trace>& floor,
                                 std::source_location loc) {
  if (consts.size() != j.constvars.size() || args.size() != j.invars.size())
    throw ShapeError("eval_jaxpr_at: expected " + std::to_string(j.constvars.size()) +
                         " consts and " + std::to_string(j.invars.size()) + " args",
                     loc);
  std::unordered_map<Var, Array, VarHash> env;
  for (size_t i = 0; i < consts.size(); ++i) env[j.constvars[i]] = consts[i];
  for (size_t i = 0; i < args.size(); ++i) env[j.invars[i]] = args[i];
  auto read = [&](const Atom& a) -> Array {
    if (auto* v = std::get_if<Var>(&a)) return env.at(*v);
    return std::get<Literal>(a).value;
  };
  for (auto& e : j.eqns) {
    std::vector<Array> ins;
    for (auto& a : e.inputs) ins.push_back(read(a));
    auto top = find_top_trace(ins, loc);
    if (floor && floor->alive() && top->level() < floor->level()) top = floor;
    std::vector<Array> raised;
    for (auto& x : ins) raised.push_back(full_raise(*top, x, loc));
    auto outs = top->process_primitive(*e.primitive, raised, e.params, loc);
    for (size_t i = 0; i < e.outputs.size(); ++i)
      if (!e.outputs[i].is_dropvar()) env[e.outputs[i]] = outs[i];
  }
  std::vector<Array> r;
  for (auto& a : j.outvars) r.push_back(read(a));
  return r;
}

}  // namespace minijax
