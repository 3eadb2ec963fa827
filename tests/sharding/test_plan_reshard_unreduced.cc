// Tests of the resharding planner for partial sums (unreduced sources): reduce_scatter and
// all_reduce at their bounds ((k-1)/k and 2(k-1)/k of a device's partial sums received per
// device), and the cheapest intermediate, against brute-force volumes.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/lax.h"
#include "sharding/plan_reshard.h"
#include "tests/sharding/ownership.h"

namespace mj = minijax;
using minijax::AxisRef;
using minijax::Sharding;
using namespace minijax::testing;

namespace {

// The test's own row-major mesh coordinates of a position.
std::vector<int64_t> coords(const mj::Mesh& m, size_t pos) {
  std::vector<int64_t> c(m.shape.size());
  for (size_t a = m.shape.size(); a-- > 0;) {
    c[a] = int64_t(pos % size_t(m.shape[a]));
    pos /= size_t(m.shape[a]);
  }
  return c;
}

size_t axis_of(const mj::Mesh& m, const std::string& name) {
  size_t a = 0;
  while (m.axis_names[a] != name) ++a;
  return a;
}

int64_t count_in(const std::vector<char>& s) { return std::count(s.begin(), s.end(), 1); }

int64_t count_both(const std::vector<char>& a, const std::vector<char>& b) {
  int64_t n = 0;
  for (size_t e = 0; e < a.size(); ++e) n += a[e] && b[e];
  return n;
}

struct Checked {
  mj::ReshardPlan plan;
  int64_t expect_max = 0;
};

// src = `dims` with partial sums over `u` (whole axes), dst = `to`, on int32 `shape`.
// Values: device d holds flat index e + 1000·(its rank over u) at e, so every element of the
// result is k·e + 500·k·(k−1). Expected largest per-device receive, by brute force over the
// candidates (each count over elements by the test's own ownership rule):
//   all_reduce then move:         2(k−1)/k·|A(d)| + |B(d)| − |A(d) ∩ B(d)|
//   reduce_scatter onto I then move: (k−1)·|I(d)| + |B(d)| − |I(d) ∩ B(d)|
// for I = dims with u (in either order) appended to dim j, for every j.
Checked check(const std::shared_ptr<const mj::Mesh>& mesh, const Spec& dims,
              const std::vector<std::string>& u, const Spec& to, const mj::Shape& shape) {
  const mj::Mesh& m = *mesh;
  const size_t n = m.num_devices();
  Sharding src = from_spec(mesh, dims);
  for (auto& a : u) src.unreduced.push_back(AxisRef::axis(a));
  const Sharding dst = from_spec(mesh, to);
  const std::string what = src.str() + " -> " + dst.str() + " on " + m.str();
  int64_t k = 1;
  for (auto& a : u) k *= m.shape[axis_of(m, a)];
  const Sharding reduced = from_spec(mesh, dims);

  std::vector<std::vector<char>> A(n), B(n);
  for (size_t d = 0; d < n; ++d) {
    A[d] = own_set(own_ranges(reduced, shape, d), shape);
    B[d] = own_set(own_ranges(dst, shape, d), shape);
  }
  // all_reduce candidate.
  int64_t best = 0;
  {
    int64_t worst = 0;
    for (size_t d = 0; d < n; ++d) {
      const int64_t a = count_in(A[d]);
      EXPECT_EQ(a % k, 0) << what;  // even shards: the bound 2(k-1)/k·|A| is integral
      worst = std::max(worst, 2 * (k - 1) * a / k + count_in(B[d]) - count_both(A[d], B[d]));
    }
    best = worst;
  }
  std::vector<std::string> order = u;
  std::sort(order.begin(), order.end());
  do {
    for (size_t j = 0; j < shape.size(); ++j) {
      Spec mid = dims;
      mid[j].insert(mid[j].end(), order.begin(), order.end());
      const Sharding ms = from_spec(mesh, mid);
      int64_t worst = 0;
      for (size_t d = 0; d < n; ++d) {
        std::vector<char> I = own_set(own_ranges(ms, shape, d), shape);
        worst = std::max(worst, (k - 1) * count_in(I) + count_in(B[d]) - count_both(I, B[d]));
      }
      best = std::min(best, worst);
    }
  } while (std::next_permutation(order.begin(), order.end()));

  Checked c{mj::plan_reshard(src, dst, mj::ShapedArray{shape, mj::DType::i32}), best};
  const mj::ReshardPlan& p = c.plan;
  EXPECT_EQ(p.max_received(), best) << what << "\n" << p.as_text();
  int64_t sent = 0;
  for (size_t d = 0; d < n; ++d) {
    sent += p.sent[d];
    EXPECT_LE(p.received[d], p.receive_bound[d]) << what;
  }
  EXPECT_EQ(sent, p.total_received()) << what;
  // Values.
  std::vector<mj::Array> shards(n);
  for (size_t d = 0; d < n; ++d) {
    const auto c0 = coords(m, d);
    int64_t rank = 0;
    for (auto& a : u) rank = rank * m.shape[axis_of(m, a)] + c0[axis_of(m, a)];
    const auto r = own_ranges(reduced, shape, d);
    std::vector<int32_t> v = slice_arange(r, shape);
    shards[d] = mj::Array::allocate(mj::ShapedArray{extent(r), mj::DType::i32});
    for (size_t i = 0; i < v.size(); ++i) shards[d].mutable_data<int32_t>()[i] = v[i] + 1000 * int32_t(rank);
  }
  std::vector<int64_t> peak;
  auto out = mj::execute_reshard(p, shards, &peak);
  for (size_t d = 0; d < n; ++d) {
    const auto r = own_ranges(dst, shape, d);
    std::vector<int32_t> want = slice_arange(r, shape);
    for (auto& w : want) w = int32_t(k) * w + 500 * int32_t(k * (k - 1));
    EXPECT_EQ(out[d].shape(), extent(r)) << what;
    std::vector<int32_t> got(out[d].data<int32_t>(), out[d].data<int32_t>() + out[d].size());
    EXPECT_EQ(got, want) << what << " device position " << d;
    EXPECT_EQ(peak[d], p.extra_memory[d]) << what;
  }
  return c;
}

// Every spec over `axes` (each unused or on one dim, any order within a dim).
std::vector<Spec> specs_over(const std::vector<std::string>& axes, size_t rank) {
  std::set<Spec> out;
  std::vector<std::string> perm = axes;
  std::sort(perm.begin(), perm.end());
  do {
    size_t combos = 1;
    for (size_t i = 0; i < perm.size(); ++i) combos *= rank + 1;
    for (size_t c = 0; c < combos; ++c) {
      Spec s(rank);
      size_t rest = c;
      for (auto& a : perm) {
        if (rest % (rank + 1) < rank) s[rest % (rank + 1)].push_back(a);
        rest /= rank + 1;
      }
      out.insert(s);
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return {out.begin(), out.end()};
}

}  // namespace

// f32[16,16] on (4,2), dim 0 on "x", partial sums over "y" (k = 2). By hand: to
// [{"x","y"}, {}] a reduce_scatter: B(d) = 2x16 = 32 elements, (k-1)·32 = 32 received per
// device (128 bytes) in 1 message; to [{"x"}, {}] an all_reduce: 2(k-1)/k·64 = 64 received.
TEST(PlanReshardUnreduced, ReduceScatterAndAllReduceAtTheirBounds) {
  auto mesh = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Checked rs = check(mesh, {{"x"}, {}}, {"y"}, {{"x", "y"}, {}}, {16, 16});
  ASSERT_EQ(rs.plan.steps.size(), 1u);
  EXPECT_EQ(rs.plan.steps[0].kind, mj::ReshardKind::reduce_scatter);
  EXPECT_EQ(rs.plan.steps[0].split_dim, 0);
  for (size_t d = 0; d < 8; ++d) {
    EXPECT_EQ(rs.plan.received[d], 32);
    EXPECT_EQ(rs.plan.messages_received[d], 1);
  }
  EXPECT_NE(rs.plan.as_text().find("reduce_scatter over {\"y\"} scatter_dim=0"), std::string::npos)
      << rs.plan.as_text();
  EXPECT_NE(rs.plan.as_text().find("recv 128 B/device"), std::string::npos);

  Checked ar = check(mesh, {{"x"}, {}}, {"y"}, {{"x"}, {}}, {16, 16});
  ASSERT_EQ(ar.plan.steps.size(), 1u);
  EXPECT_EQ(ar.plan.steps[0].kind, mj::ReshardKind::all_reduce);
  for (size_t d = 0; d < 8; ++d) {
    EXPECT_EQ(ar.plan.received[d], 64);
    EXPECT_EQ(ar.plan.sent[d], 64);
  }
  // The pieces run_spmd's all_reduce model uses for a [4,16] shard over 2: dim 0 halves.
  EXPECT_EQ(mj::all_reduce_pieces({4, 16}, 2), (std::vector<int64_t>{32, 32}));
  // [3,5] over 4: no dim divisible, the largest (5) in blocks of 2, 2, 1, 0, times 3 rows.
  EXPECT_EQ(mj::all_reduce_pieces({3, 5}, 4), (std::vector<int64_t>{6, 6, 3, 0}));
}

// Over all 8 devices (k = 8) on mesh (8): 2·7/8·128 = 224 for the all_reduce of f32[8,16];
// to [{}, {"x"}] one reduce_scatter onto dim 1: 7·16 = 112.
TEST(PlanReshardUnreduced, WholeMesh) {
  auto mesh = make_mesh(iota(8), {8}, {"x"});
  Checked ar = check(mesh, {{}, {}}, {"x"}, {{}, {}}, {8, 16});
  EXPECT_EQ(ar.plan.max_received(), 224);
  Checked rs = check(mesh, {{}, {}}, {"x"}, {{}, {"x"}}, {8, 16});
  EXPECT_EQ(rs.plan.max_received(), 112);
  EXPECT_EQ(rs.plan.steps.size(), 1u);
}

// A target a plain reduce_scatter does not give: partial sums over "y" of [{"x"}, {}] to
// [{}, {"y", "x"}] on (4,2), f32[16,16]. Best: reduce_scatter onto dim 1 (I = [{"x"}, {"y"}],
// 32 received) then an all_to_all of "x" from dim 0 to dim 1 (B = 16x2 = 32, I∩B = 4x2 = 8: 24
// received), 56 in all -- less than the all_reduce (64) alone.
TEST(PlanReshardUnreduced, ReduceScatterThenMove) {
  auto mesh = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Checked c = check(mesh, {{"x"}, {}}, {"y"}, {{}, {"y", "x"}}, {16, 16});
  EXPECT_EQ(c.expect_max, 56);
  ASSERT_EQ(c.plan.steps.size(), 2u);
  EXPECT_EQ(c.plan.steps[0].kind, mj::ReshardKind::reduce_scatter);
  EXPECT_EQ(c.plan.steps[0].split_dim, 1);
  EXPECT_EQ(c.plan.steps[1].kind, mj::ReshardKind::all_to_all);
}

// Every unreduced axis set U (whole axes), every source spec over the other axes and every
// target spec, on (8), (4,2), (2,2,2) and a permuted device order, f32[8,16]: values exact,
// the largest receive equals the brute-force best candidate.
TEST(PlanReshardUnreduced, Exhaustive) {
  struct M {
    mj::Shape shape;
    std::vector<std::string> names;
  };
  int64_t pairs = 0;
  for (const M& mm : {M{{8}, {"x"}}, M{{4, 2}, {"x", "y"}}, M{{2, 2, 2}, {"x", "y", "z"}}})
    for (bool permuted : {false, true}) {
      auto mesh = make_mesh(permuted ? std::vector<int>{3, 6, 0, 5, 7, 1, 4, 2} : iota(8),
                            mm.shape, mm.names);
      const size_t na = mm.names.size();
      for (size_t mask = 1; mask < (size_t(1) << na); ++mask) {
        std::vector<std::string> u, rest;
        for (size_t a = 0; a < na; ++a) ((mask >> a) & 1 ? u : rest).push_back(mm.names[a]);
        for (const Spec& a : specs_over(rest, 2))
          for (const Spec& b : specs_over(mm.names, 2)) {
            check(mesh, a, u, b, {8, 16});
            ++pairs;
            if (::testing::Test::HasFailure()) return;
          }
      }
    }
  // (8): 1·1·3; (4,2): U={x}: 3·11, {y}: 3·11, {x,y}: 1·11; (2,2,2): U of 1 axis: 3·11·49,
  // of 2 axes: 3·3·49, all 3: 1·49 -- each twice (device orders).
  EXPECT_EQ(pairs, 2 * (3 + 33 + 33 + 11 + 3 * 11 * 49 + 3 * 3 * 49 + 49));
}

TEST(PlanReshardUnreduced, RankZeroAllReduce) {
  auto mesh = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Sharding src = from_spec(mesh, {});
  src.unreduced = {AxisRef::axis("x")};
  mj::ReshardPlan p = mj::plan_reshard(src, from_spec(mesh, {}), mj::ShapedArray{{}, mj::DType::f32});
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].kind, mj::ReshardKind::all_reduce);
  for (size_t d = 0; d < 8; ++d) EXPECT_EQ(p.received[d], 3);  // every peer's partial sum
  std::vector<mj::Array> shards;
  for (size_t d = 0; d < 8; ++d) shards.push_back(mj::lax::scalar(double(d / 2 + 1), mj::DType::f32));
  for (auto& o : mj::execute_reshard(p, shards)) EXPECT_EQ(o.data<float>()[0], 10.0f);
}

