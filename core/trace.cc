// minijax trace stack and bind.
// Owns the per-thread stack, the dynamic trace, the eval trace and raising values between levels.
#include "core/trace.h"

#include "core/collective_params.h"
#include "core/collectives.h"
#include "core/config.h"
#include "core/errors.h"
#include "core/float_checks.h"
#include "core/trace_cache.h"

namespace minijax {

namespace {
struct StackState {
  std::vector<std::shared_ptr<Trace>> stack;
  std::vector<std::shared_ptr<Trace>> dynamic_stack;
};
StackState& state() {
  thread_local StackState s = [] {
    StackState st;
    auto ev = std::make_shared<EvalTrace>();
    st.stack.push_back(ev);
    st.dynamic_stack.push_back(ev);
    return st;
  }();
  return s;
}
}  // namespace

void TraceStack::push(const std::shared_ptr<Trace>& t, bool dynamic) {
  auto& s = state();
  t->level_ = int(s.stack.size());
  t->alive_ = true;
  s.stack.push_back(t);
  if (dynamic) s.dynamic_stack.push_back(t);
}

void TraceStack::pop(const std::shared_ptr<Trace>& t) {
  auto& s = state();
  if (s.stack.back() == t) s.stack.pop_back();
  if (s.dynamic_stack.back() == t) s.dynamic_stack.pop_back();
  t->alive_ = false;
  t->release();
}

const std::shared_ptr<Trace>& TraceStack::dynamic() { return state().dynamic_stack.back(); }
const std::shared_ptr<Trace>& TraceStack::eval() { return state().stack.front(); }
int TraceStack::depth() { return int(state().stack.size()); }

void check_trace_depth(std::source_location loc) {
  const int max_depth = config().max_trace_depth;
  if (max_depth < 1)
    throw ValueError("config().max_trace_depth is " + std::to_string(max_depth) +
                         ": the most nested levels of tracing must be >= 1",
                     loc);
  const int open = TraceStack::depth() - 1;  // traces open on this thread, the eval trace aside
  if (open >= max_depth)
    throw ValueError("tracing nested " + std::to_string(open + 1) +
                         " levels deep: beyond config().max_trace_depth = " + std::to_string(max_depth) +
                         " (a traced function that calls closed_call, jit, checkpoint, scan, cond or a "
                         "transformation of itself without end?)",
                     loc);
}

namespace detail {
// Declared in core/trace_cache.h (the context of a trace cache's key); defined here, beside the stack.
std::shared_ptr<Trace> innermost_trace() {
  auto& s = state();
  return s.stack.size() > 1 ? s.stack.back() : nullptr;
}
}  // namespace detail

static void check_alive(const Tracer* tr, std::source_location loc) {
  if (!tr->trace()->alive())
    throw UnexpectedTracerError(
        "a tracer of a finished " + tr->trace()->name() + " (" + tr->aval().str() +
            ") was used outside the transformation that created it: a value computed inside "
            "grad/jit/make_jaxpr/vmap escaped (stored in a global or captured by reference)",
        loc);
}

std::shared_ptr<Trace> find_top_trace(const std::vector<Array>& args, std::source_location loc) {
  std::shared_ptr<Trace> top = TraceStack::dynamic();
  for (const auto& a : args) {
    if (!a.defined())
      throw ValueError("an operand is an empty Array (default-constructed)", loc);
    if (auto* tr = a.tracer()) {
      check_alive(tr, loc);
      if (tr->trace()->level() > top->level()) top = tr->trace();
    }
  }
  return top;
}

Array full_raise(Trace& t, const Array& x, std::source_location loc) {
  if (auto* tr = x.tracer()) {
    check_alive(tr, loc);
    if (tr->trace().get() == &t) return x;
    if (tr->trace()->level() > t.level())
      throw UnexpectedTracerError("a tracer of " + tr->trace()->name() + " at level " +
                                      std::to_string(tr->trace()->level()) +
                                      " cannot be used by the enclosing " + t.name(),
                                  loc);
  }
  return t.lift(x);
}

std::vector<Array> EvalTrace::process_primitive(const Primitive& p, const std::vector<Array>& in,
                                                const Params& params, std::source_location loc) {
  std::vector<ShapedArray> avals;
  avals.reserve(in.size());
  for (const auto& a : in) avals.push_back(a.aval());
  auto out_avals = abstract_eval(p, avals, params, loc);
  if (!p.impl) throw ValueError("primitive '" + p.name + "' has no eager implementation", loc);
  if (is_collective(p.name)) detail::refuse_eager_collective(p.name, params, loc);
  std::vector<Array> conc;
  conc.reserve(in.size());
  for (const auto& a : in) conc.push_back(a.concrete(loc));
  try {
    std::vector<Array> outs = p.impl(conc, params, out_avals);
    if (detail::float_checks_on()) detail::check_primitive_outputs(p, avals, outs, loc);
    return outs;
  } catch (const Error& e) {
    // An error from inside the implementation (an allocation beyond a memory limit, a donated
    // buffer) names the user's call and the primitive, not the library line that found it.
    if (!detail::is_library_location(e.where()) || detail::is_library_location(loc)) throw;
    const bool named = e.message().rfind(p.name, 0) == 0;
    detail::rethrow_at(e, named ? std::string() : p.name + ": ", loc);
    throw;
  }
}

std::vector<Array> bind(const Primitive& p, const std::vector<Array>& args, const Params& params,
                        std::source_location loc) {
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i].defined())
      throw ValueError(p.name + ": operand " + std::to_string(i) + " is an empty (default-constructed) Array", loc);
  auto top = find_top_trace(args, loc);
  std::vector<Array> raised;
  raised.reserve(args.size());
  for (const auto& a : args) raised.push_back(full_raise(*top, a, loc));
  return top->process_primitive(p, raised, params, loc);
}

Array bind1(const Primitive& p, const std::vector<Array>& args, const Params& params,
            std::source_location loc) {
  auto r = minijax::bind(p, args, params, loc);
  return r.at(0);
}

Array bind1(const std::string& name, const std::vector<Array>& args, const Params& params,
            std::source_location loc) {
  const Primitive* p = nullptr;
  try {
    p = &primitive(name);
  } catch (const ValueError& e) {
    throw ValueError("bind1: " + e.message(), loc);
  }
  return bind1(*p, args, params, loc);
}

}  // namespace minijax
