// Tests of the windowed reductions (reduce_window_sum/max/min, the generic reduce_window,
// select_and_scatter_add, select_and_gather_add): values against a naive oracle written here
// from XLA's ReduceWindow definition, monoid detection, ties, DCE and the params' round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include <minijax/minijax.h>

namespace {

using namespace minijax;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

Array make(const Shape& shape, const std::vector<double>& v, DType d = f64) {
  Array a = Array::allocate(ShapedArray{shape, d});
  EXPECT_EQ(int64_t(v.size()), a.size());
  dispatch_dtype(d, [&]<class T>() {
    T* p = a.mutable_data<T>();
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<T, bfloat16>) p[i] = bfloat16(float(v[i]));
      else p[i] = T(v[i]);
    }
  });
  return a;
}
std::vector<double> vals(const Array& a) {
  Array c = a.concrete();
  std::vector<double> r(size_t(c.size()));
  dispatch_dtype(c.dtype(), [&]<class T>() {
    const T* p = c.data<T>();
    for (size_t i = 0; i < r.size(); ++i) {
      if constexpr (std::is_same_v<T, bfloat16>) r[i] = double(float(p[i]));
      else r[i] = double(p[i]);
    }
  });
  return r;
}
// Deterministic values (an LCG), integers in [-9, 9] so that every dtype holds them exactly.
std::vector<double> ints(int64_t n, uint32_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = double(int((seed >> 8) % 19) - 9);
  }
  return v;
}

// ---- the oracle: XLA's ReduceWindow by its definition -------------------------------------------
// openxla.org/xla/operation_semantics#reducewindow: the operand is dilated (base_dilation - 1
// holes between elements), padded (negative padding crops), and each window, window_strides
// apart with window_dilation - 1 holes between its taps, reduces its taps. Here the dilated and
// padded operand is materialized first (each cell: the value and its source index, or a hole).
struct Win {
  Shape dims, strides;
  Pairs pad;
  Shape base, wdil;
};

std::vector<int64_t> unravel(int64_t f, const Shape& s) {
  std::vector<int64_t> i(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    i[d] = f % s[d];
    f /= s[d];
  }
  return i;
}
int64_t ravel(const std::vector<int64_t>& i, const Shape& s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + i[d];
  return f;
}

// The windows of `w` over an operand of shape s: for each output (row-major), the source index
// of each tap in window order (-1: padding or hole). Fills `out_shape`.
std::vector<std::vector<int64_t>> windows(const Shape& s, const Win& w, Shape& out_shape) {
  const size_t r = s.size();
  Shape ps(r);
  for (size_t d = 0; d < r; ++d) ps[d] = (s[d] - 1) * w.base[d] + 1 + w.pad[d].first + w.pad[d].second;
  std::vector<int64_t> cell(size_t(shape_size(ps)), -1);
  for (int64_t f = 0; f < shape_size(s); ++f) {
    auto i = unravel(f, s);
    bool in = true;
    for (size_t d = 0; d < r; ++d) {
      i[d] = i[d] * w.base[d] + w.pad[d].first;
      in = in && i[d] >= 0 && i[d] < ps[d];
    }
    if (in) cell[size_t(ravel(i, ps))] = f;
  }
  out_shape.assign(r, 0);
  for (size_t d = 0; d < r; ++d)
    out_shape[d] = (ps[d] - ((w.dims[d] - 1) * w.wdil[d] + 1)) / w.strides[d] + 1;
  std::vector<std::vector<int64_t>> res;
  for (int64_t o = 0; o < shape_size(out_shape); ++o) {
    auto oi = unravel(o, out_shape);
    std::vector<int64_t> taps;
    for (int64_t k = 0; k < shape_size(w.dims); ++k) {
      auto ki = unravel(k, w.dims);
      std::vector<int64_t> q(r);
      for (size_t d = 0; d < r; ++d) q[d] = oi[d] * w.strides[d] + ki[d] * w.wdil[d];
      taps.push_back(cell[size_t(ravel(q, ps))]);
    }
    res.push_back(taps);
  }
  return res;
}

std::vector<double> oracle_reduce(const std::vector<double>& x, const Shape& s, const Win& w, double init,
                                  const std::function<double(double, double)>& op, Shape& out_shape) {
  std::vector<double> out;
  for (auto& taps : windows(s, w, out_shape)) {
    double acc = init;
    for (int64_t t : taps) acc = op(acc, t < 0 ? init : x[size_t(t)]);
    out.push_back(acc);
  }
  return out;
}

