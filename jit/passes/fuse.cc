// minijax compiler pass fuse (declared in jit/passes/fuse.h).
// Owns the grouping of equations into kernels (Planner), their order, and the fusion equations.
//
// Planner: equations are visited last to first (XLA's reverse post order: consumers before
// producers). An unvisited fusible equation with a used value starts a group; the group then
// takes candidate producers of its operands, latest first, each by one of: absorb (every user
// of the producer is in the group), clone (a cheap producer used elsewhere too), extra result
// (an elementwise producer read at the identity index and used elsewhere), or not at all. The
// graph of nodes (groups and unfused equations, with effect-order edges between effectful
// equations) stays acyclic: clones and extra results are refused when they would close a
// cycle (a depth-first reachability check), absorption cannot close one.
#include "jit/passes/fuse.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/bodies.h"
#include "core/config.h"
#include "core/dce.h"
#include "core/errors.h"
#include "core/fusion.h"
#include "core/primitive.h"
#include "core/views/array_ops.h"

namespace minijax {
namespace {

/// Index maps that may read one operand element for several output elements, by primitive.
const std::map<std::string, std::function<bool(const ShapedArray& in, const ShapedArray& out)>>&
reusing_index_maps() {
  static const std::map<std::string, std::function<bool(const ShapedArray&, const ShapedArray&)>> t = {
      {"broadcast_in_dim", [](const ShapedArray& in, const ShapedArray& out) { return out.size() > in.size(); }},
      {"gather", [](const ShapedArray&, const ShapedArray&) { return true; }},
  };
  return t;
}

/// The most index_map equations in one group, whatever config().max_fusion_equations says:
/// the fusion emitter evaluates an operand read at a new index by a call (1-2 KB of stack per
/// level, measured: 500 nested transposes in one kernel ran on a 1 MB stack, 1,000 did not),
/// so this bounds its recursion at a quarter of a 1 MB stack.
constexpr size_t kMaxIndexMapsPerGroup = 128;

enum class Role { loop, prologue, reduction, epilogue };

struct Member {
  size_t eqn;
  bool clone;        ///< a duplicate of an equation that stays outside (for its other users)
  Role role;
  bool multi;        ///< its value may be evaluated more than once per element
  bool at_identity;  ///< evaluated only at the identity index of the group's (output) space
};

struct Group {
  bool reduction = false;
  Shape space;                ///< loop: the iteration space; reduction: the output space
  Shape operand_space;        ///< reduction groups: the reductions' operand shape
  std::vector<int64_t> axes;  ///< reduction groups: the reduced axes
  MemoryKind memory_kind = MemoryKind::device;
  size_t root = 0;            ///< the group's last equation
  std::vector<Member> members;
  size_t index_maps = 0;      ///< members of class index_map (transpose, broadcast, slice, ...)
  std::unordered_set<Var, VarHash> produced;
  /// For each value read by members: (member index, operand position) of each read.
  std::unordered_map<Var, std::vector<std::pair<size_t, size_t>>, VarHash> reads;
};

std::vector<int64_t> sorted_axes(const Eqn& e) {
  auto a = reduction_axes(e);
  std::sort(a.begin(), a.end());
  return a;
}

OpClass op_class(const Eqn& e) { return e.primitive->op_class; }

/// Whether e may be in a fusion: a fusible class, no effects, value-carrying avals, and (for
/// elementwise) operands of the output shape or rank 0 (so the lowering needs no broadcasting).
bool is_fusible(const Eqn& e) {
  const OpClass c = op_class(e);
  if (c == OpClass::other || e.outputs.empty() || eqn_has_effects(e) || has_bodies(e.params)) return false;
  for (auto& o : e.outputs)
    if (o.aval().dtype == DType::float0 || o.aval().is_token() ||
        o.aval().shape != e.outputs[0].aval().shape ||
        o.aval().memory_kind != e.outputs[0].aval().memory_kind)
      return false;
  for (auto& a : e.inputs) {
    const ShapedArray& in = atom_aval(a);
    if (in.dtype == DType::float0 || in.is_token()) return false;
    if (c == OpClass::elementwise && in.ndim() != 0 && in.shape != e.outputs[0].aval().shape) return false;
  }
  if (c == OpClass::reduction)
    return e.inputs.size() == 1 && e.outputs.size() == 1 && has_reduction_axes(e);
  return true;
}

bool all_rank0(const Eqn& e) {
  for (auto& o : e.outputs)
    if (o.aval().ndim() != 0) return false;
  return true;
}

/// Producers duplicated into every consumer group: FusionClass::cheap, and elementwise ops on rank 0.
bool is_cheap(const Eqn& e) {
  return e.primitive->fusion_class == FusionClass::cheap ||
         (op_class(e) == OpClass::elementwise && all_rank0(e));
}

/// Producers never fused into a group that reads their elements more than once.
bool is_expensive(const Eqn& e) {
  return e.primitive->fusion_class == FusionClass::expensive && !all_rank0(e);
}

/// Whether e reads operand `pos` at more than one of its output elements.
bool reuses_operand(const Eqn& e, size_t pos) {
  const ShapedArray& in = atom_aval(e.inputs[pos]);
  const ShapedArray& out = e.outputs[0].aval();
  if (in.ndim() == 0 && out.ndim() != 0) return true;
  auto it = reusing_index_maps().find(e.primitive->name);
  return it != reusing_index_maps().end() && it->second(in, out);
}

class Planner {
 public:
  Planner(const Jaxpr& j, size_t max_members) : j_(j), n_(j.eqns.size()), max_members_(max_members) {
    fusible_.resize(n_);
    dead_.assign(n_, false);
    owner_.resize(n_);
    int last_effect = -1;
    next_effect_.assign(n_, -1);
    for (size_t i = 0; i < n_; ++i) {
      const Eqn& e = j.eqns[i];
      fusible_[i] = is_fusible(e);
      owner_[i] = int(i);
      for (auto& o : e.outputs)
        if (!o.is_dropvar()) producer_[o] = i;
      for (auto& a : e.inputs)
        if (auto* v = std::get_if<Var>(&a)) readers_[*v].insert(int(i));
      if (eqn_has_effects(e)) {
        if (last_effect >= 0) next_effect_[size_t(last_effect)] = int(i);
        last_effect = int(i);
      }
    }
    for (auto& a : j.outvars)
      if (auto* v = std::get_if<Var>(&a)) returned_.insert(*v);
  }

