// minijax compiler pass inline_calls (declared in jit/inline_calls.h).
// Owns the table of call primitives and identities, and the substitution of bodies.
#include "jit/inline_calls.h"

#include <map>
#include <string>
#include <unordered_map>

#include "core/primitive.h"
#include "jit/map_bodies.h"

namespace minijax {
namespace {

/// Call primitives and the param holding the body they evaluate (the primal body for the
/// custom-derivative calls: their rules only matter to autodiff, which has run).
const std::map<std::string, std::string>& call_bodies() {
  static const std::map<std::string, std::string> t = {{"pjit", "jaxpr"},
                                                       {"closed_call", "call_jaxpr"},
                                                       {"checkpoint", "jaxpr"},
                                                       {"custom_jvp_call", "call_jaxpr"},
                                                       {"custom_vjp_call", "call_jaxpr"}};
  return t;
}

/// Primitives that are the identity on their single operand and only tag it.
bool is_identity_tag(const Primitive& p) { return p.name == "name"; }

using Env = std::unordered_map<Var, Atom, VarHash>;

/// Constants a body's inlined calls hoisted: the body's new leading inputs and their values.
struct Hoisted {
  std::vector<Var> vars;
  std::vector<Array> consts;
};

ClosedJaxprPtr with_invars_prepended(const ClosedJaxprPtr& cj, const std::vector<Var>& vars) {
  auto n = std::make_shared<ClosedJaxpr>(*cj);
  auto j = std::make_shared<Jaxpr>(*cj->jaxpr);
  j->invars.insert(j->invars.begin(), vars.begin(), vars.end());
  n->jaxpr = std::move(j);
  return n;
}

std::vector<Var> fresh_like(const std::vector<Var>& vs) {
  std::vector<Var> out;
  for (const Var& v : vs) out.emplace_back(v.aval());
  return out;
}

/// How a loop or branch equation takes the constants its body `key` (element `index` of a
/// body list) hoisted: as new leading inputs of that body, fed by new operands `outer`.
using ThreadRule = void (*)(Eqn& e, const std::string& key, size_t index, const Hoisted& h,
                            const std::vector<Atom>& outer);

void thread_scan(Eqn& e, const std::string& key, size_t, const Hoisted& h, const std::vector<Atom>& outer) {
  e.params.set(key, with_invars_prepended(e.params.get_jaxpr(key), h.vars));
  e.inputs.insert(e.inputs.begin(), outer.begin(), outer.end());
  e.params.set("num_consts", e.params.get_int("num_consts") + int64_t(outer.size()));
  if (e.params.has("linear")) {
    std::vector<int64_t> lin = e.params.get_ints("linear");
    lin.insert(lin.begin(), outer.size(), 0);
    e.params.set("linear", std::move(lin));
  }
}

// while's operands: cond constants, body constants, carry.
void thread_while(Eqn& e, const std::string& key, size_t, const Hoisted& h, const std::vector<Atom>& outer) {
  e.params.set(key, with_invars_prepended(e.params.get_jaxpr(key), h.vars));
  const bool body = key == "body_jaxpr";
  const int64_t cn = e.params.get_int("cond_nconsts");
  e.inputs.insert(e.inputs.begin() + (body ? cn : 0), outer.begin(), outer.end());
  const char* count = body ? "body_nconsts" : "cond_nconsts";
  e.params.set(count, e.params.get_int(count) + int64_t(outer.size()));
}

// cond's operands: the index, then every branch's inputs; each branch gets the new inputs (the
// others leave them unused).
void thread_cond(Eqn& e, const std::string& key, size_t index, const Hoisted& h, const std::vector<Atom>& outer) {
  std::vector<ClosedJaxprPtr> bs = e.params.get_jaxprs(key);
  for (size_t b = 0; b < bs.size(); ++b) bs[b] = with_invars_prepended(bs[b], b == index ? h.vars : fresh_like(h.vars));
  e.params.set(key, std::move(bs));
  e.inputs.insert(e.inputs.begin() + 1, outer.begin(), outer.end());
}

const std::map<std::string, ThreadRule>& thread_rules() {
  static const std::map<std::string, ThreadRule> t = {
      {"scan", thread_scan}, {"while", thread_while}, {"cond", thread_cond}};
  return t;
}

Atom subst(const Env& env, const Atom& a) {
  if (auto* v = std::get_if<Var>(&a)) {
    auto it = env.find(*v);
    if (it != env.end()) return it->second;
  }
  return a;
}

struct Inliner {
  // Where array constants of inlined call bodies go (the top level of a ClosedJaxpr), or null.
  std::vector<Var>* constvars = nullptr;
  std::vector<Array>* consts = nullptr;

