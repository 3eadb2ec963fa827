// Bad-input tests of the transformations (grad, value_and_grad, jvp, vjp, vmap, jacfwd, hessian,
// custom_jvp/custom_vjp, check_grads): exception type, message contents and the user's call site.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>
#include <typeinfo>
#include <utility>
#include <vector>

#include <minijax/minijax.h>

using mj::Array;

namespace {

/// Runs f, which must throw E. Checks that the message contains every part in `parts` and, when
/// line > 0, that the reported call site is this file at `line` (user code, not a library file).
template <class E, class F>
void expect_error(F&& f, int line, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected " << typeid(E).name() << ", nothing was thrown (line " << line << ")";
  } catch (const E& e) {
    const std::string m = e.what();
    for (const auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' missing in: " << m;
    if (line > 0) {
      EXPECT_NE(std::string(e.where().file_name()).find("test_errors_autodiff.cc"), std::string::npos) << m;
      EXPECT_EQ(int(e.where().line()), line) << m;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected " << typeid(E).name() << ", got " << typeid(e).name() << ": " << e.what();
  }
}

// One line per check, so that __LINE__ is the line of the user's call inside `expr`.
#define EXPECT_MJ_ERROR(E, expr, ...) expect_error<mj::E>([&] { (void)(expr); }, __LINE__, {__VA_ARGS__})

Array leaked;  // a tracer smuggled out of a transformation

float at(const Array& a, int64_t i = 0) { return a.data<float>()[i]; }

}  // namespace

TEST(AutodiffErrors, GradInputsMustBeFloatingUnlessAllowInt) {
  Array i = mj::arange(3, mj::i32);
  auto f = [](const Array& a) { return mj::sum(mj::astype(a, mj::f32)); };
  EXPECT_MJ_ERROR(TypeError, mj::grad(f)(i), "i32[3]", "allow_int", "argument 0");
  EXPECT_MJ_ERROR(TypeError, mj::value_and_grad(f)(i), "i32[3]", "allow_int");
  EXPECT_MJ_ERROR(TypeError, mj::grad(f)(mj::random::PRNGKey(0)), "u32[2]");
  // With allow_int the gradient is float0 with the input's shape, as in JAX.
  Array g = mj::grad(f, {.allow_int = true})(i);
  EXPECT_EQ(g.dtype(), mj::DType::float0);
  EXPECT_EQ(g.shape(), (mj::Shape{3}));
  EXPECT_MJ_ERROR(TypeError, mj::jacfwd([](const Array& a) { return a; })(i), "jacfwd", "i32[3]");
  EXPECT_MJ_ERROR(TypeError, mj::hessian([](const Array& a) { return mj::sum(a); })(i), "i32[3]");
}

TEST(AutodiffErrors, GradOutputsMustBeRealScalars) {
  Array x = mj::ones({2, 3});
  EXPECT_MJ_ERROR(TypeError, mj::grad([](const Array& a) { return a * 2.0; })(x), "scalar", "f32[2,3]", "jacrev");
  EXPECT_MJ_ERROR(TypeError, mj::grad([](const Array& a) { return mj::sum(a, 0); })(mj::ones({3, 1})), "f32[1]");
  EXPECT_MJ_ERROR(TypeError, mj::grad([](const Array& a) { return mj::argmax(a, 0); })(mj::ones({3})), "i32[]");
  EXPECT_MJ_ERROR(TypeError, mj::value_and_grad([](const Array& a) { return a; })(x), "f32[2,3]");
  EXPECT_MJ_ERROR(TypeError, mj::grad([](const Array& a) { return std::pair{mj::sum(a), a}; })(x), "has_aux");
  EXPECT_MJ_ERROR(TypeError, mj::grad([](const Array& a) { return mj::sum(a); }, {.has_aux = true})(x), "has_aux", "std::pair");
}

TEST(AutodiffErrors, ShapeErrorsInsideTransformationsPointAtTheUsersOperation) {
  Array x = mj::ones({2, 3}), y = mj::ones({3, 2});
  int line = 0;
  auto bad = [&](const Array& a, const Array& b) { line = __LINE__; return mj::sum(a + b); };
  auto check = [&](auto&& run, const std::string& shapes) {
    try {
      run();
      ADD_FAILURE() << "expected ShapeError";
    } catch (const mj::ShapeError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("add"), std::string::npos) << m;
      EXPECT_NE(m.find(shapes), std::string::npos) << m;
      EXPECT_EQ(int(e.where().line()), line) << m;
      EXPECT_NE(std::string(e.where().file_name()).find("test_errors_autodiff.cc"), std::string::npos) << m;
    }
  };
  check([&] { mj::grad(bad)(x, y); }, "[2,3] and [3,2]");
  check([&] { mj::jit(bad)(x, y); }, "[2,3] and [3,2]");
  check([&] { mj::jvp([&](const Array& a) { return bad(a, y); }, x, x); }, "[2,3] and [3,2]");
  // Under vmap the message shows the per-example shapes: rows of [2,3] and of [2,2].
  check([&] { mj::vmap(bad)(x, mj::ones({2, 2})); }, "[3] and [2]");
  check([&] { mj::vmap(mj::grad(bad))(x, mj::ones({2, 2})); }, "[3] and [2]");
}

