// Tests of the staged jit API (jit/jit.h): one Jit type, jit(f)(args), lower/compile and their
// texts and analyses, ShapeDtypeStruct, static and donated arguments, the signature and
// executable caches, dump_dir, nested jit, transformations of and under jit, bad input.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <latch>
#include <sstream>
#include <thread>

#include <minijax/minijax.h>

#include "core/parser.h"
#include "jit/compile_cache.h"
#include "jit/codegen/lower/lowering.h"

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

std::shared_ptr<const mj::Mesh> mesh2() {
  return std::make_shared<const mj::Mesh>(std::vector<int>{0, 1}, mj::Shape{2}, std::vector<std::string>{"x"});
}

Array poly(const Array& x) { return x * x * 3.0 + x; }

struct Params {
  Array w, b;
};

}  // namespace

MJ_REGISTER_PYTREE(Params, w, b)

// A static argument type whose values all hash alike: only == tells them apart.
struct Colliding {
  int v = 0;
  bool operator==(const Colliding&) const = default;
};
template <>
struct std::hash<Colliding> {
  size_t operator()(const Colliding&) const { return 7; }
};
struct NotHashable {
  int v = 0;
};

namespace {

// ---- one Jit type; compile on the first call of a signature, native code afterwards -------------

TEST(JitApi, EveryOverloadReturnsOneJitType) {
  auto f = [](const Array& x) { return x * 2.0; };
  using F = decltype(f);
  static_assert(std::is_same_v<decltype(mj::jit(f)), mj::Jit<F>>);
  static_assert(std::is_same_v<decltype(mj::jit(f, "named")), mj::Jit<F>>);
  static_assert(std::is_same_v<decltype(mj::jit(f, {})), mj::Jit<F>>);
  static_assert(std::is_same_v<decltype(mj::jit(f, mj::JitOptions{.name = "n"})), mj::Jit<F>>);
  static_assert(std::is_same_v<decltype(mj::closed_call(f, "c")), mj::Staged<F>>);  // core keeps Staged
  static_assert(std::is_same_v<decltype(mj::jit(f).lower(std::declval<Array>())), mj::Lowered<Array>>);
  static_assert(std::is_same_v<decltype(mj::jit(f).lower(std::declval<Array>()).compile()), mj::Compiled<Array>>);
  Array x = ramp({5});
  EXPECT_TRUE(bit_equal(mj::jit(f, {})(x), f(x)));
  EXPECT_TRUE(bit_equal(mj::jit(f, "named")(x), f(x)));
}

TEST(JitApi, CompilesOnTheFirstCallOfASignatureOnly) {
  auto jf = mj::jit([](const Array& x) { return x * x * 3.5 + x; });  // a program no other test has
  Array x = ramp({64}, 0.25f, -3);
  const size_t before = mj::compilation_cache_stats().generated;
  Array y1 = jf(x);
  EXPECT_EQ(mj::compilation_cache_stats().generated, before + 1);
  Array y2 = jf(x), y3 = jf(ramp({64}, 0.5f));
  EXPECT_EQ(mj::compilation_cache_stats().generated, before + 1);  // native code reused
  EXPECT_EQ(jf.trace_count(), 1);
  // The executable the calls ran is the one lower/compile finds (shared process-wide).
  auto comp = jf.lower(x).compile();
  ASSERT_NE(comp.executable(), nullptr);
  EXPECT_NE(comp.executable()->loaded.entry, nullptr);
  EXPECT_EQ(mj::compilation_cache_stats().generated, before + 1);
  EXPECT_TRUE(bit_equal(y1, x * x * 3.5 + x));
  EXPECT_TRUE(bit_equal(comp(x), y1));
}

TEST(JitApi, CachedCallOverheadWith21Leaves) {
  auto jf = mj::jit([](const std::vector<Array>& xs) { return xs[0] + xs[20]; });
  std::vector<Array> xs;
  for (int i = 0; i < 21; ++i) xs.push_back(mj::full({4}, float(i), mj::f32));
  Array y = jf(xs);
  auto comp = jf.lower(xs).compile();
  const mj::Executable& exe = *comp.executable();
  using C = std::chrono::steady_clock;
  const int n = 20000;
  auto t0 = C::now();
  for (int i = 0; i < n; ++i) y = mj::block_until_ready(jf(xs));
  const double per_call = std::chrono::duration<double>(C::now() - t0).count() / n;
  // The kernel alone: the entry function on the same buffers.
  std::vector<void*> ins(21);
  for (size_t i = 0; i < 21; ++i) ins[i] = const_cast<void*>(xs[i].raw_data());
  Array o = mj::zeros({4}, mj::f32);
  void* outs[1] = {o.mutable_data<float>()};
  void* arenas[3] = {nullptr, nullptr, nullptr};
  t0 = C::now();
  for (int i = 0; i < n; ++i) exe.loaded.entry(ins.data(), outs, arenas);
  const double per_kernel = std::chrono::duration<double>(C::now() - t0).count() / n;
  std::printf("[ measured ] cached call with 21 leaves: %.2f us per call, kernel %.3f us, caller overhead %.2f us\n",
              per_call * 1e6, per_kernel * 1e6, (per_call - per_kernel) * 1e6);
  EXPECT_EQ(jf.trace_count(), 1);
  EXPECT_EQ(y.data<float>()[0], 20.0f);
  EXPECT_EQ(o.data<float>()[3], 20.0f);
}

// ---- lower, ShapeDtypeStruct, compile ------------------------------------------------------------

TEST(JitApi, LoweredIsReturnedByValueAndPrintsTheTracedProgram) {
  auto f = [](const Array& x, const Array& y) { return mj::matmul(x, y) * 2.0 + 1.0; };
  Array x = ramp({3, 4}), y = ramp({4, 2});
  auto low = mj::jit(f).lower(x, y);
  static_assert(!std::is_reference_v<decltype(mj::jit(f).lower(x, y))>);
  // Today's content: a header, then the traced program (make_jaxpr's, nothing closed over).
  EXPECT_EQ(low.as_text(), "# unpartitioned program (no sharding given: one device)\n" + mj::to_string(low.program));
  EXPECT_EQ(mj::to_string(low.program), mj::to_string(mj::make_jaxpr(f)(x, y)));
  EXPECT_EQ(low.mesh, nullptr);
}

TEST(JitApi, ShapeDtypeStructIsAnAbstractArrayThatFillsPytreesAndCannotRun) {
  ShapeDtypeStruct sds{{2, 3}, mj::f32};
  Array a = sds;
  EXPECT_TRUE(a.is_abstract());
  EXPECT_FALSE(a.is_concrete());
  EXPECT_EQ(a.aval().str(), "f32[2,3]");
  EXPECT_THROW(a.data<float>(), mj::ValueError);  // no buffer
  auto f = [](const Params& p, const Array& x) { return mj::matmul(x, p.w) + p.b; };
  auto jf = mj::jit(f, "affine");
  auto low = jf.lower(Params{ShapeDtypeStruct{{3, 4}}, ShapeDtypeStruct{{4}}}, sds);
  const auto in = low.program.in_avals();
  ASSERT_EQ(in.size(), 3u);
  EXPECT_EQ(in[0].str(), "f32[3,4]");
  EXPECT_EQ(in[2].str(), "f32[2,3]");
  auto comp = low.compile();
  Params p{ramp({3, 4}, 0.5f), ramp({4}, 1, -2)};
  Array x = ramp({2, 3}, 1, 1);
  EXPECT_TRUE(bit_equal(comp(p, x), f(p, x)));  // the same GEMM call as eager, then one add
  // Running on one throws at the call, naming the argument.
  try {
    jf(Params{ShapeDtypeStruct{{3, 4}}, p.b}, x);
    FAIL() << "expected TypeError";
  } catch (const mj::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("argument 0 (leaf 0 of 2)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ShapeDtypeStruct"), std::string::npos) << e.what();
  }
  EXPECT_THROW(comp(p, Array(sds)), mj::TypeError);
}

