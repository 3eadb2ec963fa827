// Tests of schedule_offloads (memory/schedule_offloads.h): device_puts between memory kinds split
// into copy_start / copy_done, where each half is placed, values, and the compiled program.
#include <gtest/gtest.h>

#include <minijax/minijax.h>

#include "core/config.h"
#include "jit/runtime/copy_engine.h"
#include "memory/schedule_offloads.h"
#include "tests/memory/memory_helpers.h"

namespace {

using mj::Array;

using memtest::fused;

// The index of the first equation of `j` named `prim` at or after `from` (size when none).
size_t index_of(const mj::Jaxpr& j, const std::string& prim, size_t from = 0) {
  for (size_t k = from; k < j.eqns.size(); ++k)
    if (j.eqns[k].primitive->name == prim) return k;
  return j.eqns.size();
}

size_t count(const mj::Jaxpr& j, const std::string& prim) {
  size_t n = 0;
  for (auto& e : j.eqns) n += e.primitive->name == prim;
  return n;
}

// An activation offloaded after its producer, four matmuls of compute, then reloaded and read.
Array offload_program(const Array& x, const Array& w) {
  Array a = mj::tanh(mj::matmul(x, w));
  Array h = mj::device_put(a, "pinned_host");
  Array y = x;
  for (int k = 0; k < 4; ++k) y = mj::matmul(y, w);
  Array back = mj::device_put(h, "device");
  return y + back;
}

struct LinkGuard {
  double was = mj::config().host_link_bytes_per_s;
  ~LinkGuard() { mj::config().host_link_bytes_per_s = was; }
};

}  // namespace

// Each device_put between kinds becomes a copy_start right after its operand's producer (the
// offload) or as late as hiding allows (the reload), and a copy_done that takes the source as
// an operand; the offload completes before the reload starts, the reload before its reader.
TEST(ScheduleOffloads, SplitsEachCopyAndPlacesItsHalves) {
  Array x = mj::random::uniform(mj::random::PRNGKey(1), {64, 64}, mj::f32, -1.0, 1.0);
  Array w = mj::random::uniform(mj::random::PRNGKey(2), {64, 64}, mj::f32, -0.2, 0.2);
  LinkGuard guard;
  mj::config().host_link_bytes_per_s = 1e9;  // a 16 KiB copy: 16 us, about one 64^3 matmul
  mj::Jaxpr j = fused(offload_program, x, w);
  ASSERT_EQ(count(j, "device_put"), 2u) << j;
  mj::Jaxpr s = mj::schedule_offloads(j);
  EXPECT_NO_THROW(mj::verify_jaxpr(s)) << s;
  EXPECT_EQ(count(s, "device_put"), 0u) << s;
  ASSERT_EQ(count(s, "copy_start"), 2u) << s;
  ASSERT_EQ(count(s, "copy_done"), 2u) << s;
  const size_t off_start = index_of(s, "copy_start"), off_done = index_of(s, "copy_done");
  const size_t re_start = index_of(s, "copy_start", off_start + 1), re_done = index_of(s, "copy_done", off_done + 1);
  // The offload starts right after the tanh fusion that produces its operand.
  ASSERT_GT(off_start, 0u);
  const mj::Var src = std::get<mj::Var>(s.eqns[off_start].inputs[0]);
  bool produced_just_before = false;
  for (auto& o : s.eqns[off_start - 1].outputs) produced_just_before = produced_just_before || o == src;
  EXPECT_TRUE(produced_just_before) << s;
  // Its done comes after some compute, and before the reload starts; the reload's done is
  // right before the add that reads it.
  EXPECT_GT(off_done, off_start + 1) << s;
  EXPECT_LT(off_done, re_start) << s;
  EXPECT_LT(re_start, re_done) << s;
  const mj::Var back = s.eqns[re_done].outputs[0];
  bool read_next = false;
  for (auto& a : s.eqns[re_done + 1].inputs) read_next = read_next || (std::holds_alternative<mj::Var>(a) && std::get<mj::Var>(a) == back);
  EXPECT_TRUE(read_next) << s;
  // copy_done keeps the source alive: its second operand is the copy_start's operand.
  EXPECT_EQ(std::get<mj::Var>(s.eqns[off_done].inputs[1]), src);
  // Values: the scheduled program evaluates as the unscheduled one.
  auto args = std::vector<Array>{x, w};
  auto want = mj::eval_jaxpr(j, {}, args), got = mj::eval_jaxpr(s, {}, args);
  ASSERT_EQ(got.size(), want.size());
  for (int64_t i = 0; i < want[0].size(); ++i) ASSERT_EQ(got[0].data<float>()[i], want[0].data<float>()[i]) << i;
}

// Compiled: the program's copies run on device 0's copy engine (counted there) and its value is
// eager's; as_text() shows the two halves.
TEST(ScheduleOffloads, CompiledCopiesRunAsynchronouslyOnTheEngine) {
  Array x = mj::random::uniform(mj::random::PRNGKey(3), {64, 64}, mj::f32, -1.0, 1.0);
  Array w = mj::random::uniform(mj::random::PRNGKey(4), {64, 64}, mj::f32, -0.2, 0.2);
  auto f = mj::jit(offload_program, "offload");
  auto compiled = f.lower(x, w).compile();
  const std::string text = compiled.as_text();
  EXPECT_NE(text.find("copy_start"), std::string::npos) << text;
  EXPECT_NE(text.find("mj_rt_copy_done"), std::string::npos) << text;
  const mj::CopyEngineStats before = mj::copy_engine(0).stats();
  Array got = compiled(x, w);
  const mj::CopyEngineStats after = mj::copy_engine(0).stats();
  EXPECT_EQ(after.copies - before.copies, 2);
  EXPECT_EQ(after.bytes - before.bytes, 2 * 64 * 64 * 4);
  Array want = offload_program(x, w);
  for (int64_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-4 * (1 + std::fabs(want.data<float>()[i]))) << i;
}