  void plan() {
    for (size_t i = n_; i-- > 0;) {
      if (!fusible_[i] || owner_[i] != int(i)) continue;
      if (!used(j_.eqns[i])) {
        dead_[i] = true;
        for (auto& a : j_.eqns[i].inputs)
          if (auto* v = std::get_if<Var>(&a)) readers_[*v].erase(int(i));
        continue;
      }
      start_group(i);
      grow(groups_.size() - 1);
    }
  }

  /// The nodes (unfused equations as their index, groups as n + group index) in a topological
  /// order that follows the original positions (a group at its last equation) where it can.
  std::vector<int> order() const {
    std::vector<int> nodes;
    for (size_t i = 0; i < n_; ++i)
      if (owner_[i] == int(i) && !dead_[i]) nodes.push_back(int(i));
    for (size_t g = 0; g < groups_.size(); ++g) nodes.push_back(int(n_ + g));
    std::unordered_map<int, std::set<int>> succ;
    std::unordered_map<int, int> indeg;
    int prev_effect = -1;
    for (int x : nodes) indeg[x] = 0;
    auto add_edge = [&](int from, int to) {
      if (from != to && succ[from].insert(to).second) ++indeg[to];
    };
    for (int x : nodes) {
      for (const Var& u : external_inputs(x)) {
        auto p = producer_.find(u);
        if (p != producer_.end()) add_edge(owner_[p->second], x);
      }
    }
    for (size_t i = 0; i < n_; ++i)
      if (eqn_has_effects(j_.eqns[i])) {
        if (prev_effect >= 0) add_edge(prev_effect, int(i));
        prev_effect = int(i);
      }
    auto key = [&](int x) { return x < int(n_) ? size_t(x) : groups_[size_t(x) - n_].root; };
    auto later = [&](int a, int b) { return key(a) > key(b); };
    std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
    for (int x : nodes)
      if (indeg[x] == 0) ready.push(x);
    std::vector<int> out;
    while (!ready.empty()) {
      int x = ready.top();
      ready.pop();
      out.push_back(x);
      for (int y : succ[x])
        if (--indeg[y] == 0) ready.push(y);
    }
    if (out.size() != nodes.size())
      throw ValueError("fuse: internal error: the fused groups form a cycle");
    return out;
  }

