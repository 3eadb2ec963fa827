// Tests of the slicing and indexing primitives (slice, dynamic_slice, dynamic_update_slice,
// concatenate, pad, gather, scatter_add, iota) and numpy concatenate/stack/take: values, errors,
// params, and their JVP/transpose/batching rules.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autodiff/jvp.h"
#include "autodiff/transpose.h"
#include "autodiff/vmap.h"
#include "core/errors.h"
#include "core/lax.h"
#include "core/numpy.h"
#include "core/parser.h"
#include "core/staging.h"

namespace mj = minijax;
using mj::Array;
using mj::Shape;
namespace lax = minijax::lax;

namespace {

template <class T>
Array arr(const Shape& shape, const std::vector<T>& v) {
  mj::ShapedArray a{shape, mj::dtype_of<T>(), false, mj::MemoryKind::device};
  EXPECT_EQ(int64_t(v.size()), a.size());
  Array x = Array::allocate(a);
  T* p = x.mutable_data<T>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = v[i];
  return x;
}

template <class T>
std::vector<T> vals(const Array& a) {
  const T* p = a.data<T>();
  return std::vector<T>(p, p + a.size());
}

Array counting(const Shape& s) {
  std::vector<float> v(size_t(mj::shape_size(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  return arr<float>(s, v);
}

Array i32(int32_t v) { return arr<int32_t>({}, {v}); }

std::string jaxpr_of(const mj::FlatFn& f, const std::vector<mj::ShapedArray>& avals) {
  return mj::to_string(mj::trace_to_jaxpr(f, avals));
}

mj::ShapedArray f32s(const Shape& s) { return mj::ShapedArray{s, mj::f32, false, mj::MemoryKind::device}; }

}  // namespace

// ---- slice ---------------------------------------------------------------------------------------

TEST(Slicing, StaticSliceWithAndWithoutStrides) {
  Array x = counting({3, 4});  // x[i][j] = 4 i + j
  Array a = lax::slice(x, {1, 1}, {3, 3});
  EXPECT_EQ(a.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<float>(a), (std::vector<float>{5, 6, 9, 10}));
  Array b = lax::slice(x, {0, 0}, {3, 4}, {2, 3});  // rows 0, 2; cols 0, 3
  EXPECT_EQ(b.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<float>(b), (std::vector<float>{0, 3, 8, 11}));
  Array e = lax::slice(x, {1, 2}, {1, 4});
  EXPECT_EQ(e.shape(), (Shape{0, 2}));
  Array c = lax::slice(arr<int32_t>({5}, {1, 2, 3, 4, 5}), {1}, {5}, {2});
  EXPECT_EQ(vals<int32_t>(c), (std::vector<int32_t>{2, 4}));
}

TEST(Slicing, SliceOutOfBoundsIsShapeError) {
  Array x = counting({3, 4});
  EXPECT_THROW(lax::slice(x, {0, 0}, {4, 4}), mj::ShapeError);
  EXPECT_THROW(lax::slice(x, {-1, 0}, {2, 4}), mj::ShapeError);
  EXPECT_THROW(lax::slice(x, {2, 0}, {1, 4}), mj::ShapeError);
  EXPECT_THROW(lax::slice(x, {0}, {1}), mj::ShapeError);
  EXPECT_THROW(lax::slice(x, {0, 0}, {1, 1}, {1, 0}), mj::ShapeError);
  try {
    lax::slice(x, {0, 0}, {3, 5});
    FAIL();
  } catch (const mj::ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("slice(f32[3,4])"), std::string::npos) << m;
    EXPECT_NE(m.find("test_slicing.cc"), std::string::npos) << m;
  }
}

// ---- dynamic_slice / dynamic_update_slice --------------------------------------------------------

TEST(Slicing, DynamicSliceClampsLikeXla) {
  Array x = arr<float>({5}, {10, 11, 12, 13, 14});
  EXPECT_EQ(vals<float>(lax::dynamic_slice(x, {i32(2)}, {2})), (std::vector<float>{12, 13}));
  // start = clamp(start, 0, 5 - 2): 4 -> 3, -1 -> 0.
  EXPECT_EQ(vals<float>(lax::dynamic_slice(x, {i32(4)}, {2})), (std::vector<float>{13, 14}));
  EXPECT_EQ(vals<float>(lax::dynamic_slice(x, {i32(-1)}, {2})), (std::vector<float>{10, 11}));
  Array y = counting({3, 4});
  Array s = lax::dynamic_slice(y, {i32(1), arr<uint32_t>({}, {9})}, {2, 2});  // col clamp 9 -> 2
  EXPECT_EQ(vals<float>(s), (std::vector<float>{6, 7, 10, 11}));
  Array si = lax::dynamic_slice(arr<int32_t>({4}, {1, 2, 3, 4}), {i32(1)}, {3});
  EXPECT_EQ(vals<int32_t>(si), (std::vector<int32_t>{2, 3, 4}));
}

TEST(Slicing, DynamicSliceIndexErrors) {
  Array x = counting({5});
  EXPECT_THROW(lax::dynamic_slice(x, {arr<float>({}, {1})}, {2}), mj::TypeError);      // float index
  EXPECT_THROW(lax::dynamic_slice(x, {arr<int32_t>({1}, {1})}, {2}), mj::TypeError);   // rank 1
  EXPECT_THROW(lax::dynamic_slice(x, {i32(0), i32(0)}, {2}), mj::ShapeError);           // 2 indices
  EXPECT_THROW(lax::dynamic_slice(x, {i32(0)}, {6}), mj::ShapeError);                   // too big
  EXPECT_THROW(lax::dynamic_update_slice(x, counting({6}), {i32(0)}), mj::ShapeError);
  EXPECT_THROW(lax::dynamic_update_slice(x, arr<int32_t>({1}, {1}), {i32(0)}), mj::TypeError);
}

TEST(Slicing, DynamicUpdateSliceClamps) {
  Array x = arr<float>({5}, {0, 0, 0, 0, 0});
  Array u = arr<float>({2}, {1, 2});
  EXPECT_EQ(vals<float>(lax::dynamic_update_slice(x, u, {i32(1)})), (std::vector<float>{0, 1, 2, 0, 0}));
  EXPECT_EQ(vals<float>(lax::dynamic_update_slice(x, u, {i32(4)})), (std::vector<float>{0, 0, 0, 1, 2}));
  EXPECT_EQ(vals<float>(x), (std::vector<float>{0, 0, 0, 0, 0}));  // operand untouched
  Array y = arr<int32_t>({2, 3}, {1, 1, 1, 1, 1, 1});
  Array r = lax::dynamic_update_slice(y, arr<int32_t>({1, 2}, {7, 8}), {i32(1), i32(1)});
  EXPECT_EQ(vals<int32_t>(r), (std::vector<int32_t>{1, 1, 1, 1, 7, 8}));
}

// ---- concatenate / stack -------------------------------------------------------------------------

TEST(Slicing, ConcatenateAndStack) {
  Array a = arr<float>({2, 2}, {1, 2, 3, 4});
  Array b = arr<float>({2, 1}, {5, 6});
  Array c = lax::concatenate({a, b}, 1);
  EXPECT_EQ(c.shape(), (Shape{2, 3}));
  EXPECT_EQ(vals<float>(c), (std::vector<float>{1, 2, 5, 3, 4, 6}));
  EXPECT_EQ(vals<float>(mj::concatenate({a, a}, 0)), (std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4}));
  EXPECT_EQ(mj::concatenate({a, b}, -1).shape(), (Shape{2, 3}));
  Array s = mj::stack({a, a}, 1);  // out[i][k][j] = a[i][j]
  EXPECT_EQ(s.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(vals<float>(s), (std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4}));
  Array si = mj::stack({arr<int32_t>({2}, {1, 2}), arr<int32_t>({2}, {3, 4})});
  EXPECT_EQ(si.shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<int32_t>(si), (std::vector<int32_t>{1, 2, 3, 4}));
}

TEST(Slicing, ConcatenateMismatchesAreErrors) {
  Array a = counting({2, 2});
  EXPECT_THROW(lax::concatenate({a, counting({2})}, 0), mj::ShapeError);              // rank
  EXPECT_THROW(lax::concatenate({a, counting({3, 3})}, 0), mj::ShapeError);           // other dim
  EXPECT_THROW(lax::concatenate({a, arr<int32_t>({2, 2}, {1, 2, 3, 4})}, 0), mj::TypeError);
  EXPECT_THROW(lax::concatenate({a}, 2), mj::ValueError);
  EXPECT_THROW(mj::stack({a, counting({2, 3})}), mj::ShapeError);
  EXPECT_THROW(mj::concatenate({}, 0), mj::ValueError);
}

// ---- pad -----------------------------------------------------------------------------------------

TEST(Slicing, PadLowHighInteriorAndNegative) {
  Array x = arr<float>({3}, {1, 2, 3});
  Array z = arr<float>({}, {0});
  EXPECT_EQ(vals<float>(lax::pad(x, z, {{1, 2, 1}})), (std::vector<float>{0, 1, 0, 2, 0, 3, 0, 0}));
  EXPECT_EQ(vals<float>(lax::pad(x, z, {{-1, 0, 0}})), (std::vector<float>{2, 3}));
  EXPECT_EQ(vals<float>(lax::pad(x, z, {{-2, -1, 1}})), (std::vector<float>{2, 0}));  // 1 0 2 0 3 cropped
  Array y = arr<int32_t>({2, 2}, {1, 2, 3, 4});
  Array py = lax::pad(y, arr<int32_t>({}, {9}), {{0, 1, 0}, {1, 0, 0}});
  EXPECT_EQ(py.shape(), (Shape{3, 3}));
  EXPECT_EQ(vals<int32_t>(py), (std::vector<int32_t>{9, 1, 2, 9, 3, 4, 9, 9, 9}));
  EXPECT_THROW(lax::pad(x, z, {{-3, -1, 0}}), mj::ShapeError);
  EXPECT_THROW(lax::pad(x, arr<int32_t>({}, {0}), {{1, 1, 0}}), mj::TypeError);
  EXPECT_THROW(lax::pad(x, z, {{1, 1, 0}, {0, 0, 0}}), mj::ShapeError);

  std::string j = jaxpr_of(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{lax::pad(a[0], a[1], {{1, 2, 1}, {0, 0, 0}})};
      },
      {f32s({2, 2}), f32s({})});
  EXPECT_NE(j.find("pad[padding_config=((1, 2, 1), (0, 0, 0))]"), std::string::npos) << j;
}

