// minijax compiler passes: the one helper that rebuilds an equation's nested jaxprs.
// Owns map_bodies (used by inline_calls, simplify and fuse to recurse into scan/while/cond...).
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "core/jaxpr.h"

namespace minijax {

/// The params of `ps` with every nested jaxpr (a ClosedJaxprPtr param, or each element of a
/// std::vector<ClosedJaxprPtr> param such as cond's branches) replaced by f(jaxpr), its consts
/// kept. `f` must keep each jaxpr's invar and outvar avals (the equation stays well typed).
inline Params map_bodies(const Params& ps, const std::function<Jaxpr(const Jaxpr&)>& f) {
  auto one = [&](const ClosedJaxprPtr& cj) -> ClosedJaxprPtr {
    if (!cj || !cj->jaxpr) return cj;
    auto n = std::make_shared<ClosedJaxpr>();
    n->jaxpr = std::make_shared<Jaxpr>(f(*cj->jaxpr));
    n->consts = cj->consts;
    return n;
  };
  Params out = ps;
  for (auto& [k, v] : ps.items()) {
    if (auto* cj = std::get_if<ClosedJaxprPtr>(&v)) {
      out.set(k, one(*cj));
    } else if (auto* cjs = std::get_if<std::vector<ClosedJaxprPtr>>(&v)) {
      std::vector<ClosedJaxprPtr> n;
      for (auto& c : *cjs) n.push_back(one(c));
      out.set(k, std::move(n));
    }
  }
  return out;
}

/// Whether any param of `ps` holds a nested jaxpr.
inline bool has_bodies(const Params& ps) {
  for (auto& [k, v] : ps.items())
    if (std::holds_alternative<ClosedJaxprPtr>(v) || std::holds_alternative<std::vector<ClosedJaxprPtr>>(v))
      return true;
  return false;
}

}  // namespace minijax