  size_t num_eqns() const { return n_; }
  const Group& group(size_t g) const { return groups_[g]; }
  /// Whether value v of a group is a result: read outside it or returned.
  bool is_result(const Var& v) const {
    if (v.is_dropvar()) return false;
    if (returned_.count(v)) return true;
    auto it = readers_.find(v);
    return it != readers_.end() && !it->second.empty();
  }

  /// The variables node x reads from outside itself, in order of first use.
  std::vector<Var> external_inputs(int x) const {
    std::vector<Var> r;
    std::unordered_set<Var, VarHash> seen;
    auto visit = [&](const Eqn& e, const std::unordered_set<Var, VarHash>* produced) {
      for (auto& a : e.inputs)
        if (auto* v = std::get_if<Var>(&a))
          if ((!produced || !produced->count(*v)) && seen.insert(*v).second) r.push_back(*v);
    };
    if (x < int(n_)) {
      visit(j_.eqns[size_t(x)], nullptr);
    } else {
      const Group& g = groups_[size_t(x) - n_];
      for (auto& m : sorted_members(g)) visit(j_.eqns[m.eqn], &g.produced);
    }
    return r;
  }

  static std::vector<Member> sorted_members(const Group& g) {
    std::vector<Member> ms = g.members;
    std::sort(ms.begin(), ms.end(), [](const Member& a, const Member& b) { return a.eqn < b.eqn; });
    return ms;
  }

 private:
  bool used(const Eqn& e) const {
    for (auto& o : e.outputs)
      if (is_result(o)) return true;
    return false;
  }

  int node_of_group(size_t g) const { return int(n_ + g); }

  void start_group(size_t i) {
    const Eqn& e = j_.eqns[i];
    Group g;
    g.root = i;
    g.memory_kind = e.outputs[0].aval().memory_kind;
    g.space = e.outputs[0].aval().shape;
    Role role = Role::loop;
    if (op_class(e) == OpClass::reduction) {
      g.reduction = true;
      g.operand_space = atom_aval(e.inputs[0]).shape;
      g.axes = sorted_axes(e);
      role = Role::reduction;
    }
    groups_.push_back(std::move(g));
    add_member(groups_.size() - 1, i, false, role, false, true);
  }

  void add_member(size_t gi, size_t q, bool clone, Role role, bool multi, bool at_identity) {
    Group& g = groups_[gi];
    const int gn = node_of_group(gi);
    const Eqn& e = j_.eqns[q];
    g.members.push_back(Member{q, clone, role, multi, at_identity});
    if (op_class(e) == OpClass::index_map) ++g.index_maps;
    const size_t mi = g.members.size() - 1;
    for (auto& o : e.outputs) {
      if (o.is_dropvar()) continue;
      g.produced.insert(o);
      readers_[o].erase(gn);  // computed inside now (a clone's value is still q's outside)
    }
    for (size_t pos = 0; pos < e.inputs.size(); ++pos) {
      auto* v = std::get_if<Var>(&e.inputs[pos]);
      if (!v) continue;
      g.reads[*v].emplace_back(mi, pos);
      if (!clone) readers_[*v].erase(int(q));
      if (!g.produced.count(*v)) readers_[*v].insert(gn);
    }
    if (!clone) owner_[q] = gn;
  }

