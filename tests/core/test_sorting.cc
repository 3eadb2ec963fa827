// Tests of the sorting primitives (sort, top_k) and argsort: NaN and ±0.0 order, stability with
// ties, several keys, num_keys, descending argsort, top_k's total order, eager and compiled (the
// runtime's paths: radix sorts, permutations, strided rows, top_k's selection and partial sort),
// their derivatives (hand VJPs and check_grads) and batching. Expected values are by hand from
// JAX's definitions (lax.py _sort_lt_comparator, XLA:CPU's TopK total order) unless said otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include <minijax/minijax.h>

namespace {

using namespace minijax;
using V = std::vector<Array>;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Array arr(const std::vector<double>& v, DType d = f32) { return mj::array(v, {int64_t(v.size())}, d); }

std::vector<double> vals(const Array& a) {
  Array c = a.concrete();
  std::vector<double> r(static_cast<size_t>(c.size()));
  dispatch_dtype(c.dtype(), [&]<class T>() {
    const T* p = c.data<T>();
    for (size_t i = 0; i < r.size(); ++i) {
      if constexpr (std::is_same_v<T, bfloat16>) r[i] = double(float(p[i]));
      else r[i] = double(p[i]);
    }
  });
  return r;
}

// Values equal (NaN matching NaN) with the same sign bit (so -0.0 and +0.0, -NaN and +NaN differ).
void expect_same(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
    EXPECT_TRUE(ok && std::signbit(got[i]) == std::signbit(want[i]))
        << what << " [" << i << "]: got " << got[i] << ", want " << want[i];
  }
}

// The bytes of two arrays are identical.
void expect_bits(const Array& got, const Array& want, const std::string& what) {
  Array g = got.concrete(), w = want.concrete();
  ASSERT_EQ(g.aval(), w.aval()) << what;
  EXPECT_EQ(std::memcmp(g.raw_data(), w.raw_data(), size_t(w.aval().nbytes())), 0) << what;
}

// f eagerly and under jit: the same bits (compiled vs eager), returned eager.
V both(const std::function<V(const V&)>& f, const V& args, const std::string& what) {
  V e = f(args);
  V c = mj::jit([&](const V& a) { return f(a); })(args);
  EXPECT_EQ(e.size(), c.size()) << what;
  for (size_t i = 0; i < e.size() && i < c.size(); ++i)
    expect_bits(c[i], e[i], what + " output " + std::to_string(i));
  return e;
}

// ---- sort order ---------------------------------------------------------------------------------

// JAX's comparator: -inf < ... < -0.0 == +0.0 < ... < inf < NaN (either sign); the sort is stable,
// so the zeros and the NaNs keep their input order, bits included.
TEST(Sort, NaNsLastAndSignedZerosEqualKeepTheirOrder) {
  const std::vector<double> x = {1.5, kNaN, -0.0, 0.0, -kInf, 2.0, -0.0, -kNaN, kInf, 0.0};
  const std::vector<double> want = {-kInf, -0.0, 0.0, -0.0, 0.0, 1.5, 2.0, kInf, kNaN, -kNaN};
  for (DType d : {f32, f64, bf16}) {
    for (bool stable : {true, false}) {
      V r = both([&](const V& a) { return V{lax::sort(a[0], 0, stable)}; }, {arr(x, d)}, dtype_name(d));
      expect_same(vals(r[0]), want, std::string("sort ") + dtype_name(d));
    }
  }
}

TEST(Sort, IntegersAndBools) {
  V r = both([](const V& a) { return V{lax::sort(a[0]), lax::sort(a[1]), lax::sort(a[2])}; },
             {arr({3, -7, 2147483647, -2147483648.0, 0, 3}, i32),
              arr({4294967295.0, 0, 2147483648.0, 7}, u32), arr({1, 0, 1, 0}, bool_)},
             "ints");
  EXPECT_EQ(vals(r[0]), (std::vector<double>{-2147483648.0, -7, 0, 3, 3, 2147483647}));
  EXPECT_EQ(vals(r[1]), (std::vector<double>{0, 7, 2147483648.0, 4294967295.0}));
  EXPECT_EQ(vals(r[2]), (std::vector<double>{0, 0, 1, 1}));
}

