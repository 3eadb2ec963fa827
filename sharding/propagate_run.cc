// minijax sharding propagation run seeding: the given input/output shardings checked and fixed,
// the pins, and every jaxpr's factor rules, body edges and loop weights collected.
#include "sharding/propagate_run.h"

#include <memory>
#include <string>

#include "core/errors.h"
#include "core/primitive.h"
#include "core/views/control_flow.h"
#include "core/views/memory_ops.h"
#include "sharding/sharded_array.h"
#include "sharding/sharding_param.h"
#include "sharding/sharding_rule.h"

namespace minijax::prop_detail {
namespace {

// A given sharding (input, output or sharding_constraint) must be on the program's mesh and
// valid for its value's shape.
void check_given(const Run& run, const Sharding& s, const ShapedArray& aval, const std::string& what) {
  const Mesh& mesh = run.mesh;
  if (!s.mesh || !(*s.mesh == mesh))
    throw ShardingError("propagate_shardings: " + what + " sharding " + s.str() + " of a " +
                            aval.str() + " value is on " +
                            (s.mesh ? s.mesh->str() : std::string("no mesh")) +
                            ", not the program's " + mesh.str(),
                        run.loc);
  s.check(aval.shape, run.loc);
}

// An input's sharding describes where its value already is: its memory kind is the input's.
void check_input_kind(const Run& run, const Sharding& s, const ShapedArray& aval, const std::string& what) {
  if (s.memory_kind != aval.memory_kind)
    throw ShardingError("propagate_shardings: " + what + " sharding " + s.str() + " is in " +
                            memory_kind_name(s.memory_kind) + " memory, but the input " + aval.str() +
                            " is in " + memory_kind_name(aval.memory_kind) +
                            " memory (move it with device_put before the program)",
                        run.loc);
}

// Gives `v` an open replicated sharding in its memory kind, not fixed by the user.
void add_fresh(State& st, const Var& v) {
  Sharding s = Sharding::replicated_on(st.mesh, static_cast<int64_t>(v.aval().shape.size()),
                                       v.aval().memory_kind);
  for (auto& d : s.dims) d.closed = false;
  st.sh.emplace(v, s);
  st.user.emplace(v, false);
}

// Records jaxpr `j` (once) and, recursively, its bodies: fresh outputs, constraint results,
// body constvars/invars, loop lengths and weights, each equation's rule or body edges.
void visit_jaxpr(Run& run, const Jaxpr& j) {
  State& st = run.st;
  if (run.rules.count(&j)) return;
  run.jaxprs.push_back(&j);
  auto& rs = run.rules[&j];
  auto& es = run.edges[&j];
  rs.resize(j.eqns.size());
  es.resize(j.eqns.size());
  for (auto& e : j.eqns)
    for (auto& v : e.outputs)
      if (!st.sh.count(v)) add_fresh(st, v);
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    // with_sharding_constraint: the result is fixed by the user like an out_sharding (never
    // moves; the operand gets a reshard if it disagrees).
    if (ShardingConstraintParams::is(e)) {
      Sharding s = sharding_of_param(sharding_constraint_params(e).sharding, e.primitive->name.c_str());
      check_given(run, s, e.outputs[0].aval(), "sharding_constraint (equation " + std::to_string(i) + ")");
      s.mesh = st.mesh;
      st.sh[e.outputs[0]] = s;
      st.user[e.outputs[0]] = true;
    }
    if (has_body(e)) {
      for (const ClosedJaxpr* b : bodies_of(e)) {
        for (auto& v : b->jaxpr->constvars) {  // concrete constants: replicated
          st.sh.emplace(v, Sharding::replicated_on(st.mesh, int64_t(v.aval().shape.size()), v.aval().memory_kind));
          st.user.emplace(v, true);
        }
        for (auto& v : b->jaxpr->invars)
          if (!st.sh.count(v)) add_fresh(st, v);
        const BodyForm form = e.primitive->body_form;
        const int64_t length = form == BodyForm::scan ? scan_params(e).length : 1;
        if (form == BodyForm::scan) run.loop_length[b->jaxpr.get()] = length;
        if (!run.weight.count(b->jaxpr.get())) run.weight[b->jaxpr.get()] = run.weight.at(&j) * length;
        if (form == BodyForm::while_loop) run.loop_length[b->jaxpr.get()] = -1;
        visit_jaxpr(run, *b->jaxpr);
      }
      es[i] = body_edges(e);
      continue;
    }
    FactorRule r = sharding_rule_of(e);
    std::vector<ShapedArray> in_avals, out_avals;
    for (auto& a : e.inputs) in_avals.push_back(atom_aval(a));
    for (auto& v : e.outputs) out_avals.push_back(v.aval());
    check_factor_rule(r, in_avals, out_avals, "sharding rule of '" + e.primitive->name + "'");
    rs[i] = std::move(r);
  }
}

}  // namespace

