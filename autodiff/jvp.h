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
class JVPTrace final : public Trace {
 public:
  std::string name() const override { return "JVPTrace"; }
  Array lift(const Array& x) override;
  std::vector<Array> process_primitive(const Primitive& p, const std::vector<Array>& in,
                                       const Params& params, std::source_location loc) override;
};

/// The primal and tangent of x seen from trace t (x itself with a zero tangent if x is not a
/// tracer of t).
std::pair<Array, Array> jvp_unpack(const Trace& t, const Array& x);

/// Forward-mode derivative of a flat function: (f(primals), df(primals)·tangents). Tangents must
/// have the tangent avals of the primals (TypeError otherwise; an empty Array is a zero tangent).
/// Output tangents that are symbolic zeros are returned as empty Arrays.
std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(
    const FlatFn& f, const std::vector<Array>& primals, const std::vector<Array>& tangents,
    std::source_location loc = std::source_location::current());

/// Materializes a symbolic zero: t if defined, else zeros of the tangent aval of `primal_aval`.
Array instantiate_zero(const Array& t, const ShapedArray& primal_aval);

}  // namespace minijax
