// minijax forward-mode autodiff: JVPTrace and jvp_flat.
// Owns the dispatch to per-primitive JVP rules and the symbolic-zero shortcut.
#include "autodiff/jvp.h"

#include "core/lax.h"
#include "core/lax_params.h"

namespace minijax {

namespace {
// The JVP trace whose rule is running on this thread (innermost), or nullptr.
thread_local const JVPTrace* rule_trace = nullptr;

struct RuleTraceScope {
  const JVPTrace* saved;
  explicit RuleTraceScope(const JVPTrace* t) : saved(rule_trace) { rule_trace = t; }
  ~RuleTraceScope() { rule_trace = saved; }
  RuleTraceScope(const RuleTraceScope&) = delete;
  RuleTraceScope& operator=(const RuleTraceScope&) = delete;
};

std::pair<std::vector<Array>, std::vector<Array>> jvp_flat_mode(const FlatFn& f,
                                                                const std::vector<Array>& primals,
                                                                const std::vector<Array>& tangents,
                                                                bool unsplit, std::source_location loc);
}  // namespace

namespace detail {
bool jvp_rules_unsplit() { return rule_trace && rule_trace->unsplit(); }
}  // namespace detail

std::string JVPTracer::describe() const {
  return "a JVP tracer " + aval().str();
}

Array JVPTrace::lift(const Array& x) {
  return Array(std::make_shared<JVPTracer>(shared_from_this(), x, Array()));
}

std::pair<Array, Array> jvp_unpack(const Trace& t, const Array& x) {
  if (auto* tr = x.tracer(); tr && tr->trace().get() == &t) {
    auto* j = static_cast<JVPTracer*>(tr);
    return {j->primal(), j->tangent()};
  }
  return {x, Array()};
}

std::vector<Array> JVPTrace::process_primitive(const Primitive& p, const std::vector<Array>& in,
                                               const Params& params, std::source_location loc) {
  std::vector<Array> primals, tangents;
  bool any_nonzero = false;
  for (auto& x : in) {
    auto [pr, tg] = jvp_unpack(*this, x);
    primals.push_back(pr);
    tangents.push_back(tg);
    any_nonzero |= tg.defined();
  }
  if (!any_nonzero) return minijax::bind(p, primals, params, loc);
  if (!p.jvp) {
    throw NotDifferentiableError(
        "primitive '" + p.name + "' has no JVP rule" +
            (p.no_jvp_reason.empty() ? std::string() : " (" + p.no_jvp_reason + ")"),
        loc);
  }
  // Shape and dtype errors are reported at the user's call site before the rule runs (the
  // rule's own binds would otherwise report the rule's file).
  {
    std::vector<ShapedArray> avals;
    for (auto& x : primals) avals.push_back(x.aval());
    abstract_eval(p, avals, params, loc);
  }
  auto [pouts, touts] = [&] {
    RuleTraceScope running(this);
    return p.jvp(primals, tangents, params);
  }();
  std::vector<Array> outs;
  outs.reserve(pouts.size());
  auto self = shared_from_this();
  for (size_t i = 0; i < pouts.size(); ++i) {
    Array t = i < touts.size() ? touts[i] : Array();
    if (t.defined() && !is_floating(pouts[i].dtype())) t = Array();
    outs.push_back(Array(std::make_shared<JVPTracer>(self, pouts[i], t)));
  }
  return outs;
}

Array instantiate_zero(const Array& t, const ShapedArray& primal_aval) {
  if (t.defined()) return t;
  return lax::zeros_like_aval(tangent_aval(primal_aval));
}

std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const FlatFn& f,
                                                           const std::vector<Array>& primals,
                                                           const std::vector<Array>& tangents,
                                                           std::source_location loc) {
  return jvp_flat_mode(f, primals, tangents, detail::jvp_rules_unsplit(), loc);
}

namespace detail {
std::pair<std::vector<Array>, std::vector<Array>> jvp_flat_unsplit(const FlatFn& f,
                                                                   const std::vector<Array>& primals,
                                                                   const std::vector<Array>& tangents) {
  return jvp_flat_mode(f, primals, tangents, true, std::source_location::current());
}
}  // namespace detail

namespace {
std::pair<std::vector<Array>, std::vector<Array>> jvp_flat_mode(const FlatFn& f,
                                                                const std::vector<Array>& primals,
                                                                const std::vector<Array>& tangents,
                                                                bool unsplit, std::source_location loc) {
  if (primals.size() != tangents.size())
    throw TypeError("jvp: " + std::to_string(primals.size()) + " primals but " +
                        std::to_string(tangents.size()) + " tangents",
                    loc);
  for (size_t i = 0; i < primals.size(); ++i) {
    if (!tangents[i].defined()) continue;
    ShapedArray want = tangent_aval(primals[i].aval());
    const ShapedArray& got = tangents[i].aval();
    if (got.shape != want.shape || got.dtype != want.dtype || got.memory_kind != want.memory_kind)
      throw TypeError("jvp: primal " + std::to_string(i) + " is " + primals[i].aval().str() +
                          " so its tangent must be " + want.str() + ", got " + got.str(),
                      loc);
  }
  TraceScope<JVPTrace> scope(/*dynamic=*/false, unsplit);
  std::vector<Array> ins;
  ins.reserve(primals.size());
  for (size_t i = 0; i < primals.size(); ++i) {
    Array t = is_floating(primals[i].dtype()) ? tangents[i] : Array();
    ins.push_back(Array(std::make_shared<JVPTracer>(scope.get(), primals[i], t)));
  }
  std::vector<Array> outs = f(ins);
  std::vector<Array> pouts, touts;
  for (auto& o : outs) {
    auto [p, t] = jvp_unpack(*scope, o);
    pouts.push_back(p);
    touts.push_back(t);
  }
  return {pouts, touts};
}
}  // namespace

}  // namespace minijax