  /// Binds the body's constvars to atoms: rank-0 concrete values as literals, others hoisted
  /// into the sink. False if some constant can be neither.
  bool bind_consts(const ClosedJaxpr& cj, Env& inner) {
    const Jaxpr& b = *cj.jaxpr;
    if (cj.consts.size() != b.constvars.size()) return false;
    std::vector<std::pair<Var, Atom>> bound;
    for (size_t k = 0; k < b.constvars.size(); ++k) {
      const Array& c = cj.consts[k];
      if (c.is_concrete() && c.ndim() == 0) {
        bound.emplace_back(b.constvars[k], Literal{c});
      } else if (constvars && c.is_concrete()) {
        bound.emplace_back(b.constvars[k], Atom{});  // hoisted below, once all are known to fit
      } else {
        return false;
      }
    }
    for (size_t k = 0; k < bound.size(); ++k) {
      if (std::holds_alternative<Var>(bound[k].second) && !std::get<Var>(bound[k].second).defined()) {
        Var v(cj.consts[k].aval());
        constvars->push_back(v);
        consts->push_back(cj.consts[k]);
        bound[k].second = v;
      }
      inner[bound[k].first] = bound[k].second;
    }
    return true;
  }

  /// Appends the equations of `b` (with `env` binding its inputs) to `out`; `fresh` gives every
  /// output a new variable (an inlined body may be inlined more than once). Returns the outvars.
  /// Nested calls are inlined from an explicit stack of bodies, not by recursion, so a
  /// 10,000-deep nest of calls is flattened in constant stack.
  std::vector<Atom> emit(const Jaxpr& b, Env env, bool fresh, std::vector<Eqn>& out) {
    struct Frame {
      const Jaxpr* body;
      Env env;
      bool fresh;
      size_t next = 0;            // the next equation of body to emit
      const Eqn* call = nullptr;  // the call equation (of the frame below) being inlined
    };
    std::vector<Frame> stack;
    stack.push_back(Frame{&b, std::move(env), fresh, 0, nullptr});
    while (true) {
      Frame& f = stack.back();
      if (f.next == f.body->eqns.size()) {
        std::vector<Atom> res;
        for (auto& a : f.body->outvars) res.push_back(subst(f.env, a));
        const Eqn* call = f.call;
        stack.pop_back();
        if (stack.empty()) return res;
        Env& outer = stack.back().env;
        for (size_t i = 0; i < call->outputs.size() && i < res.size(); ++i)
          if (!call->outputs[i].is_dropvar()) outer[call->outputs[i]] = res[i];
        continue;
      }
      const Eqn& e = f.body->eqns[f.next++];
      std::vector<Atom> ins;
      for (auto& a : e.inputs) ins.push_back(subst(f.env, a));
      auto cb = call_bodies().find(e.primitive->name);
      if (cb != call_bodies().end() && e.params.has(cb->second)) {
        const ClosedJaxprPtr& cj = e.params.get_jaxpr(cb->second);
        Env inner;
        if (cj && cj->jaxpr && cj->jaxpr->invars.size() == ins.size() && bind_consts(*cj, inner)) {
          for (size_t i = 0; i < ins.size(); ++i) inner[cj->jaxpr->invars[i]] = ins[i];
          stack.push_back(Frame{cj->jaxpr.get(), std::move(inner), true, 0, &e});  // f is stale now
          continue;
        }
      }
      if (is_identity_tag(*e.primitive) && ins.size() == 1 && e.outputs.size() == 1) {
        if (!e.outputs[0].is_dropvar()) f.env[e.outputs[0]] = ins[0];
        continue;
      }
      Eqn n = e;
      n.inputs = std::move(ins);
      if (has_bodies(e.params)) {
        if (constvars && thread_rules().count(e.primitive->name)) inline_bodies_threading(n);
        else n.params = map_bodies(e.params, [](const Jaxpr& body) { return Inliner{}.run(body); });
      }
      if (f.fresh) {
        for (auto& o : n.outputs) {
          Var nv = o.is_dropvar() ? Var::dropvar(o.aval()) : Var(o.aval());
          if (!o.is_dropvar()) f.env[o] = nv;
          o = nv;
        }
      }
      out.push_back(std::move(n));
    }
  }