TEST(JitApi, ShapeDtypeStructShardingActsAsAnInSharding) {
  auto m = mesh2();
  mj::NamedSharding ns{m, mj::P("x")};
  auto jf = mj::jit([](const Array& x) { return x * 2.0; });
  auto low = jf.lower(ShapeDtypeStruct{{8, 4}, mj::f32, ns});
  ASSERT_NE(low.mesh, nullptr);
  EXPECT_EQ(*low.mesh, *m);
  ASSERT_EQ(low.in_shardings.size(), 1u);
  EXPECT_EQ(low.in_shardings[0].str(), mj::to_sharding(ns, 2).str());
  EXPECT_NE(low.as_text().find("f32[4,4]"), std::string::npos) << low.as_text();  // local shapes
  Array x = ramp({8, 4});
  Array y = low.compile()(mj::device_put(x, ns));
  EXPECT_TRUE(bit_equal(y, x * 2.0));
  // weak_type is part of the signature: a weak and a strong f32[] lower separately.
  auto js = mj::jit([](const Array& s) { return s + 1.0; });
  auto weak = js.lower(ShapeDtypeStruct{{}, mj::f32, {}, true});
  auto strong = js.lower(ShapeDtypeStruct{{}, mj::f32});
  EXPECT_TRUE(weak.program.in_avals()[0].weak_type);
  EXPECT_FALSE(strong.program.in_avals()[0].weak_type);
  EXPECT_EQ(js.cache_size(), 2u);
}

