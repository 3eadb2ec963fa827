// Tests of dot_general (eager through the GEMM library, against a direct index-loop reference),
// its autodiff rules, core/gemm.h, and the numpy-level matmul and dot.
#include <gtest/gtest.h>

#include <cmath>

#include <minijax/minijax.h>

#include "core/gemm.h"

namespace {

using namespace minijax;
using Ints = std::vector<int64_t>;

Array make(const Shape& shape, const std::vector<double>& v, DType d = f32) {
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
// Deterministic small integers in [-4, 4] (exact in every dtype, so i32/f32/f64 agree exactly).
std::vector<double> ints(int64_t n, int seed) {
  std::vector<double> v(static_cast<size_t>(n));
  uint32_t s = uint32_t(seed) * 2654435761u + 12345u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = double(int((s >> 16) % 9) - 4);
  }
  return v;
}
double dotp(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Reference dot_general by direct enumeration: for every output index (batch..., lhs free...,
// rhs free...) sum over all contracting index combinations, reading both operands by strides.
std::vector<double> ref_dot(const Shape& ls, const std::vector<double>& l, const Shape& rs,
                            const std::vector<double>& r, const lax::DotDimensionNumbers& d,
                            Shape* out_shape) {
  auto is_in = [](const Ints& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  Ints lf, rf;
  for (int64_t i = 0; i < int64_t(ls.size()); ++i)
    if (!is_in(d.lhs_batch, i) && !is_in(d.lhs_contracting, i)) lf.push_back(i);
  for (int64_t i = 0; i < int64_t(rs.size()); ++i)
    if (!is_in(d.rhs_batch, i) && !is_in(d.rhs_contracting, i)) rf.push_back(i);
  Shape os, cs;
  for (auto b : d.lhs_batch) os.push_back(ls[size_t(b)]);
  for (auto f : lf) os.push_back(ls[size_t(f)]);
  for (auto f : rf) os.push_back(rs[size_t(f)]);
  for (auto c : d.lhs_contracting) cs.push_back(ls[size_t(c)]);
  *out_shape = os;
  auto lst = strides_of(ls), rst = strides_of(rs);
  const int64_t on = shape_size(os), cn = shape_size(cs);
  std::vector<double> out(static_cast<size_t>(on));
  Ints oi(os.size()), ci(cs.size());
  for (int64_t o = 0; o < on; ++o) {
    int64_t rem = o;
    for (size_t k = os.size(); k-- > 0;) { oi[k] = rem % os[k]; rem /= os[k]; }
    double acc = 0;
    for (int64_t c = 0; c < cn; ++c) {
      int64_t rc = c;
      for (size_t k = cs.size(); k-- > 0;) { ci[k] = rc % cs[k]; rc /= cs[k]; }
      int64_t lo = 0, ro = 0;
      size_t p = 0;
      for (size_t k = 0; k < d.lhs_batch.size(); ++k, ++p) {
        lo += oi[p] * lst[size_t(d.lhs_batch[k])];
        ro += oi[p] * rst[size_t(d.rhs_batch[k])];
      }
      for (auto f : lf) lo += oi[p++] * lst[size_t(f)];
      for (auto f : rf) ro += oi[p++] * rst[size_t(f)];
      for (size_t k = 0; k < cs.size(); ++k) {
        lo += ci[k] * lst[size_t(d.lhs_contracting[k])];
        ro += ci[k] * rst[size_t(d.rhs_contracting[k])];
      }
      acc += l[size_t(lo)] * r[size_t(ro)];
    }
    out[size_t(o)] = acc;
  }
  return out;
}

struct DotCase {
  Shape ls, rs;
  lax::DotDimensionNumbers d;
};

std::vector<DotCase> dot_cases() {
  return {
      {{3, 4}, {4, 5}, {{1}, {0}, {}, {}}},                       // plain matmul (N, N)
      {{4, 3}, {5, 4}, {{0}, {1}, {}, {}}},                       // both transposed (T, T)
      {{2, 3, 4}, {2, 4, 5}, {{2}, {1}, {0}, {0}}},               // batched matmul
      {{4, 2, 3}, {5, 4, 2}, {{0}, {1}, {1}, {2}}},               // batch dims not leading
      {{2, 3, 4}, {4, 3, 5}, {{1, 2}, {1, 0}, {}, {}}},           // two contracting dims, swapped
      {{3, 2, 6}, {2, 6, 3}, {{2}, {1}, {1, 0}, {0, 2}}},         // two batch dims
      {{5}, {5}, {{0}, {0}, {}, {}}},                             // inner product -> scalar
      {{3}, {4}, {{}, {}, {}, {}}},                               // outer product (k = 1)
      {{2, 3}, {4, 3, 2}, {{1}, {1}, {0}, {2}}},                  // batch of matrix-vector
  };
}

TEST(DotGeneral, EagerMatchesLoopF32F64I32) {
  int seed = 1;
  for (const auto& c : dot_cases()) {
    auto lv = ints(shape_size(c.ls), seed++), rv = ints(shape_size(c.rs), seed++);
    Shape os;
    auto want = ref_dot(c.ls, lv, c.rs, rv, c.d, &os);
    for (DType dt : {f32, f64, i32, bf16}) {
      Array out = lax::dot_general(make(c.ls, lv, dt), make(c.rs, rv, dt), c.d);
      EXPECT_EQ(out.shape(), os) << shape_str(c.ls) << " x " << shape_str(c.rs);
      EXPECT_EQ(out.dtype(), dt);
      auto got = vals(out);
      ASSERT_EQ(got.size(), want.size());
      // Small integer data: every dtype is exact (bf16 holds integers up to 256 exactly).
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], want[i]) << dtype_name(dt) << " " << shape_str(c.ls) << " x "
                                   << shape_str(c.rs) << " at " << i;
    }
  }
}

TEST(DotGeneral, LargerFloatProductVsLoop) {
  // A [64, 300] x [300, 70] product of non-integer values (exercises blocked GEMM paths).
  std::vector<double> a(64 * 300), b(300 * 70);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.01 * double(i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.013 * double(i));
  Shape os;
  auto want = ref_dot({64, 300}, a, {300, 70}, b, {{1}, {0}, {}, {}}, &os);
  auto g32 = vals(lax::dot_general(make({64, 300}, a, f32), make({300, 70}, b, f32), {{1}, {0}, {}, {}}));
  auto g64 = vals(lax::dot_general(make({64, 300}, a, f64), make({300, 70}, b, f64), {{1}, {0}, {}, {}}));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(g32[i], want[i], 1e-3) << i;
    EXPECT_NEAR(g64[i], want[i], 1e-10) << i;
  }
}

TEST(DotGeneral, ZeroSizes) {
  // k = 0: the empty sum is 0.
  Array z = lax::dot_general(Array::allocate(ShapedArray{{2, 0}, f32}),
                             Array::allocate(ShapedArray{{0, 3}, f32}), {{1}, {0}, {}, {}});
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  for (double v : vals(z)) EXPECT_EQ(v, 0);
  Array e = lax::dot_general(Array::allocate(ShapedArray{{0, 4}, f64}),
                             Array::allocate(ShapedArray{{4, 3}, f64}), {{1}, {0}, {}, {}});
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
}

TEST(DotGeneral, GemmInterface) {
  // C = 2 * A^T B + 1 * C with A stored [k=2, m=2], B [k=2, n=2]: A^T B = [[1*5+3*7, 1*6+3*8],
  // [2*5+4*7, 2*6+4*8]] = [[26, 30], [38, 44]].
  float A[] = {1, 2, 3, 4}, B[] = {5, 6, 7, 8}, C[] = {1, 1, 1, 1};
  gemm('T', 'N', 2, 2, 2, 2.0f, A, 2, B, 2, 1.0f, C, 2);
  EXPECT_FLOAT_EQ(C[0], 53);
  EXPECT_FLOAT_EQ(C[1], 61);
  EXPECT_FLOAT_EQ(C[2], 77);
  EXPECT_FLOAT_EQ(C[3], 89);
  double Ad[] = {1, 2, 3, 4}, Bd[] = {5, 6, 7, 8}, Cd[4] = {};
  gemm('N', 'T', 2, 2, 2, 1.0, Ad, 2, Bd, 2, 0.0, Cd, 2);  // A B^T = [[17, 23], [39, 53]]
  EXPECT_DOUBLE_EQ(Cd[0], 17);
  EXPECT_DOUBLE_EQ(Cd[1], 23);
  EXPECT_DOUBLE_EQ(Cd[2], 39);
  EXPECT_DOUBLE_EQ(Cd[3], 53);
  EXPECT_THROW(gemm('X', 'N', 2, 2, 2, 1.0, Ad, 2, Bd, 2, 0.0, Cd, 2), ValueError);
  EXPECT_THROW(gemm('N', 'N', 2, 2, 2, 1.0, Ad, 1, Bd, 2, 0.0, Cd, 2), ValueError);
}

TEST(DotGeneral, Errors) {
  Array a = make({2, 3}, ints(6, 1)), b = make({4, 5}, ints(20, 2));
  try {
    lax::dot_general(a, b, {{1}, {0}, {}, {}});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("dot_general"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[2,3]"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[4,5]"), std::string::npos) << m;
    EXPECT_NE(m.find("test_dot_general.cc"), std::string::npos) << m;
  }
  EXPECT_THROW(lax::dot_general(a, make({3, 2}, ints(6, 3), f64), {{1}, {0}, {}, {}}), TypeError);
  EXPECT_THROW(lax::dot_general(a, make({3, 2}, ints(6, 3)), {{2}, {0}, {}, {}}), ShapeError);
  EXPECT_THROW(lax::dot_general(a, make({3, 2}, ints(6, 3)), {{1}, {0, 1}, {}, {}}), ShapeError);
  EXPECT_THROW(lax::dot_general(a, make({3, 2}, ints(6, 3)), {{1}, {0}, {1}, {1}}), ShapeError);
  EXPECT_THROW(lax::dot_general(make({2}, {1, 0}, bool_), make({2}, {1, 1}, bool_), {{0}, {0}, {}, {}}),
               TypeError);
}

