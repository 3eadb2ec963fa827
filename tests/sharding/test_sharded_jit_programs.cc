// A new user's trial of the sharding API (public umbrella header only): realistic functions
// under a sharded jit against their eager unsharded run, and the bad-input errors' contents.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <minijax/minijax.h>

using minijax::Array;
using minijax::NamedSharding;
using minijax::P;

namespace {

std::shared_ptr<const mj::Mesh> mesh42() {
  return std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, mj::Shape{4, 2},
                                          std::vector<std::string>{"x", "y"});
}

// f32 array of `shape` with element k (row-major) = scale * k.
Array ramp(mj::Shape shape, float scale) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return mj::reshape(mj::arange(0, double(n), 1, mj::DType::f32) * scale, shape);
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

// The error is a ShardingError raised for this file at `line` whose message contains each part.
template <class F>
void expect_sharding_error(int line, F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no ShardingError";
  } catch (const mj::ShardingError& e) {
    EXPECT_EQ(int(e.where().line()), line) << e.what();
    EXPECT_NE(std::string(e.where().file_name()).find("test_user_trial.cc"), std::string::npos) << e.what();
    for (auto& s : parts) EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << s << " not in: " << e.what();
  }
}

}  // namespace

// The reshape case's layout ([8,64] on P("x") reshaped to [2,4,64] puts "x":(1)2 on dim 0 and
// "x":(2)2 on dim 1) followed by a full sum: the local sums are partial over both sub-axes, i.e.
// over the whole of "x". Used to fail in partition_spmd ("result unreduced axes differ") because
// the sub-axes were compared unmerged with propagation's merged {"x"}.
TEST(UserTrial, FullSumAfterReshapeThatSplitsAShardedDim) {
  auto m = mesh42();
  Array a = ramp({8, 64}, 1.f);
  auto f = [](const Array& x) { return mj::sum(mj::reshape(x, {2, 4, 64})); };
  auto jf = mj::jit(f, {.in_shardings = {NamedSharding{m, P("x", mj::None{})}}});
  Array r = jf(a);
  // sum of 0..511 = 511 * 512 / 2 (exact in f32).
  EXPECT_EQ(r.item<double>(), 511.0 * 512.0 / 2.0);
}

