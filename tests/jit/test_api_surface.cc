// Tests of the staged jit API (jit/jit.h) as a user of JAX's jax.jit would use it: user pytrees as
// arguments and results, ShapeDtypeStructs in them, sharded lower/compile, static user types,
// retracing, Lowered/Compiled lifetimes and threads, the analyses, optimizers, donation, blocking.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <latch>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <minijax/minijax.h>

#include <autodiff/optimizers.h>

namespace {

using mj::Array;
using mj::ShapeDtypeStruct;

// The sharded cases use meshes of 4 of the 8 devices tests/main.cc configures.

// f32 array whose element k (row-major) is k * scale + offset: exact small values.
Array ramp(const mj::Shape& shape, float scale = 1, float offset = 0) {
  Array a = Array::allocate(mj::ShapedArray{shape, mj::f32});
  float* p = a.mutable_data<float>();
  for (int64_t i = 0; i < a.size(); ++i) p[i] = float(i) * scale + offset;
  return a;
}

bool bit_equal(const Array& a, const Array& b) {
  return a.aval().str() == b.aval().str() && std::memcmp(a.raw_data(), b.raw_data(), size_t(a.aval().nbytes())) == 0;
}

// max |a - b| / (1 + |b|) over elements, after both are converted to double.
double max_rel(const Array& a, const Array& b) {
  EXPECT_EQ(a.aval().str(), b.aval().str());
  Array x = mj::astype(a, mj::f64), y = mj::astype(b, mj::f64);
  double worst = 0;
  for (int64_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::fabs(x.data<double>()[i] - y.data<double>()[i]) / (1 + std::fabs(y.data<double>()[i])));
  return worst;
}

// A weak-typed f32[] holding v (what a Python float becomes under jax.jit).
Array weak_scalar(float v) {
  Array a = Array::allocate(mj::ShapedArray{{}, mj::f32, true});
  a.mutable_data<float>()[0] = v;
  return a;
}

std::shared_ptr<const mj::Mesh> mesh22() {
  return std::make_shared<const mj::Mesh>(std::vector<int>{0, 1, 2, 3}, mj::Shape{2, 2},
                                          std::vector<std::string>{"data", "model"});
}

struct ApiLayer {
  Array w, b;
};
struct ApiModel {
  ApiLayer enc;
  std::vector<ApiLayer> layers;
  std::map<std::string, Array> extra;
  std::tuple<Array, Array> tup;
  std::pair<Array, Array> pr;
};
// A registered struct with a field that is not listed (metadata, as a flax struct's static field).
struct ApiScaled {
  Array w;
  double scale = 1.0;
};

// A hashable user configuration: a static argument.
struct ApiConfig {
  int repeats = 1;
  std::string act = "tanh";
  bool operator==(const ApiConfig&) const = default;
};

}  // namespace

MJ_REGISTER_PYTREE(ApiLayer, w, b)
MJ_REGISTER_PYTREE(ApiModel, enc, layers, extra, tup, pr)
MJ_REGISTER_PYTREE(ApiScaled, w)

template <>
struct std::hash<ApiConfig> {
  size_t operator()(const ApiConfig& c) const { return std::hash<std::string>{}(c.act) * 31 + size_t(c.repeats); }
};

