// minijax conformance cases of the general gather and the scatter family with JAX's dimension
// numbers: windows, collapsed/inserted dims, batching dims, repeated indices and every mode.
#include "conformance.h"
#include "core/gather_scatter.h"
#include "core/gather_scatter_params.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;
using M = lax::GatherScatterMode;

Array ints(std::vector<double> v, mj::Shape s, mj::DType d = mj::i32) { return mj::array(v, s, d); }

lax::GatherOptions gopt(M m, std::optional<double> fill = std::nullopt) {
  lax::GatherOptions o;
  o.mode = m;
  o.fill_value = fill;
  return o;
}
lax::ScatterOptions sopt(M m) {
  lax::ScatterOptions o;
  o.mode = m;
  return o;
}

// 2x3 windows of a [4, 5] operand at two-entry start vectors; (3, 4) and (-1, 0) are out of bounds.
const lax::GatherDimensionNumbers kWin{{1, 2}, {}, {0, 1}, {}, {}};
Array win_idx() { return ints({0, 1, 3, 4, -1, 0}, {3, 2}); }
// Rows of a [5, 3] operand at indices of shape [2, 2] (a trailing index vector of 1); 7 is out of bounds.
const lax::GatherDimensionNumbers kRows{{2}, {0}, {0}, {}, {}};
Array row_idx() { return ints({4, 0, 7, 4}, {2, 2, 1}); }
// Per batch element b of [2, 4, 3]: rows indices[b, j] of operand[b] (batching dims 0 and 0).
const lax::GatherDimensionNumbers kBatch{{2}, {1}, {1}, {0}, {0}};
Array batch_idx() { return ints({3, 0, 3, 1, 2, 1}, {2, 3, 1}); }

Case gather_case(const char* label, lax::GatherDimensionNumbers d, std::vector<int64_t> sizes,
                 lax::GatherOptions o, Array x, Array i, bool diff = true) {
  return Case{"gather",
              label,
              one([d, sizes, o](const V& a) { return lax::gather(a[0], a[1], d, sizes, o); }),
              {std::move(x), std::move(i)},
              diff,
              diff,
              true,
              {false, true}};
}

using ScatterFn = Array (*)(const Array&, const Array&, const Array&, const lax::ScatterDimensionNumbers&,
                            const lax::ScatterOptions&, mj::SL);
