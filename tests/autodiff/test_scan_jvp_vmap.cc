// minijax tests of scan's JVP (nonzero-carry fixpoint) and batching rules: jvp of a scan equals
// jvp of the same loop unrolled in C++, vmap of a scan equals a loop over the batch.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <minijax/minijax.h>

namespace {
using mj::Array;
using mj::kNotMapped;
namespace lax = mj::lax;
using V = std::vector<Array>;

Array rnd(const mj::Shape& s, uint32_t seed, mj::DType dt = mj::f64) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(size_t(mj::shape_size(s)));
  for (auto& x : v) x = u(g);
  return mj::array(v, s, dt);
}

std::vector<double> vals(const Array& a) {
  Array c = lax::convert_element_type(a.concrete(), mj::f64);
  const double* p = c.data<double>();
  return std::vector<double>(p, p + c.size());
}

void expect_close(const Array& a, const Array& b, double tol, const std::string& what) {
  ASSERT_TRUE(a.defined()) << what;
  ASSERT_TRUE(b.defined()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  auto x = vals(a), y = vals(b);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], tol) << what << " element " << i;
}

/// Slice t of xs along axis 0 (by lax ops, so it differentiates and batches).
Array row(const Array& xs, int64_t t) {
  std::vector<int64_t> start(size_t(xs.ndim()), 0), limit = xs.shape();
  start[0] = t;
  limit[0] = t + 1;
  return lax::squeeze(lax::slice(xs, start, limit), {0});
}

/// Stacks equal-shaped arrays along a new axis 0.
Array stack(const V& ys, const mj::ShapedArray& elem) {
  if (ys.empty()) {
    mj::Shape s = elem.shape;
    s.insert(s.begin(), 0);
    return lax::full(s, 0, elem.dtype);
  }
  V e;
  for (auto& y : ys) e.push_back(lax::expand_dims(y, {0}));
  return lax::concatenate(e, 0);
}

// A body over a flat carry and flat x slices, and its scan / unrolled forms.
using Body = std::function<std::pair<V, V>(const V& carry, const V& x)>;

V scan_form(const Body& body, const V& init, const V& xs, mj::ScanOptions opts) {
  auto [c, ys] = mj::scan([&](const V& c, const V& x) { return body(c, x); }, init, xs, opts);
  V out = c;
  out.insert(out.end(), ys.begin(), ys.end());
  return out;
}

V unrolled_form(const Body& body, const V& init, const V& xs, int64_t length, bool reverse,
                const std::vector<mj::ShapedArray>& y_avals) {
  V c = init;
  std::vector<V> ys(y_avals.size(), V(size_t(length)));
  for (int64_t s = 0; s < length; ++s) {
    const int64_t t = reverse ? length - 1 - s : s;
    V x;
    for (auto& a : xs) x.push_back(row(a, t));
    auto [nc, y] = body(c, x);
    c = nc;
    for (size_t j = 0; j < y.size(); ++j) ys[j][size_t(t)] = y[j];
  }
  V out = c;
  for (size_t j = 0; j < ys.size(); ++j) out.push_back(stack(ys[j], y_avals[j]));
  return out;
}

struct Program {
  std::string name;
  Body body;
  V init, xs;
  std::vector<mj::ShapedArray> y_avals;  // element avals of the ys
};

// (1) RNN-like: carry (h [3], s []), x [3], closes over W [3,3]:
//     h' = tanh(W h + x), s' = s + sum(sin(h') * h), y = h' * s.
// (2) Three carries (a, b, k): a's tangent comes from init only; b has a zero init tangent but
//     becomes nonzero through a (fixpoint); k never gets one. y = (a * b, k).
// (3) matmul carry M [2,2], x [2,2]: M' = tanh(M @ x) * 0.5 + M; y = sum(M').
std::vector<Program> programs() {
  std::vector<Program> ps;
  Array W = rnd({3, 3}, 11);
  ps.push_back(Program{"rnn",
                       [W](const V& c, const V& x) {
                         Array h = mj::tanh(mj::matmul(W, c[0]) + x[0]);
                         Array s = c[1] + lax::reduce_sum(mj::sin(h) * c[0], {0});
                         return std::pair{V{h, s}, V{h * c[1]}};
                       },
                       {rnd({3}, 1), rnd({}, 2)}, {rnd({4, 3}, 3)}, {mj::ShapedArray{{3}, mj::f64}}});
  ps.push_back(Program{"fixpoint",
                       [](const V& c, const V& x) {
                         Array a = c[0] * x[0] + mj::sin(c[0]);
                         Array b = mj::tanh(c[1] + c[0] * c[1] + 0.5);
                         Array k = c[2] * 1.5 + 1.0;
                         return std::pair{V{a, b, k}, V{a * b, k}};
                       },
                       {rnd({}, 4), rnd({}, 5), rnd({}, 6)}, {rnd({5}, 7)},
                       {mj::ShapedArray{{}, mj::f64}, mj::ShapedArray{{}, mj::f64}}});
  ps.push_back(Program{"matmul",
                       [](const V& c, const V& x) {
                         Array m = mj::tanh(mj::matmul(c[0], x[0])) * 0.5 + c[0];
                         return std::pair{V{m}, V{lax::reduce_sum(m, {0, 1})}};
                       },
                       {rnd({2, 2}, 8)}, {rnd({3, 2, 2}, 9)}, {mj::ShapedArray{{}, mj::f64}}});
  return ps;
}

