// minijax tests of the scan primitive and its user API: eager results vs C++ loops, pytree
// carries, reverse, lengths 0 and 1, errors, printing, DCE and fori_loop.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <minijax/minijax.h>

#include "core/views/control_flow.h"
#include "core/bodies.h"

namespace {
using mj::Array;
namespace lax = mj::lax;

struct Acc {
  Array sum, prod;
};
}  // namespace
MJ_REGISTER_PYTREE(Acc, sum, prod)

namespace {

std::vector<float> vals(const Array& a) {
  const float* p = a.data<float>();
  return std::vector<float>(p, p + a.size());
}

Array f32s(const std::vector<double>& v, const mj::Shape& s) { return mj::array(v, s, mj::f32); }

std::string str_of(const mj::ClosedJaxpr& j) { return mj::to_string(j); }

const mj::Eqn* find_eqn(const mj::Jaxpr& j, const std::string& prim) {
  for (auto& e : j.eqns)
    if (e.primitive->name == prim) return &e;
  return nullptr;
}

TEST(Scan, CumulativeSumMatchesLoop) {
  const std::vector<double> x = {1.5, -2.0, 4.0, 0.25, 3.0};
  Array xs = f32s(x, {5});
  auto [total, partial] = mj::scan(
      [](const Array& c, const Array& xi) {
        Array s = c + xi;
        return std::pair{s, s};
      },
      mj::scalar(0.0f), xs);
  float acc = 0;
  std::vector<float> want;
  for (double v : x) want.push_back(acc += float(v));
  EXPECT_FLOAT_EQ(total.item<float>(), acc);
  ASSERT_EQ(partial.shape(), (mj::Shape{5}));
  EXPECT_EQ(vals(partial), want);
}

TEST(Scan, NonlinearVectorCarryMatchesLoop) {
  // c <- tanh(c * x_t + 0.5 * sin(c)), y_t = c . c (sum of squares), with c in R^3, x_t in R^3.
  const std::vector<double> x = {0.3, -0.7, 1.1, 0.9, 0.2, -0.4, -1.3, 0.5, 0.8, 0.05, -0.6, 1.7};
  const std::vector<double> c0 = {0.1, -0.2, 0.4};
  auto [c, ys] = mj::scan(
      [](const Array& c, const Array& xi) {
        Array n = mj::tanh(c * xi + 0.5f * mj::sin(c));
        return std::pair{n, lax::reduce_sum(n * n, {0})};
      },
      f32s(c0, {3}), f32s(x, {4, 3}));
  std::vector<double> cc = c0;
  std::vector<double> want_y;
  for (int t = 0; t < 4; ++t) {
    double s = 0;
    for (int k = 0; k < 3; ++k) {
      cc[size_t(k)] = std::tanh(cc[size_t(k)] * x[size_t(3 * t + k)] + 0.5 * std::sin(cc[size_t(k)]));
      s += cc[size_t(k)] * cc[size_t(k)];
    }
    want_y.push_back(s);
  }
  auto cv = vals(c), yv = vals(ys);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(cv[size_t(k)], cc[size_t(k)], 1e-5);
  ASSERT_EQ(ys.shape(), (mj::Shape{4}));
  for (int t = 0; t < 4; ++t) EXPECT_NEAR(yv[size_t(t)], want_y[size_t(t)], 1e-5);
}

TEST(Scan, PytreeCarries) {
  Array xs = f32s({2, 3, 0.5, -1}, {4});
  // pair carry: (running sum, running product), y = a tuple (sum, product).
  auto [pc, pys] = mj::scan(
      [](const std::pair<Array, Array>& c, const Array& x) {
        std::pair<Array, Array> n{c.first + x, c.second * x};
        return std::pair{n, std::tuple<Array, Array>{n.first, n.second}};
      },
      std::pair<Array, Array>{mj::scalar(0.0f), mj::scalar(1.0f)}, xs);
  // 2+3+0.5-1 = 4.5; 2*3*0.5*-1 = -3.
  EXPECT_FLOAT_EQ(pc.first.item<float>(), 4.5f);
  EXPECT_FLOAT_EQ(pc.second.item<float>(), -3.0f);
  EXPECT_EQ(vals(std::get<0>(pys)), (std::vector<float>{2, 5, 5.5, 4.5}));
  EXPECT_EQ(vals(std::get<1>(pys)), (std::vector<float>{2, 6, 3, -3}));

  // struct carry and a tuple of xs.
  auto [sc, sy] = mj::scan(
      [](const Acc& c, const std::tuple<Array, Array>& x) {
        Acc n{c.sum + std::get<0>(x) * std::get<1>(x), c.prod * std::get<1>(x)};
        return std::pair{n, mj::None{}};
      },
      Acc{mj::scalar(0.0f), mj::scalar(1.0f)}, std::tuple<Array, Array>{xs, f32s({1, 2, 3, 4}, {4})});
  // sum = 2*1 + 3*2 + 0.5*3 - 1*4 = 5.5; prod = 1*2*3*4 = 24.
  EXPECT_FLOAT_EQ(sc.sum.item<float>(), 5.5f);
  EXPECT_FLOAT_EQ(sc.prod.item<float>(), 24.0f);
  (void)sy;

  // vector-of-arrays carry with different shapes.
  auto [vc, vy] = mj::scan(
      [](const std::vector<Array>& c, const Array& x) {
        return std::pair{std::vector<Array>{c[0] + x, c[1] * 2.0f}, c[0]};
      },
      std::vector<Array>{mj::scalar(1.0f), f32s({1, -1}, {2})}, xs);
  EXPECT_FLOAT_EQ(vc[0].item<float>(), 5.5f);
  EXPECT_EQ(vals(vc[1]), (std::vector<float>{16, -16}));
  EXPECT_EQ(vals(vy), (std::vector<float>{1, 3, 6, 6.5}));  // carry before each step
}

TEST(Scan, ReverseVisitsLastSliceFirst) {
  // Reverse cumulative sum: ys[i] = sum_{j >= i} x[j]; ys are stored at their own index.
  Array xs = f32s({1, 2, 4, 8}, {4});
  std::vector<int> order;
  auto [c, ys] = mj::scan(
      [](const Array& c, const Array& x) {
        Array s = c + x;
        return std::pair{s, s};
      },
      mj::scalar(0.0f), xs, {.reverse = true});
  EXPECT_FLOAT_EQ(c.item<float>(), 15.0f);
  EXPECT_EQ(vals(ys), (std::vector<float>{15, 14, 12, 8}));
  // Order-sensitive carry: c <- 2c + x, reversed: ((0*2+8)*2+4)*2+2)*2+1 = 8*8+4*4+2*2+1 = 85.
  auto [c2, y2] = mj::scan(
      [](const Array& c, const Array& x) { return std::pair{c * 2.0f + x, mj::None{}}; },
      mj::scalar(0.0f), xs, {.reverse = true});
  EXPECT_FLOAT_EQ(c2.item<float>(), 85.0f);
}

TEST(Scan, LengthZeroAndOne) {
  Array c0 = f32s({1, 2}, {2});
  auto body = [](const Array& c, const Array& x) {
    Array n = c * x;
    return std::pair{n, n + 1.0f};
  };
  auto [c, ys] = mj::scan(body, c0, mj::zeros({0, 2}));
  EXPECT_EQ(vals(c), (std::vector<float>{1, 2}));
  EXPECT_EQ(ys.shape(), (mj::Shape{0, 2}));
  EXPECT_EQ(ys.dtype(), mj::f32);
  auto [c1, ys1] = mj::scan(body, c0, f32s({3, -1}, {1, 2}));
  EXPECT_EQ(vals(c1), (std::vector<float>{3, -2}));
  EXPECT_EQ(ys1.shape(), (mj::Shape{1, 2}));
  EXPECT_EQ(vals(ys1), (std::vector<float>{4, -1}));
}

TEST(Scan, NoXsAndNoYs) {
  // Without xs: c <- 3c + 1 four times from 1: 4, 13, 40, 121; y = c before the step.
  auto [c, ys] = mj::scan(
      [](const Array& c, mj::None) { return std::pair{c * 3.0f + 1.0f, c}; }, mj::scalar(1.0f),
      mj::ScanOptions{.length = 4});
  EXPECT_FLOAT_EQ(c.item<float>(), 121.0f);
  EXPECT_EQ(vals(ys), (std::vector<float>{1, 4, 13, 40}));
  // ys None: the result's second member is None.
  auto r = mj::scan([](const Array& c, mj::None) { return std::pair{c + 2.0f, mj::None{}}; },
                    mj::scalar(0.0f), {.length = 5});
  static_assert(std::is_same_v<decltype(r.second), mj::None>);
  EXPECT_FLOAT_EQ(r.first.item<float>(), 10.0f);
  // Length 0 without xs returns init.
  auto r0 = mj::scan([](const Array& c, mj::None) { return std::pair{c + 2.0f, c}; }, mj::scalar(7.0f),
                     {.length = 0});
  EXPECT_FLOAT_EQ(r0.first.item<float>(), 7.0f);
  EXPECT_EQ(r0.second.shape(), (mj::Shape{0}));
}

TEST(Scan, ClosesOverValuesAsConsts) {
  Array w = f32s({1, 2, 3, 4}, {2, 2});
  auto f = [w](const Array& c0) {
    return mj::scan([&](const Array& c, mj::None) { return std::pair{mj::matmul(w, c), mj::None{}}; },
                    c0, {.length = 2})
        .first;
  };
  // W^2 = [[7, 10], [15, 22]]; W^2 [1, 1] = [17, 37].
  EXPECT_EQ(vals(f(f32s({1, 1}, {2}))), (std::vector<float>{17, 37}));
  auto j = mj::make_jaxpr(f)(f32s({1, 1}, {2}));
  const mj::Eqn* e = find_eqn(*j.jaxpr, "scan");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(mj::scan_params(*e).num_consts, 1);
  EXPECT_EQ(mj::scan_params(*e).num_carry, 1);
  EXPECT_EQ(e->inputs.size(), 2u);
}

TEST(Scan, YsKeepTheBodysMemoryKind) {
  Array xs = f32s({1, 2, 3}, {3});
  auto [c, ys] = mj::scan(
      [](const Array& c, const Array& x) {
        return std::pair{c + x, lax::device_put(x * 2.0f, mj::MemoryKind::pinned_host)};
      },
      mj::scalar(0.0f), xs);
  EXPECT_EQ(ys.memory_kind(), mj::MemoryKind::pinned_host);
  EXPECT_EQ(ys.shape(), (mj::Shape{3}));
  EXPECT_EQ(vals(ys), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(c.memory_kind(), mj::MemoryKind::device);
}

TEST(Scan, CarryTypeChangeIsATypeErrorNamingBothAvalsAndLeaf) {
  auto bad = [] {
    mj::scan(
        [](const std::pair<Array, Array>& c, const Array& x) {
          return std::pair{std::pair<Array, Array>{c.first + x, c.second + x}, x};  // second: f32[] -> f32[3]
        },
        std::pair<Array, Array>{mj::zeros({3}), mj::scalar(0.0f)}, mj::zeros({2, 3}));
  };
  try {
    bad();
    FAIL() << "expected TypeError";
  } catch (const mj::TypeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("carry leaf 1"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[]"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[3]"), std::string::npos) << m;
    EXPECT_NE(m.find("(*, *)"), std::string::npos) << m;
    EXPECT_NE(m.find("test_scan.cc"), std::string::npos) << m;  // the user's call site
  }
  // dtype change
  EXPECT_THROW(mj::scan([](const Array& c, const Array& x) {
                          return std::pair{lax::convert_element_type(c, mj::f64), x};
                        },
                        mj::scalar(0.0f), mj::zeros({2})),
               mj::TypeError);
  // memory-kind change
  EXPECT_THROW(mj::scan([](const Array& c, const Array& x) {
                          return std::pair{lax::device_put(c, mj::MemoryKind::pinned_host), x};
                        },
                        mj::scalar(0.0f), mj::zeros({2})),
               mj::TypeError);
  // pytree structure change
  EXPECT_THROW(mj::scan([](const std::vector<Array>& c, const Array& x) {
                          return std::pair{std::vector<Array>{c[0]}, x};
                        },
                        std::vector<Array>{mj::scalar(0.0f), mj::scalar(1.0f)}, mj::zeros({2})),
               mj::TypeError);
}

// JAX raises ValueError for both ("scan got values with different leading axis sizes", "scan got
// `length` argument of 5 which disagrees with leading axis sizes [3]"); so does minijax (a
// ValueError, not a ShapeError).
TEST(Scan, XsLengthMismatchIsAValueErrorNamingTheLengths) {
  auto body = [](const Array& c, const std::pair<Array, Array>& x) { return std::pair{c, x.first}; };
  try {
    mj::scan(body, mj::scalar(0.0f), std::pair<Array, Array>{mj::zeros({3}), mj::zeros({4, 2})});
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("(3, 4)"), std::string::npos) << m;
  }
  try {
    mj::scan([](const Array& c, const Array& x) { return std::pair{c, x}; }, mj::scalar(0.0f),
             mj::zeros({3}), {.length = 5});
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("(3)"), std::string::npos) << m;
    EXPECT_NE(m.find("length=5"), std::string::npos) << m;
  }
  // No xs and no length.
  EXPECT_THROW(mj::scan([](const Array& c, mj::None) { return std::pair{c, c}; }, mj::scalar(0.0f),
                        mj::ScanOptions{}),
               mj::ValueError);
}