TEST(JitApi, CompiledPrintsKernelsBufferPlanAndLlvmIrOnRequest) {
  auto f = [](const Array& x) { return x * x * 2.75 - x; };
  Array x = ramp({100});
  auto comp = mj::jit(f, "texts").lower(x).compile();
  const std::string t = comp.as_text();
  for (const char* part : {"# compiled 'texts'", "# buffer plan", "# kernels (KIR)", "fusion", "[fused loop]"})
    EXPECT_NE(t.find(part), std::string::npos) << part << "\n" << t;
  EXPECT_NE(comp.as_text(true).find("(not kept"), std::string::npos);
  auto with_ir = mj::jit(f, mj::JitOptions{.name = "texts", .keep_llvm_ir = true}).lower(x).compile();
  const std::string ir = with_ir.as_text(true);
  EXPECT_NE(ir.find("# optimized LLVM IR"), std::string::npos);
  EXPECT_NE(ir.find("define "), std::string::npos) << ir;
  EXPECT_EQ(ir.find("(not kept"), std::string::npos);
  EXPECT_TRUE(bit_equal(with_ir(x), f(x)));
}

TEST(JitApi, CompiledRejectsAnotherSignatureAndTraces) {
  auto comp = mj::jit(poly).lower(ramp({4})).compile();
  EXPECT_TRUE(bit_equal(comp(ramp({4}, 2)), poly(ramp({4}, 2))));
  try {
    comp(ramp({5}));
    FAIL() << "expected TypeError";
  } catch (const mj::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("f32[4]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[5]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mj::grad([&](const Array& x) { return mj::sum(comp(x)); })(ramp({4})), mj::TypeError);
}

// ---- analyses ---------------------------------------------------------------------------------------

TEST(JitApi, CostAnalysisCountsMatmulAndElementwiseFlopsByHand) {
  const int64_t m = 32, k = 64, n = 16;
  auto f = [](const Array& a, const Array& b) { return mj::matmul(a, b) * 3.0 + 1.0; };
  auto comp = mj::jit(f).lower(ramp({m, k}), ramp({k, n})).compile();
  auto cost = comp.cost_analysis();
  ASSERT_EQ(cost.size(), 3u);
  // By hand: the GEMM 2mnk, then one mul and one add per output element (one fused kernel).
  EXPECT_DOUBLE_EQ(cost.at("flops"), double(2 * m * n * k + 2 * m * n));
  EXPECT_DOUBLE_EQ(cost.at("transcendentals"), 0.0);
  // Bytes: the GEMM reads a and b and writes t; the fusion reads t and writes the output.
  EXPECT_DOUBLE_EQ(cost.at("bytes accessed"), double(4 * (m * k + k * n + m * n) + 4 * (m * n + m * n)));
}

TEST(JitApi, MemoryAnalysisMatchesTheHandCountAndTheAllocator) {
  // f32: a 8192 B, b 4096 B, t = a b 2048 B, the output (row sums) 128 B: exact size classes.
  const int64_t m = 32, k = 64, n = 16;
  auto f = [](const Array& a, const Array& b) { return mj::sum(mj::matmul(a, b) * 3.0, 1); };
  Array a = ramp({m, k}, 1.0f / 64), b = ramp({k, n}, 1.0f / 64);
  auto jf = mj::jit(f);
  auto mem = jf.lower(a, b).compile().memory_analysis();
  // By hand: arguments a + b; the output; no alias; one temporary, the GEMM's result t (the
  // fused mul + row sum reads it and writes the smaller output); peak = their sum.
  EXPECT_EQ(mem.argument_size_in_bytes, 4 * (m * k + k * n));
  EXPECT_EQ(mem.output_size_in_bytes, 4 * m);
  EXPECT_EQ(mem.alias_size_in_bytes, 0);
  EXPECT_EQ(mem.temp_size_in_bytes, 4 * m * n);
  EXPECT_EQ(mem.peak_memory_in_bytes, 4 * (m * k + k * n) + 4 * m + 4 * m * n);
  EXPECT_EQ(mem.peak_bytes(mj::MemoryKind::device), mem.peak_memory_in_bytes);
  EXPECT_EQ(mem.peak_bytes("pinned_host"), 0);
  EXPECT_THROW(mem.peak_bytes("hbm"), mj::ValueError);
  // Measured: a call (compiled already) obtains the output buffer and the temporary arena from
  // the allocator, both alive at the peak; the arguments were allocated before.
  Array warm = jf(a, b);
  const int64_t in_use = mj::memory_stats(0).bytes_in_use;
  mj::reset_peak_memory_stats(0);
  Array y = jf(a, b);
  const mj::MemoryStats after = mj::memory_stats(0);
  EXPECT_EQ(after.peak_bytes_in_use - in_use, mem.output_size_in_bytes + mem.temp_size_in_bytes);
  EXPECT_EQ(after.bytes_in_use - in_use, mem.output_size_in_bytes);  // the arena went back
  EXPECT_GE(after.peak_bytes_in_use, mem.peak_memory_in_bytes);      // the arguments are in use too
  EXPECT_LE(max_rel(y, f(a, b)), 1e-6);
}

TEST(JitApi, MemoryAnalysisPerKindAndDonationAlias) {
  // A pinned_host argument scaled in host memory, and a donated device argument updated in place.
  auto f = [](const Array& h, const Array& p) { return std::pair{h * 2.0, p - 1.0}; };
  Array h = mj::device_put(ramp({256}), "pinned_host"), p = ramp({512});
  auto jf = mj::jit(f, mj::JitOptions{.donate_argnums = {1}});
  auto mem = jf.lower(h, p).compile().memory_analysis();
  const size_t pinned = size_t(mj::MemoryKind::pinned_host);
  EXPECT_EQ(mem.argument[pinned], 1024);
  EXPECT_EQ(mem.output[pinned], 1024);
  EXPECT_EQ(mem.host_argument_size_in_bytes, 1024);
  EXPECT_EQ(mem.peak_bytes("pinned_host"), 2048);  // argument + output, no alias, no temp
  EXPECT_EQ(mem.argument_size_in_bytes, 2048);
  EXPECT_EQ(mem.alias_size_in_bytes, 2048);        // the output lives in the donated buffer
  EXPECT_EQ(mem.peak_bytes(mj::MemoryKind::device), 2048);
  Array h2 = mj::device_put(ramp({256}), "pinned_host");
  const int64_t dev_in_use = mj::memory_stats(0).bytes_in_use;
  mj::reset_peak_memory_stats(0);
  auto [hy, py] = jf(h2, p);
  EXPECT_EQ(mj::memory_stats(0).peak_bytes_in_use, dev_in_use);  // nothing new on the device
  EXPECT_EQ(hy.memory_kind(), mj::MemoryKind::pinned_host);
  EXPECT_TRUE(bit_equal(py, ramp({512}, 1, -1)));
}

// ---- options -----------------------------------------------------------------------------------------

TEST(JitApi, InAndOutShardingsPartitionAndPlaceTheOutputs) {
  auto m = mesh2();
  mj::NamedSharding rows{m, mj::P("x")}, repl{m, mj::P()};
  auto jf = mj::jit(poly, mj::JitOptions{.in_shardings = {rows}, .out_shardings = {repl}});
  Array x = ramp({8, 2}, 0.5f);
  Array y = jf(x);
  EXPECT_TRUE(bit_equal(y, poly(x)));
  ASSERT_TRUE(y.is_sharded());
  EXPECT_TRUE(y.sharding() == repl);
  ASSERT_NE(jf.last_run(), nullptr);
  EXPECT_EQ(jf.last_run()->outputs.size(), 2u);  // one output per device
}

// A mesh may name any ids, but running on one that names a device beyond the configured count
// (tests/main.cc: 8) is refused before anything runs, naming the id and the count.
TEST(JitApi, MeshNamingAnUnknownDeviceIsRefusedAtTheCall) {
  auto m = std::make_shared<const mj::Mesh>(std::vector<int>{0, 9}, mj::Shape{2}, std::vector<std::string>{"x"});
  mj::NamedSharding rows{m, mj::P("x")};
  auto jf = mj::jit(poly, mj::JitOptions{.in_shardings = {rows}});
  Array x = ramp({8, 2}, 0.5f);
  try {
    (void)jf(x);
    ADD_FAILURE() << "a mesh naming device 9 of 8 ran";
  } catch (const mj::ShardingError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("names device 9"), std::string::npos) << what;
    EXPECT_NE(what.find("there are 8 devices"), std::string::npos) << what;
  }
  EXPECT_TRUE(bit_equal(x, ramp({8, 2}, 0.5f)));  // the argument is untouched
}

TEST(JitApi, StaticArgumentsAreHashedComparedAndNeverArrays) {
  static_assert(mj::detail::StaticArgument<int> && mj::detail::StaticArgument<std::string>);
  static_assert(!mj::detail::StaticArgument<NotHashable>);  // jit(f)(x, NotHashable{}) fails to compile
  auto jf = mj::jit([](const Array& x, Colliding c, const std::string& s) { return x * double(c.v + int(s.size())); });
  Array x = ramp({6});
  EXPECT_TRUE(bit_equal(jf(x, Colliding{1}, "ab"), x * 3.0));
  EXPECT_TRUE(bit_equal(jf(x, Colliding{2}, "ab"), x * 4.0));  // same hash, another value
  EXPECT_TRUE(bit_equal(jf(x, Colliding{1}, "abc"), x * 4.0));
  EXPECT_TRUE(bit_equal(jf(x, Colliding{1}, "ab"), x * 3.0));
  EXPECT_EQ(jf.trace_count(), 3);
  EXPECT_EQ(jf.cache_size(), 3u);
  // static_argnums naming an Array (or a pytree of them): Arrays are not hashable.
  auto bad = mj::jit([](const Array& a, const Array& b) { return a + b; }, mj::JitOptions{.static_argnums = {-1}});
  EXPECT_THROW(bad(x, x), mj::TypeError);
  auto bad_tree = mj::jit([](const std::vector<Array>& v) { return v[0]; }, mj::JitOptions{.static_argnums = {0}});
  EXPECT_THROW(bad_tree(std::vector<Array>{x}), mj::TypeError);
  auto out_of_range = mj::jit([](const Array& a) { return a; }, mj::JitOptions{.static_argnums = {1}});
  EXPECT_THROW(out_of_range(x), mj::ValueError);
}

TEST(JitApi, DonatedBufferHoldsTheOutputAndTheDonatedArrayCannotBeRead) {
  auto jf = mj::jit([](const Array& p, const Array& g) { return p - g * 0.5; }, mj::JitOptions{.donate_argnums = {0}});
  Array p = ramp({1024}), g = ramp({1024}, 2);
  const void* p_bytes = p.raw_data();
  Array y = jf(p, g);
  EXPECT_EQ(y.raw_data(), p_bytes);  // reused for the output of its size
  EXPECT_TRUE(bit_equal(y, ramp({1024}, 0)));
  EXPECT_THROW(p.data<float>(), mj::ValueError);
  EXPECT_THROW(jf(p, g), mj::ValueError);  // donated before
  // A donated argument no output can reuse (another size) is consumed all the same.
  auto js = mj::jit([](const Array& q) { return mj::sum(q); }, mj::JitOptions{.donate_argnums = {0}});
  Array q = ramp({64});
  EXPECT_EQ(js(q).item<float>(), 2016.0f);  // 0 + 1 + ... + 63
  EXPECT_THROW(q.data<float>(), mj::ValueError);
}

TEST(JitApi, DonatedArgumentPassedTwiceThrowsAndRunsNothing) {
  auto jf = mj::jit([](const Array& a, const Array& b) { return a + b; }, mj::JitOptions{.donate_argnums = {0}});
  Array x = ramp({16});
  try {
    jf(x, x);
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("argument 0"), std::string::npos) << w;
    EXPECT_NE(w.find("argument 1"), std::string::npos) << w;
    EXPECT_NE(w.find("donated"), std::string::npos) << w;
  }
  EXPECT_EQ(x.data<float>()[3], 3.0f);  // not consumed: nothing ran
}