// ---- gather / scatter_add ------------------------------------------------------------------------

TEST(Slicing, GatherRowsByIndicesOfAnyShape) {
  Array x = arr<float>({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  Array g = lax::gather(x, arr<int32_t>({2, 2}, {3, 0, 1, 1}));
  EXPECT_EQ(g.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(vals<float>(g), (std::vector<float>{30, 31, 0, 1, 10, 11, 10, 11}));
  Array gi = mj::take(arr<int32_t>({3}, {5, 6, 7}), arr<int32_t>({}, {2}));
  EXPECT_EQ(gi.shape(), (Shape{}));
  EXPECT_EQ(vals<int32_t>(gi), (std::vector<int32_t>{7}));
  EXPECT_THROW(lax::gather(x, arr<float>({1}, {0})), mj::TypeError);
}

TEST(Slicing, GatherOutOfRangeIsIndexError) {
  Array x = counting({4, 2});
  const int line = __LINE__ + 2;
  try {
    lax::gather(x, arr<int32_t>({3}, {0, 5, 1}));
    FAIL();
  } catch (const mj::IndexError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("index 5"), std::string::npos) << m;
    EXPECT_NE(m.find("size 4"), std::string::npos) << m;
    EXPECT_NE(m.find("test_slicing.cc"), std::string::npos) << m;
    EXPECT_EQ(int(e.where().line()), line);
  }
  // take raises no IndexError for -1: its default mode "fill" counts -1 from the end once:
  // row 3 of counting({4, 2}) = {6, 7}.
  EXPECT_EQ(vals<float>(mj::take(x, arr<int32_t>({1}, {-1}), 0)), (std::vector<float>{6, 7}));
  EXPECT_THROW(lax::scatter_add(x, arr<int32_t>({1}, {4}), counting({1, 2})), mj::IndexError);
  // Staging does not look at index values.
  EXPECT_NO_THROW(jaxpr_of(
      [&](const std::vector<Array>& a) {
        return std::vector<Array>{lax::gather(a[0], arr<int32_t>({1}, {7}))};
      },
      {f32s({4, 2})}));
}

TEST(Slicing, ScatterAddAccumulatesDuplicates) {
  Array op = arr<float>({3, 2}, {1, 1, 1, 1, 1, 1});
  Array up = arr<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Array r = lax::scatter_add(op, arr<int32_t>({3}, {2, 0, 2}), up);
  // row 0 += (3, 4); row 2 += (1, 2) + (5, 6).
  EXPECT_EQ(vals<float>(r), (std::vector<float>{4, 5, 1, 1, 7, 9}));
  Array ri = lax::scatter_add(arr<int32_t>({2}, {0, 0}), arr<int32_t>({3}, {1, 1, 0}),
                              arr<int32_t>({3}, {5, 6, 7}));
  EXPECT_EQ(vals<int32_t>(ri), (std::vector<int32_t>{7, 11}));
  EXPECT_THROW(lax::scatter_add(op, arr<int32_t>({2}, {0, 1}), up), mj::ShapeError);
}

// ---- iota ----------------------------------------------------------------------------------------

TEST(Slicing, Iota) {
  Array a = lax::iota(mj::i32, {3});
  EXPECT_EQ(vals<int32_t>(a), (std::vector<int32_t>{0, 1, 2}));
  Array b = lax::iota(mj::f32, {2, 3}, 1);
  EXPECT_EQ(vals<float>(b), (std::vector<float>{0, 1, 2, 0, 1, 2}));
  Array c = lax::iota(mj::i32, {2, 3}, 0);
  EXPECT_EQ(vals<int32_t>(c), (std::vector<int32_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_THROW(lax::iota(mj::i32, {3}, 1), mj::ValueError);
  EXPECT_THROW(lax::iota(mj::bool_, {3}), mj::TypeError);
  std::string j = jaxpr_of([](const std::vector<Array>&) { return std::vector<Array>{lax::iota(mj::i32, {3})}; }, {});
  EXPECT_NE(j.find("iota[dimension=0 dtype=int32 shape=(3,)]"), std::string::npos) << j;
  std::string s = jaxpr_of(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{lax::slice(a[0], {1}, {3}), lax::dynamic_slice(a[0], {i32(0)}, {2})};
      },
      {f32s({4})});
  EXPECT_NE(s.find("slice[limit_indices=(3,) start_indices=(1,) strides=None]"), std::string::npos) << s;
  EXPECT_NE(s.find("dynamic_slice[slice_sizes=(2,)]"), std::string::npos) << s;
}

TEST(Slicing, PrintedParamsParseBack) {
  auto cj = mj::trace_to_jaxpr(
      [](const std::vector<Array>& a) {
        Array p = lax::pad(a[0], a[1], {{1, -2, 1}, {0, 3, 0}});
        Array s = lax::slice(p, {0, 0}, {1, 2});
        Array r = lax::reshape(lax::slice(a[0], {0, 0}, {2, 2}, {1, 2}), {2});
        return std::vector<Array>{s, r, lax::pad(a[1], a[1], {})};
      },
      {f32s({3, 3}), f32s({})});
  std::string text = mj::to_string(cj);
  EXPECT_NE(text.find("padding_config=((1, -2, 1), (0, 3, 0))"), std::string::npos) << text;
  auto back = mj::parse_jaxpr(text);
  EXPECT_EQ(mj::to_string(back), text);
  ASSERT_EQ(back.jaxpr->eqns.size(), cj.jaxpr->eqns.size());
  for (size_t i = 0; i < cj.jaxpr->eqns.size(); ++i)
    EXPECT_TRUE(back.jaxpr->eqns[i].params == cj.jaxpr->eqns[i].params) << i;
  // The parsed pad config drives the eager pad the same way: [[1, 2], [3, 4]] padded.
  auto cfg = lax::padding_config(back.jaxpr->eqns[0].params);
  ASSERT_EQ(cfg.size(), 2u);
  EXPECT_EQ(cfg[0].low, 1);
  EXPECT_EQ(cfg[0].high, -2);
  EXPECT_EQ(cfg[0].interior, 1);
  EXPECT_EQ(cfg[1].high, 3);
}

// ---- autodiff rules: VJPs against hand-derived cotangents ---------------------------------------

TEST(SlicingRules, SliceAndPadTransposes) {
  // slice x[1:5:2] of x (6): out = (x1, x3); cotangent (a, b) lands at positions 1 and 3.
  auto r = mj::vjp_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{lax::slice(a[0], {1}, {5}, {2})}; },
      {counting({6})});
  EXPECT_EQ(vals<float>(r.pullback({arr<float>({2}, {7, 8})})[0]), (std::vector<float>{0, 7, 0, 8, 0, 0}));
  // pad x (3) by (1, -1, 1): low 1 and interior 1 give [p x0 p x1 p x2]; high -1 crops x2:
  // [p x0 p x1 p]. ct (c0..c4): operand gets (c1, c3, 0); padding value gets c0 + c2 + c4.
  auto rp = mj::vjp_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{lax::pad(a[0], a[1], {{1, -1, 1}})}; },
      {counting({3}), arr<float>({}, {0})});
  EXPECT_EQ(rp.primal_outs[0].shape(), (Shape{5}));
  auto g = rp.pullback({arr<float>({5}, {1, 2, 3, 4, 5})});
  EXPECT_EQ(vals<float>(g[0]), (std::vector<float>{2, 4, 0}));
  EXPECT_EQ(vals<float>(g[1]), (std::vector<float>{9}));
}

