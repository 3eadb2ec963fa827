// Tests of the vmap engine (BatchTrace, vmap_flat, pytree vmap) and the batching helpers.
// Owns test-local primitives (test_vmap_*) so the engine is tested independently of the real rules.
#include <gtest/gtest.h>

#include <cmath>

#include <minijax/minijax.h>

#include "autodiff/batching_util.h"
#include "core/api.h"

namespace {

using mj::Array;
using mj::kNotMapped;
using mj::Shape;
using mj::ShapedArray;

Array make(const Shape& shape, const std::vector<float>& v) {
  Array a = Array::allocate(ShapedArray{shape, mj::DType::f32});
  EXPECT_EQ(size_t(a.size()), v.size());
  float* p = a.mutable_data<float>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = v[i];
  return a;
}

std::vector<float> values(const Array& a) {
  Array c = a.concrete();
  const float* p = c.data<float>();
  return std::vector<float>(p, p + c.size());
}

// ---- test-local primitives ------------------------------------------------------------------
// test_vmap_add: elementwise f32 addition of equal shapes (rule: elementwise_batch_rule).
// test_vmap_reduce: sum over params "axes" (rule: shift the axes past the batch dim).
// test_vmap_nobatch / test_vmap_declared: no batching rule (the second declares why).
// test_vmap_badrule: a rule that returns the wrong shape.

std::vector<ShapedArray> add_shape(const std::vector<ShapedArray>& in, const mj::Params&) {
  if (in.size() != 2) throw mj::ValueError("expected 2 operands");
  if (in[0].shape != in[1].shape) throw mj::ShapeError("operand shapes differ");
  return {in[0].strip_weak()};
}

std::vector<Array> add_impl(const std::vector<Array>& a, const mj::Params&,
                            const std::vector<ShapedArray>& out) {
  Array r = Array::allocate(out[0]);
  const float* x = a[0].data<float>();
  const float* y = a[1].data<float>();
  float* z = r.mutable_data<float>();
  for (int64_t i = 0; i < r.size(); ++i) z[i] = x[i] + y[i];
  return {r};
}

std::vector<ShapedArray> reduce_shape(const std::vector<ShapedArray>& in, const mj::Params& p) {
  ShapedArray o = in[0];
  const auto& axes = std::get<std::vector<int64_t>>(p.items().at("axes"));
  std::vector<bool> drop(size_t(o.ndim()), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= o.ndim()) throw mj::ValueError("axis out of range");
    drop[size_t(a)] = true;
  }
  Shape s;
  for (int64_t i = 0; i < o.ndim(); ++i)
    if (!drop[size_t(i)]) s.push_back(o.shape[size_t(i)]);
  o.shape = s;
  return {o};
}

std::vector<Array> reduce_impl(const std::vector<Array>& a, const mj::Params& p,
                               const std::vector<ShapedArray>& out) {
  Array r = Array::allocate(out[0]);
  const Shape& in_shape = a[0].shape();
  const auto& axes = std::get<std::vector<int64_t>>(p.items().at("axes"));
  std::vector<bool> drop(in_shape.size(), false);
  for (int64_t ax : axes) drop[size_t(ax)] = true;
  auto in_strides = mj::strides_of(in_shape);
  auto out_strides = mj::strides_of(out[0].shape);
  const float* x = a[0].data<float>();
  float* z = r.mutable_data<float>();
  for (int64_t i = 0; i < a[0].size(); ++i) {
    int64_t rem = i, o = 0, k = 0;
    for (size_t d = 0; d < in_shape.size(); ++d) {
      int64_t idx = rem / in_strides[d];
      rem %= in_strides[d];
      if (!drop[d]) o += idx * out_strides[size_t(k++)];
    }
    z[o] += x[i];
  }
  return {r};
}