  void grow(size_t gi) {
    std::priority_queue<size_t> cand;
    auto push_producers = [&](size_t q) {
      for (auto& a : j_.eqns[q].inputs)
        if (auto* v = std::get_if<Var>(&a)) {
          auto p = producer_.find(*v);
          if (p != producer_.end() && !groups_[gi].produced.count(*v)) cand.push(p->second);
        }
    };
    push_producers(groups_[gi].root);
    std::unordered_set<size_t> seen;
    while (!cand.empty()) {
      size_t q = cand.top();
      cand.pop();
      if (!seen.insert(q).second) continue;
      if (try_join(gi, q)) push_producers(q);
    }
  }

  using Reads = std::vector<std::pair<size_t, size_t>>;  // (member index, operand position)
  /// The role q would take in g given the group's reads of it, and whether g would turn from
  /// a loop group into a reduction group; nullopt if q cannot be in g.
  std::optional<std::pair<Role, bool>> role_in(const Group& g, const Eqn& e, const Reads& rs) const;
  /// Whether q's value would be evaluated more than once per element (multi), and only at the
  /// identity index of the group's (output) space (at_identity).
  std::pair<bool, bool> evaluation(const Group& g, const Eqn& e, const Reads& rs, Role role) const;
  /// Adds q to group gi (absorbed, duplicated or as an extra result) if the rules allow.
  bool try_join(size_t gi, size_t q);
  bool reaches(const std::vector<int>& from, const std::unordered_set<int>& targets) const;
  std::vector<Var> out_vars(int x) const;

