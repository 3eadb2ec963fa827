// Tests of the general gather and scatter_add (JAX's dimension numbers): values against hand-computed
// oracles (XLA's gather/scatter semantics worked out in the comments), every mode, batching dims,
// repeated indices, compiled against eager, vmap against a loop, check_grads, params print/parse.
#include <gtest/gtest.h>

#include <cmath>
#include <source_location>
#include <string>
#include <vector>

#include "core/gather_scatter.h"
#include "core/gather_scatter_params.h"
#include "core/parser.h"
#include "minijax/minijax.h"

namespace {

using mj::Array;
namespace lax = mj::lax;
using M = lax::GatherScatterMode;

std::vector<double> vals(const Array& a) {
  Array f = mj::astype(a, mj::f64);
  return std::vector<double>(f.data<double>(), f.data<double>() + f.size());
}

// x[i, j] = 10 i + j, shape [4, 5] (so a value names its position).
Array grid(mj::DType d = mj::f64) {
  std::vector<double> v;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) v.push_back(10 * i + j);
  return mj::array(v, {4, 5}, d);
}
Array ints(std::vector<double> v, mj::Shape s) { return mj::array(v, s, mj::i32); }

const lax::GatherDimensionNumbers kWin{{1, 2}, {}, {0, 1}, {}, {}};  // 2x3 windows at (row, col) starts
lax::GatherOptions gopt(M m, std::optional<double> fill = std::nullopt) {
  lax::GatherOptions o;
  o.mode = m;
  o.fill_value = fill;
  return o;
}
lax::ScatterOptions sopt(M m) {
  lax::ScatterOptions o;
  o.mode = m;
  return o;
}

// Starts (0, 1), (3, 4), (-1, 0); a 2x3 window of [4, 5] fits for rows in [0, 2], cols in [0, 2].
// CLIP: (0, 1) as is -> rows 0-1, cols 1-3; (3, 4) -> (2, 2); (-1, 0) -> (0, 0).
// FILL_OR_DROP: (3, 4) and (-1, 0) are partly outside: both windows are all fill.
TEST(GeneralGather, WindowsInEveryMode) {
  Array idx = ints({0, 1, 3, 4, -1, 0}, {3, 2});
  const std::vector<double> clip = {1, 2, 3, 11, 12, 13, 22, 23, 24, 32, 33, 34, 0, 1, 2, 10, 11, 12};
  const double f = 0.5;
  const std::vector<double> fill = {1, 2, 3, 11, 12, 13, f, f, f, f, f, f, f, f, f, f, f, f};
  auto g = [](M m, std::optional<double> fv) {
    return [m, fv](const Array& x, const Array& i) { return lax::gather(x, i, kWin, {2, 3}, gopt(m, fv)); };
  };
  for (mj::DType d : {mj::f64, mj::f32, mj::i32}) {
    Array c = g(M::CLIP, std::nullopt)(grid(d), idx);
    EXPECT_EQ(c.shape(), (mj::Shape{3, 2, 3}));
    EXPECT_EQ(vals(c), clip) << c;
    EXPECT_EQ(vals(mj::jit(g(M::CLIP, std::nullopt))(grid(d), idx)), clip);
  }
  Array fl = g(M::FILL_OR_DROP, f)(grid(), idx);
  EXPECT_EQ(vals(fl), fill) << fl;
  EXPECT_EQ(vals(mj::jit(g(M::FILL_OR_DROP, f))(grid(), idx)), fill);
  // The default fill of f64 is NaN (JAX's _gather_fill).
  Array nanfill = g(M::FILL_OR_DROP, std::nullopt)(grid(), idx);
  EXPECT_TRUE(std::isnan(vals(nanfill)[6]) && vals(nanfill)[0] == 1) << nanfill;
  // PROMISE_IN_BOUNDS: eager raises for the broken promise; compiled clamps as XLA (= CLIP here).
  EXPECT_THROW(g(M::PROMISE_IN_BOUNDS, std::nullopt)(grid(), idx), mj::IndexError);
  EXPECT_EQ(vals(mj::jit(g(M::PROMISE_IN_BOUNDS, std::nullopt))(grid(), idx)), clip);
}