/// jvp of the scan vs jvp of the unrolled loop, with the tangents of the inputs in `nz` nonzero.
void check_jvp(const Program& p, const std::vector<bool>& nz, bool reverse, const std::string& label) {
  const size_t nc = p.init.size();
  const int64_t length = p.xs.empty() ? 0 : p.xs[0].shape()[0];
  V primals = p.init;
  primals.insert(primals.end(), p.xs.begin(), p.xs.end());
  V tangents(primals.size());
  for (size_t i = 0; i < primals.size(); ++i)
    if (nz[i]) tangents[i] = rnd(primals[i].shape(), uint32_t(100 + i));
  auto split = [nc](const V& a) { return std::pair{V(a.begin(), a.begin() + std::ptrdiff_t(nc)), V(a.begin() + std::ptrdiff_t(nc), a.end())}; };
  mj::FlatFn fs = [&](const V& a) {
    auto [c, x] = split(a);
    return scan_form(p.body, c, x, {.reverse = reverse});
  };
  mj::FlatFn fu = [&](const V& a) {
    auto [c, x] = split(a);
    return unrolled_form(p.body, c, x, length, reverse, p.y_avals);
  };
  auto [ps, ts] = mj::jvp_flat(fs, primals, tangents);
  auto [pu, tu] = mj::jvp_flat(fu, primals, tangents);
  ASSERT_EQ(ps.size(), pu.size());
  for (size_t i = 0; i < ps.size(); ++i) {
    expect_close(ps[i], pu[i], 1e-12, label + " primal " + std::to_string(i));
    // A symbolic zero on one side is a zero on the other.
    Array a = mj::instantiate_zero(ts[i], ps[i].aval()), b = mj::instantiate_zero(tu[i], pu[i].aval());
    expect_close(a, b, 1e-12, label + " tangent " + std::to_string(i));
  }
}

TEST(ScanJvp, MatchesUnrolledLoop) {
  for (const Program& p : programs()) {
    const size_t n = p.init.size() + p.xs.size();
    // all nonzero, only the first carry, only xs
    std::vector<bool> all(n, true), first(n, false), xs_only(n, false);
    first[0] = true;
    xs_only[n - 1] = true;
    for (bool reverse : {false, true}) {
      const std::string r = reverse ? " reverse" : "";
      check_jvp(p, all, reverse, p.name + " all" + r);
      check_jvp(p, first, reverse, p.name + " first" + r);
      check_jvp(p, xs_only, reverse, p.name + " xs" + r);
    }
  }
}

TEST(ScanJvp, LengthZeroAndOne) {
  for (Program p : programs()) {
    for (int64_t len : {0, 1}) {
      for (auto& x : p.xs) {
        mj::Shape s = x.shape();
        s[0] = len;
        x = rnd(s, 77);
      }
      check_jvp(p, std::vector<bool>(p.init.size() + p.xs.size(), true), false,
                p.name + " length " + std::to_string(len));
    }
  }
}

TEST(ScanJvp, FixpointFindsCarriesMadeNonzeroByTheBody) {
  // Program "fixpoint" with only a's init tangent nonzero: b's tangent becomes nonzero through
  // the body; k's tangent stays a symbolic zero (and so does the ys member k).
  Program p = programs()[1];
  V primals = p.init;
  primals.insert(primals.end(), p.xs.begin(), p.xs.end());
  V tangents(primals.size());
  tangents[0] = mj::scalar(1.0, mj::f64);
  mj::FlatFn fs = [&](const V& a) { return scan_form(p.body, V(a.begin(), a.begin() + 3), V{a[3]}, {}); };
  auto [po, to] = mj::jvp_flat(fs, primals, tangents);
  ASSERT_EQ(to.size(), 5u);
  EXPECT_TRUE(to[0].defined());
  EXPECT_TRUE(to[1].defined());
  EXPECT_FALSE(to[2].defined());  // k
  EXPECT_TRUE(to[3].defined());   // ys a*b
  EXPECT_FALSE(to[4].defined());  // ys k
  // The staged JVP is one scan whose carry holds the 3 primal carries and the 2 nonzero tangents.
  auto j = mj::make_jaxpr([&](const Array& a0, const Array& ta) {
    V prim = primals, tan(primals.size());
    prim[0] = a0;
    tan[0] = ta;
    auto r = mj::jvp_flat(fs, prim, tan);
    return r.second[1];
  })(primals[0], mj::scalar(1.0, mj::f64));
  int scans = 0;
  for (auto& e : j.jaxpr->eqns)
    if (e.primitive->name == "scan") ++scans;
  EXPECT_GE(scans, 1);
}

