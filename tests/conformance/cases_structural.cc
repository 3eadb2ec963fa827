// minijax conformance cases: shape ops, reductions, dot_general, slicing/indexing, memory and
// PRNG bit primitives.
#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;

Array distinct(const mj::Shape& s, uint32_t seed) {
  // A permutation of well-separated values (no ties, so max/min/argmax are differentiable).
  Array r = rnd(s, seed, 0, 1);
  std::vector<double> v(size_t(r.size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double((i * 7) % v.size()) * 0.5 - 1 + r.data<double>()[i] * 0.1;
  return mj::array(v, s, mj::f64);
}

Array idx(int64_t i) { return mj::array({double(i)}, {}, mj::i32); }
Array u32s(std::vector<double> v) { return mj::array(v, {int64_t(v.size())}, mj::u32); }

Add cases({
    Case{"reshape", "", one([](const V& a) { return lax::reshape(a[0], {3, 2}); }), {rnd({2, 3}, 41)}},
    Case{"squeeze", "", one([](const V& a) { return lax::squeeze(a[0], {1}); }), {rnd({2, 1, 3}, 42)}},
    Case{"expand_dims", "", one([](const V& a) { return lax::expand_dims(a[0], {0, 2}); }), {rnd({2, 3}, 43)}},
    Case{"transpose", "", one([](const V& a) { return lax::transpose(a[0], {2, 0, 1}); }), {rnd({2, 3, 4}, 44)}},
    Case{"rev", "", one([](const V& a) { return lax::rev(a[0], {0, 2}); }), {rnd({2, 3, 2}, 45)}},
    Case{"reduce_sum", "axis1", one([](const V& a) { return lax::reduce_sum(a[0], {1}); }), {rnd({2, 3, 4}, 46)}},
    Case{"reduce_sum", "all", one([](const V& a) { return lax::reduce_sum(a[0], {0, 1}); }), {rnd({3, 4}, 47)}},
    Case{"reduce_max", "", one([](const V& a) { return lax::reduce_max(a[0], {1}); }), {distinct({3, 4}, 48)}},
    Case{"reduce_min", "", one([](const V& a) { return lax::reduce_min(a[0], {0}); }), {distinct({3, 4}, 49)}},
    Case{"reduce_prod", "", one([](const V& a) { return lax::reduce_prod(a[0], {1}); }), {rnd({2, 4}, 50, 0.5, 1.5)}},
    Case{"reduce_prod", "with_zero", one([](const V& a) { return lax::reduce_prod(a[0], {0}); }),
         {mj::array({0.0, 2.0, 3.0, 1.5, -1.0, 2.0}, {3, 2}, mj::f64)}},
    Case{"argmax", "", one([](const V& a) { return lax::argmax(a[0], 1); }), {distinct({3, 4}, 51)}},
    Case{"argmin", "", one([](const V& a) { return lax::argmin(a[0], 0); }), {distinct({3, 4}, 52)}},
    Case{"cumsum", "forward", one([](const V& a) { return lax::cumsum(a[0], 1); }), {rnd({2, 4}, 53)}},
    Case{"cumsum", "reverse", one([](const V& a) { return lax::cumsum(a[0], 0, true); }), {rnd({3, 2}, 54)}},
    Case{"dot_general", "matmul",
         one([](const V& a) { return lax::dot_general(a[0], a[1], {{1}, {0}, {}, {}}); }),
         {rnd({3, 4}, 55), rnd({4, 5}, 56)}},
    Case{"dot_general", "batched",
         one([](const V& a) { return lax::dot_general(a[0], a[1], {{2}, {1}, {0}, {0}}); }),
         {rnd({2, 3, 4}, 57), rnd({2, 4, 5}, 58)}},
    Case{"dot_general", "contract_dim0",
         one([](const V& a) { return lax::dot_general(a[0], a[1], {{0}, {0}, {}, {}}); }),
         {rnd({4, 3}, 59), rnd({4, 2}, 60)}},
    Case{"dot_general", "vector_dot",
         one([](const V& a) { return lax::dot_general(a[0], a[1], {{0}, {0}, {}, {}}); }),
         {rnd({5}, 61), rnd({5}, 62)}},
    Case{"dot_general", "f32", one([](const V& a) { return lax::dot_general(a[0], a[1], {{1}, {0}, {}, {}}); }),
         {rnd({3, 4}, 63, -1, 1, mj::f32), rnd({4, 2}, 64, -1, 1, mj::f32)}, false},
    Case{"slice", "strided", one([](const V& a) { return lax::slice(a[0], {0, 1}, {3, 5}, {2, 2}); }),
         {rnd({4, 5}, 65)}},
    Case{"slice", "unit", one([](const V& a) { return lax::slice(a[0], {1}, {4}); }), {rnd({5}, 66)}},
    Case{"dynamic_slice", "",
         one([](const V& a) { return lax::dynamic_slice(a[0], {a[1], a[2]}, {2, 2}); }),
         {rnd({4, 5}, 67), idx(1), idx(2)}, true, true, true, {false, true, true}},
    Case{"dynamic_slice", "clamped",
         one([](const V& a) { return lax::dynamic_slice(a[0], {a[1]}, {3}); }),
         {rnd({5}, 68), idx(4)}, true, true, true, {false, true}},
    Case{"dynamic_update_slice", "",
         one([](const V& a) { return lax::dynamic_update_slice(a[0], a[1], {a[2], a[3]}); }),
         {rnd({4, 5}, 69), rnd({2, 3}, 70), idx(1), idx(2)}, true, true, true, {false, false, true, true}},
    Case{"concatenate", "", one([](const V& a) { return lax::concatenate({a[0], a[1], a[2]}, 1); }),
         {rnd({2, 1}, 71), rnd({2, 3}, 72), rnd({2, 2}, 73)}},
    Case{"pad", "interior_and_negative",
         one([](const V& a) { return lax::pad(a[0], a[1], {{1, -1, 1}, {0, 2, 0}}); }),
         {rnd({3, 2}, 74), mj::scalar(0.5, mj::f64)}},
    Case{"gather", "rows", one([](const V& a) { return lax::gather(a[0], a[1]); }),
         {rnd({5, 3}, 75), mj::array({4.0, 0.0, 4.0, 2.0}, {2, 2}, mj::i32)}, true, true, true, {false, true}},
    Case{"scatter_add", "rows", one([](const V& a) { return lax::scatter_add(a[0], a[1], a[2]); }),
         {rnd({4, 2}, 76), mj::array({3.0, 0.0, 3.0}, {3}, mj::i32), rnd({3, 2}, 77)}, true, true, true,
         {false, true, false}},
    Case{"iota", "", one([](const V&) { return lax::iota(mj::i32, {2, 3}, 1); }), {}, false, false, false},
    Case{"device_put", "pinned_host",
         one([](const V& a) { return lax::device_put(a[0], mj::MemoryKind::pinned_host); }), {rnd({2, 3}, 78)}},
    Case{"sharding_constraint", "x_of_2",
         one([](const V& a) {
           static auto m = std::make_shared<const mj::Mesh>(std::vector<int>{0, 1}, mj::Shape{2},
                                                            std::vector<std::string>{"x"});
           return mj::with_sharding_constraint(a[0], mj::NamedSharding{m, mj::P(mj::None{}, "x")});
         }),
         {rnd({3, 4}, 81)}},
    Case{"optimization_barrier", "",
         [](const V& a) { return lax::optimization_barrier({a[0], a[1]}); }, {rnd({3}, 79), rnd({2, 2}, 80)}},
    Case{"threefry2x32", "",
         [](const V& a) {
           auto [y0, y1] = lax::threefry2x32(a[0], a[1], a[2], a[3]);
           return V{y0, y1};
         },
         {u32s({0, 1}), u32s({0, 7}), u32s({0, 2}), u32s({3, 4})}, false},
    Case{"iota_2x32_shape", "",
         [](const V&) {
           auto [hi, lo] = lax::iota_2x32_shape({2, 3});
           return V{hi, lo};
         },
         {}, false, false, false},
    Case{"shift_right_logical", "", one([](const V& a) { return lax::shift_right_logical(a[0], a[1]); }),
         {u32s({4294967295.0, 16, 5}), u32s({4, 2, 33})}, false},
    Case{"shift_left", "", one([](const V& a) { return lax::shift_left(a[0], a[1]); }),
         {u32s({1, 16, 5}), u32s({31, 2, 32})}, false},
    Case{"xor", "", one([](const V& a) { return lax::xor_(a[0], a[1]); }), {u32s({12, 10, 0}), u32s({10, 3, 7})}, false},
    Case{"bitcast_convert_type", "u32_to_f32",
         one([](const V& a) { return lax::bitcast_convert_type(a[0], mj::f32); }),
         {u32s({1065353216.0, 1073741824.0})}, false},
});

}  // namespace
}  // namespace conformance
