// minijax sharding propagation: factor projection and merging (Shardy), the forward/backward
// sweeps to a fixed point, reshard placement by plan_reshard cost, and the annotated text.
#include "sharding/propagate_shardings.h"

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>

#include "core/errors.h"
#include "core/primitive.h"
#include "core/views/control_flow.h"
#include "sharding/boxes.h"
#include "sharding/factor_projection.h"
#include "sharding/plan_reshard.h"
#include "sharding/propagate_bodies.h"
#include "sharding/propagate_outputs.h"
#include "sharding/propagate_priorities.h"
#include "sharding/propagate_run.h"
#include "sharding/sharded_array.h"
#include "sharding/sharding_rule.h"

namespace minijax {
namespace prop_detail {

bool overlap(const AxisRef& a, const AxisRef& b, const Mesh& m) {
  if (a.name != b.name) return false;
  auto [pa, sa] = axis_pre_size(a, m);
  auto [pb, sb] = axis_pre_size(b, m);
  return pa < pb * sb && pb < pa * sa;
}

bool overlaps_any(const AxisRef& a, const Axes& used, const Mesh& m) {
  for (auto& u : used)
    if (overlap(a, u, m)) return true;
  return false;
}

// Merges adjacent sub-axes of one axis ("x":(1)2, "x":(2)2 -> "x"), Shardy's canonical form.
Axes normalize(const Axes& in, const Mesh& m) {
  Axes out;
  for (auto& a : in) {
    if (!out.empty() && out.back().name == a.name) {
      auto [pb, sb] = axis_pre_size(out.back(), m);
      auto [pa, sa] = axis_pre_size(a, m);
      if (pb * sb == pa) {
        out.back() = axis_ref_of(a.name, pb, sb * sa, m);
        continue;
      }
    }
    out.push_back(a);
  }
  return out;
}

int64_t product(const Axes& axes, const Mesh& m) {
  int64_t p = 1;
  for (auto& a : axes) p *= a.resolved_size(m);
  return p;
}

bool is_prefix(const Axes& p, const Axes& of) {
  return p.size() <= of.size() && std::equal(p.begin(), p.end(), of.begin());
}

// The axes of one dim from its factors' axes: major factor first; a factor not fully sharded
// ends the dim (a minor factor's shards would not be contiguous otherwise).
Axes unproject_dim(const std::vector<int>& factors, const Assign& s,
                   const std::vector<int64_t>& fsizes, const Mesh& m) {
  Axes out;
  for (size_t i = 0; i < factors.size(); ++i) {
    const Axes& fa = s[factors[i]];
    out.insert(out.end(), fa.begin(), fa.end());
    if (i + 1 < factors.size() && product(fa, m) != fsizes[factors[i]]) break;
  }
  return normalize(out, m);
}

std::vector<Tensor> tensors_of(const Eqn& e, const FactorRule& r) {
  std::vector<Tensor> ts;
  for (size_t i = 0; i < e.inputs.size() && i < r.operand_dims.size(); ++i) {
    Var v = atom_var(e.inputs[i]);
    if (v.defined()) ts.push_back({false, i, v, &r.operand_dims[i]});
  }
  for (size_t i = 0; i < e.outputs.size() && i < r.result_dims.size(); ++i)
    ts.push_back({true, i, e.outputs[i], &r.result_dims[i]});
  return ts;
}

struct Projection {
  std::vector<std::optional<Axes>> axes;  // per factor; nullopt: the tensor lacks the factor
  std::vector<bool> closed;               // per factor: its dim is closed
};

Projection project(const Sharding& s, const Tensor& t, const FactorRule& r, const Mesh& m) {
  Projection p{std::vector<std::optional<Axes>>(r.num_factors()),
               std::vector<bool>(r.num_factors(), false)};
  for (size_t d = 0; d < t.dims->size() && d < s.dims.size(); ++d) {
    auto parts = project_dim_axes(s.dims[d].axes, (*t.dims)[d], r.factor_sizes, m);
    for (size_t i = 0; i < parts.size(); ++i) {
      int f = (*t.dims)[d][i];
      p.axes[f] = parts[i];
      p.closed[f] = s.dims[d].closed;
    }
  }
  return p;
}

bool contains(const std::vector<int>& v, int f) {
  return std::find(v.begin(), v.end(), f) != v.end();
}

// Drops, factor by factor in `order`, every axis from the first one that a previous factor held
// by a same tensor uses (an axis shards a tensor once; factors of unrelated tensors, as the
// operands of optimization_barrier, may use the same axis).
void truncate_conflicts(Assign& s, const std::vector<int>& order, const Mesh& m, const FactorRule& r) {
  const size_t n = r.num_factors();
  std::vector<std::vector<bool>> together(n, std::vector<bool>(n, false));
  auto mark = [&](const std::vector<std::vector<std::vector<int>>>& tensors) {
    for (auto& t : tensors) {
      std::vector<int> fs;
      for (auto& d : t) fs.insert(fs.end(), d.begin(), d.end());
      for (int a : fs)
        for (int b : fs) together[size_t(a)][size_t(b)] = true;
    }
  };
  mark(r.operand_dims);
  mark(r.result_dims);
  std::vector<int> done;
  for (int f : order) {
    Axes used;
    for (int g : done)
      if (together[size_t(f)][size_t(g)]) used.insert(used.end(), s[size_t(g)].begin(), s[size_t(g)].end());
    Axes kept;
    for (auto& a : s[f]) {
      if (overlaps_any(a, used, m)) break;
      kept.push_back(a);
    }
    s[f] = kept;
    done.push_back(f);
  }
}

std::vector<int> iota_factors(size_t n) {
  std::vector<int> o(n);
  std::iota(o.begin(), o.end(), 0);
  return o;
}

// Shardy's per-factor merge: all opinions compatible -> the longest; else the longest common
// prefix. A closed dim is an opinion even when empty, an open one only when it has axes.
Assign merge(const FactorRule& r, const std::vector<Projection>& ps, const Mesh& m) {
  Assign s(r.num_factors());
  for (size_t f = 0; f < r.num_factors(); ++f) {
    if (contains(r.need_replication_factors, static_cast<int>(f))) continue;
    std::vector<const Axes*> ops;
    for (auto& p : ps)
      if (p.axes[f] && (p.closed[f] || !p.axes[f]->empty())) ops.push_back(&*p.axes[f]);
    if (ops.empty()) continue;
    const Axes* longest = ops[0];
    for (auto* o : ops)
      if (o->size() > longest->size()) longest = o;
    bool compatible = true;
    for (auto* o : ops) compatible = compatible && is_prefix(*o, *longest);
    if (compatible) {
      s[f] = *longest;
      continue;
    }
    Axes common = *ops[0];
    for (auto* o : ops) {
      size_t k = 0;
      while (k < common.size() && k < o->size() && common[k] == (*o)[k]) ++k;
      common.resize(k);
    }
    s[f] = common;
  }
  truncate_conflicts(s, iota_factors(r.num_factors()), m, r);
  keep_whole_reductions(s, r, m);
  return s;
}

Assign merged_assignment(const State& st, const std::vector<Tensor>& ts, const FactorRule& r) {
  std::vector<Projection> ps;
  for (auto& t : ts) ps.push_back(project(opinion_in_round(st, t.var), t, r, *st.mesh));
  return merge(r, ps, *st.mesh);
}

// The sharding a tensor needs under the factor assignment `s` (dims closed; results carry the
// reduction factors' axes as unreduced).
Sharding needed(const Sharding& base, const Tensor& t, const FactorRule& r, const Assign& s,
                const Mesh& m) {
  Sharding out = base;
  out.replicated.clear();
  out.unreduced.clear();
  for (size_t d = 0; d < out.dims.size() && d < t.dims->size(); ++d)
    out.dims[d] = DimSharding{unproject_dim((*t.dims)[d], s, r.factor_sizes, m), true, -1};
  if (t.is_result && r.completed_by.empty()) {  // completed in place: never partial sums
    Axes u;
    for (int f : r.reduction_factors) u.insert(u.end(), s[f].begin(), s[f].end());
    out.unreduced = normalize(u, m);
  }
  return out;
}

bool same_layout(const Sharding& a, const Sharding& b) {
  if (a.dims.size() != b.dims.size() || a.unreduced != b.unreduced) return false;
  for (size_t d = 0; d < a.dims.size(); ++d)
    if (a.dims[d].axes != b.dims[d].axes) return false;
  return true;
}

// Grows the open dims (and unreduced axes) of a non-user tensor towards `want`; returns whether
// anything changed. Only extensions are taken, and none that would use an axis twice.
bool grow(Sharding& cur, const Sharding& want, const Mesh& m) {
  bool changed = false;
  Axes used = cur.replicated;
  for (auto& d : cur.dims) used.insert(used.end(), d.axes.begin(), d.axes.end());
  used.insert(used.end(), cur.unreduced.begin(), cur.unreduced.end());
  auto try_extend = [&](Axes& have, const Axes& to) {
    if (to.size() <= have.size() || !is_prefix(have, to)) return;
    for (size_t k = have.size(); k < to.size(); ++k)
      if (overlaps_any(to[k], used, m)) return;
    used.insert(used.end(), to.begin() + static_cast<long>(have.size()), to.end());
    have = to;
    changed = true;
  };
  for (size_t d = 0; d < cur.dims.size(); ++d)
    if (!cur.dims[d].closed) try_extend(cur.dims[d].axes, want.dims[d].axes);
  try_extend(cur.unreduced, want.unreduced);
  return changed;
}

bool update_eqn(State& st, const Eqn& e, const FactorRule& r) {
  const Mesh& m = *st.mesh;
  auto ts = tensors_of(e, r);
  std::vector<Projection> ps;
  for (auto& t : ts) ps.push_back(project(opinion_in_round(st, t.var), t, r, m));
  Assign s = merge(r, ps, m);
  bool changed = false;
  for (auto& t : ts) {
    Sharding& cur = st.sh.at(t.var);
    if (st.user[t.var] && std::all_of(cur.dims.begin(), cur.dims.end(),
                                      [](const DimSharding& d) { return d.closed; }))
      continue;
    Sharding want = needed(cur, t, r, s, m);
    if (st.user[t.var]) want.unreduced = cur.unreduced;  // user shardings keep their unreduced
    changed = grow(cur, want, m) || changed;
  }
  return changed;
}

// Clears, in each multi-factor dim of each tensor, the factors after one that is not fully
// sharded: no tensor can hold them (the dim's shards would not be contiguous; unproject_dim
// drops them), so an assignment keeping them would look satisfied by shardings that lack them.
void drop_unrepresentable(Assign& s, const std::vector<Tensor>& ts, const FactorRule& r, const Mesh& m) {
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& t : ts)
      for (auto& fs : *t.dims)
        for (size_t i = 0; i + 1 < fs.size(); ++i)
          if (product(s[fs[i]], m) != r.factor_sizes[fs[i]])
            for (size_t k = i + 1; k < fs.size(); ++k)
              if (!s[fs[k]].empty()) {
                s[fs[k]].clear();
                changed = true;
              }
  }
}