// Batching dims: out[b, k, :] = x[b, idx[b, k, 0], :] with x[b, i, j] = 100 b + 10 i + j.
TEST(GeneralGather, BatchingDims) {
  std::vector<double> xv;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 3; ++j) xv.push_back(100 * b + 10 * i + j);
  Array x = mj::array(xv, {2, 4, 3}, mj::f64);
  Array idx = ints({3, 0, 3, 1, 2, 1}, {2, 3, 1});
  auto g = [](const Array& a, const Array& i) {
    return lax::gather(a, i, {{2}, {1}, {1}, {0}, {0}}, {1, 1, 3}, gopt(M::CLIP));
  };
  const std::vector<double> want = {30,  31,  32,  0,   1,   2,   30,  31,  32,
                                    110, 111, 112, 120, 121, 122, 110, 111, 112};
  EXPECT_EQ(vals(g(x, idx)), want);
  EXPECT_EQ(vals(mj::jit(g)(x, idx)), want);
}

// Windows at (0, 1), (2, 3), (0, 1) again, (3, 4) with updates k + 1 (all ones times k + 1).
// A 2x3 window fits at rows [0, 2], cols [0, 2]. CLIP: (2, 3) -> (2, 2), (3, 4) -> (2, 2): rows 2-3,
// cols 2-4 get 2 + 4 = 6; rows 0-1, cols 1-3 get 1 + 3 = 4. FILL_OR_DROP: (2, 3) and (3, 4) are
// dropped whole (col 3 + 3 > 5), so only the 4s remain.
TEST(GeneralScatterAdd, RepeatedWindowsInEveryMode) {
  Array idx = ints({0, 1, 2, 3, 0, 1, 3, 4}, {4, 2});
  std::vector<double> uv;
  for (int k = 0; k < 4; ++k)
    for (int e = 0; e < 6; ++e) uv.push_back(k + 1);
  Array u = mj::array(uv, {4, 2, 3}, mj::f64);
  Array z = mj::zeros({4, 5}, mj::f64);
  const auto dn = lax::mirrored_scatter_dims(kWin);
  auto s = [dn](M m) {
    return [dn, m](const Array& x, const Array& i, const Array& up) {
      return lax::scatter_add(x, i, up, dn, sopt(m));
    };
  };
  std::vector<double> clip(20, 0), drop(20, 0);
  for (int r = 0; r < 2; ++r)
    for (int c = 1; c < 4; ++c) clip[size_t(r * 5 + c)] = drop[size_t(r * 5 + c)] = 4;
  for (int r = 2; r < 4; ++r)
    for (int c = 2; c < 5; ++c) clip[size_t(r * 5 + c)] = 6;
  for (mj::DType d : {mj::f64, mj::f32, mj::i32, mj::u32}) {
    Array zd = mj::astype(z, d), ud = mj::astype(u, d);
    EXPECT_EQ(vals(s(M::CLIP)(zd, idx, ud)), clip) << mj::dtype_name(d);
    EXPECT_EQ(vals(mj::jit(s(M::CLIP))(zd, idx, ud)), clip) << mj::dtype_name(d);
    EXPECT_EQ(vals(s(M::FILL_OR_DROP)(zd, idx, ud)), drop) << mj::dtype_name(d);
    EXPECT_EQ(vals(mj::jit(s(M::FILL_OR_DROP))(zd, idx, ud)), drop) << mj::dtype_name(d);
  }
  // PROMISE_IN_BOUNDS: eager raises for the broken promise; compiled drops the windows, as XLA
  // discards out-of-bounds scatter windows (JAX's GatherScatterMode doc).
  EXPECT_THROW(s(M::PROMISE_IN_BOUNDS)(z, idx, u), mj::IndexError);
  EXPECT_EQ(vals(mj::jit(s(M::PROMISE_IN_BOUNDS))(z, idx, u)), drop);
}

