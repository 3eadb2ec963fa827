// minijax resharding API: reshard_plan overloads, the static traffic model of collective
// equations (run_spmd's), and the annotated printing of SPMD programs.
#include "sharding/reshard_api.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>

#include "core/bodies.h"
#include "core/collective_params.h"
#include "core/errors.h"
#include "core/params.h"
#include "core/primitive.h"
#include "core/views/array_ops.h"
#include "core/views/collectives.h"
#include "core/views/control_flow.h"
#include "sharding/collective_groups.h"
#include "sharding/collective_traffic.h"

namespace minijax {

ReshardPlan reshard_plan(const NamedSharding& src, const NamedSharding& dst, const ShapedArray& aval,
                         std::source_location loc) {
  const int64_t rank = int64_t(aval.shape.size());
  auto convert = [&](const NamedSharding& ns, const char* which) {
    try {
      return to_sharding(ns, rank, loc);
    } catch (const ShardingError& e) {  // name the array's shape (the spec is in e)
      throw ShardingError(std::string("reshard_plan of a ") + aval.str() + " array, " + which + ": " +
                              e.message(),
                          loc);
    }
  };
  return plan_reshard(convert(src, "source"), convert(dst, "target"), aval, loc);
}

ReshardPlan reshard_plan(const Sharding& src, const Sharding& dst, const ShapedArray& aval,
                         std::source_location loc) {
  return plan_reshard(src, dst, aval, loc);
}

namespace {

// The per-rank rows of an i32 value defined as reshape(dynamic_slice(T, rank, 0)) with T a
// constvar of known value and rank = axis_index over `axes`; nullopt for anything else.
std::optional<std::vector<std::vector<int64_t>>> table_rows(const Jaxpr& j, const Atom& a,
                                                            const std::vector<Array>& consts,
                                                            const AxisNames& axes) {
  Var v = atom_var(a);
  std::unordered_map<uint64_t, const Eqn*> def;
  for (auto& e : j.eqns)
    for (auto& o : e.outputs) def[o.id()] = &e;
  auto producer = [&](const Var& x) -> const Eqn* {
    auto it = x.defined() ? def.find(x.id()) : def.end();
    return it == def.end() ? nullptr : it->second;
  };
  const Eqn* e = producer(v);
  while (e && ReshapeParams::is(*e)) e = producer(atom_var(e->inputs[0]));
  if (!e || !DynamicSliceParams::is(*e) || e->inputs.size() != 3) return std::nullopt;
  const Eqn* idx = producer(atom_var(e->inputs[1]));
  if (!idx || !CollectiveParams::is(*idx, CollectiveParams::Kind::axis_index) ||
      collective_params(*idx).axis_name != axes)
    return std::nullopt;
  Var t = atom_var(e->inputs[0]);
  for (size_t k = 0; k < j.constvars.size() && k < consts.size(); ++k) {
    if (!t.defined() || j.constvars[k].id() != t.id()) continue;
    const Array& T = consts[k];
    if (T.ndim() != 2 || T.dtype() != DType::i32) return std::nullopt;
    std::vector<std::vector<int64_t>> rows(size_t(T.shape()[0]));
    for (int64_t r = 0; r < T.shape()[0]; ++r)
      for (int64_t c = 0; c < T.shape()[1]; ++c) rows[size_t(r)].push_back(T.data<int32_t>()[r * T.shape()[1] + c]);
    return rows;
  }
  return std::nullopt;
}

std::string range(const std::vector<int64_t>& v, const char* unit) {
  if (v.empty()) return std::string("0") + unit;
  const int64_t lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
  return (lo == hi ? std::to_string(hi) : std::to_string(lo) + ".." + std::to_string(hi)) + unit;
}

void annotate(const Jaxpr& j, const std::vector<Array>& consts, const Mesh& mesh, const std::string& where,
              std::ostream& os) {
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    const std::string here = where.empty() ? "eqn " + std::to_string(i) : where;
    const std::string& name = e.primitive->name;
    // Bodies: the collectives of each (a loop body's once, for one iteration; each cond branch).
    std::string label = here + " " + name;
    if (is_pjit(*e.primitive) || is_closed_call(*e.primitive))  // a named call adds its name
      if (auto n = call_params(e).name) label += " " + *n;
    auto body = [&](const ClosedJaxprPtr& b, const std::string& which) {
      annotate(*b->jaxpr, b->consts, mesh, label + which + " /", os);
    };
    if (e.primitive->body_form != BodyForm::none) {
      for (const SubJaxpr& s : subjaxprs(e))
        body(s.jaxpr, e.primitive->body_form == BodyForm::while_loop ? " " + s.param
                      : s.in_list                                    ? " branch " + std::to_string(s.index)
                                                                     : "");
      continue;
    }
    if (auto t = collective_traffic(j, i, consts, mesh)) os << collective_line(here, *t);
  }
}

}  // namespace

