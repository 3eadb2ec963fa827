// minijax tests: checking a function of several f64 inputs against tools/torch_reference.py's values,
// gradients, JVPs and Hessian-vector products, eagerly and under mj::jit (the generated headers'
// form: sum(sin(op(inputs...)) * c)). Shared by the convolution and linear-algebra reference tests.
//
// Gradients are reverse mode (mj::value_and_grad), JVPs forward mode along a direction for every
// input at once, HVPs forward-over-reverse (torch: reverse-over-reverse). Eager and compiled must
// agree with PyTorch to 1e-9 relative, |got - want| <= 1e-9 * max(|want|, 1e-3 * max|want| over the
// array), and with each other.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <minijax/minijax.h>

namespace torch_check {

using V = std::vector<mj::Array>;
using Fn = std::function<mj::Array(const V&)>;

inline constexpr double kRtol = 1e-9;

// A reference array of the header: data, element count and shape.
struct RefArray {
  const double* data;
  size_t n;
  mj::Shape shape;
};

template <size_t N, size_t R>
inline RefArray arr(const double (&data)[N], const int64_t (&shape)[R]) {
  return {data, N, mj::Shape(shape, shape + R)};
}

inline mj::Array to_array(const RefArray& r) {
  return mj::array(std::vector<double>(r.data, r.data + r.n), r.shape, mj::f64);
}

// One case's expectations: inputs, value, a gradient per input, the JVP along jvp_dirs (one
// direction per input), and HVPs in the given inputs.
struct Hvp {
  size_t input;
  RefArray dir, want;
};
struct Case {
  std::vector<RefArray> inputs;
  double value;
  std::vector<RefArray> grads;
  std::vector<RefArray> jvp_dirs;
  double jvp;
  std::vector<Hvp> hvps;
};

// The cases whose inputs are (x, w), with HVPs in both, and those whose input is x alone.
#define MJ_XW_CASE(ns)                                                                               \
  Case {                                                                                             \
    {arr(ns::x, ns::x_shape), arr(ns::w, ns::w_shape)}, ns::value,                                   \
        {arr(ns::grad_x, ns::grad_x_shape), arr(ns::grad_w, ns::grad_w_shape)},                      \
        {arr(ns::jvp_x_dir, ns::jvp_x_dir_shape), arr(ns::jvp_w_dir, ns::jvp_w_dir_shape)}, ns::jvp, \
        {{0, arr(ns::hvp_x_dir, ns::hvp_x_dir_shape), arr(ns::hvp_x, ns::hvp_x_shape)},              \
         {1, arr(ns::hvp_w_dir, ns::hvp_w_dir_shape), arr(ns::hvp_w, ns::hvp_w_shape)}},             \
  }
#define MJ_X_CASE(ns)                                                                    \
  Case {                                                                                 \
    {arr(ns::x, ns::x_shape)}, ns::value, {arr(ns::grad_x, ns::grad_x_shape)},           \
        {arr(ns::jvp_x_dir, ns::jvp_x_dir_shape)}, ns::jvp,                              \
        {{0, arr(ns::hvp_x_dir, ns::hvp_x_dir_shape), arr(ns::hvp_x, ns::hvp_x_shape)}}, \
  }

// Elementwise comparison of an f64 array with a reference array (the tolerance above).
inline void expect_matches(const mj::Array& got, const RefArray& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), mj::f64) << what;
  ASSERT_EQ(got.shape(), want.shape) << what;
  const double* g = got.data<double>();
  double scale = 0;
  for (size_t i = 0; i < want.n; ++i) scale = std::max(scale, std::abs(want.data[i]));
  for (size_t i = 0; i < want.n; ++i) {
    const double tol = kRtol * std::max(std::abs(want.data[i]), 1e-3 * scale);
    EXPECT_NEAR(g[i], want.data[i], tol) << what << " element " << i;
  }
}

// The same comparison of two minijax arrays (compiled against eager).
inline void expect_matches(const mj::Array& got, const mj::Array& want, const std::string& what) {
  ASSERT_EQ(want.dtype(), mj::f64) << what;
  std::vector<double> w(want.data<double>(), want.data<double>() + want.size());
  expect_matches(got, RefArray{w.data(), w.size(), want.shape()}, what);
}