TEST(DotGeneral, PrintedParams) {
  auto j = trace_to_jaxpr(
      [](const std::vector<Array>& a) {
        return std::vector<Array>{lax::dot_general(a[0], a[1], {{1}, {0}, {}, {}})};
      },
      {ShapedArray{{2, 3}, f32}, ShapedArray{{3, 4}, f32}});
  std::string s = to_string(j);
  // The printer may wrap long parameter lists, so each parameter is checked on its own.
  EXPECT_NE(s.find("dot_general["), std::string::npos) << s;
  // JAX 0.4.30's form (jnp.matmul): dimension_numbers=(([1], [0]), ([], [])) precision=None
  // preferred_element_type=float32.
  for (const char* kv : {"dimension_numbers=(([1], [0]), ([], []))", "precision=None",
                         "preferred_element_type=float32"})
    EXPECT_NE(s.find(kv), std::string::npos) << kv << " in " << s;
  EXPECT_NE(s.find("f32[2,4]"), std::string::npos) << s;
}

// ---- autodiff rules, called directly -------------------------------------------------------------

TEST(DotGeneralRules, TransposeDotProductTest) {
  // For z = dot_general(x, y): <ct, dot(t, y)> == <x_bar(ct), t> and likewise for y.
  const auto& p = primitive("dot_general");
  int seed = 100;
  for (const auto& c : dot_cases()) {
    Params params = lax::dot_general_params(c.d, f64);
    auto xv = ints(shape_size(c.ls), seed++), yv = ints(shape_size(c.rs), seed++);
    Array x = make(c.ls, xv, f64), y = make(c.rs, yv, f64);
    Shape os;
    ref_dot(c.ls, xv, c.rs, yv, c.d, &os);
    auto ctv = ints(shape_size(os), seed++);
    Array ct = make(os, ctv, f64);
    auto tx = ints(shape_size(c.ls), seed++), ty = ints(shape_size(c.rs), seed++);
    auto cts_x = p.transpose({ct}, {Array(), y}, {x.aval(), y.aval()}, params);
    ASSERT_TRUE(cts_x[0].defined());
    EXPECT_EQ(cts_x[0].shape(), c.ls);
    Shape o2;
    EXPECT_DOUBLE_EQ(dotp(vals(cts_x[0]), tx), dotp(ctv, ref_dot(c.ls, tx, c.rs, yv, c.d, &o2)))
        << shape_str(c.ls) << " x " << shape_str(c.rs);
    auto cts_y = p.transpose({ct}, {x, Array()}, {x.aval(), y.aval()}, params);
    ASSERT_TRUE(cts_y[1].defined());
    EXPECT_EQ(cts_y[1].shape(), c.rs);
    EXPECT_DOUBLE_EQ(dotp(vals(cts_y[1]), ty), dotp(ctv, ref_dot(c.ls, xv, c.rs, ty, c.d, &o2)))
        << shape_str(c.ls) << " x " << shape_str(c.rs);
    // JVP: bilinear, t_out = dot(tx, y) + dot(x, ty).
    auto [outs, tans] = p.jvp({x, y}, {make(c.ls, tx, f64), make(c.rs, ty, f64)}, params);
    auto a1 = ref_dot(c.ls, tx, c.rs, yv, c.d, &o2), a2 = ref_dot(c.ls, xv, c.rs, ty, c.d, &o2);
    auto tg = vals(tans[0]);
    for (size_t i = 0; i < tg.size(); ++i) EXPECT_DOUBLE_EQ(tg[i], a1[i] + a2[i]);
  }
}

