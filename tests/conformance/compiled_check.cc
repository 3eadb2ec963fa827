// minijax conformance suite, compiled: every registry case run under mj::jit against eager, with
// a tolerance table keyed by primitive; jit(grad f), grad(jit f), jit(vmap f) and vmap(jit f)
// against the eager transformations; and a registry-wide check that no primitive is skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "core/views/array_ops.h"
#include "conformance.h"

namespace conformance {
namespace {

// ---- the tolerance table ------------------------------------------------------------------------
//
// What "compiled == eager" means per primitive (docs/compiler.md, "Numerics"):
// - exact: identical bits (NaNs may differ in payload only). Arithmetic (add, sub, mul, div, sqrt:
//   no fast-math, no FMA contraction), comparisons, selects, conversions (integer edge cases
//   included), data movement, integer and bit operations, max/min/argmax/argmin reductions, and
//   reduce_sum: eager and the kernels add in one fixed pairwise order in the same accumulator type
//   (docs/compiler.md, "Numerics").
// - ulp(k): within k units in the last place of eager's element, in the output dtype, with NaN,
//   infinity and the sign of zero matching. Transcendentals are our own polynomials within 4 ulp
//   of f64 libm (tests/jit/test_transcendentals.cc) while eager calls libm in the element type
//   (glibc's f32 functions are within 1-2 ulp of the true result), so k = 4 + 2 covers both.
// - sum: a bound growing with the summed length n (see sum_bound below), for sums in other orders.
// - product: |compiled - eager| <= 2 (n + 1) u |eager| with u the unit roundoff: each side
//   multiplies n factors, each multiplication rounding once, so each has relative error
//   <= gamma_n ~ n u (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., Lemma 3.1;
//   eager multiplies in double and rounds once, which is within this).
// - normwise(T): |compiled - eager| <= T u max|eager| over the output, for programs composed of
//   several primitives (control flow, remat) where cancellation makes element-wise ulps
//   meaningless; T is a few roundings per primitive on the longest path.
enum class Bound { exact, ulp, sum, product, normwise };

struct Rule {
  Bound bound = Bound::exact;
  double k = 0;  ///< ulp(k) or normwise(T)
};

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> t = [] {
    std::map<std::string, Rule> m;
    for (const char* p :
         {"neg", "abs", "sign", "floor", "ceil", "round", "not", "add", "add_any", "sub", "mul", "div", "rem",
          "sqrt", "max", "min", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "select_n", "clamp",
          "convert_element_type", "integer_pow", "stop_gradient", "broadcast_in_dim", "reshape", "squeeze",
          "expand_dims", "transpose", "rev", "slice", "dynamic_slice", "dynamic_update_slice", "concatenate",
          "pad", "gather", "iota", "device_put", "sharding_constraint", "optimization_barrier", "threefry2x32",
          "iota_2x32_shape", "shift_left", "shift_right_logical", "bitcast_convert_type", "reduce_max",
          "reduce_min", "argmax", "argmin", "reduce_sum", "name", "reduce_and", "reduce_or", "reduce_xor",
          "cummax", "cummin"})
      m[p] = {Bound::exact, 0};
    // Bit-level functions: the same bits (core/primitives/elementwise_special.cc).
    for (const char* p : {"is_finite", "nextafter", "population_count", "clz"}) m[p] = {Bound::exact, 0};
    for (const char* p : {"exp",  "log",  "log1p", "expm1", "tanh",  "logistic", "sin",  "cos",
                          "tan",  "erf",  "rsqrt", "pow",   "atan2", "sinh",     "cosh", "asin",
                          "acos", "atan", "asinh", "acosh", "atanh", "cbrt",     "erfc"})
      m[p] = {Bound::ulp, 6};
    // lgamma, digamma, polygamma: eager is long double (correctly rounded but for a few cases), compiled
    // is held to absolute bounds near the zeros and on the reflected negative axis
    // (tests/jit/test_gamma_accuracy.cc holds the bounds of item 8): 64 ulp of eager here.
    for (const char* p : {"lgamma", "digamma", "polygamma"}) m[p] = {Bound::ulp, 64};
    // igamma, igamma_grad_a: eager and compiled are each within 2e-13 relative of mpmath in f64
    // (tests/jit/test_special_accuracy_igamma.cc; std::lgamma against our Stirling series), so they
    // may differ by about 2000 ulp; f32 is computed in f64 on both sides and rounded once.
    for (const char* p : {"igamma", "igamma_grad_a"}) m[p] = {Bound::ulp, 4096};
    // erf_inv: its compiled polynomial is held to 8 ulp of eager (tests/cases/test_prng_threefry.cc).
    m["erf_inv"] = {Bound::ulp, 8};
    // dot_general is the GEMM library's order, cumsum a running sum and scatter_add adds in update
    // order: any order, up to n deep.
    for (const char* p : {"cumsum", "dot_general", "scatter_add"}) m[p] = {Bound::sum, 0};
    // scatter, scatter_min and scatter_max write or select in update order, as eager: exact.
    // scatter_mul multiplies in update order: a product of up to n factors.
    for (const char* p : {"scatter", "scatter_min", "scatter_max"}) m[p] = {Bound::exact, 0};
    m["scatter_mul"] = {Bound::product, 0};
    // A convolution through oneDNN (f32, bf16) sums in its own blocked order, the loop nest in
    // the input's memory order, eager as an im2col GEMM; a window sum through oneDNN is its
    // average times the window's size; select_and_scatter_add through oneDNN's pooling backward
    // adds the windows' contributions in its own order: sums of any order, n deep.
    for (const char* p : {"conv_general_dilated", "reduce_window_sum", "select_and_scatter_add"})
      m[p] = {Bound::sum, 0};
    // Max and min windows select an element: the same one, ties to the first, everywhere.
    for (const char* p : {"reduce_window_max", "reduce_window_min", "select_and_gather_add"})
      m[p] = {Bound::exact, 0};
    // The generic body runs in window order on both sides; its own equations may be
    // transcendentals (ulp bounds), over a few window elements.
    m["reduce_window"] = {Bound::normwise, 16};
    // sort and top_k move elements (the runtime's order is eager's): exact.
    for (const char* p : {"sort", "top_k"}) m[p] = {Bound::exact, 0};
    // The linear-algebra primitives: the runtime calls the eager kernel per matrix
    // (core/linalg_kernels.h), the same bits. The eigh and svd cases check gauge-invariant
    // results, V diag(sin w) V^T and U diag(sin s) V^T, through sin (ulp) and a matmul (sum): a
    // few roundings on the path.
    for (const char* p : {"cholesky", "triangular_solve", "lu", "qr"}) m[p] = {Bound::exact, 0};
    for (const char* p : {"eigh", "svd"}) m[p] = {Bound::normwise, 16};
    m["reduce_prod"] = {Bound::product, 0};
    // cumprod multiplies in f64 in eager's order on both sides (a product bound of the axis's
    // length all the same); cumlogsumexp's steps call the compiled exp/log1p against eager's libm:
    // a few f64 roundings per step, at most n steps deep, each below the running result.
    m["cumprod"] = {Bound::product, 0};
    m["cumlogsumexp"] = {Bound::sum, 0};
    // Bodies of up to 4 steps of tanh(W h + x) (3-term dots) or sin/tanh of a 3-term dot: a few
    // roundings per step and per transcendental, steps contracting (|tanh'| <= 1).
    for (const char* p : {"scan", "checkpoint", "cond", "while"}) m[p] = {Bound::normwise, 16};
    return m;
  }();
  return t;
}

// The number of terms each output element of a sum-like equation adds.
int64_t summed_length(const mj::Eqn& e) {
  const std::string& n = e.primitive->name;
  int64_t len = 1;
  if (e.inputs.empty()) return len;
  const mj::Shape& s = mj::atom_aval(e.inputs[0]).shape;
  if (n == "reduce_sum" || n == "reduce_prod") {
    for (int64_t a : mj::reduce_params(e).axes) len *= s[size_t(a)];
  } else if (n == "cumsum") {
    len = s[size_t(mj::cumsum_params(e).axis)];
  } else if (n == "cumprod" || n == "cumlogsumexp") {
    len = s[size_t(mj::cumulative_params(e).axis)];
  } else if (n == "dot_general") {
    for (int64_t a : mj::lax::dot_dimension_numbers(e.params).lhs_contracting) len *= s[size_t(a)];
  } else if (n == "scatter_add") {
    len = mj::atom_aval(e.inputs.at(1)).size() + 1;  // every update may land on one row
  } else if (n == "conv_general_dilated") {
    const auto p = mj::conv_params(e);
    const mj::Shape& r = mj::atom_aval(e.inputs.at(1)).shape;
    len = r[size_t(p.rhs_spec[1])];  // input features per group, times the window
    for (size_t i = 2; i < p.rhs_spec.size(); ++i) len *= r[size_t(p.rhs_spec[i])];
    len = len * p.batch_group_count + 1;
  } else if (n == "reduce_window_sum" || n == "select_and_scatter_add") {
    const auto& w = n == "reduce_window_sum" ? mj::reduce_window_monoid_params(e).window
                                             : mj::select_and_window_params(e).window;
    for (int64_t d : w.window_dimensions) len *= d;  // a window's elements, or the windows one element is in
    len += 1;
  }
  return len;
}

// The longest sum of the case's primitive in its program (1 when it has none).
int64_t case_length(const Case& k) {
  auto cj = mj::make_jaxpr([&](const std::vector<Array>& a) { return k.fn(a); })(k.args);
  int64_t n = 1;
  for (auto& e : cj.jaxpr->eqns)
    if (e.primitive->name == k.prim) n = std::max(n, summed_length(e));
  return n;
}

// ---- comparison ---------------------------------------------------------------------------------

struct Numerics {
  int digits = 53, min_exp = -1021;  // frexp exponent of the smallest normal
};
Numerics numerics(mj::DType d) {
  if (d == mj::f32) return {24, -125};
  if (d == mj::bf16) return {8, -125};
  return {53, -1021};
}
double unit_roundoff(mj::DType d) { return std::ldexp(1.0, -numerics(d).digits); }
double ulp_of(double v, mj::DType d) {
  Numerics n = numerics(d);
  int e = n.min_exp;
  if (v != 0 && std::isfinite(v)) std::frexp(v, &e);
  return std::ldexp(1.0, std::max(e, n.min_exp) - n.digits);
}

// The rounding depth of a sum of n terms in any order (a GEMM, a running sum): at most n.
double depth(int64_t n) { return double(n); }

// |compiled - eager| <= (2 m + 4) u S with m = depth(n), S = sum of |terms| (the same program on
// |arguments|: every term of a sum, dot or scatter is a product of arguments' elements).
// Any summation order whose deepest term goes through m additions errs by at most (m - 1) u S
// to first order (Higham, eq. 4.3 and its proof, which holds for any order), on either side; a
// dot's products add one rounding per term; the sum of both sides' bounds is below (2 m + 4) u S.
double sum_bound(int64_t n, double u, double s) { return (2 * depth(n) + 4) * u * s; }

std::vector<double> as_f64(const Array& a) {
  Array f = mj::astype(a, mj::f64);
  const double* p = f.data<double>();
  return std::vector<double>(p, p + f.size());
}

bool same_bits(const Array& a, const Array& b, int64_t i) {
  const size_t w = mj::itemsize(a.dtype());
  return std::memcmp(static_cast<const char*>(a.raw_data()) + size_t(i) * w,
                     static_cast<const char*>(b.raw_data()) + size_t(i) * w, w) == 0;
}

// Whether compiled element a is within rule r of eager's b (floating; s: S of a sum's element).
bool element_ok(double a, double b, const Rule& r, mj::DType d, int64_t n, double s) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  const double diff = std::fabs(a - b), u = unit_roundoff(d);
  switch (r.bound) {
    case Bound::exact: return false;  // bits compared by the caller
    case Bound::ulp: return diff <= r.k * ulp_of(b, d) && std::signbit(a) == std::signbit(b);
    case Bound::sum: return diff <= sum_bound(n, u, s);
    case Bound::product: return diff <= 2 * double(n + 1) * u * std::fabs(b);
    case Bound::normwise: return diff <= r.k * u * s;
  }
  return false;
}