namespace {

ApiModel make_model(size_t nlayers, float s = 1) {
  ApiModel m;
  m.enc = {ramp({3, 4}, 0.1f * s, -0.5f), ramp({4}, 0.25f)};
  for (size_t i = 0; i < nlayers; ++i) m.layers.push_back({ramp({4, 4}, 0.05f, -0.3f + 0.1f * float(i)), ramp({4}, -0.5f)});
  m.extra = {{"scale", weak_scalar(1.5f)}, {"shift", ramp({4}, 0.5f)}};
  m.tup = {ramp({4}, 2), ramp({2, 2}, 1, 1)};
  m.pr = {ramp({5}), ramp({5}, -1)};
  return m;
}

using ModelOut = std::tuple<Array, ApiLayer, std::map<std::string, Array>, std::vector<Array>>;
ModelOut model_fn(const ApiModel& m, const Array& x) {
  Array h = mj::tanh(mj::matmul(x, m.enc.w) + m.enc.b);
  for (auto& l : m.layers) h = mj::matmul(h, l.w) + l.b;
  h = h * m.extra.at("scale") + m.extra.at("shift") + std::get<0>(m.tup);
  std::map<std::string, Array> mo = {{"sum", mj::sum(h)}, {"pr", m.pr.first * m.pr.second}};
  return {h, ApiLayer{std::get<1>(m.tup) * 2.0, m.enc.b - 1.0}, mo, std::vector<Array>{x, mj::exp(x)}};
}

void expect_model_out_near(const ModelOut& got, const ModelOut& want, double tol) {
  EXPECT_LE(max_rel(std::get<0>(got), std::get<0>(want)), tol);
  EXPECT_LE(max_rel(std::get<1>(got).w, std::get<1>(want).w), tol);
  EXPECT_LE(max_rel(std::get<1>(got).b, std::get<1>(want).b), tol);
  ASSERT_EQ(std::get<2>(got).size(), 2u);
  EXPECT_LE(max_rel(std::get<2>(got).at("sum"), std::get<2>(want).at("sum")), tol);
  EXPECT_LE(max_rel(std::get<2>(got).at("pr"), std::get<2>(want).at("pr")), tol);
  ASSERT_EQ(std::get<3>(got).size(), 2u);
  EXPECT_TRUE(bit_equal(std::get<3>(got)[0], std::get<3>(want)[0]));
  EXPECT_LE(max_rel(std::get<3>(got)[1], std::get<3>(want)[1]), tol);
}

// ---- user pytrees as arguments and results ----------------------------------------------------

TEST(ApiSurface, NestedUserPytreeArgumentsAndResultsMatchEagerAndRetraceOnNewStructure) {
  auto jf = mj::jit(model_fn, "model");
  Array x = ramp({2, 3}, 0.2f, -0.4f);
  ApiModel m2 = make_model(2);
  expect_model_out_near(jf(m2, x), model_fn(m2, x), 1e-5);  // oracle: the eager call
  expect_model_out_near(jf(make_model(2, 2), x), model_fn(make_model(2, 2), x), 1e-5);
  EXPECT_EQ(jf.trace_count(), 1);  // same structure and avals: one trace
  ApiModel m3 = make_model(3);
  expect_model_out_near(jf(m3, x), model_fn(m3, x), 1e-5);
  EXPECT_EQ(jf.trace_count(), 2);  // a longer vector of layers is another structure
  ApiModel renamed = make_model(2);
  renamed.extra.erase("shift");
  renamed.extra["shift2"] = ramp({4});
  EXPECT_THROW(jf(renamed, x), std::out_of_range);  // f's own map lookup fails: a new trace ran f
  EXPECT_EQ(jf.trace_count(), 3);
  EXPECT_EQ(jf.cache_size(), 2u);  // the failed trace is not cached
}

TEST(ApiSurface, ShapeDtypeStructsFillEveryArrayFieldIncludingAWeakScalar) {
  auto jf = mj::jit(model_fn, "model_sds");
  ApiModel abstract;
  abstract.enc = {ShapeDtypeStruct{{3, 4}}, ShapeDtypeStruct{{4}}};
  abstract.layers = {{ShapeDtypeStruct{{4, 4}}, ShapeDtypeStruct{{4}}}};
  abstract.extra = {{"scale", ShapeDtypeStruct{{}, mj::f32, {}, true}}, {"shift", ShapeDtypeStruct{{4}}}};
  abstract.tup = {ShapeDtypeStruct{{4}}, ShapeDtypeStruct{{2, 2}}};
  abstract.pr = {ShapeDtypeStruct{{5}}, ShapeDtypeStruct{{5}}};
  auto low = jf.lower(abstract, ShapeDtypeStruct{{2, 3}});
  EXPECT_EQ(jf.trace_count(), 1);
  auto comp = low.compile();
  ApiModel m = make_model(1);
  Array x = ramp({2, 3}, 0.2f, -0.4f);
  expect_model_out_near(comp(m, x), model_fn(m, x), 1e-5);
  expect_model_out_near(jf(m, x), model_fn(m, x), 1e-5);
  EXPECT_EQ(jf.trace_count(), 1);  // the lowered signature is the concrete call's: a cache hit
  // A strong f32[] where the weak one was lowered: another signature, named in the error.
  ApiModel strong = m;
  strong.extra["scale"] = mj::scalar(1.5, mj::f32);
  try {
    comp(strong, x);
    FAIL() << "expected TypeError";
  } catch (const mj::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("f32[]{weak}"), std::string::npos) << e.what();
  }
}

// ---- static arguments ----------------------------------------------------------------------------

