// minijax public-API bad-input test: errors a new user met that named a line inside the library, or
// crashed. Owns one case per finding: each error is typed, names the function and this file's line.
#include <gtest/gtest.h>

#include <string>

#include "api/bad_input.h"

namespace {

namespace mj = minijax;
using bad_input::expect_error;
using mj::Array;

// An eager primitive (or a constructor) that runs out of a configured device capacity: the error
// came from the allocator's own line (core/allocator.cc) without the primitive's name. Now it names
// exp (ones) and the user's line.
TEST(CallSites, AnEagerPrimitiveBeyondTheDeviceCapacityNamesItselfAndTheCall) {
  Array x = mj::ones({64, 64});  // 16384 B, made before the limit
  const int64_t saved = mj::config().device_memory_bytes;
  mj::config().device_memory_bytes = 20000;  // room for x, not for x and exp(x)
  expect_error<mj::ResourceExhaustedError>([&] { (void)mj::exp(x); }, {"exp: ", "RESOURCE_EXHAUSTED", "20000"});
  expect_error<mj::ResourceExhaustedError>([&] { (void)mj::ones({64, 64}); }, {"ones: ", "RESOURCE_EXHAUSTED", "20000"});
  mj::config().device_memory_bytes = saved;
}

// A capacity exceeded while jit traces or lowers (the allocator refusing a literal's 4 bytes)
// named core/allocator.cc's line. Now the error names the jit and the line of its mj::jit (a jit
// call and lower() have no call site of their own: their parameters end in a pack); compile()'s
// capacity error names the compile() line.
TEST(CallSites, ACapacityExceededWhileTracingLoweringOrCompilingNamesTheUsersLine) {
  Array x = mj::ones({64, 64});  // 16384 B
  auto compiled_later = mj::jit([](const Array& a) { return mj::exp(a) * 2.0; }, mj::JitOptions{.name = "g"});
  auto low = compiled_later.lower(x);  // lowered while there is room
  auto f = mj::jit([](const Array& a) { return mj::tanh(a) + 1.0; }, mj::JitOptions{.name = "capf"});
  const int jit_line = __LINE__ - 1;
  const int64_t saved = mj::config().device_memory_bytes;
  mj::config().device_memory_bytes = mj::memory_stats(0, mj::MemoryKind::device).bytes_in_use;  // no room left
  auto expect_line = [](auto&& fn, const std::vector<std::string>& parts, int line) {
    expect_error<mj::ResourceExhaustedError>(fn, parts);
    try {
      fn();
    } catch (const mj::ResourceExhaustedError& e) {
      EXPECT_EQ(int(e.where().line()), line) << e.what();
    }
  };
  expect_line([&] { (void)f.lower(x); }, {"jit 'capf': lower: ", "RESOURCE_EXHAUSTED"}, jit_line);
  expect_line([&] { (void)f(x); }, {"jit 'capf': trace: ", "RESOURCE_EXHAUSTED"}, jit_line);
  const int compile_line = __LINE__ + 1;
  expect_line([&] { (void)low.compile(); }, {"compile 'g'", "exceeds the capacity"}, compile_line);
  mj::config().device_memory_bytes = saved;
  EXPECT_EQ(f(x).shape(), (mj::Shape{64, 64}));  // room again: the same jit traces and runs
}

// An eager matmul of an array donated to a jit call: the error named dot_general.cc's line and not
// the primitive. Now dot_general and the user's line.
TEST(CallSites, AnEagerPrimitiveOfADonatedArrayNamesItselfAndTheCall) {
  Array d = mj::ones({3, 3});
  auto f = mj::jit([](const Array& a) { return a * 2.0; }, mj::JitOptions{.donate_argnums = {0}});
  Array y = f(d);
  mj::block_until_ready(y);
  expect_error<mj::ValueError>([&] { (void)mj::matmul(d, d); }, {"dot_general", "donated", "f32[3,3]"});
}

// A default-constructed ArraySharding has no mesh: spec(), named_sharding() and mesh() crashed (a
// null mesh read in Mesh::str). Now ShardingError at the call; str() prints it.
TEST(CallSites, AnArrayShardingWithoutAMeshIsAShardingError) {
  const mj::ArraySharding s{};
  expect_error<mj::ShardingError>([&] { (void)s.spec(); }, {"named_sharding", "no mesh"});
  expect_error<mj::ShardingError>([&] { (void)s.named_sharding(); }, {"named_sharding", "no mesh"});
  expect_error<mj::ShardingError>([&] { (void)s.mesh(); }, {"ArraySharding::mesh", "no mesh"});
  EXPECT_NE(s.str().find("mesh=None"), std::string::npos) << s.str();
}

// peak_bytes with a name that is not a memory kind named memory_kind_from_name and the library's
// line; a value outside the enum read past its per-kind arrays.
TEST(CallSites, PeakBytesOfAnUnknownMemoryKindIsAValueErrorAtTheCall) {
  const mj::CompiledMemoryStats stats =
      mj::jit([](const Array& a) { return a + 1.0; }).lower(mj::ones({4})).compile().memory_analysis();
  expect_error<mj::ValueError>([&] { (void)stats.peak_bytes("hbm"); }, {"peak_bytes", "hbm"});
  expect_error<mj::ValueError>([&] { (void)stats.peak_bytes(mj::MemoryKind(7)); }, {"peak_bytes", "7"});
  EXPECT_EQ(stats.peak_bytes("device"), stats.peak_bytes(mj::MemoryKind::device));
}

// device_put to a value outside the MemoryKind enum returned an array of kind "?".
TEST(CallSites, DevicePutToAValueOutsideTheMemoryKindEnumIsAValueError) {
  expect_error<mj::ValueError>([] { (void)mj::device_put(mj::ones({3}), mj::MemoryKind(7)); },
                               {"device_put", "7", "not a MemoryKind"});
}

// random.normal with a negative dimension said "random.uniform".
TEST(CallSites, RandomNormalOfANegativeDimensionNamesNormal) {
  expect_error<mj::ValueError>([] { (void)mj::random::normal(mj::random::PRNGKey(0), {-1, 2}); },
                               {"random.normal", "negative dimension", "[-1,2]"});
}

// jacrev and check_grads called the pullback without the caller's site, so an error of the
// backward pass (a JVP rule nonlinear in its tangent cannot be transposed) named
// autodiff/jacobian.cc; grad named the user's line. Now both do.
TEST(CallSites, ABackwardPassErrorOfJacrevNamesTheCall) {
  auto f = mj::custom_jvp([](const Array& a) { return mj::sin(a); },
                          [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                            return std::pair{mj::sin(std::get<0>(p)), mj::sin(std::get<0>(t))};
                          });
  expect_error<mj::NotDifferentiableError>([&] { (void)mj::grad([&](const Array& a) { return mj::sum(f(a)); })(mj::ones({3})); }, {"sin"});
  expect_error<mj::NotDifferentiableError>([&] { (void)mj::jacrev(f)(mj::ones({3})); }, {"sin"});
}

}  // namespace
