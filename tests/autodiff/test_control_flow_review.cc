// Review tests of control flow and remat (issue 3) written as a new user would: errors at the
// user's call site, and gradients checked against central finite differences in float64.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <minijax/minijax.h>

namespace {

using mj::Array;
namespace cp = mj::checkpoint_policies;

Array rnd64(const mj::Shape& shape, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Array a = Array::allocate(mj::ShapedArray{shape, mj::DType::f64});
  for (int64_t i = 0; i < a.size(); ++i) a.mutable_data<double>()[i] = u(g);
  return a;
}

// Central differences (h = 1e-6) of a scalar f64 function: an independent gradient.
Array fd_grad(const std::function<Array(const Array&)>& f, const Array& x) {
  const double h = 1e-6;
  Array g = Array::allocate(x.aval());
  for (int64_t i = 0; i < x.size(); ++i) {
    Array xp = Array::allocate(x.aval()), xm = Array::allocate(x.aval());
    for (int64_t j = 0; j < x.size(); ++j)
      xp.mutable_data<double>()[j] = xm.mutable_data<double>()[j] = x.data<double>()[j];
    xp.mutable_data<double>()[i] += h;
    xm.mutable_data<double>()[i] -= h;
    g.mutable_data<double>()[i] = (f(xp).item<double>() - f(xm).item<double>()) / (2 * h);
  }
  return g;
}

void expect_close(const Array& got, const Array& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got.data<double>()[i], want.data<double>()[i],
                tol * (1 + std::abs(want.data<double>()[i])))
        << "element " << i;
}

// The file name of a call site, without its directory.
std::string base_name(const char* path) {
  std::string s(path);
  return s.substr(s.find_last_of('/') + 1);
}

// A checkpointed sin(sin(x)) under `policy`, summed: grad asks the policy about both sins.
std::function<Array(const Array&)> checkpointed_loss(const mj::PolicyPtr& policy) {
  return [policy](const Array& x) {
    auto body = mj::checkpoint([](const Array& a) { return mj::sin(mj::sin(a)); },
                               {.policy = policy});
    return mj::sum(body(x));
  };
}

mj::PolicyDecision offload_to(mj::MemoryKind src, mj::MemoryKind dst) {
  return mj::Offloadable{src, dst};
}