// The source index each window selects: the first maximum (ge) or minimum (le) in window order
// among the operand's elements (never padding); -1 for a window of padding only.
std::vector<int64_t> oracle_select(const std::vector<double>& x, const Shape& s, const Win& w, bool ge,
                                   Shape& out_shape) {
  std::vector<int64_t> sel;
  for (auto& taps : windows(s, w, out_shape)) {
    int64_t best = -1;
    for (int64_t t : taps)
      if (t >= 0 && (best < 0 || (ge ? x[size_t(t)] > x[size_t(best)] : x[size_t(t)] < x[size_t(best)])))
        best = t;
    sel.push_back(best);
  }
  return sel;
}

// The configurations the value tests run (operand [5, 6]).
std::vector<std::pair<std::string, Win>> configs() {
  return {
      {"plain", {{2, 3}, {1, 1}, {{0, 0}, {0, 0}}, {1, 1}, {1, 1}}},
      {"strided", {{2, 2}, {2, 3}, {{0, 0}, {0, 0}}, {1, 1}, {1, 1}}},
      {"padded", {{3, 2}, {2, 1}, {{1, 2}, {2, 0}}, {1, 1}, {1, 1}}},
      {"cropped", {{2, 2}, {1, 2}, {{-1, 0}, {0, -2}}, {1, 1}, {1, 1}}},
      {"base_dilated", {{3, 2}, {1, 2}, {{1, 1}, {0, 1}}, {2, 3}, {1, 1}}},
      {"window_dilated", {{2, 2}, {1, 1}, {{0, 1}, {1, 0}}, {1, 1}, {2, 3}}},
      {"everything", {{2, 3}, {3, 2}, {{2, 1}, {1, 3}}, {2, 2}, {3, 2}}},
  };
}

Array run_monoid(const char* which, const Array& x, const Win& w) {
  const std::string m = which;
  auto f = m == "sum" ? lax::reduce_window_sum : m == "max" ? lax::reduce_window_max : lax::reduce_window_min;
  return f(x, w.dims, w.strides, w.pad, w.base, w.wdil, std::source_location::current());
}

TEST(WindowedReductions, MonoidsMatchTheOracleForEveryConfigAndDtype) {
  const Shape s{5, 6};
  const std::vector<double> x = ints(30, 7);
  for (DType d : {f32, f64, i32})
    for (auto& [name, w] : configs())
      for (const char* m : {"sum", "max", "min"}) {
        SCOPED_TRACE(name + " " + m + " " + dtype_name(d));
        const std::string ms = m;
        const double lowest = d == i32 ? double(std::numeric_limits<int32_t>::lowest()) : -INFINITY;
        const double highest = d == i32 ? double(std::numeric_limits<int32_t>::max()) : INFINITY;
        const double init = ms == "sum" ? 0.0 : ms == "max" ? lowest : highest;
        std::function<double(double, double)> op = [&](double a, double b) {
          return ms == "sum" ? a + b : ms == "max" ? std::max(a, b) : std::min(a, b);
        };
        Shape os;
        const std::vector<double> want = oracle_reduce(x, s, w, init, op, os);
        Array got = run_monoid(m, make(s, x, d), w);
        EXPECT_EQ(got.shape(), os);
        EXPECT_EQ(got.dtype(), d);
        EXPECT_EQ(vals(got), want);
      }
}

TEST(WindowedReductions, PaddingStringsResolveAsJax) {
  // jax.lax.padtype_to_pads: SAME pads (out - 1) * stride + window - in, the extra on the high
  // side; SAME_LOWER on the low side; VALID none. in 5, window 2, stride 2: out 3, total 1.
  const Array x = make({5}, {1, 2, 3, 4, 5});
  EXPECT_EQ(vals(lax::reduce_window_sum(x, {2}, {2}, "SAME")), (std::vector<double>{3, 7, 5}));
  EXPECT_EQ(vals(lax::reduce_window_sum(x, {2}, {2}, "SAME_LOWER")), (std::vector<double>{1, 5, 9}));
  EXPECT_EQ(vals(lax::reduce_window_sum(x, {2}, {2}, "valid")), (std::vector<double>{3, 7}));
  // in 5, window 3 dilated by 2 (5 wide), stride 1: SAME pads 2 and 2 and keeps the size;
  // output i takes the max of x[i - 2], x[i], x[i + 2] (padding: -inf).
  Array y = lax::reduce_window_max(x, {3}, {1}, "SAME", {}, {2});
  EXPECT_EQ(vals(y), (std::vector<double>{3, 4, 5, 4, 5}));
}