TEST(DotGeneralRules, BatchRuleMatchesLoop) {
  // lhs element [3, 4], rhs element [4, 2], contraction (1),(0); batch size 3 at various dims.
  const auto& p = primitive("dot_general");
  lax::DotDimensionNumbers d{{1}, {0}, {}, {}};
  Params params = lax::dot_general_params(d, f32);
  const int64_t B = 3;
  // Batched operands with the batch dim inserted at position bd of the element shape.
  auto batched = [&](const Shape& es, int64_t bd, int seed, std::vector<std::vector<double>>* elems) {
    Shape s = es;
    s.insert(s.begin() + bd, B);
    auto v = ints(shape_size(s), seed);
    auto st = strides_of(s);
    elems->assign(size_t(B), {});
    for (int64_t b = 0; b < B; ++b) {
      auto est = strides_of(es);
      for (int64_t f = 0; f < shape_size(es); ++f) {
        int64_t off = b * st[size_t(bd)], rem = f;
        for (size_t k = 0; k < es.size(); ++k) {
          off += (rem / est[k]) * st[k < size_t(bd) ? k : k + 1];
          rem %= est[k];
        }
        (*elems)[size_t(b)].push_back(v[size_t(off)]);
      }
    }
    return make(s, v);
  };
  for (int64_t lbd : {kNotMapped, int64_t(0), int64_t(1), int64_t(2)})
    for (int64_t rbd : {kNotMapped, int64_t(0), int64_t(1), int64_t(2)}) {
      if (lbd == kNotMapped && rbd == kNotMapped) continue;
      std::vector<std::vector<double>> le, re;
      Array l = lbd == kNotMapped ? make({3, 4}, ints(12, 7)) : batched({3, 4}, lbd, 7, &le);
      Array r = rbd == kNotMapped ? make({4, 2}, ints(8, 8)) : batched({4, 2}, rbd, 8, &re);
      auto [outs, dims] = p.batch({l, r}, {lbd, rbd}, params);
      ASSERT_NE(dims[0], kNotMapped);
      const int64_t od = dims[0];
      Array out = outs[0];
      ASSERT_EQ(out.shape()[size_t(od)], B);
      auto ov = vals(out);
      auto ost = strides_of(out.shape());
      for (int64_t b = 0; b < B; ++b) {
        auto lv = lbd == kNotMapped ? ints(12, 7) : le[size_t(b)];
        auto rv = rbd == kNotMapped ? ints(8, 8) : re[size_t(b)];
        Shape es;
        auto want = ref_dot({3, 4}, lv, {4, 2}, rv, d, &es);  // [3, 2]
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 2; ++j) {
            int64_t idx[2] = {i, j}, off = b * ost[size_t(od)];
            for (size_t k = 0; k < 2; ++k) off += idx[k] * ost[k < size_t(od) ? k : k + 1];
            EXPECT_EQ(ov[size_t(off)], want[size_t(i * 2 + j)]) << "lbd=" << lbd << " rbd=" << rbd;
          }
      }
    }
}

