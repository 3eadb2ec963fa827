// Tests that a value resharded the same way for several consumers is resharded once: two
// dynamic_slices with traced indices on a sharded dim.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/api.h"
#include "core/lax.h"
#include "jit/reference/reference_executor.h"
#include "sharding/boxes.h"
#include "sharding/partition_spmd.h"
#include "sharding/propagate_shardings.h"
#include "tests/sharding/ownership.h"

namespace mj = minijax;
using minijax::Array;
using minijax::ShapedArray;
using minijax::Sharding;
using namespace minijax::testing;

// x f32[16,8] on [{"x"}, {}] (mesh (4,2)); y = dynamic_slice(x, i) + dynamic_slice(x, j) with
// traced i, j: each slice needs dim 0 whole. One reshard (gather "x": 128 − 32 = 96 elements =
// 384 bytes received per device, by hand) serves both slices; no collective per slice.
TEST(SharedReshard, TwoDynamicSlicesOnAShardedDimReshardOnce) {
  auto m = make_mesh(iota(8), {4, 2}, {"x", "y"});
  Array x = Array::allocate(ShapedArray{{16, 8}, mj::DType::f32});
  for (int64_t i = 0; i < 128; ++i) x.mutable_data<float>()[i] = float(i);
  Array i0 = mj::lax::scalar(3, mj::DType::i32), i1 = mj::lax::scalar(9, mj::DType::i32);
  auto f = [](Array v, Array a, Array b) {
    Array zero = mj::lax::scalar(0, mj::DType::i32);
    return mj::lax::add(mj::lax::dynamic_slice(v, {a, zero}, {4, 8}), mj::lax::dynamic_slice(v, {b, zero}, {4, 8}));
  };
  auto cj = mj::make_jaxpr(f)(x, i0, i1);
  Sharding xs = from_spec(m, {{"x"}, {}});
  auto prop = mj::propagate_shardings(*cj.jaxpr, {xs, std::nullopt, std::nullopt}, {}, *m);
  // Two placements (one per slice), the second reusing the first.
  ASSERT_EQ(prop.reshards.size(), 2u) << prop.text;
  EXPECT_EQ(prop.reshards[0].shared_with, -1);
  EXPECT_EQ(prop.reshards[0].max_received, 96);
  EXPECT_EQ(prop.reshards[1].shared_with, int64_t(prop.reshards[0].eqn)) << prop.text;
  EXPECT_EQ(prop.reshards[1].max_received, 0);
  auto program = mj::partition_spmd(*cj.jaxpr, prop, *m);
  std::vector<std::vector<Array>> dev(8);
  auto blocks = mj::device_boxes(prop.of(cj.jaxpr->invars[0]), {16, 8});
  for (size_t p = 0; p < 8; ++p) dev[p] = {mj::lax::slice(x, blocks[p].lo, blocks[p].hi), i0, i1};
  mj::SpmdStats st;
  auto out = mj::run_spmd(program, *m, dev, &st);
  ASSERT_EQ(st.collectives.size(), 1u) << mj::to_string(program);
  EXPECT_EQ(st.collectives[0].primitive, "all_gather");
  for (size_t p = 0; p < 8; ++p) EXPECT_EQ(st.collectives[0].bytes_received[p], 384);
  // Rows 3..6 plus rows 9..12: element (r, c) = (3 + r)·8 + c + (9 + r)·8 + c.
  const Sharding& os = prop.of(std::get<mj::Var>(cj.jaxpr->outvars[0]));
  auto ob = mj::device_boxes(os, {4, 8});
  for (size_t p = 0; p < 8; ++p) {
    int64_t k = 0;
    for (int64_t r = ob[p].lo[0]; r < ob[p].hi[0]; ++r)
      for (int64_t c = ob[p].lo[1]; c < ob[p].hi[1]; ++c)
        EXPECT_EQ(out[p][0].data<float>()[k++], float((3 + r) * 8 + c + (9 + r) * 8 + c)) << p;
  }
}
