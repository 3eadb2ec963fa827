// minijax staging: the trace that records operations into a jaxpr (JAX's DynamicJaxprTrace),
// trace_to_jaxpr over flat arrays, and eval_jaxpr. Owns closure conversion of captured values.
#pragma once
#include <functional>
#include <memory>
#include <source_location>
#include <unordered_map>
#include <vector>

#include "core/jaxpr.h"
#include "core/trace.h"

namespace minijax {

/// A value being staged: its aval and the jaxpr variable that will hold it.
class JaxprTracer final : public Tracer {
 public:
  JaxprTracer(std::shared_ptr<Trace> t, Var v) : Tracer(std::move(t)), var_(std::move(v)) {}
  const ShapedArray& aval() const override { return var_.aval(); }
  const Var& var() const { return var_; }

 private:
  Var var_;
};

/// Records every primitive applied to its tracers as an equation. Values of lower levels used by
/// the traced function (concrete arrays, tracers of enclosing traces) become constvars — or
/// literals, for concrete rank-0 values.
class JaxprTrace final : public Trace {
 public:
  std::string name() const override { return "JaxprTrace"; }
  Array lift(const Array& x) override;
  std::vector<Array> process_primitive(const Primitive& p, const std::vector<Array>& in,
                                       const Params& params, std::source_location loc) override;
  /// A fresh input variable of the jaxpr being built.
  Array new_arg(const ShapedArray& aval);
  /// Appends an equation with precomputed output avals (for rules that build equations directly).
  std::vector<Array> add_eqn(const Primitive& p, const std::vector<Array>& in, const Params& params,
                             const std::vector<ShapedArray>& out_avals);
  /// The jaxpr with `ins` as invars and `outs` (tracers of this trace, or lower-level values,
  /// which are lifted) as outvars; only the constvars the equations use are kept.
  ClosedJaxpr to_jaxpr(const std::vector<Array>& ins, const std::vector<Array>& outs,
                       std::source_location loc);
  /// Drops the lifted-constant tracers (they reference this trace: a cycle otherwise).
  void release() override;

 private:
  Atom atom_of(const Array& tracer_of_this);
  std::vector<Eqn> eqns_;
  std::vector<Var> constvars_;
  std::vector<Array> consts_;
  std::unordered_map<const ArrayImpl*, Array> const_tracers_;  // lifted value -> tracer
  std::unordered_map<const ArrayImpl*, Array> const_values_;   // tracer -> lifted value
};

/// Flat function over arrays, as the transformations see user functions after flattening.
using FlatFn = std::function<std::vector<Array>(const std::vector<Array>&)>;

/// Traces f on fresh tracers of the given avals into a closed jaxpr. With dynamic = true (jit,
/// make_jaxpr, loop bodies) every operation is staged, including those on constants; values the
/// function closes over become constvars. Throws what f throws.
ClosedJaxpr trace_to_jaxpr(const FlatFn& f, const std::vector<ShapedArray>& in_avals,
                           std::source_location loc = std::source_location::current());

/// Evaluates a jaxpr by binding each equation on the current traces (so it runs eagerly, is
/// staged under jit, and is differentiated under grad). consts and args must match the
/// jaxpr's constvars and invars (ShapeError otherwise).
std::vector<Array> eval_jaxpr(const Jaxpr& j, const std::vector<Array>& consts,
                              const std::vector<Array>& args,
                              std::source_location loc = std::source_location::current());
std::vector<Array> eval_jaxpr(const ClosedJaxpr& j, const std::vector<Array>& args,
                              std::source_location loc = std::source_location::current());
/// eval_jaxpr where every equation is processed at least at the level of trace `floor`: an
/// equation whose inputs are all constants or values of lower levels is staged into `floor`
/// (when it is a staging trace) instead of being evaluated below it. Used to evaluate the staged
/// half of a split JVP on the tangent trace, so constant-only equations (zeros, iotas) are
/// recomputed inside the linear jaxpr rather than captured as array constants.
std::vector<Array> eval_jaxpr_at(const Jaxpr& j, const std::vector<Array>& consts,
                                 const std::vector<Array>& args, const std::shared_ptr<Trace>& floor,
                                 std::source_location loc = std::source_location::current());

}  // namespace minijax