  const Jaxpr& j_;
  size_t n_;
  size_t max_members_;  // the most equations of one group (config().max_fusion_equations)
  std::vector<bool> fusible_, dead_;
  std::vector<int> owner_;        // node holding each original equation
  std::vector<int> next_effect_;  // effect order: the next equation with effects, or -1
  std::vector<Group> groups_;
  std::unordered_map<Var, size_t, VarHash> producer_;
  std::unordered_map<Var, std::set<int>, VarHash> readers_;  // nodes reading a value from outside
  std::unordered_set<Var, VarHash> returned_;
};

std::vector<Var> Planner::out_vars(int x) const {
  std::vector<Var> r;
  if (x < int(n_)) return j_.eqns[size_t(x)].outputs;
  for (auto& m : groups_[size_t(x) - n_].members)
    if (!m.clone)
      for (auto& o : j_.eqns[m.eqn].outputs) r.push_back(o);
  return r;
}

bool Planner::reaches(const std::vector<int>& from, const std::unordered_set<int>& targets) const {
  std::vector<int> stack = from;
  std::unordered_set<int> visited(from.begin(), from.end());
  while (!stack.empty()) {
    int x = stack.back();
    stack.pop_back();
    if (targets.count(x)) return true;
    std::vector<int> next;
    for (const Var& v : out_vars(x)) {
      auto it = readers_.find(v);
      if (it != readers_.end()) next.insert(next.end(), it->second.begin(), it->second.end());
    }
    if (x < int(n_) && next_effect_[size_t(x)] >= 0) next.push_back(owner_[size_t(next_effect_[size_t(x)])]);
    for (int y : next)
      if (y != x && visited.insert(y).second) stack.push_back(y);
  }
  return false;
}

std::optional<std::pair<Role, bool>> Planner::role_in(const Group& g, const Eqn& e, const Reads& rs) const {
  const OpClass c = op_class(e);
  const Shape& shape = e.outputs[0].aval().shape;
  bool all_epi = true, all_pro = true;
  for (auto& [mi, pos] : rs) {
    Role r = g.members[mi].role;
    all_epi &= r == Role::epilogue;
    all_pro &= r == Role::prologue || r == Role::reduction;
  }
  if (!g.reduction) {
    if (c != OpClass::reduction) return std::pair{Role::loop, false};
    // A loop group of elementwise equations over the reduction's output space becomes its
    // epilogue.
    if (shape != g.space) return std::nullopt;
    for (auto& m : g.members) {
      const Eqn& me = j_.eqns[m.eqn];
      if (op_class(me) != OpClass::elementwise) return std::nullopt;
      if (me.outputs[0].aval().ndim() != 0 && me.outputs[0].aval().shape != g.space) return std::nullopt;
    }
    return std::pair{Role::reduction, true};
  }
  if (c == OpClass::reduction) {
    if (!all_epi || atom_aval(e.inputs[0]).shape != g.operand_space || sorted_axes(e) != g.axes)
      return std::nullopt;
    return std::pair{Role::reduction, false};
  }
  if (all_pro) return std::pair{Role::prologue, false};
  if (all_epi && c == OpClass::elementwise && (shape == g.space || all_rank0(e)))
    return std::pair{Role::epilogue, false};
  return std::nullopt;
}

std::pair<bool, bool> Planner::evaluation(const Group& g, const Eqn& e, const Reads& rs, Role role) const {
  bool multi = false, at_identity = e.outputs[0].aval().shape == g.space && role != Role::prologue;
  std::set<size_t> distinct;
  bool via_index_map = false;
  for (auto& [mi, pos] : rs) {
    const Member& m = g.members[mi];
    const Eqn& re = j_.eqns[m.eqn];
    distinct.insert(mi);
    multi |= m.multi || reuses_operand(re, pos);
    via_index_map |= op_class(re) == OpClass::index_map;
    at_identity &= op_class(re) == OpClass::elementwise && m.at_identity;
  }
  multi |= distinct.size() > 1 && via_index_map;
  return {multi, at_identity};
}

bool Planner::try_join(size_t gi, size_t q) {
  Group& g = groups_[gi];
  const int gn = node_of_group(gi);
  const Eqn& e = j_.eqns[q];
  if (!fusible_[q] || dead_[q] || owner_[q] != int(q)) return false;
  if (g.members.size() >= max_members_) return false;  // config().max_fusion_equations
  // The emitter recurses once per index-changing equation on a path (jit/codegen/lower/lowering.h).
  if (op_class(e) == OpClass::index_map && g.index_maps >= kMaxIndexMapsPerGroup) return false;
  if (e.outputs[0].aval().memory_kind != g.memory_kind) return false;
  Reads rs;  // the group's reads of q's values
  for (auto& o : e.outputs) {
    auto it = g.reads.find(o);
    if (it != g.reads.end()) rs.insert(rs.end(), it->second.begin(), it->second.end());
  }
  if (rs.empty()) return false;
  auto role = role_in(g, e, rs);
  if (!role) return false;
  const auto [multi, at_identity] = evaluation(g, e, rs, role->first);
  if (is_expensive(e) && multi) return false;
  bool only_here = true;
  std::vector<int> outside;
  for (auto& o : e.outputs) {
    if (o.is_dropvar()) continue;
    if (returned_.count(o)) only_here = false;
    for (int r : readers_[o])
      if (r != gn) only_here = false, outside.push_back(r);
  }
  auto join = [&](bool clone) {
    if (role->second) {  // the loop group becomes a reduction group, its members the epilogue
      g.reduction = true;
      g.operand_space = atom_aval(e.inputs[0]).shape;
      g.axes = sorted_axes(e);
      for (auto& m : g.members) m.role = Role::epilogue;
    }
    add_member(gi, q, clone, role->first, multi, at_identity);
    return true;
  };
  // 1. Every user is in the group: no other path can lead back into it.
  if (only_here) return join(false);
  // 2. A cheap producer is duplicated, unless the group already reaches one of its producers.
  if (is_cheap(e) && !role->second) {
    std::unordered_set<int> producers;
    for (auto& a : e.inputs)
      if (auto* v = std::get_if<Var>(&a))
        if (!g.produced.count(*v))
          if (auto p = producer_.find(*v); p != producer_.end()) producers.insert(owner_[p->second]);
    if (producers.count(gn) || reaches({gn}, producers)) return false;
    return join(true);
  }
  // 3. An extra result, unless one of its other users leads back into the group.
  const OpClass c = op_class(e);
  if ((c == OpClass::elementwise || c == OpClass::reduction) && at_identity && !reaches(outside, {gn}))
    return join(false);
  return false;
}

/// Builds the fusion equation of group g (named `name`).
Eqn fusion_eqn(const Planner& pl, const Jaxpr& j, const Group& g, const std::string& name) {
  std::unordered_map<Var, Var, VarHash> inner;
  auto body = std::make_shared<Jaxpr>();
  Eqn f;
  f.primitive = &fusion_p();
  for (const Member& m : Planner::sorted_members(g)) {
    Eqn e = j.eqns[m.eqn];
    for (auto& a : e.inputs) {
      auto* v = std::get_if<Var>(&a);
      if (!v) continue;
      auto it = inner.find(*v);
      if (it == inner.end()) {  // an operand of the group: first use
        Var iv(v->aval());
        body->invars.push_back(iv);
        f.inputs.push_back(*v);
        it = inner.emplace(*v, iv).first;
      }
      a = it->second;
    }
    for (auto& o : e.outputs) {
      Var io = o.is_dropvar() ? Var::dropvar(o.aval()) : Var(o.aval());
      if (!o.is_dropvar()) {
        inner[o] = io;
        if (!m.clone && pl.is_result(o)) {
          body->outvars.push_back(io);
          f.outputs.push_back(o);
        }
      }
      o = io;
    }
    body->eqns.push_back(std::move(e));
  }
  auto cj = std::make_shared<ClosedJaxpr>();
  cj->jaxpr = body;
  f.params.set("jaxpr", ClosedJaxprPtr(cj));
  f.params.set("kind", std::string(g.reduction ? "reduction" : "loop"));
  f.params.set("name", name);
  return f;
}

Jaxpr fuse_jaxpr(const Jaxpr& j, int& counter, size_t max_members) {
  Planner pl(j, max_members);
  pl.plan();
  Jaxpr r;
  r.constvars = j.constvars;
  r.invars = j.invars;
  r.outvars = j.outvars;
  r.effects = j.effects;
  for (int x : pl.order()) {
    if (x >= int(pl.num_eqns())) {
      r.eqns.push_back(fusion_eqn(pl, j, pl.group(size_t(x) - pl.num_eqns()),
                                  "fusion." + std::to_string(counter++)));
      continue;
    }
    Eqn e = j.eqns[size_t(x)];
    if (has_bodies(e.params) && e.primitive != &fusion_p())
      e.params = map_bodies(e.params, [&](const Jaxpr& b) { return fuse_jaxpr(b, counter, max_members); });
    r.eqns.push_back(std::move(e));
  }
  return r;
}

}  // namespace

void check_max_fusion_equations(std::source_location loc) {
  const int64_t max_eqns = config().max_fusion_equations;
  if (max_eqns <= 0)
    throw ValueError("config().max_fusion_equations is " + std::to_string(max_eqns) +
                         ": the most equations of one fused kernel must be >= 1",
                     loc);
}

Jaxpr fuse(const Jaxpr& j) {
  check_max_fusion_equations(std::source_location::current());
  int counter = 0;
  return fuse_jaxpr(j, counter, size_t(config().max_fusion_equations));
}

}  // namespace minijax