void check_sharding_counts(const Jaxpr& jaxpr, const std::vector<std::optional<Sharding>>& in_shardings,
                           const std::vector<std::optional<Sharding>>& out_shardings,
                           std::source_location loc) {
  const size_t n_ins = jaxpr.constvars.size() + jaxpr.invars.size();
  if (!in_shardings.empty() && in_shardings.size() != n_ins)
    throw ShardingError("propagate_shardings: " + std::to_string(in_shardings.size()) +
                            " in_shardings for a jaxpr of " + std::to_string(n_ins) +
                            " inputs (constvars then invars)",
                        loc);
  if (!out_shardings.empty() && out_shardings.size() != jaxpr.outvars.size())
    throw ShardingError("propagate_shardings: " + std::to_string(out_shardings.size()) +
                            " out_shardings for a jaxpr of " +
                            std::to_string(jaxpr.outvars.size()) + " outputs",
                        loc);
}

void seed_inputs(Run& run, const std::vector<std::optional<Sharding>>& in_shardings,
                 const std::vector<Pin>& pinned) {
  State& st = run.st;
  std::vector<Var> ins = run.jaxpr.constvars;
  ins.insert(ins.end(), run.jaxpr.invars.begin(), run.jaxpr.invars.end());
  st.mesh = std::make_shared<const Mesh>(run.mesh);
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!in_shardings.empty() && in_shardings[i]) {
      check_given(run, *in_shardings[i], ins[i].aval(), "input " + std::to_string(i));
      check_input_kind(run, *in_shardings[i], ins[i].aval(), "input " + std::to_string(i));
      Sharding s = *in_shardings[i];
      s.mesh = st.mesh;
      st.sh[ins[i]] = s;
      st.user[ins[i]] = true;
    } else if (!st.sh.count(ins[i])) {
      add_fresh(st, ins[i]);
    }
  }
  for (auto& [v, s] : pinned) {
    st.sh[v] = s ? *s : Sharding::replicated_on(st.mesh, int64_t(v.aval().shape.size()), v.aval().memory_kind);
    st.sh[v].mesh = st.mesh;
    st.user[v] = true;
  }
}

void collect_jaxprs(Run& run) {
  for (auto& e : run.jaxpr.eqns)
    for (auto& v : e.outputs)
      if (!run.st.sh.count(v)) add_fresh(run.st, v);
  visit_jaxpr(run, run.jaxpr);
}

// A variable keeps its aval's memory kind: an out_sharding in another memory kind fixes the
// variable's layout in its own kind and places a reshard at the output that moves the value
// (JAX's out_shardings place the result in their memory kind).
void fix_outputs(Run& run, const std::vector<std::optional<Sharding>>& out_shardings) {
  State& st = run.st;
  const Jaxpr& jaxpr = run.jaxpr;
  for (size_t i = 0; i < jaxpr.outvars.size(); ++i) {
    if (out_shardings.empty() || !out_shardings[i]) continue;
    Var v = atom_var(jaxpr.outvars[i]);
    const ShapedArray& aval = atom_aval(jaxpr.outvars[i]);
    check_given(run, *out_shardings[i], aval, "output " + std::to_string(i));
    Sharding s = *out_shardings[i];
    s.mesh = st.mesh;
    const bool moved = s.memory_kind != aval.memory_kind;
    if (!v.defined()) {  // a literal output: replicated in its aval's kind, resharded if asked
      if (moved || !same_layout(Sharding::replicated_on(st.mesh, int64_t(aval.shape.size())), s))
        run.output_reshards.emplace_back(i, s);
      continue;
    }
    if (st.user[v]) {
      if (moved || !same_layout(st.sh.at(v), s)) run.output_reshards.emplace_back(i, s);
      continue;
    }
    if (moved) run.output_reshards.emplace_back(i, s);
    st.sh[v] = s;
    st.sh[v].memory_kind = aval.memory_kind;
    st.user[v] = true;
  }
}

}  // namespace minijax::prop_detail