TEST(Scan, WeaklyTypedInitIsPromotedToTheBodysDtype) {
  // A weak i32 init (a Python-int-like 0) whose body adds f32 slices: JAX promotes the init to
  // f32 and retraces instead of rejecting the carry. 0 + 1.5 + 2.25 + 4 = 7.75.
  auto [c, ys] = mj::scan([](const Array& c, const Array& x) { return std::pair{c + x, mj::None{}}; },
                          lax::scalar(0, mj::i32, /*weak=*/true), f32s({1.5, 2.25, 4}, {3}));
  EXPECT_EQ(c.dtype(), mj::f32);
  EXPECT_FLOAT_EQ(c.item<float>(), 7.75f);
  // A strongly typed init is not promoted.
  EXPECT_THROW(mj::scan([](const Array& c, const Array& x) { return std::pair{c + x, mj::None{}}; },
                        mj::scalar(0, mj::i32), f32s({1.5, 2.25, 4}, {3})),
               mj::TypeError);
}

TEST(Scan, InvalidUnrollAndLength) {
  auto body = [](const Array& c, mj::None) { return std::pair{c, mj::None{}}; };
  // unroll 0 is valid (the whole loop, as in JAX); a negative unroll is not.
  EXPECT_EQ(mj::scan(body, mj::scalar(2.0f), {.length = 3, .unroll = 0}).first.item<float>(), 2.0f);
  EXPECT_THROW(mj::scan(body, mj::scalar(0.0f), {.length = 3, .unroll = -1}), mj::ValueError);
  EXPECT_THROW(mj::scan(body, mj::scalar(0.0f), {.length = -1}), mj::ValueError);
  // A scalar xs leaf has no axis to scan over.
  EXPECT_THROW(mj::scan([](const Array& c, const Array& x) { return std::pair{c, x}; }, mj::scalar(0.0f),
                        mj::scalar(1.0f)),
               mj::ShapeError);
}