// ---- numpy matmul / dot -----------------------------------------------------------------------------

TEST(NumpyMatmul, Shapes) {
  auto av = ints(6, 11), bv = ints(3, 12), cv = ints(12, 13);
  Array a = make({2, 3}, av), v = make({3}, bv);
  // [2,3] @ [3] -> [2]: row dot products.
  auto mv = vals(matmul(a, v));
  ASSERT_EQ(mv.size(), 2u);
  EXPECT_EQ(mv[0], av[0] * bv[0] + av[1] * bv[1] + av[2] * bv[2]);
  EXPECT_EQ(mv[1], av[3] * bv[0] + av[4] * bv[1] + av[5] * bv[2]);
  // [3] @ [3] -> scalar.
  Array s = matmul(v, v);
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.item<double>(), dotp(bv, bv));
  // [3] @ [3,4] -> [4].
  Array vm = matmul(v, make({3, 4}, cv));
  EXPECT_EQ(vm.shape(), (Shape{4}));
  for (int j = 0; j < 4; ++j)
    EXPECT_EQ(vals(vm)[size_t(j)], bv[0] * cv[size_t(j)] + bv[1] * cv[size_t(4 + j)] + bv[2] * cv[size_t(8 + j)]);
  // Batched with broadcast leading dims: [2,1,3,4] @ [5,4,2] -> [2,5,3,2].
  auto xv = ints(2 * 3 * 4, 14), yv = ints(5 * 4 * 2, 15);
  Array m = matmul(make({2, 1, 3, 4}, xv), make({5, 4, 2}, yv));
  EXPECT_EQ(m.shape(), (Shape{2, 5, 3, 2}));
  auto mvv = vals(m);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j)
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 2; ++c) {
          double acc = 0;
          for (int k = 0; k < 4; ++k) acc += xv[size_t((i * 3 + r) * 4 + k)] * yv[size_t((j * 4 + k) * 2 + c)];
          EXPECT_EQ(mvv[size_t(((i * 5 + j) * 3 + r) * 2 + c)], acc);
        }
  // [3,4] @ [2,4,5] -> [2,3,5] (2-D lhs against a batched rhs).
  auto pv = ints(12, 16), qv = ints(40, 17);
  Array mq = matmul(make({3, 4}, pv), make({2, 4, 5}, qv));
  EXPECT_EQ(mq.shape(), (Shape{2, 3, 5}));
  auto mqv = vals(mq);
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 5; ++c) {
        double acc = 0;
        for (int k = 0; k < 4; ++k) acc += pv[size_t(r * 4 + k)] * qv[size_t((b * 4 + k) * 5 + c)];
        EXPECT_EQ(mqv[size_t((b * 3 + r) * 5 + c)], acc);
      }
  // [2,3,4] @ [4,5] -> [2,3,5]; mixed dtypes promote (i32 @ f32 -> f32).
  Array mixed = matmul(make({2, 3, 4}, xv, i32), make({4, 2}, ints(8, 18)));
  EXPECT_EQ(mixed.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(mixed.dtype(), f32);
}

