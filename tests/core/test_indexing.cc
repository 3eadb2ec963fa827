// Tests of JAX's indexing spellings on Array: x[i] along the leading dim and x.at(i).get/set/add
// (static and traced indices, errors with call sites, staged primitives, gradients, under jit).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <minijax/minijax.h>

using mj::Array;

namespace {

std::vector<float> vals(const Array& a) {
  const float* p = a.data<float>();
  return std::vector<float>(p, p + a.size());
}

// x[i, j] = 2 i + j, f32[3, 2].
Array grid() { return mj::reshape(mj::arange(0, 6, 1, mj::f32), {3, 2}); }
Array i32(int v) { return mj::scalar(v, mj::i32); }

// The error of type E names this file at `line` and contains each of `parts`.
template <class E, class F>
void expect_error(int line, F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    EXPECT_EQ(int(e.where().line()), line) << e.what();
    EXPECT_NE(std::string(e.where().file_name()).find("test_indexing.cc"), std::string::npos) << e.what();
    for (auto& s : parts)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << s << " not in: " << e.what();
  }
}

}  // namespace

TEST(Indexing, StaticIndexReadsTheLeadingDim) {
  Array x = grid();
  EXPECT_EQ(x[0].shape(), (mj::Shape{2}));
  EXPECT_EQ(vals(x[0]), (std::vector<float>{0, 1}));
  EXPECT_EQ(vals(x[2]), (std::vector<float>{4, 5}));
  EXPECT_EQ(vals(x[-1]), (std::vector<float>{4, 5}));  // negative counts from the end
  EXPECT_EQ(vals(x[-3]), (std::vector<float>{0, 1}));
  EXPECT_EQ(x[1][0].shape(), mj::Shape{});               // chained: x[1, 0]
  EXPECT_EQ(x[1][0].item<float>(), 2.f);
  Array v = mj::array({10.f, 20.f, 30.f});
  EXPECT_EQ(v[size_t(1)].item<float>(), 20.f);
  Array ints = mj::arange(5);  // i32 keeps its dtype
  EXPECT_EQ(ints[3].dtype(), mj::i32);
  EXPECT_EQ(ints[3].item<int>(), 3);
  EXPECT_EQ(x[i32(-2)].str(), x[1].str());  // a concrete Array index is read as an integer
}

TEST(Indexing, BadIndicesThrowTypedErrorsAtTheCallSite) {
  Array x = grid();
  expect_error<mj::IndexError>(__LINE__, [&] { (void)x[3]; },
                               {"Array::operator[]", "index 3 is out of bounds for axis 0 with size 3", "f32[3,2]"});
  expect_error<mj::IndexError>(__LINE__, [&] { (void)x[-4]; }, {"index -4 is out of bounds", "size 3"});
  expect_error<mj::IndexError>(__LINE__, [&] { (void)x[i32(7)]; }, {"index 7 is out of bounds"});
  expect_error<mj::IndexError>(__LINE__, [&] { (void)mj::scalar(1.0)[0]; }, {"rank 0"});
  expect_error<mj::TypeError>(__LINE__, [&] { (void)x[mj::scalar(1.0)]; }, {"must be an integer", "f32[]"});
  expect_error<mj::ShapeError>(__LINE__, [&] { (void)x[mj::arange(2)]; }, {"rank 0", "i32[2]", "mj::take"});
  expect_error<mj::IndexError>(__LINE__, [&] { (void)x.at(5); }, {"Array::at", "index 5 is out of bounds"});
  expect_error<mj::ShapeError>(__LINE__, [&] { (void)x.at(0).set(mj::array({1.f, 2.f, 3.f})); },
                               {"Array::at(i).set", "[3]", "row shape [2]", "f32[3,2]"});
  expect_error<mj::ShapeError>(__LINE__, [&] { (void)x.at(0).add(mj::ones({2, 2})); },
                               {"Array::at(i).add", "[2,2]"});
}

