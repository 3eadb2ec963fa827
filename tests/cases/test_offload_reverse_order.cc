// Case test for docs/cases/offload-reverse-order.md: a scan whose checkpointed body offloads the
// named value "h" must read the host rows back last-first in the backward pass (n = 1..7, both
// directions), checked against a hand-written float64 recurrence and the published PyTorch values.
//
// Checked on the compiled program in tests/memory/test_schedule_offloads.cc
// (ScheduleOffloadsLoops), not here: the compiled backward loop's reads of the host rows (values
// equal eager's for every small length, forward and reverse) and the copies in as_text().
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/views/memory_ops.h"
#include "core/views/control_flow.h"
#include "core/bodies.h"

namespace {

namespace cp = mj::checkpoint_policies;
using mj::Array;

// Which program: no checkpoint, or the body checkpointed under a policy.
enum class Variant { offload, no_checkpoint, everything_saveable };

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::offload: return "offload";
    case Variant::no_checkpoint: return "no checkpoint";
    case Variant::everything_saveable: return "everything_saveable";
  }
  return "?";
}

// body(c, x): h = checkpoint_name(sin(c·(1 + x)), "h"); c' = tanh(h); returns (c', c').
Array step(const Array& c, const Array& x) {
  Array h = mj::checkpoint_name(mj::sin(c * (1.0 + x)), "h");
  return mj::tanh(h);
}

// loss(c0, xs) = sum(final carry) + sum(ys).
Array loss(const Array& c0, const Array& xs, bool reverse, Variant v) {
  mj::ScanOptions o;
  o.reverse = reverse;
  mj::PolicyPtr pol = v == Variant::offload
                          ? cp::save_and_offload_only_these_names({}, {"h"}, "device", "pinned_host")
                          : cp::everything_saveable();
  auto body = [&](const Array& c, const Array& x) {
    Array cn = v == Variant::no_checkpoint ? step(c, x) : mj::checkpoint(step, {.policy = pol})(c, x);
    return std::pair{cn, cn};
  };
  auto [c, ys] = mj::scan(body, c0, xs, o);
  return mj::sum(c) + mj::sum(ys);
}

// xs_i = 0.1·(i+1), f32[n,1].
Array make_xs(int n) {
  Array xs = Array::allocate(mj::ShapedArray{{n, 1}, mj::DType::f32});
  for (int i = 0; i < n; ++i) xs.mutable_data<float>()[i] = float(0.1 * (i + 1));
  return xs;
}

struct Reference {
  double loss = 0, dc0 = 0;
  std::vector<double> dxs;
};

// The program by hand in float64 (xs are the float32 inputs, widened). Iteration k = 0..n-1 visits
// row t = k (or n-1-k with reverse):
//   a_k = c_k (1 + x_t),  h_k = sin a_k,  c_{k+1} = tanh h_k = y_t;  loss = c_n + sum_t y_t.
// Backward, g = dloss/dc_{k+1} starting at 1 (from the final carry), for k = n-1..0:
//   g += 1                         (y_t = c_{k+1} enters the loss once more)
//   g_a = g (1 - tanh^2 h_k) cos a_k
//   dx_t = g_a c_k,  g = dloss/dc_k = g_a (1 + x_t).
// Row t's backward step needs h_k (the offloaded residual) of the same iteration: reading the rows
// in any other order changes dx and, through g, dc0.
Reference reference(int n, bool reverse) {
  const auto un = size_t(n);
  std::vector<double> x(un), c(un + 1), a(un), h(un);
  for (size_t i = 0; i < un; ++i) x[i] = double(float(0.1 * double(i + 1)));
  Reference r;
  r.dxs.assign(un, 0.0);
  c[0] = 1;
  for (size_t k = 0; k < un; ++k) {
    size_t t = reverse ? un - 1 - k : k;
    a[k] = c[k] * (1 + x[t]);
    h[k] = std::sin(a[k]);
    c[k + 1] = std::tanh(h[k]);
    r.loss += c[k + 1];
  }
  r.loss += c[un];
  double g = 1;
  for (size_t k = un; k-- > 0;) {
    size_t t = reverse ? un - 1 - k : k;
    g += 1;
    double th = std::tanh(h[k]);
    double ga = g * (1 - th * th) * std::cos(a[k]);
    r.dxs[t] = ga * c[k];
    g = ga * (1 + x[t]);
  }
  r.dc0 = g;
  return r;
}

