// minijax compiler-pass tests: helpers shared by test_inline_calls, test_simplify and test_fuse.
// Owns random inputs with special values, bitwise comparison, eager runs and equation counts.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/bodies.h"
#include "core/verify.h"

namespace passtest {

using mj::Array;

/// An identity primitive with an "io" effect (test-only, registered on first use).
inline const mj::Primitive& io_effect_p() {
  static const mj::Primitive& p = []() -> const mj::Primitive& {
    auto& q = mj::get_or_create_primitive("test_jit_io");
    q.shape_rule = [](const std::vector<mj::ShapedArray>& in, const mj::Params&) { return in; };
    q.impl = [](const std::vector<Array>& a, const mj::Params&, const std::vector<mj::ShapedArray>&) { return a; };
    q.multiple_results = true;
    q.effects = {"io"};
    return q;
  }();
  return p;
}

/// Parses a jaxpr written in the printer's format (the test primitives registered first).
inline mj::Jaxpr parse(const std::string& text) {
  (void)io_effect_p();
  return *mj::parse_jaxpr(text).jaxpr;
}

/// Deterministic values of `shape` (std::mt19937, independent of minijax's PRNG): uniform in
/// [-2, 2), with -0.0, +0.0, NaN, +inf and -inf planted at the first positions when `specials`.
inline Array random_array(const mj::Shape& shape, uint32_t seed, mj::DType dt = mj::f32,
                          bool specials = true) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> v(size_t(mj::shape_size(shape)));
  for (auto& x : v) x = u(g);
  if (specials) {
    const double sp[] = {-0.0, 0.0, std::numeric_limits<double>::quiet_NaN(),
                         std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
    for (size_t i = 0; i < v.size() && i < 5; ++i) v[(i * 7919 + seed) % v.size()] = sp[i];
  }
  return mj::array(v, shape, dt);
}

/// Random arrays for every invar of j (seeded by `seed` and the position).
inline std::vector<Array> random_args(const mj::Jaxpr& j, uint32_t seed, bool specials = true) {
  std::vector<Array> r;
  for (size_t i = 0; i < j.invars.size(); ++i) {
    const auto& a = j.invars[i].aval();
    Array x = random_array(a.shape, seed * 131 + uint32_t(i), mj::is_floating(a.dtype) ? a.dtype : mj::f32, specials);
    if (!mj::is_floating(a.dtype)) x = mj::lax::convert_element_type(x, a.dtype);
    if (a.memory_kind != mj::MemoryKind::device) x = mj::lax::device_put(x, a.memory_kind);
    r.push_back(x);
  }
  return r;
}

/// Eager evaluation of j (with constants `consts`) on args.
inline std::vector<Array> run(const mj::Jaxpr& j, const std::vector<Array>& consts,
                              const std::vector<Array>& args) {
  return mj::eval_jaxpr(j, consts, args);
}

/// Expects the two result lists to be equal bit for bit (dtype, shape, every byte).
inline void expect_bitwise_equal(const std::vector<Array>& a, const std::vector<Array>& b,
                                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].dtype(), b[i].dtype()) << what << " result " << i;
    ASSERT_EQ(a[i].shape(), b[i].shape()) << what << " result " << i;
    const size_t n = size_t(a[i].aval().nbytes());
    if (n == 0) continue;
    const auto* pa = static_cast<const unsigned char*>(a[i].raw_data());
    const auto* pb = static_cast<const unsigned char*>(b[i].raw_data());
    size_t bad = 0;
    while (bad < n && pa[bad] == pb[bad]) ++bad;
    EXPECT_EQ(bad, n) << what << " result " << i << " differs at byte " << bad;
  }
}

/// Evaluates `before` and `after` (same constants, same random inputs) for several seeds and
/// expects bitwise-equal results.
inline void expect_same_values(const mj::Jaxpr& before, const mj::Jaxpr& after,
                               const std::vector<Array>& consts, const std::string& what,
                               bool specials = true, int seeds = 3) {
  // Both sides evaluated op by op: a pjit left in `before` must not run compiled (its
  // transcendental functions are within a few ulp of eager's, not bit-equal).
  struct Eager {
    mj::PjitExecutor saved = mj::pjit_executor();
    Eager() { mj::set_pjit_executor(nullptr); }
    ~Eager() { mj::set_pjit_executor(saved); }
  } eager;
  for (int s = 1; s <= seeds; ++s) {
    auto args = random_args(before, uint32_t(s), specials);
    expect_bitwise_equal(run(before, consts, args), run(after, consts, args), what + " seed " + std::to_string(s));
  }
}

/// Visits every equation of j and, recursively, of its nested jaxprs (`into_fusions`: also
/// inside fusion bodies). `depth` is 0 at the top level.
inline void visit_eqns(const mj::Jaxpr& j, const std::function<void(const mj::Eqn&, int depth, bool in_fusion)>& f,
                       int depth = 0, bool in_fusion = false) {
  for (const auto& e : j.eqns) {
    f(e, depth, in_fusion);
    const bool fus = in_fusion || e.primitive->name == "fusion";
    for (auto& [k, v] : e.params.items()) {
      if (auto* cj = std::get_if<mj::ClosedJaxprPtr>(&v)) {
        if (*cj && (*cj)->jaxpr) visit_eqns(*(*cj)->jaxpr, f, depth + 1, fus);
      } else if (auto* cjs = std::get_if<std::vector<mj::ClosedJaxprPtr>>(&v)) {
        for (auto& c : *cjs)
          if (c && c->jaxpr) visit_eqns(*c->jaxpr, f, depth + 1, fus);
      }
    }
  }
}

/// Number of equations of primitive `name` anywhere in j (nested jaxprs included).
inline int count_eqns(const mj::Jaxpr& j, const std::string& name) {
  int n = 0;
  visit_eqns(j, [&](const mj::Eqn& e, int, bool) { n += e.primitive->name == name; });
  return n;
}

/// The top-level fusion equations of j, in order.
inline std::vector<const mj::Eqn*> top_fusions(const mj::Jaxpr& j) {
  std::vector<const mj::Eqn*> r;
  for (auto& e : j.eqns)
    if (e.primitive->name == "fusion") r.push_back(&e);
  return r;
}

inline const mj::Jaxpr& body_of(const mj::Eqn& e) { return *mj::subjaxprs(e).at(0).jaxpr->jaxpr; }

/// Number of equations of primitive `name` in the body of fusion f.
inline int count_in(const mj::Eqn& f, const std::string& name) { return count_eqns(body_of(f), name); }

}  // namespace passtest
