// minijax primitives: the registry of primitives and the rule tables each layer fills.
// Owns Primitive, the rule signatures (shape, impl, jvp, transpose, batching) and lookup.
#pragma once
#include <functional>
#include <limits>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "core/array.h"
#include "core/jaxpr.h"
#include "core/params.h"

namespace minijax {

/// Output avals from input avals. Throws ShapeError/TypeError/ValueError with a plain message;
/// abstract_eval() adds the primitive, the operand avals and the call site.
using ShapeRule = std::function<std::vector<ShapedArray>(const std::vector<ShapedArray>&, const Params&)>;
/// Eager implementation on concrete arrays; out_avals are the shape rule's result.
using ImplRule = std::function<std::vector<Array>(const std::vector<Array>& args, const Params&,
                                                  const std::vector<ShapedArray>& out_avals)>;
/// JVP: (primals, tangents) -> (primal outs, tangent outs). An empty Array tangent is a symbolic
/// zero (in and out). Called only when some input tangent is nonzero.
using JvpRule = std::function<std::pair<std::vector<Array>, std::vector<Array>>(
    const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params&)>;
/// Transpose of a linear primitive: cotangents of the outputs (empty = zero) and the inputs
/// (empty Array = the linear, undefined input; its aval is in `avals`) -> cotangent per input
/// (empty = zero, or not linear).
using TransposeRule = std::function<std::vector<Array>(
    const std::vector<Array>& cts_out, const std::vector<Array>& args,
    const std::vector<ShapedArray>& avals, const Params&)>;
/// Batching (vmap): values with their batch dimension (kNotMapped if unbatched) -> outputs and
/// their batch dimensions.
using BatchRule = std::function<std::pair<std::vector<Array>, std::vector<int64_t>>(
    const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params&)>;
/// Batch dimension of an unbatched value (distinct from every axis, so -1 can mean "last axis").
inline constexpr int64_t kNotMapped = std::numeric_limits<int64_t>::min();
/// Dead-code elimination of one equation (JAX's pe.dce_rules): which of its outputs are used ->
/// which of its inputs are used, and the pruned equation (nullopt: drop the equation). Primitives
/// without a rule keep an equation whole if any output is used or it has effects (core/dce.h).
using DceRule = std::function<std::pair<std::vector<bool>, std::optional<Eqn>>(
    const std::vector<bool>& used_outputs, const Eqn& eqn)>;

/// How a primitive's outputs relate to its operands, for the compiler's fusion (jit/passes/fuse.h):
/// `elementwise`: out[i] = f(ins[i]) with rank-0 operands combining with any shape (lax's scalar
/// rule); `index_map`: each output element is an operand element at a computed index, or a value
/// computed from the index (broadcast_in_dim, transpose, slice, iota, gather...); `reduction`:
/// reduce_* and argmax/argmin over static axes; `other`: everything else (never fused).
enum class OpClass { other, elementwise, index_map, reduction };

/// What cost_analysis (jit/passes/cost_analysis.h) counts for one equation of the primitive.
enum class CostClass {
  unset,           ///< not declared: the registry-wide test (tests/jit/test_fuse.cc) fails
  arithmetic,      ///< one flop per output element and output (add, mul, compare, select...)
  transcendental,  ///< one transcendental per output element (exp, sin, sqrt, pow...)
  reduction,       ///< operand size minus output size flops (reduce_*, argmax/argmin)
  data_movement,   ///< no flops; its operand and result bytes are accessed (slice, gather...)
  view,            ///< no flops and no bytes: a relabelling (reshape, squeeze, expand_dims...)
  custom,          ///< the whole cost from Primitive::cost (dot_general, cumsum, loops, calls)
};

/// How the compiler's fusion (jit/passes/fuse.h) treats a producer of the primitive.
enum class FusionClass {
  unset,      ///< not declared: the registry-wide test fails
  normal,     ///< fused where its class allows
  cheap,      ///< duplicated into every consumer group (broadcast_in_dim, iota, converts)
  expensive,  ///< never fused into a group that reads its elements more than once (exp, div...)
};

/// An estimate of one equation's work, as JAX's cost_analysis keys: "flops",
/// "transcendentals" and "bytes accessed" (bytes of operands and results).
struct CostEstimate {
  double flops = 0, transcendentals = 0, bytes = 0;
  CostEstimate& operator+=(const CostEstimate& o) {
    flops += o.flops, transcendentals += o.transcendentals, bytes += o.bytes;
    return *this;
  }
  CostEstimate operator*(double k) const { return {flops * k, transcendentals * k, bytes * k}; }
};
/// The cost of a nested jaxpr, counting bytes or not (given to a CostRule by cost_analysis).
using JaxprCost = std::function<CostEstimate(const Jaxpr&, bool count_bytes)>;
/// The whole cost of one equation of a CostClass::custom primitive; bytes only if count_bytes.
using CostRule = std::function<CostEstimate(const Eqn&, bool count_bytes, const JaxprCost& jaxpr_cost)>;
/// How an equation's operands and results map to the invars and outvars of its bodies (the
/// params named by Primitive::body_params); core/bodies.h reads the counts from the typed views.
enum class BodyForm {
  none,        ///< no bodies
  call,        ///< a plain call: operands are the body's invars and results its outvars, 1:1
  scan,        ///< consts | carry | xs -> invars 1:1; outvars carry | ys -> results 1:1
  while_loop,  ///< cond_consts | body_consts | carry: cond takes cond_consts | carry, body takes
               ///< body_consts | carry and returns the carry (the results)
  cond,        ///< index | operands: each branch takes the operands and returns the results
};

/// Reads params through the primitive's typed view (core/views/) and returns what the view writes
/// back (`View::from(p).to_params()`, equal to `p` for every well-formed equation); throws
/// ValueError naming the primitive and the param when they do not fit. The parser calls it on
/// every parsed equation; tests/conformance round-trips every equation of the corpus through it.
using ParamsCheck = std::function<Params(const Params&)>;

/// A primitive: JAX's name plus one rule per concern. Rules registered by other layers
/// (lowering, sharding) live in their own tables keyed by name.
struct Primitive {
  std::string name;
  bool multiple_results = false;
  ShapeRule shape_rule;
  ImplRule impl;
  JvpRule jvp;
  TransposeRule transpose;
  BatchRule batch;
  /// Declared absences: a non-empty reason means the rule is deliberately missing (e.g.
  /// "integer output: tangents are float0" is not an absence; "not differentiable" is).
  std::string no_jvp_reason, no_transpose_reason, no_batch_reason;
  Effects effects;
  /// Prunes the bodies of primitives with sub-jaxprs (pjit, scan, cond...); see DceRule.
  DceRule dce;
  /// Set where the primitive is defined (core/primitives/*.cc); read by jit/passes/fuse.
  OpClass op_class = OpClass::other;
  /// Cost-analysis class and, for CostClass::custom, its rule.
  CostClass cost_class = CostClass::unset;
  CostRule cost;
  /// Fusion class of a producer (jit/passes/fuse.cc).
  FusionClass fusion_class = FusionClass::unset;
  /// Removed by inline_calls before lowering (plain calls and the checkpoint_name tag).
  bool inlined = false;
  /// Never merged by CSE (jit/passes/simplify.cc), as optimization_barrier: what keeps a rematerialized
  /// computation apart from the forward pass.
  bool never_merged = false;
  /// Set by the primitive's typed view (core/views/), if it has one.
  ParamsCheck check_params;
  /// Params holding the primitive's bodies, in order (a ClosedJaxprPtr, or a list of them such
  /// as cond's branches); empty for a primitive without bodies. See core/bodies.h.
  std::vector<std::string> body_params;
  /// How operands and results map to the bodies' invars and outvars.
  BodyForm body_form = BodyForm::none;
  /// Whether the primitive is a plain call (pjit, closed_call, checkpoint, custom_jvp_call,
  /// custom_vjp_call, fusion): one body, operands and results 1:1.
  bool plain_call() const { return body_form == BodyForm::call; }
};

/// Sets the three classes of `p` at its registration (where the primitive is defined).
inline void set_classes(Primitive& p, OpClass op, CostClass cost, FusionClass fusion) {
  p.op_class = op;
  p.cost_class = cost;
  p.fusion_class = fusion;
}

/// The bytes of e's operands and results (zero flops), or nothing if !count_bytes: the part of a
/// CostRule's estimate that every primitive accessing its values shares.
CostEstimate operand_and_result_bytes(const Eqn& e, bool count_bytes);

/// The CostRule of a plain call (pjit, closed_call, checkpoint, custom_jvp_call...): the sum of
/// the costs of its nested jaxprs, bytes counted as the caller counts them.
CostEstimate call_cost(const Eqn& e, bool count_bytes, const JaxprCost& jaxpr_cost);

/// The registry: the primitive of that name, created on first use (rules may register in any
/// order across translation units).
Primitive& get_or_create_primitive(const std::string& name);
/// Lookup; throws ValueError for unknown names.
const Primitive& primitive(const std::string& name);
/// Lookup; nullptr for unknown names.
const Primitive* find_primitive(const std::string& name);
/// Names of all registered primitives, sorted.
std::vector<std::string> primitive_names();

/// Registers rules from a static initializer: `static Registrar r([]{ ... });`.
struct Registrar {
  explicit Registrar(const std::function<void()>& f) { f(); }
};

/// Runs the shape rule, wrapping its errors into "<prim>(operand avals): msg" at `loc`.
std::vector<ShapedArray> abstract_eval(const Primitive& p, const std::vector<ShapedArray>& in,
                                       const Params& params, std::source_location loc);

}  // namespace minijax