// Batching dims: out[b, idx[b, k], :] += u[b, k, :]; b = 0 hits row 3 twice (1 + 3), row 0 once.
TEST(GeneralScatterAdd, BatchingDims) {
  Array idx = ints({3, 0, 3, 1, 2, 1}, {2, 3, 1});
  std::vector<double> uv;
  for (int k = 0; k < 6; ++k)
    for (int j = 0; j < 3; ++j) uv.push_back(k + 1);
  Array u = mj::array(uv, {2, 3, 3}, mj::f64);
  const lax::ScatterDimensionNumbers dn{{2}, {1}, {1}, {0}, {0}};
  auto s = [dn](const Array& x, const Array& i, const Array& up) { return lax::scatter_add(x, i, up, dn); };
  std::vector<double> want(24, 0);
  auto at = [&](int b, int r) { return size_t(b * 12 + r * 3); };
  for (int j = 0; j < 3; ++j) {
    want[at(0, 3) + size_t(j)] = 1 + 3;
    want[at(0, 0) + size_t(j)] = 2;
    want[at(1, 1) + size_t(j)] = 4 + 6;
    want[at(1, 2) + size_t(j)] = 5;
  }
  Array z = mj::zeros({2, 4, 3}, mj::f64);
  EXPECT_EQ(vals(s(z, idx, u)), want);
  EXPECT_EQ(vals(mj::jit(s)(z, idx, u)), want);
}

// vmap with batched indices (and operand) against a loop over the examples, gather and scatter_add.
TEST(GeneralGatherScatter, VmapOfBatchedIndicesMatchesALoop) {
  Array x = mj::reshape(mj::astype(mj::arange(0, 30), mj::f64), {3, 2, 5});  // 3 examples of [2, 5]
  Array idx = ints({0, 3, 1, 0, 1, 2, 0, 9, 1, 1, 0, 2}, {3, 2, 2});  // per example: 2 starts (r, c)
  const lax::GatherDimensionNumbers dn{{1}, {0}, {0, 1}, {}, {}};
  auto g = [dn](const Array& a, const Array& i) {
    return lax::gather(a, i, dn, {1, 2}, gopt(M::FILL_OR_DROP, -1));
  };
  Array v = mj::vmap(g)(x, idx);
  Array u = mj::reshape(mj::astype(mj::arange(0, 12), mj::f64), {3, 2, 2});
  auto s = [dn](const Array& a, const Array& i, const Array& up) {
    return lax::scatter_add(a, i, up, lax::mirrored_scatter_dims(dn), sopt(M::CLIP));
  };
  Array vs = mj::vmap(s)(x, idx, u);
  for (int64_t b = 0; b < 3; ++b) {
    EXPECT_EQ(vals(v[b]), vals(g(x[b], idx[b]))) << b;
    EXPECT_EQ(vals(vs[b]), vals(s(x[b], idx[b], u[b]))) << b;
  }
  // Every scatter with batched operand, indices and updates, and with only the indices batched
  // (the operand and updates broadcast), against the loop; and the JVP of scatter (JAX's ids
  // scheme) under vmap, against the loop of JVPs.
  using Fn = Array (*)(const Array&, const Array&, const Array&, const lax::ScatterDimensionNumbers&,
                       const lax::ScatterOptions&, std::source_location);
  for (Fn fn : {static_cast<Fn>(&lax::scatter), static_cast<Fn>(&lax::scatter_mul),
                static_cast<Fn>(&lax::scatter_min), static_cast<Fn>(&lax::scatter_max)}) {
    auto f = [fn, dn](const Array& a, const Array& i, const Array& up) {
      return fn(a, i, up, lax::mirrored_scatter_dims(dn), sopt(M::CLIP), std::source_location::current());
    };
    Array all = mj::vmap(f)(x, idx, u);
    Array only_i = mj::vmap([&](const Array& i) { return f(x[0], i, u[0]); })(idx);
    for (int64_t b = 0; b < 3; ++b) {
      EXPECT_EQ(vals(all[b]), vals(f(x[b], idx[b], u[b]))) << b;
      EXPECT_EQ(vals(only_i[b]), vals(f(x[0], idx[b], u[0]))) << b;
    }
  }
  auto sc = [dn](const Array& a, const Array& i, const Array& up) {
    return lax::scatter(a, i, up, lax::mirrored_scatter_dims(dn), sopt(M::CLIP));
  };
  auto tangent = [sc](const Array& a, const Array& i, const Array& up) {
    return mj::jvp([&](const Array& p, const Array& q) { return sc(p, i, q); }, std::tuple{a, up},
                   std::tuple{mj::sin(a), mj::cos(up)})
        .second;
  };
  Array vt = mj::vmap(tangent)(x, idx, u);
  for (int64_t b = 0; b < 3; ++b) EXPECT_EQ(vals(vt[b]), vals(tangent(x[b], idx[b], u[b]))) << b;
  // Only the operand batched, and only the indices batched.
  Array vx = mj::vmap([&](const Array& a) { return g(a, idx[1]); })(x);
  Array vi = mj::vmap([&](const Array& i) { return g(x[2], i); })(idx);
  for (int64_t b = 0; b < 3; ++b) {
    EXPECT_EQ(vals(vx[b]), vals(g(x[b], idx[1]))) << b;
    EXPECT_EQ(vals(vi[b]), vals(g(x[2], idx[b]))) << b;
  }
}

