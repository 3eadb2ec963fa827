// minijax resharding planner for partial sums: reduction groups, the two-phase all_reduce and
// reduce_scatter steps, and the choice of the cheapest intermediate before a reduced reshard.
#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include "core/errors.h"
#include "sharding/plan_reshard_internal.h"

namespace minijax::detail {
namespace {

// Devices that hold partial sums of the same indices, one per coordinate of the unreduced axes
// U: members[g][u] is the mesh position of rank u (row-major over U's coordinates, in U's order)
// of group g; group[d] / rank[d] locate device d.
struct ReductionGroups {
  std::vector<std::vector<size_t>> members;
  std::vector<size_t> group, rank;
};

ReductionGroups reduction_groups(const Mesh& mesh, const std::vector<AxisRef>& u) {
  ReductionGroups r;
  const size_t n = mesh.num_devices();
  r.group.assign(n, 0);
  r.rank.assign(n, 0);
  int64_t k = 1;
  for (const auto& a : u) k *= a.resolved_size(mesh);
  std::map<std::vector<int64_t>, size_t> by_key;
  for (size_t d = 0; d < n; ++d) {
    std::vector<int64_t> c = mesh.coords_of(d), key = c;
    int64_t rank = 0;
    for (const auto& a : u) {
      const size_t ax = size_t(mesh.axis_index(a.name));
      const int64_t size = a.resolved_size(mesh);
      const int64_t stride = a.is_sub_axis() ? mesh.shape[ax] / (a.pre_size * a.size) : 1;
      const int64_t coord = a.coord(mesh, c);
      rank = rank * size + coord;
      key[ax] -= coord * stride;
    }
    auto [it, fresh] = by_key.emplace(key, r.members.size());
    if (fresh) r.members.emplace_back(size_t(k), size_t(0));
    r.members[it->second][size_t(rank)] = d;
    r.group[d] = it->second;
    r.rank[d] = size_t(rank);
  }
  return r;
}

bool same_dims(const Sharding& a, const Sharding& b) {
  for (size_t d = 0; d < a.dims.size(); ++d)
    if (a.dims[d].axes != b.dims[d].axes) return false;
  return true;
}

void sort_messages(ReshardStep& st) {
  std::sort(st.messages.begin(), st.messages.end(),
            [](const ReshardMessage& x, const ReshardMessage& y) {
              return std::tie(x.phase, x.sender, x.receiver) <
                     std::tie(y.phase, y.sender, y.receiver);
            });
}

// reduce_scatter over `axes` (U in some order) from `src` onto `mid` (U appended to dim j):
// each device receives its box of `mid` from every other member of its reduction group.
ReshardStep reduce_scatter_step(const Sharding& src, const Sharding& mid, const Shape& shape,
                                const std::vector<AxisRef>& axes, int64_t j,
                                const ReductionGroups& g, std::vector<int64_t>& bound) {
  ReshardStep st;
  st.kind = ReshardKind::reduce_scatter;
  st.axes = axes;
  st.split_dim = j;
  st.from = src;
  st.to = mid;
  st.from_boxes = device_boxes(src, shape);
  st.to_boxes = device_boxes(mid, shape);
  const int64_t k = int64_t(g.members[0].size());
  for (size_t r = 0; r < st.to_boxes.size(); ++r) {
    const Box& box = st.to_boxes[r];
    bound[r] += (k - 1) * box.volume();
    if (box.volume() == 0) continue;
    for (size_t s : g.members[g.group[r]])
      if (s != r) st.messages.push_back(ReshardMessage{s, r, box, box.volume(), true, 0});
  }
  sort_messages(st);
  return st;
}

// all_reduce over U in two phases: member of rank u gets piece u of the shard from every other
// member (partial sums, added), then sends the reduced piece u to every other member.
ReshardStep all_reduce_step(const Sharding& src, const Sharding& reduced, const Shape& shape,
                            const std::vector<AxisRef>& axes, const ReductionGroups& g,
                            std::vector<int64_t>& bound) {
  ReshardStep st;
  st.kind = ReshardKind::all_reduce;
  st.axes = axes;
  st.from = src;
  st.to = reduced;
  st.from_boxes = device_boxes(src, shape);
  st.to_boxes = device_boxes(reduced, shape);
  const int64_t k = int64_t(g.members[0].size());
  for (size_t r = 0; r < st.to_boxes.size(); ++r) {
    const Box& a = st.to_boxes[r];
    if (a.volume() == 0) continue;
    const Shape ext = a.extent();
    const int64_t sd = all_reduce_split_dim(ext, k);
    const auto& members = g.members[g.group[r]];
    if (sd < 0) {  // rank 0: every peer's partial sum, directly
      bound[r] += k - 1;
      for (size_t s : members)
        if (s != r) st.messages.push_back(ReshardMessage{s, r, a, 1, true, 0});
      continue;
    }
    st.split_dim = sd;
    const int64_t len = ext[size_t(sd)], c = (len + k - 1) / k;
    const int64_t u = int64_t(g.rank[r]);
    Box piece = a;
    piece.lo[size_t(sd)] = a.lo[size_t(sd)] + std::min(len, u * c);
    piece.hi[size_t(sd)] = a.lo[size_t(sd)] + std::min(len, (u + 1) * c);
    const int64_t v = piece.volume();
    bound[r] += (k - 1) * v + (a.volume() - v);
    if (v == 0) continue;
    for (size_t s : members)
      if (s != r) {
        st.messages.push_back(ReshardMessage{s, r, piece, v, true, 0});
        st.messages.push_back(ReshardMessage{r, s, piece, v, false, 1});
      }
  }
  sort_messages(st);
  return st;
}

}  // namespace

ReshardPlan plan_unreduced(const Sharding& src, const Sharding& dst, const ShapedArray& aval,
                           std::source_location loc) {
  const Mesh& mesh = *src.mesh;
  const size_t n = mesh.num_devices();
  const std::vector<AxisRef>& u = src.unreduced;
  const ReductionGroups g = reduction_groups(mesh, u);
  Sharding reduced = src;
  reduced.unreduced.clear();

  // The first step of each candidate: the all_reduce, then reduce_scatter onto each dim in each
  // order of U (intermediates that are not valid shardings are skipped).
  struct First {
    ReshardStep step;
    std::vector<int64_t> bound;
  };
  std::vector<First> firsts;
  {
    First f{{}, std::vector<int64_t>(n, 0)};
    f.step = all_reduce_step(src, reduced, aval.shape, u, g, f.bound);
    firsts.push_back(std::move(f));
  }
  std::vector<size_t> perm(u.size());
  std::iota(perm.begin(), perm.end(), 0);
  do {
    std::vector<AxisRef> order;
    for (size_t i : perm) order.push_back(u[i]);
    for (size_t j = 0; j < aval.shape.size(); ++j) {
      Sharding mid = reduced;
      mid.dims[j].axes.insert(mid.dims[j].axes.end(), order.begin(), order.end());
      try {
        mid.check(aval.shape, loc);
      } catch (const ShardingError&) {
        continue;
      }
      First f{{}, std::vector<int64_t>(n, 0)};
      f.step = reduce_scatter_step(src, mid, aval.shape, order, int64_t(j), g, f.bound);
      firsts.push_back(std::move(f));
    }
  } while (std::next_permutation(perm.begin(), perm.end()));

  ReshardPlan best;
  bool have = false;
  for (First& f : firsts) {
    ReshardPlan plan;
    plan.src = src;
    plan.dst = dst;
    plan.aval = aval;
    plan.src_boxes = device_boxes(src, aval.shape);
    plan.dst_boxes = device_boxes(dst, aval.shape);
    plan.receive_bound = f.bound;
    const Sharding mid = f.step.to;
    plan.steps.push_back(f.step);
    if (!same_dims(mid, dst)) {
      ReshardPlan rest = plan_reduced(mid, dst, aval, loc);
      for (size_t d = 0; d < n; ++d) plan.receive_bound[d] += rest.receive_bound[d];
      plan.steps.push_back(std::move(rest.steps[0]));
    }
    plan.local_copy.assign(n, 0);
    for (size_t d = 0; d < n; ++d) {
      const ReshardStep& last = plan.steps.back();
      plan.local_copy[d] = intersect(last.from_boxes[d], last.to_boxes[d]).volume();
    }
    for (const ReshardStep& st : plan.steps)
      for (const Box& b : st.to_boxes) plan.staging_capacity = std::max(plan.staging_capacity, b.volume());
    plan.tally();
    auto key = [](const ReshardPlan& p) {
      return std::make_tuple(p.max_received(), p.total_received(), p.steps.size());
    };
    if (!have || key(plan) < key(best)) {
      best = std::move(plan);
      have = true;
    }
  }
  return best;
}

}  // namespace minijax::detail
