// Case test for docs/cases/seed-offload-in-scan.md: grad of scan(checkpoint(step)) with the named
// residual "save_remat" offloaded to pinned_host; gradient, residual list and the staged programs.
//
// Checked on the compiled program, not here (the IR level has none): in
// tests/memory/test_schedule_offloads.cc, that as_text() shows the host copies (one row to
// pinned_host per forward iteration, one row back per backward iteration) overlapped with compute,
// and the copy coalescing of 12-byte rows; in tests/memory/test_offload_memory.cc
// (SeedOffloadMemory), the scaled-up measurement (lengths 100 and 1000, width 4096): device peak
// not growing with the length beyond the stacked carry (length x width x 4 bytes), host memory
// holding the named residual.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/views/memory_ops.h"
#include "core/views/control_flow.h"
#include "core/bodies.h"
#include "autodiff/linearize.h"

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;

// step(y, i): y = sin(y); y = checkpoint_name(y, "save_remat"); y = sin(y); no per-step output.
std::pair<Array, mj::None> step(const Array& y, const Array&) {
  Array a = mj::checkpoint_name(mj::sin(y), "save_remat");
  return {mj::sin(a), mj::None{}};
}

mj::PolicyPtr offload_policy() {
  return cp::save_and_offload_only_these_names(/*names_which_can_be_saved=*/{},
                                               /*names_which_can_be_offloaded=*/{"save_remat"},
                                               "device", "pinned_host");
}

// The right result, by the closed form in double. One step is f = sin∘sin, so the final carry is
// f(f(p)) and by the chain rule d/dp = f'(f(p))·f'(p) with f'(u) = cos(sin(u))·cos(u).
double expected_grad() {
  auto f = [](double u) { return std::sin(std::sin(u)); };
  auto df = [](double u) { return std::cos(std::sin(u)) * std::cos(u); };
  return df(f(1.0)) * df(1.0);
}

const Array& params() {
  static const Array p = mj::ones({3}, mj::f32);
  return p;
}
const Array& xs() {
  static const Array x = mj::ones({2, 3}, mj::f32);
  return x;
}

// loss(p) = sum(scan(step', p, xs).carry) for a given step'.
template <class S>
auto loss_with(S s) {
  return [s](const Array& p) { return mj::sum(mj::scan(s, p, xs()).first); };
}

void expect_all(const Array& g, double want, double tol, const std::string& what) {
  ASSERT_EQ(g.shape(), (mj::Shape{3})) << what;
  ASSERT_EQ(g.dtype(), mj::DType::f32) << what;
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(g.data<float>()[i], want, tol) << what << " element " << i;
}

TEST(SeedOffloadInScan, ClosedFormIsThePublishedValue) {
  // The case prints 8 decimals (truncated: the closed form is 0.2059352060...).
  EXPECT_NEAR(expected_grad(), 0.20593520, 1e-8);
}

TEST(SeedOffloadInScan, GradientUnderEveryVariantEagerAndJit) {
  const double want = expected_grad();
  auto offload = loss_with(mj::checkpoint(step, {.policy = offload_policy()}));
  auto everything = loss_with(mj::checkpoint(step, {.policy = cp::everything_saveable()}));
  auto plain = loss_with(step);
  // The thread's workaround: the whole scan inside the checkpoint (same policy, and JAX's default).
  auto whole_offload = mj::checkpoint(loss_with(step), {.policy = offload_policy()});
  auto whole_default = mj::checkpoint(loss_with(step));

  Array g_off = mj::grad(offload)(params());
  Array g_off_jit = mj::jit(mj::grad(offload))(params());
  Array g_plain = mj::grad(plain)(params());
  Array g_every = mj::grad(everything)(params());
  // float32 rounding: a few ulps of 0.2 (ulp ~1.5e-8).
  const double tol = 1e-7;
  expect_all(g_off, want, tol, "offload, eager");
  expect_all(g_off_jit, want, tol, "jit(grad(offload))");
  expect_all(g_plain, want, tol, "no checkpoint");
  expect_all(g_every, want, tol, "everything_saveable");
  expect_all(mj::grad(whole_offload)(params()), want, tol, "whole scan in checkpoint (offload policy)");
  expect_all(mj::grad(whole_default)(params()), want, tol, "whole scan in checkpoint (nothing_saveable)");
  expect_all(mj::jit(mj::grad(whole_offload))(params()), want, tol, "jit, whole scan in checkpoint");
  expect_all(mj::jit(mj::grad(plain))(params()), want, tol, "jit, no checkpoint");
  expect_all(mj::jit(mj::grad(everything))(params()), want, tol, "jit, everything_saveable");
  // The offloaded program agrees with the references to float32 rounding.
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(g_off.data<float>()[i], g_plain.data<float>()[i], 6e-8);
    EXPECT_NEAR(g_off.data<float>()[i], g_every.data<float>()[i], 6e-8);
    EXPECT_NEAR(g_off_jit.data<float>()[i], g_off.data<float>()[i], 6e-8);
  }
  // The primal value too: sum of f(f(1)) over three elements.
  auto [v, g] = mj::value_and_grad(offload)(params());
  const double f2 = std::sin(std::sin(std::sin(std::sin(1.0))));
  EXPECT_NEAR(v.item<float>(), 3 * f2, 3e-7);
  expect_all(g, want, tol, "value_and_grad");
}

