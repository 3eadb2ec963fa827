// minijax batch trace (JAX's BatchTrace): the tracer and trace vmap pushes primitives through, and
// what batching rules use of it. Owns BatchTracer, BatchTrace, batch_unpack and batch_body_at_front.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "core/jaxpr.h"
#include "core/primitive.h"
#include "core/trace.h"

namespace minijax {

/// A value under vmap: the batched value `val` whose dimension `batch_dim` is the batch axis
/// (kNotMapped: the same value for every batch element). Its aval is val's aval without the
/// batch dimension — what the mapped function sees.
class BatchTracer final : public Tracer {
 public:
  BatchTracer(std::shared_ptr<Trace> t, Array val, int64_t batch_dim);
  const ShapedArray& aval() const override { return aval_; }
  const Array& val() const { return val_; }
  int64_t batch_dim() const { return batch_dim_; }
  /// An unmapped value's concrete value (if its value is concrete); batched values have none.
  std::optional<Array> concrete_value() const override;
  std::string describe() const override;

 private:
  Array val_;
  int64_t batch_dim_;
  ShapedArray aval_;
};

/// Pushes primitives through their batching rules (Autodidax's BatchTrace). An operation with no
/// batched input is bound on the plain values (so it runs on the enclosing trace), and outputs a
/// rule reports as unbatched are returned as plain values (JAX's full_lower).
class BatchTrace final : public Trace {
 public:
  explicit BatchTrace(int64_t axis_size) : axis_size_(axis_size) {}
  std::string name() const override { return "BatchTrace"; }
  int64_t axis_size() const { return axis_size_; }
  /// An unbatched tracer (batch dim kNotMapped) around x.
  Array lift(const Array& x) override;
  /// Checks the element avals with p's shape rule (errors name p and the call site), then calls
  /// p.batch. Throws ValueError if p has no batching rule (with its no_batch_reason if declared).
  std::vector<Array> process_primitive(const Primitive& p, const std::vector<Array>& in,
                                       const Params& params, std::source_location loc) override;

 private:
  int64_t axis_size_;
};

/// The batched value and batch dim of x as seen from trace t: (val, dim) of a BatchTracer of t,
/// (x, kNotMapped) for anything else.
std::pair<Array, int64_t> batch_unpack(const Trace& t, const Array& x);

/// The body of a primitive with a body (pjit, checkpoint, ...) batched for its batching rule:
/// the batched arguments' batch dims are moved to 0, the body is vmapped over them (outputs
/// batched at 0) and traced. Returns the traced jaxpr with its constvars turned into leading
/// invars, and the operands to call it with ([its constants..., the moved args...]).
/// Throws ValueError as vmap_flat for inconsistent batch sizes.
std::pair<Jaxpr, std::vector<Array>> batch_body_at_front(const ClosedJaxprPtr& body,
                                                         const std::vector<Array>& args,
                                                         const std::vector<int64_t>& dims);

}  // namespace minijax