// Checks one output; `scale` (for Bound::sum) holds S per element. Returns "" or the first failures.
std::string mismatch(const Array& got, const Array& want, const Rule& r, int64_t n, const Array* scale) {
  if (got.aval().str() != want.aval().str()) return "aval " + got.aval().str() + " vs eager " + want.aval().str();
  std::ostringstream err;
  err.precision(17);
  const bool fl = mj::is_floating(want.dtype());
  auto x = as_f64(got), y = as_f64(want);
  std::vector<double> s = scale ? as_f64(*scale) : std::vector<double>{};
  double top = 0;  // normwise: the output's largest finite magnitude
  for (double v : y)
    if (std::isfinite(v)) top = std::max(top, std::fabs(v));
  int bad = 0;
  for (int64_t i = 0; i < got.size() && bad < 4; ++i) {
    const double a = x[size_t(i)], b = y[size_t(i)];
    const bool bits = same_bits(got, want, i) || (fl && std::isnan(a) && std::isnan(b));
    const double si = r.bound == Bound::sum ? s.at(size_t(i)) : top;
    if (bits || (fl && r.bound != Bound::exact && element_ok(a, b, r, want.dtype(), n, si))) continue;
    ++bad;
    err << "  element " << i << ": compiled " << a << " eager " << b << " (diff " << std::fabs(a - b)
        << ", ulp " << (fl ? ulp_of(b, want.dtype()) : 1) << ")\n";
  }
  return err.str();
}