inline void expect_value(const mj::Array& got, double want, const std::string& what) {
  ASSERT_EQ(got.dtype(), mj::f64) << what;
  ASSERT_EQ(got.ndim(), 0) << what;
  EXPECT_NEAR(got.item<double>(), want, kRtol * std::abs(want)) << what;
}

inline std::pair<mj::Array, V> value_and_grads(const Fn& f, const V& xs) {
  return mj::value_and_grad([&](const V& v) { return f(v); })(xs);
}

// H_kk v: the derivative of grad_k f in direction v for input k, the others held fixed.
inline mj::Array hvp(const Fn& f, const V& xs, size_t k, const mj::Array& v) {
  auto grad_k = [&](const mj::Array& xk) {
    return mj::grad([&](const mj::Array& z) {
      V all = xs;
      all[k] = z;
      return f(all);
    })(xk);
  };
  return mj::jvp(grad_k, xs[k], v).second;
}

// What one mode (eager or compiled) computes for a case.
struct Results {
  mj::Array value, jvp_primal, jvp;
  V grads, hvps;
};

inline Results eager_results(const Fn& f, const Case& k, const V& xs, const V& dirs) {
  Results r;
  std::tie(r.value, r.grads) = value_and_grads(f, xs);
  std::tie(r.jvp_primal, r.jvp) = mj::jvp(f, xs, dirs);
  for (const Hvp& h : k.hvps) r.hvps.push_back(hvp(f, xs, h.input, to_array(h.dir)));
  return r;
}

inline Results compiled_results(const Fn& f, const Case& k, const V& xs, const V& dirs) {
  Results r;
  std::tie(r.value, r.grads) = mj::jit([f](const V& x) { return value_and_grads(f, x); })(xs);
  std::tie(r.jvp_primal, r.jvp) = mj::jit([f](const V& x, const V& t) { return mj::jvp(f, x, t); })(xs, dirs);
  for (const Hvp& h : k.hvps) {
    const size_t i = h.input;
    r.hvps.push_back(
        mj::jit([f, i](const V& x, const mj::Array& v) { return hvp(f, x, i, v); })(xs, to_array(h.dir)));
  }
  return r;
}

inline void expect_results(const Results& r, const Case& k, const std::string& mode) {
  expect_value(r.value, k.value, mode + " value");
  expect_value(r.jvp_primal, k.value, mode + " jvp primal");
  expect_value(r.jvp, k.jvp, mode + " jvp");
  ASSERT_EQ(r.grads.size(), k.grads.size()) << mode;
  for (size_t i = 0; i < k.grads.size(); ++i)
    expect_matches(r.grads[i], k.grads[i], mode + " grad of input " + std::to_string(i));
  for (size_t j = 0; j < k.hvps.size(); ++j)
    expect_matches(r.hvps[j], k.hvps[j].want, mode + " hvp in input " + std::to_string(k.hvps[j].input));
}

// f = sum(sin(op(inputs)) * c) against the case's data, eagerly and compiled, and compiled
// against eager.
inline void check_case(const Fn& op, const RefArray& c_ref, const Case& k) {
  const mj::Array c = to_array(c_ref);
  const Fn f = [op, c](const V& a) { return mj::sum(mj::sin(op(a)) * c); };
  V xs, dirs;
  for (const RefArray& a : k.inputs) xs.push_back(to_array(a));
  for (const RefArray& a : k.jvp_dirs) dirs.push_back(to_array(a));
  Results eager = eager_results(f, k, xs, dirs);
  expect_results(eager, k, "eager");
  Results compiled = compiled_results(f, k, xs, dirs);
  expect_results(compiled, k, "compiled");
  expect_matches(compiled.value, eager.value, "compiled vs eager value");
  for (size_t i = 0; i < eager.grads.size(); ++i)
    expect_matches(compiled.grads[i], eager.grads[i], "compiled vs eager grad " + std::to_string(i));
  for (size_t j = 0; j < eager.hvps.size(); ++j)
    expect_matches(compiled.hvps[j], eager.hvps[j], "compiled vs eager hvp " + std::to_string(j));
}

}  // namespace torch_check
