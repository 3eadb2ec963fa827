// minijax conformance cases of cumprod, cummax, cummin, cumlogsumexp (f64 with derivatives, f32,
// i32, u32, forward and reverse, every axis) and of reduce_and, reduce_or, reduce_xor (bool, i32, u32).
#include <cmath>
#include <limits>

#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;

// Well-separated distinct values (no ties, so the running max/min is differentiable).
Array distinct(const mj::Shape& s, uint32_t seed) {
  Array r = rnd(s, seed, 0, 1);
  std::vector<double> v(size_t(r.size()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = double((i * 7) % v.size()) * 0.5 - 2 + r.data<double>()[i] * 0.1;
  return mj::array(v, s, mj::f64);
}

Array ints(const std::vector<double>& v, const mj::Shape& s, mj::DType d) { return mj::array(v, s, d); }

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

using Fn = Array (*)(const Array&, int64_t, bool, mj::SL);
Case cum(const std::string& prim, const std::string& label, Fn f, int64_t axis, bool rev, Array x,
         bool differentiable = true) {
  return Case{prim,
              label,
              one([f, axis, rev](const V& a) { return f(a[0], axis, rev, mj::SL::current()); }),
              {std::move(x)},
              differentiable};
}

Array f32s(const mj::Shape& s, uint32_t seed, double lo, double hi) { return rnd(s, seed, lo, hi, mj::f32); }

Add cases({
    // f64: the derivative checks (first and second order, VJP vs JVP, vmap, compiled, sharded).
    cum("cumprod", "axis1", lax::cumprod, 1, false, rnd({2, 4}, 1301, 0.5, 1.5)),
    cum("cumprod", "axis0_reverse", lax::cumprod, 0, true, rnd({3, 2}, 1302, -1.5, 1.5)),
    cum("cumprod", "with_zero", lax::cumprod, 0, false,
        mj::array({1.5, 0.0, 2.0, -1.0, 0.5, 3.0}, {6}, mj::f64)),
    cum("cumprod", "axis2_of_3d", lax::cumprod, 2, true, rnd({2, 2, 3}, 1303, 0.5, 1.5)),
    cum("cummax", "axis1", lax::cummax, 1, false, distinct({3, 5}, 1304)),
    cum("cummax", "axis0_reverse", lax::cummax, 0, true, distinct({5, 2}, 1305)),
    cum("cummin", "axis1", lax::cummin, 1, false, distinct({3, 5}, 1306)),
    cum("cummin", "axis0_reverse", lax::cummin, 0, true, distinct({5, 2}, 1307)),
    cum("cumlogsumexp", "axis1", lax::cumlogsumexp, 1, false, rnd({2, 5}, 1308, -2, 2)),
    cum("cumlogsumexp", "axis0_reverse", lax::cumlogsumexp, 0, true, rnd({4, 3}, 1309, -2, 2)),
    cum("cumlogsumexp", "large", lax::cumlogsumexp, 0, false, rnd({6}, 1310, 700, 710)),
    // -inf elements: logaddexp(-inf, -inf) = -inf, never NaN; +inf and NaN propagate.
    cum("cumlogsumexp", "infinities", lax::cumlogsumexp, 0, false,
        mj::array({-kInf, -kInf, 0.5, -kInf, kInf, 1.0, kNaN, 2.0}, {8}, mj::f64), false),
    cum("cummax", "nan", lax::cummax, 0, false, mj::array({1.0, kNaN, 3.0, -kInf, kInf}, {5}, mj::f64),
        false),
    cum("cummin", "nan_reverse", lax::cummin, 0, true, mj::array({1.0, kNaN, 3.0, -kInf, kInf}, {5}, mj::f64),
        false),
    // Dims dividing 2, 4 and 8: the sharded check shards the kept dim (the scanned one is replicated).
    cum("cumprod", "rows_of_8", lax::cumprod, 1, false, rnd({4, 8}, 1311, 0.5, 1.5)),
    cum("cummax", "rows_of_8", lax::cummax, 1, true, distinct({4, 8}, 1312)),
    cum("cummin", "cols_of_8", lax::cummin, 0, false, distinct({8, 4}, 1313)),
    cum("cumlogsumexp", "rows_of_8", lax::cumlogsumexp, 1, false, rnd({4, 8}, 1314, -3, 3)),
    // f32: long scans (compiled loops against eager), not differentiated.
    cum("cumprod", "f32_600", lax::cumprod, 1, false, f32s({2, 600}, 1315, 0.9, 1.1), false),
    cum("cummax", "f32_3000", lax::cummax, 1, false, f32s({2, 3000}, 1316, -1, 1), false),
    cum("cummin", "f32_3000_reverse", lax::cummin, 0, true, f32s({3000, 3}, 1317, -1, 1), false),
    cum("cumlogsumexp", "f32_3000", lax::cumlogsumexp, 1, false, f32s({2, 3000}, 1318, -5, 5), false),
    cum("cumlogsumexp", "f32_reverse", lax::cumlogsumexp, 0, true, f32s({40, 17}, 1319, -80, 80), false),
    // i32 / u32: wrapping products, signed and unsigned extremes.
    cum("cumprod", "i32_wrapping", lax::cumprod, 0, false,
        ints({3, -70000, 90000, 7, -1, 2147483647, 0, 5}, {8}, mj::i32), false),
    cum("cumprod", "u32_wrapping", lax::cumprod, 1, true,
        ints({3, 70000, 90000, 4294967295.0, 2, 3}, {2, 3}, mj::u32), false),
    cum("cummax", "i32", lax::cummax, 1, false,
        ints({-5, -2147483648.0, 7, 3, 2147483647, -1}, {2, 3}, mj::i32), false),
    cum("cummax", "u32", lax::cummax, 0, true, ints({5, 4294967295.0, 2147483648.0, 0, 1, 3}, {6}, mj::u32),
        false),
    cum("cummin", "i32", lax::cummin, 0, false, ints({5, -3, 8, -2147483648.0, 0, 2}, {3, 2}, mj::i32),
        false),
    cum("cummin", "u32", lax::cummin, 1, false,
        ints({5, 4294967295.0, 2147483648.0, 0, 1, 3}, {2, 3}, mj::u32), false),
    // Boolean and bitwise reductions.
    Case{"reduce_and",
         "bool",
         one([](const V& a) { return lax::reduce_and(a[0], {1}); }),
         {ints({1, 1, 1, 1, 0, 1, 0, 0, 0}, {3, 3}, mj::bool_)},
         false},
    Case{"reduce_and",
         "i32_all_axes",
         one([](const V& a) { return lax::reduce_and(a[0], {0, 1}); }),
         {ints({-1, 7, 15, -3, 2147483647, 13}, {2, 3}, mj::i32)},
         false},
    Case{"reduce_and",
         "u32",
         one([](const V& a) { return lax::reduce_and(a[0], {0}); }),
         {ints({4294967295.0, 7, 12, 4294967294.0, 5, 4}, {2, 3}, mj::u32)},
         false},
    Case{"reduce_or",
         "bool",
         one([](const V& a) { return lax::reduce_or(a[0], {0}); }),
         {ints({0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0}, {3, 4}, mj::bool_)},
         false},
    Case{"reduce_or",
         "i32",
         one([](const V& a) { return lax::reduce_or(a[0], {1}); }),
         {ints({1, 2, 4, -2147483648.0, 0, 0, 8, 16, 0}, {3, 3}, mj::i32)},
         false},
    Case{"reduce_or",
         "u32_none",
         one([](const V& a) { return lax::reduce_or(a[0], {}); }),
         {ints({1, 4294967295.0, 0}, {3}, mj::u32)},
         false},
    Case{"reduce_xor",
         "bool",
         one([](const V& a) { return lax::reduce_xor(a[0], {1}); }),
         {ints({1, 1, 1, 1, 0, 1, 0, 0, 0}, {3, 3}, mj::bool_)},
         false},
    Case{"reduce_xor",
         "i32",
         one([](const V& a) { return lax::reduce_xor(a[0], {0}); }),
         {ints({5, -1, 3, 6, 2147483647, 3, 9, 0, 3}, {3, 3}, mj::i32)},
         false},
    Case{"reduce_xor",
         "i32_long",
         one([](const V& a) { return lax::reduce_xor(a[0], {1}); }),
         {rnd_int({3, 3000}, 1320, 0, 1000000)},
         false},
    // Dims dividing 2, 4 and 8: a sharded reduced dim is reduced locally, then all_reduce(and/or/xor).
    Case{"reduce_or",
         "rows_of_8",
         one([](const V& a) { return lax::reduce_or(a[0], {1}); }),
         {ints({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
               {4, 8}, mj::bool_)},
         false},
    Case{"reduce_and",
         "cols_of_8",
         one([](const V& a) { return lax::reduce_and(a[0], {0}); }),
         {rnd_int({8, 4}, 1321, -8, 8)},
         false},
});

}  // namespace
}  // namespace conformance