TEST(Indexing, AtSetAddGetReturnNewArrays) {
  Array x = grid();
  Array s = x.at(1).set(9.0);  // a C++ scalar fills the row
  EXPECT_EQ(vals(s), (std::vector<float>{0, 1, 9, 9, 4, 5}));
  EXPECT_EQ(vals(x), (std::vector<float>{0, 1, 2, 3, 4, 5}));  // x is unchanged
  EXPECT_EQ(vals(x.at(-1).set(mj::array({7.f, 8.f}))), (std::vector<float>{0, 1, 2, 3, 7, 8}));
  EXPECT_EQ(vals(x.at(0).add(mj::array({10.f, 20.f}))), (std::vector<float>{10, 21, 2, 3, 4, 5}));
  EXPECT_EQ(vals(x.at(2).add(1)), (std::vector<float>{0, 1, 2, 3, 5, 6}));
  EXPECT_EQ(vals(x.at(2).get()), (std::vector<float>{4, 5}));
  // The value is converted to x's dtype, as JAX converts a scatter's updates.
  Array ints = mj::arange(4);
  Array t = ints.at(1).set(2.7);
  EXPECT_EQ(t.dtype(), mj::i32);
  EXPECT_EQ(t[1].item<int>(), 2);
  EXPECT_EQ(ints.at(0).add(mj::scalar(5.0, mj::f64)).dtype(), mj::i32);
  // A value of shape [1] broadcasts over the row, and rank-1 arrays update one element.
  EXPECT_EQ(vals(x.at(0).set(mj::array({-1.f}))), (std::vector<float>{-1, -1, 2, 3, 4, 5}));
  EXPECT_EQ(vals(mj::array({1.f, 2.f, 3.f}).at(1).set(0.0)), (std::vector<float>{1, 0, 3}));
}

TEST(Indexing, StaticAndTracedIndicesStageJaxsPrimitives) {
  auto stat = mj::make_jaxpr([](const Array& x) { return x[1] + x.at(0).set(0.0)[2]; })(grid());
  const std::string st = mj::to_string(stat);
  EXPECT_NE(st.find("slice[limit_indices=(2, 2) start_indices=(1, 0)"), std::string::npos) << st;
  EXPECT_NE(st.find("squeeze[dimensions=(0,)]"), std::string::npos) << st;
  // x.at(0).set stages one scatter (as JAX's x.at[0].set), the index a [1] index vector.
  EXPECT_NE(st.find("scatter["), std::string::npos) << st;
  EXPECT_NE(st.find("unique_indices=True"), std::string::npos) << st;
  EXPECT_EQ(st.find("dynamic_slice"), std::string::npos) << st;
  auto dyn = mj::make_jaxpr([](const Array& x, const Array& i) { return x[i]; })(grid(), i32(0));
  const std::string dt = mj::to_string(dyn);
  EXPECT_NE(dt.find("dynamic_slice[slice_sizes=(1, 2)]"), std::string::npos) << dt;
  EXPECT_NE(dt.find("select_n"), std::string::npos) << dt;  // negative indices count from the end
}

TEST(Indexing, TracedIndexUnderJitNormalizesClampsAndDrops) {
  auto read = mj::jit([](const Array& x, const Array& i) { return x[i]; });
  EXPECT_EQ(vals(read(grid(), i32(1))), (std::vector<float>{2, 3}));
  EXPECT_EQ(vals(read(grid(), i32(-1))), (std::vector<float>{4, 5}));
  EXPECT_EQ(vals(read(grid(), i32(7))), (std::vector<float>{4, 5}));   // clamped to 2
  EXPECT_EQ(vals(read(grid(), i32(-9))), (std::vector<float>{0, 1}));  // -9 + 3 = -6, clamped to 0
  auto get = mj::jit([](const Array& x, const Array& i) { return x.at(i).get(); });
  EXPECT_EQ(vals(get(grid(), i32(-2))), (std::vector<float>{2, 3}));
  auto set = mj::jit([](const Array& x, const Array& i) { return x.at(i).set(-1.0); });
  EXPECT_EQ(vals(set(grid(), i32(2))), (std::vector<float>{0, 1, 2, 3, -1, -1}));
  EXPECT_EQ(vals(set(grid(), i32(-3))), (std::vector<float>{-1, -1, 2, 3, 4, 5}));
  EXPECT_EQ(vals(set(grid(), i32(3))), (std::vector<float>{0, 1, 2, 3, 4, 5}));   // dropped
  EXPECT_EQ(vals(set(grid(), i32(-4))), (std::vector<float>{0, 1, 2, 3, 4, 5}));  // dropped
  auto add = mj::jit([](const Array& x, const Array& i, const Array& v) { return x.at(i).add(v); });
  Array v = mj::array({100.f, 200.f});
  EXPECT_EQ(vals(add(grid(), i32(1), v)), (std::vector<float>{0, 1, 102, 203, 4, 5}));
  EXPECT_EQ(vals(add(grid(), i32(9), v)), (std::vector<float>{0, 1, 2, 3, 4, 5}));  // dropped
  // Under vmap each index is its own dynamic index: x[[2, -3, 1]] row by row.
  Array picked = mj::vmap([](const Array& i) { return grid()[i]; })(mj::array({2, -3, 1}, {3}, mj::i32));
  EXPECT_EQ(vals(picked), (std::vector<float>{4, 5, 0, 1, 2, 3}));
  // A u32 index has no negative values: only the upper bound matters.
  EXPECT_EQ(vals(read(grid(), mj::scalar(2, mj::u32))), (std::vector<float>{4, 5}));
}

