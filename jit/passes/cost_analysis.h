// minijax cost analysis: JAX's `compiled.cost_analysis()` — flops, transcendentals and bytes
// accessed of a fused program, counted per equation as XLA's HloCostAnalysis counts them.
#pragma once
#include <map>
#include <string>

#include "core/jaxpr.h"

namespace minijax {

/// {"flops", "transcendentals", "bytes accessed"} of `program` (after fuse). Per output element:
/// an elementwise arithmetic operation is 1 flop (select, compare, convert included), a
/// transcendental one (exp, log, log1p, expm1, tanh, logistic, sin, cos, tan, erf, erf_inv,
/// pow, atan2, sqrt, rsqrt) 1 transcendental; a reduction n_in - n_out flops; dot_general
/// 2·batch·m·n·k. Bytes accessed: each top-level kernel's operands and outputs once (a fusion's
/// inner values are never in memory; views cost nothing). A scan body counts `length` times, a
/// while body once (its trip count is unknown), a cond its most expensive branch.
/// Source: xla/service/hlo_cost_analysis.cc.
std::map<std::string, double> cost_analysis(const Jaxpr& program);

}  // namespace minijax
