// Tests of the resharding planner (sharding/plan_reshard): the sharding cases, exhaustive
// PartitionSpec pairs checked element by element against brute-force bounds, sub-axes, uneven.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "core/errors.h"
#include "sharding/partition_spec.h"
#include "sharding/plan_reshard.h"
#include "tests/sharding/ownership.h"

namespace mj = minijax;
using minijax::AxisRef;
using minijax::Sharding;

using namespace minijax::testing;

namespace {

// Exact minimum over assignments of indivisible `items` to `m` senders of the largest load
// (depth-first with pruning; items sorted largest first, equal loads tried once).
int64_t min_makespan(std::vector<int64_t> items, size_t m) {
  std::sort(items.rbegin(), items.rend());
  int64_t best = std::accumulate(items.begin(), items.end(), int64_t(0));
  std::vector<int64_t> load(m, 0);
  auto dfs = [&](auto&& self, size_t k, int64_t cur) -> void {
    if (cur >= best) return;
    if (k == items.size()) {
      best = cur;
      return;
    }
    std::set<int64_t> tried;
    for (size_t s = 0; s < m; ++s) {
      if (!tried.insert(load[s]).second) continue;
      load[s] += items[k];
      self(self, k + 1, std::max(cur, load[s]));
      load[s] -= items[k];
    }
  };
  dfs(dfs, 0, 0);
  return best;
}

struct Stats {
  int64_t pairs = 0, fallback_groups = 0, indivisible_groups = 0;
  std::map<std::string, int64_t> kinds;
};

// Plans src -> dst, executes it on arange shards and checks values and (a)-(d) by brute force.
// `expect_kind` (optional) is the test's own structured-collective verdict.
mj::ReshardPlan check_pair(const Sharding& src, const Sharding& dst, const mj::Shape& shape,
                           Stats* stats = nullptr, const char* expect_kind = nullptr) {
  const mj::ShapedArray aval{shape, mj::DType::i32};
  mj::ReshardPlan plan = mj::plan_reshard(src, dst, aval);
  const size_t n = src.mesh->num_devices();
  const std::string what = src.str() + " -> " + dst.str() + " on " + src.mesh->str();
  std::vector<std::vector<char>> As(n), Bs(n);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> Ar(n), Br(n);
  std::vector<mj::Array> shards(n);
  for (size_t d = 0; d < n; ++d) {
    Ar[d] = own_ranges(src, shape, d);
    Br[d] = own_ranges(dst, shape, d);
    As[d] = own_set(Ar[d], shape);
    Bs[d] = own_set(Br[d], shape);
    shards[d] = mj::Array::allocate(mj::ShapedArray{extent(Ar[d]), mj::DType::i32});
    std::vector<int32_t> v = slice_arange(Ar[d], shape);
    std::copy(v.begin(), v.end(), shards[d].mutable_data<int32_t>());
  }
  // (a): |B(d)| - |A(d) ∩ B(d)|, counted element by element.
  std::vector<int64_t> bound(n, 0);
  int64_t max_shard = 0;
  for (size_t d = 0; d < n; ++d) {
    int64_t b = 0;
    for (size_t e = 0; e < Bs[d].size(); ++e) {
      bound[d] += Bs[d][e] && !As[d][e];
      b += Bs[d][e];
    }
    max_shard = std::max(max_shard, b);
    EXPECT_EQ(plan.received[d], bound[d]) << what << " device position " << d;
  }
  // Source replica groups: devices holding equal non-empty sets.
  std::vector<int> group(n, -1);
  std::vector<std::vector<size_t>> groups;
  for (size_t d = 0; d < n; ++d) {
    if (std::count(As[d].begin(), As[d].end(), 1) == 0) continue;
    for (size_t g = 0; g < groups.size(); ++g)
      if (As[groups[g][0]] == As[d]) group[d] = int(g);
    if (group[d] < 0) {
      group[d] = int(groups.size());
      groups.push_back({});
    }
    groups[size_t(group[d])].push_back(d);
  }
  // The source group holding each element (the groups' sets partition the array).
  const size_t total = As[0].size();
  std::vector<int> owner(total, -1);
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t e = 0; e < total; ++e)
      if (As[groups[g][0]][e]) {
        EXPECT_EQ(owner[e], -1) << what;
        owner[e] = int(g);
      }
  // need[r][g]: elements r gets from group g (in B(r), held by g, r not in g).
  std::vector<std::vector<int64_t>> need(n, std::vector<int64_t>(groups.size(), 0));
  for (size_t r = 0; r < n; ++r)
    for (size_t e = 0; e < total; ++e)
      if (Bs[r][e] && owner[e] >= 0 && owner[e] != group[r]) ++need[r][size_t(owner[e])];
  // (c): messages = Σ_r #groups holding data r needs and lacks.
  int64_t expect_msgs = 0, total_recv = 0, total_sent = 0;
  for (size_t r = 0; r < n; ++r) {
    int64_t mr = 0;
    for (size_t g = 0; g < groups.size(); ++g) mr += need[r][g] > 0;
    EXPECT_EQ(plan.messages_received[r], mr) << what << " receiver " << r;
    expect_msgs += mr;
    total_recv += plan.received[r];
    total_sent += plan.sent[r];
  }
  EXPECT_EQ(plan.num_messages(), expect_msgs) << what;
  EXPECT_EQ(total_sent, total_recv) << what;
  // (b): each group's members send within their own receive bounds, or else at most the
  // group optimum max over source groups g of ceil(outgoing(g) / |g|) -- or, where one message
  // per (receiver, group) cannot be split that finely (uneven shards), the exact optimum of
  // assigning the group's indivisible messages to its members.
  std::vector<int64_t> outgoing(groups.size(), 0);
  std::vector<std::vector<int64_t>> pieces(groups.size());
  int64_t opt = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t r = 0; r < n; ++r) {
      if (need[r][g] > 0) pieces[g].push_back(need[r][g]);
      outgoing[g] += need[r][g];
    }
    const int64_t size = int64_t(groups[g].size());
    opt = std::max(opt, (outgoing[g] + size - 1) / size);
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    bool own = true;
    int64_t group_max = 0, group_sent = 0;
    for (size_t s : groups[g]) {
      own = own && plan.sent[s] <= bound[s];
      group_max = std::max(group_max, plan.sent[s]);
      group_sent += plan.sent[s];
    }
    EXPECT_EQ(group_sent, outgoing[g]) << what;
    if (own || group_max <= opt) {
      if (!own && stats) ++stats->fallback_groups;
      continue;
    }
    const int64_t exact = min_makespan(pieces[g], groups[g].size());
    EXPECT_LE(group_max, exact) << what << ": group of " << groups[g].size() << " sends at most "
                                << group_max << ", outgoing " << outgoing[g]
                                << ", group optimum " << opt << ", indivisible optimum " << exact;
    if (stats) ++stats->indivisible_groups;
  }
  for (size_t d = 0; d < n; ++d)
    if (group[d] < 0) EXPECT_EQ(plan.sent[d], 0) << what;
  // Values, and (d) measured by the executor.
  std::vector<int64_t> peak;
  std::vector<mj::Array> out = mj::execute_reshard(plan, shards, &peak);
  for (size_t d = 0; d < n; ++d) {
    EXPECT_EQ(out[d].shape(), extent(Br[d])) << what << " device position " << d;
    if (out[d].shape() != extent(Br[d])) continue;
    std::vector<int32_t> want = slice_arange(Br[d], shape);
    std::vector<int32_t> got(out[d].data<int32_t>(), out[d].data<int32_t>() + out[d].size());
    EXPECT_EQ(got, want) << what << " device position " << d;
    EXPECT_EQ(peak[d], plan.extra_memory[d]) << what;
    EXPECT_LE(peak[d], max_shard) << what;
  }
  // (e): local_slice exactly when nobody receives; else the test's own verdict when given.
  const mj::ReshardKind kind = plan.steps.at(0).kind;
  EXPECT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(kind == mj::ReshardKind::local_slice, total_recv == 0) << what;
  if (expect_kind) EXPECT_STREQ(mj::reshard_kind_name(kind), expect_kind) << what;
  if (stats) {
    ++stats->pairs;
    ++stats->kinds[mj::reshard_kind_name(kind)];
  }
  return plan;
}