TEST(SeedOffloadInScan, SavedResidualsAreTheCarryOnDeviceAndSaveRematOnHost) {
  auto loss = loss_with(mj::checkpoint(step, {.policy = offload_policy()}));
  mj::SavedResiduals rs = mj::saved_residuals(loss, params());
  std::ostringstream printed;
  printed << rs;
  ASSERT_EQ(rs.size(), 2u) << printed.str();
  const mj::SavedResidual* carry = nullptr;
  const mj::SavedResidual* named = nullptr;
  for (const auto& r : rs) {
    EXPECT_EQ(r.aval.shape, (mj::Shape{2, 3})) << r;
    EXPECT_EQ(r.aval.dtype, mj::DType::f32) << r;
    EXPECT_EQ(r.placement, mj::ResidualPlacement::stacked) << r;
    EXPECT_EQ(r.bytes, 2 * 3 * 4) << r;
    EXPECT_EQ(r.aval.memory_kind, r.memory_kind) << r;
    (r.memory_kind == mj::MemoryKind::pinned_host ? named : carry) = &r;
  }
  ASSERT_NE(carry, nullptr) << printed.str();
  ASSERT_NE(named, nullptr) << printed.str();
  // The carry y: the step's input, which the backward pass needs for cos(y); the policy is never
  // asked about inputs, so it stays on the device, unnamed.
  EXPECT_EQ(carry->memory_kind, mj::MemoryKind::device);
  EXPECT_EQ(carry->name, "");
  EXPECT_NE(carry->description.find("carry"), std::string::npos) << *carry;
  EXPECT_EQ(carry->made_by, "scan");
  // "save_remat", offloaded by the policy: stacked by the scan from the body's device_put to
  // pinned_host (one per iteration).
  EXPECT_EQ(named->name, "save_remat");
  EXPECT_EQ(named->made_by, "scan");
  EXPECT_NE(named->description.find("device_put"), std::string::npos) << *named;
  EXPECT_NE(printed.str().find("f32[2,3] stacked pinned_host 24 bytes named 'save_remat'"), std::string::npos)
      << printed.str();
}

// ---- the staged programs ------------------------------------------------------------------------

// A device_put to `kind` in a body, at any depth (the scan body holds the checkpoint's body).
const mj::Eqn* find_in_body(const mj::Jaxpr& j, const std::string& prim, mj::MemoryKind kind) {
  for (const auto& e : j.eqns) {
    if (e.primitive->name == prim && mj::device_put_params(e).memory_kind == kind) return &e;
    if (e.primitive->name == "scan" || e.primitive->name == "checkpoint")
      if (const mj::Eqn* inner = find_in_body(*mj::subjaxprs(e).at(0).jaxpr->jaxpr, prim, kind)) return inner;
  }
  return nullptr;
}

std::vector<const mj::Eqn*> scans_of(const mj::Jaxpr& j) {
  std::vector<const mj::Eqn*> r;
  for (const auto& e : j.eqns)
    if (e.primitive->name == "scan") r.push_back(&e);
  return r;
}

bool is_host_stack(const mj::ShapedArray& a) {
  return a.shape == mj::Shape{2, 3} && a.dtype == mj::DType::f32 && a.memory_kind == mj::MemoryKind::pinned_host;
}

// Form 2 (the whole scan in the checkpoint): the policy reaches the loop body, so save_remat is
// stacked per iteration in pinned_host; the carry is recomputed from it in the backward pass, so
// the only other residual is the argument p. Compiled, the gradient is form 1's and the host
// stack's bytes are on the host.
TEST(SeedOffloadInScan, Form2OffloadsSaveRematStackedOnTheHost) {
  auto whole = mj::checkpoint(loss_with(step), {.policy = offload_policy()});
  mj::SavedResiduals rs = mj::saved_residuals(whole, params());
  std::ostringstream printed;
  printed << rs;
  ASSERT_EQ(rs.size(), 2u) << printed.str();
  EXPECT_EQ(rs[0].placement, mj::ResidualPlacement::forwarded) << printed.str();
  EXPECT_EQ(rs[0].description, "from the argument args[0]") << printed.str();
  EXPECT_TRUE(is_host_stack(rs[1].aval)) << printed.str();
  EXPECT_EQ(rs[1].placement, mj::ResidualPlacement::stacked) << printed.str();
  EXPECT_EQ(rs[1].name, "save_remat") << printed.str();
  auto g = mj::jit(mj::grad(whole));
  expect_all(g(params()), expected_grad(), 1e-7, "jit(grad(checkpoint(scan)))");
  expect_all(mj::grad(whole)(params()), expected_grad(), 1e-7, "grad(checkpoint(scan))");
  mj::CompiledMemoryStats stats = g.lower(params()).compile().memory_analysis();
  EXPECT_GE(stats.temp[size_t(mj::MemoryKind::pinned_host)], 2 * 3 * 4) << stats.str();
  EXPECT_GE(stats.host_temp_size_in_bytes, 2 * 3 * 4) << stats.str();
}