TEST(OffloadReverseOrder, HandRecurrenceReproducesThePyTorchValues) {
  // The recurrence is an independent derivation; check it against the published float64 numbers
  // (xs differ from PyTorch's exact 0.1(i+1) by float32 rounding, < 1e-8 relative).
  Reference f = reference(4, false);
  EXPECT_NEAR(f.loss, 3.27062478, 1e-7);
  EXPECT_NEAR(f.dc0, 0.48603949, 1e-7);
  const double want[] = {0.44185408, 0.57885069, 0.53279751, 0.46597050};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(f.dxs[i], want[i], 1e-7) << i;
  EXPECT_NEAR(reference(4, true).dc0, 0.18475333, 1e-7);
}

class OffloadReverseOrderN : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(OffloadReverseOrderN, GradientsMatchReferenceAndUncheckpointed) {
  const auto [n, reverse] = GetParam();
  const Array xs = make_xs(n), c0 = mj::ones({1}, mj::f32);
  const Reference ref = reference(n, reverse);
  std::vector<std::tuple<Array, Array, Array>> all;  // (loss, dc0, dxs) per variant
  for (Variant v : {Variant::offload, Variant::no_checkpoint, Variant::everything_saveable}) {
    auto vg = mj::value_and_grad([=](const Array& a, const Array& b) { return loss(a, b, reverse, v); },
                                 mj::argnums<0, 1>);
    auto [val, g] = vg(c0, xs);
    auto [dc0, dxs] = g;
    // The same under jit.
    auto [jval, jg] = mj::jit(vg)(c0, xs);
    auto [jdc0, jdxs] = jg;
    const std::string what = std::string(variant_name(v)) + " n=" + std::to_string(n) +
                             (reverse ? " reverse" : " forward");
    ASSERT_EQ(dc0.shape(), (mj::Shape{1})) << what;
    ASSERT_EQ(dxs.shape(), (mj::Shape{n, 1})) << what;
    // float32 rounding of values of order 1 through n <= 7 steps.
    EXPECT_NEAR(val.item<float>(), ref.loss, 2e-6) << what;
    EXPECT_NEAR(dc0.data<float>()[0], ref.dc0, 2e-6) << what;
    for (int i = 0; i < n; ++i) EXPECT_NEAR(dxs.data<float>()[i], ref.dxs[size_t(i)], 2e-6) << what << " i=" << i;
    EXPECT_NEAR(jval.item<float>(), val.item<float>(), 1e-6) << what;
    EXPECT_NEAR(jdc0.data<float>()[0], dc0.data<float>()[0], 1e-6) << what;
    for (int i = 0; i < n; ++i) EXPECT_NEAR(jdxs.data<float>()[i], dxs.data<float>()[i], 1e-6) << what << " i=" << i;
    all.emplace_back(val, dc0, dxs);
  }
  // Offloading gives the uncheckpointed and everything_saveable gradients to float32 rounding.
  for (size_t k = 1; k < all.size(); ++k) {
    EXPECT_NEAR(std::get<1>(all[0]).data<float>()[0], std::get<1>(all[k]).data<float>()[0], 1e-6);
    for (int i = 0; i < n; ++i)
      EXPECT_NEAR(std::get<2>(all[0]).data<float>()[i], std::get<2>(all[k]).data<float>()[i], 1e-6) << "i=" << i;
  }
  if (n == 4) {
    // The case's PyTorch float64 values.
    const Array& off_dc0 = std::get<1>(all[0]);
    const Array& off_dxs = std::get<2>(all[0]);
    if (!reverse) {
      EXPECT_NEAR(std::get<0>(all[0]).item<float>(), 3.27062478, 2e-6);
      EXPECT_NEAR(off_dc0.data<float>()[0], 0.48603949, 1e-6);
      const double want[] = {0.44185408, 0.57885069, 0.53279751, 0.46597050};
      for (int i = 0; i < 4; ++i) EXPECT_NEAR(off_dxs.data<float>()[i], want[i], 1e-6) << i;
    } else {
      EXPECT_NEAR(off_dc0.data<float>()[0], 0.18475333, 1e-6);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(LengthsAndDirections, OffloadReverseOrderN,
                         ::testing::Combine(::testing::Range(1, 8), ::testing::Bool()),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_reverse" : "_forward");
                         });

// A device_put to `kind` anywhere inside a jaxpr (scan and checkpoint bodies included).
bool has_device_put(const mj::Jaxpr& j, mj::MemoryKind kind) {
  for (const auto& e : j.eqns) {
    if (mj::DevicePutParams::is(e) && mj::device_put_params(e).memory_kind == kind) return true;
    if ((e.primitive->name == "scan" || e.primitive->name == "checkpoint") &&
        has_device_put(*mj::subjaxprs(e).at(0).jaxpr->jaxpr, kind))
      return true;
  }
  return false;
}

TEST(OffloadReverseOrder, BackwardScanRunsOppositeToTheForwardOneOverTheHostStack) {
  // In the staged gradient the forward scan writes "h" as a stacked pinned_host [n,1] output and
  // the transposed scan takes it as xs with `reverse` flipped, so iteration k of the backward
  // loop reads the row that iteration k of the forward loop wrote, last first.
  const int n = 4;
  const Array xs = make_xs(n), c0 = mj::ones({1}, mj::f32);
  for (bool reverse : {false, true}) {
    auto g = mj::grad([=](const Array& a, const Array& b) { return loss(a, b, reverse, Variant::offload); },
                      mj::argnums<0, 1>);
    mj::ClosedJaxpr j = mj::make_jaxpr(g)(c0, xs);
    std::vector<const mj::Eqn*> scans;
    for (const auto& e : j.jaxpr->eqns)
      if (e.primitive->name == "scan") scans.push_back(&e);
    ASSERT_EQ(scans.size(), 2u) << j;
    const mj::Eqn& fwd = *scans[0];
    const mj::Eqn& bwd = *scans[1];
    EXPECT_EQ(mj::scan_params(fwd).reverse, reverse) << j;
    EXPECT_EQ(mj::scan_params(bwd).reverse, !reverse) << j;
    std::vector<mj::Var> host;
    for (const auto& o : fwd.outputs)
      if (o.aval().memory_kind == mj::MemoryKind::pinned_host) host.push_back(o);
    ASSERT_EQ(host.size(), 1u) << j;
    EXPECT_EQ(host[0].aval().shape, (mj::Shape{n, 1}));
    EXPECT_TRUE(has_device_put(*mj::subjaxprs(fwd).at(0).jaxpr->jaxpr, mj::MemoryKind::pinned_host)) << j;
    const int64_t first_x = mj::scan_params(bwd).num_consts + mj::scan_params(bwd).num_carry;
    int reads = 0;
    for (size_t i = 0; i < bwd.inputs.size(); ++i)
      if (std::holds_alternative<mj::Var>(bwd.inputs[i]) && mj::atom_var(bwd.inputs[i]) == host[0]) {
        EXPECT_GE(int64_t(i), first_x) << "the host stack must be read as xs\n" << j;
        ++reads;
      }
    EXPECT_EQ(reads, 1) << j;
    EXPECT_TRUE(has_device_put(*mj::subjaxprs(bwd).at(0).jaxpr->jaxpr, mj::MemoryKind::device)) << j;
  }
}

}  // namespace