TEST(ApiSurface, HashableUserStructIsStaticAndKeysTheCacheByValue) {
  auto f = [](const Array& x, const ApiConfig& c) {
    Array h = x;
    for (int i = 0; i < c.repeats; ++i) h = c.act == "tanh" ? mj::tanh(h) : mj::sin(h);
    return h;
  };
  auto jf = mj::jit(f);
  Array x = ramp({7}, 0.3f, -1);
  EXPECT_LE(max_rel(jf(x, ApiConfig{2, "tanh"}), mj::tanh(mj::tanh(x))), 1e-6);
  EXPECT_LE(max_rel(jf(x, ApiConfig{2, "sin"}), mj::sin(mj::sin(x))), 1e-6);
  EXPECT_LE(max_rel(jf(x, ApiConfig{1, "sin"}), mj::sin(x)), 1e-6);
  EXPECT_LE(max_rel(jf(x, ApiConfig{2, "tanh"}), mj::tanh(mj::tanh(x))), 1e-6);
  EXPECT_EQ(jf.trace_count(), 3);  // equal configurations hit
  // Named in static_argnums too (it already is static): the same behaviour.
  auto js = mj::jit(f, mj::JitOptions{.static_argnums = {1}});
  EXPECT_LE(max_rel(js(x, ApiConfig{3, "sin"}), mj::sin(mj::sin(mj::sin(x)))), 1e-6);
  EXPECT_EQ(js.trace_count(), 1);
}

TEST(ApiSurface, CppDoubleArgumentIsStaticAndRetracesPerValue) {
  // jit/jit.h: arguments that are not pytrees of Arrays are static (JAX would trace a Python
  // float as a weak f32[]; here each new value traces anew).
  auto jf = mj::jit([](const Array& x, double s) { return x * s; });
  Array x = ramp({4}, 1, 1);
  EXPECT_TRUE(bit_equal(jf(x, 2.0), ramp({4}, 2, 2)));
  EXPECT_TRUE(bit_equal(jf(x, 0.5), ramp({4}, 0.5f, 0.5f)));
  EXPECT_TRUE(bit_equal(jf(x, 2.0), ramp({4}, 2, 2)));
  EXPECT_EQ(jf.trace_count(), 2);
  // The weak-typed Array a Python float would be: traced once for every value, dtype kept.
  auto jw = mj::jit([](const Array& x, const Array& s) { return x * s; });
  Array bx = mj::astype(x, mj::bf16);
  Array got = jw(bx, weak_scalar(3.0f));
  EXPECT_EQ(got.aval().str(), (bx * weak_scalar(3.0f)).aval().str());  // eager: bf16 (weak promotion)
  EXPECT_EQ(got.aval().str(), "bf16[4]");
  jw(bx, weak_scalar(-7.0f));
  EXPECT_EQ(jw.trace_count(), 1);
  // A weak-typed result stays weak, as eagerly.
  auto jinc = mj::jit([](const Array& s) { return s + 1.0; });
  Array r = jinc(weak_scalar(2.0f));
  EXPECT_EQ(r.weak_type(), (weak_scalar(2.0f) + 1.0).weak_type());
  EXPECT_EQ(r.item<float>(), 3.0f);
}

TEST(ApiSurface, StaticDoublesAreKeyedByTheirBitsSoNegativeZeroIsItsOwnSignature) {
  // -0.0 == 0.0 and std::hash gives both the same value; the cache keys floating statics by their
  // bits, so the second call traces anew: 1 / -0 = -inf (IEEE 754 by hand), not +inf.
  auto jf = mj::jit([](const Array& x, double s) { return x / s; });
  Array one = mj::ones({2});
  EXPECT_EQ(jf(one, 0.0).data<float>()[0], INFINITY);
  EXPECT_EQ(jf(one, -0.0).data<float>()[0], -INFINITY);
  // A NaN static finds its own entry again (NaN != NaN under ==): no trace per call.
  jf(one, std::nan(""));
  const int traces = jf.trace_count();
  jf(one, std::nan(""));
  EXPECT_EQ(jf.trace_count(), traces);
}

TEST(ApiSurface, UnlistedFieldOfARegisteredStructKeepsItsTracedValue) {
  // `scale` is not a pytree field: as MJ_REGISTER_PYTREE documents (core/pytree.h), a jitted
  // function sees an unlisted field's value from the trace, so the second call computes w * 2.
  auto jf = mj::jit([](const ApiScaled& p) { return p.w * p.scale; });
  Array w = ramp({3}, 1, 1);  // 1, 2, 3
  EXPECT_TRUE(bit_equal(jf(ApiScaled{w, 2.0}), ramp({3}, 2, 2)));
  EXPECT_TRUE(bit_equal(jf(ApiScaled{w, 3.0}), ramp({3}, 2, 2)));
}

