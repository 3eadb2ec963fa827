// minijax float0 sweep: every primitive that accepts or returns an integer or boolean value,
// differentiated at rank 0 and 1, eagerly and under jit, inside and outside grad, vs f64 differences.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "autodiff/float0_sweep.h"

namespace float0_sweep {
namespace {

using Fn = std::function<Array(const Array&)>;

// The entry's program out(x, op(in(x))): eager, or with op under jit (a call whose operands and
// results are int/bool, so their tangents are float0) inside a jitted program (where the int/bool
// values are intermediates: residuals of the call's JVP).
Fn program(const Float0Entry& e, bool jitted) {
  if (!jitted) return [e](const Array& x) { return e.out(x, e.op(e.in(x))); };
  auto op = mj::jit(e.op);
  return mj::jit([e, op](const Array& x) { return e.out(x, op(e.in(x))); });
}

// While installed, call equations bound on concrete operands (what grad or jvp of a jit binds)
// are checked and then evaluated by eval_jaxpr instead of being compiled: each distinct
// program costs the compiler about 0.3 s, far beyond this sweep's budget (the compiler's handling
// of every primitive is the conformance suite's, tests/conformance/compiled_check.cc; the
// hand-written cases in test_float0.cc run compiled). The check is what makes compiling the call
// safe: the body that would be compiled has no float0 variable or literal, and prints (the
// compile-cache key).
class CheckedCalls {
 public:
  CheckedCalls() : saved_(mj::pjit_executor()) {
    bodies_with_float0().clear();
    mj::set_pjit_executor(&run);
  }
  ~CheckedCalls() { mj::set_pjit_executor(saved_); }
  CheckedCalls(const CheckedCalls&) = delete;
  CheckedCalls& operator=(const CheckedCalls&) = delete;
  static std::vector<std::string>& bodies_with_float0() {
    static std::vector<std::string> v;
    return v;
  }
  // jit(f)(x) at top level, the same way: f staged into one program, checked, then evaluated.
  static Array staged(const Fn& f, const Array& x) {
    mj::ClosedJaxpr j = mj::make_jaxpr(f)(x);
    return run(std::make_shared<mj::ClosedJaxpr>(j), "jit", {x}).at(0);
  }

 private:
  static std::vector<Array> run(const mj::ClosedJaxprPtr& body, const std::string& name, const std::vector<Array>& args) {
    std::string text = mj::to_string(*body);
    if (text.find("float0") != std::string::npos) bodies_with_float0().push_back(name + ": " + text);
    return mj::eval_jaxpr(*body, args);
  }
  mj::PjitExecutor saved_;
};

std::vector<double> vals(const Array& a) {
  Array f = mj::astype(a, mj::f64);
  return std::vector<double>(f.data<double>(), f.data<double>() + f.size());
}

// The oracle: central finite differences of the eager program in float64 (step h = 1e-3; the
// sweep's points are at least 0.1 from every jump of the int/bool values, so no step crosses one).
struct Oracle {
  std::vector<double> d1, d2;          // dF[v] and d2F[v, v] (per output element)
  std::vector<double> grad, hv, hess;  // of S = sum(F): gradient, H v and H (row-major)
};

Oracle oracle(const Fn& f, const Array& x32, const Array& v32) {
  const double h = 1e-3;
  const std::vector<double> x = vals(x32), v = vals(v32);
  const size_t n = x.size();
  auto F = [&](const std::vector<double>& dx) {
    std::vector<double> p = x;
    for (size_t i = 0; i < n; ++i) p[i] += dx[i];
    return vals(f(mj::array(p, x32.shape(), mj::f64)));
  };
  auto S = [&](std::vector<std::pair<size_t, double>> steps) {
    std::vector<double> d(n, 0.0);
    for (auto [i, a] : steps) d[i] += a;
    double s = 0;
    for (double y : F(d)) s += y;
    return s;
  };
  std::vector<double> hv(n), mhv(n);
  for (size_t i = 0; i < n; ++i) hv[i] = h * v[i], mhv[i] = -h * v[i];
  const std::vector<double> fp = F(hv), fm = F(mhv), f0 = F(std::vector<double>(n, 0.0));
  Oracle o;
  for (size_t k = 0; k < f0.size(); ++k) {
    o.d1.push_back((fp[k] - fm[k]) / (2 * h));
    o.d2.push_back((fp[k] - 2 * f0[k] + fm[k]) / (h * h));
  }
  for (size_t i = 0; i < n; ++i) o.grad.push_back((S({{i, h}}) - S({{i, -h}})) / (2 * h));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      o.hess.push_back((S({{i, h}, {j, h}}) - S({{i, h}, {j, -h}}) - S({{i, -h}, {j, h}}) + S({{i, -h}, {j, -h}})) /
                       (4 * h * h));
  for (size_t i = 0; i < n; ++i) {
    double s = 0;
    for (size_t j = 0; j < n; ++j) s += o.hess[i * n + j] * v[j];
    o.hv.push_back(s);
  }
  return o;
}

// f32 derivatives vs the f64 oracle: a few f32 roundings per step plus the differences' O(h^2).
void expect_near(const Array& got, const std::vector<double>& want, const std::string& what) {
  std::vector<double> g = vals(got);
  ASSERT_EQ(g.size(), want.size()) << what << ": got " << got.aval().str();
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], want[i], 2e-3 * (1 + std::fabs(want[i]))) << what << ", element " << i;
}