TEST(NumpyMatmul, Errors) {
  try {
    matmul(make({2, 3}, ints(6, 1)), make({4, 5}, ints(20, 2)));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("matmul"), std::string::npos) << m;
    EXPECT_NE(m.find("[2,3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[4,5]"), std::string::npos) << m;
    EXPECT_NE(m.find("test_dot_general.cc"), std::string::npos) << m;
  }
  EXPECT_THROW(matmul(make({2, 3, 4}, ints(24, 1)), make({5, 4, 2}, ints(40, 2))), ShapeError);
  EXPECT_THROW(matmul(make({}, {2}), make({3}, ints(3, 2))), ShapeError);
  EXPECT_THROW(dot(make({2, 3}, ints(6, 1)), make({2, 3}, ints(6, 2))), ShapeError);
}

TEST(NumpyMatmul, Dot) {
  auto av = ints(24, 21), bv = ints(4 * 4 * 2, 22);
  // numpy dot of N-D arrays: [2,3,4] . [4,4,2] contracts a's last with b's second-to-last and
  // keeps all other dims: out[i,j,p,q] = sum_k a[i,j,k] b[p,k,q].
  Array r = dot(make({2, 3, 4}, av), make({4, 4, 2}, bv));
  EXPECT_EQ(r.shape(), (Shape{2, 3, 4, 2}));
  auto rv = vals(r);
  for (int i = 0; i < 6; ++i)
    for (int p = 0; p < 4; ++p)
      for (int q = 0; q < 2; ++q) {
        double acc = 0;
        for (int k = 0; k < 4; ++k) acc += av[size_t(i * 4 + k)] * bv[size_t((p * 4 + k) * 2 + q)];
        EXPECT_EQ(rv[size_t((i * 4 + p) * 2 + q)], acc);
      }
  // Scalar times array.
  auto sv = vals(dot(make({}, {3}), make({2}, {1, -2})));
  EXPECT_EQ(sv, (std::vector<double>{3, -6}));
  EXPECT_EQ(dot(make({3}, {1, 2, 3}), make({3}, {4, 5, 6})).item<double>(), 32);  // 4+10+18
}

}  // namespace