TEST(ApiSurface, ContainersOfNonArraysAreNotPytrees) {
  // A std::vector<int> or std::pair<int, int> argument is not a pytree of Arrays, so jit treats
  // it as static (the containers' pytree rules require pytree elements).
  EXPECT_FALSE(mj::PyTree<std::vector<int>>);
  EXPECT_FALSE((mj::PyTree<std::pair<int, int>>));
  EXPECT_FALSE((mj::PyTree<std::map<std::string, double>>));
  EXPECT_TRUE(mj::PyTree<std::vector<Array>>);
}

// ---- sharded lower and compile -------------------------------------------------------------------

TEST(ApiSurface, ShardedLowerWithNamedShardingStructsInAUserPytreeMatchesEager) {
  auto m = mesh22();
  mj::NamedSharding rows{m, mj::P("data")}, cols{m, mj::P(mj::None{}, "model")}, vec{m, mj::P("model")},
      out{m, mj::P("data", "model")};
  auto f = [](const ApiLayer& p, const Array& x) { return mj::tanh(mj::matmul(x, p.w) + p.b); };
  auto jf = mj::jit(f, mj::JitOptions{.name = "sharded_layer", .out_shardings = {out}});
  auto low = jf.lower(ApiLayer{ShapeDtypeStruct{{6, 8}, mj::f32, cols}, ShapeDtypeStruct{{8}, mj::f32, vec}},
                      ShapeDtypeStruct{{4, 6}, mj::f32, rows});
  ASSERT_NE(low.mesh, nullptr);
  ASSERT_EQ(low.in_shardings.size(), 3u);
  EXPECT_EQ(low.in_shardings[0].str(), mj::to_sharding(cols, 2).str());
  EXPECT_EQ(low.in_shardings[2].str(), mj::to_sharding(rows, 2).str());
  auto comp = low.compile();
  ApiLayer p{ramp({6, 8}, 0.02f, -0.4f), ramp({8}, 0.1f)};
  Array x = ramp({4, 6}, 0.1f, -1);
  Array y = comp(ApiLayer{mj::device_put(p.w, cols), mj::device_put(p.b, vec)}, mj::device_put(x, rows));
  EXPECT_LE(max_rel(y, f(p, x)), 1e-6);  // oracle: the eager call
  ASSERT_TRUE(y.is_sharded());
  EXPECT_TRUE(y.sharding() == out);
  EXPECT_FALSE(comp.as_text().empty());
}

TEST(ApiSurface, ShardedCompiledReportsOneDevicesCostAndMemory) {
  // A sharded Compiled reports one device's share, counted on the SPMD program. By hand: x's rows
  // split over "data" (2 devices), so each device multiplies [2,8] x [8,8]: 2*2*8*8 = 256 flops;
  // its arguments are 2*8 + 8*8 f32 = 320 bytes, its output [2,8] f32 = 64 bytes.
  auto m = mesh22();
  mj::NamedSharding rows{m, mj::P("data")};
  auto f = [](const Array& x, const Array& w) { return mj::matmul(x, w); };
  auto comp = mj::jit(f).lower(ShapeDtypeStruct{{4, 8}, mj::f32, rows}, ShapeDtypeStruct{{8, 8}}).compile();
  const auto cost = comp.cost_analysis();
  ASSERT_EQ(cost.count("flops"), 1u);
  EXPECT_EQ(cost.at("flops"), 256);
  EXPECT_EQ(cost.count("bytes accessed"), 1u);
  EXPECT_EQ(comp.memory_analysis().argument_size_in_bytes, 320);
  EXPECT_EQ(comp.memory_analysis().output_size_in_bytes, 64);
}

TEST(ApiSurface, ShardedCompiledCalledWithUnshardedArraysThrowsNamingTheSharding) {
  auto m = mesh22();
  mj::NamedSharding rows{m, mj::P("data")};
  auto comp = mj::jit([](const Array& x) { return x * 2.0; }).lower(ShapeDtypeStruct{{8, 2}, mj::f32, rows}).compile();
  Array x = ramp({8, 2});
  try {
    comp(x);
    FAIL() << "expected TypeError";
  } catch (const mj::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("data"), std::string::npos) << e.what();  // the lowered sharding
  }
  EXPECT_TRUE(bit_equal(comp(mj::device_put(x, rows)), x * 2.0));
}