// Candidate assignments of a conflicting equation: the merged one, then the one each tensor
// implies (its own factors as it holds them, the others merged, its own winning overlaps).
std::vector<std::pair<std::string, Assign>> candidates(const State& st, const std::vector<Tensor>& ts,
                                                       const FactorRule& r) {
  const Mesh& m = *st.mesh;
  std::vector<Projection> ps;
  for (auto& t : ts) ps.push_back(project(opinion_in_round(st, t.var), t, r, m));
  Assign merged = merge(r, ps, m);
  std::vector<std::pair<std::string, Assign>> out{{"merged", merged}};
  for (size_t i = 0; i < ts.size(); ++i) {
    Assign s = merged;
    std::vector<int> order, rest;
    for (size_t f = 0; f < r.num_factors(); ++f) {
      if (ps[i].axes[f] && !contains(r.need_replication_factors, static_cast<int>(f))) {
        s[f] = *ps[i].axes[f];
        order.push_back(static_cast<int>(f));
      } else {
        rest.push_back(static_cast<int>(f));
      }
    }
    order.insert(order.end(), rest.begin(), rest.end());
    truncate_conflicts(s, order, m, r);
    out.emplace_back((ts[i].is_result ? "result " : "operand ") + std::to_string(ts[i].index), s);
  }
  // Each candidate with sharded reduction factors also without them (operands gathered on
  // those factors, results computed whole instead of as partial sums).
  size_t n = out.size();
  for (size_t c = 0; c < n; ++c) {
    Assign s = out[c].second;
    bool any = false;
    for (int f : r.reduction_factors) {
      any = any || !s[f].empty();
      s[f].clear();
    }
    if (any) out.emplace_back(out[c].first + ", reduction factors unsharded", s);
  }
  for (auto& c : out)
    do drop_unrepresentable(c.second, ts, r, m);
    while (keep_whole_reductions(c.second, r, m));
  std::vector<std::pair<std::string, Assign>> unique;
  for (auto& c : out) {
    bool dup = false;
    for (auto& u : unique) dup = dup || u.second == c.second;
    if (!dup) unique.push_back(std::move(c));
  }
  return unique;
}

