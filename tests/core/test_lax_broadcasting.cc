// Tests of lax's binary broadcasting (JAX's _try_broadcast_shapes: equal ranks, dims equal or 1)
// and of jnp.remainder / mod / fmod.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <minijax/minijax.h>

using minijax::Array;
namespace lax = mj::lax;

namespace {

// lax_autodiff_test.py's testRemainder generators, deterministic: x in (-9, 9), y in +-(0.1, 5)
// away from zero (its gradient diverges there); x and y share no value.
Array gen_x(mj::Shape s) {
  Array a = Array::allocate(mj::ShapedArray{s, mj::f64});
  double* p = a.mutable_data<double>();
  for (int64_t k = 0; k < a.size(); ++k) p[k] = -8.9 + std::fmod(3.7 * double(k) + 0.31, 17.8);
  return a;
}
Array gen_y(mj::Shape s) {
  Array a = Array::allocate(mj::ShapedArray{s, mj::f64});
  double* p = a.mutable_data<double>();
  for (int64_t k = 0; k < a.size(); ++k) p[k] = (0.13 + std::fmod(1.9 * double(k) + 0.57, 4.8)) * (k % 3 ? 1 : -1);
  return a;
}

std::vector<double> vals(const Array& a) {
  Array c = lax::convert_element_type(a, mj::f64, false);
  return std::vector<double>(c.data<double>(), c.data<double>() + c.size());
}

}  // namespace

// lax_autodiff_test.py's testRemainder: lax.rem of [5,8] with [1,8] and of [1,8] with [5,8]
// broadcasts (a ShapeError before: minijax's lax refused every unequal shape), its values are C's
// fmod of the broadcast operands (oracle: std::fmod), and check_grads passes to order 2 in both
// modes.
TEST(LaxBroadcasting, RemainderBroadcastsSizeOneDimsWithGradients) {
  for (bool x_big : {true, false}) {
    Array x = gen_x(x_big ? mj::Shape{5, 8} : mj::Shape{1, 8});
    Array y = gen_y(x_big ? mj::Shape{1, 8} : mj::Shape{5, 8});
    Array r = lax::rem(x, y);
    ASSERT_EQ(r.shape(), (mj::Shape{5, 8}));
    const std::vector<double> xv = vals(x), yv = vals(y), rv = vals(r);
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 8; ++j) {
        const double a = xv[size_t((x_big ? i : 0) * 8 + j)], b = yv[size_t((x_big ? 0 : i) * 8 + j)];
        EXPECT_EQ(rv[size_t(i * 8 + j)], std::fmod(a, b)) << i << "," << j;
      }
    mj::check_grads([](const Array& a, const Array& b) { return lax::rem(a, b); }, std::tuple{x, y}, 2,
                    {"fwd", "rev"});
    // Compiled = eager.
    Array c = mj::jit([](const Array& a, const Array& b) { return lax::rem(a, b); })(x, y);
    EXPECT_EQ(vals(c), rv);
  }
}