TEST(WindowedReductions, SumOfBf16AccumulatesInF32) {
  // 256 + 1 + 1 + ... : bf16 alone would stay at 256 (its spacing there is 2).
  std::vector<double> v(9, 1.0);
  v[0] = 256;
  Array s = lax::reduce_window_sum(make({9}, v, bf16), {9}, {1}, "VALID");
  EXPECT_EQ(vals(s)[0], 264.0);
}

TEST(WindowedReductions, EmptyOperandsGiveIdentityWindowsAndZeroGradients) {
  // f32[0, 2] padded by one row on each side: two windows of padding only per column.
  const Array x = Array::allocate(ShapedArray{{0, 2}, f32});
  const Pairs pad{{1, 1}, {0, 0}};
  EXPECT_EQ(vals(lax::reduce_window_max(x, {1, 1}, {1, 1}, pad)), (std::vector<double>(4, -INFINITY)));
  EXPECT_EQ(vals(lax::reduce_window_sum(x, {1, 1}, {1, 1}, pad)), (std::vector<double>(4, 0.0)));
  EXPECT_EQ(vals(lax::select_and_gather_add(x, x, lax::SelectPrim::ge, {1, 1}, {1, 1}, pad)),
            (std::vector<double>(4, 0.0)));
  auto f = [&](const Array& a) {
    return lax::reduce_sum(lax::reduce_window_sum(a, {1, 1}, {1, 1}, pad), {0, 1});
  };
  EXPECT_EQ(grad(f)(x).shape(), (Shape{0, 2}));
}

// ---- the generic reduce_window -------------------------------------------------------------------

// (value, index) pairs: the body keeps the larger value and, on ties, the smaller index.
std::vector<Array> argmax_body(const std::vector<Array>& acc, const std::vector<Array>& x) {
  Array take = lax::or_(lax::gt(x[0], acc[0]), lax::and_(lax::eq(x[0], acc[0]), lax::lt(x[1], acc[1])));
  return {lax::select_n(take, {acc[0], x[0]}), lax::select_n(take, {acc[1], x[1]})};
}

TEST(WindowedReductions, GenericTwoOperandArgmaxMatchesTheOracle) {
  const Shape s{5, 6};
  const std::vector<double> x = ints(30, 11);
  std::vector<double> idx(30);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = double(i);
  for (auto& [name, w] : configs()) {
    SCOPED_TRACE(name);
    const Array init_v = lax::scalar(-INFINITY, f64), init_i = lax::scalar(1e6, i32);
    auto got = lax::reduce_window({make(s, x), make(s, idx, i32)}, {init_v, init_i}, argmax_body, w.dims,
                                  w.strides, w.pad, w.base, w.wdil);
    Shape os;
    const std::vector<int64_t> sel = oracle_select(x, s, w, true, os);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].shape(), os);
    EXPECT_EQ(got[1].dtype(), i32);
    const auto gv = vals(got[0]), gi = vals(got[1]);
    for (size_t o = 0; o < sel.size(); ++o) {
      EXPECT_EQ(gv[o], sel[o] < 0 ? -INFINITY : x[size_t(sel[o])]) << o;
      EXPECT_EQ(gi[o], sel[o] < 0 ? 1e6 : double(sel[o])) << o;
    }
  }
}

TEST(WindowedReductions, GenericBodyOfAnyClassAgreesWithTheOracle) {
  // A product with init 2 (not a monoid identity: padding multiplies by 2, as in XLA), once with
  // an elementwise body (evaluated over all windows at once) and once with a body holding a
  // reshape (evaluated window by window on scalars).
  const Shape s{4, 5};
  std::vector<double> x = ints(20, 5);
  for (auto& v : x) v = 1 + std::fabs(v) / 8;
  const Win w{{2, 2}, {1, 2}, {{1, 0}, {1, 1}}, {1, 2}, {1, 1}};
  Shape os;
  const auto want = oracle_reduce(x, s, w, 2.0, [](double a, double b) { return a * b; }, os);
  auto mul = [](const Array& a, const Array& b) { return lax::mul(a, b); };
  auto mul_reshaped = [](const Array& a, const Array& b) { return lax::reshape(lax::mul(a, b), {}); };
  for (auto body : {std::function<Array(const Array&, const Array&)>(mul),
                    std::function<Array(const Array&, const Array&)>(mul_reshaped)}) {
    Array got = lax::reduce_window(make(s, x), lax::scalar(2.0, f64), body, w.dims, w.strides, w.pad, w.base,
                                   w.wdil);
    EXPECT_EQ(got.shape(), os);
    const auto g = vals(got);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-12 * std::fabs(want[i])) << i;
  }
}

