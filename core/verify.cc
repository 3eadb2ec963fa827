// minijax jaxpr verifier.
// Owns binding checks and the re-derivation of every equation's output avals by its shape rule.
#include "core/verify.h"

#include <unordered_set>

#include "core/primitive.h"

namespace minijax {

namespace {

std::string where(const Jaxpr& j, size_t i) {
  return "equation " + std::to_string(i) + " `" + eqn_to_string(j, i) + "`";
}

// Checks j's own bindings and equations; its nested jaxprs are checked by check_all.
void check_one(const Jaxpr& j, std::source_location loc) {
  std::unordered_set<Var, VarHash> bound;
  // `what` builds the description only when there is an error (printing is costly).
  auto bind_var = [&](const Var& v, const auto& what) {
    if (!v.defined()) throw TypeError("verify_jaxpr: " + what() + " is an undefined variable", loc);
    if (v.is_dropvar()) return;
    if (!bound.insert(v).second)
      throw TypeError("verify_jaxpr: variable bound twice, as " + what() + "\nin jaxpr:\n" +
                          to_string(j),
                      loc);
  };
  for (size_t i = 0; i < j.constvars.size(); ++i)
    bind_var(j.constvars[i], [&] { return "constvar " + std::to_string(i); });
  for (size_t i = 0; i < j.invars.size(); ++i)
    bind_var(j.invars[i], [&] { return "invar " + std::to_string(i); });

  for (size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    if (!e.primitive) throw TypeError("verify_jaxpr: equation " + std::to_string(i) + " has no primitive", loc);
    std::vector<ShapedArray> in;
    for (size_t k = 0; k < e.inputs.size(); ++k) {
      if (auto* v = std::get_if<Var>(&e.inputs[k])) {
        if (!v->defined() || v->is_dropvar() || !bound.count(*v))
          throw TypeError("verify_jaxpr: operand " + std::to_string(k) +
                              " is not bound before its use in " + where(j, i),
                          loc);
      }
      in.push_back(atom_aval(e.inputs[k]));
    }
    std::vector<ShapedArray> expect;
    try {
      expect = abstract_eval(*e.primitive, in, e.params, loc);
    } catch (const ShapeError& err) {
      throw ShapeError("verify_jaxpr: " + err.message() + "\nin " + where(j, i), loc);
    } catch (const TypeError& err) {
      throw TypeError("verify_jaxpr: " + err.message() + "\nin " + where(j, i), loc);
    } catch (const Error& err) {
      throw ShapeError("verify_jaxpr: " + err.message() + "\nin " + where(j, i), loc);
    }
    if (expect.size() != e.outputs.size())
      throw TypeError("verify_jaxpr: " + e.primitive->name + " produces " +
                          std::to_string(expect.size()) + " outputs but the equation binds " +
                          std::to_string(e.outputs.size()) + "\nin " + where(j, i),
                      loc);
    for (size_t k = 0; k < expect.size(); ++k) {
      const ShapedArray& got = e.outputs[k].aval();
      if (got.same_type(expect[k])) continue;
      std::string msg = "verify_jaxpr: output " + std::to_string(k) + " is annotated " + got.str() +
                        " but " + e.primitive->name + "'s shape rule gives " + expect[k].str() +
                        "\nin " + where(j, i);
      if (got.shape != expect[k].shape) throw ShapeError(msg, loc);
      throw TypeError(msg, loc);
    }
    for (size_t k = 0; k < e.outputs.size(); ++k)
      bind_var(e.outputs[k], [&] { return "output " + std::to_string(k) + " of " + where(j, i); });
  }
  for (size_t k = 0; k < j.outvars.size(); ++k)
    if (auto* v = std::get_if<Var>(&j.outvars[k]))
      if (!v->defined() || v->is_dropvar() || !bound.count(*v))
        throw TypeError("verify_jaxpr: outvar " + std::to_string(k) + " is not bound\nin jaxpr:\n" +
                            to_string(j),
                        loc);
}

// Checks j and every jaxpr nested in it, each once, from a worklist (a 10,000-deep nest costs
// no stack): nested jaxprs before the jaxprs they are nested in (as JAX's check_eqn checks an
// equation's jaxprs first), an error in a nested one wrapped with the param and equation that
// hold it, outermost last.
void check(const Jaxpr& top, std::source_location loc) {
  struct Node {
    const Jaxpr* j;
    long parent;      // index of the node holding it, -1 for top
    std::string key;  // the param that holds it
    size_t eqn;       // the equation of the parent that holds it
  };
  std::vector<Node> nodes{{&top, -1, {}, 0}};
  std::unordered_set<const Jaxpr*> seen{&top};
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Jaxpr& j = *nodes[n].j;
    for (size_t i = 0; i < j.eqns.size(); ++i)
      for (auto& [key, p] : j.eqns[i].params.items()) {
        auto add = [&](const ClosedJaxprPtr& c) {
          if (c && c->jaxpr && seen.insert(c->jaxpr.get()).second)
            nodes.push_back({c->jaxpr.get(), long(n), key, i});
        };
        if (auto* cj = std::get_if<ClosedJaxprPtr>(&p)) add(*cj);
        else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&p))
          for (auto& c : *cjs) add(c);
      }
  }
  // Breadth-first order puts every jaxpr after the one it is nested in: check in reverse.
  for (size_t n = nodes.size(); n-- > 0;) {
    try {
      check_one(*nodes[n].j, loc);
    } catch (const Error& err) {
      if (!dynamic_cast<const ShapeError*>(&err) && !dynamic_cast<const TypeError*>(&err)) throw;
      std::string msg = err.message();
      for (long k = long(n); nodes[size_t(k)].parent >= 0; k = nodes[size_t(k)].parent) {
        const Node& c = nodes[size_t(k)];
        msg += "\nin the '" + c.key + "' param of " + where(*nodes[size_t(c.parent)].j, c.eqn);
      }
      if (dynamic_cast<const ShapeError*>(&err)) throw ShapeError(msg, loc);
      throw TypeError(msg, loc);
    }
  }
}

}  // namespace

void verify_jaxpr(const Jaxpr& j, std::source_location loc) { check(j, loc); }

void verify_jaxpr(const ClosedJaxpr& j, std::source_location loc) {
  if (!j.jaxpr) throw TypeError("verify_jaxpr: empty ClosedJaxpr", loc);
  if (j.consts.size() != j.jaxpr->constvars.size())
    throw TypeError("verify_jaxpr: " + std::to_string(j.consts.size()) + " consts for " +
                        std::to_string(j.jaxpr->constvars.size()) + " constvars",
                    loc);
  for (size_t i = 0; i < j.consts.size(); ++i)
    if (!j.consts[i].aval().same_type(j.jaxpr->constvars[i].aval()))
      throw TypeError("verify_jaxpr: const " + std::to_string(i) + " is " +
                          j.consts[i].aval().str() + " but its constvar is " +
                          j.jaxpr->constvars[i].aval().str(),
                      loc);
  check(*j.jaxpr, loc);
}

}  // namespace minijax