TEST(ScanJvp, ForiLoop) {
  // f(x) = fori_loop(0, 4, c -> c * x + i) from c = 1: c1 = x, c2 = x^2 + 1, c3 = x^3 + x + 2,
  // c4 = x^4 + x^2 + 2x + 3, so f'(x) = 4x^3 + 2x + 2; at x = 0.5: 0.5 + 1 + 2 = 3.5.
  auto f = [](const Array& x) {
    return mj::fori_loop(0, 4, [&x](const Array& i, const Array& c) {
      return c * x + lax::convert_element_type(i, mj::f64);
    }, mj::scalar(1.0, mj::f64));
  };
  auto [y, t] = mj::jvp(f, mj::scalar(0.5, mj::f64), mj::scalar(1.0, mj::f64));
  EXPECT_NEAR(y.item<double>(), 0.0625 + 0.25 + 1 + 3, 1e-12);
  EXPECT_NEAR(t.item<double>(), 3.5, 1e-12);
}

/// vmap of the scan over the given in_axes vs a loop over the batch of the scan applied to
/// each element (eager).
void check_vmap(const Program& p, const std::vector<int64_t>& axes, int64_t B, const std::string& label) {
  const size_t nc = p.init.size();
  V args = p.init;
  args.insert(args.end(), p.xs.begin(), p.xs.end());
  // Batched arguments: a new axis of size B inserted at axes[i].
  V bargs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (axes[i] == kNotMapped) {
      bargs.push_back(args[i]);
      continue;
    }
    mj::Shape s = args[i].shape();
    s.insert(s.begin() + axes[i], B);
    bargs.push_back(rnd(s, uint32_t(300 + i)));
  }
  mj::FlatFn fs = [&](const V& a) {
    return scan_form(p.body, V(a.begin(), a.begin() + std::ptrdiff_t(nc)), V(a.begin() + std::ptrdiff_t(nc), a.end()), {});
  };
  V out = mj::vmap_flat(fs, bargs, axes, {});
  for (int64_t b = 0; b < B; ++b) {
    V el;
    for (size_t i = 0; i < bargs.size(); ++i) {
      if (axes[i] == kNotMapped) {
        el.push_back(bargs[i]);
        continue;
      }
      std::vector<int64_t> start(size_t(bargs[i].ndim()), 0), limit = bargs[i].shape();
      start[size_t(axes[i])] = b;
      limit[size_t(axes[i])] = b + 1;
      el.push_back(lax::squeeze(lax::slice(bargs[i], start, limit), {axes[i]}));
    }
    V want = fs(el);
    ASSERT_EQ(want.size(), out.size());
    for (size_t j = 0; j < out.size(); ++j)
      expect_close(row(out[j], b), want[j], 1e-12, label + " output " + std::to_string(j) + " batch " + std::to_string(b));
  }
}

TEST(ScanVmap, MatchesLoopOverBatch) {
  for (const Program& p : programs()) {
    const size_t n = p.init.size() + p.xs.size();
    std::vector<int64_t> all(n, 0), xs_only(n, kNotMapped), first_carry(n, kNotMapped), xs_axis1(n, kNotMapped);
    xs_only[n - 1] = 0;
    first_carry[0] = 0;
    xs_axis1[n - 1] = 1;
    check_vmap(p, all, 3, p.name + " all");
    check_vmap(p, xs_only, 2, p.name + " xs only");
    check_vmap(p, first_carry, 2, p.name + " first carry");
    check_vmap(p, xs_axis1, 3, p.name + " xs axis 1");
  }
}

