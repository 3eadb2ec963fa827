// minijax sharding propagation with user priorities: the priority rounds and the per-round view
// of user shardings (see sharding/propagate_priorities.h; Shardy's user-priority propagation).
#include "sharding/propagate_priorities.h"

#include <algorithm>

namespace minijax::prop_detail {

std::vector<int64_t> priority_rounds(const State& st) {
  std::vector<int64_t> rounds;
  for (auto& [v, s] : st.sh) {
    auto u = st.user.find(v);
    if (u == st.user.end() || !u->second) continue;
    for (auto& d : s.dims)
      if (d.priority >= 0) rounds.push_back(d.priority);
  }
  std::sort(rounds.begin(), rounds.end());
  rounds.erase(std::unique(rounds.begin(), rounds.end()), rounds.end());
  rounds.push_back(-1);
  return rounds;
}

Sharding opinion_in_round(const State& st, const Var& v) {
  const Sharding& s = st.sh.at(v);
  if (st.round < 0) return s;
  auto u = st.user.find(v);
  if (u == st.user.end() || !u->second) return s;
  Sharding view = s;
  for (auto& d : view.dims)
    if (d.priority < 0 || d.priority > st.round) d = DimSharding{{}, false, -1};
  return view;
}

}  // namespace minijax::prop_detail