// A custom policy returning an invalid Offloadable is reported when grad asks it, naming the
// policy and the equation, at the user's line that made the policy (the equations of a body
// carry no source location).
TEST(ControlFlowReview, InvalidCustomPolicyDecisionReportsTheUsersLine) {
  const int line = __LINE__ + 1;
  auto bad_kind = cp::custom("bad_kind", [](const mj::Primitive&, const std::vector<mj::ShapedArray>&, const mj::Params&) { return offload_to(mj::MemoryKind::device, mj::MemoryKind(42)); });
  const int same_line = __LINE__ + 1;
  auto same = cp::custom("same_kind", [](const mj::Primitive&, const std::vector<mj::ShapedArray>&, const mj::Params&) { return offload_to(mj::MemoryKind::device, mj::MemoryKind::device); });
  Array x = rnd64({3}, 1);
  try {
    mj::grad(checkpointed_loss(bad_kind))(x);
    FAIL() << "an Offloadable with an unknown memory kind was accepted";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(e.message().find("bad_kind"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("unknown memory kind"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("sin(f64[3])"), std::string::npos) << e.what();
    EXPECT_EQ(base_name(e.where().file_name()), "test_control_flow_review.cc") << e.what();
    EXPECT_EQ(int(e.where().line()), line) << e.what();
  }
  try {
    mj::grad(checkpointed_loss(same))(x);
    FAIL() << "an Offloadable from device to device was accepted";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(e.message().find("same_kind"), std::string::npos) << e.what();
    EXPECT_EQ(base_name(e.where().file_name()), "test_control_flow_review.cc") << e.what();
    EXPECT_EQ(int(e.where().line()), same_line) << e.what();
  }
}

// An empty callback, and a callback that offloads inside save_from_both_policies, are
// reported at the user's line too.
TEST(ControlFlowReview, CustomAndSaveFromBothErrorsReportTheUsersLine) {
  const int empty_line = __LINE__ + 2;
  try {
    cp::custom("empty", nullptr);
    FAIL() << "an empty callback was accepted";
  } catch (const mj::ValueError& e) {
    EXPECT_EQ(base_name(e.where().file_name()), "test_control_flow_review.cc") << e.what();
    EXPECT_EQ(int(e.where().line()), empty_line) << e.what();
  }
  auto offloads = cp::custom("offloads", [](const mj::Primitive&, const std::vector<mj::ShapedArray>&, const mj::Params&) { return offload_to(mj::MemoryKind::device, mj::MemoryKind::pinned_host); });
  const int both_line = __LINE__ + 1;
  auto both = cp::save_from_both_policies(cp::dots_saveable(), offloads);
  try {
    mj::grad(checkpointed_loss(both))(rnd64({3}, 2));
    FAIL() << "save_from_both_policies accepted an Offloadable decision";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(e.message().find("save_from_both_policies(dots_saveable, offloads)"),
              std::string::npos) << e.what();
    EXPECT_EQ(base_name(e.where().file_name()), "test_control_flow_review.cc") << e.what();
    EXPECT_EQ(int(e.where().line()), both_line) << e.what();
  }
}

// A valid custom offloading policy still differentiates correctly: d/dx sum(sin(sin(x))) =
// cos(sin(x)) cos(x), checked against finite differences.
TEST(ControlFlowReview, ValidCustomOffloadPolicyGradient) {
  auto offloads = cp::custom("offload_all", [](const mj::Primitive&, const std::vector<mj::ShapedArray>&, const mj::Params&) { return offload_to(mj::MemoryKind::device, mj::MemoryKind::pinned_host); });
  auto f = checkpointed_loss(offloads);
  Array x = rnd64({4}, 3);
  expect_close(mj::grad(f)(x), fd_grad([](const Array& a) { return mj::sum(mj::sin(mj::sin(a))); }, x),
               1e-7);
}

// Nested reverse scans closing over the differentiated argument, with the inner body
// checkpointed under a names policy: grad and grad-of-grad against finite differences of the
// same loop unrolled in C++.
TEST(ControlFlowReview, NestedReverseScanWithCheckpointMatchesFiniteDifferences) {
  Array W = rnd64({3, 3}, 4), xss = rnd64({3, 2, 3}, 5), x0 = rnd64({3}, 6);
  auto inner = mj::checkpoint(
      [&W](const Array& c, const Array& xi, const Array& x) {
        Array n = mj::checkpoint_name(mj::sin(mj::matmul(W, c)), "s") * xi + x;
        return std::pair{n, n * n};
      },
      {.policy = cp::save_only_these_names({"s"})});
  auto f = [&](const Array& x) {
    auto [c, ys] = mj::scan(
        [&](const Array& c, const Array& xt) {
          auto [ci, yi] = mj::scan([&](const Array& cc, const Array& xi) { return inner(cc, xi, x); },
                                   c, xt, {.reverse = true});
          return std::pair{ci, mj::sum(yi)};
        },
        x, xss);
    return mj::sum(c) + mj::sum(ys * ys);
  };
  // The same loop unrolled: inner slices visited last to first.
  auto unrolled = [&](const Array& x) {
    Array c = x, total = mj::zeros({}, mj::DType::f64);
    for (int64_t k = 0; k < 3; ++k) {
      Array s = mj::zeros({}, mj::DType::f64);
      for (int64_t j = 1; j >= 0; --j) {
        Array xi = mj::reshape(mj::lax::slice(xss, {k, j, 0}, {k + 1, j + 1, 3}), {3});
        Array n = mj::sin(mj::matmul(W, c)) * xi + x;
        s = s + mj::sum(n * n);
        c = n;
      }
      total = total + s * s;
    }
    return mj::sum(c) + total;
  };
  EXPECT_NEAR(f(x0).item<double>(), unrolled(x0).item<double>(), 1e-12);
  expect_close(mj::grad(f)(x0), fd_grad(unrolled, x0), 1e-6);
  auto sum_grad = [&](const Array& x) { return mj::sum(mj::grad(f)(x)); };
  auto sum_grad_unrolled = [&](const Array& x) { return mj::sum(mj::grad(unrolled)(x)); };
  expect_close(mj::grad(sum_grad)(x0), fd_grad(sum_grad_unrolled, x0), 1e-6);
}

}  // namespace