// ---- the checked forms --------------------------------------------------------------------------

bool is_float(const Array& a) { return mj::is_floating(a.dtype()); }
bool fixed_arg(const Case& c, size_t i) { return i < c.fixed.size() && c.fixed[i]; }
bool diff_arg(const Case& c, size_t i) { return is_float(c.args[i]) && !fixed_arg(c, i); }

std::vector<Array> abs_floats(const std::vector<Array>& a) {
  std::vector<Array> r = a;
  for (auto& x : r)
    if (x.defined() && is_float(x)) x = mj::abs(x);
  return r;
}

void expect_outputs(const std::string& what, const std::vector<Array>& got, const std::vector<Array>& want,
                    const Rule& r, int64_t n, const std::vector<Array>& scale = {}) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t j = 0; j < got.size(); ++j) {
    std::string e = mismatch(got[j], want[j], r, n, scale.empty() ? nullptr : &scale[j]);
    EXPECT_TRUE(e.empty()) << what << ", output " << j << " " << want[j].aval().str() << ":\n" << e;
  }
}

// The same batch as test_conformance.cc's VmapMatchesLoop: 3 examples, non-fixed floating
// arguments perturbed per example, bools flipped, fixed arguments shared (unbatched).
struct Batch {
  std::vector<Array> args;
  std::vector<int64_t> in_axes;
  bool any = false;
};
Batch batch_of(const Case& k) {
  const int B = 3;
  Batch bt;
  for (size_t i = 0; i < k.args.size(); ++i) {
    const Array& a = k.args[i];
    if (fixed_arg(k, i)) {
      bt.in_axes.push_back(mj::kNotMapped);
      bt.args.push_back(a);
      continue;
    }
    bt.any = true;
    bt.in_axes.push_back(0);
    std::vector<Array> xs{a};
    for (int b = 1; b < B; ++b) {
      if (is_float(a)) xs.push_back(a + rnd(a.shape(), 700 + uint32_t(b * 10 + i), -0.1, 0.1, a.dtype()));
      else if (a.dtype() == mj::bool_) xs.push_back((b % 2) ? !a : a);
      else xs.push_back(a);
    }
    bt.args.push_back(mj::stack(xs, 0));
  }
  return bt;
}