// Every PartitionSpec of a rank-`rank` array over the axes: each axis unused or on one dim,
// every order within a dim.
std::vector<Spec> all_specs(const std::vector<std::string>& axes, size_t rank) {
  std::set<Spec> out;
  std::vector<size_t> perm(axes.size());
  std::iota(perm.begin(), perm.end(), 0);
  do {
    size_t combos = 1;
    for (size_t i = 0; i < axes.size(); ++i) combos *= rank + 1;
    for (size_t c = 0; c < combos; ++c) {
      Spec s(rank);
      size_t rest = c;
      for (size_t i : perm) {
        size_t where = rest % (rank + 1);
        rest /= rank + 1;
        if (where < rank) s[where].push_back(axes[i]);
      }
      out.insert(s);
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return {out.begin(), out.end()};
}

bool is_prefix(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// The test's own enumeration of the structured collectives over axis sets (even shapes only).
const char* own_kind(const Spec& a, const Spec& b) {
  bool gather = true, any = false;
  for (size_t d = 0; d < a.size(); ++d) {
    gather = gather && is_prefix(b[d], a[d]);
    any = any || b[d].size() < a[d].size();
  }
  if (gather && any) return "all_gather";
  // all_to_all: per dim, a dim keeps a common prefix and then only loses or only gains axes,
  // and the lost axes are exactly the gained ones (one all_to_all over them moves every block).
  std::multiset<std::string> lost, gained;
  for (size_t d = 0; d < a.size(); ++d) {
    size_t k = 0;
    while (k < a[d].size() && k < b[d].size() && a[d][k] == b[d][k]) ++k;
    if (k < a[d].size() && k < b[d].size()) return nullptr;
    lost.insert(a[d].begin() + long(k), a[d].end());
    gained.insert(b[d].begin() + long(k), b[d].end());
  }
  if (!lost.empty() && lost == gained) return "all_to_all";
  return nullptr;
}

void exhaustive(const mj::Shape& shape, Stats& st) {
  struct M {
    mj::Shape shape;
    std::vector<std::string> names;
    size_t expect_specs2, expect_specs3;
  };
  const std::vector<M> meshes = {{{8}, {"x"}, 3, 4},
                                 {{4, 2}, {"x", "y"}, 11, 19},
                                 {{2, 2, 2}, {"x", "y", "z"}, 49, 106}};
  for (const M& m : meshes)
    for (bool permuted : {false, true}) {
      std::vector<int> ids = iota(8);
      if (permuted) ids = {3, 6, 0, 5, 7, 1, 4, 2};
      auto mesh = make_mesh(ids, m.shape, m.names);
      const auto specs = all_specs(m.names, shape.size());
      EXPECT_EQ(specs.size(), shape.size() == 2 ? m.expect_specs2 : m.expect_specs3);
      for (const Spec& a : specs)
        for (const Spec& b : specs) {
          Sharding sa = from_spec(mesh, a), sb = from_spec(mesh, b);
          const char* k = own_kind(a, b);
          mj::ReshardPlan p = check_pair(sa, sb, shape, &st, k);
          const mj::ReshardKind kind = p.steps.at(0).kind;
          if (!k)
            EXPECT_TRUE(kind != mj::ReshardKind::all_gather &&
                        kind != mj::ReshardKind::all_to_all)
                << sa.str() << " -> " << sb.str() << " named " << mj::reshard_kind_name(kind);
          if (::testing::Test::HasFailure()) return;
        }
    }
}

void report(const char* name, const Stats& st, double seconds) {
  std::cout << name << ": " << st.pairs << " pairs in " << seconds << " s;";
  for (const auto& [k, v] : st.kinds) std::cout << " " << k << "=" << v;
  std::cout << "; groups over their own receive bound at the group optimum: "
            << st.fallback_groups << ", at the indivisible-message optimum: "
            << st.indivisible_groups << "\n";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// docs/cases/seed-involuntary-full-remat.md: f32[16,16,16] on mesh (4,2) ("x","y"),
// P("y", None, "x") -> P(None, ("x","y"), None). By hand: A(d) = 8x16x4 = 512 elements,
// B(d) = 16x2x16 = 512, A∩B = 8x2x4 = 64, so 448 elements = 1792 bytes received per device.
TEST(PlanReshard, SeedOneStepAtTheBound) {
  auto mesh = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Sharding s1 = from_spec(mesh, {{"y"}, {}, {"x"}});
  Sharding s2 = from_spec(mesh, {{}, {"x", "y"}, {}});
  check_pair(s1, s2, {16, 16, 16});
  mj::ReshardPlan p = mj::plan_reshard(s1, s2, mj::ShapedArray{{16, 16, 16}, mj::DType::f32});
  ASSERT_EQ(p.steps.size(), 1u);
  // "y" leaves dim 0 and "x" leaves dim 2, both join dim 1: one all_to_all over {"x", "y"}.
  EXPECT_EQ(p.steps[0].kind, mj::ReshardKind::all_to_all);
  for (size_t d = 0; d < 8; ++d) {
    EXPECT_EQ(p.received[d], 448);
    EXPECT_EQ(p.local_copy[d], 64);
    EXPECT_EQ(p.sent[d], 448);
    EXPECT_LE(p.extra_memory[d], 512);
  }
  const std::string text = p.as_text();
  EXPECT_NE(text.find("step 0: all_to_all over {\"x\", \"y\"}"), std::string::npos) << text;
  EXPECT_EQ(text.find("step 1"), std::string::npos) << text;
  EXPECT_NE(text.find("recv 1792 B/device"), std::string::npos) << text;
  EXPECT_NE(p.as_detailed_text().find("recv 448 (1792 B)"), std::string::npos);
  EXPECT_NE(text.find("max received per device: 448 elements (1792 B)"), std::string::npos);
}

// docs/cases/reshard-to-partially-replicated.md: f32[64,32], mesh (4,2) ("a","b"),
// P(("a","b"), None) -> P(None, "a"). A(d) = 8 rows x 32 = 256, B(d) = 64 x 8 = 512, A∩B = 8x8
// = 64: 448 received; each device sends its 8 rows x the receiver's 8 columns to 7 others = 448.
TEST(PlanReshard, PartiallyReplicatedTarget) {
  auto mesh = make_mesh(iota(8), {4, 2}, {"a", "b"});
  Sharding src = from_spec(mesh, {{"a", "b"}, {}});
  Sharding dst = from_spec(mesh, {{}, {"a"}});
  mj::ReshardPlan p = check_pair(src, dst, {64, 32});
  for (size_t d = 0; d < 8; ++d) {
    EXPECT_EQ(p.received[d], 448);
    EXPECT_EQ(p.sent[d], 448);
    EXPECT_EQ(p.messages_received[d], 7);
  }
  EXPECT_EQ(p.num_messages(), 56);
  EXPECT_NE(p.as_text().find("send 1792 B/device"), std::string::npos) << p.as_text();
}

// docs/cases/uneven-shards.md: int32[17,16] over 8 devices: rows 3,3,3,3,3,2,0,0.
TEST(PlanReshard, UnevenShards) {
  auto mesh = make_mesh(iota(8), {8}, {"data"});
  Sharding rows = from_spec(mesh, {{"data"}, {}});
  Sharding cols = from_spec(mesh, {{}, {"data"}});
  Sharding rep = from_spec(mesh, {{}, {}});
  mj::ReshardPlan p = check_pair(rep, rows, {17, 16});
  const std::vector<int64_t> held = {48, 48, 48, 48, 48, 32, 0, 0};
  for (size_t d = 0; d < 8; ++d) EXPECT_EQ(p.dst_boxes[d].volume(), held[d]);
  EXPECT_EQ(p.steps[0].kind, mj::ReshardKind::local_slice);
  EXPECT_EQ(p.num_messages(), 0);
  // Columns: 16 over 8 = 2 each; device d needs 17x2 = 34 and holds rows[d] x 2 of them.
  p = check_pair(rows, cols, {17, 16});
  for (size_t d = 0; d < 8; ++d) EXPECT_EQ(p.received[d], 34 - held[d] / 8);
  EXPECT_EQ(p.steps[0].kind, mj::ReshardKind::ragged_all_to_all);
  check_pair(cols, rows, {17, 16});
  check_pair(rows, rep, {17, 16});
  // Uneven in both dims on a 2-d mesh, every PartitionSpec pair.
  auto mesh2 = make_mesh({5, 2, 7, 0, 1, 3, 6, 4}, {4, 2}, {"x", "y"});
  Stats st;
  for (const Spec& a : all_specs({"x", "y"}, 2))
    for (const Spec& b : all_specs({"x", "y"}, 2))
      check_pair(from_spec(mesh2, a), from_spec(mesh2, b), {7, 5}, &st);
  EXPECT_EQ(st.pairs, 121);
  report("uneven [7,5] on (4,2)", st, 0);
}

// Sub-axes: "x":(1)2 and "x":(2)2 are the major and minor halves of x (size 4).
TEST(PlanReshard, SubAxes) {
  auto mesh = make_mesh({2, 0, 3, 1, 6, 4, 7, 5}, {4, 2}, {"x", "y"});
  auto sh = [&](std::vector<std::vector<AxisRef>> dims) {
    Sharding s = Sharding::replicated_on(mesh, int64_t(dims.size()));
    for (size_t i = 0; i < dims.size(); ++i) s.dims[i].axes = dims[i];
    return s;
  };
  const AxisRef hi = AxisRef::sub("x", 1, 2), lo = AxisRef::sub("x", 2, 2);
  const AxisRef x = AxisRef::axis("x"), y = AxisRef::axis("y");
  const std::vector<Sharding> ss = {sh({{hi}, {lo}}), sh({{lo}, {hi}}), sh({{hi, y}, {lo}}),
                                    sh({{y, lo}, {hi}}), sh({{x}, {y}}), sh({{}, {lo, y}}),
                                    sh({{hi}, {}}), sh({{}, {}})};
  Stats st;
  for (const auto& a : ss)
    for (const auto& b : ss) {
      check_pair(a, b, {8, 12}, &st);
      check_pair(a, b, {6, 10}, &st);  // uneven too
    }
  EXPECT_EQ(st.pairs, 128);
  report("sub-axes [8,12] and [6,10]", st, 0);
  // Dropping the minor half of x from dim 1: an all_gather over {"x":(2)2}.
  mj::ReshardPlan p = check_pair(sh({{hi}, {lo}}), sh({{hi}, {}}), {8, 12});
  EXPECT_EQ(p.steps[0].kind, mj::ReshardKind::all_gather);
  ASSERT_EQ(p.steps[0].axes.size(), 1u);
  EXPECT_EQ(p.steps[0].axes[0], lo);
}

// Only the device order of the shards changes: P(("x","y")) -> P(("y","x")) on [8, 4].
TEST(PlanReshard, CollectivePermute) {
  auto mesh = make_mesh(iota(8), {4, 2}, {"x", "y"});
  mj::ReshardPlan p =
      check_pair(from_spec(mesh, {{"x", "y"}, {}}), from_spec(mesh, {{"y", "x"}, {}}), {8, 4});
  EXPECT_EQ(p.steps[0].kind, mj::ReshardKind::collective_permute);
  // Positions (x,y): row block x*2+y before, y*4+x after; fixed points (0,0) and (3,1) keep
  // theirs, the other 6 receive one 1x4 block each.
  EXPECT_EQ(p.num_messages(), 6);
  EXPECT_EQ(p.received[0], 0);
  EXPECT_EQ(p.received[7], 0);
  EXPECT_EQ(p.received[1], 4);
}

TEST(PlanReshard, Errors) {
  auto m1 = make_mesh(iota(8), {4, 2}, {"x", "y"});
  auto m2 = make_mesh(iota(8), {2, 4}, {"x", "y"});
  const mj::ShapedArray aval{{8, 8}, mj::DType::f32};
  EXPECT_THROW(mj::plan_reshard(from_spec(m1, {{"x"}, {}}), from_spec(m2, {{"x"}, {}}), aval),
               mj::ShardingError);
  EXPECT_THROW(mj::plan_reshard(from_spec(m1, {{"x"}}), from_spec(m1, {{"x"}, {}}), aval),
               mj::ShardingError);
  Sharding u = from_spec(m1, {{"x"}, {}});
  u.unreduced = {AxisRef::axis("y")};
  // Making partial sums (reduced -> unreduced) or moving them is not a reshard.
  EXPECT_THROW(mj::plan_reshard(from_spec(m1, {{}, {"x"}}), u, aval), mj::ShardingError);
  EXPECT_THROW(mj::plan_reshard(u, u, aval), mj::ShardingError);
  try {
    mj::plan_reshard(from_spec(m1, {{"x"}, {}}), from_spec(m2, {{"x"}, {}}), aval);
  } catch (const mj::ShardingError& e) {
    EXPECT_NE(std::string(e.what()).find("different meshes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[8,8]"), std::string::npos) << e.what();
  }
}

// Every pair of PartitionSpecs of f32[8,16] and [8,24] on (8), (4,2), (2,2,2), natural and
// permuted device order: 2 x 2 x (9 + 121 + 2401) = 10124 pairs.
TEST(PlanReshard, ExhaustiveRank2) {
  for (mj::Shape shape : {mj::Shape{8, 16}, mj::Shape{8, 24}}) {
    Stats st;
    auto t0 = std::chrono::steady_clock::now();
    exhaustive(shape, st);
    report(mj::shape_str(shape).c_str(), st, seconds_since(t0));
    EXPECT_EQ(st.pairs, 2 * (9 + 121 + 2401));
  }
}

// Rank 3, [8,16,24]: 2 x (16 + 361 + 11236) = 23226 pairs.
TEST(PlanReshard, ExhaustiveRank3) {
  Stats st;
  auto t0 = std::chrono::steady_clock::now();
  exhaustive({8, 16, 24}, st);
  report("[8,16,24]", st, seconds_since(t0));
  EXPECT_EQ(st.pairs, 2 * (16 + 361 + 11236));
}