// Gradients through .set/.add/.get and x[i]; expected values by hand: for
// L = sum(w * y), dL/dy = w, and y's dependence on x and v is a row copy.
TEST(Indexing, GradientsFlowThroughSetAddAndGet) {
  const Array w = mj::reshape(mj::array({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}), {3, 2});
  auto set_loss = [w](const Array& x, const Array& v) { return mj::sum(w * x.at(1).set(v)); };
  auto [gx, gv] = mj::grad(set_loss, mj::argnums<0, 1>)(grid(), mj::array({0.f, 0.f}));
  EXPECT_EQ(vals(gx), (std::vector<float>{1, 2, 0, 0, 5, 6}));  // row 1 was overwritten
  EXPECT_EQ(vals(gv), (std::vector<float>{3, 4}));               // w[1]
  auto add_loss = [w](const Array& x, const Array& v) { return mj::sum(w * x.at(-1).add(v * v)); };
  auto [ax, av] = mj::grad(add_loss, mj::argnums<0, 1>)(grid(), mj::array({1.f, -2.f}));
  EXPECT_EQ(vals(ax), (std::vector<float>{1, 2, 3, 4, 5, 6}));  // x passes through
  EXPECT_EQ(vals(av), (std::vector<float>{10, -24}));           // 2 v * w[2]
  auto get_loss = [](const Array& x) { return mj::sum(mj::square(x.at(2).get())) + x[0][1] * 3.0; };
  EXPECT_EQ(vals(mj::grad(get_loss)(grid())), (std::vector<float>{0, 3, 0, 0, 8, 10}));
  // Traced index, compiled gradient: d/dx sum(w[i] * x[i]) is w's row i at row i.
  auto traced = mj::jit([w](const Array& x, const Array& i) {
    return mj::grad([&](const Array& y) { return mj::sum(w[i] * y[i]); })(x);
  });
  EXPECT_EQ(vals(traced(grid(), i32(-1))), (std::vector<float>{0, 0, 0, 0, 5, 6}));
  auto traced_set = mj::jit([w](const Array& x, const Array& i) {
    return mj::grad([&](const Array& y) { return mj::sum(w * y.at(i).set(0.0)); })(x);
  });
  EXPECT_EQ(vals(traced_set(grid(), i32(0))), (std::vector<float>{0, 0, 3, 4, 5, 6}));
  EXPECT_EQ(vals(traced_set(grid(), i32(5))), (std::vector<float>{1, 2, 3, 4, 5, 6}));  // dropped
}

// x.at(i).multiply / min / max (JAX's x.at[i].multiply/min/max), values by hand: eager, compiled
// with a traced index (an out-of-range one drops the update), gradients (a tie in max shares the
// tangent equally, as JAX's scatter_max JVP) and check_grads in float64.
TEST(Indexing, MultiplyMinMaxRows) {
  EXPECT_EQ(vals(grid().at(1).multiply(mj::array({10.f, -1.f}))), (std::vector<float>{0, 1, 20, -3, 4, 5}));
  EXPECT_EQ(vals(grid().at(-1).min(mj::array({4.5f, 3.f}))), (std::vector<float>{0, 1, 2, 3, 4, 3}));
  EXPECT_EQ(vals(grid().at(0).max(0.5)), (std::vector<float>{0.5, 1, 2, 3, 4, 5}));
  auto mul = mj::jit([](const Array& x, const Array& i) { return x.at(i).multiply(-2.0); });
  EXPECT_EQ(vals(mul(grid(), i32(2))), (std::vector<float>{0, 1, 2, 3, -8, -10}));
  EXPECT_EQ(vals(mul(grid(), i32(3))), (std::vector<float>{0, 1, 2, 3, 4, 5}));  // dropped
  auto mn = mj::jit([](const Array& x, const Array& i) { return x.at(i).min(2.5); });
  EXPECT_EQ(vals(mn(grid(), i32(-2))), (std::vector<float>{0, 1, 2, 2.5, 4, 5}));
  EXPECT_EQ(vals(mn(grid(), i32(-4))), (std::vector<float>{0, 1, 2, 3, 4, 5}));  // dropped
  auto mx = mj::jit([](const Array& x, const Array& i) { return x.at(i).max(0.5); });
  EXPECT_EQ(vals(mx(grid(), i32(0))), (std::vector<float>{0.5, 1, 2, 3, 4, 5}));
  const Array w = mj::reshape(mj::array({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}), {3, 2});
  // d/dx sum(w * x.at(1).multiply(v)) = w, times v on row 1; d/dv = w[1] * x[1] = (3*2, 4*3).
  auto mul_loss = [w](const Array& x, const Array& v) { return mj::sum(w * x.at(1).multiply(v)); };
  auto [gx, gv] = mj::grad(mul_loss, mj::argnums<0, 1>)(grid(), mj::array({10.f, -1.f}));
  EXPECT_EQ(vals(gx), (std::vector<float>{1, 2, 30, -4, 5, 6}));
  EXPECT_EQ(vals(gv), (std::vector<float>{6, 12}));
  // max(x[0], v) with x[0] = (0, 1), v = (0.5, 1): v wins the first, the second is a tie (w = 2
  // split 1 and 1).
  auto max_loss = [w](const Array& x, const Array& v) { return mj::sum(w * x.at(0).max(v)); };
  auto [mx_x, mx_v] = mj::grad(max_loss, mj::argnums<0, 1>)(grid(), mj::array({0.5f, 1.f}));
  EXPECT_EQ(vals(mx_x), (std::vector<float>{0, 1, 3, 4, 5, 6}));
  EXPECT_EQ(vals(mx_v), (std::vector<float>{1, 1}));
  const Array x = mj::astype(mj::reshape(mj::array({0.3f, -0.7f, 1.1f, 0.2f, -0.4f, 0.9f}), {3, 2}), mj::f64);
  auto f = [](const Array& y) {
    Array z = y.at(0).multiply(mj::sin(y[2])).at(1).min(y[0] * 0.5).at(2).max(mj::cos(y[1]));
    return mj::sum(mj::tanh(z) * z);
  };
  EXPECT_NO_THROW(mj::check_grads(f, x, 2));
}