TEST(SlicingRules, DynamicSliceAndUpdateTransposes) {
  Array x = counting({5});
  auto r = mj::vjp_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{lax::dynamic_slice(a[0], {i32(4)}, {2})}; },
      {x});
  // start clamps to 3: the cotangent lands at 3 and 4.
  EXPECT_EQ(vals<float>(r.pullback({arr<float>({2}, {1, 2})})[0]), (std::vector<float>{0, 0, 0, 1, 2}));
  auto ru = mj::vjp_flat(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{lax::dynamic_update_slice(a[0], a[1], {i32(1)})};
      },
      {x, arr<float>({2}, {9, 9})});
  auto g = ru.pullback({arr<float>({5}, {1, 2, 3, 4, 5})});
  EXPECT_EQ(vals<float>(g[0]), (std::vector<float>{1, 0, 0, 4, 5}));  // update region zeroed
  EXPECT_EQ(vals<float>(g[1]), (std::vector<float>{2, 3}));
}

TEST(SlicingRules, ConcatenateGatherScatterTransposes) {
  auto r = mj::vjp_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{lax::concatenate({a[0], a[1]}, 0)}; },
      {counting({2}), counting({1})});
  auto g = r.pullback({arr<float>({3}, {4, 5, 6})});
  EXPECT_EQ(vals<float>(g[0]), (std::vector<float>{4, 5}));
  EXPECT_EQ(vals<float>(g[1]), (std::vector<float>{6}));

  // gather rows (2, 0, 2) of x (3, 2): the cotangent of row 2 is the sum of two rows.
  Array idx = arr<int32_t>({3}, {2, 0, 2});
  auto rg = mj::vjp_flat(
      [&](const std::vector<Array>& a) { return std::vector<Array>{lax::gather(a[0], idx)}; },
      {counting({3, 2})});
  Array gg = rg.pullback({arr<float>({3, 2}, {1, 2, 3, 4, 5, 6})})[0];
  EXPECT_EQ(vals<float>(gg), (std::vector<float>{3, 4, 0, 0, 6, 8}));

  auto rs = mj::vjp_flat(
      [&](const std::vector<Array>& a) { return std::vector<Array>{lax::scatter_add(a[0], idx, a[1])}; },
      {counting({3, 2}), counting({3, 2})});
  auto gs = rs.pullback({arr<float>({3, 2}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(vals<float>(gs[0]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(vals<float>(gs[1]), (std::vector<float>{5, 6, 1, 2, 5, 6}));  // rows 2, 0, 2 of ct
  // JVP of scatter_add: linear in operand and updates.
  auto [p, t] = mj::jvp_flat(
      [&](const std::vector<Array>& a) { return std::vector<Array>{lax::scatter_add(a[0], idx, a[1])}; },
      {counting({3, 2}), counting({3, 2})}, {Array(), arr<float>({3, 2}, {1, 1, 2, 2, 3, 3})});
  EXPECT_EQ(vals<float>(t[0]), (std::vector<float>{2, 2, 0, 0, 4, 4}));
}

// ---- batching rules vs per-example loops ---------------------------------------------------------

TEST(SlicingRules, VmapDynamicSliceWithBatchedStarts) {
  Array x = counting({2, 5});                      // example e: x[e] = 5 e + (0..4)
  Array starts = arr<int32_t>({2}, {4, 1});        // example 0 clamps 4 -> 3
  auto out = mj::vmap_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{lax::dynamic_slice(a[0], {a[1]}, {2})}; },
      {x, starts}, {0, 0}, {0});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{3, 4, 6, 7}));
  // Unbatched start: one dynamic_slice over the batch.
  auto out2 = mj::vmap_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{lax::dynamic_slice(a[0], {a[1]}, {2})}; },
      {x, i32(1)}, {0, mj::kNotMapped}, {0});
  EXPECT_EQ(vals<float>(out2[0]), (std::vector<float>{1, 2, 6, 7}));
  // dynamic_update_slice with a batched update and unbatched operand.
  auto out3 = mj::vmap_flat(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{lax::dynamic_update_slice(a[0], a[1], {i32(2)})};
      },
      {arr<float>({3}, {0, 0, 0}), arr<float>({2, 1}, {5, 6})}, {mj::kNotMapped, 0}, {0});
  EXPECT_EQ(vals<float>(out3[0]), (std::vector<float>{0, 0, 5, 0, 0, 6}));
}

