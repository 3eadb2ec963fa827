// minijax mj::array from C++ numbers: vectors and nested lists of every arithmetic type, with
// JAX's dtypes (64-bit types off), out-of-range 64-bit integers and ragged lists as errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <minijax/minijax.h>

namespace {

using mj::Array;

// The expected dtypes are jnp.array's with jax_enable_x64 off (JAX's "Type promotion semantics"
// and dtypes.canonicalize_dtype): Python/NumPy ints -> int32, uint32 -> uint32, floats ->
// float32, bools -> bool; a list mixing ints and floats -> float32.
void expect_array(const Array& a, mj::DType dtype, const mj::Shape& shape, const std::vector<double>& want) {
  EXPECT_EQ(a.dtype(), dtype) << a.aval().str();
  EXPECT_EQ(a.shape(), shape) << a.aval().str();
  Array f = mj::astype(a, mj::f64);
  ASSERT_EQ(f.size(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(f.data<double>()[i], want[i]) << "element " << i;
}

// The error of f: its type E, each part in the message, and this file as the call site.
template <class E, class F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const E& e) {
    for (const std::string& p : parts)
      EXPECT_NE(e.message().find(p), std::string::npos) << "message lacks \"" << p << "\": " << e.message();
    EXPECT_NE(std::string(e.where().file_name()).find("test_array_literals.cc"), std::string::npos) << e.what();
  }
}

TEST(ArrayLiterals, VectorsOfEachType) {
  expect_array(mj::array(std::vector<int>{1, -2, 3}), mj::i32, {3}, {1, -2, 3});
  expect_array(mj::array(std::vector<int64_t>{5, -7, INT32_MAX, INT32_MIN}), mj::i32, {4},
               {5, -7, 2147483647.0, -2147483648.0});
  expect_array(mj::array(std::vector<uint32_t>{0, 4000000000u}), mj::u32, {2}, {0, 4000000000.0});
  expect_array(mj::array(std::vector<uint64_t>{7, 4294967295u}), mj::u32, {2}, {7, 4294967295.0});
  expect_array(mj::array(std::vector<float>{1.5f, -0.25f}), mj::f32, {2}, {1.5, -0.25});
  expect_array(mj::array(std::vector<double>{0.1, 2.0}), mj::f32, {2}, {double(0.1f), 2.0});
  expect_array(mj::array(std::vector<bool>{true, false, true}), mj::bool_, {3}, {1, 0, 1});
  expect_array(mj::array(std::vector<int>{}), mj::i32, {0}, {});  // empty: the element type's dtype
  expect_array(mj::array(std::initializer_list<unsigned>{}), mj::u32, {0}, {});
}

TEST(ArrayLiterals, VectorsWithAShapeAndADtype) {
  expect_array(mj::array(std::vector<int>{1, 2, 3, 4}, {2, 2}), mj::i32, {2, 2}, {1, 2, 3, 4});
  expect_array(mj::array(std::vector<int>{1, 2}, {2}, mj::f32), mj::f32, {2}, {1, 2});
  expect_array(mj::array(std::vector<int64_t>{1, 3000000000}, {2}, mj::f64), mj::f64, {2}, {1, 3000000000.0});
  expect_array(mj::array(std::vector<int64_t>{1, 3000000000}, {2}, mj::u32), mj::u32, {2}, {1, 3000000000.0});
  expect_array(mj::array(std::vector<bool>{true, false}, {1, 2}), mj::bool_, {1, 2}, {1, 0});
  expect_array(mj::array(std::vector<float>{2.5f}, {}), mj::f32, {}, {2.5});
  // `{}` as the second argument is a shape (rank 0), never a defaulted call site.
  expect_array(mj::array({2.5}, {}), mj::f32, {}, {2.5});
  expect_array(mj::array({7}, {}, mj::i32), mj::i32, {}, {7});
  // The braced list with a shape and a dtype keeps its overload (vector<double>).
  expect_array(mj::array({1, 2, 3}, {3}, mj::i32), mj::i32, {3}, {1, 2, 3});
  expect_array(mj::array({1.0, 2.0, 3.0, 4.0}, {2, 2}), mj::f32, {2, 2}, {1, 2, 3, 4});
  expect_error<mj::ValueError>([] { (void)mj::array(std::vector<int>{1, 2, 3}, {2, 2}); }, {"array", "3", "[2,2]"});
  expect_error<mj::ValueError>([] { (void)mj::array(std::vector<int64_t>{1, 3000000000}, {1, 2}, mj::i32); },
                               {"array", "3000000000", "[0][1]", "i32"});
  expect_error<mj::ValueError>([] { (void)mj::array(std::vector<int>{4, -1}, {2}, mj::u32); },
                               {"array", "-1", "[1]", "u32"});
}

TEST(ArrayLiterals, NestedListsOneToFourLevels) {
  expect_array(mj::array({2, 0, -1}), mj::i32, {3}, {2, 0, -1});
  expect_array(mj::array({1.f, 2.f}), mj::f32, {2}, {1, 2});
  expect_array(mj::array({0.5, 2.0}), mj::f32, {2}, {0.5, 2});
  expect_array(mj::array({true, false}), mj::bool_, {2}, {1, 0});
  expect_array(mj::array({1u, 4000000000u}), mj::u32, {2}, {1, 4000000000.0});
  expect_array(mj::array({short(3), short(-4)}), mj::i32, {2}, {3, -4});
  expect_array(mj::array({int8_t(97), int8_t(-3)}), mj::i32, {2}, {97, -3});
  expect_array(mj::array({long(1), -1L}), mj::i32, {2}, {1, -1});
  expect_array(mj::array({{1, 2}, {3, 4}}), mj::i32, {2, 2}, {1, 2, 3, 4});
  expect_array(mj::array({{1.0}, {2.0}}), mj::f32, {2, 1}, {1, 2});
  expect_array(mj::array({{{1.f}, {2.f}}, {{3.f}, {4.f}}}), mj::f32, {2, 2, 1}, {1, 2, 3, 4});
  expect_array(mj::array({{{{1u, 2u}}, {{3u, 4u}}}}), mj::u32, {1, 2, 1, 2}, {1, 2, 3, 4});
  expect_array(mj::array({{{{true}, {false}}}}), mj::bool_, {1, 1, 2, 1}, {1, 0});
}

TEST(ArrayLiterals, MixedListsPromoteAsJax) {
  expect_array(mj::array({1, 2.5}), mj::f32, {2}, {1, 2.5});           // jnp.array([1, 2.5]): float32
  expect_array(mj::array({{1, 2}, {0.5, 3}}), mj::f32, {2, 2}, {1, 2, 0.5, 3});
  expect_array(mj::array({true, 2}), mj::i32, {2}, {1, 2});            // jnp.array([True, 2]): int32
  expect_array(mj::array({1u, -2}), mj::i32, {2}, {1, -2});            // int32 + uint32 -> int32 (x64 off)
  expect_array(mj::array({{{1, 2.f}}, {{3, 4.0}}}), mj::f32, {2, 1, 2}, {1, 2, 3, 4});
}

TEST(ArrayLiterals, OutOfRange64BitIntegersNameTheValueAndPosition) {
  expect_error<mj::ValueError>([] { (void)mj::array(std::vector<int64_t>{1, int64_t(1) << 32}); },
                               {"array", "4294967296", "[1]", "i32"});
  expect_error<mj::ValueError>([] { (void)mj::array(std::vector<int64_t>{-2147483649LL}); },
                               {"array", "-2147483649", "[0]"});
  expect_error<mj::ValueError>([] { (void)mj::array(std::vector<uint64_t>{1, 5000000000u}); },
                               {"array", "5000000000", "[1]", "u32"});
  const int64_t big = int64_t(1) << 40;
  expect_error<mj::ValueError>([&] { (void)mj::array({{int64_t(1), int64_t(2), int64_t(3)}, {int64_t(4), int64_t(5), big}}); },
                               {"array", "1099511627776", "[1][2]"});
  expect_error<mj::ValueError>([] { (void)mj::array({{{{uint64_t(1)}, {uint64_t(1) << 33}}}}); },
                               {"array", "8589934592", "[0][0][1][0]"});
}

TEST(ArrayLiterals, RaggedListsAreShapeErrorsNamingThePosition) {
  expect_error<mj::ShapeError>([] { (void)mj::array({{1, 2}, {3}}); }, {"array", "ragged", "[1]", "1 elements", "2"});
  expect_error<mj::ShapeError>([] { (void)mj::array({{{1.f, 2.f}, {3.f, 4.f}}, {{5.f}, {6.f, 7.f}}}); },
                               {"array", "ragged", "[1][0]"});
  expect_error<mj::ShapeError>([] { (void)mj::array({{{1, 2}}, {{3, 4}, {5, 6}}}); }, {"array", "ragged", "[1]"});
  expect_error<mj::ShapeError>([] { (void)mj::array({{{{1}}, {{2}, {3}}}}); }, {"array", "ragged", "[0][1]"});
}

}  // namespace