mj::Registrar reg_test_prims([] {
  auto& add = mj::get_or_create_primitive("test_vmap_add");
  add.shape_rule = add_shape;
  add.impl = add_impl;
  add.batch = mj::elementwise_batch_rule("test_vmap_add");

  auto& red = mj::get_or_create_primitive("test_vmap_reduce");
  red.shape_rule = reduce_shape;
  red.impl = reduce_impl;
  red.batch = [](const std::vector<Array>& args, const std::vector<int64_t>& dims,
                 const mj::Params& p) -> std::pair<std::vector<Array>, std::vector<int64_t>> {
    auto axes = mj::batched_axes(std::get<std::vector<int64_t>>(p.items().at("axes")), dims[0]);
    Array out = mj::bind1("test_vmap_reduce", {args[0]}, {{"axes", axes}});
    return {{out}, {mj::bdim_after_removing(dims[0], axes)}};
  };

  auto& nb = mj::get_or_create_primitive("test_vmap_nobatch");
  nb.shape_rule = [](const std::vector<ShapedArray>& in, const mj::Params&) {
    return std::vector<ShapedArray>{in[0]};
  };
  nb.impl = [](const std::vector<Array>& a, const mj::Params&, const std::vector<ShapedArray>&) {
    return std::vector<Array>{a[0]};
  };
  auto& dec = mj::get_or_create_primitive("test_vmap_declared");
  dec.shape_rule = nb.shape_rule;
  dec.impl = nb.impl;
  dec.no_batch_reason = "its effect is ordered per call";

  auto& bad = mj::get_or_create_primitive("test_vmap_badrule");
  bad.shape_rule = nb.shape_rule;
  bad.impl = nb.impl;
  // Wrong: claims the batch dim is 0 but drops it (returns one element).
  bad.batch = [](const std::vector<Array>& args, const std::vector<int64_t>&, const mj::Params&)
      -> std::pair<std::vector<Array>, std::vector<int64_t>> {
    return {{mj::bind1("test_vmap_reduce", {args[0]}, {{"axes", std::vector<int64_t>{0}}})}, {0}};
  };
});

Array tadd(const Array& x, const Array& y) { return mj::bind1("test_vmap_add", {x, y}); }
Array treduce(const Array& x, std::vector<int64_t> axes) {
  return mj::bind1("test_vmap_reduce", {x}, {{"axes", std::move(axes)}});
}

// ---- vmap_flat with test-local primitives ----------------------------------------------------

TEST(Vmap, AlignedElementwiseKeepsBatchDim) {
  // x, y: f32[3,2] mapped over axis 0; each element adds two f32[2] rows.
  Array x = make({3, 2}, {1, 2, 3, 4, 5, 6});
  Array y = make({3, 2}, {10, 20, 30, 40, 50, 60});
  int calls = 0;
  auto outs = mj::vmap_flat(
      [&](const std::vector<Array>& a) {
        ++calls;
        EXPECT_EQ(a[0].shape(), Shape({2}));  // the function sees one element
        EXPECT_TRUE(a[0].is_tracer());
        return std::vector<Array>{tadd(a[0], a[1])};
      },
      {x, y}, {0, 0}, {0});
  EXPECT_EQ(calls, 1);  // traced once, not once per element
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_TRUE(outs[0].is_concrete());
  EXPECT_EQ(outs[0].shape(), Shape({3, 2}));
  EXPECT_EQ(values(outs[0]), std::vector<float>({11, 22, 33, 44, 55, 66}));
}

TEST(Vmap, ReduceOverElementAxisWithBatchDimInTheMiddle) {
  // x: f32[2,3] mapped over axis 1 -> elements are the columns x[:, b] (f32[2]); summing each
  // element over its axis 0 gives the column sums: [1+4, 2+5, 3+6] = [5, 7, 9].
  Array x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  auto outs = mj::vmap_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{treduce(a[0], {0})}; }, {x}, {1},
      {0});
  EXPECT_EQ(outs[0].shape(), Shape({3}));
  EXPECT_EQ(values(outs[0]), std::vector<float>({5, 7, 9}));
}

TEST(Vmap, NegativeInAxisCountsFromTheEnd) {
  // x: f32[2,3,2]; in_axes -3 == axis 0 (rank 3); each element f32[3,2] summed over both axes.
  // element 0: 1+..+6 = 21; element 1: 7+..+12 = 57.
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[size_t(i)] = float(i + 1);
  Array x = make({2, 3, 2}, v);
  auto outs = mj::vmap_flat(
      [](const std::vector<Array>& a) { return std::vector<Array>{treduce(a[0], {0, 1})}; }, {x},
      {-3}, {});
  EXPECT_EQ(values(outs[0]), std::vector<float>({21, 57}));
}