// One entry at rank 0 or 1, its program eager or jitted: forward over forward (jvp of jvp),
// forward over reverse (jvp of grad of the sum), the Hessian, and — for the eager program — the
// whole derivative staged as one program.
void check_entry(const Float0Entry& e, int rank, bool jitted) {
  // Points at least 0.1 from the jumps of floor(2x), x > 0.25 and the entries' other thresholds.
  const Array x = rank == 0 ? mj::scalar(-0.6, mj::f32) : mj::array({0.8, -1.3, 2.1}, {3}, mj::f32);
  const Array v = rank == 0 ? mj::scalar(0.7, mj::f32) : mj::array({0.3, -0.5, 0.9}, {3}, mj::f32);
  const Oracle o = oracle(program(e, false), x, v);
  const Fn f = program(e, jitted);
  auto S = [f](const Array& y) { return mj::sum(f(y)); };
  auto ff = [&](const Array& y) { return mj::jvp([&](const Array& z) { return mj::jvp(f, z, v).second; }, y, v); };
  if (e.forward_over_forward) {
    auto [d1, d2] = ff(x);  // the primal is dF[v], the tangent d2F[v, v]
    expect_near(d1, o.d1, "jvp");
    expect_near(d2, o.d2, "jvp of jvp");
  }
  if (e.reverse) {
    auto [g, hv] = mj::jvp(mj::grad(S), x, v);  // the primal is grad S, the tangent H v
    expect_near(g, o.grad, "grad");
    expect_near(hv, o.hv, "jvp of grad");
    expect_near(mj::hessian(S)(x), o.hess, "hessian");
  }
  if (!jitted) {  // the whole derivative staged: the int/bool values are variables of one program
    if (e.reverse)
      expect_near(CheckedCalls::staged([&](const Array& y) { return mj::jvp(mj::grad(S), y, v).second; }, x), o.hv,
                  "jit(jvp of grad)");
    if (e.forward_over_forward)
      expect_near(CheckedCalls::staged([&](const Array& y) { return ff(y).second; }, x), o.d2, "jit(jvp of jvp)");
  }
}

struct Param {
  int rank;
  bool jitted;
};

void PrintTo(const Param& p, std::ostream* os) { *os << "rank " << p.rank << (p.jitted ? ", jitted" : ", eager"); }

class Float0Sweep : public ::testing::TestWithParam<Param> {};

// Every entry (one test per rank and mode rather than per entry: a test process costs more than
// an entry's checks; each failure names its entry).
TEST_P(Float0Sweep, DerivativesMatchFiniteDifferences) {
  for (const Float0Entry& e : entries()) {
    const std::string name = e.prim + (e.label.empty() ? "" : "/" + e.label);
    SCOPED_TRACE(name);
    CheckedCalls calls;
    try {
      check_entry(e, GetParam().rank, GetParam().jitted);
    } catch (const std::exception& err) {
      ADD_FAILURE() << name << " throws: " << err.what();
    }
    for (auto& b : CheckedCalls::bodies_with_float0()) ADD_FAILURE() << name << ": a call body with float0: " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(RanksAndJit, Float0Sweep,
                         ::testing::Values(Param{0, false}, Param{0, true}, Param{1, false}, Param{1, true}),
                         [](const ::testing::TestParamInfo<Param>& i) {
                           return "rank" + std::to_string(i.param.rank) + (i.param.jitted ? "_jit" : "_eager");
                         });

bool stages(const mj::Jaxpr& j, const std::string& prim) {
  for (auto& eq : j.eqns) {
    if (eq.primitive->name == prim) return true;
    for (auto& [k, p] : eq.params.items()) {
      if (auto* cj = std::get_if<mj::ClosedJaxprPtr>(&p); cj && *cj && stages(*(*cj)->jaxpr, prim)) return true;
      if (auto* cjs = std::get_if<std::vector<mj::ClosedJaxprPtr>>(&p))
        for (auto& c : *cjs)
          if (c && stages(*c->jaxpr, prim)) return true;
    }
  }
  return false;
}

// The table is enumerated against the registry: every registered primitive has an entry, or
// accepts no int/bool value (its shape rule refuses them: checked here), or is exempt with a
// reason; and every entry's program really stages its primitive.
TEST(Float0SweepTable, CoversEveryPrimitiveThatMeetsAnIntOrBool) {
  std::set<std::string> covered, fo(float_only().begin(), float_only().end()), ex;
  for (auto& e : entries()) covered.insert(e.prim);
  for (auto& [n, why] : exempt()) ex.insert(n);
  for (const std::string& n : mj::primitive_names())
    if (n.rfind("test_", 0) != 0)  // primitives that other tests of this binary register
      EXPECT_EQ(covered.count(n) + fo.count(n) + ex.count(n), 1u)
          << n << ": give it a float0 sweep entry, or list it as float-only or exempt (exactly one)";
  for (const std::string& n : float_only()) {
    const size_t arity =
        n == "atan2" || n == "nextafter" || n == "polygamma" || n == "igamma" || n == "igamma_grad_a" ||
                n == "triangular_solve"
            ? 2
            : 1;
    for (mj::DType d : {mj::i32, mj::u32, mj::bool_}) {
      std::vector<mj::ShapedArray> avals(arity, mj::ShapedArray{{3}, d});
      EXPECT_THROW(mj::abstract_eval(mj::primitive(n), avals, mj::Params{}, std::source_location::current()),
                   mj::TypeError)
          << n << " accepts " << avals[0].str() << ": it needs a float0 sweep entry";
    }
  }
  for (auto& e : entries()) {
    for (Array x : {mj::scalar(-0.6, mj::f32), mj::array({0.8, -1.3, 2.1}, {3}, mj::f32)}) {
      mj::ClosedJaxpr j = mj::make_jaxpr(program(e, false))(x);
      EXPECT_TRUE(stages(*j.jaxpr, e.prim)) << e.prim << "/" << e.label << " does not stage it:\n" << mj::to_string(j);
    }
  }
}

}  // namespace
}  // namespace float0_sweep