// check_grads (JAX's tolerances, order 2, forward and reverse) in f64 with repeated indices.
TEST(GeneralGatherScatter, CheckGrads) {
  Array idx = ints({0, 1, 2, 2, 0, 1, 3, 4}, {4, 2});
  const auto sdn = lax::mirrored_scatter_dims(kWin);
  for (M m : {M::CLIP, M::FILL_OR_DROP}) {
    mj::check_grads([&](const Array& x) { return lax::gather(x * x, idx, kWin, {2, 3}, gopt(m, 0.0)); },
                    mj::astype(grid(), mj::f64) * 0.1, 2);
    mj::check_grads(
        [&](const Array& x, const Array& u) { return lax::scatter_add(x * x, idx, u * u, sdn, sopt(m)); },
        std::tuple{grid() * 0.1, mj::reshape(mj::astype(mj::arange(0, 24), mj::f64), {4, 2, 3}) * 0.1}, 2);
  }
}

// The params print as JAX prints them and parse back to the same text.
TEST(GeneralGatherScatter, ParamsPrintAsJaxAndParseBack) {
  auto cj = mj::make_jaxpr([](const Array& x, const Array& i) {
    lax::GatherOptions o = gopt(M::CLIP);
    o.indices_are_sorted = true;
    Array g = lax::gather(x, i, kWin, {2, 3}, o);
    return lax::scatter_add(x, i, g, lax::mirrored_scatter_dims(kWin));
  })(grid(), ints({0, 1}, {1, 2}));
  const std::string text = mj::to_string(cj);
  // The printer puts a long equation's params one per line: look for each.
  for (
      const char* p :
      {"dimension_numbers=GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1), "
       "operand_batching_dims=(), start_indices_batching_dims=())",
       "dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1, 2), inserted_window_dims=(), "
       "scatter_dims_to_operand_dims=(0, 1), operand_batching_dims=(), scatter_indices_batching_dims=())",
       "fill_value=None", "indices_are_sorted=True", "mode=GatherScatterMode.CLIP", "slice_sizes=(2, 3)",
       "unique_indices=False"})
    EXPECT_NE(text.find(p), std::string::npos) << p << "\n" << text;
  EXPECT_NE(text.find("mode=GatherScatterMode.FILL_OR_DROP"), std::string::npos) << text;
  EXPECT_EQ(mj::to_string(mj::parse_jaxpr(text)), text);
}

// ---- scatter, scatter_mul, scatter_min, scatter_max -------------------------------------------------

