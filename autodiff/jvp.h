// minijax forward-mode autodiff: the JVP trace (JAX's JVPTrace) and the flat jvp engine.
// Owns JVPTracer (primal, tangent with symbolic zeros) and jvp_flat.
#pragma once
#include <source_location>
#include <utility>
#include <vector>

#include "core/staging.h"
#include "core/trace.h"

namespace minijax {

/// A value under forward-mode differentiation: its primal and its tangent (an empty Array is a
/// symbolic zero, never materialized unless a rule needs it).
class JVPTracer final : public Tracer {
 public:
  JVPTracer(std::shared_ptr<Trace> t, Array primal, Array tangent)
      : Tracer(std::move(t)), primal_(std::move(primal)), tangent_(std::move(tangent)) {}
  const ShapedArray& aval() const override { return primal_.aval(); }
  const Array& primal() const { return primal_; }
  const Array& tangent() const { return tangent_; }
  /// Eager grad keeps primals concrete: user code may branch on them.
  std::optional<Array> concrete_value() const override { return primal_; }
  std::string describe() const override;

 private:
  Array primal_, tangent_;
};

/// Pushes primitives through their JVP rules (Autodidax's JVPTrace). Operations whose input
/// tangents are all zero are bound on the primals only, with zero output tangents.
///
/// An *unsplit* trace is one whose primals and tangents are all staged into one jaxpr (the JVP
/// of a checkpoint's body, traced by its JVP rule): there the rules of the primitives with
/// bodies (scan, cond, while, pjit, closed_call, checkpoint) bind one equation over the JVP of
/// their body, as JAX's jvp_jaxpr does, instead of splitting it into a known and a staged half
/// at once. Partial evaluation then splits that jaxpr under the checkpoint's policy, which so
/// reaches the equations inside the loops, branches and calls (JAX's _scan_partial_eval_custom
/// and call_partial_eval_custom_rule receive `saveable`). A split trace (linearize's, jvp's)
/// keeps primals on their own trace, which is what lets eager grad read concrete primals.
class JVPTrace final : public Trace {
 public:
  explicit JVPTrace(bool unsplit = false) : unsplit_(unsplit) {}
  std::string name() const override { return "JVPTrace"; }
  bool unsplit() const { return unsplit_; }
  Array lift(const Array& x) override;
  std::vector<Array> process_primitive(const Primitive& p, const std::vector<Array>& in,
                                       const Params& params, std::source_location loc) override;

 private:
  bool unsplit_;
};

namespace detail {
/// True while a JVP rule runs on behalf of an unsplit JVPTrace (see JVPTrace), on this thread:
/// the rules of primitives with bodies then bind one equation over their body's JVP. A rule that
/// traces its body's JVP (jvp_flat) gives the body's trace the same mode.
bool jvp_rules_unsplit();
}  // namespace detail

/// The primal and tangent of x seen from trace t (x itself with a zero tangent if x is not a
/// tracer of t).
std::pair<Array, Array> jvp_unpack(const Trace& t, const Array& x);

/// Forward-mode derivative of a flat function: (f(primals), df(primals)·tangents). Tangents must
/// have the tangent avals of the primals (TypeError otherwise; an empty Array is a zero tangent).
/// Output tangents that are symbolic zeros are returned as empty Arrays. The JVP trace is unsplit
/// when called from a rule of an unsplit trace (detail::jvp_rules_unsplit()), split otherwise.
std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(
    const FlatFn& f, const std::vector<Array>& primals, const std::vector<Array>& tangents,
    std::source_location loc = std::source_location::current());

namespace detail {
/// jvp_flat on an unsplit JVP trace: every primitive with a body binds one equation over its
/// body's JVP. For rules that trace a body's JVP into a jaxpr that partial evaluation will split
/// under a policy (checkpoint's JVP rule). `primals` and `tangents` must be tracers of one
/// jaxpr trace (or constants): the primal outputs may be staged with the tangents.
std::pair<std::vector<Array>, std::vector<Array>> jvp_flat_unsplit(const FlatFn& f,
                                                                   const std::vector<Array>& primals,
                                                                   const std::vector<Array>& tangents);
}  // namespace detail

/// Materializes a symbolic zero: t if defined, else zeros of the tangent aval of `primal_aval`.
Array instantiate_zero(const Array& t, const ShapedArray& primal_aval);

}  // namespace minijax
