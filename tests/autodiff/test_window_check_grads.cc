// mj::check_grads (JAX's check_grads: central differences at JAX's f64 tolerances, order 2,
// forward and reverse) for each differentiable windowed primitive, in f64; max/min and the
// select_and_* selections on inputs without ties. The generic reduce_window has a JVP only (as in
// JAX v0.7.0): forward mode is checked, reverse mode raises NotDifferentiableError.
#include <gtest/gtest.h>

#include <minijax/minijax.h>

namespace {

using mj::Array;
namespace lax = mj::lax;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

// Values without ties, well separated (steps of 0.25 with a jitter below 0.05).
Array distinct(const mj::Shape& s, uint32_t seed) {
  const int64_t n = mj::shape_size(s);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[size_t(i)] = double((i * 7) % n) * 0.25 - 1 + double(seed >> 8) / double(1u << 24) * 0.05;
  }
  return mj::array(v, s, mj::f64);
}
// Positive values in [0.5, 2.5) (for the products of the generic reduce_window).
Array smooth(const mj::Shape& s, uint32_t seed) { return distinct(s, seed) * 0.5 + 1.0; }

const Pairs kPad{{1, 0}, {0, 2}};

TEST(WindowCheckGrads, ReduceWindowSum) {
  auto f = [](const Array& x) { return lax::reduce_window_sum(x, {2, 3}, {2, 1}, kPad, {1, 2}, {2, 1}); };
  EXPECT_NO_THROW(mj::check_grads(f, distinct({4, 4}, 1), 2));
  auto pool = [](const Array& x) { return lax::reduce_window_sum(x, {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"); };
  EXPECT_NO_THROW(mj::check_grads(pool, distinct({2, 5, 5, 2}, 2), 2));
}

TEST(WindowCheckGrads, ReduceWindowMaxAndMin) {
  auto mx = [](const Array& x) { return lax::reduce_window_max(x, {2, 2}, {1, 2}, kPad, {2, 1}, {1, 2}); };
  EXPECT_NO_THROW(mj::check_grads(mx, distinct({4, 5}, 3), 2));
  auto mn = [](const Array& x) { return lax::reduce_window_min(x, {3, 2}, {2, 1}, "SAME"); };
  EXPECT_NO_THROW(mj::check_grads(mn, distinct({5, 4}, 4), 2));
  // Max pooling composed with a nonlinearity, so the second order is not zero.
  auto pool = [](const Array& x) { return mj::sin(mj::nn::max_pool(mj::sin(x), {2, 2}, {2, 2})); };
  EXPECT_NO_THROW(mj::check_grads(pool, distinct({1, 4, 4, 3}, 5), 2));
  auto avg = [](const Array& x) { return mj::nn::avg_pool(x * x, {3, 3}, {1, 1}, "SAME", false); };
  EXPECT_NO_THROW(mj::check_grads(avg, distinct({1, 4, 4, 2}, 6), 2));
}

TEST(WindowCheckGrads, SelectAndGatherAddAndSelectAndScatterAdd) {
  const Array x = distinct({4, 4}, 7);
  auto gather = [x](const Array& t) {
    return lax::select_and_gather_add(t * t, x, lax::SelectPrim::ge, {2, 2}, {2, 1}, kPad, {1, 2}, {1, 1});
  };
  EXPECT_NO_THROW(mj::check_grads(gather, smooth({4, 4}, 8), 2));
  // Both operands: the operand's derivative is zero away from ties (the selection is constant).
  auto gather2 = [](const Array& t, const Array& op) {
    return lax::select_and_gather_add(t, op, lax::SelectPrim::le, {2, 2}, {1, 1}, {{0, 0}, {0, 0}});
  };
  EXPECT_NO_THROW(mj::check_grads(gather2, std::tuple{smooth({3, 4}, 9), distinct({3, 4}, 10)}, 2));
  auto scatter = [x](const Array& s) {
    return lax::select_and_scatter_add(s * s, x, lax::SelectPrim::le, {2, 2}, {2, 1}, kPad);
  };
  EXPECT_NO_THROW(mj::check_grads(scatter, smooth({2, 5}, 11), 2));
  auto scatter2 = [](const Array& s, const Array& op) {
    return lax::select_and_scatter_add(s, op, lax::SelectPrim::ge, {2, 2}, {1, 1}, {{0, 0}, {0, 0}}, {1, 1},
                                       {2, 1});
  };
  EXPECT_NO_THROW(mj::check_grads(scatter2, std::tuple{smooth({2, 3}, 12), distinct({4, 4}, 13)}, 2));
}

TEST(WindowCheckGrads, GenericReduceWindowForwardOnly) {
  // A product body (not a monoid): the generic primitive. Its init value is closed over.
  auto prod = [](const Array& x) {
    return lax::reduce_window(
        x, lax::scalar(1.5, mj::f64), [](const Array& u, const Array& v) { return lax::mul(u, v); }, {2, 2},
        {1, 2}, kPad);
  };
  const Array x = smooth({4, 4}, 14);
  EXPECT_NO_THROW(mj::check_grads(prod, x, 2, {"fwd"}));
  // A smooth two-operand body: (a, b) -> (a * x + b, b + sin(y)).
  auto two = [](const Array& x, const Array& y) {
    auto r = lax::reduce_window(
        {x, y}, {lax::scalar(1.0, mj::f64), lax::scalar(0.0, mj::f64)},
        [](const std::vector<Array>& acc, const std::vector<Array>& v) {
          return std::vector<Array>{lax::add(lax::mul(acc[0], v[0]), acc[1]),
                                    lax::add(acc[1], lax::sin(v[1]))};
        },
        {2, 1}, {1, 1}, "SAME");
    return std::pair{r[0], r[1]};
  };
  EXPECT_NO_THROW(mj::check_grads(two, std::tuple{smooth({3, 2}, 15), smooth({3, 2}, 16)}, 2, {"fwd"}));
  EXPECT_THROW(mj::check_grads(prod, x, 1, {"rev"}), mj::NotDifferentiableError);
}

}  // namespace