// Rows of x = [[1, 2], [3, 4], [5, 6]] at indices 2, 0, 2 (row 2 twice), in update order:
//   scatter:     row 0 = u1, row 2 = u2 (the last write wins), row 1 kept;
//   scatter_add: row 0 = x0 + u1, row 2 = x2 + u0 + u2;  scatter_mul likewise with products;
//   scatter_min/max: elementwise min/max of x2, u0, u2 (row 2) and of x0, u1 (row 0).
TEST(ScatterFamily, RowsWithRepeatedIndices) {
  const lax::ScatterDimensionNumbers dn{{1}, {0}, {0}, {}, {}};
  Array idx = ints({2, 0, 2}, {3, 1});
  Array x = mj::array({1, 2, 3, 4, 5, 6}, {3, 2}, mj::f64);
  Array u = mj::array({10, 20, 30, 40, 50, 60}, {3, 2}, mj::f64);
  Array m = mj::array({0, 20, 30, -1, 4, 60}, {3, 2}, mj::f64);  // for min and max
  using Fn = Array (*)(const Array&, const Array&, const Array&, const lax::ScatterDimensionNumbers&,
                       const lax::ScatterOptions&, mj::SL);
  struct {
    const char* name;
    Fn fn;
    bool minmax;
    std::vector<double> want;
  } cases[] = {
      {"scatter", &lax::scatter, false, {30, 40, 3, 4, 50, 60}},
      {"scatter_add", &lax::scatter_add, false, {31, 42, 3, 4, 65, 86}},
      {"scatter_mul", &lax::scatter_mul, false, {30, 80, 3, 4, 2500, 7200}},
      {"scatter_min", &lax::scatter_min, true, {1, -1, 3, 4, 0, 6}},
      {"scatter_max", &lax::scatter_max, true, {30, 2, 3, 4, 5, 60}},
  };
  for (auto& c : cases) {
    auto f = [&c, dn](const Array& a, const Array& i, const Array& up) {
      return c.fn(a, i, up, dn, lax::ScatterOptions{}, mj::SL::current());
    };
    const Array& up = c.minmax ? m : u;
    for (mj::DType d : {mj::f64, mj::f32, mj::i32}) {
      EXPECT_EQ(vals(f(mj::astype(x, d), idx, mj::astype(up, d))), c.want)
          << c.name << " " << mj::dtype_name(d);
      EXPECT_EQ(vals(mj::jit(f)(mj::astype(x, d), idx, mj::astype(up, d))), c.want)
          << c.name << " compiled " << mj::dtype_name(d);
    }
  }
  // NaN propagates through min and max (as lax.max), eager and compiled.
  Array un = mj::array({std::nan(""), 0, 0, 0, 0, 0}, {3, 2}, mj::f64);
  auto mx = [dn](const Array& a, const Array& i, const Array& up) { return lax::scatter_max(a, i, up, dn); };
  EXPECT_TRUE(std::isnan(vals(mx(x, idx, un))[4]));
  EXPECT_TRUE(std::isnan(vals(mj::jit(mx)(x, idx, un))[4]));
}

// JAX's _scatter_extremal_jvp shares a tied maximum's tangent equally: x = [2] and two updates of
// 2 at index 0 give 2, and the tangent (tx + tu0 + tu1) / 3 = (3 + 6 + 9) / 3 = 6.
TEST(ScatterFamily, ExtremalJvpAveragesTies) {
  const lax::ScatterDimensionNumbers dn{{}, {0}, {0}, {}, {}};
  Array idx = ints({0, 0}, {2, 1});
  auto f = [&](const Array& x, const Array& u) { return lax::scatter_max(x, idx, u, dn); };
  auto [y, t] = mj::jvp([&](const Array& x) { return f(x, mj::array({2, 2}, {2}, mj::f64)); },
                        mj::array({2}, {1}, mj::f64), mj::array({3}, {1}, mj::f64));
  EXPECT_EQ(vals(y), std::vector<double>{2});
  EXPECT_EQ(vals(t), std::vector<double>{1});  // only x moves: 3 / 3
  auto [y2, t2] = mj::jvp([&](const Array& u) { return f(mj::array({2}, {1}, mj::f64), u); },
                          mj::array({2, 2}, {2}, mj::f64), mj::array({6, 9}, {2}, mj::f64));
  EXPECT_EQ(vals(t2), std::vector<double>{5});  // (6 + 9) / 3
}