// A nonlinear function of rows read and written through x[i] and x.at(i): reverse and forward
// derivatives to second order against central differences in float64 (check_grads, throws on a
// mismatch), eagerly and with a traced index under jit compared with the eager gradient.
TEST(Indexing, GradientsMatchCentralDifferences) {
  const Array x = mj::astype(mj::reshape(mj::array({0.3f, -0.7f, 1.1f, 0.2f, -0.4f, 0.9f}), {3, 2}), mj::f64);
  auto f = [](const Array& y) {
    Array z = y.at(0).set(mj::sin(y[2])).at(1).add(y[0] * y[0]);
    return mj::sum(mj::tanh(z) * z.at(-1).get());
  };
  EXPECT_NO_THROW(mj::check_grads(f, x, 2));
  auto g = [](const Array& y, const Array& i) {
    Array z = y.at(i).set(mj::sin(y[i])).at(i).add(y[i] * y[i]);
    return mj::sum(mj::tanh(z) * z);
  };
  const Array eager = mj::grad([&](const Array& y) { return g(y, i32(1)); })(x);
  const Array compiled = mj::jit([&](const Array& y, const Array& i) { return mj::grad([&](const Array& v) { return g(v, i); })(y); })(
      x, i32(1));
  const double* e = eager.data<double>();
  const double* c = compiled.data<double>();
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(c[k], e[k], 1e-12) << k;
  EXPECT_NO_THROW(mj::check_grads([&](const Array& y) { return g(y, i32(1)); }, x, 1));
}

// Under vmap over the indexed array: each example's row i, as a loop over the examples gives.
TEST(Indexing, VmapOverTheIndexedArray) {
  const Array xs = mj::reshape(mj::arange(0, 12, 1, mj::f32), {3, 2, 2});  // xs[b, r, c] = 4 b + 2 r + c
  Array added = mj::vmap([](const Array& y) { return y.at(1).add(10.0); })(xs);
  Array read = mj::vmap([](const Array& y) { return y[-1] + y.at(0).get(); })(xs);
  Array set = mj::vmap([](const Array& y, const Array& v) { return y.at(0).set(v); })(xs, mj::array({-1.f, -2.f, -3.f}));
  const std::vector<float> a = vals(added), r = vals(read), s = vals(set);
  for (int b = 0; b < 3; ++b)
    for (int row = 0; row < 2; ++row)
      for (int c = 0; c < 2; ++c) {
        const float x = float(4 * b + 2 * row + c);
        EXPECT_EQ(a[size_t(4 * b + 2 * row + c)], row == 1 ? x + 10 : x);
        EXPECT_EQ(s[size_t(4 * b + 2 * row + c)], row == 0 ? float(-1 - b) : x);
      }
  for (int b = 0; b < 3; ++b)
    for (int c = 0; c < 2; ++c) EXPECT_EQ(r[size_t(2 * b + c)], float((4 * b + 2 + c) + (4 * b + c)));
}
