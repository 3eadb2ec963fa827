// minijax bodies: subjaxprs, the operand/result layout of calls, loops and cond, and the generic
// map over an equation's nested jaxprs.
#include "core/bodies.h"
#include "core/param_reads.h"

#include <algorithm>
#include <memory>

#include "core/views/control_flow.h"

namespace minijax {

std::vector<SubJaxpr> subjaxprs(const Eqn& e) {
  std::vector<SubJaxpr> out;
  auto add = [&](const std::string& key, const Param& v) {
    if (auto* j = std::get_if<ClosedJaxprPtr>(&v)) {
      if (*j) out.push_back({key, 0, false, *j});
    } else if (auto* js = std::get_if<std::vector<ClosedJaxprPtr>>(&v)) {
      for (size_t i = 0; i < js->size(); ++i)
        if ((*js)[i]) out.push_back({key, i, true, (*js)[i]});
    }
  };
  const std::vector<std::string> none;
  const std::vector<std::string>& declared = e.primitive ? e.primitive->body_params : none;
  for (auto& k : declared)
    if (e.params.has(k)) add(k, param_at(e.params, k));
  for (auto& [k, v] : e.params.items())
    if (std::find(declared.begin(), declared.end(), k) == declared.end()) add(k, v);
  return out;
}

namespace {
std::vector<size_t> iota(size_t from, size_t n) {
  std::vector<size_t> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = from + i;
  return r;
}
}  // namespace

BodyLayout body_layout(const Eqn& e) {
  BodyLayout l;
  l.form = e.primitive ? e.primitive->body_form : BodyForm::none;
  l.num_operands = e.inputs.size();
  l.num_results = e.outputs.size();
  switch (l.form) {
    case BodyForm::none:
    case BodyForm::call: break;
    case BodyForm::scan: {
      ScanParams s = ScanParams::from(e.params);
      l.num_consts = size_t(s.num_consts);
      l.num_carry = size_t(s.num_carry);
      l.num_xs = l.num_operands - std::min(l.num_operands, l.num_consts + l.num_carry);
      break;
    }
    case BodyForm::while_loop: {
      WhileParams w = WhileParams::from(e.params);
      l.num_cond_consts = size_t(w.cond_nconsts);
      l.num_body_consts = size_t(w.body_nconsts);
      l.num_consts = l.num_cond_consts + l.num_body_consts;
      l.num_carry = l.num_operands - std::min(l.num_operands, l.num_consts);
      break;
    }
    case BodyForm::cond: l.num_index = 1; break;
  }
  return l;
}

std::vector<size_t> BodyLayout::body_inputs(size_t b) const {
  switch (form) {
    case BodyForm::while_loop: {
      std::vector<size_t> r = b == 0 ? iota(0, num_cond_consts) : iota(num_cond_consts, num_body_consts);
      for (size_t c = 0; c < num_carry; ++c) r.push_back(carry_begin() + c);
      return r;
    }
    case BodyForm::cond: return iota(num_index, num_operands - std::min(num_operands, num_index));
    default: return iota(0, num_operands);
  }
}

std::vector<size_t> BodyLayout::body_results(size_t b) const {
  if (form == BodyForm::while_loop && b == 0) return {kNoSlot};
  return iota(0, num_results);
}

std::vector<size_t> BodyLayout::loop_back(size_t b) const {
  if (form == BodyForm::scan) {
    std::vector<size_t> r(num_results, kNoSlot);
    for (size_t c = 0; c < num_carry && c < r.size(); ++c) r[c] = num_consts + c;
    return r;
  }
  if (form == BodyForm::while_loop && b == 1) return iota(num_body_consts, num_carry);
  return {};
}

Params map_bodies(const Params& ps, const std::function<Jaxpr(const Jaxpr&)>& f) {
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

bool has_bodies(const Params& ps) {
  for (auto& [k, v] : ps.items())
    if (std::holds_alternative<ClosedJaxprPtr>(v) || std::holds_alternative<std::vector<ClosedJaxprPtr>>(v))
      return true;
  return false;
}

}  // namespace minijax