class CompiledVsEager : public ::testing::TestWithParam<size_t> {
 protected:
  const Case& c() const { return registry()[GetParam()]; }
};

// The value, jit(grad f), grad(jit f), jit(vmap f) and vmap(jit f), in one test per case so each
// process traces and compiles the case's programs once.
TEST_P(CompiledVsEager, ValueGradAndVmap) {
  const Case& k = c();
  auto it = rules().find(k.prim);
  ASSERT_NE(it, rules().end()) << "no tolerance rule for " << k.prim;
  const Rule rule = it->second;
  const int64_t n = case_length(k);
  auto jf = mj::jit(k.fn, std::string("conformance"));
  auto compiled = jf.lower(k.args).compile();
  ASSERT_TRUE(compiled.executable()) << k.prim << ": not compiled (run by the reference executor)";
  auto eager = k.fn(k.args);
  std::vector<Array> scale;
  if (rule.bound == Bound::sum) scale = k.fn(abs_floats(k.args));
  expect_outputs("jit(f)", compiled(k.args), eager, rule, n, scale);

  // Gradients: each is a sum over at most N (the largest array's size) products of a cotangent
  // and primal factors, each factor within the primitive's bound (a few of them per JVP rule:
  // 4 (k + 1) ulp; a composed program's own T), plus the sum's 2 m(N) + 4 roundings; normwise,
  // as cancellation in those sums makes element-wise ulps meaningless.
  int64_t big = 1;
  for (auto& a : k.args) big = std::max(big, a.size());
  for (auto& a : eager) big = std::max(big, a.size());
  const double factors = rule.bound == Bound::normwise ? rule.k : 4 * (rule.k + 1);
  const Rule grad_rule{Bound::normwise, factors + 2 * depth(big) + 4};
  if (k.differentiable) {
    std::vector<Array> cts;
    for (size_t j = 0; j < eager.size(); ++j)
      cts.push_back(is_float(eager[j]) ? rnd(eager[j].shape(), 303 + uint32_t(j), -1, 1, eager[j].dtype()) : Array());
    auto keep_diff = [&](std::vector<Array> g) {
      std::vector<Array> r;
      for (size_t i = 0; i < g.size(); ++i)
        if (diff_arg(k, i)) r.push_back(g[i]);
      return r;
    };
    mj::FlatFn G = [&](const std::vector<Array>& a) { return keep_diff(mj::vjp_flat(k.fn, a).pullback(cts)); };
    auto want = G(k.args);
    expect_outputs("jit(grad f)", mj::jit(G)(k.args), want, grad_rule, big);
    mj::FlatFn J = [&](const std::vector<Array>& a) { return jf(a); };
    expect_outputs("grad(jit f)", keep_diff(mj::vjp_flat(J, k.args).pullback(cts)), want, grad_rule, big);
  }

  // Batching keeps every primitive and its summed lengths: the case's own rule, with S batched too.
  Batch bt = k.batchable ? batch_of(k) : Batch{};
  if (bt.any) {
    mj::FlatFn Vf = [&](const std::vector<Array>& a) { return mj::vmap_flat(k.fn, a, bt.in_axes, {0}); };
    auto want = Vf(bt.args);
    std::vector<Array> vscale;
    if (rule.bound == Bound::sum) vscale = Vf(abs_floats(bt.args));
    expect_outputs("jit(vmap f)", mj::jit(Vf)(bt.args), want, rule, n, vscale);
    mj::FlatFn J = [&](const std::vector<Array>& a) { return jf(a); };
    expect_outputs("vmap(jit f)", mj::vmap_flat(J, bt.args, bt.in_axes, {0}), want, rule, n, vscale);
  }
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  const Case& k = registry()[info.param];
  std::string s = k.prim + (k.label.empty() ? "" : "_" + k.label);
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s + "_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllPrimitives, CompiledVsEager, ::testing::Range(size_t(0), registry().size()),
                         case_name);

// Every registered primitive is either exempt from the suite (conformance.cc exemptions()) or has a
// case and a tolerance rule, so each has a compiled check above, which skips no case: every one
// must compile to an executable (ValueGradAndVmap asserts it), and only its grad and vmap parts
// follow the case's differentiable/batchable flags, as in test_conformance.cc.
TEST(CompiledRegistry, EveryPrimitiveHasACompiledCheck) {
  std::set<std::string> exempt, with_case;
  for (auto& [n, why] : exemptions()) exempt.insert(n);
  for (auto& k : registry()) with_case.insert(k.prim);
  const auto names = mj::primitive_names();
  const std::set<std::string> registered(names.begin(), names.end());
  for (auto& name : names) {
    if (exempt.count(name)) continue;
    EXPECT_TRUE(with_case.count(name)) << "primitive '" << name << "' has no case, so no compiled check";
    EXPECT_TRUE(rules().count(name)) << "primitive '" << name << "' has no compiled tolerance rule";
  }
  for (auto& [name, r] : rules()) EXPECT_TRUE(registered.count(name)) << "rule for unknown primitive " << name;
}

}  // namespace
}  // namespace conformance