TEST(ApiSurface, OneInShardingAppliesToEveryLeafOfAUserPytree) {
  auto m = mesh22();
  mj::NamedSharding rows{m, mj::P("data")};
  auto f = [](const ApiLayer& p) { return mj::sum(p.w, 1) + p.b; };
  auto jf = mj::jit(f, mj::JitOptions{.in_shardings = {rows}});
  ApiLayer p{ramp({4, 3}), ramp({4}, 0.5f)};
  Array y = jf(p);
  EXPECT_TRUE(bit_equal(y, f(p)));  // small integers: exact in any summation order
  auto low = jf.lower(p);
  ASSERT_EQ(low.in_shardings.size(), 2u);
  EXPECT_EQ(low.in_shardings[1].str(), mj::to_sharding(rows, 1).str());
}

// ---- Lowered and Compiled as values ----------------------------------------------------------------

TEST(ApiSurface, LoweredCopiedMovedAndCompiledTwiceShareOneExecutable) {
  auto f = [](const Array& x) { return mj::exp(x) * 0.5 + x; };
  Array x = ramp({33}, 0.125f, -2);
  auto low = mj::jit(f).lower(x);
  auto copy = low;
  auto moved = std::move(copy);
  auto c1 = low.compile();
  auto c2 = low.compile();
  auto c3 = moved.compile();
  EXPECT_EQ(c1.executable(), c2.executable());
  EXPECT_EQ(c1.executable(), c3.executable());
  EXPECT_LE(max_rel(c3(x), f(x)), 1e-6);
  EXPECT_TRUE(bit_equal(c1(x), c3(x)));
}

TEST(ApiSurface, CompiledOutlivesItsJitAndItsClosureCapturedConstant) {
  Array x = ramp({16}, 0.5f);
  auto make = [&] {
    Array c = ramp({16}, 1, 3);  // 3, 4, ...
    auto jf = mj::jit([c](const Array& v) { return v * c + 1.0; });
    return jf.lower(x).compile();
  };
  auto comp = make();  // the Jit, its lambda and the local c are gone
  Array y = comp(x);
  for (int64_t i = 0; i < 16; ++i)  // by hand: 0.5 i (i + 3) + 1
    EXPECT_EQ(y.data<float>()[i], 0.5f * float(i) * (float(i) + 3) + 1) << i;
}

TEST(ApiSurface, CompiledCalledWithWrongStructureOrDtypeOrArityThrowsTypeError) {
  auto f = [](const ApiLayer& p, const Array& x) { return mj::matmul(x, p.w) + p.b; };
  ApiLayer p{ramp({3, 2}), ramp({2})};
  Array x = ramp({4, 3});
  auto comp = mj::jit(f, "affine").lower(p, x).compile();
  EXPECT_TRUE(bit_equal(comp(p, x), f(p, x)));
  auto expect_type_error = [](auto&& call, const char* needle) {
    try {
      call();
      ADD_FAILURE() << "expected TypeError";
    } catch (const mj::TypeError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("'affine'"), std::string::npos) << e.what();
    }
  };
  expect_type_error([&] { comp(p, mj::astype(x, mj::f64)); }, "f64[4,3]");
  expect_type_error([&] { comp(p.w, p.b, x); }, "f32[3,2]");  // three Arrays, not (ApiLayer, Array)
  expect_type_error([&] { comp(p); }, "ApiLayer");             // one argument short
}

// ---- threads ------------------------------------------------------------------------------------------

