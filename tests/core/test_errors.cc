// Bad-input tests of the core layer: every error a user can provoke through the numpy/lax API,
// constructors, PRNG, pytrees and staging — exception type, message contents, user's call site.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <typeinfo>
#include <vector>

#include <minijax/minijax.h>

using mj::Array;

namespace {

/// Runs f, which must throw E (exactly that class or a subclass). Checks that the message contains
/// every part in `parts` and, when line > 0, that the reported call site is this file at `line`
/// (the user's code, not a library file).
template <class E, class F>
void expect_error(F&& f, int line, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected " << typeid(E).name() << ", nothing was thrown (line " << line << ")";
  } catch (const E& e) {
    const std::string m = e.what();
    for (const auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' missing in: " << m;
    if (line > 0) {
      EXPECT_NE(std::string(e.where().file_name()).find("test_errors.cc"), std::string::npos) << m;
      EXPECT_EQ(int(e.where().line()), line) << m;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected " << typeid(E).name() << ", got " << typeid(e).name() << ": " << e.what();
  }
}

// One line per check, so that __LINE__ is the line of the user's call inside `expr`.
#define EXPECT_MJ_ERROR(E, expr, ...) expect_error<mj::E>([&] { (void)(expr); }, __LINE__, {__VA_ARGS__})
// For errors raised where no user call site is known (allocation): type and message only.
#define EXPECT_MJ_ERROR_ANYWHERE(E, expr, ...) expect_error<mj::E>([&] { (void)(expr); }, 0, {__VA_ARGS__})

Array leaked;  // a tracer smuggled out of a transformation (escaped-tracer tests)

}  // namespace

TEST(Errors, ElementwiseShapeMismatchNamesPrimitiveShapesAndCallSite) {
  Array x = mj::ones({2, 3}), y = mj::ones({3, 2});
  EXPECT_MJ_ERROR(ShapeError, x + y, "add", "[2,3]", "[3,2]");
  EXPECT_MJ_ERROR(ShapeError, x * y, "multiply", "[2,3]", "[3,2]");
  EXPECT_MJ_ERROR(ShapeError, mj::where(x > 0.0, y, 0.0), "where", "[2,3]", "[3,2]");
  EXPECT_MJ_ERROR(ShapeError, mj::lax::add(x, y), "add(f32[2,3], f32[3,2])");
  EXPECT_MJ_ERROR(ShapeError, mj::lax::clamp(mj::ones({2}), x, mj::ones({2})), "clamp", "f32[2,3]", "[2]");
}

TEST(Errors, DtypeMismatchesAreTypeErrors) {
  Array x = mj::ones({2, 3});
  Array i = mj::arange(3, mj::i32);
  EXPECT_MJ_ERROR(TypeError, mj::lax::add(x, mj::ones({2, 3}, mj::f64)), "add", "f32[2,3]", "f64[2,3]");
  EXPECT_MJ_ERROR(TypeError, x & x, "and", "f32[2,3]");
  EXPECT_MJ_ERROR(TypeError, mj::lax::select_n(x, {x, x}), "select_n", "f32[2,3]");
  EXPECT_MJ_ERROR(TypeError, mj::power(i, -1), "integer_pow", "i32[3]", "-1");
  EXPECT_MJ_ERROR(TypeError, mj::astype(x, mj::DType::float0), "convert_element_type", "f32[2,3]", "float0");
  EXPECT_MJ_ERROR(TypeError, mj::one_hot(x, 3), "one_hot", "f32[2,3]");
  EXPECT_MJ_ERROR(TypeError, mj::take(x, mj::ones({1}), 0), "gather", "f32[2,3]", "f32[1]");
  EXPECT_MJ_ERROR(TypeError, x.data<double>(), "f64", "f32");
}

TEST(Errors, BoolArithmeticIsLogicalAsInJaxNumpyButSubtractIsATypeError) {
  // jnp.add / multiply / maximum / minimum on two bools are logical or / and / or / and.
  Array t = mj::array({1.f, 1.f, 0.f, 0.f}) > 0.5, u = mj::array({1.f, 0.f, 1.f, 0.f}) > 0.5;
  auto bools = [](const Array& a) { auto d = a.data<bool>(); return std::vector<bool>(d, d + a.size()); };
  EXPECT_EQ((t + u).dtype(), mj::bool_);
  EXPECT_EQ(bools(t + u), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(bools(t * u), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(bools(mj::maximum(t, u)), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(bools(mj::minimum(t, u)), (std::vector<bool>{true, false, false, false}));
  EXPECT_MJ_ERROR(TypeError, t - u, "sub", "bool[4]");
}

TEST(Errors, UnknownAxesNameTheAxisAndShape) {
  Array x = mj::ones({2, 3});
  EXPECT_MJ_ERROR(ShapeError, mj::sum(x, 5), "sum", "axis 5", "[2,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::sum(x, -3), "sum", "axis -3", "[2,3]");
  EXPECT_MJ_ERROR(ValueError, mj::sum(x, std::vector<int64_t>{0, 0}), "sum", "duplicate", "[2,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::max(x, 2), "max", "axis 2", "[2,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::argmax(x, 2), "argmax", "axis 2", "[2,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::cumsum(x, 2), "cumsum", "axis 2", "[2,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::softmax(x, 2), "softmax", "axis 2", "[2,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::mean(x, 9), "mean", "axis 9", "[2,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::lax::reduce_sum(x, {2}), "reduce_sum", "f32[2,3]", "(2,)");
  EXPECT_MJ_ERROR(ShapeError, mj::lax::cumsum(x, 3), "cumsum", "f32[2,3]", "axis 3");
  EXPECT_MJ_ERROR(ValueError, mj::expand_dims(x, 5), "expand_dims", "axis 5", "(2, 3)");
  EXPECT_MJ_ERROR(ValueError, mj::flip(x, 3), "flip", "axis 3", "(2, 3)");
  EXPECT_MJ_ERROR(ValueError, mj::concatenate({x, x}, 3), "concatenate", "axis 3", "(2, 3)");
}

TEST(Errors, ShapeOpsNameBothShapes) {
  Array x = mj::ones({2, 3});
  EXPECT_MJ_ERROR(ShapeError, mj::matmul(x, x), "matmul", "[2,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::matmul(mj::scalar(1.0), x), "matmul", "[]", "[2,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::dot(x, x), "dot", "[2,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::reshape(x, {4}), "reshape", "(2, 3)", "(4,)");
  EXPECT_MJ_ERROR(ShapeError, mj::reshape(x, {-1, -1}), "reshape", "(-1, -1)");
  EXPECT_MJ_ERROR(ShapeError, mj::transpose(x, {0, 0}), "transpose", "f32[2,3]", "(0, 0)");
  EXPECT_MJ_ERROR(ShapeError, mj::squeeze(x, {0}), "squeeze", "f32[2,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::broadcast_to(x, {4, 3}), "broadcast_to", "[2,3]", "[4,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::concatenate({x, mj::ones({3, 2})}, 0), "concatenate", "(2, 3)", "(3, 2)");
  EXPECT_MJ_ERROR(ShapeError, mj::stack({x, mj::ones({3, 2})}), "stack", "(2, 3)", "(3, 2)");
  EXPECT_MJ_ERROR(ShapeError, mj::lax::slice(x, {0, 0}, {3, 3}), "slice", "f32[2,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::lax::pad(x, mj::scalar(0.0), {{-3, 0, 0}, {0, 0, 0}}), "pad", "f32[2,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::lax::dynamic_update_slice(x, mj::ones({3, 3}), {mj::scalar(0, mj::i32), mj::scalar(0, mj::i32)}), "dynamic_update_slice", "f32[2,3]", "f32[3,3]");
  EXPECT_MJ_ERROR(ShapeError, mj::lax::broadcast_in_dim(x, {4, 3}, {0, 1}), "broadcast_in_dim", "f32[2,3]", "[4,3]");
  EXPECT_MJ_ERROR(ValueError, mj::concatenate({}, 0), "concatenate");
}

TEST(Errors, OutOfRangeIndicesNameOperandIndicesAndPosition) {
  Array x = mj::ones({2, 3});
  Array idx = mj::astype(mj::array({0.f, 5.f}), mj::i32);
  // take gives the fill value for an out-of-range index (no IndexError, as JAX's default mode
  // "fill"); lax::gather's default PROMISE_IN_BOUNDS mode names the broken promise.
  EXPECT_MJ_ERROR(IndexError, mj::lax::gather(x, idx), "gather(f32[2,3], i32[2])", "index 5", "(1,)", "size 2");
  EXPECT_MJ_ERROR(ValueError, mj::take(x, idx, 0, "raise"), "take", "\"raise\"", "not supported");
  EXPECT_MJ_ERROR(ValueError, mj::take(x, idx, 0, "nearest"), "take", "\"nearest\"");
  EXPECT_MJ_ERROR(ValueError, mj::take(x, idx, 2), "take", "axis 2", "rank 2");
  EXPECT_MJ_ERROR(ValueError, mj::take(x, idx, -3), "take", "axis -3", "rank 2");
  Array neg = mj::astype(mj::array({-1.f}), mj::i32);
  EXPECT_MJ_ERROR(IndexError, mj::lax::scatter_add(x, neg, mj::ones({1, 3})), "scatter_add(f32[2,3], i32[1])", "index -1");
  // A zero-size reduction without identity, argmax of an empty axis, item() of a non-scalar.
  EXPECT_MJ_ERROR(ValueError, mj::max(mj::zeros({0})), "max", "[0]");
  EXPECT_MJ_ERROR(ValueError, mj::argmax(mj::zeros({0}), 0), "argmax", "f32[0]");
  EXPECT_MJ_ERROR(ValueError, x.item<float>(), "item", "[2,3]");
}

TEST(Errors, ConstructorsReportTheCallersLine) {
  EXPECT_MJ_ERROR(ValueError, mj::zeros({-1}), "zeros", "[-1]");
  EXPECT_MJ_ERROR(ValueError, mj::ones({2, -3}), "ones", "[2,-3]");
  EXPECT_MJ_ERROR(ValueError, mj::full({2, -3}, 1.0), "full", "[2,-3]");
  EXPECT_MJ_ERROR(ValueError, mj::eye(-2), "eye", "-2");
  EXPECT_MJ_ERROR(ValueError, mj::arange(0.0, 1.0, 0.0), "arange", "step");
  EXPECT_MJ_ERROR(TypeError, mj::zeros({2}, mj::DType::token), "zeros", "Tok");
  EXPECT_MJ_ERROR(ShapeError, mj::array({{1.f, 2.f}, {3.f}}), "array", "ragged", "[1]");
  EXPECT_MJ_ERROR(ValueError, mj::array(std::vector<double>{1, 2, 3}, {2, 2}), "array", "[2,2]");
}

TEST(Errors, ShapesWhoseSizeOverflowsAreRejectedNotWrapped) {
  // 2^40 * 2^40 elements wrap int64 to 0: before the check this returned a "valid" empty buffer.
  const int64_t big = int64_t(1) << 40;
  EXPECT_MJ_ERROR(ValueError, mj::zeros({big, big}), "zeros", "[1099511627776,1099511627776]", "2^63");
  EXPECT_MJ_ERROR(ValueError, mj::full({int64_t(1) << 32, int64_t(1) << 32, 2}, 1.0), "full", "2^63");
  // ceil(1e19) elements does not fit in int64 (it used to produce a negative dimension).
  EXPECT_MJ_ERROR(ValueError, mj::arange(0.0, 1e19), "arange", "1e+19");
  // 2^62 f32 elements need 2^64 bytes: the eager broadcast used to write past a wrapped buffer.
  EXPECT_MJ_ERROR_ANYWHERE(ValueError, mj::broadcast_to(mj::ones({1}), {int64_t(1) << 62}), "f32[4611686018427387904]", "2^63 bytes");
  // A zero-size array with huge other dims is fine (numpy allows it), and so is an abstract one.
  EXPECT_EQ(mj::reshape(mj::zeros({0}), {big, big, 0}).size(), 0);
  // A reshape to a shape whose size overflows int64 is a ShapeError, not a wrapped product.
  EXPECT_MJ_ERROR(ShapeError, mj::reshape(mj::zeros({4}), {big, big, 4}), "reshape", "int64");
  auto staged = mj::make_jaxpr([&](const Array& a) { return mj::broadcast_to(a, {big, big}); })(mj::ones({1}));
  EXPECT_EQ(staged.jaxpr->outvars.size(), 1u);
}

TEST(Errors, MemoryKindsMustAgreeAndBeKnown) {
  Array x = mj::ones({2, 3});
  Array p = mj::device_put(x, "pinned_host");
  EXPECT_EQ(p.memory_kind(), mj::MemoryKind::pinned_host);
  EXPECT_MJ_ERROR(TypeError, p + x, "add", "f32<pinned_host>[2,3]", "f32[2,3]", "memory kind");
  EXPECT_MJ_ERROR(TypeError, mj::matmul(p, mj::ones({3, 2})), "dot_general", "pinned_host");
  EXPECT_MJ_ERROR(ValueError, mj::device_put(x, "gpu"), "gpu", "pinned_host");
}

TEST(Errors, PrngRejectsBadKeysAndArguments) {
  Array x = mj::ones({2, 3});
  Array key = mj::random::PRNGKey(0);
  EXPECT_MJ_ERROR(TypeError, mj::random::split(x, 2), "random.split", "u32[2]", "f32[2,3]");
  EXPECT_MJ_ERROR(TypeError, mj::random::uniform(x, {2}), "random.uniform", "f32[2,3]");
  EXPECT_MJ_ERROR(ValueError, mj::random::split(key, -1), "random.split", "-1");
  EXPECT_MJ_ERROR(TypeError, mj::random::normal(key, {2}, mj::i32), "random.normal", "i32");
}

TEST(Errors, WrongPytreeStructuresAreTypeErrors) {
  Array x = mj::ones({2});
  EXPECT_MJ_ERROR(TypeError, mj::tree_unflatten(std::vector<Array>{x, x}, std::vector<Array>{x}), "tree_unflatten", "[*, *]", "2 leaves");
  std::map<std::string, Array> a{{"w", x}}, b{{"v", x}};
  EXPECT_MJ_ERROR(TypeError, mj::tree_check_same(a, b), "w", "v");
}

TEST(Errors, ConcretizationUnderStagingNamesTheLineThatNeededTheValue) {
  Array x = mj::ones({2, 3});
  int line = 0;
  auto branchy = [&](const Array& a) {
    line = __LINE__ + 1;
    if (mj::sum(a).item<float>() > 0) return a * 2.0;
    return a;
  };
  // Eagerly (and under eager grad) the value is concrete: no error.
  EXPECT_FLOAT_EQ(branchy(x).data<float>()[0], 2.f);  // sum(ones) = 6 > 0: the a * 2 branch
  for (int which = 0; which < 2; ++which) {
    try {
      if (which == 0) mj::make_jaxpr(branchy)(x);
      else mj::jit(branchy, "branchy")(x);
      ADD_FAILURE() << "expected ConcretizationError";
    } catch (const mj::ConcretizationError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("f32[]"), std::string::npos) << m;
      EXPECT_NE(m.find("JaxprTrace"), std::string::npos) << m;
      if (which == 1) EXPECT_NE(m.find("'branchy'"), std::string::npos) << m;
      EXPECT_EQ(int(e.where().line()), line) << m;
      EXPECT_NE(std::string(e.where().file_name()).find("test_errors.cc"), std::string::npos) << m;
    }
  }
  EXPECT_MJ_ERROR(ConcretizationError, mj::make_jaxpr([](const Array& a) { mj::to_xtensor<float>(a); return a; })(x), "to_xtensor", "f32[2,3]");
}

TEST(Errors, EscapedTracersAreReportedWhereTheyAreUsed) {
  Array x = mj::ones({2, 3});
  mj::make_jaxpr([](const Array& a) { leaked = a * 2.0; return a; })(x);
  EXPECT_MJ_ERROR(UnexpectedTracerError, leaked + 1.0, "JaxprTrace", "f32[2,3]", "escaped");
  EXPECT_MJ_ERROR(UnexpectedTracerError, mj::sin(leaked), "JaxprTrace", "escaped");
  leaked = Array();
}

TEST(Errors, EmptyArraysAreRejectedNotDereferenced) {
  Array x = mj::ones({2});
  EXPECT_MJ_ERROR_ANYWHERE(ValueError, Array() + x, "empty");
  EXPECT_MJ_ERROR_ANYWHERE(ValueError, mj::sin(Array()), "empty");
}
