// Tests of partial_eval_jaxpr_custom: the known/staged split under the default, recompute and
// offload policies, checked structurally and by evaluating both halves against the whole.
#include <gtest/gtest.h>

#include <cmath>
#include <minijax/minijax.h>

#include "autodiff/partial_eval.h"

namespace {

mj::Jaxpr traced(const mj::ClosedJaxpr& cj) { return *cj.jaxpr; }

// f(x, y) = sin(x) * y + cos(x); x known, y unknown.
mj::ClosedJaxpr f_jaxpr() {
  return mj::make_jaxpr([](const mj::Array& x, const mj::Array& y) {
    return mj::sin(x) * y + mj::cos(x);
  })(mj::array({0.5f, 1.f}), mj::array({2.f, -1.f}));
}

int count_prim(const mj::Jaxpr& j, const std::string& name) {
  int n = 0;
  for (auto& e : j.eqns) n += e.primitive->name == name;
  return n;
}

// Runs known then staged and returns the outputs in original order.
std::vector<mj::Array> run_split(const mj::PartialEvalResult& r, const mj::Array& x, const mj::Array& y) {
  auto kout = mj::eval_jaxpr(r.known, {}, {x});
  size_t nknown_out = kout.size() - size_t(r.num_res);
  std::vector<mj::Array> sin(kout.begin() + std::ptrdiff_t(nknown_out), kout.end());
  sin.push_back(y);
  return mj::eval_jaxpr(r.staged, {}, sin);
}

TEST(PartialEval, DefaultPolicySavesComputedValues) {
  auto cj = f_jaxpr();
  auto r = mj::partial_eval_jaxpr_custom(traced(cj), {false, true}, {false, true}, {false}, {false});
  EXPECT_EQ(r.out_unknowns, (std::vector<bool>{true}));
  EXPECT_EQ(r.num_res, 2);  // sin(x) and cos(x)
  EXPECT_EQ(count_prim(r.known, "sin"), 1);
  EXPECT_EQ(count_prim(r.staged, "sin"), 0);
  EXPECT_EQ(count_prim(r.staged, "mul"), 1);
  for (auto& res : r.residuals) {
    EXPECT_FALSE(res.forwards_input.has_value());
    EXPECT_EQ(res.memory_kind, mj::MemoryKind::device);
  }
  EXPECT_EQ(r.residuals[0].made_by, "sin");
  mj::Array x = mj::array({0.5f, 1.f}), y = mj::array({2.f, -1.f});
  auto out = run_split(r, x, y)[0];
  for (int i = 0; i < 2; ++i) {
    float xi = x.data<float>()[i], yi = y.data<float>()[i];
    EXPECT_NEAR(out.data<float>()[i], std::sin(xi) * yi + std::cos(xi), 1e-6);
  }
}

TEST(PartialEval, RecomputePolicyForwardsTheInput) {
  auto cj = f_jaxpr();
  mj::SaveablePolicy recompute = [](const mj::Primitive&, const std::vector<mj::ShapedArray>&,
                                    const mj::Params&) -> mj::PolicyDecision { return mj::Recompute{}; };
  auto r = mj::partial_eval_jaxpr_custom(traced(cj), {false, true}, {false, true}, {false}, {false},
                                         recompute);
  ASSERT_EQ(r.num_res, 1);
  ASSERT_TRUE(r.residuals[0].forwards_input.has_value());
  EXPECT_EQ(*r.residuals[0].forwards_input, 0);
  EXPECT_EQ(count_prim(r.known, "sin"), 0);  // unused on the known side: removed by DCE
  EXPECT_EQ(count_prim(r.staged, "sin"), 1);
  EXPECT_EQ(count_prim(r.staged, "cos"), 1);
  mj::Array x = mj::array({0.5f, 1.f}), y = mj::array({2.f, -1.f});
  auto out = run_split(r, x, y)[0];
  EXPECT_NEAR(out.data<float>()[1], std::sin(1.f) * -1.f + std::cos(1.f), 1e-6);
}

TEST(PartialEval, OffloadPolicyKeepsResidualsInHostMemory) {
  auto cj = f_jaxpr();
  mj::SaveablePolicy offload = [](const mj::Primitive& p, const std::vector<mj::ShapedArray>&,
                                  const mj::Params&) -> mj::PolicyDecision {
    if (p.name == "sin") return mj::Offloadable{mj::MemoryKind::device, mj::MemoryKind::pinned_host};
    return mj::Saveable{};
  };
  auto r = mj::partial_eval_jaxpr_custom(traced(cj), {false, true}, {false, true}, {false}, {false},
                                         offload);
  ASSERT_EQ(r.num_res, 2);
  EXPECT_EQ(r.residuals[0].memory_kind, mj::MemoryKind::pinned_host);
  EXPECT_EQ(r.residuals[0].aval.str(), "f32<pinned_host>[2]");
  EXPECT_EQ(r.residuals[1].memory_kind, mj::MemoryKind::device);
  EXPECT_EQ(count_prim(r.known, "device_put"), 1);
  EXPECT_EQ(count_prim(r.staged, "device_put"), 1);
  mj::Array x = mj::array({0.5f, 1.f}), y = mj::array({2.f, -1.f});
  auto kout = mj::eval_jaxpr(r.known, {}, {x});
  EXPECT_EQ(kout[0].memory_kind(), mj::MemoryKind::pinned_host);
  auto out = run_split(r, x, y)[0];
  EXPECT_NEAR(out.data<float>()[0], std::sin(0.5f) * 2.f + std::cos(0.5f), 1e-6);
}

TEST(PartialEval, KnownOutputsAndEnsureFlags) {
  // g(x, y) = (sin(x), y * 2): first output known, second unknown.
  auto cj = mj::make_jaxpr([](const mj::Array& x, const mj::Array& y) {
    return std::pair{mj::sin(x), y * 2.0};
  })(mj::array({1.f}), mj::array({3.f}));
  auto r = mj::partial_eval_jaxpr_custom(traced(cj), {false, true}, {false, true}, {false, false},
                                         {false, false});
  EXPECT_EQ(r.out_unknowns, (std::vector<bool>{false, true}));
  EXPECT_EQ(r.num_res, 0);
  EXPECT_EQ(r.known.outvars.size(), 1u);
  // Forcing the known output onto the staged side makes it a residual.
  auto r2 = mj::partial_eval_jaxpr_custom(traced(cj), {false, true}, {false, true}, {true, false},
                                          {false, false});
  EXPECT_EQ(r2.out_unknowns, (std::vector<bool>{true, true}));
  EXPECT_EQ(r2.num_res, 1);
  EXPECT_EQ(r2.staged.outvars.size(), 2u);
  EXPECT_THROW(mj::partial_eval_jaxpr_custom(traced(cj), {false}, {false}, {false}, {false}),
               mj::ValueError);
}

}  // namespace
