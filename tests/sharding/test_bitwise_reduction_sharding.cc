// Tests of reduce_and/or/xor over sharded dims, compiled on the (4, 2) mesh: each device reduces its
// shard and an all_reduce of the same operation completes the result (FactorRule::completed_by);
// values against eager, the bytes the communicator counted, and the factor rule's text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "jit/jit.h"
#include "jit/runtime/communicator.h"
#include "jit/runtime/execute_spmd.h"
#include "sharding/sharding_rule.h"
#include "tests/sharding/spmd_helpers.h"

namespace {

using mj::Array;
using mj::None;
using mj::P;
namespace lax = mj::lax;

mj::NamedSharding ns(const std::shared_ptr<const mj::Mesh>& m, P spec) {
  return mj::NamedSharding{m, std::move(spec), mj::MemoryKind::device};
}

std::vector<double> vals(const Array& a) {
  Array c = mj::astype(a, mj::f64);
  return std::vector<double>(c.data<double>(), c.data<double>() + c.size());
}

// Bits that differ across the rows each device holds, so that no shard's partial result is the
// answer: element (i, j) = (i * 37 + j * 11) mod 64, shifted by i mod 5 (i32), or its low bit (bool).
Array bits(mj::Shape s, mj::DType d) {
  std::vector<double> v;
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j) v.push_back(double(((i * 37 + j * 11) % 64) << (i % 5)));
  Array a = mj::array(v, s, mj::i32);
  if (d == mj::bool_)
    return lax::eq(lax::and_(a, mj::full({s[0], s[1]}, 1, mj::i32)), mj::full({s[0], s[1]}, 1, mj::i32));
  return mj::astype(a, d);
}

TEST(BitwiseReductionSharding, ReducedShardedDimsAreCompletedByAnAllReduceOfTheSameOperation) {
  auto m = mj::testing::mesh42();
  struct Prog {
    std::string what;
    std::function<Array(const Array&)> fn;
    mj::DType dtype;
    P in, out;
    std::string reduction;
  };
  const std::vector<Prog> progs = {
      {"reduce_or rows of P(x, y) -> P(y)", [](const Array& x) { return lax::reduce_or(x, {0}); }, mj::i32,
       P("x", "y"), P("y"), "or"},
      {"reduce_and all of P(x, y) -> P()", [](const Array& x) { return lax::reduce_and(x, {0, 1}); },
       mj::bool_, P("x", "y"), P(), "and"},
      {"reduce_xor cols of P(None, (x, y)) -> P()", [](const Array& x) { return lax::reduce_xor(x, {1}); },
       mj::u32, P(None{}, mj::PDim({"x", "y"})), P(None{}), "xor"},
      {"reduce_or rows of P(x) bool -> P()", [](const Array& x) { return lax::reduce_or(x, {0}); }, mj::bool_,
       P("x"), P(), "or"},
  };
  for (const Prog& pr : progs) {
    SCOPED_TRACE(pr.what);
    const Array a = bits({16, 8}, pr.dtype);
    const Array want = pr.fn(a);
    auto f = mj::jit(pr.fn, mj::JitOptions{"bitwise", {ns(m, pr.in)}, {ns(m, pr.out)}});
    Array x = mj::device_put(a, ns(m, pr.in));
    mj::block_until_ready(x);
    mj::reset_collective_stats();
    Array got = f(x);
    EXPECT_EQ(got.dtype(), want.dtype());
    EXPECT_EQ(vals(got), vals(want));
    ASSERT_NE(f.last_run(), nullptr);
    const std::string text = f.last_run()->lowered->as_text();
    // The local reduction then an all_reduce of the same operation; the operand is not gathered.
    EXPECT_NE(text.find("reduction=" + pr.reduction), std::string::npos) << text;
    EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
    int64_t sent = 0;
    bool all_reduce = false;
    for (const mj::CollectiveStats& c : f.last_run()->stats.collectives) {
      all_reduce = all_reduce || c.primitive == "all_reduce";
      for (int64_t b : c.bytes_sent) sent += b;
    }
    EXPECT_TRUE(all_reduce);
    EXPECT_GT(sent, 0);  // bytes moved between the devices
    int64_t counted = 0;
    for (int d : m->device_ids) counted += mj::collective_stats(d).bytes_sent;
    EXPECT_EQ(counted, sent);
  }
}

TEST(BitwiseReductionSharding, RulesAreReductionFactorsCompletedInPlace) {
  const mj::ShapedArray x{{4, 6}, mj::i32};
  auto rule = [&](const char* n, std::vector<int64_t> axes, mj::Shape out) {
    return mj::sharding_rule_for(n, {x}, {mj::ShapedArray{out, mj::i32}}, mj::Params{{"axes", axes}}).str();
  };
  EXPECT_EQ(rule("reduce_or", {1}, {4}), "([i, j])->([i]) {i=4, j=6} reduction={j} completed_by=or");
  EXPECT_EQ(rule("reduce_and", {0, 1}, {}), "([i, j])->([]) {i=4, j=6} reduction={i, j} completed_by=and");
  EXPECT_EQ(rule("reduce_xor", {0}, {6}), "([i, j])->([j]) {i=4, j=6} reduction={i} completed_by=xor");
}

}  // namespace