  /// Inlines the bodies of loop or branch equation `n` with their own sinks: the array
  /// constants a body's calls hoist become its leading inputs (thread_rules), fed by operands
  /// that are hoisted into this level's sink in turn, up to the top level.
  void inline_bodies_threading(Eqn& n) {
    const ThreadRule rule = thread_rules().at(n.primitive->name);
    struct Pending {
      std::string key;
      size_t index;
      Hoisted h;
    };
    std::vector<Pending> pending;
    auto one = [&](const std::string& key, size_t index, const ClosedJaxprPtr& cj) -> ClosedJaxprPtr {
      if (!cj || !cj->jaxpr) return cj;
      Hoisted h;
      Inliner inner{&h.vars, &h.consts};
      auto r = std::make_shared<ClosedJaxpr>(*cj);
      r->jaxpr = std::make_shared<Jaxpr>(inner.run(*cj->jaxpr));
      if (!h.vars.empty()) pending.push_back({key, index, std::move(h)});
      return r;
    };
    const Params before = n.params;  // n.params changes below (a range-for over a temporary would dangle)
    for (auto& [k, v] : before.items()) {
      if (auto* cj = std::get_if<ClosedJaxprPtr>(&v)) {
        n.params.set(k, one(k, 0, *cj));
      } else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&v)) {
        std::vector<ClosedJaxprPtr> bs;
        for (size_t b = 0; b < cjs->size(); ++b) bs.push_back(one(k, b, (*cjs)[b]));
        n.params.set(k, std::move(bs));
      }
    }
    for (const Pending& p : pending) {
      std::vector<Atom> outer;
      for (size_t k = 0; k < p.h.vars.size(); ++k) {
        Var v(p.h.consts[k].aval());
        constvars->push_back(v);
        consts->push_back(p.h.consts[k]);
        outer.push_back(v);
      }
      rule(n, p.key, p.index, p.h, outer);
    }
  }

  Jaxpr run(const Jaxpr& j) {
    Jaxpr r;
    r.constvars = j.constvars;
    r.invars = j.invars;
    r.effects = j.effects;
    r.outvars = emit(j, Env{}, false, r.eqns);
    return r;
  }
};

}  // namespace

Jaxpr inline_calls(const Jaxpr& j) { return Inliner{}.run(j); }

ClosedJaxpr inline_calls(const ClosedJaxpr& j) {
  std::vector<Var> extra_vars;
  std::vector<Array> extra_consts;
  Inliner in{&extra_vars, &extra_consts};
  auto r = std::make_shared<Jaxpr>(in.run(*j.jaxpr));
  r->constvars.insert(r->constvars.end(), extra_vars.begin(), extra_vars.end());
  ClosedJaxpr out;
  out.consts = j.consts;
  out.consts.insert(out.consts.end(), extra_consts.begin(), extra_consts.end());
  out.jaxpr = r;
  return out;
}

}  // namespace minijax
