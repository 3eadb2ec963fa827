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

void check(const Jaxpr& j, std::source_location loc) {
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
    // Nested jaxprs are checked first (as JAX's check_eqn).
    for (auto& [key, p] : e.params.items()) {
      try {
        if (auto* cj = std::get_if<ClosedJaxprPtr>(&p)) {
          if (*cj && (*cj)->jaxpr) check(*(*cj)->jaxpr, loc);
        } else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&p)) {
          for (auto& c : *cjs)
            if (c && c->jaxpr) check(*c->jaxpr, loc);
        }
      } catch (const ShapeError& err) {
        throw ShapeError(err.message() + "\nin the '" + key + "' param of " + where(j, i), loc);
      } catch (const TypeError& err) {
        throw TypeError(err.message() + "\nin the '" + key + "' param of " + where(j, i), loc);
      }
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
