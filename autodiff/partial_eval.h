// minijax jaxpr-level partial evaluation with JAX's interface (pe.partial_eval_jaxpr_custom):
// splits a jaxpr into a known part and a staged part joined by residuals, as a policy decides.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "autodiff/policy.h"
#include "core/jaxpr.h"

namespace minijax {

/// Where a residual lives relative to loops (for saved_residuals and memory analysis).
enum class ResidualPlacement {
  computed,   ///< made by an equation of this jaxpr, once
  forwarded,  ///< an input of the known side passed through (never copied or stacked)
  stacked,    ///< one value per loop iteration, stacked as [length, ...] by a known scan
  hoisted,    ///< depends only on loop constants: computed once, before the loop
};
const char* residual_placement_name(ResidualPlacement p);

/// One residual passed from the known jaxpr to the staged one.
struct ResidualInfo {
  ShapedArray aval;            ///< including the memory kind it is kept in
  MemoryKind memory_kind = MemoryKind::device;
  /// Index of the known jaxpr's input this residual merely forwards (passed through, never
  /// copied), if any.
  std::optional<int> forwards_input;
  /// Primitive of the equation that made it ("" for forwarded inputs).
  std::string made_by;
  /// The checkpoint_name of the value, if it was named: the output of a `name` equation, or
  /// the value a `name` equation names (jax PR #20285).
  std::string name;
  ResidualPlacement placement = ResidualPlacement::computed;
};

/// While one is open on this thread, linearize-time partial evaluation (jvp_by_partial_eval,
/// the JVP of pjit and closed_call) notes each residual value it computes for the staged side
/// with its ResidualInfo. saved_residuals reads the notes to report what the enclosing program
/// no longer shows: a value hoisted out of a scan is an ordinary equation there, and the name
/// of a value may be given in the loop or inside the call that returns it. Scopes nest (the
/// innermost receives the notes); residuals that merely forward an input are not noted.
class ResidualNotes {
 public:
  ResidualNotes();
  ~ResidualNotes();
  ResidualNotes(const ResidualNotes&) = delete;
  ResidualNotes& operator=(const ResidualNotes&) = delete;
  /// Notes `value` as a residual described by `info` in the innermost open scope, if any.
  static void note(const Array& value, const ResidualInfo& info);
  /// The info last noted for `value` (this very array or tracer, not an equal one), or nullptr.
  const ResidualInfo* find(const Array& value) const;

 private:
  std::vector<std::pair<std::shared_ptr<ArrayImpl>, ResidualInfo>> notes_;
  ResidualNotes* outer_;
};

/// The split of a jaxpr (JAX's conventions):
///  - known:  takes the inputs with in_unknowns false; outputs [known outputs..., residuals...]
///  - staged: takes [residuals..., inputs with in_inst true]; outputs the outputs with out_inst
///  - out_unknowns[i]: output i is computed by the staged jaxpr (else by the known one)
///  - out_inst[i]: output i is an output of the staged jaxpr
struct PartialEvalResult {
  Jaxpr known;
  Jaxpr staged;
  std::vector<bool> out_unknowns;
  std::vector<bool> out_inst;
  int num_res = 0;
  std::vector<ResidualInfo> residuals;
};

/// What a primitive's own partial-evaluation rule returns for one equation (JAX's
/// partial_eval_jaxpr_custom_rules): equations for each side and the residuals between them.
/// Staged equations may read the residuals, variables they define, and the equation's own
/// inputs (known inputs they read are instantiated by the caller, as forwarded residuals).
struct PeCustomResult {
  std::vector<Eqn> known_eqns;
  std::vector<Eqn> staged_eqns;
  std::vector<bool> out_unknowns;
  std::vector<bool> out_inst;
  std::vector<Var> residuals;               ///< defined by known_eqns, read by staged_eqns
  std::vector<ResidualInfo> residual_info;  ///< parallel to residuals
};
/// A primitive's partial-evaluation rule: (equation, in_unknowns, in_inst, policy).
/// `policy` is the enclosing computation's policy; an empty policy means "no enclosing
/// policy": save everything, and checkpoints apply their own.
using PeCustomRule = std::function<PeCustomResult(const Eqn&, const std::vector<bool>& in_unknowns,
                                                  const std::vector<bool>& in_inst,
                                                  const SaveablePolicy& policy)>;
/// The table of per-primitive partial-evaluation rules (scan, cond, checkpoint, pjit, ...),
/// keyed by primitive name. Equations of other primitives use the default rule, and so do
/// equations nested more than 32 levels deep in rule-handled bodies (bounded recursion).
std::map<std::string, PeCustomRule>& pe_custom_rules();

/// Partial evaluation of a jaxpr without constvars (JAX's partial_eval_jaxpr_custom).
/// in_unknowns[i]: input i is only available to the staged side; in_inst[i]: the staged side
/// takes input i (forced true for unknown inputs). ensure_out_unknowns / ensure_out_inst force
/// outputs onto the staged side. For every equation whose inputs are all known, `policy` decides:
/// Saveable (known only; its outputs become residuals where the staged side needs them),
/// (an empty policy saves everything),
/// Recompute (kept on the known side and copied to the staged side; DCE removes what is unused),
/// Offloadable (known side device_puts the output to dst; staged side device_puts it back to
/// src). Effectful equations are always saved; equations whose inputs are all literals are
/// always recomputed (never residuals). Equations with any unknown input are staged.
/// Throws ValueError if the jaxpr has constvars or the masks have the wrong lengths.
PartialEvalResult partial_eval_jaxpr_custom(const Jaxpr& jaxpr, const std::vector<bool>& in_unknowns,
                                            const std::vector<bool>& in_inst,
                                            const std::vector<bool>& ensure_out_unknowns,
                                            const std::vector<bool>& ensure_out_inst,
                                            const SaveablePolicy& policy = everything_saveable_policy,
                                            std::source_location loc = std::source_location::current());

}  // namespace minijax
