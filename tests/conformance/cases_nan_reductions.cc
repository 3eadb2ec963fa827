// minijax conformance cases: NaN through reduce_max/reduce_min (lax and the public max/min) and
// argmax/argmin, plus their expected values (JAX's semantics) checked eagerly and compiled.
//
// JAX's semantics (the oracle below): lax.reduce_max/reduce_min and jnp.max/jnp.min give NaN when
// the reduced slice holds a NaN (XLA's max/min propagate NaN); jnp.argmax/jnp.argmin give the
// index of the first NaN if there is one (jax/_src/lax/lax.py _argminmax: the comparator picks a
// NaN over any number and the smaller index among NaNs), else the first index of the extreme value.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Rows with a NaN in the middle, first, last, two NaNs, only -inf, ties without NaN, +-inf with NaN.
const std::vector<double> kRows = {
    1,     kNaN, 3,     2,     0,     -1,     //
    kNaN,  5,    7,     kNaN,  1,     2,      //
    4,     2,    9,     1,     3,     kNaN,   //
    -kInf, -kInf, -kInf, -kInf, -kInf, -kInf,  //
    2,     8,    -3,    8,     -3,    0.5,    //
    kInf,  -kInf, kNaN, kNaN,  kInf,  0,      //
};

// [2, 1000]: a NaN at 777 (inside the kernels' vector loop) and one at 998 (in their lane tail).
std::vector<double> long_rows() {
  std::vector<double> v(2000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i)) * 10;
  v[777] = kNaN;
  v[1000 + 998] = kNaN;
  return v;
}

Array rows(mj::DType dt) { return mj::array(kRows, {6, 6}, dt); }
Array longs(mj::DType dt) { return mj::array(long_rows(), {2, 1000}, dt); }

enum class Op { max, min, argmax, argmin };

// The oracle: JAX's result along `axis` of the row-major [r, c] values v.
std::vector<double> expected(const std::vector<double>& v, int64_t r, int64_t c, int64_t axis, Op op) {
  const int64_t outs = axis == 1 ? r : c, len = axis == 1 ? c : r;
  std::vector<double> res;
  for (int64_t o = 0; o < outs; ++o) {
    auto at = [&](int64_t i) { return v[size_t(axis == 1 ? o * c + i : i * c + o)]; };
    int64_t best = 0;
    for (int64_t i = 0; i < len; ++i) {
      if (std::isnan(at(i))) { best = i; break; }
      const bool better = op == Op::max || op == Op::argmax ? at(i) > at(best) : at(i) < at(best);
      if (better) best = i;
    }
    const bool arg = op == Op::argmax || op == Op::argmin;
    res.push_back(arg ? double(best) : at(best));
  }
  return res;
}

struct NanCase {
  Case c;
  std::vector<double> want;
};

NanCase make(Op op, const std::string& label, bool public_fn, mj::DType dt, bool is_long, int64_t axis) {
  static const char* prims[] = {"reduce_max", "reduce_min", "argmax", "argmin"};
  auto fn = [op, public_fn, axis](const V& a) {
    switch (op) {
      case Op::max: return public_fn ? mj::max(a[0], axis) : lax::reduce_max(a[0], {axis});
      case Op::min: return public_fn ? mj::min(a[0], axis) : lax::reduce_min(a[0], {axis});
      case Op::argmax: return public_fn ? mj::argmax(a[0], axis) : lax::argmax(a[0], axis, mj::i32);
      default: return public_fn ? mj::argmin(a[0], axis) : lax::argmin(a[0], axis, mj::i32);
    }
  };
  Array x = is_long ? longs(dt) : rows(dt);
  std::vector<double> v = is_long ? long_rows() : kRows;
  if (dt == mj::bf16) {  // the oracle sees the values as stored
    Array f = mj::astype(x, mj::f64);
    v.assign(f.data<double>(), f.data<double>() + f.size());
  }
  Case c{prims[int(op)], label, one(fn), {x}, /*differentiable=*/false, /*smooth=*/false};
  return {c, expected(v, x.shape()[0], x.shape()[1], axis, op)};
}

std::vector<NanCase> nan_cases() {
  std::vector<NanCase> r;
  const std::pair<Op, const char*> ops[] = {{Op::max, "max"}, {Op::min, "min"}, {Op::argmax, "argmax"}, {Op::argmin, "argmin"}};
  for (auto [op, name] : ops)
    for (mj::DType dt : {mj::f32, mj::f64, mj::bf16})
      for (int64_t axis : {0, 1}) {
        const std::string tag = std::string("nan_") + mj::dtype_name(dt) + "_axis" + std::to_string(axis);
        r.push_back(make(op, tag, false, dt, false, axis));
        r.push_back(make(op, "jnp_" + std::string(name) + "_" + tag, true, dt, false, axis));
      }
  for (auto [op, name] : ops) r.push_back(make(op, std::string("nan_long_rows_") + name, false, mj::f32, true, 1));
  return r;
}

const std::vector<NanCase>& all() {
  static const std::vector<NanCase> r = nan_cases();
  return r;
}

Add cases([] {
  std::vector<Case> cs;
  for (auto& n : all()) cs.push_back(n.c);
  return cs;
}());

void expect_matches(const Array& got, const std::vector<double>& want, const std::string& what) {
  Array f = mj::astype(got, mj::f64);
  ASSERT_EQ(size_t(f.size()), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = f.data<double>()[i];
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(g)) << what << " [" << i << "] = " << g << ", want NaN";
    else EXPECT_EQ(g, want[i]) << what << " [" << i << "]";
  }
}

// Each case's result, eager and under mj::jit, against JAX's semantics.
TEST(NanReductions, EagerAndCompiledGiveJaxResults) {
  for (auto& n : all()) {
    const std::string what = n.c.prim + " " + n.c.label;
    expect_matches(n.c.fn(n.c.args).at(0), n.want, what + " (eager)");
    auto f = n.c.fn;
    expect_matches(mj::jit([f](const Array& x) { return f({x}).at(0); })(n.c.args[0]), n.want, what + " (jit)");
  }
}

}  // namespace
}  // namespace conformance
