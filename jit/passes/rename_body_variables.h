// minijax pass rename_body_variables: every nested jaxpr (loop and branch bodies, fusion bodies,
// at every depth) gets variables of its own, so that no variable names two values.
//
// One body may be reached through several equations: inline_calls inlines a nested jit once per
// call site and keeps the bodies of its scans, whiles and conds as they were, and the partial
// evaluator splits one scan into two whose bodies share variables. The buffer plan and the
// lowering key values by variable over the whole program, bodies included
// (memory/plan_buffers.h), so each body must have its own. Values are unchanged.
#pragma once
#include "core/jaxpr.h"

namespace minijax {

/// `j` with the variables of every nested jaxpr replaced by fresh ones (the top level's are
/// kept): afterwards every variable of the program is bound exactly once.
Jaxpr rename_body_variables(const Jaxpr& j);

}  // namespace minijax