TEST(Scan, TracedBoolInsideBodyIsAConcretizationError) {
  auto f = [](const Array& c, const Array& x) {
    Array n = (x > 0.0f) ? c + x : c - x;  // C++ branch on a traced value
    return std::pair{n, n};
  };
  EXPECT_THROW(mj::scan(f, mj::scalar(0.0f), f32s({1, -1}, {2})), mj::ConcretizationError);
}

TEST(Scan, MakeJaxprPrintsLikeJax) {
  auto f = [](const Array& c0, const Array& xs) {
    return mj::scan(
        [](const Array& c, const Array& x) {
          Array s = c + x;
          return std::pair{s, s};
        },
        c0, xs);
  };
  auto j = mj::make_jaxpr(f)(mj::scalar(0.0f), mj::zeros({3}));
  std::string s = str_of(j);
  // JAX 0.4.30 prints (jax.make_jaxpr of lax.scan(lambda c, x: (c + x, c + x), 0., xs)):
  //   scan[_split_transpose=False jaxpr={ lambda ; e:f32[] f:f32[]. let g:f32[] = add e f in (g, g) }
  //        length=3 linear=(False, False) num_carry=1 num_consts=0 reverse=False unroll=1] a b
  // minijax prints linear as an int tuple (0, 0).
  for (const char* want : {"scan[", "_split_transpose=False", "length=3", "linear=(0, 0)", "num_carry=1",
                           "num_consts=0", "reverse=False", "unroll=1",
                           "jaxpr={ lambda ; e:f32[] f:f32[]. let g:f32[] = add e f in (g, g) }",
                           "c:f32[] d:f32[3] = scan"})
    EXPECT_NE(s.find(want), std::string::npos) << want << "\n" << s;
  EXPECT_LT(s.find("_split_transpose"), s.find("jaxpr="));
  // The printed form parses back and evaluates to the same values.
  mj::ClosedJaxpr back = mj::parse_jaxpr(s);
  auto outs = mj::eval_jaxpr(back, {mj::scalar(1.0f), f32s({1, 2, 3}, {3})});
  EXPECT_FLOAT_EQ(outs[0].item<float>(), 7.0f);
  EXPECT_EQ(vals(outs[1]), (std::vector<float>{2, 4, 7}));
}