// The public reshape case with a reduction in the scan body: ys[t] = sum of the t-th [4,64] block.
// The stacked ys held partial sums over "x":(2)2 and "x":(1)2 (the whole of "x"), which the
// partitioner refused ("partial sums over a sub-axis") instead of all-reducing over "x".
TEST(UserTrial, ScanOverReshapedShardedDimWithReductionInBody) {
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
TEST(UserTrial, AttentionWithReshapesAndTransposesMatchesEager) {
  auto m = mesh42();
  auto attn = [](const Array& q, const Array& k, const Array& v) {
    auto heads = [](const Array& t) { return mj::transpose(mj::reshape(t, {4, 8, 2, 8}), {0, 2, 1, 3}); };
    Array s = mj::matmul(heads(q), mj::transpose(heads(k), {0, 1, 3, 2})) * 0.35;
    Array o = mj::matmul(mj::softmax(s, -1), heads(v));
    return mj::reshape(mj::transpose(o, {0, 2, 1, 3}), {4, 8, 16});
  };
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
TEST(UserTrial, LayerNormAndSoftmaxOverShardedFeatureDim) {
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

// Bad specs given to jit and reshard_plan: the error names the spec, the array's shape and the
// user's call site (the jit(...) line for jit, as the jit's documentation says). The jit errors
// used to say only "for an array of rank 2", not the shape.
TEST(UserTrial, JitAndReshardPlanSpecErrorsNameTheShape) {
  auto m = mesh42();
  Array a = ramp({8, 64}, 1.f);
  auto twice = [](const Array& x) { return x * 2.0; };
  expect_sharding_error(
      __LINE__, [&] { auto jf = mj::jit(twice, {.in_shardings = {NamedSharding{m, P("z")}}});
                          jf(a); },
      {"P('z')", "f32[8,64]", "in_shardings entry 0", "'z'"});
  expect_sharding_error(
      __LINE__, [&] { auto jf = mj::jit(twice, {.in_shardings = {NamedSharding{m, P("x", "y", mj::None{})}}});
                          jf(a); },
      {"P('x', 'y', None)", "f32[8,64]", "more than the rank"});
  expect_sharding_error(
      __LINE__, [&] { auto jf = mj::jit(twice, {.out_shardings = {NamedSharding{m, P("y", "y")}}});
                          jf.lower(a); },
      {"P('y', 'y')", "f32[8,64]", "out_shardings entry 0", "twice"});
  expect_sharding_error(
      __LINE__, [&] { mj::reshard_plan(NamedSharding{m, P("x")}, NamedSharding{m, P("w")},
                                           mj::ShapedArray{{8, 8}, mj::DType::f32}); },
      {"P('w')", "f32[8,8]", "target"});
}

// Issue 4's bad-input list through the public API, each naming the spec, the shape (where there is
// an array) and this file's line.
TEST(UserTrial, BadInputListNamesSpecShapeAndCallSite) {
  auto m = mesh42();
  auto m8 = std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, mj::Shape{8},
                                             std::vector<std::string>{"d"});
  Array a = ramp({8, 64}, 1.f);
  expect_sharding_error(__LINE__, [&] { mj::Mesh(std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, mj::Shape{4, 4}, {"x", "y"}); },
                        {"[4,4]", "8"});
  expect_sharding_error(__LINE__, [&] { mj::device_put(a, NamedSharding{m, P("q")}); },
                        {"P('q')", "f32[8,64]", "'q'"});
  expect_sharding_error(__LINE__, [&] { mj::device_put(a, NamedSharding{m, P({"x", "x"})}); },
                        {"P(('x', 'x'))", "f32[8,64]", "twice"});
  expect_sharding_error(__LINE__, [&] { mj::with_sharding_constraint(a, NamedSharding{m, P("x", "y", "x")}); },
                        {"P('x', 'y', 'x')", "f32[8,64]"});
  expect_sharding_error(
      __LINE__, [&] { auto jf = mj::jit([](const Array& u, const Array& w) { return u + w; },
                                            {.in_shardings = {NamedSharding{m, P("x")}, NamedSharding{m8, P("d")}}});
                          jf(a, a); },
      {"Mesh('d': 8)", "Mesh('x': 4, 'y': 2)", "P('d')"});
  // docs/cases/uneven-shards.md under jit: 17 rows over 8 devices are rejected, naming 17, 8
  // and the spec.
  Array u = mj::reshape(mj::arange(17 * 16), {17, 16});
  expect_sharding_error(
      __LINE__, [&] { auto jf = mj::jit([](const Array& t) { return t + 1; }, {.in_shardings = {NamedSharding{m8, P("d")}}});
                          jf(u); },
      {"17", "8", "\"d\"", "input 0"});
  // The same uneven sharding asked by a constraint inside the function: propagation moves it back
  // to the argument (t * 2 is elementwise), and the error says which input and why it has it.
  expect_sharding_error(
      __LINE__, [&] { auto jf = mj::jit([&](const Array& t) { return mj::with_sharding_constraint(t * 2, NamedSharding{m8, P("d")}); },
                                        {.out_shardings = {NamedSharding{m8, P()}}});
                      jf(u); },
      {"17", "8", "\"d\"", "input 0 (its given or propagated sharding)"});
}

// Issue 4: N is "set by MINIJAX_NUM_DEVICES or mj::config before first use". Here N is already
// fixed (this binary's other tests use devices()), so a different config count must throw at the
// next devices() call, naming the call site, and the same count must not.
TEST(UserTrial, ConfigDeviceCountCannotChangeAfterFirstUse) {
  const int n = mj::num_devices();
  mj::config().num_cpu_devices = n;
  EXPECT_EQ(mj::devices().size(), size_t(n));
  mj::config().num_cpu_devices = n + 1;
  expect_sharding_error(__LINE__, [&] { mj::devices(); },
                        {"num_cpu_devices = " + std::to_string(n + 1), std::to_string(n) + " devices"});
  mj::config().num_cpu_devices = 0;
  EXPECT_EQ(mj::num_devices(), n);
}

// A sum over a reshape factor that holds only part of a sharded axis: [8,64] on P("x") reshaped
// to [2,4,64] puts "x":(1)2 on dim 0 and "x":(2)2 on dim 1; summing dim 1 alone would leave
// partial sums over the sub-axis "x":(2)2, which no collective reduces (they group devices by
// whole axes). Propagation keeps reduction factors to whole axes, so dim 1 is gathered over
// "x":(2)2 before the sum instead (one exchange: a gather over a sub-axis is lowered by the
// partitioner's ragged exchange, sharding/lower_reshard_ragged.h), and the values equal eager.
TEST(UserTrial, SumOverReshapeFactorHoldingASubAxis) {
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
TEST(UserTrial, AttentionShardedOnHiddenOverBothAxes) {
  auto m = mesh42();
  auto attn = [](const Array& q, const Array& k, const Array& v) {
    auto heads = [](const Array& t) { return mj::transpose(mj::reshape(t, {4, 8, 2, 8}), {0, 2, 1, 3}); };
    Array s = mj::matmul(heads(q), mj::transpose(heads(k), {0, 1, 3, 2})) * 0.35;
    Array o = mj::matmul(mj::softmax(s, -1), heads(v));
    return mj::reshape(mj::transpose(o, {0, 2, 1, 3}), {4, 8, 16});
  };
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