std::string var_name(size_t i) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('a' + i % 26));
    i /= 26;
  } while (i > 0);
  return s;
}

Sharding closed_copy(Sharding s) {
  for (auto& d : s.dims) d.closed = true;
  return s;
}

}  // namespace prop_detail

using namespace prop_detail;

const Sharding& PropagationResult::of(const Var& v) const {
  auto it = shardings.find(v);
  if (it == shardings.end())
    throw ShardingError("propagate_shardings: variable of aval " +
                        (v.defined() ? v.aval().str() : std::string("<undefined>")) +
                        " is not a variable of the propagated jaxpr");
  return it->second;
}

const std::vector<ReshardPlacement>& PropagationResult::reshards_in(const Jaxpr& j) const {
  auto it = body_reshards.find(&j);
  return it == body_reshards.end() ? reshards : it->second;
}

namespace {

// What one propagation run costs with loops weighted (a reshard inside a scan body counts
// `length` times, nested loops multiply); the scan carries whose loop-back needs a reshard; and
// the scan consts resharded inside the body (loop invariants), with the sharding they get there.
struct Outcome {
  int64_t weighted_max = 0, weighted_total = 0;
  std::vector<Pin> loop_conflicts, invariant_reshards;
};

using Item = std::pair<const Eqn*, const FactorRule*>;

// Lists the propagation items of `j` in program order: an equation's entering edges, its bodies'
// items, then its loop-back and leaving edges; scan's stacked enter edges also go to
// `stacked_enters`.
void list_items(const Run& run, const Jaxpr& j, std::vector<Item>& items,
                std::vector<const BodyEdge*>& stacked_enters) {
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    if (!has_body(j.eqns[i])) {
      items.emplace_back(&j.eqns[i], &run.rules.at(&j)[i]);
      continue;
    }
    const auto& es = run.edges.at(&j)[i];
    for (auto& b : es)
      if (b.kind == BodyEdge::enter) {
        items.emplace_back(&b.view, &b.rule);
        if (b.stacked) stacked_enters.push_back(&b);
      }
    for (const ClosedJaxpr* b : bodies_of(j.eqns[i])) list_items(run, *b->jaxpr, items, stacked_enters);
    for (auto& b : es)
      if (b.kind != BodyEdge::enter) items.emplace_back(&b.view, &b.rule);
  }
}