TEST(Vmap, NestedVmapOfTestPrimitive) {
  // vmap(vmap(add)) over f32[2,3] inputs is elementwise addition; the inner trace's values are
  // tracers of the outer one.
  Array x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Array y = make({2, 3}, {6, 5, 4, 3, 2, 1});
  auto inner = [](const std::vector<Array>& a) {
    return mj::vmap_flat(
        [](const std::vector<Array>& b) {
          EXPECT_EQ(b[0].ndim(), 0);
          return std::vector<Array>{tadd(b[0], b[1])};
        },
        a, {0, 0}, {0});
  };
  auto outs = mj::vmap_flat(inner, {x, y}, {0, 0}, {0});
  EXPECT_EQ(outs[0].shape(), Shape({2, 3}));
  EXPECT_EQ(values(outs[0]), std::vector<float>(6, 7.f));
  // Nested reduction: outer over rows of f32[2,3] (axis 0), inner over the columns of each row
  // (axis 0 of f32[3]) -> each innermost element is a scalar, reduce over no axes = identity.
  auto outs2 = mj::vmap_flat(
      [](const std::vector<Array>& a) {
        return mj::vmap_flat(
            [](const std::vector<Array>& b) { return std::vector<Array>{treduce(b[0], {})}; }, a,
            {0}, {0});
      },
      {x}, {0}, {0});
  EXPECT_EQ(values(outs2[0]), std::vector<float>({1, 2, 3, 4, 5, 6}));
}

TEST(Vmap, UnbatchedOperationsRunOnTheEnclosingTrace) {
  Array x = make({3, 2}, {1, 2, 3, 4, 5, 6});
  Array y = make({2}, {1, 1});
  auto outs = mj::vmap_flat(
      [](const std::vector<Array>& a) {
        EXPECT_TRUE(a[1].is_concrete());  // an unmapped argument is passed as it is
        Array yy = tadd(a[1], a[1]);
        EXPECT_TRUE(yy.is_concrete());  // nothing batched: evaluated eagerly
        return std::vector<Array>{yy};
      },
      {x, y}, {0, kNotMapped}, {kNotMapped});
  EXPECT_EQ(outs[0].shape(), Shape({2}));
  EXPECT_EQ(values(outs[0]), std::vector<float>({2, 2}));
}

TEST(Vmap, InconsistentSizesNameEachArgument) {
  Array x = make({3, 2}, std::vector<float>(6, 0.f));
  Array y = make({2, 4}, std::vector<float>(8, 0.f));
  auto f = [](const std::vector<Array>& a) { return std::vector<Array>{a[0]}; };
  try {
    mj::vmap_flat(f, {x, y}, {0, 1}, {0});
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("vmap got inconsistent sizes for array axes to be mapped"), std::string::npos);
    EXPECT_NE(m.find("argument 0 of type f32[3,2] has size 3 along axis 0"), std::string::npos) << m;
    EXPECT_NE(m.find("argument 1 of type f32[2,4] has size 4 along axis 1"), std::string::npos) << m;
  }
}

TEST(Vmap, BadAxesAndNothingMappedAreValueErrors) {
  Array x = make({3, 2}, std::vector<float>(6, 0.f));
  auto f = [](const std::vector<Array>& a) { return std::vector<Array>{a[0]}; };
  EXPECT_THROW(mj::vmap_flat(f, {x}, {2}, {0}), mj::ValueError);   // axis out of range
  EXPECT_THROW(mj::vmap_flat(f, {x}, {-3}, {0}), mj::ValueError);  // -3 + 2 < 0
  EXPECT_THROW(mj::vmap_flat(f, {x}, {kNotMapped}, {0}), mj::ValueError);
  EXPECT_THROW(mj::vmap_flat(f, {x}, {0, 0}, {0}), mj::ValueError);  // in_axes size
  EXPECT_THROW(mj::vmap_flat(f, {x}, {0}, {0, 0}), mj::ValueError);  // out_axes size
  // A mapped output cannot be declared unmapped.
  EXPECT_THROW(mj::vmap_flat(f, {x}, {0}, {kNotMapped}), mj::ValueError);
  Array s = make({}, {1.f});
  EXPECT_THROW(mj::vmap_flat(f, {s}, {0}, {0}), mj::ValueError);  // rank-0 has no axis 0
}