TEST(Sort, StableKeyValueWithTies) {
  // keys 3 1 3 2 1: the two 1s (values 1, 4) and the two 3s (values 0, 2) keep their order.
  V r = both([](const V& a) { return lax::sort(a, 0); }, {arr({3, 1, 3, 2, 1}, i32), arr({0, 1, 2, 3, 4})},
             "kv");
  EXPECT_EQ(vals(r[0]), (std::vector<double>{1, 1, 2, 3, 3}));
  EXPECT_EQ(vals(r[1]), (std::vector<double>{1, 4, 3, 0, 2}));
  auto [k, v] = lax::sort_key_val(arr({2.0, -0.0, 0.0, kNaN, 1.0}), arr({0, 1, 2, 3, 4}, i32));
  expect_same(vals(k), {-0.0, 0.0, 1.0, 2.0, kNaN}, "sort_key_val keys");
  EXPECT_EQ(vals(v), (std::vector<double>{1, 2, 4, 0, 3}));
}

TEST(Sort, SeveralKeysAreLexicographicAndNumKeysCounts) {
  const V in = {arr({1, 0, 1, 0, 1}, i32), arr({2.0, 5.0, 1.0, 5.0, kNaN}), arr({0, 1, 2, 3, 4}, i32)};
  // (k0, k1): (0,5) idx1, (0,5) idx3 [tie: input order], (1,1) idx2, (1,2) idx0, (1,NaN) idx4.
  V two = both([](const V& a) { return lax::sort(a, 0, true, 2); }, in, "two keys");
  EXPECT_EQ(vals(two[2]), (std::vector<double>{1, 3, 2, 0, 4}));
  expect_same(vals(two[1]), {5.0, 5.0, 1.0, 2.0, kNaN}, "second key");
  // num_keys = 1: k1 is only carried along; k0 ties keep input order.
  V one = both([](const V& a) { return lax::sort(a, 0, true, 1); }, in, "one key");
  EXPECT_EQ(vals(one[2]), (std::vector<double>{1, 3, 0, 2, 4}));
}

TEST(Sort, AlongEachDimension) {
  Array x = mj::array({3, 1, 2, 0, 5, 4}, {2, 3}, f32);
  V r = both([](const V& a) { return V{lax::sort(a[0], 0), lax::sort(a[0], 1), lax::sort(a[0], -1)}; }, {x},
             "dims");
  EXPECT_EQ(vals(r[0]), (std::vector<double>{0, 1, 2, 3, 5, 4}));
  EXPECT_EQ(vals(r[1]), (std::vector<double>{1, 2, 3, 0, 4, 5}));
  EXPECT_EQ(vals(r[2]), vals(r[1]));
  EXPECT_EQ(r[0].shape(), (Shape{2, 3}));
}

TEST(Sort, PrintsAsJax) {
  auto j = trace_to_jaxpr(
      [](const V& a) {
        V r = lax::sort(V{a[0], a[0]}, -1, true, 2);
        r.push_back(lax::top_k(a[0], 2).second);
        return r;
      },
      {ShapedArray{{2, 3}, f32}});
  const std::string s = to_string(j);
  EXPECT_NE(s.find("sort[dimension=1 is_stable=True num_keys=2]"), std::string::npos) << s;
  EXPECT_NE(s.find("i32[2,2] = top_k[k=2]"), std::string::npos) << s;
}

// ---- argsort ------------------------------------------------------------------------------------

TEST(Argsort, AscendingAndDescendingKeepEqualElementsInOrder) {
  const Array x = arr({3, 1, 2, 1, 3, 2});
  V r = both(
      [](const V& a) {
        return V{mj::argsort(a[0]), mj::argsort(a[0], 0, true, true), mj::argsort(a[0], -1, false, true)};
      },
      {x}, "argsort");
  EXPECT_EQ(r[0].dtype(), i32);
  EXPECT_EQ(vals(r[0]), (std::vector<double>{1, 3, 2, 5, 0, 4}));
  // jnp.argsort(descending=True): the 3s (0, 4), the 2s (2, 5), the 1s (1, 3), each in input order.
  EXPECT_EQ(vals(r[1]), (std::vector<double>{0, 4, 2, 5, 1, 3}));
  // Not stable: the reverse of the ascending sort (JAX skips the double reversal).
  EXPECT_EQ(vals(r[2]), (std::vector<double>{4, 0, 5, 2, 3, 1}));
  V n = both([](const V& a) { return V{mj::argsort(a[0]), mj::argsort(a[0], 0, true, true)}; },
             {arr({kNaN, 1, -0.0, 0.0})}, "argsort NaN");
  EXPECT_EQ(vals(n[0]), (std::vector<double>{2, 3, 1, 0}));
  EXPECT_EQ(vals(n[1]), (std::vector<double>{0, 1, 2, 3}));
  Array m = mj::array({2, 0, 1, 1, 0, 2}, {2, 3}, i32);
  EXPECT_EQ(vals(mj::argsort(m, 0)), (std::vector<double>{1, 0, 0, 0, 1, 1}));
}

// ---- top_k --------------------------------------------------------------------------------------

