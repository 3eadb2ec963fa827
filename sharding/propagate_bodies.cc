// minijax sharding propagation through bodies: the data-flow edges of call, loop and conditional
// equations, the reshards their boundaries need, and the choice for scan's unsharded length dim.
#include "sharding/propagate_bodies.h"

#include <algorithm>
#include <functional>
#include <tuple>

#include "core/bodies.h"
#include "core/errors.h"
#include "core/primitive.h"
#include "core/views/control_flow.h"
#include "sharding/sharding_rule.h"

namespace minijax::prop_detail {
namespace {

// An identity rule over a value of `rank` dims of sizes `shape`, or (stacked) one whose operand
// (stacked_operand) or result carries an extra leading length dim needing replication.
FactorRule edge_rule(const Shape& inner, bool stacked, bool stacked_operand, int64_t length) {
  FactorRule r;
  std::vector<std::vector<int>> dims;
  for (int64_t s : inner) {
    r.factor_sizes.push_back(s);
    dims.push_back({int(r.factor_sizes.size() - 1)});
  }
  std::vector<std::vector<int>> outer = dims;
  if (stacked) {
    r.factor_sizes.push_back(length);
    int f = int(r.factor_sizes.size() - 1);
    r.need_replication_factors.push_back(f);
    outer.insert(outer.begin(), std::vector<int>{f});
  }
  r.operand_dims.push_back(stacked && stacked_operand ? outer : dims);
  r.result_dims.push_back(stacked && !stacked_operand ? outer : dims);
  return r;
}

BodyEdge make_edge(const Eqn& e, BodyEdge::Kind kind, const Jaxpr* body, const Atom& src,
                   const Var& dst, const Shape& inner, bool stacked, int64_t length) {
  BodyEdge b;
  b.kind = kind;
  b.body = body;
  b.stacked = stacked;
  b.view.primitive = e.primitive;
  b.view.inputs = {src};
  b.view.outputs = {dst};
  b.rule = edge_rule(inner, stacked, kind == BodyEdge::enter, length);
  return b;
}

}  // namespace

bool has_body(const Eqn& e) { return propagation_enters_bodies(e.primitive->name); }

std::vector<const ClosedJaxpr*> bodies_of(const Eqn& e) {
  std::vector<const ClosedJaxpr*> out;
  if (!has_body(e)) return out;
  for (const SubJaxpr& s : subjaxprs(e)) out.push_back(s.jaxpr.get());
  return out;
}

namespace {

// The edges of a call or cond: each operand enters its input of every body (the first body's
// is primary), and each body output leaves to its result.
void call_edges(const Eqn& e, const BodyLayout& l, const std::vector<const ClosedJaxpr*>& bodies,
                const std::function<void(BodyEdge, size_t, size_t, size_t, size_t, bool, bool)>& add) {
  auto shape = [](const Var& v) { return v.aval().shape; };
  for (size_t b = 0; b < bodies.size(); ++b) {
    const Jaxpr& j = *bodies[b]->jaxpr;
    const std::vector<size_t> ops = l.body_inputs(b);  // cond: the index operand is no body input
    for (size_t k = 0; k < j.invars.size() && k < ops.size(); ++k)
      add(make_edge(e, BodyEdge::enter, &j, e.inputs[ops[k]], j.invars[k], shape(j.invars[k]), false, 0),
          ops[k], k, 0, 0, b == 0, false);
  }
  for (size_t b = 0; b < bodies.size(); ++b) {
    const Jaxpr& j = *bodies[b]->jaxpr;
    for (size_t r = 0; r < j.outvars.size() && r < e.outputs.size(); ++r)
      add(make_edge(e, BodyEdge::leave, &j, j.outvars[r], e.outputs[r], e.outputs[r].aval().shape, false, 0),
          0, r, 0, r, true, false);
  }
}

// scan: consts | carry | xs enter the body (xs stacked), the carry loops back and leaves, ys
// leave stacked.
void scan_edges(const Eqn& e, const BodyLayout& l,
                const std::function<void(BodyEdge, size_t, size_t, size_t, size_t, bool, bool)>& add) {
  auto shape = [](const Var& v) { return v.aval().shape; };
  const ScanParams sp = scan_params(e);
  const Jaxpr& j = *sp.jaxpr->jaxpr;
  const size_t nc = l.num_consts, ncar = l.num_carry;
  const int64_t length = sp.length;
  for (size_t k = 0; k < e.inputs.size() && k < j.invars.size(); ++k) {
    bool xs = k >= l.xs_begin();
    add(make_edge(e, BodyEdge::enter, &j, e.inputs[k], j.invars[k], shape(j.invars[k]), xs, length), k, k, 0, 0,
        true, true);
  }
  for (size_t c = 0; c < ncar; ++c)
    add(make_edge(e, BodyEdge::loop_back, &j, j.outvars[c], j.invars[nc + c], shape(j.invars[nc + c]), false, 0),
        0, c, nc + c, 0, true, true);
  for (size_t c = 0; c < ncar; ++c)
    add(make_edge(e, BodyEdge::leave, &j, j.invars[nc + c], e.outputs[c], shape(j.invars[nc + c]), false, 0), 0,
        c, nc + c, c, true, true);
  for (size_t r = ncar; r < j.outvars.size() && r < e.outputs.size(); ++r)
    add(make_edge(e, BodyEdge::leave, &j, j.outvars[r], e.outputs[r], atom_aval(j.outvars[r]).shape, true, length),
        0, r, 0, r, true, true);
}

// while: cond_consts | body_consts | carry; the carry enters the body (primary) and the cond,
// loops back through the body and leaves.
void while_edges(const Eqn& e, const BodyLayout& l,
                 const std::function<void(BodyEdge, size_t, size_t, size_t, size_t, bool, bool)>& add) {
  auto shape = [](const Var& v) { return v.aval().shape; };
  const WhileParams wp = while_params(e);
  const Jaxpr& cj = *wp.cond_jaxpr->jaxpr;
  const Jaxpr& bj = *wp.body_jaxpr->jaxpr;
  const size_t cn = l.num_cond_consts, bn = l.num_body_consts, ncar = l.num_carry;
  for (size_t k = 0; k < cn; ++k)
    add(make_edge(e, BodyEdge::enter, &cj, e.inputs[k], cj.invars[k], shape(cj.invars[k]), false, 0), k, k, 0, 0,
        true, true);
  for (size_t k = 0; k < bn; ++k)
    add(make_edge(e, BodyEdge::enter, &bj, e.inputs[cn + k], bj.invars[k], shape(bj.invars[k]), false, 0), cn + k,
        k, 0, 0, true, true);
  for (size_t c = 0; c < ncar; ++c) {
    const Atom& init = e.inputs[l.carry_begin() + c];
    add(make_edge(e, BodyEdge::enter, &bj, init, bj.invars[bn + c], shape(bj.invars[bn + c]), false, 0),
        l.carry_begin() + c, bn + c, 0, 0, true, true);
    add(make_edge(e, BodyEdge::enter, &cj, init, cj.invars[cn + c], shape(cj.invars[cn + c]), false, 0),
        l.carry_begin() + c, cn + c, 0, 0, false, true);
  }
  for (size_t c = 0; c < ncar; ++c)
    add(make_edge(e, BodyEdge::loop_back, &bj, bj.outvars[c], bj.invars[bn + c], shape(bj.invars[bn + c]), false, 0),
        0, c, bn + c, 0, true, true);
  for (size_t c = 0; c < ncar; ++c)
    add(make_edge(e, BodyEdge::leave, &bj, bj.invars[bn + c], e.outputs[c], shape(bj.invars[bn + c]), false, 0), 0,
        c, bn + c, c, true, true);
}

}  // namespace

std::vector<BodyEdge> body_edges(const Eqn& e) {
  std::vector<BodyEdge> out;
  if (!has_body(e)) return out;
  auto add = [&](BodyEdge b, size_t operand, size_t body_index, size_t carry_index, size_t result, bool primary,
                 bool loop) {
    b.operand = operand;
    b.body_index = body_index;
    b.carry_index = carry_index;
    b.result = result;
    b.primary = primary;
    b.loop = loop;
    out.push_back(std::move(b));
  };
  const BodyLayout l = body_layout(e);
  switch (l.form) {
    case BodyForm::call:
    case BodyForm::cond: call_edges(e, l, bodies_of(e), add); break;
    case BodyForm::scan: scan_edges(e, l, add); break;
    case BodyForm::while_loop: while_edges(e, l, add); break;
    case BodyForm::none: break;
  }
  return out;
}

void place_edges(const State& st, const Eqn& e, size_t i, const std::vector<BodyEdge>& edges,
                 std::vector<ReshardPlacement>& before, std::vector<ReshardPlacement>& after,
                 std::unordered_map<const Jaxpr*, BodyBoundary>& bodies, std::source_location loc) {
  const Mesh& m = *st.mesh;
  // The sharding the destination of edge `b` implies for its source (stacked: length dim open
  // -> closed and empty), and the reverse.
  auto implied = [&](const BodyEdge& b, bool for_source) {
    auto ts = tensors_of(b.view, b.rule);
    const Tensor* from = nullptr;
    const Tensor* to = nullptr;
    for (auto& t : ts) (t.is_result == for_source ? from : to) = &t;
    std::vector<Tensor> one{*from};
    Assign s = merged_assignment(st, one, b.rule);
    return needed(closed_copy(st.sh.at(to->var)), *to, b.rule, s, m);
  };
  auto record = [&](ReshardPlacement p, const ShapedArray& aval, const std::string& what) {
    auto cost = reshard_cost(p.from, p.to, aval);
    if (!cost)
      throw ShardingError("propagate_shardings: " + what + " of '" + e.primitive->name + "' (equation " +
                              std::to_string(i) + ") needs " + p.to.str() + " with partial sums its value " +
                              p.from.str() + " does not hold",
                          loc);
    p.max_received = cost->first;
    p.total_received = cost->second;
    return p;
  };
  for (auto& b : edges) {
    Var src = atom_var(b.view.inputs[0]);
    const Var& dst = b.view.outputs[0];
    if (!src.defined()) continue;  // a literal is built in any sharding
    const Sharding& have_src = st.sh.at(src);
    const Sharding& have_dst = st.sh.at(dst);
    ReshardPlacement p;
    p.eqn = i;
    if (b.kind == BodyEdge::enter) {
      if (b.primary) {
        Sharding to = implied(b, /*for_source=*/true);
        if (same_layout(have_src, to)) continue;
        p.index = b.operand;
        p.var = src;
        p.from = closed_copy(have_src);
        p.to = to;
        before.push_back(record(p, src.aval(), "operand " + std::to_string(b.operand)));
      } else {
        // A secondary body input: the operand arrives as the primary body input holds it.
        const BodyEdge* prim = nullptr;
        for (auto& o : edges)
          if (o.kind == BodyEdge::enter && o.primary && o.operand == b.operand) prim = &o;
        const Sharding& arrives = prim ? st.sh.at(prim->view.outputs[0]) : have_src;
        if (same_layout(arrives, have_dst)) continue;
        p.index = b.body_index;
        p.on_input = true;
        p.var = dst;
        p.from = closed_copy(arrives);
        p.to = closed_copy(have_dst);
        bodies[b.body].at_input.push_back(record(p, dst.aval(), "body input " + std::to_string(b.body_index)));
      }
    } else if (b.kind == BodyEdge::loop_back) {
      if (same_layout(have_src, have_dst)) continue;
      p.index = b.body_index;
      p.on_output = true;
      p.var = src;
      p.from = closed_copy(have_src);
      p.to = closed_copy(have_dst);
      bodies[b.body].at_output.push_back(record(p, src.aval(), "loop carry " + std::to_string(b.body_index)));
    } else {
      // What the equation computes for the destination: the source's sharding (stacked: with
      // the unsharded length dim), partial sums included.
      Sharding from = b.stacked ? implied(b, /*for_source=*/false) : closed_copy(have_src);
      from.unreduced = have_src.unreduced;
      if (same_layout(from, have_dst)) continue;
      if (b.loop) {  // once, after the loop
        p.index = b.result;
        p.on_result = true;
        p.var = dst;
        p.from = from;
        p.to = closed_copy(have_dst);
        after.push_back(record(p, dst.aval(), "result " + std::to_string(b.result)));
      } else {  // at the body's output (each branch of a cond)
        p.index = b.body_index;
        p.on_output = true;
        p.var = src;
        p.from = closed_copy(have_src);
        p.to = closed_copy(have_dst);
        bodies[b.body].at_output.push_back(record(p, src.aval(), "body output " + std::to_string(b.body_index)));
      }
    }
  }
}

bool choose_unstacked(State& st, const std::vector<const BodyEdge*>& stacked_enters) {
  const Mesh& m = *st.mesh;
  bool changed = false;
  for (const BodyEdge* b : stacked_enters) {
    Var xs = atom_var(b->view.inputs[0]);
    const Var& x = b->view.outputs[0];
    if (!xs.defined() || st.user[x]) continue;
    const Sharding& have = st.sh.at(xs);
    if (have.dims.empty() || have.dims[0].axes.empty()) continue;
    const Axes released = have.dims[0].axes;
    const Sharding from = closed_copy(have);
    const Sharding cur = st.sh.at(x);
    Axes used;
    for (auto& d : cur.dims) used.insert(used.end(), d.axes.begin(), d.axes.end());
    // Candidates: the body x as it is (released axes dropped), or grown by them on one dim.
    struct Cand {
      Sharding x;
      int64_t max, total;
      int noncanonical;
      int order;
    };
    std::vector<Cand> cands;
    auto cost_of = [&](const Sharding& xsh) -> std::optional<std::pair<int64_t, int64_t>> {
      Sharding to = from;
      to.dims[0].axes.clear();
      for (size_t d = 0; d < xsh.dims.size(); ++d) to.dims[d + 1].axes = xsh.dims[d].axes;
      return reshard_cost(from, to, xs.aval());
    };
    auto canonical = [&](const Axes& a) {
      for (size_t k = 1; k < a.size(); ++k)
        if (a[k].name == a[k - 1].name && a[k].is_sub_axis() && a[k - 1].is_sub_axis() &&
            a[k].pre_size < a[k - 1].pre_size)
          return false;
      return true;
    };
    if (auto c = cost_of(cur)) cands.push_back({cur, c->first, c->second, 0, 0});
    bool fits = true;
    for (auto& a : released) fits = fits && !overlaps_any(a, used, m);
    int64_t r = 1;
    for (auto& a : released) r *= a.resolved_size(m);
    for (size_t d = cur.dims.size(); fits && d-- > 0;) {
      if (cur.dims[d].closed) continue;
      int64_t shards = cur.dims[d].num_shards(m);
      if (x.aval().shape[d] % (shards * r) != 0) continue;
      Sharding g = cur;
      g.dims[d].axes.insert(g.dims[d].axes.end(), released.begin(), released.end());
      g.dims[d].axes = normalize(g.dims[d].axes, m);
      if (auto c = cost_of(g))
        cands.push_back({g, c->first, c->second, canonical(g.dims[d].axes) ? 0 : 1, int(cands.size())});
    }
    if (cands.empty()) continue;
    auto best = std::min_element(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
      return std::tie(a.max, a.total, a.noncanonical, a.order) < std::tie(b.max, b.total, b.noncanonical, b.order);
    });
    Sharding& target = st.sh.at(x);
    if (!same_layout(target, best->x)) {
      changed = grow(target, best->x, m) || changed;
    }
  }
  return changed;
}

}  // namespace minijax::prop_detail

namespace minijax {
// Every primitive with bodies (its body fact), except one that declares why propagation never
// meets it (fusion: made after partitioning).
bool propagation_enters_bodies(const std::string& n) {
  return primitive(n).body_form != BodyForm::none && !no_sharding_rule_reasons().count(n);
}
}  // namespace minijax