// scatter_mul is differentiable in the updates only with unique indices; JAX raises otherwise.
TEST(ScatterFamily, ScatterMulUpdatesNeedUniqueIndices) {
  const lax::ScatterDimensionNumbers dn{{1}, {0}, {0}, {}, {}};
  Array x = mj::array({1, 2, 3, 4, 5, 6}, {3, 2}, mj::f64);
  Array idx = ints({2, 0}, {2, 1});
  auto loss = [&](const Array& u, bool unique) {
    lax::ScatterOptions o;
    o.unique_indices = unique;
    return mj::sum(lax::scatter_mul(x, idx, u, dn, o));
  };
  Array u = mj::array({10, 20, 30, 40}, {2, 2}, mj::f64);
  EXPECT_THROW(mj::grad([&](const Array& v) { return loss(v, false); })(u), mj::NotDifferentiableError);
  // d/du sum = x at the scattered rows: u0 -> x2 = (5, 6), u1 -> x0 = (1, 2).
  EXPECT_EQ(vals(mj::grad([&](const Array& v) { return loss(v, true); })(u)),
            (std::vector<double>{5, 6, 1, 2}));
}

// check_grads in f64 (order 2, forward and reverse) for each differentiable scatter.
TEST(ScatterFamily, CheckGrads) {
  const lax::ScatterDimensionNumbers dn{{1}, {0}, {0}, {}, {}};
  Array rep = ints({2, 0, 2}, {3, 1}), uniq = ints({2, 0, 1}, {3, 1});
  Array x = mj::array({0.1, 0.7, 1.3, 1.9, 2.5, 3.1}, {3, 2}, mj::f64);
  Array u = mj::array({0.4, 1.0, 1.6, 2.2, 2.8, 3.4}, {3, 2}, mj::f64);
  lax::ScatterOptions uo;
  uo.unique_indices = true;
  mj::check_grads([&](const Array& a, const Array& b) { return lax::scatter(a * a, rep, b * b, dn); },
                  std::tuple{x, u}, 2);
  mj::check_grads([&](const Array& a, const Array& b) { return lax::scatter(a * a, uniq, b * b, dn, uo); },
                  std::tuple{x, u}, 2);
  mj::check_grads([&](const Array& a,
                      const Array& b) { return lax::scatter_mul(a * a, uniq, b * b, dn, uo); },
                  std::tuple{x, u}, 2);
  mj::check_grads([&](const Array& a) { return lax::scatter_mul(a * a, rep, u, dn); }, x, 2);
  mj::check_grads([&](const Array& a, const Array& b) { return lax::scatter_min(a * a, rep, b * b, dn); },
                  std::tuple{x, u}, 2);
  mj::check_grads([&](const Array& a, const Array& b) { return lax::scatter_max(a * a, rep, b * b, dn); },
                  std::tuple{x, u}, 2);
}