TEST(AutodiffErrors, TangentsAndCotangentsMustMatchThePrimals) {
  Array x = mj::ones({2, 3});
  auto id = [](const Array& a) { return a; };
  EXPECT_MJ_ERROR(TypeError, mj::jvp(id, x, mj::ones({3, 2})), "jvp", "f32[2,3]", "f32[3,2]");
  EXPECT_MJ_ERROR(TypeError, mj::jvp(id, x, mj::ones({2, 3}, mj::f64)), "f64[2,3]");
  EXPECT_MJ_ERROR(TypeError, mj::jvp(id, mj::arange(3, mj::i32), mj::arange(3, mj::i32)), "float0[3]", "i32[3]");
  auto [out, pullback] = mj::vjp([](const Array& a) { return mj::sin(a); }, x);
  EXPECT_EQ(out.shape(), x.shape());
  // The message is right; the reported location is not yet the caller's (see the report on
  // autodiff/grad.h's vjp), so only type and contents are checked here.
  expect_error<mj::TypeError>([&] { pullback(mj::ones({3, 2})); }, 0, {"vjp", "cotangent", "f32[2,3]", "f32[3,2]"});
  auto [outs, pullback2] = mj::vjp([](const std::vector<Array>& a) { return a; }, std::vector<Array>{x, x});
  EXPECT_EQ(outs.size(), 2u);
  expect_error<mj::TypeError>([&] { pullback2(std::vector<Array>{x}); }, 0, {"[*, *]", "[*]"});
}

TEST(AutodiffErrors, VmapAxesAndSizes) {
  Array x = mj::ones({2, 3});
  auto add = [](const Array& a, const Array& b) { return a + b; };
  auto id = [](const Array& a) { return a; };
  EXPECT_MJ_ERROR(ValueError, mj::vmap(add)(x, mj::ones({3, 3})), "inconsistent sizes", "f32[2,3]", "f32[3,3]");
  EXPECT_MJ_ERROR(ValueError, mj::vmap(id, {.in_axes = {5}})(x), "axis 5", "f32[2,3]");
  EXPECT_MJ_ERROR(ValueError, mj::vmap(id, {.out_axes = {5}})(x), "out_axes 5");
  EXPECT_MJ_ERROR(ValueError, mj::vmap(id)(mj::scalar(1.0)), "f32[]", "axis 0");
  EXPECT_MJ_ERROR(ValueError, mj::vmap(add, {.in_axes = {0, 0, 0}})(x, x), "in_axes", "got 3");
  EXPECT_MJ_ERROR(ValueError, mj::vmap(id, {.in_axes = {mj::kNotMapped}})(x), "at least one mapped", "(kNotMapped)");
  EXPECT_MJ_ERROR(ValueError, mj::vmap([](const Array& a) { return std::pair{a, a}; }, {.out_axes = {0, 0, 0}})(x), "out_axes", "2 arrays");
}

