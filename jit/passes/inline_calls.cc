// minijax compiler pass inline_calls (declared in jit/passes/inline_calls.h).
// Owns the substitution of call bodies (plain calls, by their body fact) and of identity tags.
#include "jit/passes/inline_calls.h"

#include <string>
#include <unordered_map>

#include "core/bodies.h"
#include "core/primitive.h"
#include "core/views/control_flow.h"

namespace minijax {
namespace {

/// Whether `e` is a call inline_calls removes: a plain call (its body fact; the primal body for
/// the custom-derivative calls, whose rules only matter to autodiff, which has run), except a
/// fusion, which is the compiler's own kernel.
bool is_inlined_call(const Eqn& e) { return CallParams::is(e) && !is_fusion(*e.primitive); }

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

/// How a loop or branch equation takes the constants its body number `body` (subjaxprs order)
/// hoisted: as new leading inputs of that body, fed by new operands `outer` (placed by the
/// equation's body layout).
void thread_hoisted(Eqn& e, size_t body, const Hoisted& h, const std::vector<Atom>& outer) {
  const auto n = int64_t(outer.size());
  switch (e.primitive->body_form) {
    case BodyForm::scan: {
      ScanParams s = scan_params(e);
      s.jaxpr = with_invars_prepended(s.jaxpr, h.vars);
      e.inputs.insert(e.inputs.begin(), outer.begin(), outer.end());
      s.num_consts += n;
      if (s.linear) s.linear->insert(s.linear->begin(), outer.size(), 0);
      e.params = s.to_params();
      return;
    }
    case BodyForm::while_loop: {  // cond constants, body constants, carry
      WhileParams w = while_params(e);
      const bool is_body = body == 1;
      ClosedJaxprPtr& j = is_body ? w.body_jaxpr : w.cond_jaxpr;
      j = with_invars_prepended(j, h.vars);
      e.inputs.insert(e.inputs.begin() + (is_body ? w.cond_nconsts : 0), outer.begin(), outer.end());
      (is_body ? w.body_nconsts : w.cond_nconsts) += n;
      e.params = w.to_params();
      return;
    }
    case BodyForm::cond: {  // the index, then every branch's inputs; the others leave them unused
      CondParams c = cond_params(e);
      for (size_t b = 0; b < c.branches.size(); ++b)
        c.branches[b] = with_invars_prepended(c.branches[b], b == body ? h.vars : fresh_like(h.vars));
      e.inputs.insert(e.inputs.begin() + std::ptrdiff_t(body_layout(e).num_index), outer.begin(), outer.end());
      e.params = c.to_params();
      return;
    }
    default: throw ValueError("inline_calls: cannot thread constants into " + e.primitive->name);
  }
}

/// Whether inline_calls threads hoisted constants into `e`'s bodies (loops and cond).
bool threads_constants(const Eqn& e) {
  const BodyForm f = e.primitive->body_form;
  return f == BodyForm::scan || f == BodyForm::while_loop || f == BodyForm::cond;
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
      if (is_inlined_call(e)) {
        const ClosedJaxprPtr cj = call_params(e).jaxpr;
        Env inner;
        if (cj && cj->jaxpr && cj->jaxpr->invars.size() == ins.size() && bind_consts(*cj, inner)) {
          for (size_t i = 0; i < ins.size(); ++i) inner[cj->jaxpr->invars[i]] = ins[i];
          stack.push_back(Frame{cj->jaxpr.get(), std::move(inner), true, 0, &e});  // f is stale now
          continue;
        }
      }
      if (CheckpointNameParams::is(e) && ins.size() == 1 && e.outputs.size() == 1) {
        if (!e.outputs[0].is_dropvar()) f.env[e.outputs[0]] = ins[0];
        continue;
      }
      Eqn n = e;
      n.inputs = std::move(ins);
      if (has_bodies(e.params)) {
        if (constvars && threads_constants(e)) inline_bodies_threading(n);
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
  /// constants a body's calls hoist become its leading inputs (thread_hoisted), fed by operands
  /// that are hoisted into this level's sink in turn, up to the top level.
  void inline_bodies_threading(Eqn& n) {
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
    const std::vector<SubJaxpr> subs = subjaxprs(Eqn{n.primitive, {}, {}, before, {}});
    for (const Pending& p : pending) {
      size_t body = 0;
      while (body < subs.size() && !(subs[body].param == p.key && subs[body].index == p.index)) ++body;
      std::vector<Atom> outer;
      for (size_t k = 0; k < p.h.vars.size(); ++k) {
        Var v(p.h.consts[k].aval());
        constvars->push_back(v);
        consts->push_back(p.h.consts[k]);
        outer.push_back(v);
      }
      thread_hoisted(n, body, p.h, outer);
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