// The scatters share scatter_add's shape rule: dimension numbers that do not fit are ShapeErrors
// naming the primitive, the shapes and the parameter (these join tests/api/bad_input_lax.cc once
// core/gather_scatter.h is in the public umbrella header).
TEST(ScatterFamily, BadDimensionNumbersAreShapeErrorsNamingShapesAndParameter) {
  Array x = mj::ones({2, 3}, mj::f32), idx = ints({0, 1}, {2, 1});
  auto expect = [](auto&& f, std::vector<std::string> parts) {
    try {
      f();
      ADD_FAILURE() << "no error";
    } catch (const mj::Error& e) {
      for (auto& p : parts)
        EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << p << ": " << e.what();
    }
  };
  expect([&] { lax::scatter(x, idx, mj::ones({2, 4}), {{1}, {0}, {0}, {}, {}}); },
         {"scatter(f32[2,3], i32[2,1], f32[2,4])", "update_window_dims", "larger than operand dim 1"});
  expect([&] { lax::scatter_mul(x, idx, mj::ones({2, 3}, mj::i32), {{1}, {0}, {0}, {}, {}}); },
         {"scatter_mul", "i32", "f32"});
  expect([&] { lax::scatter_min(x, idx, mj::ones({2, 3}), {{1}, {0}, {0, 1}, {}, {}}); },
         {"scatter_min", "scatter_dims_to_operand_dims", "i32[2,1]"});
  expect([&] { lax::scatter_max(x, idx, mj::ones({2, 3}), {{1}, {0}, {0}, {1}, {0}}); },
         {"scatter_max", "inserted_window_dims", "operand_batching_dims"});
  EXPECT_THROW(lax::scatter_max(x, idx, mj::ones({2, 3}), {{1}, {0}, {0}, {}, {}}, {false, false, M(9)}),
               mj::ValueError);
}

// JAX's defaults: lax.gather's mode None is PROMISE_IN_BOUNDS, the scatters' FILL_OR_DROP
// (jax/_src/lax/slicing.py gather and GatherScatterMode.from_any).
TEST(GeneralGather, DefaultModesAreJaxs) {
  EXPECT_EQ(lax::GatherOptions{}.mode, M::PROMISE_IN_BOUNDS);
  EXPECT_EQ(lax::ScatterOptions{}.mode, M::FILL_OR_DROP);
  const Array idx = ints({1, 2, 0, 0}, {2, 2});
  const std::string text =
      mj::to_string(mj::make_jaxpr([](const Array& x, const Array& i) { return lax::gather(x, i, kWin, {2, 3}); })(
          grid(), idx));
  EXPECT_NE(text.find("mode=GatherScatterMode.PROMISE_IN_BOUNDS"), std::string::npos) << text;
}

// Empty operands, indices and updates: no window fits an empty indexed dim, so every scatter
// returns its (empty) operand in every mode but PROMISE_IN_BOUNDS, whose broken promise eager
// names; compiled code agrees. The row gather of an empty dim 0 in FILL_OR_DROP is all fill (NaN,
// JAX's default fill for floats); zero index vectors give an empty result.
TEST(GeneralScatter, EmptyOperandsIndicesAndUpdates) {
  const Array x = mj::zeros({0, 3}, mj::f32), idx = ints({0, 1}, {2, 1}), u = mj::ones({2, 3}, mj::f32);
  const lax::ScatterDimensionNumbers rows{{1}, {0}, {0}, {}, {}};
  using Fn = Array (*)(const Array&, const Array&, const Array&, const lax::ScatterDimensionNumbers&,
                       const lax::ScatterOptions&, std::source_location);
  for (Fn fn : {static_cast<Fn>(&lax::scatter), static_cast<Fn>(&lax::scatter_add), static_cast<Fn>(&lax::scatter_mul),
                static_cast<Fn>(&lax::scatter_min), static_cast<Fn>(&lax::scatter_max)}) {
    for (M m : {M::CLIP, M::FILL_OR_DROP}) {
      auto f = [fn, rows, m](const Array& a, const Array& i, const Array& v) {
        return fn(a, i, v, rows, sopt(m), std::source_location::current());
      };
      EXPECT_EQ(f(x, idx, u).shape(), (mj::Shape{0, 3}));
      EXPECT_EQ(mj::jit(f)(x, idx, u).shape(), (mj::Shape{0, 3}));
    }
    EXPECT_THROW(fn(x, idx, u, rows, sopt(M::PROMISE_IN_BOUNDS), std::source_location::current()), mj::IndexError);
    // No updates: the operand unchanged.
    const Array x2 = grid(mj::f32), none = ints({}, {0, 1}), nu = mj::zeros({0, 5}, mj::f32);
    EXPECT_EQ(vals(fn(x2, none, nu, rows, sopt(M::CLIP), std::source_location::current())), vals(x2));
    auto g = [fn, rows](const Array& a, const Array& i, const Array& v) {
      return fn(a, i, v, rows, sopt(M::CLIP), std::source_location::current());
    };
    EXPECT_EQ(vals(mj::jit(g)(x2, none, nu)), vals(x2));
  }
  const Array filled = lax::gather(x, ints({0, 5}, {2}), M::FILL_OR_DROP);
  ASSERT_EQ(filled.shape(), (mj::Shape{2, 3}));
  for (double v : vals(filled)) EXPECT_TRUE(std::isnan(v));
  auto jg = mj::jit([](const Array& a, const Array& i) { return lax::gather(a, i, M::FILL_OR_DROP); });
  for (double v : vals(jg(x, ints({3}, {1})))) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(lax::gather(grid(), ints({}, {0, 2}), kWin, {2, 3}).shape(), (mj::Shape{0, 2, 3}));
}