TEST(SlicingRules, VmapGatherPadConcatenate) {
  Array x = counting({2, 3, 1});  // example e: rows (3e, 3e + 1, 3e + 2)
  Array idx = arr<int32_t>({2, 2}, {2, 0, 1, 1});
  auto both = mj::vmap_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{lax::gather(a[0], a[1])}; },
      {x, idx}, {0, 0}, {0});
  EXPECT_EQ(both[0].shape(), (Shape{2, 2, 1}));
  EXPECT_EQ(vals<float>(both[0]), (std::vector<float>{2, 0, 4, 4}));
  auto xonly = mj::vmap_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{lax::gather(a[0], a[1])}; },
      {x, arr<int32_t>({1}, {2})}, {0, mj::kNotMapped}, {0});
  EXPECT_EQ(vals<float>(xonly[0]), (std::vector<float>{2, 5}));
  // Batched padding value: example e pads (e+1)-valued cells.
  auto padded = mj::vmap_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{lax::pad(a[0], a[1], {{1, 0, 0}})}; },
      {arr<float>({2, 1}, {7, 8}), arr<float>({2}, {1, 2})}, {0, 0}, {0});
  EXPECT_EQ(vals<float>(padded[0]), (std::vector<float>{1, 7, 2, 8}));
  // Concatenate of a batched and an unbatched operand.
  auto cat = mj::vmap_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{lax::concatenate({a[0], a[1]}, 0)}; },
      {arr<float>({2, 1}, {1, 2}), arr<float>({1}, {9})}, {0, mj::kNotMapped}, {0});
  EXPECT_EQ(vals<float>(cat[0]), (std::vector<float>{1, 9, 2, 9}));
  // scatter_add with unbatched indices and batched updates.
  auto sc = mj::vmap_flat(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{lax::scatter_add(a[0], arr<int32_t>({2}, {1, 1}), a[1])};
      },
      {arr<float>({2}, {0, 0}), arr<float>({2, 2}, {1, 2, 3, 4})}, {mj::kNotMapped, 0}, {0});
  EXPECT_EQ(vals<float>(sc[0]), (std::vector<float>{0, 3, 0, 7}));
  // Slice of a batch at axis 1.
  auto sl = mj::vmap_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{lax::slice(a[0], {1}, {3})}; },
      {counting({3, 2})}, {1}, {0});
  EXPECT_EQ(vals<float>(sl[0]), (std::vector<float>{2, 4, 3, 5}));
}