std::string jaxpr_of(const std::function<Array(const Array&)>& f, const Array& x) {
  return to_string(*make_jaxpr(f)(x).jaxpr);
}

TEST(WindowedReductions, MonoidBodiesWithTheirIdentityBindTheMonoidPrimitive) {
  const Array x = make({4, 4}, ints(16, 3));
  auto rw = [](double init, Array (*op)(const Array&, const Array&, SL)) {
    return [init, op](const Array& a) {
      return lax::reduce_window(
          a, lax::scalar(init, f64), [op](const Array& u, const Array& v) { return op(u, v, SL::current()); },
          {2, 2}, {1, 1}, "VALID");
    };
  };
  EXPECT_NE(jaxpr_of(rw(0.0, lax::add), x).find("reduce_window_sum["), std::string::npos);
  EXPECT_NE(jaxpr_of(rw(-INFINITY, lax::max), x).find("reduce_window_max["), std::string::npos);
  EXPECT_NE(jaxpr_of(rw(INFINITY, lax::min), x).find("reduce_window_min["), std::string::npos);
  // Another init value, or another body, is the generic primitive with its body.
  const std::string add1 = jaxpr_of(rw(1.0, lax::add), x);
  EXPECT_NE(add1.find("reduce_window["), std::string::npos) << add1;
  EXPECT_EQ(add1.find("reduce_window_sum"), std::string::npos) << add1;
  EXPECT_NE(jaxpr_of(rw(1.0, lax::mul), x).find("reduce_window["), std::string::npos);
  // The generic sum with init 1 starts each window at 1: the monoid's sums plus one.
  const Array s0 = rw(0.0, lax::add)(x), s1 = rw(1.0, lax::add)(x);
  const auto a = vals(s0), b = vals(s1);
  ASSERT_EQ(a.size(), 9u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(b[i], a[i] + 1);
}

TEST(WindowedReductions, GenericReduceWindowHasAJvpButNoVjp) {
  // JAX v0.7.0: reduce_window_jvp exists; no transpose, so reverse mode raises.
  const Array x = make({5}, {1.0, 2.0, 0.5, 3.0, 1.5});
  auto prod = [](const Array& a) {
    return lax::reduce_window(
        a, lax::scalar(1.0, f64), [](const Array& u, const Array& v) { return lax::mul(u, v); }, {2}, {1},
        "VALID");
  };
  auto [out, tan] = jvp_flat([&](const std::vector<Array>& a) { return std::vector<Array>{prod(a[0])}; }, {x},
                             {make({5}, {1, 0, 0, 0, 0})});
  // d(x0 x1)/dx0 = x1 = 2 in window 0, nothing elsewhere.
  EXPECT_EQ(vals(tan[0]), (std::vector<double>{2, 0, 0, 0}));
  try {
    grad([&](const Array& a) { return lax::reduce_sum(prod(a), {0}); })(x);
    FAIL() << "expected NotDifferentiableError";
  } catch (const NotDifferentiableError& e) {
    EXPECT_NE(e.message().find("reduce_window"), std::string::npos) << e.message();
  }
}

TEST(WindowedReductions, GenericJvpRefusesAnInitValueTangentAsJaxDoes) {
  // JAX v0.7.0 reduce_window_jvp: "reduce_window jvp does not support non-zero init_value_tangent".
  const Array x = make({4}, {1.0, 2.0, 3.0, 4.0});
  auto f = [](const std::vector<Array>& a) {
    return std::vector<Array>{lax::reduce_window(
        a[0], a[1], [](const Array& u, const Array& v) { return lax::mul(u, v); }, {2}, {1}, "VALID")};
  };
  try {
    jvp_flat(f, {x, lax::scalar(1.0, f64)}, {make({4}, {0, 0, 0, 0}), lax::scalar(1.0, f64)});
    FAIL() << "expected NotDifferentiableError";
  } catch (const NotDifferentiableError& e) {
    EXPECT_NE(e.message().find("reduce_window"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("init value"), std::string::npos) << e.message();
  }
}

TEST(WindowedReductions, DceDropsTheOperandsOfUnusedAccumulators) {
  // (sum of a, product of b) in one reduce_window; only the sum is used: b and its init go.
  auto f = [](const Array& a, const Array& b) {
    return lax::reduce_window(
        {a, b}, {lax::scalar(0.0, f64), lax::scalar(1.0, f64)},
        [](const std::vector<Array>& acc, const std::vector<Array>& x) {
          return std::vector<Array>{lax::add(acc[0], x[0]), lax::mul(acc[1], x[1])};
        },
        {2}, {1}, "VALID");
  };
  const Array a = make({4}, {1, 2, 3, 4}), b = make({4}, {2, 2, 2, 2});
  ClosedJaxpr cj = make_jaxpr(f)(a, b);
  auto [pruned, used] = dce_jaxpr(*cj.jaxpr, {true, false});
  EXPECT_TRUE(used[0]);
  EXPECT_FALSE(used[1]);
  ASSERT_EQ(pruned.eqns.size(), 1u);
  EXPECT_EQ(pruned.eqns[0].inputs.size(), 2u);
  EXPECT_EQ(pruned.eqns[0].outputs.size(), 1u);
  EXPECT_EQ(vals(eval_jaxpr(pruned, cj.consts, {a})[0]), (std::vector<double>{3, 5, 7}));
}

// ---- ties and the select_and_* primitives -------------------------------------------------------

TEST(WindowedReductions, TiesInAMaxWindowGoToTheFirstElement) {
  // Windows of 2x2 over a 2x4 operand with two ties: the cotangent goes to the first maximum in
  // window order (row-major), as XLA's ge selector keeps the current choice on equality.
  const Array x = make({2, 4}, {5, 1, 2, 7, 5, 5, 7, 0});
  auto f = [](const Array& a) {
    return lax::reduce_sum(lax::reduce_window_max(a, {2, 2}, {1, 2}, "VALID"), {0, 1});
  };
  EXPECT_EQ(vals(grad(f)(x)), (std::vector<double>{1, 0, 0, 1, 0, 0, 0, 0}));
  auto g = [](const Array& a) {
    return lax::reduce_sum(lax::reduce_window_min(a, {2, 2}, {1, 1}, "VALID"), {0, 1});
  };
  // Windows at columns 0..2: min 1 at (0,1); min 1 at (0,1); min 0 at (1,3).
  EXPECT_EQ(vals(grad(g)(x)), (std::vector<double>{0, 2, 0, 0, 0, 0, 0, 1}));
}

TEST(WindowedReductions, SelectAndScatterAndGatherMatchTheOracle) {
  const Shape s{5, 6};
  const std::vector<double> x = ints(30, 21);  // many ties among 19 values
  const std::vector<double> t = ints(30, 22);
  for (auto& [name, w] : configs())
    for (bool ge : {true, false}) {
      SCOPED_TRACE(name + (ge ? " ge" : " le"));
      Shape os;
      const auto sel = oracle_select(x, s, w, ge, os);
      const std::vector<double> src = ints(shape_size(os), 23);
      std::vector<double> want_gather, want_scatter(30, 0.0);
      for (size_t o = 0; o < sel.size(); ++o) {
        want_gather.push_back(sel[o] < 0 ? 0.0 : t[size_t(sel[o])]);
        if (sel[o] >= 0) want_scatter[size_t(sel[o])] += src[o];
      }
      const lax::SelectPrim p = ge ? lax::SelectPrim::ge : lax::SelectPrim::le;
      for (DType d : {f32, f64}) {
        Array g = lax::select_and_gather_add(make(s, t, d), make(s, x, d), p, w.dims, w.strides, w.pad,
                                             w.base, w.wdil);
        EXPECT_EQ(g.shape(), os);
        EXPECT_EQ(vals(g), want_gather);
        Array sc = lax::select_and_scatter_add(make(os, src, d), make(s, x, d), p, w.dims, w.strides, w.pad,
                                               w.base, w.wdil);
        EXPECT_EQ(sc.shape(), s);
        EXPECT_EQ(vals(sc), want_scatter);
      }
    }
}

TEST(WindowedReductions, GradOfMaxIsTheScatterOfTheOracleSelection) {
  // reduce_window_max's VJP (select_and_gather_add transposed to select_and_scatter_add) with
  // base and window dilation, against the oracle's selection.
  const Shape s{5, 6};
  const std::vector<double> x = ints(30, 31);
  const Win w = configs().back().second;
  Shape os;
  const auto sel = oracle_select(x, s, w, true, os);
  const std::vector<double> ct = ints(shape_size(os), 32);
  std::vector<double> want(30, 0.0);
  for (size_t o = 0; o < sel.size(); ++o)
    if (sel[o] >= 0) want[size_t(sel[o])] += ct[o];
  auto f = [&](const Array& a) {
    return lax::reduce_sum(lax::mul(lax::reduce_window_max(a, w.dims, w.strides, w.pad, w.base, w.wdil),
                                    make(os, ct)),
                           {0, 1});
  };
  EXPECT_EQ(vals(grad(f)(make(s, x))), want);
}

TEST(WindowedReductions, GradOfSumIsTheTransposeOfTheOracle) {
  // d/dx sum(ct * reduce_window_sum(x)) = sum over the windows containing x[i] of ct.
  const Shape s{5, 6};
  for (auto& [name, w] : configs()) {
    SCOPED_TRACE(name);
    Shape os;
    auto taps = windows(s, w, os);
    const std::vector<double> ct = ints(shape_size(os), 41);
    std::vector<double> want(30, 0.0);
    for (size_t o = 0; o < taps.size(); ++o)
      for (int64_t t : taps[o])
        if (t >= 0) want[size_t(t)] += ct[o];
    auto f = [&](const Array& a) {
      return lax::reduce_sum(lax::mul(lax::reduce_window_sum(a, w.dims, w.strides, w.pad, w.base, w.wdil),
                                      make(os, ct)),
                             {0, 1});
    };
    EXPECT_EQ(vals(grad(f)(make(s, ints(30, 1)))), want);
  }
}

TEST(WindowedReductions, VmapFoldsTheBatchIntoTheWindow) {
  const Array xs = make({3, 5, 6}, ints(90, 51));
  const Win w = configs()[4].second;
  auto one = [&](const Array& a) {
    return lax::reduce_window_max(a, w.dims, w.strides, w.pad, w.base, w.wdil);
  };
  Array batched = vmap(one, VmapOptions{{1}, {0}})(lax::transpose(xs, {1, 0, 2}));
  for (int64_t b = 0; b < 3; ++b) EXPECT_EQ(vals(batched[b]), vals(one(xs[b]))) << b;
  // The generic reduce_window with batched init values maps example by example.
  auto gen = [](const Array& a, const Array& init) {
    return lax::reduce_window(
        a, init, [](const Array& u, const Array& v) { return lax::mul(u, v); }, {2}, {1}, "SAME");
  };
  const Array as = make({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), inits = make({2}, {2, 3});
  Array r = vmap(gen)(as, inits);
  // SAME pads one init value on the high side: the last window multiplies by the init.
  EXPECT_EQ(vals(r), (std::vector<double>{4, 12, 24, 16, 90, 126, 168, 72}));
}

TEST(WindowedReductions, ParamsPrintAndParseBack) {
  const Win w = configs().back().second;
  auto f = [&](const Array& a) {
    Array m = lax::reduce_window_max(a, w.dims, w.strides, w.pad, w.base, w.wdil);
    Array g = lax::select_and_gather_add(a, a, lax::SelectPrim::ge, w.dims, w.strides, w.pad, w.base, w.wdil);
    Array sc = lax::select_and_scatter_add(g, a, lax::SelectPrim::le, w.dims, w.strides, w.pad, w.base,
                                           w.wdil);
    Array p = lax::reduce_window(
        a, lax::scalar(1.0, f64), [](const Array& u, const Array& v) { return lax::mul(u, v); }, w.dims,
        w.strides, w.pad, w.base, w.wdil);
    return std::vector<Array>{m, sc, p};
  };
  ClosedJaxpr cj = make_jaxpr(f)(make({5, 6}, ints(30, 61)));
  const std::string text = to_string(*cj.jaxpr);
  for (const char* part :
       {"reduce_window_max[", "base_dilation=(2, 2)", "padding=(2, 1, 1, 3)", "window_dilation=(3, 2)",
        "window_dimensions=(2, 3)", "window_strides=(3, 2)", "select_prim=le", "select_prim=ge",
        "jaxpr={ lambda ; f:f64[] g:f64[]. let h:f64[] = mul f g in (h,) }"})
    EXPECT_NE(text.find(part), std::string::npos) << part << " in " << text;
  ClosedJaxpr back = parse_jaxpr(text);
  EXPECT_EQ(to_string(*back.jaxpr), text);
  // The parsed program computes what the traced one does.
  const Array x = make({5, 6}, ints(30, 62));
  auto a = eval_jaxpr(cj, {x}), b = eval_jaxpr(back, {x});
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(vals(a[i]), vals(b[i])) << i;
}

}  // namespace
