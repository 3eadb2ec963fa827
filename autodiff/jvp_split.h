// minijax JVP of primitives with bodies (scan, cond, while, checkpoint) under direct linearize:
// the primitive's pure JVP is traced, then split by partial_eval_jaxpr_custom into known and staged.
#pragma once
#include <utility>
#include <vector>

#include "autodiff/policy.h"
#include "core/primitive.h"

namespace minijax {

/// Runs `pure_jvp` (a JVP rule that binds one equation computing primal and tangent outputs
/// together, e.g. a scan over the JVP of its body) so that linearize still gets concrete primals
/// and a linear tangent computation: the pure JVP is traced into a jaxpr over (primals, nonzero
/// tangents), split by partial_eval_jaxpr_custom with the tangents unknown, and then the known
/// jaxpr is evaluated on the primals (eagerly, or on an enclosing trace) and the staged jaxpr on
/// the residuals and tangents (staged into the linear jaxpr under linearize; evaluated under jvp).
/// `policy` is passed to partial_eval_jaxpr_custom (empty: save everything, nested checkpoints
/// apply their own policies). This is JAX's linearize-time partial-eval rule for these
/// primitives (`_scan_partial_eval`, `remat_partial_eval`) expressed through the jaxpr-level rule.
/// The residuals are noted in an open ResidualNotes scope (saved_residuals opens one).
/// Returns (primal outputs, tangent outputs with empty Arrays for symbolic zeros).
std::pair<std::vector<Array>, std::vector<Array>> jvp_by_partial_eval(
    const JvpRule& pure_jvp, const std::vector<Array>& primals, const std::vector<Array>& tangents,
    const Params& params, const SaveablePolicy& policy = {});

/// A JVP rule traced into a jaxpr over (primals, nonzero tangents) -> (primal outputs,
/// nonzero tangent outputs); the jaxpr's constvars are still to be converted.
struct TracedJvp {
  ClosedJaxpr jaxpr;
  std::vector<size_t> nonzero_in;  ///< indices of the primals with a nonzero tangent
  std::vector<bool> out_zero;      ///< per primal output: its tangent is a symbolic zero
  size_t num_out = 0;              ///< number of primal outputs
};
/// Traces `rule` (any JVP rule: empty tangents are symbolic zeros) on fresh tracers.
TracedJvp trace_jvp(const JvpRule& rule, const std::vector<Array>& primals,
                    const std::vector<Array>& tangents, const Params& params);
/// Splits the outputs of a call of a TracedJvp's jaxpr into primal outputs and tangent
/// outputs (empty Arrays for symbolic zeros); `outs` = [primal outs..., nonzero tangents...].
std::pair<std::vector<Array>, std::vector<Array>> split_jvp_outputs(const TracedJvp& t,
                                                                    const std::vector<Array>& outs);

/// A JvpRule that applies jvp_by_partial_eval to `pure_jvp`, or `pure_jvp` itself while the
/// rules of an unsplit JVP trace run (jvp_rules_unsplit(): inside a checkpoint's JVP).
JvpRule split_jvp_rule(JvpRule pure_jvp, SaveablePolicy policy = {});

}  // namespace minijax