// i32 scatter_add and scatter_mul wrap modulo 2^32 (two's complement, as XLA), eager and compiled
// alike: 2^31 - 1 + 1 = -2^31; 65536 * 65536 = 0; 3 * (2^31 - 1) = 2^31 - 3 (mod 2^32, signed).
TEST(GeneralScatter, I32AddAndMulWrap) {
  const Array x = ints({2147483647, 65536, 3}, {3}), idx = ints({0, 1, 2}, {3, 1});
  const Array u = ints({1, 65536, 2147483647}, {3});
  const lax::ScatterDimensionNumbers el{{}, {0}, {0}, {}, {}};
  auto add = [el](const Array& a, const Array& i, const Array& v) { return lax::scatter_add(a, i, v, el); };
  auto mul = [el](const Array& a, const Array& i, const Array& v) { return lax::scatter_mul(a, i, v, el); };
  EXPECT_EQ(vals(add(x, idx, u)), (std::vector<double>{-2147483648.0, 131072, -2147483646.0}));
  EXPECT_EQ(vals(mj::jit(add)(x, idx, u)), vals(add(x, idx, u)));
  EXPECT_EQ(vals(mul(x, idx, u)), (std::vector<double>{2147483647, 0, 2147483645}));
  EXPECT_EQ(vals(mj::jit(mul)(x, idx, u)), vals(mul(x, idx, u)));
}

// Batching over an empty axis: vmap of a gather whose operand and indices are both batched binds
// batching dims of slice size 0 (JAX's bound 0/1); the sort JVP's gather of an array with an
// empty dim; an indices-only batched gather drops the promises (batching can repeat indices).
TEST(GeneralGather, EmptyBatchesAndBatchedPromises) {
  auto take = [](const Array& x, const Array& i) { return lax::gather(x, i, {{}, {0}, {0}, {}, {}}, {1}); };
  const Array out = mj::vmap(take)(mj::zeros({0, 4}, mj::f32), ints({}, {0, 2, 1}));
  EXPECT_EQ(out.shape(), (mj::Shape{0, 2}));
  const Array e = mj::zeros({0, 5}, mj::f64);
  auto [y, t] = mj::jvp([](const Array& a) { return lax::sort(a, 1); }, e, e);
  EXPECT_EQ(t.shape(), (mj::Shape{0, 5}));
  lax::GatherOptions promise;
  promise.unique_indices = promise.indices_are_sorted = true;
  auto g = [promise](const Array& i) { return lax::gather(grid(), i, kWin, {2, 3}, promise); };
  const std::string text = mj::to_string(mj::make_jaxpr(mj::vmap(g))(ints({0, 0, 1, 1, 0, 0, 1, 1}, {2, 2, 2})));
  EXPECT_NE(text.find("unique_indices=False"), std::string::npos) << text;
  EXPECT_EQ(text.find("unique_indices=True"), std::string::npos) << text;
}

}  // namespace
