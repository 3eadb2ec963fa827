// minijax sharding propagation with user priorities (Shardy's `pN` on a dim sharding): the rounds
// propagation runs in, and the view of a user sharding that an equation's merge sees in a round.
#pragma once
#include <cstdint>
#include <vector>

#include "core/jaxpr.h"
#include "sharding/propagate_detail.h"
#include "sharding/sharding.h"

namespace minijax::prop_detail {

/// The propagation rounds for the user shardings in `st`, in order: every distinct priority
/// given on a dim of a user-fixed variable (st.user), ascending, then -1 (the last round, where
/// every sharding counts, including user dims without a priority). Just {-1} when no user dim
/// has a priority, so propagation without priorities runs exactly as before. Each round runs to
/// its own fixed point starting from the previous round's shardings (Shardy, propagation.md,
/// "User-priority propagation": priority 0 is the highest and propagates first).
std::vector<int64_t> priority_rounds(const State& st);

/// The sharding of `v` as a merge sees it in round `st.round`: unchanged in the last round
/// (-1) and for variables propagation gave shardings to (they carry no priority); for a
/// user-fixed variable, every dim whose priority is -1 or above the round becomes open and
/// empty (`{?}`), i.e. no opinion yet: it neither contributes axes nor blocks others. The
/// variable itself keeps its sharding (it still never moves). Throws std::out_of_range if `v`
/// has no sharding in `st`.
Sharding opinion_in_round(const State& st, const Var& v);

}  // namespace minijax::prop_detail
