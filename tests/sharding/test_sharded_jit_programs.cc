// Tests of whole programs under a sharded jit, through the public umbrella header only: reshapes
// that split a sharded dim into sub-axes followed by sums and scans, attention, layer norm and
// softmax, each against its eager unsharded run (and, where it matters, the collectives chosen).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <minijax/minijax.h>

#include "sharding/sharding_values.h"

using minijax::Array;
using minijax::NamedSharding;
using minijax::P;

namespace {

using sharding_values::mesh42;
using sharding_values::ramp;

// Attention-like code over q, k, v of f32[4, 8, 16]: two heads split by reshape, transposes, two
// batched matmuls and a softmax; f32[4, 8, 16].
Array attention(const Array& q, const Array& k, const Array& v) {
  auto heads = [](const Array& t) { return mj::transpose(mj::reshape(t, {4, 8, 2, 8}), {0, 2, 1, 3}); };
  Array s = mj::matmul(heads(q), mj::transpose(heads(k), {0, 1, 3, 2})) * 0.35;
  Array o = mj::matmul(mj::softmax(s, -1), heads(v));
  return mj::reshape(mj::transpose(o, {0, 2, 1, 3}), {4, 8, 16});
}

// Largest elementwise |a - b| (both read back to the host; a sharded array is gathered).
double max_diff(const Array& a, const Array& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return 1e30;
  Array x = mj::astype(a, mj::DType::f32), y = mj::astype(b, mj::DType::f32);
  const float* p = x.data<float>();
  const float* q = y.data<float>();
  double d = 0;
  for (int64_t i = 0; i < x.size(); ++i) d = std::max(d, double(std::fabs(p[i] - q[i])));
  return d;
}

}  // namespace

// The reshape case's layout ([8,64] on P("x") reshaped to [2,4,64] puts "x":(1)2 on dim 0 and
// "x":(2)2 on dim 1) followed by a full sum: the local sums are partial over both sub-axes, i.e.
// over the whole of "x", which partition_spmd must match with propagation's merged {"x"} (compared
// unmerged, the two differ and it refuses the program: "result unreduced axes differ").
TEST(ShardedJitPrograms, FullSumAfterReshapeThatSplitsAShardedDim) {
  auto m = mesh42();
  Array a = ramp({8, 64}, 1.f);
  auto f = [](const Array& x) { return mj::sum(mj::reshape(x, {2, 4, 64})); };
  auto jf = mj::jit(f, {.in_shardings = {NamedSharding{m, P("x", mj::None{})}}});
  Array r = jf(a);
  // sum of 0..511 = 511 * 512 / 2 (exact in f32).
  EXPECT_EQ(r.item<double>(), 511.0 * 512.0 / 2.0);
}

// The public reshape case with a reduction in the scan body: ys[t] = sum of the t-th [4,64] block.
// The stacked ys hold partial sums over "x":(2)2 and "x":(1)2, i.e. the whole of "x": the
// partitioner all-reduces them over "x" rather than refusing them as "partial sums over a
// sub-axis".
TEST(ShardedJitPrograms, ScanOverReshapedShardedDimWithReductionInBody) {
  auto m = mesh42();
  Array a = ramp({8, 64}, 1.f);
  auto f = [](const Array& x) {
    auto [c, ys] = mj::scan(
        [](const Array& c, const Array& xr) { return std::pair{c + xr, mj::sum(xr)}; },
        mj::zeros({4, 64}), mj::reshape(x, {2, 4, 64}));
    return std::pair{c, ys};
  };
  auto jf = mj::jit(f, {.in_shardings = {NamedSharding{m, P("x", mj::None{})}}});
  auto [c, ys] = jf(a);
  // Block t holds elements 256 t .. 256 t + 255: its sum is 256 * 256 t + 255 * 256 / 2.
  ASSERT_EQ(ys.shape(), (mj::Shape{2}));
  const float* y = mj::astype(ys, mj::DType::f32).data<float>();
  EXPECT_EQ(double(y[0]), 255.0 * 128.0);
  EXPECT_EQ(double(y[1]), 65536.0 + 255.0 * 128.0);
  // c[i, j] = a[i, j] + a[4 + i, j] = 2 * (64 i + j) + 256.
  Array expect_c = mj::reshape(mj::arange(0, 256, 1, mj::DType::f32) * 2.0 + 256.0, {4, 64});
  EXPECT_EQ(max_diff(c, expect_c), 0.0);
}

// Attention-like code: heads split by reshape, transposes, two batched matmuls and a softmax,
// sharded on batch, on sequence, and on batch and hidden; values equal the eager run.
TEST(ShardedJitPrograms, AttentionWithReshapesAndTransposesMatchesEager) {
  auto m = mesh42();
  auto attn = [](const Array& q, const Array& k, const Array& v) { return attention(q, k, v); };
  Array q = ramp({4, 8, 16}, 0.003f), k = mj::cos(ramp({4, 8, 16}, 0.01f)), v = mj::sin(ramp({4, 8, 16}, 0.02f));
  Array expect = attn(q, k, v);
  for (P spec : {P("x"), P("x", mj::None{}, "y"), P(mj::None{}, "x", "y")}) {
    auto jf = mj::jit(attn, {.in_shardings = {NamedSharding{m, spec}}, .out_shardings = {NamedSharding{m, spec}}});
    Array r = jf(q, k, v);
    EXPECT_TRUE(r.sharding() == (NamedSharding{m, spec})) << spec.str() << " " << r.sharding().str();
    EXPECT_LT(max_diff(r, expect), 1e-5) << spec.str();
  }
}