// Sweeps forward and backward over every item to a fixed point: each change strictly extends
// some open dim, so this terminates. User priorities: one fixed point per priority round, lowest
// first, then the last round. Then scan xs sharded on their length dim get the cheapest
// unsharded-length target (which may grow body values) and propagation runs again.
void propagate_to_fixed_point(Run& run) {
  State& st = run.st;
  std::vector<Item> items;
  std::vector<const BodyEdge*> stacked_enters;
  list_items(run, run.jaxpr, items, stacked_enters);
  for (;;) {
    for (int64_t round : priority_rounds(st)) {
      st.round = round;
      for (;;) {
        bool changed = false;
        for (auto& [e, r] : items) changed = update_eqn(st, *e, *r) || changed;
        ++run.res.sweeps;
        for (size_t i = items.size(); i-- > 0;) changed = update_eqn(st, *items[i].first, *items[i].second) || changed;
        ++run.res.sweeps;
        if (!changed) break;
      }
    }
    if (!choose_unstacked(st, stacked_enters)) break;
  }
}

// Operand reshards placed so far in one jaxpr, by (variable, target sharding): the equation they
// precede.
using PlacedOperands = std::map<std::pair<uint64_t, std::string>, size_t>;

// Weighs the candidate assignments of equation `i` of `body` (one without a body): each valid
// one with the reshards it needs and their cost (an operand reshard already `placed` is shared
// at no cost). `conflict` is false when the merged assignment needs no reshard.
PlacementDecision weigh_candidates(const Run& run, const Jaxpr& body, size_t i, const FactorRule& r,
                                   const PlacedOperands& placed, bool& conflict) {
  const State& st = run.st;
  const Mesh& m = *st.mesh;
  auto ts = tensors_of(body.eqns[i], r);
  PlacementDecision dec;
  dec.eqn = i;
  conflict = false;
  for (auto& [src, s] : candidates(st, ts, r)) {
    PlacementCandidate c;
    c.source = src;
    bool valid = true;
    for (auto& t : ts) {
      const Sharding& have = st.sh.at(t.var);
      Sharding need = needed(closed_copy(have), t, r, s, m);
      if (same_layout(have, need)) continue;
      ReshardPlacement p;
      p.eqn = i;
      p.on_result = t.is_result;
      p.index = t.index;
      p.var = t.var;
      p.from = t.is_result ? need : closed_copy(have);
      p.to = t.is_result ? closed_copy(have) : need;
      // The same value already resharded the same way before an earlier equation of this
      // jaxpr: reused.
      if (auto pl = placed.find({t.var.id(), p.to.str()}); !t.is_result && pl != placed.end()) {
        p.shared_with = int64_t(pl->second);
        c.reshards.push_back(std::move(p));
        continue;
      }
      auto cost = reshard_cost(p.from, p.to, t.var.aval());
      if (!cost) {
        valid = false;
        break;
      }
      p.max_received = cost->first;
      p.total_received = cost->second;
      c.max_received += p.max_received;
      c.total_received += p.total_received;
      c.reshards.push_back(std::move(p));
    }
    if (!valid) continue;
    if (src == "merged" && c.reshards.empty()) break;  // no conflict
    conflict = true;
    dec.candidates.push_back(std::move(c));
  }
  return dec;
}