TEST(Vmap, MissingBatchRuleNamesThePrimitive) {
  Array x = make({3}, {1, 2, 3});
  try {
    mj::vmap_flat([](const std::vector<Array>& a) {
      return std::vector<Array>{mj::bind1("test_vmap_nobatch", {a[0]})};
    }, {x}, {0}, {0});
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'test_vmap_nobatch' has no batching rule"),
              std::string::npos);
  }
  try {
    mj::vmap_flat([](const std::vector<Array>& a) {
      return std::vector<Array>{mj::bind1("test_vmap_declared", {a[0]})};
    }, {x}, {0}, {0});
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("its effect is ordered per call"), std::string::npos);
  }
  // Without a batched operand the primitive is not batched at all, so no rule is needed:
  // out[b] = x2[b] + nobatch(x) = x2[b] + x.
  Array x2 = make({2, 3}, {10, 20, 30, 40, 50, 60});
  auto outs = mj::vmap_flat([&](const std::vector<Array>& a) {
    return std::vector<Array>{tadd(a[0], mj::bind1("test_vmap_nobatch", {a[1]}))};
  }, {x2, x}, {0, kNotMapped}, {0});
  EXPECT_EQ(values(outs[0]), std::vector<float>({11, 22, 33, 41, 52, 63}));
}

TEST(Vmap, WrongBatchRuleOutputIsReported) {
  Array x = make({3, 2}, std::vector<float>(6, 1.f));
  try {
    mj::vmap_flat([](const std::vector<Array>& a) {
      return std::vector<Array>{mj::bind1("test_vmap_badrule", {a[0]})};
    }, {x}, {0}, {0});
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("batching rule of 'test_vmap_badrule'"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[2]"), std::string::npos) << m;  // the element output expected
  }
}

TEST(Vmap, ElementShapeErrorsNameTheElementAvalsAndCallSite) {
  // Elements f32[2] and f32[4] do not add; the error comes from the shape rule on the element
  // avals, at the user's call site (the line of the bind below).
  Array x = make({3, 2}, std::vector<float>(6, 1.f));
  Array y = make({3, 4}, std::vector<float>(12, 1.f));
  int line = 0;
  try {
    mj::vmap_flat([&](const std::vector<Array>& a) {
      line = __LINE__ + 1;
      return std::vector<Array>{mj::bind1("test_vmap_add", {a[0], a[1]})};
    }, {x, y}, {0, 0}, {0});
    FAIL() << "expected ShapeError";
  } catch (const mj::ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("test_vmap_add"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[2]"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[4]"), std::string::npos) << m;
    EXPECT_EQ(int(e.where().line()), line);
  }
}

TEST(Vmap, BatchedValuesCannotBeConcretized) {
  Array x = make({3}, {1, 2, 3});
  EXPECT_THROW(mj::vmap_flat([](const std::vector<Array>& a) {
    if (a[0].item<float>() > 0) return std::vector<Array>{a[0]};
    return std::vector<Array>{a[0]};
  }, {x}, {0}, {0}), mj::ConcretizationError);
}

TEST(Vmap, EscapedTracerIsAnError) {
  Array x = make({3}, {1, 2, 3});
  Array leaked;
  mj::vmap_flat([&](const std::vector<Array>& a) {
    leaked = a[0];
    return std::vector<Array>{a[0]};
  }, {x}, {0}, {0});
  EXPECT_THROW(tadd(leaked, leaked), mj::UnexpectedTracerError);
}

TEST(Vmap, StagedUnderTraceToJaxpr) {
  // vmap inside a staging trace records the batched equation: one test_vmap_add on f32[3,2].
  auto cj = mj::trace_to_jaxpr(
      [](const std::vector<Array>& a) {
        return mj::vmap_flat([](const std::vector<Array>& b) {
          return std::vector<Array>{tadd(b[0], b[1])};
        }, a, {0, 0}, {0});
      },
      {ShapedArray{{3, 2}, mj::DType::f32}, ShapedArray{{3, 2}, mj::DType::f32}});
  ASSERT_EQ(cj.jaxpr->eqns.size(), 1u);
  EXPECT_EQ(cj.jaxpr->eqns[0].primitive->name, "test_vmap_add");
  EXPECT_EQ(cj.jaxpr->eqns[0].outputs[0].aval().shape, Shape({3, 2}));
  EXPECT_EQ(mj::to_string(cj),
            "{ lambda ; a:f32[3,2] b:f32[3,2]. let c:f32[3,2] = test_vmap_add a b in (c,) }");
}