TEST(ApiSurface, ConcurrentLowerAndCallsOfSeveralSignaturesTraceOncePerSignature) {
  auto f = [](const Array& x) { return mj::sum(x * x) + 1.0; };
  auto jf = mj::jit(f);
  std::latch start(4);
  std::vector<std::vector<Array>> outs(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      start.arrive_and_wait();
      Array x = ramp({int64_t(t % 2) + 2});  // two signatures: f32[2], f32[3]
      auto comp = jf.lower(x).compile();
      for (int r = 0; r < 10; ++r) outs[size_t(t)].push_back(comp(x));
      outs[size_t(t)].push_back(jf(x));
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(jf.trace_count(), 2);
  for (int t = 0; t < 4; ++t)
    for (auto& o : outs[size_t(t)])  // by hand: 0 + 1 + 1 = 2 for [0, 1]; 0 + 1 + 4 + 1 = 6 for [0, 1, 2]
      EXPECT_EQ(o.item<float>(), t % 2 ? 6.0f : 2.0f);
}

// ---- analyses -----------------------------------------------------------------------------------------

TEST(ApiSurface, MemoryAnalysisHostFieldsForPinnedHostInsideJit) {
  // x (device, 1024 B) -> x * 2 moved to pinned_host (1024 B output there) and x + 1 on the device.
  auto f = [](const Array& x) { return std::pair{mj::device_put(x * 2.0, "pinned_host"), x + 1.0}; };
  Array x = ramp({256});
  auto comp = mj::jit(f).lower(x).compile();
  const mj::CompiledMemoryStats mem = comp.memory_analysis();
  EXPECT_EQ(mem.argument_size_in_bytes, 1024);
  EXPECT_EQ(mem.host_argument_size_in_bytes, 0);
  EXPECT_EQ(mem.output_size_in_bytes, 1024);       // x + 1
  EXPECT_EQ(mem.host_output_size_in_bytes, 1024);  // the pinned_host copy
  EXPECT_EQ(mem.host_alias_size_in_bytes, 0);
  EXPECT_EQ(mem.host_peak_memory_in_bytes, mem.peak_bytes("pinned_host") + mem.peak_bytes("unpinned_host"));
  EXPECT_GE(mem.peak_bytes(mj::MemoryKind::pinned_host), 1024);
  EXPECT_EQ(mem.peak_bytes(mj::MemoryKind::device), mem.peak_memory_in_bytes);
  auto [h, d] = comp(x);
  EXPECT_EQ(h.memory_kind(), mj::MemoryKind::pinned_host);
  EXPECT_TRUE(bit_equal(h, mj::device_put(x * 2.0, "pinned_host")));
  EXPECT_TRUE(bit_equal(d, x + 1.0));
}

TEST(ApiSurface, CostAnalysisCountsAScanBodyOncePerIteration) {
  // jit/passes/cost_analysis.h: a scan body counts `length` times. Body: tanh(c * 2 + x) on f32[8]:
  // 2 flops and 1 transcendental per element, so 10 iterations: 160 flops, 80 transcendentals.
  auto f = [](const Array& c0, const Array& xs) {
    return mj::scan([](const Array& c, const Array& x) { return std::pair{mj::tanh(c * 2.0 + x), mj::None{}}; }, c0,
                    xs)
        .first;
  };
  Array c0 = ramp({8}, 0.1f), xs = ramp({10, 8}, 0.01f, -0.4f);
  auto comp = mj::jit(f).lower(c0, xs).compile();
  const auto cost = comp.cost_analysis();
  EXPECT_DOUBLE_EQ(cost.at("flops"), 160.0);
  EXPECT_DOUBLE_EQ(cost.at("transcendentals"), 80.0);
  EXPECT_LE(max_rel(comp(c0, xs), f(c0, xs)), 1e-6);
  // With keep_llvm_ir the text holds the optimized LLVM IR of the loop program.
  auto with_ir = mj::jit(f, mj::JitOptions{.keep_llvm_ir = true}).lower(c0, xs).compile();
  EXPECT_NE(with_ir.as_text(true).find("define "), std::string::npos);
  EXPECT_LE(max_rel(with_ir(c0, xs), f(c0, xs)), 1e-6);
}

// ---- optimizers under jit ----------------------------------------------------------------------------

Array lin_loss(const ApiLayer& p, const Array& xb, const Array& yb) {
  return mj::mean(mj::square(mj::matmul(xb, p.w) + p.b - yb));
}

TEST(ApiSurface, FiveJittedDonatedAdamStepsEqualFiveEagerStepsAndTraceOnce) {
  mj::optim::Adam opt{.lr = 1e-2};
  ApiLayer p0{ramp({4, 2}, 0.1f, -0.3f), ramp({2}, 0.05f)};
  Array xb = ramp({6, 4}, 0.2f, -1), yb = ramp({6, 2}, -0.1f, 0.5f);
  auto step = [opt](const ApiLayer& p, const mj::optim::AdamState<ApiLayer>& s, const Array& x, const Array& y) {
    auto [v, g] = mj::value_and_grad(lin_loss)(p, x, y);
    auto [np, ns] = opt.update(g, s, p);
    return std::tuple{v, np, ns};
  };
  auto jstep = mj::jit(step, mj::JitOptions{.donate_argnums = {0, 1}});
  ApiLayer pe = p0, pj{p0.w * 1.0, p0.b * 1.0};
  auto se = opt.init(p0), sj = opt.init(p0);
  for (int i = 0; i < 5; ++i) {
    auto [ve, npe, nse] = step(pe, se, xb, yb);  // oracle: the same step run eagerly
    auto [vj, npj, nsj] = jstep(pj, sj, xb, yb);
    EXPECT_LE(max_rel(vj, ve), 1e-5) << i;
    pe = npe, se = nse, pj = npj, sj = nsj;
  }
  EXPECT_LE(max_rel(pj.w, pe.w), 1e-5);
  EXPECT_LE(max_rel(pj.b, pe.b), 1e-5);
  EXPECT_LE(max_rel(sj.nu.w, se.nu.w), 1e-5);
  EXPECT_EQ(sj.step.aval().str(), "i32[]");
  EXPECT_EQ(sj.step.item<int>(), 5);
  EXPECT_EQ(jstep.trace_count(), 1);
  // SGD with momentum and Nesterov, jitted with the same step signature every time.
  mj::optim::SGD sgd{.lr = 0.1, .momentum = 0.9, .nesterov = true};
  auto sgd_step = mj::jit([sgd](const ApiLayer& p, const mj::optim::SGDState<ApiLayer>& s, const Array& x,
                                const Array& y) { return sgd.update(mj::grad(lin_loss)(p, x, y), s, p); });
  ApiLayer qe = p0, qj = p0;
  auto te = sgd.init(p0), tj = sgd.init(p0);
  for (int i = 0; i < 5; ++i) {
    auto [nqe, nte] = sgd.update(mj::grad(lin_loss)(qe, xb, yb), te, qe);
    auto [nqj, ntj] = sgd_step(qj, tj, xb, yb);
    qe = nqe, te = nte, qj = nqj, tj = ntj;
  }
  EXPECT_LE(max_rel(qj.w, qe.w), 1e-5);
  EXPECT_LE(max_rel(tj.momentum.b, te.momentum.b), 1e-5);
  EXPECT_EQ(sgd_step.trace_count(), 1);
}

// ---- donation of pytree members, block_until_ready --------------------------------------------------

TEST(ApiSurface, DonatedUserPytreeMembersHoldTheOutputsAndCannotBeRead) {
  auto jf = mj::jit([](const ApiLayer& p, const Array& g) { return ApiLayer{p.w - g, p.b * 2.0}; },
                    mj::JitOptions{.donate_argnums = {0}});
  ApiLayer p{ramp({64}), ramp({32}, 1, 1)};
  Array g = ramp({64}, 0.5f);
  // By hand: arguments 256 + 128 + 256 B; both outputs (256 + 128 B) live in donated buffers.
  const mj::CompiledMemoryStats mem = jf.lower(p, g).compile().memory_analysis();
  EXPECT_EQ(mem.argument_size_in_bytes, 640);
  EXPECT_EQ(mem.alias_size_in_bytes, 384);
  EXPECT_EQ(mem.peak_memory_in_bytes, 640);
  const void* w_bytes = p.w.raw_data();
  const void* b_bytes = p.b.raw_data();
  ApiLayer q = jf(p, g);
  EXPECT_EQ(q.w.raw_data(), w_bytes);  // each output reuses the donated leaf of its size
  EXPECT_EQ(q.b.raw_data(), b_bytes);
  EXPECT_TRUE(bit_equal(q.w, ramp({64}, 0.5f)));
  EXPECT_TRUE(bit_equal(q.b, ramp({32}, 2, 2)));
  EXPECT_THROW(p.w.data<float>(), mj::ValueError);
  EXPECT_THROW(p.b.data<float>(), mj::ValueError);
  // One buffer twice inside the donated pytree, or donated and passed again undonated: refused.
  Array z = ramp({64});
  EXPECT_THROW(jf(ApiLayer{z, z}, g), mj::ValueError);
  auto jg = mj::jit([](const ApiLayer& p, const Array& g) { return p.w + g; }, mj::JitOptions{.donate_argnums = {0}});
  EXPECT_THROW(jg(ApiLayer{z, ramp({32})}, z), mj::ValueError);
  EXPECT_EQ(z.data<float>()[5], 5.0f);  // nothing ran, nothing consumed
}

TEST(ApiSurface, BlockUntilReadyOnNestedPytreesWithShardedAndAbstractLeaves) {
  ApiModel m = make_model(2);
  m.pr.first = mj::device_put(ramp({8}), mj::NamedSharding{mesh22(), mj::P("data")});
  m.extra["abstract"] = ShapeDtypeStruct{{3}};
  EXPECT_EQ(&mj::block_until_ready(m), &m);
  auto out = mj::block_until_ready(mj::jit(model_fn)(make_model(1), ramp({2, 3})));
  EXPECT_EQ(std::get<3>(out).size(), 2u);
  EXPECT_EQ(std::get<2>(out).at("pr").aval().str(), "f32[5]");
}

// ---- closures, nested jit, zero arguments -------------------------------------------------------------

TEST(ApiSurface, ClosureCapturedConstantDonatedElsewhereGivesAClearErrorOnTheNextCall) {
  Array c = ramp({8}, 1, 1);
  auto jf = mj::jit([c](const Array& x) { return x + c; });
  EXPECT_TRUE(bit_equal(jf(ramp({8})), ramp({8}, 2, 1)));
  auto consume = mj::jit([](const Array& v) { return v * 3.0; }, mj::JitOptions{.donate_argnums = {0}});
  consume(c);  // c's buffer now holds consume's output; the captured copy shares it
  EXPECT_THROW(jf(ramp({8})), mj::ValueError);
}

TEST(ApiSurface, NestedJitWithStaticArgumentsAndZeroArgumentJit) {
  auto inner = mj::jit([](const Array& x, int k) { return x * double(k); }, "inner");
  auto outer = mj::jit([inner](const Array& x) { return inner(x, 2) + inner(x, 3); }, "outer");
  Array x = ramp({5}, 1, 1);
  EXPECT_TRUE(bit_equal(outer(x), ramp({5}, 5, 5)));  // by hand: 2x + 3x
  EXPECT_EQ(inner.trace_count(), 2);
  const std::string lowered = mj::to_string(outer.lower(x).program);
  EXPECT_NE(lowered.find("name=inner"), std::string::npos) << lowered;
  auto none = mj::jit([] { return mj::ones({3}) * 4.0; });
  EXPECT_TRUE(bit_equal(none(), mj::ones({3}) * 4.0));
  EXPECT_TRUE(bit_equal(none.lower().compile()(), mj::ones({3}) * 4.0));
  auto empty = mj::jit([](const Array&) { return std::vector<Array>{}; });
  EXPECT_TRUE(empty(x).empty());
}

// ---- invalid shapes and concurrent donation -----------------------------------------------------

TEST(ApiSurface, ShapeDtypeStructWithANegativeOrOverflowingShapeThrows) {
  auto jf = mj::jit([](const Array& p) { return p * 2.0; });
  // A negative dim is no shape (Array::allocate refuses one), nor is 2^80 elements (int64
  // overflow): ValueError when the struct becomes an abstract Array, at lower.
  EXPECT_THROW(jf.lower(ShapeDtypeStruct{{-1, 3}}), mj::ValueError);
  EXPECT_THROW(jf.lower(ShapeDtypeStruct{{int64_t(1) << 40, int64_t(1) << 40}}), mj::ValueError);
}

TEST(ApiSurface, ConcurrentCallsDonatingOneArrayRunOnce) {
  // Two threads call a donating jit with the same Array at once: as for the same Array donated
  // twice in one call, or after an earlier call, one call runs and the other throws ValueError
  // (the executor claims donated buffers atomically before running).
  auto jf = mj::jit([](const Array& p) { return p - 1.0; }, mj::JitOptions{.donate_argnums = {0}});
  jf(ramp({1 << 16}));  // compiled before the races
  int both = 0, null_outputs = 0;
  for (int r = 0; r < 200; ++r) {
    Array p = ramp({1 << 16});
    std::latch start(2);
    Array out[2];
    bool ok[2] = {false, false};
    auto call = [&](int k) {
      start.arrive_and_wait();
      try {
        out[k] = jf(p);
        ok[k] = true;
      } catch (const mj::ValueError&) {
      }
    };
    std::thread t0(call, 0), t1(call, 1);
    t0.join();
    t1.join();
    both += ok[0] && ok[1];
    for (int k = 0; k < 2; ++k)
      if (ok[k] && out[k].raw_data() == nullptr) ++null_outputs;  // never dereferenced here
  }
  EXPECT_EQ(both, 0);
  EXPECT_EQ(null_outputs, 0);
}

}  // namespace