TEST(TopK, LargestFirstTiesInIndexOrder) {
  V r = both(
      [](const V& a) {
        auto [v, i] = lax::top_k(a[0], 3);
        return V{v, i};
      },
      {arr({1, 3, 3, 2, 3})}, "ties");
  EXPECT_EQ(vals(r[0]), (std::vector<double>{3, 3, 3}));
  EXPECT_EQ(vals(r[1]), (std::vector<double>{1, 2, 4}));
  EXPECT_EQ(r[1].dtype(), i32);
}

// XLA:CPU's order (JAX v0.7.0's top_k on the CPU): the IEEE total order of the bits,
// +NaN > +inf > 1 > +0.0 > -0.0 > -inf > -NaN.
TEST(TopK, NaNAndSignedZerosInTheTotalOrder) {
  const std::vector<double> x = {0.0, -0.0, kNaN, -kNaN, -kInf, kInf, 1.0};
  for (DType d : {f32, f64, bf16}) {
    V r = both(
        [](const V& a) {
          auto [v, i] = lax::top_k(a[0], 7);
          return V{v, i};
        },
        {arr(x, d)}, dtype_name(d));
    EXPECT_EQ(vals(r[1]), (std::vector<double>{2, 5, 6, 0, 1, 4, 3})) << dtype_name(d);
    expect_same(vals(r[0]), {kNaN, kInf, 1.0, 0.0, -0.0, -kInf, -kNaN}, dtype_name(d));
    V z = both(
        [](const V& a) {
          auto [v, i] = lax::top_k(a[0], 1);
          return V{v, i};
        },
        {arr({-0.0, 0.0}, d)}, "zeros");
    EXPECT_EQ(vals(z[1]), (std::vector<double>{1}));  // +0.0 ranks above -0.0
  }
}

TEST(TopK, IntegersRowsAndKZero) {
  V r = both(
      [](const V& a) {
        auto [v, i] = lax::top_k(a[0], 2);
        auto [w, j] = lax::top_k(a[1], 2);
        auto [e, f] = lax::top_k(a[0], 0);
        return V{v, i, w, j, e, f};
      },
      {mj::array({-5, 7, 7, -1, 0, -3, 4, 4}, {2, 4}, i32), arr({4294967295.0, 0, 2147483648.0}, u32)},
      "ints");
  EXPECT_EQ(vals(r[0]), (std::vector<double>{7, 7, 4, 4}));
  EXPECT_EQ(vals(r[1]), (std::vector<double>{1, 2, 2, 3}));
  EXPECT_EQ(vals(r[2]), (std::vector<double>{4294967295.0, 2147483648.0}));
  EXPECT_EQ(vals(r[3]), (std::vector<double>{0, 2}));
  EXPECT_EQ(r[4].shape(), (Shape{2, 0}));
}

// ---- the runtime's paths against eager ------------------------------------------------------------

Array random_f32(int64_t n, uint32_t seed, double nan_frac, bool zeros) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    const double p = (u(g) + 1) / 2;
    x = p < nan_frac                   ? (u(g) < 0 ? -kNaN : kNaN)
        : zeros && p < nan_frac + 0.02 ? (u(g) < 0 ? -0.0 : 0.0)
                                       : std::round(u(g) * 1000) / 8;
  }
  return arr(v);
}

TEST(SortRuntime, LongRowsMatchEager) {
  const Array x = random_f32(100003, 1, 0.01, true);  // ties, NaNs of both signs, ±0.0
  both([](const V& a) { return V{lax::sort(a[0])}; }, {x}, "f32 radix");
  both([](const V& a) { return V{lax::sort(mj::astype(a[0], f64))}; }, {x}, "f64 radix");
  both([](const V& a) { return V{lax::sort(mj::astype(a[0] * 8.0, i32))}; }, {x}, "i32 radix");
  both([](const V& a) { return V{lax::sort(mj::astype(mj::abs(a[0]) * 8.0, u32))}; }, {x}, "u32 radix");
  both([](const V& a) { return lax::sort(V{a[0], lax::iota(i32, {100003})}); }, {x}, "key + index");
  both([](const V& a) { return lax::sort(V{mj::astype(a[0], f64), lax::iota(i32, {100003})}); }, {x},
       "f64 key + index");
  both([](const V& a) { return lax::sort(V{mj::astype(a[0], bf16), a[0]}); }, {x}, "bf16 key");
  both([](const V& a) { return lax::sort(V{mj::astype(a[0] * 0.01, i32), a[0]}, 0, true, 2); }, {x},
       "two keys");
}

