// minijax transposition of a call body (JAX's call transpose rule), shared by the transpose rules
// of the plain calls: pjit and closed_call (autodiff/rules/call.cc) and checkpoint (checkpoint.cc).
#pragma once
#include <functional>
#include <vector>

#include "core/jaxpr.h"

namespace minijax::rules {

/// Cotangents of a body's inputs from its operands (empty where linear), which are linear, and
/// the output cotangents (empty = zero): backward_pass, or remat's split-then-transpose.
using BodyBackward = std::function<std::vector<Array>(const ClosedJaxpr& body, const std::vector<Array>& args,
                                                      const std::vector<bool>& linear,
                                                      const std::vector<Array>& cts)>;

/// A call body transposed into a new call: `jaxpr` (constvars converted to leading invars) takes
/// `args` = [its constants..., the non-linear operands..., the output cotangents...] and returns
/// the cotangents of the linear operands. With `instantiate`, every output cotangent is an operand
/// (zeros instantiated) and every linear operand gets one; without, only nonzero output
/// cotangents are operands and only nonzero input cotangents are results. `jaxpr` is null when
/// nothing is to be computed (no nonzero output cotangent, without `instantiate`).
struct TransposedCall {
  ClosedJaxprPtr jaxpr;
  std::vector<Array> args;
  size_t num_consts = 0;     ///< leading constants of args
  std::vector<bool> linear;  ///< per operand of the original call
  std::vector<bool> zero;    ///< per linear operand: no cotangent returned (without `instantiate`)

  /// One cotangent per operand of the original call (empty for non-linear or zero ones) from
  /// the results of binding `jaxpr` on `args`.
  std::vector<Array> scatter(const std::vector<Array>& results) const;
};

TransposedCall transpose_call_body(const ClosedJaxpr& body, const std::vector<Array>& cts_out,
                                   const std::vector<Array>& args, const std::vector<ShapedArray>& avals,
                                   bool instantiate, const BodyBackward& backward);

}  // namespace minijax::rules