TEST(JitApi, ArgumentOnAnotherDeviceThrowsNamingBothDevices) {
  Array x = mj::device_put(ramp({8}), mj::NamedSharding{mesh2(), mj::P("x")});
  std::vector<mj::Shard> shards = x.addressable_shards();
  ASSERT_EQ(shards[1].device, 1);
  Array on1 = shards[1].data;  // an unsharded f32[4] whose buffer is on device 1
  ASSERT_FALSE(on1.is_sharded());
  auto jf = mj::jit([](const Array& a, const Array& b) { return a * b; }, "on_device_0");
  try {
    jf(ramp({4}), on1);
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("'on_device_0'"), std::string::npos) << w;
    EXPECT_NE(w.find("argument 1"), std::string::npos) << w;
    EXPECT_NE(w.find("on device 1"), std::string::npos) << w;
    EXPECT_NE(w.find("runs on device 0"), std::string::npos) << w;
  }
  EXPECT_TRUE(bit_equal(jf(ramp({4}), shards[0].data), ramp({4}) * ramp({4})));  // device 0 runs
}

TEST(JitApi, NameAppearsInThePjitEquationAndTheCompiledText) {
  auto jf = mj::jit(poly, "my_poly");
  Array x = ramp({3});
  const std::string traced = mj::to_string(mj::make_jaxpr(jf)(x));
  EXPECT_NE(traced.find("pjit["), std::string::npos) << traced;
  EXPECT_NE(traced.find("name=my_poly"), std::string::npos) << traced;
  EXPECT_NE(jf.lower(x).compile().as_text().find("# compiled 'my_poly'"), std::string::npos);
}

