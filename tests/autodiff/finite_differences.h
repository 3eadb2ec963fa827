// minijax autodiff tests: float64 helpers shared by test_policies.cc and test_scan_grad.cc —
// uniform random inputs, gradients by central differences (an oracle independent of autodiff) and
// an elementwise comparison with a relative tolerance.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>

#include <minijax/minijax.h>

namespace fdtest {

/// f64 array of `shape`, uniform in [-1, 1) from std::mt19937(seed).
inline mj::Array rnd64(const mj::Shape& shape, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  mj::Array a = mj::Array::allocate(mj::ShapedArray{shape, mj::DType::f64});
  for (int64_t i = 0; i < a.size(); ++i) a.mutable_data<double>()[i] = u(g);
  return a;
}

/// Central differences (h = 1e-6) of a scalar f64 function: an independent gradient.
inline mj::Array fd_grad(const std::function<mj::Array(const mj::Array&)>& f, const mj::Array& x) {
  const double h = 1e-6;
  mj::Array g = mj::Array::allocate(x.aval());
  for (int64_t i = 0; i < x.size(); ++i) {
    mj::Array xp = mj::Array::allocate(x.aval()), xm = mj::Array::allocate(x.aval());
    for (int64_t j = 0; j < x.size(); ++j)
      xp.mutable_data<double>()[j] = xm.mutable_data<double>()[j] = x.data<double>()[j];
    xp.mutable_data<double>()[i] += h;
    xm.mutable_data<double>()[i] -= h;
    g.mutable_data<double>()[i] = (f(xp).item<double>() - f(xm).item<double>()) / (2 * h);
  }
  return g;
}

/// |got - want| <= tol (1 + |want|) elementwise, both f64 of one shape.
inline void expect_close(const mj::Array& got, const mj::Array& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got.data<double>()[i], want.data<double>()[i],
                tol * (1 + std::abs(want.data<double>()[i])))
        << "element " << i;
}

}  // namespace fdtest