// Places the reshards every conflict left after propagation needs, in every jaxpr: body edges'
// by place_edges; each other conflicting equation's by its cheapest candidate (largest
// per-device receive, then total), recorded in res.decisions for the program's equations.
void place_reshards(Run& run) {
  for (const Jaxpr* jp : run.jaxprs) {
    const Jaxpr& body = *jp;
    auto& before = run.before_of[jp];
    auto& after = run.after_of[jp];
    before.resize(body.eqns.size());
    after.resize(body.eqns.size());
    PlacedOperands placed;
    for (size_t i = 0; i < body.eqns.size(); ++i) {
      const Eqn& e = body.eqns[i];
      if (has_body(e)) {
        place_edges(run.st, e, i, run.edges.at(jp)[i], before[i], after[i], run.bounds, run.loc);
        continue;
      }
      const FactorRule& r = run.rules.at(jp)[i];
      bool conflict = false;
      PlacementDecision dec = weigh_candidates(run, body, i, r, placed, conflict);
      if (!conflict) continue;
      if (dec.candidates.empty())
        throw ShardingError("propagate_shardings: no valid sharding for equation " +
                                std::to_string(i) + " ('" + e.primitive->name + "', rule " +
                                r.str() + ")",
                            run.loc);
      for (size_t k = 1; k < dec.candidates.size(); ++k) {
        auto& a = dec.candidates[k];
        auto& b = dec.candidates[dec.chosen];
        if (std::pair(a.max_received, a.total_received) < std::pair(b.max_received, b.total_received))
          dec.chosen = k;
      }
      for (auto& p : dec.candidates[dec.chosen].reshards) {
        if (!p.on_result && p.shared_with < 0) placed.emplace(std::pair(p.var.id(), p.to.str()), i);
        (p.on_result ? after : before)[i].push_back(p);
      }
      if (jp == &run.jaxpr) run.res.decisions.push_back(std::move(dec));
    }
  }
}

// The reshard at program output `idx` to `s`, costed. Throws ShardingError when `s` needs
// partial sums the value does not hold.
ReshardPlacement output_placement(const Run& run, size_t idx, const Sharding& s) {
  const Jaxpr& jaxpr = run.jaxpr;
  ReshardPlacement p;
  p.eqn = jaxpr.eqns.size();
  p.on_output = true;
  p.index = idx;
  p.var = atom_var(jaxpr.outvars[idx]);  // undefined for a literal output
  const ShapedArray& aval = atom_aval(jaxpr.outvars[idx]);
  p.from = p.var.defined() ? run.res.of(p.var)
                           : Sharding::replicated_on(run.st.mesh, int64_t(aval.shape.size()), aval.memory_kind);
  p.to = closed_copy(s);
  auto cost = reshard_cost(p.from, p.to, aval);
  if (!cost)
    throw ShardingError("propagate_shardings: output " + std::to_string(idx) + " needs " +
                            p.to.str() + " with partial sums its value " + p.from.str() +
                            " does not hold",
                        run.loc);
  p.max_received = cost->first;
  p.total_received = cost->second;
  return p;
}

