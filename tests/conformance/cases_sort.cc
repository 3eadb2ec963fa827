// minijax conformance cases of the sorting primitives: sort (one operand, key-value, two keys, each
// dimension) and top_k, in f64 (differentiable: keys without ties), f32 with NaN, ±0.0 and ties,
// and i32/u32 with ties; dims dividing 2, 4 and 8 for the sharded check.
#include <cmath>
#include <limits>

#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;

// Well-separated distinct values in a scrambled order (no ties: sort and top_k are differentiable).
Array spread(const mj::Shape& s, uint32_t seed, mj::DType dt = mj::f64) {
  Array r = rnd(s, seed, 0, 1);
  std::vector<double> v(static_cast<size_t>(r.size()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = double((i * 7) % v.size()) * 0.25 - 2 + r.data<double>()[i] * 0.05;
  return mj::array(v, s, dt);
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// f32 rows holding NaN, ±inf, -0.0 and +0.0, and ties.
Array specials32() {
  return mj::array({1.5, kNaN, -0.0, 0.0, -kInf, 2.0, -0.0, kNaN, kInf, 1.5, 0.0,   -3.0,  //
                    0.0, -0.0, 2.0,  2.0, -kNaN, 7.0, -1.0, kNaN, -0.0, 3.0, -kInf, 0.0},
                   {2, 12}, mj::f32);
}

Array u32s(const std::vector<double>& v, const mj::Shape& s) { return mj::array(v, s, mj::u32); }

V both(const std::pair<Array, Array>& p) { return V{p.first, p.second}; }

Add cases({
    // f64, no ties: every rule (JVP and VJP against finite differences, second order, vmap).
    Case{"sort", "rows", one([](const V& a) { return lax::sort(a[0], 1); }), {spread({3, 5}, 1301)}},
    Case{"sort", "dim0", one([](const V& a) { return lax::sort(a[0], 0); }), {spread({4, 3}, 1302)}},
    Case{"sort",
         "key_val",
         [](const V& a) { return lax::sort(V{a[0], a[1]}, 1); },
         {spread({2, 5}, 1303), rnd({2, 5}, 1304)}},
    // Two keys: an i32 first key with ties, broken by a distinct f64 second key; an f64 payload.
    Case{"sort",
         "two_keys",
         [](const V& a) { return lax::sort(V{a[0], a[1], a[2]}, 0, true, 2); },
         {rnd_int({6, 2}, 1305, 0, 3), spread({6, 2}, 1306), rnd({6, 2}, 1307)},
         true,
         true,
         true,
         {true, false, false}},
    Case{"sort",
         "descending_argsort",
         one([](const V& a) { return mj::argsort(a[0], 0, true, true); }),
         {spread({5, 2}, 1308)}},
    // f32 with NaN, ±inf, ±0.0 and ties, stable and "unstable", and as the key of an i32 payload.
    Case{"sort", "f32_specials", one([](const V& a) { return lax::sort(a[0], 1); }), {specials32()}, false},
    Case{"sort",
         "f32_unstable",
         one([](const V& a) { return lax::sort(a[0], 1, false); }),
         {specials32()},
         false},
    Case{"sort",
         "f32_key_i32_val",
         [](const V& a) { return lax::sort(V{a[0], lax::iota(mj::i32, {2, 12}, 1)}, 1); },
         {specials32()},
         false},
    Case{"sort",
         "f32_long",
         one([](const V& a) { return lax::sort(a[0], 1); }),
         {rnd({3, 700}, 1309, -1, 1, mj::f32)},
         false},
    Case{"sort",
         "i32_ties",
         one([](const V& a) { return lax::sort(a[0], 0); }),
         {rnd_int({9, 3}, 1310, -4, 4)},
         false},
    Case{"sort",
         "u32",
         one([](const V& a) { return lax::sort(a[0], 1); }),
         {u32s({4294967295.0, 0, 7, 2147483648.0, 7, 1, 2147483647.0, 3}, {2, 4})},
         false},
    Case{"sort",
         "i32_key_f64_val",
         [](const V& a) { return lax::sort(V{a[0], a[1]}, 1); },
         {rnd_int({3, 8}, 1311, 0, 3), rnd({3, 8}, 1312)},
         false},
    // dims dividing 2, 4 and 8 (sharded check: the other dim keeps its sharding).
    Case{"sort", "rows_of_8", one([](const V& a) { return lax::sort(a[0], 1); }), {spread({4, 8}, 1313)}},
    Case{"sort", "cols_of_8", one([](const V& a) { return lax::sort(a[0], 0); }), {spread({8, 4}, 1314)}},

    Case{"top_k", "f64", [](const V& a) { return both(lax::top_k(a[0], 3)); }, {spread({3, 6}, 1321)}},
    Case{"top_k",
         "f64_rank3_k1",
         [](const V& a) { return both(lax::top_k(a[0], 1)); },
         {spread({2, 2, 4}, 1322)}},
    Case{"top_k", "f64_all", [](const V& a) { return both(lax::top_k(a[0], 5)); }, {spread({5}, 1323)}},
    Case{"top_k", "rows_of_8", [](const V& a) { return both(lax::top_k(a[0], 4)); }, {spread({4, 8}, 1324)}},
    Case{
        "top_k", "f32_specials", [](const V& a) { return both(lax::top_k(a[0], 9)); }, {specials32()}, false},
    Case{"top_k",
         "f32_long",
         [](const V& a) { return both(lax::top_k(a[0], 10)); },
         {rnd({4, 1000}, 1325, -1, 1, mj::f32)},
         false},
    Case{"top_k",
         "f32_k200",
         [](const V& a) { return both(lax::top_k(a[0], 200)); },
         {rnd({2, 300}, 1326, -1, 1, mj::f32)},
         false},
    Case{"top_k",
         "i32_ties",
         [](const V& a) { return both(lax::top_k(a[0], 4)); },
         {rnd_int({3, 8}, 1327, -2, 2)},
         false},
    Case{"top_k",
         "u32",
         [](const V& a) { return both(lax::top_k(a[0], 3)); },
         {u32s({4294967295.0, 0, 7, 2147483648.0, 7, 1, 2147483647.0, 3}, {2, 4})},
         false},
});

}  // namespace
}  // namespace conformance