TEST(Scan, DceRemovesUnusedCarryAndYs) {
  // Three carries: a (used at the end), b (only feeds itself: dead), c (feeds a: live through
  // the body although its output is unused); ys: one used, one not.
  auto f = [](const Array& a0, const Array& b0, const Array& c0, const Array& xs) {
    auto [c, ys] = mj::scan(
        [](const std::tuple<Array, Array, Array>& c, const Array& x) {
          auto [a, b, cc] = c;
          return std::pair{std::tuple<Array, Array, Array>{a + cc * x, mj::sin(b), cc + 1.0f},
                           std::pair<Array, Array>{a * 2.0f, mj::cos(b)}};
        },
        std::tuple<Array, Array, Array>{a0, b0, c0}, xs);
    return std::pair{std::get<0>(c), ys.first};
  };
  Array a0 = mj::scalar(1.0f), b0 = mj::scalar(0.5f), c0 = mj::scalar(2.0f), xs = f32s({1, 2, 3}, {3});
  auto j = mj::make_jaxpr(f)(a0, b0, c0, xs);
  auto [pruned, used_in] = mj::dce_jaxpr(*j.jaxpr, {true, true});
  const mj::Eqn* e = find_eqn(pruned, "scan");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(mj::scan_params(*e).num_carry, 2);  // a and c
  EXPECT_EQ(e->outputs.size(), 3u);               // a, c carries + the used ys
  EXPECT_EQ(e->inputs.size(), 3u);                // a0, c0, xs
  EXPECT_EQ(mj::scan_params(*e).linear.value().size(), 3u);
  const mj::Jaxpr& body = *mj::subjaxprs(*e).at(0).jaxpr->jaxpr;
  EXPECT_EQ(body.invars.size(), 3u);
  EXPECT_EQ(body.outvars.size(), 3u);
  EXPECT_EQ(find_eqn(body, "sin"), nullptr);
  EXPECT_EQ(find_eqn(body, "cos"), nullptr);
  EXPECT_FALSE(used_in[1]);  // b0 is dead
  // The pruned program computes the same values: a = 1 + 2*1 + 3*2 + 4*3 = 21; ys = 2*(1, 3, 9).
  std::vector<Array> args;
  for (size_t i = 0; i < 4; ++i)
    if (used_in[i]) args.push_back(std::vector<Array>{a0, b0, c0, xs}[i]);
  auto outs = mj::eval_jaxpr(pruned, {}, args);
  EXPECT_FLOAT_EQ(outs[0].item<float>(), 21.0f);
  EXPECT_EQ(vals(outs[1]), (std::vector<float>{2, 6, 18}));
}