// ---- engine paths that move or materialize batch dims (lax::transpose / broadcast_in_dim) ------

TEST(Vmap, OutAxesMoveTheBatchDim) {
  // out[j][b] = x[b][j] + y[b][j] with the batch dim placed at 1.
  Array x = make({3, 2}, {1, 2, 3, 4, 5, 6});
  Array y = make({3, 2}, {10, 20, 30, 40, 50, 60});
  auto f = [](const std::vector<Array>& a) { return std::vector<Array>{tadd(a[0], a[1])}; };
  auto outs = mj::vmap_flat(f, {x, y}, {0, 0}, {1});
  EXPECT_EQ(outs[0].shape(), Shape({2, 3}));
  EXPECT_EQ(values(outs[0]), std::vector<float>({11, 33, 55, 22, 44, 66}));
  // -2 on a batched rank-2 output is axis 0.
  auto outs0 = mj::vmap_flat(f, {x, y}, {0, 0}, {-2});
  EXPECT_EQ(values(outs0[0]), std::vector<float>({11, 22, 33, 44, 55, 66}));
}

TEST(Vmap, MixedInAxesAreAligned) {
  // x: f32[2,3] mapped over axis 1 (elements are its columns), y: f32[3,2] over axis 0 (rows):
  // out[b] = x[:, b] + y[b, :].
  Array x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Array y = make({3, 2}, {10, 20, 30, 40, 50, 60});
  auto outs = mj::vmap_flat([](const std::vector<Array>& a) {
    return std::vector<Array>{tadd(a[0], a[1])};
  }, {x, y}, {1, 0}, {0});
  EXPECT_EQ(outs[0].shape(), Shape({3, 2}));
  // b=0: [1,4]+[10,20]; b=1: [2,5]+[30,40]; b=2: [3,6]+[50,60]
  EXPECT_EQ(values(outs[0]), std::vector<float>({11, 24, 32, 45, 53, 66}));
}

TEST(Vmap, UnmappedOperandIsBroadcast) {
  // in_axes {0, kNotMapped}: out[b] = x[b] + y.
  Array x = make({3, 2}, {1, 2, 3, 4, 5, 6});
  Array y = make({2}, {100, 200});
  auto outs = mj::vmap_flat([](const std::vector<Array>& a) {
    return std::vector<Array>{tadd(a[0], a[1])};
  }, {x, y}, {0, kNotMapped}, {0});
  EXPECT_EQ(values(outs[0]), std::vector<float>({101, 202, 103, 204, 105, 206}));
}

TEST(Vmap, UnbatchedOutputsAreBroadcastAlongOutAxis) {
  Array x = make({3}, {1, 2, 3});
  Array y = make({2}, {7, 8});
  // f ignores its mapped argument: the result repeats y for each of the 3 batch elements.
  auto outs = mj::vmap_flat([](const std::vector<Array>& a) { return std::vector<Array>{a[1]}; },
                            {x, y}, {0, kNotMapped}, {0});
  EXPECT_EQ(outs[0].shape(), Shape({3, 2}));
  EXPECT_EQ(values(outs[0]), std::vector<float>({7, 8, 7, 8, 7, 8}));
  auto outs1 = mj::vmap_flat([](const std::vector<Array>& a) { return std::vector<Array>{a[1]}; },
                             {x, y}, {0, kNotMapped}, {1});
  EXPECT_EQ(outs1[0].shape(), Shape({2, 3}));
  EXPECT_EQ(values(outs1[0]), std::vector<float>({7, 7, 7, 8, 8, 8}));
}