// Writes the annotated text (variables named a, b, ... in order of appearance, each declared
// with its sharding; every reshard on its own line where it is placed; bodies nested) and lists
// the reshards in program order: the program's in res.reshards, each body's in
// res.body_reshards.
struct Printer {
  explicit Printer(Run& r) : run(r) {}

  Run& run;
  std::unordered_map<Var, std::string, VarHash> names;
  size_t next = 0;
  std::ostringstream os;

  std::string name(const Var& v) {
    if (v.is_dropvar()) return "_";
    auto it = names.find(v);
    if (it != names.end()) return it->second;
    return names.emplace(v, var_name(next++)).first->second;
  }
  std::string atom(const Atom& a) {
    if (auto* v = std::get_if<Var>(&a)) return name(*v);
    return "lit:" + atom_aval(a).str();
  }
  std::string decl(const Var& v) { return name(v) + ":" + v.aval().str() + run.res.of(v).str(); }
  void line(const std::string& ind, const ReshardPlacement& p, const std::string& repeat) {
    os << ind << "    reshard " << (p.var.defined() ? name(p.var) : std::string("literal")) << ": " << p.from.str() << " -> " << p.to.str() << " (";
    if (p.shared_with >= 0)
      os << "shared with the reshard before equation " << p.shared_with << ")\n";
    else
      os << p.max_received << " elements/device, " << p.total_received << " total" << repeat << ")\n";
  }
  // Prints `p` and lists it in `list`.
  void emit(const std::string& ind, const ReshardPlacement& p, const std::string& repeat,
            std::vector<ReshardPlacement>& list) {
    line(ind, p, repeat);
    list.push_back(p);
  }
  void print(const Jaxpr& j, const std::string& ind);
};

void Printer::print(const Jaxpr& j, const std::string& ind) {
  const Jaxpr& jaxpr = run.jaxpr;
  PropagationResult& res = run.res;
  const bool top = &j == &jaxpr;
  std::vector<ReshardPlacement>& list = top ? res.reshards : res.body_reshards[&j];
  if (!top) list.clear();  // a body shared by several equations is printed (and listed) again
  std::string repeat;
  if (auto it = run.loop_length.find(&j); it != run.loop_length.end())
    repeat = it->second >= 0 ? ", in the loop: x" + std::to_string(it->second) : ", in the loop: per iteration";
  os << (top ? "" : ind) << "{ lambda ";
  for (size_t i = 0; i < j.constvars.size(); ++i) os << (i ? " " : "") << decl(j.constvars[i]);
  os << "; ";
  for (size_t i = 0; i < j.invars.size(); ++i) os << (i ? " " : "") << decl(j.invars[i]);
  os << ". let\n";
  const BodyBoundary* bb = top || !run.bounds.count(&j) ? nullptr : &run.bounds.at(&j);
  if (bb)
    for (auto& p : bb->at_input) emit(ind, p, repeat, list);
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    for (auto& p : run.before_of.at(&j)[i]) emit(ind, p, repeat, list);
    os << ind << "   ";
    for (auto& v : e.outputs) os << " " << decl(v);
    os << (e.outputs.empty() ? " " : " = ") << e.primitive->name;  // JAX prints no '=' without results
    for (auto& a : e.inputs) os << " " << atom(a);
    os << "\n";
    if (has_body(e))
      for (const ClosedJaxpr* b : bodies_of(e)) {
        print(*b->jaxpr, ind + "      ");
        os << "\n";
      }
    for (auto& p : run.after_of.at(&j)[i]) emit(ind, p, repeat, list);
  }
  if (bb)
    for (auto& p : bb->at_output) emit(ind, p, repeat, list);
  if (top)
    for (auto& [idx, s] : run.output_reshards) emit(ind, output_placement(run, idx, s), "", list);
  os << ind << "  in (";
  for (size_t i = 0; i < j.outvars.size(); ++i) os << (i ? ", " : "") << atom(j.outvars[i]);
  os << ") }";
}