std::string collective_line(const std::string& where, const CollectiveTraffic& t) {
  std::string s = where + " " + t.primitive + " over " + param_to_string(axis_name_param(t.axes)) + ": ";
  if (!t.known) return s + "sizes computed at run time\n";
  s += range(t.bytes_sent, " B") + " sent, " + range(t.bytes_received, " B") + " received per device";
  if (!t.messages_received.empty() && !t.messages_sent.empty())
    s += ", " + range(t.messages_received, " msgs in") + ", " + range(t.messages_sent, " msgs out");
  return s + "\n";
}

std::optional<CollectiveTraffic> collective_traffic(const Jaxpr& j, size_t i, const std::vector<Array>& consts,
                                                    const Mesh& mesh) {
  const Eqn& e = j.eqns.at(i);
  using Kind = CollectiveParams::Kind;
  const std::optional<Kind> kind = CollectiveParams::kind_of(e);
  if (!kind || *kind == Kind::axis_index) return std::nullopt;
  const CollectiveParams c = collective_params(e);
  CollectiveTraffic t;
  t.primitive = e.primitive->name;
  t.axes = c.axis_name;
  const CollectiveGroups groups = collective_groups(mesh, t.axes);
  const int64_t n = groups.size;
  const std::vector<int64_t>& rank = groups.rank;
  const size_t devs = mesh.num_devices();
  t.bytes_sent.assign(devs, 0);
  t.bytes_received.assign(devs, 0);
  t.messages_sent.assign(devs, 0);
  t.messages_received.assign(devs, 0);
  const ShapedArray& a = atom_aval(e.inputs.at(0));
  const int64_t item = int64_t(itemsize(a.dtype)), b = a.nbytes();
  for (size_t p = 0; p < devs; ++p) {
    const int64_t r = rank[p];
    int64_t sb = 0, rb = 0, sm = 0, rm = 0;
    if (c.kind == Kind::all_gather) {
      sb = rb = (n - 1) * b;
      sm = rm = b > 0 ? n - 1 : 0;
    } else if (c.kind == Kind::reduce_scatter || c.kind == Kind::all_to_all) {
      sb = rb = (n - 1) * (b / n);
      sm = rm = b / n > 0 ? n - 1 : 0;
    } else if (c.kind == Kind::all_reduce) {
      const auto pieces = all_reduce_pieces(a.shape, n);
      const int64_t mine = pieces[size_t(r)];
      if (a.shape.empty()) {
        sb = rb = (n - 1) * b;
        sm = rm = n - 1;
      } else {
        sb = rb = ((n - 1) * mine + (a.size() - mine)) * item;
        int64_t others = 0;
        for (int64_t k = 0; k < n; ++k) others += k != r && pieces[size_t(k)] > 0;
        sm = rm = (mine > 0 ? n - 1 : 0) + others;
      }
    } else if (c.kind == Kind::collective_permute) {
      const auto& st = c.source_target_pairs;
      for (size_t k = 0; k + 1 < st.size(); k += 2) {
        if (st[k] == st[k + 1]) continue;
        if (st[k] == r) sb += b, ++sm;
        if (st[k + 1] == r) rb += b, ++rm;
      }
    } else {  // ragged_all_to_all
      auto send = table_rows(j, e.inputs.at(3), consts, t.axes);
      auto recv = table_rows(j, e.inputs.at(5), consts, t.axes);
      if (!send || !recv || int64_t(send->size()) != n || int64_t(recv->size()) != n) {
        t.known = false;
        return t;
      }
      int64_t row = item;
      for (size_t d = 1; d < a.shape.size(); ++d) row *= a.shape[d];
      for (int64_t k = 0; k < n; ++k) {
        if (k == r) continue;
        const int64_t s = (*send)[size_t(r)][size_t(k)], g = (*recv)[size_t(r)][size_t(k)];
        sb += s * row, sm += s > 0;
        rb += g * row, rm += g > 0;
      }
    }
    t.bytes_sent[p] = sb;
    t.bytes_received[p] = rb;
    t.messages_sent[p] = sm;
    t.messages_received[p] = rm;
  }
  return t;
}

std::string spmd_collectives_text(const Jaxpr& program, const Mesh& mesh) {
  std::ostringstream os;
  annotate(program, {}, mesh, "", os);
  return os.str();
}

std::string spmd_as_text(const Jaxpr& program, const Mesh& mesh) {
  return to_string(program) + "\ncollectives on " + mesh.str() + " (run_spmd's traffic model):\n" +
         spmd_collectives_text(program, mesh);
}

}  // namespace minijax