std::vector<std::string> sorted_files(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(JitApi, DumpDirHoldsOneParsableFilePerPass) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("mj_dump_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto inner = mj::jit([](const Array& x) { return x * x * 1.25; }, "inner");
  auto jf = mj::jit([inner](const Array& a, const Array& b) { return mj::matmul(inner(a), b) + 2.0; },
                    mj::JitOptions{.name = "dumped", .dump_dir = dir.string()});
  Array a = ramp({4, 3}), b = ramp({3, 2});
  EXPECT_TRUE(bit_equal(jf(a, b), mj::matmul(a * a * 1.25, b) + 2.0));
  const std::vector<std::string> want = {"00-traced.txt",
                                         "01-dce.txt",
                                         "02-inline_calls.txt",
                                         "03-simplify.txt",
                                         "04-pack_dot_operands.txt",
                                         "05-fuse.txt",
                                         "06-split_copies.txt",
                                         "07-coalesce_slice_copies.txt",
                                         "08-pipeline_slice_copies.txt",
                                         "09-place_copies.txt",
                                         "10-rename_body_variables.txt"};
  // One folder per compiled signature, named after the jit: a second signature gets its own.
  const auto folders = sorted_files(dir);
  ASSERT_EQ(folders.size(), 1u);
  EXPECT_EQ(folders[0].rfind("dumped-", 0), 0u) << folders[0];
  EXPECT_EQ(folders[0].size(), std::string("dumped-").size() + 16) << folders[0];
  Array a2 = ramp({5, 3});
  EXPECT_TRUE(bit_equal(jf(a2, b), mj::matmul(a2 * a2 * 1.25, b) + 2.0));
  const auto folders2 = sorted_files(dir);
  ASSERT_EQ(folders2.size(), 2u);
  for (auto& f : folders2) EXPECT_EQ(sorted_files(dir / f), want) << f;
  for (auto& name : want) {
    std::ifstream in(dir / folders[0] / name);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    mj::ClosedJaxpr parsed = mj::parse_jaxpr(text);  // each file is a jaxpr in the printer's form
    EXPECT_EQ(mj::to_string(parsed), text) << name;
    const bool has_pjit = text.find("pjit[") != std::string::npos && text.find("name=inner") != std::string::npos;
    EXPECT_EQ(has_pjit, name < "02") << name;  // inline_calls removes the nested jit
    if (name == "05-fuse.txt") EXPECT_NE(text.find("fusion"), std::string::npos) << text;
  }
  std::filesystem::remove_all(dir);
}

// ---- nested jit, transformations -----------------------------------------------------------------

TEST(JitApi, NestedJitStaysAPjitEquationAndTheCompilerInlinesIt) {
  auto inner = mj::jit([](const Array& x) { return x * x * 3.0; }, "inner");
  auto outer = mj::jit([inner](const Array& x) { return inner(x) + x; }, "outer");
  Array x = ramp({9}, 0.5f, -2);
  const std::string traced = mj::to_string(mj::make_jaxpr(outer)(x));
  EXPECT_NE(traced.find("name=outer"), std::string::npos) << traced;
  EXPECT_NE(traced.find("name=inner"), std::string::npos) << traced;
  auto low = outer.lower(x);  // the outer jit's own program: the inner jit is one pjit equation
  const std::string lowered = mj::to_string(low.program);
  EXPECT_NE(lowered.find("pjit["), std::string::npos) << lowered;
  EXPECT_NE(lowered.find("name=inner"), std::string::npos) << lowered;
  auto comp = low.compile();
  EXPECT_EQ(mj::to_string(comp.executable()->program).find("pjit"), std::string::npos);
  EXPECT_TRUE(bit_equal(outer(x), poly(x)));
}

TEST(JitApi, JitOfGradMatchesEagerAndTheDerivative) {
  auto loss = [](const Array& x) { return mj::sum(poly(x)); };
  Array x = ramp({33}, 0.25f, -4);
  Array got = mj::jit(mj::grad(loss))(x), eager = mj::grad(loss)(x);
  EXPECT_TRUE(bit_equal(got, eager));
  for (int64_t i = 0; i < x.size(); ++i)  // d/dx (3x^2 + x) = 6x + 1, exact for these x
    EXPECT_EQ(got.data<float>()[i], 6.0f * x.data<float>()[i] + 1.0f) << i;
}

TEST(JitApi, JitOfVmapAndVmapOfJitMatchEager) {
  auto f = [](const Array& w, const Array& x) { return mj::matmul(w, x) * 2.0 + 1.0; };
  auto bf = mj::vmap(f, {.in_axes = {mj::kNotMapped, 0}});
  Array w = ramp({4, 3}, 0.5f), xs = ramp({5, 3}, 0.25f, -1);
  Array eager = bf(w, xs);
  EXPECT_EQ(eager.aval().str(), "f32[5,4]");
  EXPECT_LE(max_rel(mj::jit(bf)(w, xs), eager), 1e-6);
  EXPECT_LE(max_rel(mj::vmap(mj::jit(f), {.in_axes = {mj::kNotMapped, 0}})(w, xs), eager), 1e-6);
}

TEST(JitApi, GradOfJitMatchesEager) {
  auto jp = mj::jit(poly, "poly");
  auto loss = [&](const Array& x) { return mj::sum(jp(x) * 0.5); };
  Array x = ramp({17}, 0.5f, -3);
  Array got = mj::grad(loss)(x);
  Array eager = mj::grad([](const Array& x) { return mj::sum(poly(x) * 0.5); })(x);
  EXPECT_TRUE(bit_equal(got, eager));
  EXPECT_EQ(got.data<float>()[2], 0.5f * (6.0f * x.data<float>()[2] + 1.0f));
}

TEST(JitApi, JitOfScanMatchesEager) {
  auto f = [](const Array& c0, const Array& xs) {
    return mj::scan([](const Array& c, const Array& x) { return std::pair{c * 0.5 + x * x, c + x}; }, c0, xs);
  };
  Array c0 = ramp({3}), xs = ramp({20, 3}, 0.125f, -1);
  auto [c, ys] = f(c0, xs);
  auto [jc, jys] = mj::jit(f)(c0, xs);
  EXPECT_TRUE(bit_equal(jc, c));
  EXPECT_TRUE(bit_equal(jys, ys));
}

TEST(JitApi, JitOfCheckpointAndOfItsGradientMatchEager) {
  auto ck = mj::checkpoint(poly);
  Array x = ramp({12}, 0.5f, -2);
  EXPECT_TRUE(bit_equal(mj::jit(ck)(x), poly(x)));
  auto loss = [&](const Array& v) { return mj::sum(ck(v) * ck(v)); };
  Array eager = mj::grad(loss)(x);
  EXPECT_LE(max_rel(mj::jit(mj::grad(loss))(x), eager), 1e-6);
}

// ---- caches ----------------------------------------------------------------------------------------

TEST(JitApi, SignatureCacheKeysStructureAvalsWeakTypesShardingsAndStatics) {
  auto jsum = mj::jit([](const std::vector<Array>& xs, int k) {
    Array s = xs[0];
    for (size_t i = 1; i < xs.size(); ++i) s = s + xs[i];
    return s * double(k);
  });
  auto jf = [&](std::vector<Array> xs, int k) { return jsum(xs, k); };
  Array a = ramp({8}), b = ramp({8}, 2);
  Array weak = Array::allocate(mj::ShapedArray{{}, mj::f32, true}), strong = mj::zeros({}, mj::f32);
  jf({a, b}, 1);
  jf({a, b}, 1);
  EXPECT_EQ(jsum.cache_size(), 1u);
  jf({a, b, a}, 1);  // structure
  EXPECT_EQ(jsum.cache_size(), 2u);
  jf({ramp({9}), ramp({9})}, 1);  // aval
  EXPECT_EQ(jsum.cache_size(), 3u);
  jf({weak, weak}, 1);
  jf({strong, strong}, 1);  // weak type
  EXPECT_EQ(jsum.cache_size(), 5u);
  Array sharded = mj::device_put(a, mj::NamedSharding{mesh2(), mj::P("x")});
  EXPECT_TRUE(bit_equal(jf({sharded, b}, 1), a + b));  // sharding
  EXPECT_EQ(jsum.cache_size(), 6u);
  EXPECT_TRUE(bit_equal(jf({a, b}, 3), (a + b) * 3.0));  // static value
  EXPECT_EQ(jsum.cache_size(), 7u);
  EXPECT_EQ(jsum.trace_count(), 7);
  jf({a, b, a}, 1);
  jf({sharded, b}, 1);
  jf({weak, weak}, 1);
  EXPECT_EQ(jsum.trace_count(), 7);  // every one of them hit
}

TEST(JitApi, ConstantsArePassedByReferenceAndNeverHashed) {
  Array c = ramp({16}, 1, 1);
  auto jf = mj::jit([c](const Array& x) { return x * c; });
  Array x = ramp({16}, 0, 2);  // all 2
  EXPECT_EQ(jf(x).data<float>()[0], 2.0f);
  c.mutable_data<float>()[0] = 100.0f;  // the constant's bytes change in place
  Array y = jf(x);
  EXPECT_EQ(jf.trace_count(), 1);          // the signature has no constant in it: a hit
  EXPECT_EQ(y.data<float>()[0], 200.0f);   // the program reads the constant's buffer itself
  EXPECT_EQ(jf.lower(x).consts.at(0).impl(), c.impl());
}

TEST(JitApi, ExecutablesAreSharedProcessWideByTheProgramAfterThePasses) {
  Array x = ramp({10});
  auto f1 = mj::jit([](const Array& v) { return v * v * 4.5 + v; });
  // Another function, equal after the passes (its dead value is removed by dce).
  auto f2 = mj::jit([](const Array& v) {
    Array dead = v * 7.0;
    (void)dead;
    return v * v * 4.5 + v;
  });
  auto f3 = mj::jit([](const Array& v) { return v * v * 4.5 - v; });
  const size_t before = mj::compilation_cache_stats().generated;
  auto e1 = f1.lower(x).compile().executable();
  auto e2 = f2.lower(x).compile().executable();
  EXPECT_EQ(e1, e2);
  EXPECT_EQ(mj::compilation_cache_stats().generated, before + 1);
  EXPECT_NE(f3.lower(x).compile().executable(), e1);
  EXPECT_EQ(mj::compilation_cache_stats().generated, before + 2);
  EXPECT_TRUE(bit_equal(f2(x), x * x * 4.5 + x));
}

TEST(JitApi, ConcurrentCallsOfOneJitTraceAndCompileOnce) {
  auto jf = mj::jit([](const Array& x) { return x * x * 5.125 + x; });
  Array x = ramp({256}, 0.5f);
  const size_t before = mj::compilation_cache_stats().generated;
  std::latch start(4);
  std::vector<Array> outs(4);
  std::vector<std::thread> ts;
  for (size_t t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      start.arrive_and_wait();
      outs[t] = jf(x);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(jf.trace_count(), 1);
  EXPECT_EQ(mj::compilation_cache_stats().generated, before + 1);
  for (auto& o : outs) EXPECT_TRUE(bit_equal(o, x * x * 5.125 + x));
}

// ---- a code generation failure ---------------------------------------------------------------------

// A test-only elementwise primitive (identity) whose elemental rule emits a call of its own kernel
// with no arguments: well-formed KIR that only LLVM's verifier rejects.
const mj::Primitive& broken_ir_p() {
  static const mj::Primitive& p = [] () -> const mj::Primitive& {
    mj::Primitive& q = mj::get_or_create_primitive("test_broken_ir");
    q.shape_rule = [](const std::vector<mj::ShapedArray>& in, const mj::Params&) { return in; };
    q.impl = [](const std::vector<Array>& a, const mj::Params&, const std::vector<mj::ShapedArray>&) { return a; };
    q.op_class = mj::OpClass::elementwise;
    return q;
  }();
  return p;
}
const mj::lower::RegisterElemental r_broken("test_broken_ir", [](mj::lower::FusionEmitter& fe, const mj::Eqn& e,
                                                                 const mj::lower::ElemIndex& at) {
  fe.b.call(fe.b.function().name, mj::kir::kVoid, {});  // the kernel takes (bufs, begin, end)
  return fe.value(e.inputs[0], at);
});

TEST(JitApi, LlvmVerificationFailureNamesThePassTheEquationAndLlvmsMessage) {
  auto jf = mj::jit([](const Array& x) { return mj::bind1(broken_ir_p(), {x * 2.0}, {}) + 1.0; }, "broken");
  try {
    jf(ramp({8}));
    FAIL() << "expected CompileError";
  } catch (const mj::CompileError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("jit 'broken'"), std::string::npos) << w;
    EXPECT_NE(w.find("pass 'LLVM verification"), std::string::npos) << w;
    EXPECT_NE(w.find("equation `"), std::string::npos) << w;
    EXPECT_NE(w.find("= fusion["), std::string::npos) << w;         // the fusion equation ...
    EXPECT_NE(w.find("test_broken_ir"), std::string::npos) << w;   // ... holding the primitive
    EXPECT_NE(w.find("Incorrect number of arguments"), std::string::npos) << w;  // LLVM's words
  }
  EXPECT_THROW(jf(ramp({8})), mj::CompileError);  // again, not cached as a success
}

// ---- block_until_ready ----------------------------------------------------------------------------

TEST(JitApi, BlockUntilReadyReturnsTheTreeAndNeverGathers) {
  std::vector<Array> v = {ramp({3}), ramp({2})};
  static_assert(std::is_same_v<decltype(mj::block_until_ready(v)), const std::vector<Array>&>);
  static_assert(std::is_same_v<decltype(mj::block_until_ready(std::vector<Array>{})), std::vector<Array>>);
  EXPECT_EQ(&mj::block_until_ready(v), &v);
  auto jf = mj::jit([](const Array& a) { return std::pair{a * 2.0, a + 1.0}; });
  auto [p, q] = mj::block_until_ready(jf(ramp({3})));  // an rvalue: moved out, no dangling
  EXPECT_EQ(p.data<float>()[2], 4.0f);
  EXPECT_EQ(q.data<float>()[2], 3.0f);
  Array s = mj::device_put(ramp({8}), mj::NamedSharding{mesh2(), mj::P("x")});
  mj::block_until_ready(s);
  EXPECT_FALSE(static_cast<const mj::ConcreteArray*>(s.impl())->is_gathered());
}

}  // namespace