// Adds up the run's cost with loops weighted, and records the scan carries whose loop-back
// needs a reshard and the scan consts resharded inside the body (not on a boundary, not fixed
// by the user), each once.
void record_outcome(const Run& run, Outcome& oc) {
  const PropagationResult& res = run.res;
  const State& st = run.st;
  for (auto& p : res.reshards) oc.weighted_max += p.max_received, oc.weighted_total += p.total_received;
  for (auto& [j, list] : res.body_reshards)
    for (auto& p : list)
      oc.weighted_max += run.weight.at(j) * p.max_received, oc.weighted_total += run.weight.at(j) * p.total_received;
  for (const Jaxpr* jp : run.jaxprs)
    for (size_t i = 0; i < jp->eqns.size(); ++i) {
      const Eqn& e = jp->eqns[i];
      if (!ScanParams::is(e)) continue;
      for (auto& b : run.edges.at(jp)[i]) {
        Var src = atom_var(b.view.inputs[0]);
        if (b.kind == BodyEdge::loop_back && src.defined() && !same_layout(st.sh.at(src), st.sh.at(b.view.outputs[0])))
          oc.loop_conflicts.emplace_back(b.view.outputs[0], std::nullopt);
      }
      const ScanParams sp = scan_params(e);
      const Jaxpr& body = *sp.jaxpr->jaxpr;
      const auto nc = std::ptrdiff_t(sp.num_consts);
      for (auto& p : res.body_reshards.at(&body)) {
        bool is_const = std::find(body.invars.begin(), body.invars.begin() + nc, p.var) != body.invars.begin() + nc;
        bool seen = std::any_of(oc.invariant_reshards.begin(), oc.invariant_reshards.end(),
                                [&](const Pin& q) { return q.first == p.var; });
        if (is_const && !p.on_result && !p.on_output && !p.on_input && !seen && !st.user.at(p.var))
          oc.invariant_reshards.emplace_back(p.var, p.to);
      }
    }
}

// One propagation run; `pinned` body variables are fixed (the alternatives propagate_shardings
// tries: carries replicated, loop-invariant consts in the sharding the body needs).
PropagationResult propagate_impl(const Jaxpr& jaxpr, const std::vector<std::optional<Sharding>>& in_shardings,
                                 const std::vector<std::optional<Sharding>>& out_shardings, const Mesh& mesh,
                                 std::source_location loc, const std::vector<Pin>& pinned, Outcome& oc) {
  check_sharding_counts(jaxpr, in_shardings, out_shardings, loc);
  Run run(jaxpr, mesh, loc);
  seed_inputs(run, in_shardings, pinned);
  collect_jaxprs(run);
  fix_outputs(run, out_shardings);
  propagate_to_fixed_point(run);
  reduce_outputs(run.st, jaxpr, out_shardings);  // outputs are returned reduced unless asked
  place_reshards(run);
  for (auto& [v, s] : run.st.sh) run.res.shardings.emplace(v, closed_copy(s));
  Printer printer(run);
  printer.print(jaxpr, "");
  record_outcome(run, oc);
  run.res.text = printer.os.str();
  return std::move(run.res);
}

}  // namespace

// Reshards inside a scan body pay every iteration. Two alternatives are tried, each kept when it
// is cheaper with reshards inside scan bodies counted `length` times (ties keep the earlier run):
// (1) the carries whose loop-back needs a reshard fixed replicated (one reshard before the loop);
// (2) then the consts resharded inside the body (loop invariants) fixed in the sharding the body
// resharded them to, so the enter edge reshards them once before the loop (hoisting).
PropagationResult propagate_shardings(const Jaxpr& jaxpr,
                                      const std::vector<std::optional<Sharding>>& in_shardings,
                                      const std::vector<std::optional<Sharding>>& out_shardings,
                                      const Mesh& mesh, std::source_location loc) {
  Outcome best_oc;
  std::vector<Pin> pins;
  PropagationResult best = propagate_impl(jaxpr, in_shardings, out_shardings, mesh, loc, pins, best_oc);
  auto attempt = [&](const std::vector<Pin>& more) {
    if (more.empty()) return;
    std::vector<Pin> tried = pins;
    tried.insert(tried.end(), more.begin(), more.end());
    Outcome oc;
    PropagationResult r = propagate_impl(jaxpr, in_shardings, out_shardings, mesh, loc, tried, oc);
    if (std::pair(oc.weighted_max, oc.weighted_total) < std::pair(best_oc.weighted_max, best_oc.weighted_total)) {
      best = std::move(r);
      best_oc = std::move(oc);
      pins = std::move(tried);
    }
  };
  attempt(best_oc.loop_conflicts);
  attempt(std::vector<Pin>(best_oc.invariant_reshards));
  return best;
}

}  // namespace minijax