// execute_reshard adds partial sums in their own dtype: f64, u32 and bf16 (f32 and i32 above).
// Device d of the (4,2) mesh has x coordinate d/2 and holds d/2 + 1 in every element of an
// f?[4] shard; the sum over "x" is 1 + 2 + 3 + 4 = 10 everywhere (exact in bf16 too). Partial
// sums of bool cannot be added: ValueError.
TEST(PlanReshardUnreduced, PartialSumsOfEveryAddableDtype) {
  auto mesh = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Sharding src = from_spec(mesh, {{}});
  src.unreduced = {AxisRef::axis("x")};
  for (mj::DType dt : {mj::DType::f64, mj::DType::u32, mj::DType::bf16, mj::DType::bool_}) {
    mj::ReshardPlan p = mj::plan_reshard(src, from_spec(mesh, {{}}), mj::ShapedArray{{4}, dt});
    std::vector<mj::Array> shards;
    for (size_t d = 0; d < 8; ++d)
      shards.push_back(mj::lax::full({4}, double(d / 2 + 1), dt));
    if (dt == mj::DType::bool_) {
      EXPECT_THROW(mj::execute_reshard(p, shards), mj::ValueError);
      continue;
    }
    for (auto& o : mj::execute_reshard(p, shards)) {
      mj::Array f = mj::lax::convert_element_type(o, mj::DType::f64);
      for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(f.data<double>()[i], 10.0) << mj::dtype_name(dt);
    }
  }
}