TEST(AutodiffErrors, ConcretizationUnderVmapAndJitInsideGrad) {
  Array x = mj::ones({2, 3});
  int line = 0;
  auto branchy = [&](const Array& a) {
    line = __LINE__ + 1;
    if (mj::sum(a).item<float>() > 0) return a * 2.0;
    return a;
  };
  // Eager grad keeps primals concrete: branching works (d/da sum(2a) = 2).
  Array g = mj::grad([&](const Array& a) { return mj::sum(branchy(a)); })(x);
  EXPECT_FLOAT_EQ(at(g, 5), 2.f);
  for (int which = 0; which < 2; ++which) {
    try {
      if (which == 0) mj::vmap(branchy)(x);
      else mj::grad([&](const Array& a) { return mj::sum(mj::jit(branchy)(a)); })(x);
      ADD_FAILURE() << "expected ConcretizationError";
    } catch (const mj::ConcretizationError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find(which == 0 ? "vmap" : "JaxprTrace"), std::string::npos) << m;
      EXPECT_EQ(int(e.where().line()), line) << m;
      EXPECT_NE(std::string(e.where().file_name()).find("test_errors_autodiff.cc"), std::string::npos) << m;
    }
  }
}

TEST(AutodiffErrors, TracersEscapingGradJvpVmapAreReportedAtTheirUse) {
  Array x = mj::ones({2, 3});
  mj::jvp([](const Array& a) { leaked = mj::sin(a); return a; }, x, x);
  EXPECT_MJ_ERROR(UnexpectedTracerError, leaked + 1.0, "JVPTrace", "f32[2,3]", "escaped");
  mj::grad([](const Array& a) { leaked = mj::sin(a); return mj::sum(a); })(x);
  EXPECT_MJ_ERROR(UnexpectedTracerError, leaked * 2.0, "JVPTrace", "escaped");
  mj::vmap([](const Array& a) { leaked = mj::sin(a); return a; })(x);
  EXPECT_MJ_ERROR(UnexpectedTracerError, mj::exp(leaked), "BatchTrace", "f32[3]", "escaped");
  leaked = Array();
}

TEST(AutodiffErrors, CustomRulesWithWrongShapesOrModes) {
  Array x = mj::array({1.f, 2.f});
  int vjp_line = __LINE__ + 1;
  auto cv = mj::custom_vjp([](const Array& a) { return mj::sin(a); }, [](const Array& a) { return std::pair{mj::sin(a), a}; }, [](const Array& r, const Array& ct) { return std::tuple{ct * mj::cos(r)}; });
  expect_error<mj::NotDifferentiableError>([&] { mj::jvp([&](const Array& a) { return cv(a); }, x, x); }, vjp_line, {"forward-mode", "custom_vjp"});
  int bad_bwd_line = __LINE__ + 1;
  auto bad_bwd = mj::custom_vjp([](const Array& a) { return mj::sin(a); }, [](const Array& a) { return std::pair{mj::sin(a), a}; }, [](const Array&, const Array&) { return std::tuple{mj::ones({3})}; });
  expect_error<mj::TypeError>([&] { mj::grad([&](const Array& a) { return mj::sum(bad_bwd(a)); })(x); }, bad_bwd_line, {"bwd", "f32[3]", "f32[2]"});
  int bad_fwd_line = __LINE__ + 1;
  auto bad_fwd = mj::custom_vjp([](const Array& a) { return mj::sin(a); }, [](const Array& a) { return std::pair{mj::ones({3}), a}; }, [](const Array&, const Array& ct) { return std::tuple{ct}; });
  expect_error<mj::TypeError>([&] { mj::grad([&](const Array& a) { return mj::sum(bad_fwd(a)); })(x); }, bad_fwd_line, {"fwd", "f32[2]", "f32[3]"});
  int bad_jvp_line = __LINE__ + 1;
  auto bad_jvp = mj::custom_jvp([](const Array& a) { return mj::sin(a); }, [](const std::tuple<Array>& p, const std::tuple<Array>& t) { return std::pair{mj::sin(std::get<0>(p)), mj::astype(std::get<0>(t), mj::f64)}; });
  expect_error<mj::TypeError>([&] { mj::jvp([&](const Array& a) { return bad_jvp(a); }, x, x); }, bad_jvp_line, {"Custom JVP rule", "f32[2]", "f64[2]"});
  expect_error<mj::TypeError>([&] { mj::grad([&](const Array& a) { return mj::sum(bad_jvp(a)); })(x); }, bad_jvp_line, {"Custom JVP rule", "f64[2]"});
}

TEST(AutodiffErrors, CheckGradsArguments) {
  auto id = [](const Array& a) { return a; };
  EXPECT_MJ_ERROR(TypeError, mj::check_grads(id, mj::arange(3, mj::i32), 1), "check_grads", "i32[3]");
  EXPECT_MJ_ERROR(ValueError, mj::check_grads(id, mj::ones({2}), 0), "check_grads", "order");
}
