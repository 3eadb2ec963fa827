// minijax collective site ids: numbers every collective and axis_index equation of an SPMD
// program once, after partitioning, so lowering and the runtime name each site by a stable id.
#pragma once
#include <cstddef>
#include <vector>

#include "core/jaxpr.h"

namespace minijax {

/// Gives every collective and axis_index equation of `program` (an SPMD program: after
/// partition_spmd, or written by hand over local shards), nested bodies included, its site id
/// (Eqn::site): 0, 1, ... in pre-order (an equation before the bodies it holds, bodies in
/// the order of the params holding them). A body shared by several equations is copied per equation, so each site has
/// one id. Every later pass carries the id with the equation; lowering reads it into the
/// program's collective-site table (jit/runtime/collective_site.h). Returns, per site id, the
/// index of the top-level equation that holds it (itself, or the call or loop around it), which
/// the runtime's per-collective statistics report (CollectiveStats::eqn_index). Never throws.
std::vector<size_t> number_collective_sites(Jaxpr& program);

}  // namespace minijax