// Layer norm and softmax along a dim sharded over one or both axes: the reductions' partial sums
// are all-reduced; values equal the eager run.
TEST(ShardedJitPrograms, LayerNormAndSoftmaxOverShardedFeatureDim) {
  auto m = mesh42();
  auto layernorm = [](const Array& x) {
    return (x - mj::mean(x, 1, true)) * mj::rsqrt(mj::var(x, 1, true) + 1e-5);
  };
  auto softmax = [](const Array& x) { return mj::softmax(x, -1); };
  Array x = mj::sin(ramp({16, 8}, 0.37f));
  for (P spec : {P(mj::None{}, "y"), P("x", "y"), P(mj::None{}, {"x", "y"})}) {
    NamedSharding s{m, spec};
    auto ln = mj::jit(layernorm, {.in_shardings = {s}, .out_shardings = {s}});
    auto sm = mj::jit(softmax, {.in_shardings = {s}, .out_shardings = {s}});
    EXPECT_LT(max_diff(ln(x), layernorm(x)), 1e-4) << spec.str();
    EXPECT_LT(max_diff(sm(x), softmax(x)), 1e-6) << spec.str();
  }
}

// A sum over a reshape factor that holds only part of a sharded axis: [8,64] on P("x") reshaped
// to [2,4,64] puts "x":(1)2 on dim 0 and "x":(2)2 on dim 1; summing dim 1 alone would leave
// partial sums over the sub-axis "x":(2)2, which no collective reduces (they group devices by
// whole axes). Propagation keeps reduction factors to whole axes, so dim 1 is gathered over
// "x":(2)2 before the sum instead (one exchange: a gather over a sub-axis is lowered by the
// partitioner's ragged exchange, sharding/lower_reshard_ragged.h), and the values equal eager.
TEST(ShardedJitPrograms, SumOverReshapeFactorHoldingASubAxis) {
  auto m = mesh42();
  Array a = ramp({8, 64}, 1.f);
  auto f = [](const Array& x) { return mj::sum(mj::reshape(x, {2, 4, 64}), 1); };
  auto jf = mj::jit(f, {.in_shardings = {NamedSharding{m, P("x", mj::None{})}}});
  Array r = jf(a);
  EXPECT_EQ(max_diff(r, f(a)), 0.0);
  // By hand: out[i, j] = sum_k (256 i + 64 k + j) = 1024 i + 384 + 4 j.
  Array expect = mj::reshape(mj::arange(0, 64, 1, mj::DType::f32) * 4.0, {1, 64}) +
                 mj::reshape(mj::arange(0, 2, 1, mj::DType::f32) * 1024.0 + 384.0, {2, 1});
  EXPECT_EQ(max_diff(r, expect), 0.0);
  auto run = jf.last_run();
  ASSERT_NE(run, nullptr);
  ASSERT_EQ(run->stats.collectives.size(), 1u) << run->lowered->as_text();
  EXPECT_EQ(run->stats.collectives[0].primitive, "ragged_all_to_all") << run->lowered->as_text();
  // Each device holds [1,2,64] of the reshaped [2,4,64] (4 / "x":(2)2 = 2 rows of dim 1) and
  // receives its "x":(2)2 partner's 2 * 64 f32 = 512 B.
  EXPECT_EQ(run->stats.collectives[0].bytes_received[0], 512) << run->lowered->as_text();
  EXPECT_NE(run->lowered->as_text().find("reshard b: [{\"x\":(1)2}, {\"x\":(2)2}, {}] -> [{\"x\":(1)2}, {}, {}]"),
            std::string::npos) << run->lowered->as_text();
  EXPECT_EQ(run->lowered->as_text().find("unreduced={\"x\":(2)2"), std::string::npos);
}

// The attention-like function of AttentionWithReshapesAndTransposesMatchesEager sharded on the
// hidden dim over ("x","y"): the head split puts "x":(1)2 on the heads and "x":(2)2, "y" on the
// head dim, which q k^T contracts: those partial sums would be over the sub-axis "x":(2)2 and
// "y". Values equal the eager run, and no partial sum over a sub-axis is left.
TEST(ShardedJitPrograms, AttentionShardedOnHiddenOverBothAxes) {
  auto m = mesh42();
  auto attn = [](const Array& q, const Array& k, const Array& v) { return attention(q, k, v); };
  Array q = ramp({4, 8, 16}, 0.003f), k = mj::cos(ramp({4, 8, 16}, 0.01f)), v = mj::sin(ramp({4, 8, 16}, 0.02f));
  Array expect = attn(q, k, v);
  NamedSharding s{m, P(mj::None{}, mj::None{}, {"x", "y"})};
  auto jf = mj::jit(attn, {.in_shardings = {s}, .out_shardings = {s}});
  Array r = jf(q, k, v);
  EXPECT_TRUE(r.sharding() == s) << r.sharding().str();
  EXPECT_LT(max_diff(r, expect), 1e-5);
  auto run = jf.last_run();
  ASSERT_NE(run, nullptr);
  const std::string text = run->lowered->as_text();
  EXPECT_EQ(text.find("unreduced={\"x\":(2)2"), std::string::npos) << text;
  EXPECT_FALSE(run->stats.collectives.empty()) << text;
}
