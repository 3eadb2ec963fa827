// lgamma, digamma and polygamma against PyTorch (issue 29 item 11): value, gradient, JVP and HVP in
// f64 at rtol 1e-9, eagerly and under jit, from tests/autodiff/torch_reference_data_special.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "autodiff/torch_reference_data_special.h"

namespace {

namespace ref = torch_reference_special;
constexpr double kRtol = 1e-9;

template <size_t N, size_t R>
mj::Array f64(const double (&data)[N], const int64_t (&shape)[R]) {
  return mj::array(std::vector<double>(data, data + N), mj::Shape(shape, shape + R), mj::f64);
}

template <size_t N, size_t R>
void expect_matches(const mj::Array& got, const double (&want)[N], const int64_t (&shape)[R],
                    const std::string& what) {
  ASSERT_EQ(got.dtype(), mj::f64) << what;
  ASSERT_EQ(got.shape(), mj::Shape(shape, shape + R)) << what;
  const double* g = got.data<double>();
  for (size_t i = 0; i < N; ++i)
    EXPECT_NEAR(g[i], want[i], kRtol * std::abs(want[i])) << what << " element " << i;
}

void expect_value(const mj::Array& got, double want, const std::string& what) {
  ASSERT_EQ(got.ndim(), 0) << what;
  EXPECT_NEAR(got.item<double>(), want, kRtol * std::abs(want)) << what;
}

// Value, gradient, JVP and HVP of sum(c f(x)) against the namespace's torch values, eagerly and under
// jit (torch's trigamma, behind the digamma gradient and the lgamma HVP, is accurate to 5e-10).
template <class F, class Ref>
void check_case(F f, const Ref& r) {
  mj::Array x = f64(*r.x, r.x_shape), t = f64(*r.jvp_x_dir, r.jvp_x_dir_shape);
  mj::Array v = f64(*r.hvp_x_dir, r.hvp_x_dir_shape);
  auto jvp_of = [f](const mj::Array& a, const mj::Array& d) { return mj::jvp(f, a, d).second; };
  auto hvp_of = [f](const mj::Array& a, const mj::Array& d) { return mj::jvp(mj::grad(f), a, d).second; };
  for (int compiled = 0; compiled < 2; ++compiled) {
    const std::string how = std::string(r.name) + (compiled ? " compiled " : " eager ");
    auto [val, g] = compiled ? mj::jit(mj::value_and_grad(f))(x) : mj::value_and_grad(f)(x);
    expect_value(val, r.value, how + "value");
    expect_matches(g, *r.grad_x, r.grad_x_shape, how + "grad x");
    expect_value(compiled ? mj::jit(jvp_of)(x, t) : jvp_of(x, t), r.jvp, how + "jvp");
    expect_matches(compiled ? mj::jit(hvp_of)(x, v) : hvp_of(x, v), *r.hvp_x, r.hvp_x_shape, how + "hvp x");
  }
}

// The generated arrays of one namespace, by reference.
#define MJ_TORCH_CASE(ns)                                                                 \
  struct {                                                                                \
    const char* name = #ns;                                                               \
    const decltype(ref::ns::x)* x = &ref::ns::x;                                          \
    const decltype(ref::ns::x_shape)& x_shape = ref::ns::x_shape;                         \
    const decltype(ref::ns::jvp_x_dir)* jvp_x_dir = &ref::ns::jvp_x_dir;                  \
    const decltype(ref::ns::jvp_x_dir_shape)& jvp_x_dir_shape = ref::ns::jvp_x_dir_shape; \
    const decltype(ref::ns::hvp_x_dir)* hvp_x_dir = &ref::ns::hvp_x_dir;                  \
    const decltype(ref::ns::hvp_x_dir_shape)& hvp_x_dir_shape = ref::ns::hvp_x_dir_shape; \
    double value = ref::ns::value, jvp = ref::ns::jvp;                                    \
    const decltype(ref::ns::grad_x)* grad_x = &ref::ns::grad_x;                           \
    const decltype(ref::ns::grad_x_shape)& grad_x_shape = ref::ns::grad_x_shape;          \
    const decltype(ref::ns::hvp_x)* hvp_x = &ref::ns::hvp_x;                              \
    const decltype(ref::ns::hvp_x_shape)& hvp_x_shape = ref::ns::hvp_x_shape;             \
  }

mj::Array weights() { return f64(ref::lgamma::c, ref::lgamma::c_shape); }

// torch.lgamma, torch.digamma, torch.polygamma(1..3, .) (tools/torch_reference.py --special).
TEST(TorchReferenceSpecial, Lgamma) {
  MJ_TORCH_CASE(lgamma) r;
  check_case([c = weights()](const mj::Array& x) { return mj::sum(c * mj::lax::lgamma(x)); }, r);
}

TEST(TorchReferenceSpecial, Digamma) {
  MJ_TORCH_CASE(digamma) r;
  check_case([c = weights()](const mj::Array& x) { return mj::sum(c * mj::lax::digamma(x)); }, r);
}

TEST(TorchReferenceSpecial, Polygamma) {
  MJ_TORCH_CASE(polygamma1) r1;
  check_case([c = weights()](const mj::Array& x) { return mj::sum(c * mj::lax::polygamma(1, x * x + 0.5)); },
             r1);
  MJ_TORCH_CASE(polygamma2) r2;
  check_case([c = weights()](const mj::Array& x) { return mj::sum(c * mj::lax::polygamma(2, mj::exp(x))); },
             r2);
  MJ_TORCH_CASE(polygamma3) r3;
  check_case([c = weights()](const mj::Array& x) { return mj::sum(c * mj::lax::polygamma(3, x * x + 0.25)); },
             r3);
}

}  // namespace