TEST(Vmap, PytreeArgumentsAndResults) {
  Array x = make({3, 2}, {1, 2, 3, 4, 5, 6});
  Array y = make({3, 2}, {10, 20, 30, 40, 50, 60});
  Array z = make({2}, {100, 200});
  std::pair<Array, Array> p{x, y};
  std::map<std::string, Array> m{{"b", z}};
  auto f = [](const std::pair<Array, Array>& q, const std::map<std::string, Array>& n) {
    EXPECT_EQ(q.first.shape(), Shape({2}));
    EXPECT_EQ(n.at("b").shape(), Shape({2}));
    return std::make_tuple(tadd(q.first, q.second), std::vector<Array>{tadd(q.first, n.at("b"))});
  };
  auto r = mj::vmap(f, {.in_axes = {0, kNotMapped}})(p, m);
  EXPECT_EQ(values(std::get<0>(r)), std::vector<float>({11, 22, 33, 44, 55, 66}));
  ASSERT_EQ(std::get<1>(r).size(), 1u);
  EXPECT_EQ(values(std::get<1>(r)[0]), std::vector<float>({101, 202, 103, 204, 105, 206}));

  // Per-leaf out_axes: first output at 1, second at 0.
  auto r2 = mj::vmap(f, {.in_axes = {0, kNotMapped}, .out_axes = {1, 0}})(p, m);
  EXPECT_EQ(values(std::get<0>(r2)), std::vector<float>({11, 33, 55, 22, 44, 66}));
  EXPECT_EQ(values(std::get<1>(r2)[0]), std::vector<float>({101, 202, 103, 204, 105, 206}));

  // A single Array result, by-value parameters, default in_axes (all 0).
  auto g = mj::vmap([](Array a, Array b) { return tadd(a, b); });
  EXPECT_EQ(values(g(x, y)), std::vector<float>({11, 22, 33, 44, 55, 66}));
  // in_axes of the wrong length: ValueError at the vmap() call site.
  int line = __LINE__ + 1;
  auto h = mj::vmap([](Array a, Array b) { return tadd(a, b); }, {.in_axes = {0, 0, 0}});
  try {
    h(x, y);
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    EXPECT_EQ(int(e.where().line()), line);
  }
}

// ---- batching helpers ---------------------------------------------------------------------

TEST(BatchingUtil, MoveAndMaterialize) {
  // x[i][j][k] = 100i + 10j + k, shape [2,3,2]; moving dim 2 to 0 gives y[k][i][j] = x[i][j][k].
  std::vector<float> v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) v.push_back(float(100 * i + 10 * j + k));
  Array x = make({2, 3, 2}, v);
  Array y = mj::move_batch_dim(x, 2, 0);
  EXPECT_EQ(y.shape(), Shape({2, 2, 3}));
  EXPECT_EQ(values(y), std::vector<float>({0, 10, 20, 100, 110, 120, 1, 11, 21, 101, 111, 121}));
  EXPECT_EQ(values(mj::move_batch_dim(x, 1, 1)), v);
  EXPECT_THROW(mj::move_batch_dim(x, 3, 0), mj::ValueError);

  // An unmapped f32[2] materialized with 3 copies at position 1: m[i][b] = z[i].
  Array z = make({2}, {5, 6});
  Array m = mj::materialize_batch(z, kNotMapped, 3, 1);
  EXPECT_EQ(m.shape(), Shape({2, 3}));
  EXPECT_EQ(values(m), std::vector<float>({5, 5, 5, 6, 6, 6}));
  // A mapped value is moved instead; a size mismatch is a ValueError.
  EXPECT_EQ(mj::materialize_batch(x, 1, 3, 0).shape(), Shape({3, 2, 2}));
  EXPECT_THROW(mj::materialize_batch(x, 1, 4, 0), mj::ValueError);

  auto [front, size] = mj::batch_to_front({x, z}, {1, kNotMapped});
  EXPECT_EQ(size, 3);
  EXPECT_EQ(front[0].shape(), Shape({3, 2, 2}));
  EXPECT_EQ(front[1].shape(), Shape({3, 2}));
  auto [kept, size2] = mj::batch_to_front({x, z}, {1, kNotMapped}, /*materialize_unmapped=*/false);
  EXPECT_EQ(size2, 3);
  EXPECT_EQ(kept[1].shape(), Shape({2}));
  EXPECT_THROW(mj::batch_axis_size({x, z}, {1, 0}), mj::ValueError);  // sizes 3 vs 2

  EXPECT_EQ(mj::batched_axes({0, 1, 2}, 1), std::vector<int64_t>({0, 2, 3}));
  EXPECT_EQ(mj::batched_axes({0, 1}, kNotMapped), std::vector<int64_t>({0, 1}));
  EXPECT_EQ(mj::bdim_after_removing(2, {0, 3}), 1);
  EXPECT_EQ(mj::bdim_after_removing(0, {1, 2}), 0);
}

