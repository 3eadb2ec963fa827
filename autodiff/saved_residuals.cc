// minijax saved_residuals: traces a function's linearization abstractly and reports, for each
// residual, where it comes from (argument, equation, stacked scan output), its size and memory.
#include "autodiff/saved_residuals.h"

#include <ostream>
#include <unordered_map>

#include "autodiff/linearize.h"
#include "core/pjit.h"
#include "core/primitive.h"
#include "core/views/control_flow.h"
#include "core/views/memory_ops.h"

namespace minijax {
namespace {

// The name a `name` equation of `j` gives to `v` (v is its input: the value was also named,
// e.g. a dot saved by dots_saveable whose output was then named; jax PR #20285), if any.
std::string name_given_to(const Jaxpr& j, const Var& v) {
  for (auto& e : j.eqns)
    if (CheckpointNameParams::is(e) && !e.inputs.empty())
      if (auto* in = std::get_if<Var>(&e.inputs[0]); in && *in == v) return checkpoint_name_params(e).name;
  return "";
}

// The checkpoint_name of a value defined in `j` (looking through device_put), if any: the name
// equation that made it, or else one that names it.
std::string name_in(const Jaxpr& j, const Atom& a, std::string* made_by) {
  auto* v = std::get_if<Var>(&a);
  if (!v) return "";
  for (auto it = j.eqns.rbegin(); it != j.eqns.rend(); ++it)
    for (auto& o : it->outputs)
      if (o == *v) {
        if (made_by && made_by->empty()) *made_by = it->primitive->name;
        if (CheckpointNameParams::is(*it)) return checkpoint_name_params(*it).name;
        if (DevicePutParams::is(*it) && !it->inputs.empty()) {
          std::string n = name_in(j, it->inputs[0], nullptr);
          return n.empty() ? name_given_to(j, *v) : n;
        }
        return name_given_to(j, *v);
      }
  return "";
}

// A residual stacked by scan `e` (its extra output k): one slice per iteration, named after
// the body's checkpoint_name, described by what the slice is per iteration.
void describe_stacked(const Eqn& e, size_t k, SavedResidual& s) {
  s.placement = ResidualPlacement::stacked;
  const ScanParams sp = scan_params(e);
  const Jaxpr& body = *sp.jaxpr->jaxpr;
  std::string inner;
  s.name = name_in(body, body.outvars[k], &inner);
  // What the slice is per iteration, looking through copies between memory kinds (an
  // offloaded carry is a device_put of the carry input).
  Atom root = body.outvars[k];
  std::string copied;
  for (bool moved = true; moved;) {
    moved = false;
    if (auto* rv = std::get_if<Var>(&root))
      for (auto& be : body.eqns)
        if (DevicePutParams::is(be) && be.outputs.size() == 1 && be.outputs[0] == *rv && !be.inputs.empty()) {
          copied = std::string(" copied to ") + memory_kind_name(device_put_params(be).memory_kind);
          root = be.inputs[0];
          moved = true;
          break;
        }
  }
  if (auto* bv = std::get_if<Var>(&root)) {
    const size_t nc = size_t(sp.num_consts);
    const size_t nk = size_t(sp.num_carry);
    for (size_t i = 0; i < body.invars.size(); ++i)
      if (body.invars[i] == *bv) {
        inner = (i < nc ? "a loop constant" : i < nc + nk ? "the carry " + std::to_string(i - nc)
                                                          : "an xs slice") + copied;
        // An iteration's input carry is the previous iteration's output carry: it bears the
        // name given to that output (docs/cases/offload-named-carry.md).
        if (s.name.empty() && i >= nc && i < nc + nk) s.name = name_in(body, body.outvars[i - nc], nullptr);
      }
  }
  s.description = "stacked by scan" + (inner.empty() ? std::string() : " (per iteration: " + inner + ")");
}

// A residual made by an equation of the traced program: `noted` is what partial evaluation
// said of it, if anything (a value hoisted out of a scan is an ordinary equation here; the
// equation naming a residual may have stayed in the loop, or be inside the call returning it).
// JAX's wording (jax.ad_checkpoint.saved_residuals): "named 'N'", "output of jitted function
// 'F'", "output of PRIM".
void describe_computed(const Jaxpr& j, const Var& v, const Eqn& e, size_t k, const ResidualInfo* noted,
                       SavedResidual& s) {
  s.made_by = e.primitive->name;
  if (ScanParams::is(e) && k >= size_t(scan_params(e).num_carry)) {
    describe_stacked(e, k, s);  // an extra stacked output of the forward loop
    return;
  }
  s.name = name_in(j, v, nullptr);
  if (s.name.empty() && noted) s.name = noted->name;
  // The equation that returns it is what JAX names: a jitted call's output is that, even when
  // the value was named inside the call (its name is still reported in `name`).
  if (e.primitive == &pjit_p() && call_params(e).name)
    s.description = "output of jitted function '" + *call_params(e).name + "'";
  else if (!s.name.empty())
    s.description = "named '" + s.name + "' (output of " + s.made_by + ")";
  else
    s.description = "output of " + s.made_by;
  if (noted && noted->placement == ResidualPlacement::hoisted) {
    s.placement = ResidualPlacement::hoisted;
    s.description += ", hoisted out of a loop (computed once, before it)";
  }
}

SavedResidual residual_of(const Atom& a) {
  SavedResidual s;
  s.aval = atom_aval(a);
  s.memory_kind = s.aval.memory_kind;
  s.bytes = shape_size(s.aval.shape) * int64_t(itemsize(s.aval.dtype));
  return s;
}

}  // namespace

namespace detail {
std::string argument_leaf_name(const std::string& arg, const std::string& path) {
  std::string out = arg;
  size_t i = 0;
  while (i < path.size()) {
    size_t dot = path.find('.', i);
    std::string key = path.substr(i, dot == std::string::npos ? std::string::npos : dot - i);
    bool index = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
    out += index ? "[" + key + "]" : "." + key;
    if (dot == std::string::npos) break;
    i = dot + 1;
  }
  return out;
}
}  // namespace detail

SavedResiduals saved_residuals_flat(const FlatFn& f, const std::vector<Array>& args,
                                    const std::vector<std::string>& arg_names, std::source_location loc) {
  std::vector<ShapedArray> avals;
  for (auto& a : args) {
    if (!a.defined())
      throw ValueError("saved_residuals: argument leaf " + std::to_string(avals.size()) +
                           " is an empty (default-constructed) Array",
                       loc);
    avals.push_back(a.aval());
  }
  size_t nout = 0, nres = 0;
  std::vector<std::optional<ResidualInfo>> noted;  // per residual: what partial evaluation noted
  ClosedJaxpr traced = trace_to_jaxpr(
      [&](const std::vector<Array>& xs) {
        ResidualNotes notes;
        LinearizeResult lr = linearize_flat(f, xs, loc);
        nout = lr.primal_outs.size();
        nres = lr.linear.consts.size();
        for (auto& c : lr.linear.consts) {
          const ResidualInfo* i = notes.find(c);
          noted.push_back(i ? std::optional<ResidualInfo>(*i) : std::nullopt);
        }
        std::vector<Array> outs = lr.primal_outs;
        outs.insert(outs.end(), lr.linear.consts.begin(), lr.linear.consts.end());
        return outs;
      },
      avals, loc);
  const Jaxpr& j = *traced.jaxpr;
  // The residual variables, each once, with what partial evaluation noted of it.
  std::unordered_map<Var, const ResidualInfo*, VarHash> res_vars;
  SavedResiduals out;
  for (size_t r = 0; r < nres; ++r) {
    const Atom& a = j.outvars[nout + r];
    if (auto* v = std::get_if<Var>(&a)) {
      res_vars.emplace(*v, noted[r] ? &*noted[r] : nullptr);
      continue;
    }
    SavedResidual s = residual_of(a);
    s.description = "from a literal";
    out.items.push_back(s);
  }
  for (const Var& v : j.constvars) {
    if (!res_vars.count(v)) continue;
    // A value f closes over: passed through, like an argument, never copied
    // (docs/cases/grad-of-scan-memory.md: z forwarded as a loop constant).
    SavedResidual s = residual_of(v);
    s.placement = ResidualPlacement::forwarded;
    s.description = "from a constant";
    out.items.push_back(s);
  }
  for (size_t i = 0; i < j.invars.size(); ++i) {
    if (!res_vars.count(j.invars[i])) continue;
    SavedResidual s = residual_of(j.invars[i]);
    s.placement = ResidualPlacement::forwarded;
    s.argument = int(i);
    s.description = i < arg_names.size() ? "from the argument " + arg_names[i]
                                         : "from the argument at flattened index " + std::to_string(i);
    out.items.push_back(s);
  }
  for (const Eqn& e : j.eqns)
    for (size_t k = 0; k < e.outputs.size(); ++k) {
      auto it = res_vars.find(e.outputs[k]);
      if (it == res_vars.end()) continue;
      SavedResidual s = residual_of(e.outputs[k]);
      describe_computed(j, e.outputs[k], e, k, it->second, s);
      out.items.push_back(s);
    }
  return out;
}

std::ostream& operator<<(std::ostream& os, const SavedResidual& r) {
  ShapedArray plain = r.aval;
  plain.memory_kind = MemoryKind::device;
  os << plain.str() << " " << residual_placement_name(r.placement) << " " << memory_kind_name(r.memory_kind)
     << " " << r.bytes << " bytes";
  // The description of a computed value starts with its name already (JAX's wording).
  const std::string named = "named '" + r.name + "'";
  if (!r.name.empty() && r.description.rfind(named, 0) != 0) os << " " << named;
  return os << " " << r.description;
}

std::ostream& operator<<(std::ostream& os, const SavedResiduals& rs) {
  for (auto& r : rs) os << r << "\n";
  return os;
}

}  // namespace minijax