TEST(SortRuntime, StridedRowsAndManyRowsMatchEager) {
  const Array x = lax::reshape(random_f32(300 * 67, 2, 0.02, true), {300, 67});
  both([](const V& a) { return V{lax::sort(a[0], 0), lax::sort(a[0], 1)}; }, {x}, "f32 rows");
  both([](const V& a) { return lax::sort(V{a[0], lax::iota(i32, {300, 67}, 0)}, 0); }, {x},
       "strided key + index");
  const Array y = lax::reshape(random_f32(4 * 5 * 6, 3, 0.1, true), {4, 5, 6});
  both([](const V& a) { return V{lax::sort(a[0], 1), lax::sort(mj::astype(a[0], f64), 1)}; }, {y}, "rank 3");
}

TEST(TopKRuntime, LongRowsMatchEager) {
  const Array x = lax::reshape(random_f32(64 * 3000, 4, 0.01, true), {64, 3000});
  for (int64_t k : {1, 10, 128, 129, 700, 3000}) {
    both(
        [k](const V& a) {
          auto [v, i] = lax::top_k(a[0], k);
          auto [w, j] = lax::top_k(mj::astype(a[0] * 8.0, i32), k);
          auto [e, f] = lax::top_k(mj::astype(a[0], f64), k);
          return V{v, i, w, j, e, f};
        },
        {x}, "k=" + std::to_string(k));
  }
}

// ---- derivatives ----------------------------------------------------------------------------------

TEST(SortGrad, VjpPermutesTheCotangentBack) {
  // sorted = x[[1, 2, 0]], so d sum(sorted * w) / dx = w scattered back: x0 <- w2, x1 <- w0, x2 <- w1.
  Array w = arr({10, 20, 30}, f64);
  auto f = [&](const Array& x) { return mj::sum(lax::sort(x) * w); };
  expect_same(vals(mj::grad(f)(arr({3, 1, 2}, f64))), {30, 10, 20}, "eager grad");
  expect_same(vals(mj::jit(mj::grad(f))(arr({3, 1, 2}, f64))), {30, 10, 20}, "jit grad");
  // top_k: the k largest x[2], x[0] get w0, w1; the rest 0.
  auto g = [&](const Array& x) { return mj::sum(lax::top_k(x, 2).first * lax::slice(w, {0}, {2})); };
  expect_same(vals(mj::grad(g)(arr({3, 1, 5}, f64))), {20, 0, 10}, "top_k grad");
}

TEST(SortGrad, CheckGradsSecondOrder) {
  Array x = mj::array({0.3, -1.2, 2.5, 0.9, -0.4, 1.7}, {2, 3}, f64);
  Array y = mj::array({1.1, 0.2, -0.7, 0.5, 2.2, -1.9}, {2, 3}, f64);
  EXPECT_NO_THROW(mj::check_grads([](const Array& a) { return lax::sort(a, 1); }, x, 2));
  EXPECT_NO_THROW(mj::check_grads([](const Array& a) { return lax::sort(a, 0); }, x, 2));
  EXPECT_NO_THROW(mj::check_grads([](const Array& a, const Array& b) { return lax::sort(V{a, b}, 1); },
                                  std::tuple{x, y}, 2));
  EXPECT_NO_THROW(mj::check_grads([](const Array& a) { return lax::top_k(a, 2).first; }, x, 2));
  EXPECT_NO_THROW(mj::check_grads([](const Array& a) { return mj::sin(lax::top_k(a * a, 3).first); }, x, 2));
}

// ---- batching -------------------------------------------------------------------------------------

TEST(SortBatch, MappedAlongEachAxisMatchesALoop) {
  Array x = mj::array({3, 1, 2, 0, 5, 4, 9, 8, 7, 6, 11, 10}, {2, 3, 2}, f32);
  for (int64_t ax : {0, 1, 2}) {
    auto r = mj::vmap(
        [](const Array& a) {
          auto [v, i] = lax::top_k(a, 1);
          return V{lax::sort(a, 0), v, i};
        },
        {.in_axes = {ax}})(x);
    for (int64_t b = 0; b < x.shape()[size_t(ax)]; ++b) {
      std::vector<int64_t> lo(3, 0), hi = x.shape();
      lo[size_t(ax)] = b;
      hi[size_t(ax)] = b + 1;
      Array e = lax::squeeze(lax::slice(x, lo, hi), {ax});
      auto [v, i] = lax::top_k(e, 1);
      EXPECT_EQ(vals(r[0][b]), vals(lax::sort(e, 0))) << ax;
      EXPECT_EQ(vals(r[1][b]), vals(v)) << ax;
      EXPECT_EQ(vals(r[2][b]), vals(i)) << ax;
    }
  }
}

}  // namespace