TEST(Scan, DceDropsAWhollyUnusedScan) {
  auto f = [](const Array& a0, const Array& xs) {
    auto [c, ys] = mj::scan([](const Array& c, const Array& x) { return std::pair{c + x, c}; }, a0, xs);
    (void)c;
    (void)ys;
    return a0 * 2.0f;
  };
  auto j = mj::make_jaxpr(f)(mj::scalar(1.0f), mj::zeros({3}));
  auto [pruned, used] = mj::dce_jaxpr(*j.jaxpr, {true});
  EXPECT_EQ(find_eqn(pruned, "scan"), nullptr);
  EXPECT_FALSE(used[1]);
}

TEST(ForiLoop, MatchesLoop) {
  // for i in [2, 7): c = c * 0.5 + i  (float), computed by hand in double.
  auto r = mj::fori_loop(2, 7, [](const Array& i, const Array& c) {
    return c * 0.5f + lax::convert_element_type(i, mj::f32);
  }, mj::scalar(1.0f));
  double c = 1;
  for (int i = 2; i < 7; ++i) c = c * 0.5 + i;
  EXPECT_NEAR(r.item<float>(), c, 1e-5);
  // pytree carry with an integer leaf.
  auto p = mj::fori_loop(0, 4, [](const Array& i, const std::pair<Array, Array>& c) {
    return std::pair<Array, Array>{c.first + i * i, c.second * 2.0f};
  }, std::pair<Array, Array>{mj::scalar(0, mj::i32), mj::scalar(1.0f)});
  EXPECT_EQ(p.first.item<int>(), 0 + 1 + 4 + 9);
  EXPECT_FLOAT_EQ(p.second.item<float>(), 16.0f);
  // Empty range returns init.
  EXPECT_FLOAT_EQ(mj::fori_loop(5, 3, [](const Array&, const Array& c) { return c + 1.0f; }, mj::scalar(2.0f))
                      .item<float>(),
                  2.0f);
  // Staged: one scan equation of length 5.
  auto j = mj::make_jaxpr([](const Array& c0) {
    return mj::fori_loop(2, 7, [](const Array& i, const Array& c) { return c + lax::convert_element_type(i, mj::f32); }, c0);
  })(mj::scalar(0.0f));
  const mj::Eqn* e = find_eqn(*j.jaxpr, "scan");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(mj::scan_params(*e).length, 5);
}

TEST(Scan, UnderJit) {
  auto f = mj::jit([](const Array& c0, const Array& xs) {
    return mj::scan([](const Array& c, const Array& x) { return std::pair{c * x, c}; }, c0, xs);
  });
  auto [c, ys] = f(mj::scalar(1.0f), f32s({2, 3, 4}, {3}));
  EXPECT_FLOAT_EQ(c.item<float>(), 24.0f);
  EXPECT_EQ(vals(ys), (std::vector<float>{1, 2, 6}));
}

}  // namespace