// Every lax binary function broadcasts the same way, bit operations included; add_any (tangent
// sums) does not; unequal ranks and sizes neither equal nor 1 stay ShapeErrors naming both shapes.
TEST(LaxBroadcasting, EveryBinaryFunctionBroadcastsSizeOneDims) {
  Array a = mj::reshape(mj::arange(0, 6, 1, mj::f32), {2, 3});  // a[i, j] = 3 i + j
  Array row = mj::array({10, 20, 30}, {1, 3}, mj::f32);
  Array col = mj::array({100, 200}, {2, 1}, mj::f32);
  EXPECT_EQ(vals(lax::add(a, row)), (std::vector<double>{10, 21, 32, 13, 24, 35}));
  EXPECT_EQ(vals(lax::sub(col, a)), (std::vector<double>{100, 99, 98, 197, 196, 195}));
  EXPECT_EQ(vals(lax::mul(row, col)), (std::vector<double>{1000, 2000, 3000, 2000, 4000, 6000}));
  EXPECT_EQ(vals(lax::max(a, mj::array({1, 1, 4}, {1, 3}, mj::f32))), (std::vector<double>{1, 1, 4, 3, 4, 5}));
  EXPECT_EQ(vals(lax::convert_element_type(lax::lt(a, mj::array({2.5f}, {1, 1}, mj::f32)), mj::f32, false)),
            (std::vector<double>{1, 1, 1, 0, 0, 0}));
  Array u = mj::array({1, 2, 3}, {1, 3}, mj::u32), s = mj::array({1, 4}, {2, 1}, mj::u32);
  EXPECT_EQ(vals(lax::shift_left(u, s)), (std::vector<double>{2, 4, 6, 16, 32, 48}));
  EXPECT_EQ(vals(lax::xor_(u, s)), (std::vector<double>{0, 3, 2, 5, 6, 7}));
  EXPECT_THROW(lax::add_any(a, row), mj::ShapeError);
  EXPECT_THROW(lax::rem(a, mj::ones({3})), mj::ShapeError);  // ranks 2 and 1: refused as in JAX
  try {
    (void)lax::rem(a, mj::ones({2, 2}));
    ADD_FAILURE() << "no error";
  } catch (const mj::ShapeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rem"), std::string::npos) << m;
    EXPECT_NE(m.find("[2,3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[2,2]"), std::string::npos) << m;
  }
  // Under vmap and grad the broadcast is an ordinary broadcast_in_dim: the cotangent of the
  // [1,3] operand sums over the broadcast rows (d/drow sum(a * row) = column sums of a).
  Array g = mj::grad([&](const Array& r) { return mj::sum(lax::mul(a, r)); })(row);
  EXPECT_EQ(vals(g), (std::vector<double>{3, 5, 7}));
}

// jnp.remainder / mod / fmod (JAX's ufuncs.py): the docstring example, the sign conventions
// (remainder: the divisor's, fmod: the dividend's; oracle: numpy's documented results), an
// integer divisor of 0 giving 0 as JAX, floats by 0 NaN, broadcasting and operator%.
TEST(LaxBroadcasting, RemainderModAndFmodFollowJax) {
  Array x1 = mj::array({3, -1, 4, 8, 5, -2}, {2, 3}, mj::i32);
  Array x2 = mj::array({2, 3, -5}, {3}, mj::i32);
  EXPECT_EQ(vals(mj::remainder(x1, x2)), (std::vector<double>{1, 2, -1, 0, 2, -2}));
  EXPECT_EQ(vals(mj::mod(x1, x2)), (std::vector<double>{1, 2, -1, 0, 2, -2}));
  EXPECT_EQ(vals(x1 % x2), (std::vector<double>{1, 2, -1, 0, 2, -2}));
  EXPECT_EQ(vals(mj::fmod(x1, x2)), (std::vector<double>{1, -1, 4, 0, 2, -2}));
  EXPECT_EQ(mj::remainder(x1, x2).dtype(), mj::i32);
  // Integer division by zero: 0 (JAX divides by 1 there); before, operator% gave the dividend.
  EXPECT_EQ(vals(mj::remainder(x1, 0)), (std::vector<double>{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(vals(x1 % 0), (std::vector<double>{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(vals(mj::fmod(x1, mj::array({0, 3, 0}, {3}, mj::i32))), (std::vector<double>{0, -1, 0, 0, 2, 0}));
  // Floats: -7.5 mod 2 = 0.5, fmod(-7.5, 2) = -1.5; by zero NaN.
  Array f = mj::array({-7.5f, 7.5f});
  EXPECT_EQ(vals(mj::remainder(f, 2.0)), (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(vals(mj::remainder(f, -2.0)), (std::vector<double>{-1.5, -0.5}));
  EXPECT_EQ(vals(mj::fmod(f, 2.0)), (std::vector<double>{-1.5, 1.5}));
  EXPECT_TRUE(std::isnan(vals(mj::fmod(f, 0.0))[0]));
  // Bools count as i32 (promote_args_numeric).
  EXPECT_EQ(mj::remainder(mj::array({1, 0}, {2}, mj::bool_), mj::array({1, 1}, {2}, mj::bool_)).dtype(), mj::i32);
  EXPECT_THROW((void)mj::remainder(mj::ones({2, 3}), mj::ones({4})), mj::ShapeError);
}