Case any_scatter(const char* prim, ScatterFn fn, const char* label, lax::ScatterDimensionNumbers d,
                 lax::ScatterOptions o, Array x, Array i, Array u, bool diff = true) {
  return Case{prim,
              label,
              one([fn, d, o](const V& a) { return fn(a[0], a[1], a[2], d, o, mj::SL::current()); }),
              {std::move(x), std::move(i), std::move(u)},
              diff,
              diff,
              true,
              {false, true, false}};
}
Case scatter_case(const char* label, lax::ScatterDimensionNumbers d, lax::ScatterOptions o, Array x, Array i,
                  Array u, bool diff = true) {
  return any_scatter("scatter_add", &lax::scatter_add, label, d, o, std::move(x), std::move(i), std::move(u),
                     diff);
}
lax::ScatterOptions unique(M m) {
  lax::ScatterOptions o = sopt(m);
  o.unique_indices = true;
  return o;
}
// Well-separated values (no ties between operand and updates, so min/max are differentiable).
Array spread(const mj::Shape& s, uint32_t seed, double offset, mj::DType dt = mj::f64) {
  Array r = rnd(s, seed, 0, 0.1);
  std::vector<double> v(size_t(r.size()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = double((i * 7) % v.size()) * 0.5 + offset + r.data<double>()[i];
  return mj::array(v, s, dt);
}

const lax::ScatterDimensionNumbers kSWin = lax::mirrored_scatter_dims(kWin);
const lax::ScatterDimensionNumbers kSRows{{1}, {0}, {0}, {}, {}};  // rows of [5, 3] at indices [5, 1]
const lax::ScatterDimensionNumbers kSBatch = lax::mirrored_scatter_dims(kBatch);
// Repeated windows: (0, 1) twice and (2, 3), plus (3, 4), clipped to (2, 3) or dropped.
Array swin_idx() { return ints({0, 1, 2, 3, 0, 1, 3, 4}, {4, 2}); }
// Rows 1, 1, 4, 9 (9 out of bounds) and -1.
Array srow_idx() { return ints({1, 1, 4, 9, -1}, {5, 1}); }

Add cases({
    gather_case("windows_clip", kWin, {2, 3}, gopt(M::CLIP), rnd({4, 5}, 2901), win_idx()),
    gather_case("windows_fill", kWin, {2, 3}, gopt(M::FILL_OR_DROP, 0.5), rnd({4, 5}, 2902), win_idx()),
    gather_case("windows_promise", kWin, {2, 3}, gopt(M::PROMISE_IN_BOUNDS), rnd({4, 5}, 2903),
                ints({0, 1, 2, 2, 1, 0}, {3, 2})),
    gather_case("rows_fill_default", kRows, {1, 3}, gopt(M::FILL_OR_DROP), rnd({5, 3}, 2904), row_idx()),
    gather_case("rows_u32_clip", kRows, {1, 3}, gopt(M::CLIP), rnd({5, 3}, 2905),
                ints({4, 0, 7, 4}, {2, 2, 1}, mj::u32)),
    gather_case("batching", kBatch, {1, 1, 3}, gopt(M::CLIP), rnd({2, 4, 3}, 2906), batch_idx()),
    gather_case("f32", kWin, {2, 3}, gopt(M::FILL_OR_DROP), rnd({4, 5}, 2907, -1, 1, mj::f32), win_idx(),
                false),
    gather_case("i32", kWin, {2, 3}, gopt(M::FILL_OR_DROP, -7), rnd_int({4, 5}, 2908, -50, 50), win_idx(),
                false),
    gather_case("u32_batching", kBatch, {1, 1, 3}, gopt(M::CLIP),
                mj::astype(rnd_int({2, 4, 3}, 2909, 0, 90), mj::u32), batch_idx(), false),
    scatter_case("windows_repeated_clip", kSWin, sopt(M::CLIP), rnd({4, 5}, 2910), swin_idx(),
                 rnd({4, 2, 3}, 2911)),
    scatter_case("windows_repeated_drop", kSWin, sopt(M::FILL_OR_DROP), rnd({4, 5}, 2912), swin_idx(),
                 rnd({4, 2, 3}, 2913)),
    scatter_case("rows_drop", kSRows, sopt(M::FILL_OR_DROP), rnd({5, 3}, 2914), srow_idx(),
                 rnd({5, 3}, 2915)),
    scatter_case("rows_promise", kSRows, sopt(M::PROMISE_IN_BOUNDS), rnd({5, 3}, 2916),
                 ints({1, 1, 4, 0, 4}, {5, 1}), rnd({5, 3}, 2917)),
    scatter_case("batching", kSBatch, sopt(M::FILL_OR_DROP), rnd({2, 4, 3}, 2918), batch_idx(),
                 rnd({2, 3, 3}, 2919)),
    scatter_case("f32", kSWin, sopt(M::CLIP), rnd({4, 5}, 2920, -1, 1, mj::f32), swin_idx(),
                 rnd({4, 2, 3}, 2921, -1, 1, mj::f32), false),
    scatter_case("i32", kSRows, sopt(M::FILL_OR_DROP), rnd_int({5, 3}, 2922, -50, 50), srow_idx(),
                 rnd_int({5, 3}, 2923, -50, 50), false),
    scatter_case("u32", kSWin, sopt(M::CLIP), mj::astype(rnd_int({4, 5}, 2924, 0, 90), mj::u32), swin_idx(),
                 mj::astype(rnd_int({4, 2, 3}, 2925, 0, 90), mj::u32), false),
    // scatter: the last update wins for repeated windows (JVP: JAX's ids scheme); with unique
    // indices the plain scatter JVP and its transpose.
    any_scatter("scatter", &lax::scatter, "windows_repeated_clip", kSWin, sopt(M::CLIP), rnd({4, 5}, 2926),
                swin_idx(), rnd({4, 2, 3}, 2927)),
    any_scatter("scatter", &lax::scatter, "rows_drop", kSRows, sopt(M::FILL_OR_DROP), rnd({5, 3}, 2928),
                srow_idx(), rnd({5, 3}, 2929)),
    any_scatter("scatter", &lax::scatter, "unique_batching", kSBatch, unique(M::CLIP), rnd({2, 4, 3}, 2930),
                ints({3, 0, 2, 1, 2, 0}, {2, 3, 1}), rnd({2, 3, 3}, 2931)),
    any_scatter("scatter", &lax::scatter, "i32", kSRows, sopt(M::CLIP), rnd_int({5, 3}, 2932, -50, 50),
                srow_idx(), rnd_int({5, 3}, 2933, -50, 50), false),
    // scatter_mul: differentiable in the updates only with unique indices (JAX).
    any_scatter("scatter_mul", &lax::scatter_mul, "unique_rows", kSRows, unique(M::FILL_OR_DROP),
                rnd({5, 3}, 2934), ints({1, 3, 4, 9, 0}, {5, 1}), rnd({5, 3}, 2935)),
    any_scatter("scatter_mul", &lax::scatter_mul, "windows_repeated", kSWin, sopt(M::CLIP), rnd({4, 5}, 2936),
                swin_idx(), rnd({4, 2, 3}, 2937), false),
    any_scatter("scatter_mul", &lax::scatter_mul, "i32", kSWin, sopt(M::FILL_OR_DROP),
                rnd_int({4, 5}, 2938, -9, 9), swin_idx(), rnd_int({4, 2, 3}, 2939, -3, 3), false),
    // scatter_min / scatter_max: JAX's extremal JVP; repeated windows, no ties.
    any_scatter("scatter_min", &lax::scatter_min, "windows_repeated", kSWin, sopt(M::CLIP),
                spread({4, 5}, 2940, 0), swin_idx(), spread({4, 2, 3}, 2941, 0.25)),
    any_scatter("scatter_min", &lax::scatter_min, "batching_drop", kSBatch, sopt(M::FILL_OR_DROP),
                spread({2, 4, 3}, 2942, 0), batch_idx(), spread({2, 3, 3}, 2943, 0.25)),
    any_scatter("scatter_max", &lax::scatter_max, "rows_drop", kSRows, sopt(M::FILL_OR_DROP),
                spread({5, 3}, 2944, 0), srow_idx(), spread({5, 3}, 2945, 0.25)),
    any_scatter("scatter_max", &lax::scatter_max, "windows_repeated", kSWin, sopt(M::CLIP),
                spread({4, 5}, 2946, 0), swin_idx(), spread({4, 2, 3}, 2947, 0.25)),
    any_scatter("scatter_max", &lax::scatter_max, "u32", kSWin, sopt(M::CLIP),
                mj::astype(rnd_int({4, 5}, 2948, 0, 90), mj::u32), swin_idx(),
                mj::astype(rnd_int({4, 2, 3}, 2949, 0, 90), mj::u32), false),
    any_scatter("scatter_min", &lax::scatter_min, "i32", kSRows, sopt(M::CLIP),
                rnd_int({5, 3}, 2950, -50, 50), srow_idx(), rnd_int({5, 3}, 2951, -50, 50), false),
    // Each scatter at f32 (not differentiated: f32 finite differences are too coarse, as in
    // cases_f32.cc) and at the integer dtypes it lacks above.
    any_scatter("scatter", &lax::scatter, "f32_unique", kSRows, unique(M::FILL_OR_DROP),
                rnd({5, 3}, 2952, -1, 1, mj::f32), ints({4, 0, 2}, {3, 1}), rnd({3, 3}, 2953, -1, 1, mj::f32), false),
    any_scatter("scatter", &lax::scatter, "u32", kSWin, sopt(M::FILL_OR_DROP),
                mj::astype(rnd_int({4, 5}, 2954, 0, 90), mj::u32), swin_idx(),
                mj::astype(rnd_int({4, 2, 3}, 2955, 0, 90), mj::u32), false),
    any_scatter("scatter_mul", &lax::scatter_mul, "f32_unique", kSRows, unique(M::CLIP),
                rnd({5, 3}, 2956, -1, 1, mj::f32), ints({2, 4, 0}, {3, 1}), rnd({3, 3}, 2957, -1, 1, mj::f32), false),
    any_scatter("scatter_mul", &lax::scatter_mul, "u32", kSRows, sopt(M::CLIP),
                mj::astype(rnd_int({5, 3}, 2958, 0, 9), mj::u32), srow_idx(),
                mj::astype(rnd_int({5, 3}, 2959, 0, 5), mj::u32), false),
    any_scatter("scatter_min", &lax::scatter_min, "f32", kSWin, sopt(M::FILL_OR_DROP),
                spread({4, 5}, 2960, 0, mj::f32), swin_idx(), spread({4, 2, 3}, 2961, 0.25, mj::f32), false),
    any_scatter("scatter_min", &lax::scatter_min, "u32", kSWin, sopt(M::CLIP),
                mj::astype(rnd_int({4, 5}, 2962, 0, 90), mj::u32), swin_idx(),
                mj::astype(rnd_int({4, 2, 3}, 2963, 0, 90), mj::u32), false),
    any_scatter("scatter_max", &lax::scatter_max, "f32", kSRows, sopt(M::CLIP),
                spread({5, 3}, 2964, 0, mj::f32), srow_idx(), spread({5, 3}, 2965, 0.25, mj::f32), false),
    any_scatter("scatter_max", &lax::scatter_max, "i32", kSRows, sopt(M::FILL_OR_DROP),
                rnd_int({5, 3}, 2966, -50, 50), srow_idx(), rnd_int({5, 3}, 2967, -50, 50), false),
});

}  // namespace
}  // namespace conformance
