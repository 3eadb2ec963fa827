// minijax conformance cases: the windowed reductions (reduce_window_sum/max/min, reduce_window,
// select_and_scatter_add, select_and_gather_add) at f64 (every check) and f32 (values only).
#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

// Well-separated values without ties (a permutation plus a small jitter), so that max/min and
// the select_and_* selections do not change under the finite differences' perturbations.
Array distinct(const mj::Shape& s, uint32_t seed, mj::DType dt = mj::f64) {
  Array r = rnd(s, seed, 0, 1);
  std::vector<double> v(size_t(r.size()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = double((i * 7) % v.size()) * 0.25 - 1 + r.data<double>()[i] * 0.05;
  return mj::array(v, s, dt);
}

const Pairs kPad{{1, 0}, {0, 2}};

// (value, index) pairs: the larger value, the smaller index on ties.
V argmax_pairs(const V& acc, const V& x) {
  Array take = lax::or_(lax::gt(x[0], acc[0]), lax::and_(lax::eq(x[0], acc[0]), lax::lt(x[1], acc[1])));
  return {lax::select_n(take, {acc[0], x[0]}), lax::select_n(take, {acc[1], x[1]})};
}

std::vector<Case> cases_at(mj::DType dt, const std::string& tag, uint32_t seed) {
  const bool diff = dt == mj::f64;  // f32 finite differences are meaningless (cases_f32.cc)
  auto r = [&](const mj::Shape& s, uint32_t k) { return rnd(s, seed + k, -1, 1, dt); };
  auto d = [&](const mj::Shape& s, uint32_t k) { return distinct(s, seed + k, dt); };
  const lax::SelectPrim ge = lax::SelectPrim::ge, le = lax::SelectPrim::le;
  return {
      Case{"reduce_window_sum",
           tag + "strided_padded",
           one([](const V& a) { return lax::reduce_window_sum(a[0], {2, 3}, {2, 1}, kPad); }),
           {r({4, 6}, 1)},
           diff},
      Case{"reduce_window_sum",
           tag + "dilated",
           one([](const V& a) { return lax::reduce_window_sum(a[0], {2, 2}, {1, 2}, kPad, {2, 1}, {1, 2}); }),
           {r({3, 5}, 2)},
           diff},
      Case{"reduce_window_sum",
           tag + "pool_same",
           one([](const V& a) { return lax::reduce_window_sum(a[0], {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"); }),
           {r({2, 4, 4, 8}, 3)},
           diff},
      Case{"reduce_window_max",
           tag + "pool",
           one([](const V& a) { return lax::reduce_window_max(a[0], {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"); }),
           {d({2, 4, 4, 8}, 4)},
           diff},
      Case{"reduce_window_max",
           tag + "dilated_padded",
           one([](const V& a) { return lax::reduce_window_max(a[0], {2, 2}, {2, 1}, kPad, {1, 2}, {2, 1}); }),
           {d({4, 5}, 5)},
           diff},
      Case{"reduce_window_min",
           tag + "strided",
           one([](const V& a) { return lax::reduce_window_min(a[0], {3, 2}, {1, 2}, "SAME"); }),
           {d({4, 6}, 6)},
           diff},
      Case{"select_and_gather_add",
           tag + "ge",
           one([ge](const V& a) {
             return lax::select_and_gather_add(a[0], a[1], ge, {2, 2}, {2, 1}, kPad, {1, 2}, {1, 1});
           }),
           {r({4, 5}, 7), d({4, 5}, 8)},
           diff},
      Case{"select_and_gather_add",
           tag + "le",
           one([le](const V& a) {
             return lax::select_and_gather_add(a[0], a[1], le, {1, 2, 2, 1}, {1, 2, 2, 1},
                                               {{0, 0}, {0, 0}, {0, 0}, {0, 0}});
           }),
           {r({2, 4, 4, 8}, 9), d({2, 4, 4, 8}, 10)},
           diff},
      // source has the windowed shape of operand [4, 4]: ((4 + 1 - 2) / 2 + 1, (4 + 2 - 2) / 1 + 1).
      Case{"select_and_scatter_add",
           tag + "ge",
           one([ge](const V& a) {
             return lax::select_and_scatter_add(a[0], a[1], ge, {2, 2}, {2, 1}, kPad);
           }),
           {r({2, 5}, 11), d({4, 4}, 12)},
           diff},
      Case{"select_and_scatter_add",
           tag + "le_dilated",
           one([le](const V& a) {
             return lax::select_and_scatter_add(a[0], a[1], le, {2, 2}, {1, 1}, {{0, 0}, {0, 0}}, {1, 1},
                                                {2, 1});
           }),
           {r({2, 3}, 13), d({4, 4}, 14)},
           diff},
      // The generic reduce_window: JAX v0.7.0 gives it a JVP (tests/autodiff/test_window_check_grads.cc
      // checks it) but no VJP, so the differentiation checks are off here.
      Case{"reduce_window",
           tag + "product_init_operand",
           one([](const V& a) {
             return lax::reduce_window(
                 a[0], a[1], [](const Array& u, const Array& v) { return lax::mul(u, v); }, {2, 2}, {1, 2},
                 kPad);
           }),
           {r({4, 4}, 15), rnd({}, seed + 16, 0.5, 1.5, dt)},
           false},
      Case{"reduce_window",
           tag + "argmax_pairs",
           [dt](const V& a) {
             return lax::reduce_window({a[0], a[1]}, {lax::scalar(-INFINITY, dt), lax::scalar(1e6, mj::i32)},
                                       argmax_pairs, {2, 3}, {2, 1}, "SAME");
           },
           {d({4, 6}, 17), rnd_int({4, 6}, seed + 18, 0, 24)},
           false},
  };
}

Add f64_cases(cases_at(mj::f64, "", 1500));
Add f32_cases(cases_at(mj::f32, "f32_", 1550));

}  // namespace
}  // namespace conformance