// ---- the real primitives ----------------------------------------------------------------------

TEST(VmapLax, SinIsSin) {
  std::vector<float> v = {-1.5f, -0.5f, 0.f, 0.25f, 1.f, 2.f};
  Array x = make({2, 3}, v);
  for (int64_t axis : {0, 1}) {
    Array r = mj::vmap([](const Array& a) { return mj::lax::sin(a); }, {.in_axes = {axis}})(x);
    EXPECT_EQ(r.shape(), axis == 0 ? Shape({2, 3}) : Shape({3, 2}));
    auto got = values(r);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) {
        float want = std::sin(v[size_t(3 * i + j)]);
        float g = axis == 0 ? got[size_t(3 * i + j)] : got[size_t(2 * j + i)];
        EXPECT_NEAR(g, want, 1e-6f);
      }
  }
}

// W: f32[4,3], xs: f32[5,3]; matvec(W, x) = W @ x (dot_general contracting W dim 1 with x dim 0).
Array matvec(const Array& w, const Array& x) {
  return mj::lax::dot_general(w, x, {.lhs_contracting = {1}, .rhs_contracting = {0}});
}

TEST(VmapLax, BatchedMatVecEqualsLoop) {
  std::vector<float> wv(12), xv(15);
  for (int i = 0; i < 12; ++i) wv[size_t(i)] = 0.5f * float(i) - 2.f;
  for (int i = 0; i < 15; ++i) xv[size_t(i)] = float((i * 7) % 5) - 1.5f;
  Array w = make({4, 3}, wv);
  Array xs = make({5, 3}, xv);
  Array r = mj::vmap(matvec, {.in_axes = {kNotMapped, 0}})(w, xs);
  ASSERT_EQ(r.shape(), Shape({5, 4}));
  auto got = values(r);
  for (int b = 0; b < 5; ++b) {
    // Per example with lax on a hand-sliced row, and by a plain C++ loop.
    Array xb = make({3}, {xv[size_t(3 * b)], xv[size_t(3 * b + 1)], xv[size_t(3 * b + 2)]});
    auto per = values(matvec(w, xb));
    for (int i = 0; i < 4; ++i) {
      double want = 0;
      for (int k = 0; k < 3; ++k) want += double(wv[size_t(3 * i + k)]) * xv[size_t(3 * b + k)];
      EXPECT_NEAR(got[size_t(4 * b + i)], want, 1e-5);
      EXPECT_NEAR(got[size_t(4 * b + i)], per[size_t(i)], 1e-5);
    }
  }
  // out_axes 1: the batch goes last, r1[i][b] = r[b][i].
  Array r1 = mj::vmap(matvec, {.in_axes = {kNotMapped, 0}, .out_axes = {1}})(w, xs);
  ASSERT_EQ(r1.shape(), Shape({4, 5}));
  auto got1 = values(r1);
  for (int b = 0; b < 5; ++b)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got1[size_t(5 * i + b)], got[size_t(4 * b + i)]);
  // Both batched: ws[b] = W * (b + 1), so the result is r[b] * (b + 1).
  std::vector<float> wsv;
  for (int b = 0; b < 5; ++b)
    for (float e : wv) wsv.push_back(e * float(b + 1));
  Array ws = make({5, 4, 3}, wsv);
  auto got2 = values(mj::vmap(matvec)(ws, xs));
  for (int b = 0; b < 5; ++b)
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(got2[size_t(4 * b + i)], got[size_t(4 * b + i)] * float(b + 1), 1e-4);
}

