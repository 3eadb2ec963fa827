// Tests of the shape primitives (reshape, squeeze, expand_dims, transpose, rev), the numpy-level
// shape API over them, device_put and optimization_barrier: eager values, errors, params, rules.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autodiff/jvp.h"
#include "autodiff/transpose.h"
#include "autodiff/vmap.h"
#include "core/errors.h"
#include "core/lax.h"
#include "core/numpy.h"
#include "core/staging.h"

namespace mj = minijax;
using mj::Array;
using mj::Shape;

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

/// 0, 1, ..., n-1 as f32 of the given shape.
Array counting(const Shape& s) {
  std::vector<float> v(size_t(mj::shape_size(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  return arr<float>(s, v);
}

std::string jaxpr_of(const mj::FlatFn& f, const std::vector<mj::ShapedArray>& avals) {
  return mj::to_string(mj::trace_to_jaxpr(f, avals));
}

mj::ShapedArray f32s(const Shape& s) { return mj::ShapedArray{s, mj::f32, false, mj::MemoryKind::device}; }

}  // namespace

// ---- reshape ---------------------------------------------------------------------------------------

TEST(ShapeOps, ReshapeKeepsRowMajorOrder) {
  Array x = arr<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Array y = mj::lax::reshape(x, {3, 2});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(y.dtype(), mj::f32);
  EXPECT_EQ(vals<float>(y), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  Array z = mj::lax::reshape(arr<int32_t>({6}, {6, 5, 4, 3, 2, 1}), {1, 2, 3});
  EXPECT_EQ(z.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(vals<int32_t>(z), (std::vector<int32_t>{6, 5, 4, 3, 2, 1}));
}

TEST(ShapeOps, ReshapeWrongSizeNamesShapesAndCallSite) {
  Array x = counting({2, 3});
  const int line = __LINE__ + 2;
  try {
    mj::lax::reshape(x, {4, 2});
    FAIL() << "expected ShapeError";
  } catch (const mj::ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("reshape"), std::string::npos) << m;
    EXPECT_NE(m.find("(2, 3)"), std::string::npos) << m;
    EXPECT_NE(m.find("(4, 2)"), std::string::npos) << m;
    EXPECT_NE(m.find("test_shape_ops.cc"), std::string::npos) << m;
    EXPECT_EQ(int(e.where().line()), line);
  }
}

TEST(ShapeOps, NumpyReshapeInfersMinusOne) {
  Array x = counting({2, 3});
  EXPECT_EQ(mj::reshape(x, {-1}).shape(), (Shape{6}));
  EXPECT_EQ(mj::reshape(x, {3, -1}).shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<float>(mj::reshape(x, {-1, 1, 2})), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(mj::reshape(x, {-1, 1, 2}).shape(), (Shape{3, 1, 2}));
  EXPECT_THROW(mj::reshape(x, {4, -1}), mj::ShapeError);   // 6 is not a multiple of 4
  EXPECT_THROW(mj::reshape(x, {-1, -1}), mj::ShapeError);  // two unknowns
  EXPECT_THROW(mj::reshape(x, {-2, 3}), mj::ShapeError);
  const int line = __LINE__ + 2;
  try {
    mj::reshape(x, {5, -1});
    FAIL();
  } catch (const mj::ShapeError& e) {
    EXPECT_EQ(int(e.where().line()), line);
    EXPECT_NE(std::string(e.what()).find("(5, -1)"), std::string::npos);
  }
}

// ---- squeeze / expand_dims ---------------------------------------------------------------------------

TEST(ShapeOps, SqueezeAndExpandDims) {
  Array x = arr<float>({1, 3, 1}, {7, 8, 9});
  Array s = mj::lax::squeeze(x, {0, 2});
  EXPECT_EQ(s.shape(), (Shape{3}));
  EXPECT_EQ(vals<float>(s), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(mj::lax::squeeze(x, {-1}).shape(), (Shape{1, 3}));
  EXPECT_EQ(mj::squeeze(x).shape(), (Shape{3}));           // numpy: every size-1 dim
  EXPECT_EQ(mj::squeeze(x, {0}).shape(), (Shape{3, 1}));
  EXPECT_THROW(mj::lax::squeeze(x, {1}), mj::ShapeError);  // size 3
  EXPECT_THROW(mj::lax::squeeze(x, {3}), mj::ValueError);  // out of range
  EXPECT_THROW(mj::squeeze(x, {5}), mj::ValueError);

  Array y = counting({2, 3});
  EXPECT_EQ(mj::lax::expand_dims(y, {0}).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(mj::lax::expand_dims(y, {-1}).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(mj::lax::expand_dims(y, {0, 3}).shape(), (Shape{1, 2, 3, 1}));
  EXPECT_EQ(mj::expand_dims(y, 1).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(mj::expand_dims(y, -1).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(vals<float>(mj::expand_dims(y, 1)), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_THROW(mj::expand_dims(y, 3), mj::ValueError);
}

// ---- transpose / rev -----------------------------------------------------------------------------

TEST(ShapeOps, Transpose2DAnd3D) {
  Array x = arr<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Array t = mj::lax::transpose(x, {1, 0});
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<float>(t), (std::vector<float>{1, 4, 2, 5, 3, 6}));

  // out[k, i, j] = x[i, j, k] with x[i, j, k] = 12 i + 4 j + k (counting values).
  Array y = counting({2, 3, 4});
  Array z = mj::lax::transpose(y, {2, 0, 1});
  ASSERT_EQ(z.shape(), (Shape{4, 2, 3}));
  auto zv = vals<float>(z);
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(zv[size_t(k * 6 + i * 3 + j)], float(12 * i + 4 * j + k));

  // numpy transpose reverses the dims by default: out[k, j, i] = x[i, j, k].
  Array r = mj::transpose(y);
  ASSERT_EQ(r.shape(), (Shape{4, 3, 2}));
  auto rv = vals<float>(r);
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) EXPECT_EQ(rv[size_t(k * 6 + j * 2 + i)], float(12 * i + 4 * j + k));

  Array xi = mj::lax::transpose(arr<int32_t>({2, 2}, {1, 2, 3, 4}), {1, 0});
  EXPECT_EQ(vals<int32_t>(xi), (std::vector<int32_t>{1, 3, 2, 4}));
}

TEST(ShapeOps, BadPermutationIsShapeError) {
  Array y = counting({2, 3, 4});
  EXPECT_THROW(mj::lax::transpose(y, {0, 0, 1}), mj::ShapeError);
  EXPECT_THROW(mj::lax::transpose(y, {0, 1}), mj::ShapeError);
  EXPECT_THROW(mj::lax::transpose(y, {0, 1, 3}), mj::ShapeError);
  try {
    mj::lax::transpose(y, {1, 1, 0});
    FAIL();
  } catch (const mj::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("transpose(f32[2,3,4])"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test_shape_ops.cc"), std::string::npos);
  }
}

TEST(ShapeOps, RevAndFlip) {
  EXPECT_EQ(vals<float>(mj::lax::rev(arr<float>({3}, {1, 2, 3}), {0})), (std::vector<float>{3, 2, 1}));
  Array x = arr<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(vals<int32_t>(mj::lax::rev(x, {1})), (std::vector<int32_t>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(vals<int32_t>(mj::lax::rev(x, {0})), (std::vector<int32_t>{4, 5, 6, 1, 2, 3}));
  EXPECT_EQ(vals<int32_t>(mj::lax::rev(x, {0, 1})), (std::vector<int32_t>{6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(vals<int32_t>(mj::flip(x, -1)), (std::vector<int32_t>{3, 2, 1, 6, 5, 4}));
  EXPECT_THROW(mj::lax::rev(x, {2}), mj::ValueError);
  EXPECT_THROW(mj::lax::rev(x, {0, 0}), mj::ValueError);
}

TEST(ShapeOps, ParamsPrintLikeJax) {
  std::string j = jaxpr_of(
      [](const std::vector<Array>& a) {
        Array r = mj::lax::reshape(a[0], {3, 2});
        Array t = mj::lax::transpose(r, {1, 0});
        Array e = mj::lax::expand_dims(t, {0});
        Array s = mj::lax::squeeze(e, {0});
        return std::vector<Array>{mj::lax::rev(s, {1})};
      },
      {f32s({2, 3})});
  EXPECT_NE(j.find("reshape[dimensions=None new_sizes=(3, 2)]"), std::string::npos) << j;
  EXPECT_NE(j.find("transpose[permutation=(1, 0)]"), std::string::npos) << j;
  EXPECT_NE(j.find("expand_dims[dimensions=(0,)]"), std::string::npos) << j;
  EXPECT_NE(j.find("squeeze[dimensions=(0,)]"), std::string::npos) << j;
  EXPECT_NE(j.find("rev[dimensions=(1,)]"), std::string::npos) << j;
}

// ---- device_put / optimization_barrier -----------------------------------------------------------

TEST(MemoryOps, DevicePutRoundTripChangesMemoryKind) {
  Array x = arr<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Array h = mj::device_put(x, "pinned_host");
  EXPECT_EQ(h.memory_kind(), mj::MemoryKind::pinned_host);
  EXPECT_EQ(h.aval().str(), "f32<pinned_host>[2,3]");
  EXPECT_EQ(h.concrete_impl().buffer()->memory_kind(), mj::MemoryKind::pinned_host);
  EXPECT_NE(h.concrete_impl().buffer().get(), x.concrete_impl().buffer().get());  // a copy
  EXPECT_EQ(vals<float>(h), vals<float>(x));
  Array d = mj::device_put(h, mj::MemoryKind::device);
  EXPECT_EQ(d.aval().str(), "f32[2,3]");
  EXPECT_EQ(d.concrete_impl().buffer()->memory_kind(), mj::MemoryKind::device);
  EXPECT_EQ(vals<float>(d), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  Array u = mj::device_put(arr<int32_t>({2}, {7, -8}), "unpinned_host");
  EXPECT_EQ(u.aval().str(), "i32<unpinned_host>[2]");
  EXPECT_EQ(vals<int32_t>(u), (std::vector<int32_t>{7, -8}));
  EXPECT_THROW(mj::device_put(x, "gpu_memory"), mj::ValueError);

  // Shape ops keep the memory kind; mixing kinds in one op is a TypeError.
  EXPECT_EQ(mj::lax::reshape(h, {6}).aval().str(), "f32<pinned_host>[6]");
  EXPECT_THROW(mj::lax::concatenate({x, h}, 0), mj::TypeError);

  std::string j = jaxpr_of(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{mj::lax::device_put(a[0], mj::MemoryKind::pinned_host)};
      },
      {f32s({2, 3})});
  EXPECT_NE(j.find("f32<pinned_host>[2,3] = device_put[memory_kind=pinned_host]"), std::string::npos) << j;
}

TEST(MemoryOps, DevicePutGradMovesCotangentBack) {
  // f(x) = sum over a host copy of x * x; d/dx = 2x, returned in device memory.
  Array x = arr<float>({3}, {1, 2, 3});
  auto r = mj::vjp_flat(
      [](const std::vector<Array>& a) {
        Array h = mj::lax::device_put(a[0], mj::MemoryKind::pinned_host);
        Array back = mj::lax::device_put(mj::lax::mul(h, h), mj::MemoryKind::device);
        return std::vector<Array>{back};
      },
      {x});
  Array g = r.pullback({arr<float>({3}, {1, 1, 1})})[0];
  EXPECT_EQ(g.memory_kind(), mj::MemoryKind::device);
  EXPECT_EQ(vals<float>(g), (std::vector<float>{2, 4, 6}));
  // JVP: the tangent moves with the primal.
  auto [p, t] = mj::jvp_flat(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{mj::lax::device_put(a[0], mj::MemoryKind::pinned_host)};
      },
      {x}, {arr<float>({3}, {1, 0, -1})});
  EXPECT_EQ(t[0].aval().str(), "f32<pinned_host>[3]");
  EXPECT_EQ(vals<float>(t[0]), (std::vector<float>{1, 0, -1}));
}

TEST(MemoryOps, OptimizationBarrierIsIdentityOverGroups) {
  Array a = arr<float>({2}, {1, 2});
  Array b = arr<int32_t>({1}, {5});
  auto outs = mj::lax::optimization_barrier({a, b});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(vals<float>(outs[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(vals<int32_t>(outs[1]), (std::vector<int32_t>{5}));
  std::string j = jaxpr_of(
      [](const std::vector<Array>& a) { return mj::lax::optimization_barrier(a); },
      {f32s({2}), f32s({3})});
  EXPECT_NE(j.find("optimization_barrier"), std::string::npos) << j;
  // JVP: one barrier over primals and tangents together; d/dx of x*x through it is 2x.
  auto [p, t] = mj::jvp_flat(
      [](const std::vector<Array>& v) {
        auto o = mj::lax::optimization_barrier({v[0]});
        return std::vector<Array>{mj::lax::mul(o[0], o[0])};
      },
      {a}, {arr<float>({2}, {1, 1})});
  EXPECT_EQ(vals<float>(t[0]), (std::vector<float>{2, 4}));
  auto r = mj::vjp_flat([](const std::vector<Array>& v) { return mj::lax::optimization_barrier(v); },
                        {a});
  EXPECT_EQ(vals<float>(r.pullback({arr<float>({2}, {3, 4})})[0]), (std::vector<float>{3, 4}));
}

// ---- autodiff rules ------------------------------------------------------------------------------

TEST(ShapeOpsRules, VjpOfShapeOpsIsTheInverseMovement) {
  // f(x) = rev(transpose(reshape(x, (3, 2))), dim 1): x (2, 3) -> (2, 3).
  // Forward element map: r = reshape -> r[i][j] = x_flat[2i + j]; t[j][i] = r[i][j];
  // out[j][i] = t[j][2 - i] = x_flat[2 (2 - i) + j]. The cotangent of out = c sends
  // c[j][i] to x_flat[2 (2 - i) + j].
  Array x = counting({2, 3});
  auto r = mj::vjp_flat(
      [](const std::vector<Array>& a) {
        Array t = mj::lax::transpose(mj::lax::reshape(a[0], {3, 2}), {1, 0});
        return std::vector<Array>{mj::lax::rev(t, {1})};
      },
      {x});
  EXPECT_EQ(vals<float>(r.primal_outs[0]), (std::vector<float>{4, 2, 0, 5, 3, 1}));
  Array c = arr<float>({2, 3}, {10, 20, 30, 40, 50, 60});
  Array g = r.pullback({c})[0];
  ASSERT_EQ(g.shape(), (Shape{2, 3}));
  std::vector<float> want(6);
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 3; ++i) want[size_t(2 * (2 - i) + j)] = float(10 * (3 * j + i + 1));
  EXPECT_EQ(vals<float>(g), want);

  auto r2 = mj::vjp_flat(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{mj::lax::squeeze(mj::lax::expand_dims(a[0], {0, 2}), {0})};
      },
      {arr<float>({2}, {1, 2})});
  EXPECT_EQ(r2.primal_outs[0].shape(), (Shape{2, 1}));
  Array g2 = r2.pullback({arr<float>({2, 1}, {5, 6})})[0];
  EXPECT_EQ(g2.shape(), (Shape{2}));
  EXPECT_EQ(vals<float>(g2), (std::vector<float>{5, 6}));
}

TEST(ShapeOpsRules, JvpAppliesTheOpToTheTangent) {
  auto [p, t] = mj::jvp_flat(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{mj::lax::transpose(a[0], {1, 0})};
      },
      {counting({2, 2})}, {arr<float>({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(vals<float>(t[0]), (std::vector<float>{1, 3, 2, 4}));
  // Integer outputs get zero (empty) tangents.
  auto [pi, ti] = mj::jvp_flat(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{mj::lax::reshape(mj::lax::convert_element_type(a[0], mj::i32), {4})};
      },
      {counting({2, 2})}, {arr<float>({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(vals<int32_t>(pi[0]), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_FALSE(ti[0].defined() && ti[0].dtype() == mj::f32);
}

TEST(ShapeOpsRules, VmapMatchesPerExampleResults) {
  // x: batch of 2 along axis 1 of a (3, 2, 2) array; per example e, x_e = x[:, e, :] (3, 2).
  Array x = counting({3, 2, 2});
  auto out = mj::vmap_flat(
      [](const std::vector<Array>& a) {
        Array t = mj::lax::transpose(a[0], {1, 0});            // (2, 3)
        Array r = mj::lax::reshape(t, {3, 2});                  // (3, 2)
        Array e = mj::lax::expand_dims(mj::lax::rev(r, {0}), {1});  // (3, 1, 2)
        return std::vector<Array>{mj::lax::squeeze(e, {1})};
      },
      {x}, {1}, {0});
  ASSERT_EQ(out[0].shape(), (Shape{2, 3, 2}));
  auto ov = vals<float>(out[0]);
  for (int e = 0; e < 2; ++e) {
    // x_e[i][k] = 4 i + 2 e + k; t[k][i] = x_e[i][k]; t_flat[3k + i]; r[a][b] = t_flat[2a + b];
    // rev over a: out[a][b] = r[2 - a][b].
    std::vector<float> t_flat(6);
    for (int k = 0; k < 2; ++k)
      for (int i = 0; i < 3; ++i) t_flat[size_t(3 * k + i)] = float(4 * i + 2 * e + k);
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 2; ++b)
        EXPECT_EQ(ov[size_t(e * 6 + a * 2 + b)], t_flat[size_t(2 * (2 - a) + b)]) << e << a << b;
  }
}
