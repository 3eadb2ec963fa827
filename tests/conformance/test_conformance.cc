// minijax registry-wide conformance suite: every primitive's shape rule vs its eager result, JVP
// vs central finite differences, VJP vs JVP (dot-product test), batching vs a loop, and
// second-order derivatives; plus a check that no registered primitive is missing a case or a rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "conformance.h"
#include "core/primitive.h"
#include "core/primitive_facts.h"

namespace conformance {
namespace {

bool is_float(const Array& a) { return mj::is_floating(a.dtype()); }
bool fixed_arg(const Case& c, size_t i) { return i < c.fixed.size() && c.fixed[i]; }
bool diff_arg(const Case& c, size_t i) { return is_float(c.args[i]) && !fixed_arg(c, i); }

std::vector<double> values(const Array& a) {
  Array f = mj::astype(a, mj::f64);
  const double* p = f.data<double>();
  return std::vector<double>(p, p + f.size());
}

double vdot(const Array& a, const Array& b) {
  auto x = values(a), y = values(b);
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

// Max of |a - b| / (atol + rtol |b|); <= 1 passes.
double rel_err(const Array& a, const Array& b, double atol, double rtol) {
  auto x = values(a), y = values(b);
  EXPECT_EQ(x.size(), y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    worst = std::max(worst, std::fabs(x[i] - y[i]) / (atol + rtol * std::fabs(y[i])));
  }
  return worst;
}

std::vector<Array> tangents_for(const Case& c, uint32_t seed) {
  std::vector<Array> t;
  for (size_t i = 0; i < c.args.size(); ++i)
    t.push_back(diff_arg(c, i) ? rnd(c.args[i].shape(), seed + uint32_t(i), -1, 1, c.args[i].dtype())
                               : Array());
  return t;
}

std::vector<Array> shifted(const Case& c, const std::vector<Array>& t, double eps) {
  std::vector<Array> a = c.args;
  for (size_t i = 0; i < a.size(); ++i)
    if (t[i].defined()) a[i] = a[i] + t[i] * eps;
  return a;
}

class Conformance : public ::testing::TestWithParam<size_t> {
 protected:
  const Case& c() const { return registry()[GetParam()]; }
};

TEST_P(Conformance, ShapeRuleMatchesEagerResult) {
  const Case& k = c();
  auto eager = k.fn(k.args);
  auto cj = mj::make_jaxpr([&](const std::vector<Array>& a) { return k.fn(a); })(k.args);
  auto out_avals = cj.out_avals();
  ASSERT_EQ(out_avals.size(), eager.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    EXPECT_EQ(out_avals[i].str(), eager[i].aval().str()) << mj::to_string(cj);
    EXPECT_EQ(out_avals[i].weak_type, eager[i].weak_type()) << mj::to_string(cj);
  }
  bool found = false;
  for (auto& e : cj.jaxpr->eqns) found |= e.primitive->name == k.prim;
  EXPECT_TRUE(found) << "case does not stage " << k.prim << ":\n" << mj::to_string(cj);
}

TEST_P(Conformance, JvpMatchesCentralDifferences) {
  const Case& k = c();
  if (!k.differentiable) GTEST_SKIP() << "not differentiable";
  auto t = tangents_for(k, 101);
  auto [po, to] = mj::jvp_flat(k.fn, k.args, t);
  const double eps = 1e-6;
  auto fp = k.fn(shifted(k, t, eps));
  auto fm = k.fn(shifted(k, t, -eps));
  for (size_t j = 0; j < po.size(); ++j) {
    if (!is_float(po[j])) continue;
    Array fd = (fp[j] - fm[j]) / (2 * eps);
    Array tj = mj::instantiate_zero(to[j], po[j].aval());
    EXPECT_LE(rel_err(tj, fd, 1e-6, 1e-5), 1.0) << "output " << j << "\njvp: " << tj << "\nfd:  " << fd;
  }
}

TEST_P(Conformance, VjpMatchesJvpByDotProduct) {
  const Case& k = c();
  if (!k.differentiable) GTEST_SKIP() << "not differentiable";
  auto t = tangents_for(k, 202);
  auto [po, to] = mj::jvp_flat(k.fn, k.args, t);
  auto vr = mj::vjp_flat(k.fn, k.args);
  std::vector<Array> cts;
  double lhs = 0;
  for (size_t j = 0; j < po.size(); ++j) {
    if (!is_float(po[j])) {
      cts.push_back(Array());
      continue;
    }
    cts.push_back(rnd(po[j].shape(), 303 + uint32_t(j), -1, 1, po[j].dtype()));
    lhs += vdot(cts[j], mj::instantiate_zero(to[j], po[j].aval()));
  }
  auto g = vr.pullback(cts);
  double rhs = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (t[i].defined()) rhs += vdot(g[i], t[i]);
  EXPECT_NEAR(lhs, rhs, 1e-9 * (1 + std::fabs(lhs)));
}

TEST_P(Conformance, SecondOrderMatchesCentralDifferences) {
  const Case& k = c();
  if (!k.differentiable || !k.smooth) GTEST_SKIP() << "not smooth";
  auto t = tangents_for(k, 404);
  auto eager = k.fn(k.args);
  std::vector<Array> cts;
  for (size_t j = 0; j < eager.size(); ++j)
    cts.push_back(is_float(eager[j]) ? rnd(eager[j].shape(), 505 + uint32_t(j), -1, 1, eager[j].dtype())
                                     : Array());
  // G(args) = <pullback(ct), t>: its JVP exercises the JVP rules of the transpose rules.
  mj::FlatFn G = [&](const std::vector<Array>& a) {
    auto vr = mj::vjp_flat(k.fn, a);
    auto g = vr.pullback(cts);
    Array s = mj::scalar(0.0, mj::f64);
    for (size_t i = 0; i < g.size(); ++i)
      if (t[i].defined()) s = s + mj::sum(mj::astype(g[i] * t[i], mj::f64));
    return std::vector<Array>{s};
  };
  auto s = tangents_for(k, 606);
  auto [po, to] = mj::jvp_flat(G, k.args, s);
  const double eps = 1e-5;
  double fd = (G(shifted(k, s, eps))[0].item<double>() - G(shifted(k, s, -eps))[0].item<double>()) / (2 * eps);
  double got = to[0].defined() ? to[0].item<double>() : 0.0;
  EXPECT_NEAR(got, fd, 1e-5 + 1e-4 * std::fabs(fd));
}

// Batch of 3 examples: non-fixed args vary per example; fixed args are shared (unbatched).
TEST_P(Conformance, VmapMatchesLoop) {
  const Case& k = c();
  if (!k.batchable) GTEST_SKIP() << "not batchable";
  const int B = 3;
  std::vector<std::vector<Array>> per(B, k.args);
  std::vector<int64_t> in_axes;
  bool any = false;
  for (size_t i = 0; i < k.args.size(); ++i) {
    if (fixed_arg(k, i)) {
      in_axes.push_back(mj::kNotMapped);
      continue;
    }
    any = true;
    in_axes.push_back(0);
    for (int b = 1; b < B; ++b) {
      const Array& a = k.args[i];
      if (is_float(a)) per[b][i] = a + rnd(a.shape(), 700 + uint32_t(b * 10 + i), -0.1, 0.1, a.dtype());
      else if (a.dtype() == mj::bool_) per[b][i] = (b % 2) ? !a : a;
      else per[b][i] = a;
    }
  }
  if (!any) GTEST_SKIP() << "no batchable argument";
  std::vector<Array> batched;
  for (size_t i = 0; i < k.args.size(); ++i) {
    if (in_axes[i] == mj::kNotMapped) {
      batched.push_back(k.args[i]);
      continue;
    }
    std::vector<Array> xs;
    for (int b = 0; b < B; ++b) xs.push_back(per[b][i]);
    batched.push_back(mj::stack(xs, 0));
  }
  std::vector<std::vector<Array>> expect;
  for (int b = 0; b < B; ++b) expect.push_back(k.fn(per[b]));
  auto check = [&](const std::vector<Array>& got, const char* what) {
    ASSERT_EQ(got.size(), expect[0].size());
    for (size_t j = 0; j < got.size(); ++j) {
      std::vector<Array> xs;
      for (int b = 0; b < B; ++b) xs.push_back(expect[b][j]);
      Array want = mj::stack(xs, 0);
      ASSERT_EQ(got[j].aval().str(), want.aval().str()) << what;
      EXPECT_LE(rel_err(got[j], want, 1e-12, 1e-9), 1.0) << what << " output " << j;
    }
  };
  check(mj::vmap_flat(k.fn, batched, in_axes, {0}), "batch dim 0");
  // The same with the first batched argument's batch dim moved to its last axis.
  for (size_t i = 0; i < k.args.size(); ++i) {
    if (in_axes[i] != 0 || batched[i].ndim() < 2) continue;
    auto moved = batched;
    std::vector<int64_t> perm;
    for (int64_t d = 1; d < batched[i].ndim(); ++d) perm.push_back(d);
    perm.push_back(0);
    moved[i] = mj::transpose(batched[i], perm);
    auto axes = in_axes;
    axes[i] = batched[i].ndim() - 1;
    check(mj::vmap_flat(k.fn, moved, axes, {0}), "batch dim last");
    break;
  }
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  const Case& k = registry()[info.param];
  std::string n = k.prim + (k.label.empty() ? "" : "_" + k.label);
  for (auto& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n + "_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllPrimitives, Conformance,
                         ::testing::Range(size_t(0), registry().size()), case_name);

TEST(Registry, EveryPrimitiveHasACaseOrAnExemption) {
  std::set<std::string> covered;
  for (auto& k : registry()) covered.insert(k.prim);
  for (auto& [n, why] : exemptions()) covered.insert(n);
  for (auto& name : mj::primitive_names())
    EXPECT_TRUE(covered.count(name)) << "primitive '" << name << "' has no conformance case";
}

// The check on one primitive (core/primitive_facts.h: core's rules and classes, the lowering, the
// sharding rule) run on every registered primitive; each missing fact is a failure naming both.
TEST(Registry, EveryPrimitiveHasEachRuleOrDeclaresItsAbsence) {
  const std::vector<std::string> names = mj::primitive_names();
  EXPECT_GT(names.size(), 60u);  // the registry is populated (the library's static initializers ran)
  for (auto& name : names)
    for (const std::string& missing : mj::detail::missing_facts(mj::primitive(name))) ADD_FAILURE() << missing;
}

}  // namespace
}  // namespace conformance