TEST(SeedOffloadInScan, LinearizedProgramReadsTheHostStackInsideItsScan) {
  auto loss = loss_with(mj::checkpoint(step, {.policy = offload_policy()}));
  mj::LinearizeResult lr = mj::linearize_flat(
      [&](const std::vector<Array>& a) { return std::vector<Array>{loss(a[0])}; }, {params()});
  const mj::Jaxpr& lin = *lr.linear.jaxpr;
  // Among the linear map's constants (the residuals) is the host stack, concrete: row t holds
  // sin(y_t), the value named save_remat at forward iteration t (y_0 = 1, y_1 = sin(sin(1))).
  int host_consts = 0;
  for (size_t i = 0; i < lin.constvars.size(); ++i) {
    if (!is_host_stack(lin.constvars[i].aval())) continue;
    ++host_consts;
    const Array& c = lr.linear.consts.at(i);
    ASSERT_EQ(c.memory_kind(), mj::MemoryKind::pinned_host);
    const double y1 = std::sin(std::sin(1.0));
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(c.data<float>()[k], std::sin(1.0), 1e-7);
      EXPECT_NEAR(c.data<float>()[3 + k], std::sin(y1), 1e-7);
    }
  }
  EXPECT_EQ(host_consts, 1) << lr.linear;
  // The tangent scan takes it as an xs operand (one row per iteration) and copies each row back
  // to the device inside its body.
  auto scans = scans_of(lin);
  ASSERT_EQ(scans.size(), 1u) << lr.linear;
  const mj::Eqn& s = *scans[0];
  EXPECT_FALSE(mj::scan_params(s).reverse);
  EXPECT_EQ(mj::scan_params(s).length, 2);
  const int64_t first_x = mj::scan_params(s).num_consts + mj::scan_params(s).num_carry;
  int host_xs = 0;
  for (size_t i = size_t(first_x); i < s.inputs.size(); ++i) host_xs += is_host_stack(mj::atom_aval(s.inputs[i]));
  EXPECT_EQ(host_xs, 1) << lr.linear;
  EXPECT_NE(find_in_body(*mj::subjaxprs(s).at(0).jaxpr->jaxpr, "device_put", mj::MemoryKind::device), nullptr)
      << lr.linear;
  // Evaluating the linear map on a unit tangent gives the gradient (the map is diagonal here).
  Array t = eval_jaxpr(lr.linear, {mj::ones({3}, mj::f32)})[0];
  EXPECT_NEAR(t.item<float>(), 3 * expected_grad(), 3e-7);
}

TEST(SeedOffloadInScan, GradProgramWritesRowsForwardAndReadsThemBackwardReversed) {
  auto loss = loss_with(mj::checkpoint(step, {.policy = offload_policy()}));
  mj::ClosedJaxpr j = mj::make_jaxpr(mj::grad(loss))(params());
  auto scans = scans_of(*j.jaxpr);
  ASSERT_EQ(scans.size(), 2u) << j;
  const mj::Eqn& fwd = *scans[0];
  const mj::Eqn& bwd = *scans[1];
  // Forward: writes one row per iteration to a stacked pinned_host [2,3] output (the body copies
  // the named value to the host and yields it as a y slice).
  EXPECT_FALSE(mj::scan_params(fwd).reverse) << j;
  const mj::Var* host_stack = nullptr;
  for (const auto& o : fwd.outputs)
    if (is_host_stack(o.aval())) host_stack = &o;
  ASSERT_NE(host_stack, nullptr) << j;
  EXPECT_NE(find_in_body(*mj::subjaxprs(fwd).at(0).jaxpr->jaxpr, "device_put", mj::MemoryKind::pinned_host), nullptr)
      << j;
  // Backward: the transposed scan runs in reversed order (reverse flipped), takes the host stack
  // as xs (one row per iteration, last row first) and copies each row back to the device.
  EXPECT_TRUE(mj::scan_params(bwd).reverse) << j;
  const int64_t first_x = mj::scan_params(bwd).num_consts + mj::scan_params(bwd).num_carry;
  int reads = 0;
  for (size_t i = 0; i < bwd.inputs.size(); ++i)
    if (std::holds_alternative<mj::Var>(bwd.inputs[i]) && mj::atom_var(bwd.inputs[i]) == *host_stack) {
      EXPECT_GE(int64_t(i), first_x) << "the host stack must be an xs operand\n" << j;
      ++reads;
    }
  EXPECT_EQ(reads, 1) << j;
  EXPECT_NE(find_in_body(*mj::subjaxprs(bwd).at(0).jaxpr->jaxpr, "device_put", mj::MemoryKind::device), nullptr)
      << j;
  // The staged program evaluates to the same gradient.
  Array g = eval_jaxpr(j, {params()})[0];
  expect_all(g, expected_grad(), 1e-7, "eval_jaxpr(make_jaxpr(grad))");
}

}  // namespace