TEST(ScanVmap, BatchedClosedOverConstMakesCarryBatched) {
  // The body closes over a batched value w: the const operand is batched, the carry becomes
  // batched through the fixpoint, and a y that only reads x stays unbatched (broadcast by vmap).
  Array ws = rnd({4}, 21), xs = rnd({3}, 22);
  V out = mj::vmap_flat(
      [&](const V& a) {
        Array w = a[0];
        auto [c, ys] = mj::scan(
            [&](const Array& c, const Array& x) { return std::pair{c * w + x, std::pair<Array, Array>{c, x * 2.0}}; },
            mj::scalar(1.0, mj::f64), xs);
        return V{c, ys.first, ys.second};
      },
      {ws}, {0}, {});
  auto w = vals(ws), x = vals(xs);
  ASSERT_EQ(out[0].shape(), (mj::Shape{4}));
  ASSERT_EQ(out[1].shape(), (mj::Shape{4, 3}));
  ASSERT_EQ(out[2].shape(), (mj::Shape{4, 3}));
  auto c = vals(out[0]), ys = vals(out[1]), y2 = vals(out[2]);
  for (size_t b = 0; b < 4; ++b) {
    double cc = 1;
    for (size_t t = 0; t < 3; ++t) {
      EXPECT_NEAR(ys[b * 3 + t], cc, 1e-12);
      EXPECT_NEAR(y2[b * 3 + t], 2 * x[t], 1e-12);
      cc = cc * w[b] + x[t];
    }
    EXPECT_NEAR(c[b], cc, 1e-12);
  }
}

TEST(ScanVmap, StagedBatchedScanKeepsScanAxisFirst) {
  // Under make_jaxpr, vmap over xs batched at axis 0 stages one scan whose xs operand is
  // [length, batch] (batch moved to axis 1) and whose ys are [length, batch].
  auto f = [](const Array& xs) {
    return mj::vmap([](const Array& x) {
      return mj::scan([](const Array& c, const Array& xi) { return std::pair{c + xi, c * xi}; },
                      mj::scalar(0.0f), x).second;
    })(xs);
  };
  auto j = mj::make_jaxpr(f)(mj::zeros({2, 5}));
  const mj::Eqn* e = nullptr;
  for (auto& q : j.jaxpr->eqns)
    if (q.primitive->name == "scan") e = &q;
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(mj::atom_aval(e->inputs.back()).shape, (mj::Shape{5, 2}));
  EXPECT_EQ(e->outputs.back().aval().shape, (mj::Shape{5, 2}));
  EXPECT_EQ(e->outputs.front().aval().shape, (mj::Shape{2}));  // the carry became batched
  Array xs = mj::array({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5}, mj::f32);
  Array ys = f(xs);
  // Row 0: c = 0, 1, 3, 6, 10 before each step; y = c * x = 0, 2, 9, 24, 50.
  auto v = vals(ys);
  ASSERT_EQ(ys.shape(), (mj::Shape{2, 5}));
  EXPECT_EQ(std::vector<double>(v.begin(), v.begin() + 5), (std::vector<double>{0, 2, 9, 24, 50}));
}

TEST(ScanVmap, JvpOfVmapAndVmapOfJvp) {
  Program p = programs()[0];
  V args = p.init;
  args.insert(args.end(), p.xs.begin(), p.xs.end());
  // Batch over xs (axis 0, B = 2) and differentiate w.r.t. everything.
  Array bxs = rnd({2, 4, 3}, 55);
  mj::FlatFn f = [&](const V& a) { return scan_form(p.body, V{a[0], a[1]}, V{a[2]}, {}); };
  mj::FlatFn vf = [&](const V& a) { return mj::vmap_flat(f, a, {kNotMapped, kNotMapped, 0}, {}); };
  V prim{args[0], args[1], bxs};
  V tan{rnd({3}, 56), rnd({}, 57), rnd({2, 4, 3}, 58)};
  auto [po, to] = mj::jvp_flat(vf, prim, tan);
  for (int64_t b = 0; b < 2; ++b) {
    auto [pe, te] = mj::jvp_flat(f, V{args[0], args[1], row(bxs, b)}, V{tan[0], tan[1], row(tan[2], b)});
    for (size_t j = 0; j < po.size(); ++j) {
      expect_close(row(po[j], b), pe[j], 1e-12, "jvp(vmap) primal");
      expect_close(row(to[j], b), te[j], 1e-12, "jvp(vmap) tangent");
    }
  }
  // vmap of jvp: batch the tangents only.
  mj::FlatFn jf = [&](const V& a) {
    auto [q, t] = mj::jvp_flat(f, V{a[0], a[1], a[2]}, V{a[3], a[4], a[5]});
    for (size_t i = 0; i < t.size(); ++i) t[i] = mj::instantiate_zero(t[i], q[i].aval());
    return t;
  };
  Array bt = rnd({2, 4, 3}, 59);
  V vt = mj::vmap_flat(jf, {args[0], args[1], args[2], tan[0], tan[1], bt},
                       {kNotMapped, kNotMapped, kNotMapped, kNotMapped, kNotMapped, 0}, {});
  for (int64_t b = 0; b < 2; ++b) {
    auto [pe, te] = mj::jvp_flat(f, V{args[0], args[1], args[2]}, V{tan[0], tan[1], row(bt, b)});
    for (size_t j = 0; j < vt.size(); ++j) expect_close(row(vt[j], b), te[j], 1e-12, "vmap(jvp) tangent");
  }
}

}  // namespace