TEST(VmapLax, NestedVmapWithClosuresAcrossLevels) {
  // Outer sum: out[i][j] = a[i] + b[j]; the inner function closes over the outer tracer.
  Array a = make({3}, {1, 2, 3});
  Array b = make({4}, {10, 20, 30, 40});
  Array r = mj::vmap([&](const Array& ai) {
    return mj::vmap([&](const Array& bj) { return mj::lax::add(ai, bj); })(b);
  })(a);
  ASSERT_EQ(r.shape(), Shape({3, 4}));
  auto got = values(r);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(got[size_t(4 * i + j)], float(i + 1) + 10.f * float(j + 1));

  // Pairwise dot products D[i][j] = <A[i], B[j]> for A: f32[3,2], B: f32[4,2].
  std::vector<float> av = {1, 2, 3, 4, 5, 6}, bv = {1, 0, 0, 1, 1, 1, 2, -1};
  Array A = make({3, 2}, av), B = make({4, 2}, bv);
  auto dot = [](const Array& u, const Array& v) {
    return mj::lax::dot_general(u, v, {.lhs_contracting = {0}, .rhs_contracting = {0}});
  };
  Array D = mj::vmap([&](const Array& ai) {
    return mj::vmap([&](const Array& bj) { return dot(ai, bj); })(B);
  })(A);
  ASSERT_EQ(D.shape(), Shape({3, 4}));
  auto gd = values(D);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_NEAR(gd[size_t(4 * i + j)],
                  av[size_t(2 * i)] * bv[size_t(2 * j)] + av[size_t(2 * i + 1)] * bv[size_t(2 * j + 1)],
                  1e-5);
}

TEST(VmapLax, ReduceSumOverMappedColumns) {
  // Columns of [[1,2,3],[4,5,6]] summed: [5,7,9].
  Array x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Array r = mj::vmap([](const Array& c) { return mj::lax::reduce_sum(c, {0}); },
                     {.in_axes = {1}})(x);
  EXPECT_EQ(values(r), std::vector<float>({5, 7, 9}));
}

TEST(VmapLax, MakeJaxprStagesBatchedEquations) {
  Array w = make({4, 3}, std::vector<float>(12, 1.f));
  Array xs = make({5, 3}, std::vector<float>(15, 1.f));
  auto batched = mj::vmap(matvec, {.in_axes = {kNotMapped, 0}});
  mj::ClosedJaxpr cj = mj::make_jaxpr([&](const Array& W, const Array& X) { return batched(W, X); })(w, xs);
  std::string text = mj::to_string(cj);
  // One batched dot_general (not five per-example ones), producing the f32[5,4] result.
  int dots = 0;
  for (auto& e : cj.jaxpr->eqns) {
    if (e.primitive->name == "dot_general") ++dots;
    // Every staged equation works on the whole batch.
    bool has_batch = false;
    for (auto& o : e.outputs)
      for (int64_t d : o.aval().shape) has_batch |= d == 5;
    EXPECT_TRUE(has_batch) << text;
  }
  EXPECT_EQ(dots, 1) << text;
  ASSERT_EQ(cj.out_avals().size(), 1u);
  EXPECT_EQ(cj.out_avals()[0].shape, Shape({5, 4})) << text;
  EXPECT_NE(text.find("dot_general"), std::string::npos);
  EXPECT_NE(text.find("f32[5,3]"), std::string::npos);
  // The staged jaxpr computes the same values as eager vmap.
  auto staged = mj::eval_jaxpr(cj, {w, xs});
  EXPECT_EQ(values(staged[0]), values(batched(w, xs)));
}

TEST(VmapLax, InconsistentSizesThroughPytreeVmap) {
  Array x = make({3}, {1, 2, 3});
  Array y = make({4}, {1, 2, 3, 4});
  int line = __LINE__ + 1;
  auto f = mj::vmap([](const Array& a, const Array& b) { return mj::lax::add(a, b); });
  try {
    f(x, y);
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("inconsistent sizes"), std::string::npos) << m;
    EXPECT_NE(m.find("has size 3"), std::string::npos) << m;
    EXPECT_NE(m.find("has size 4"), std::string::npos) << m;
    EXPECT_EQ(int(e.where().line()), line);
  }
}

TEST(VmapLax, ComposesWithGrad) {
  // d/dx sin(x) = cos(x), per element (vmap of grad) and through a batched sum (grad of vmap):
  // grad_x sum_b sin(x[b]) = cos(x).
  std::vector<float> v = {-1.f, 0.f, 0.5f, 2.f};
  Array x = make({4}, v);
  Array per = mj::vmap(mj::grad([](const Array& a) { return mj::lax::sin(a); }))(x);
  Array tot = mj::grad([](const Array& a) {
    return mj::lax::reduce_sum(mj::vmap([](const Array& e) { return mj::lax::sin(e); })(a), {0});
  })(x);
  auto gp = values(per), gt = values(tot);
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_NEAR(gp[i], std::cos(v[i]), 1e-6f);
    EXPECT_NEAR(gt[i], std::cos(v[i]), 1e-6f);
  }
}

}  // namespace
