// minijax conformance cases whose dims divide 2, 4 and 8 (the meshes of sharded_check.cc), so
// the sharded check shards the dims a shape-changing primitive keeps whole (its params' sizes).
#include "conformance.h"

namespace conformance {
namespace {
namespace lax = mj::lax;
using V = std::vector<Array>;

// Well-separated distinct values (no ties, so argmax and reduce_max are differentiable).
Array spread(const mj::Shape& s, uint32_t seed) {
  Array r = rnd(s, seed, 0, 1);
  std::vector<double> v(size_t(r.size()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double((i * 5) % v.size()) * 0.25 - 2 + r.data<double>()[i] * 0.05;
  return mj::array(v, s, mj::f64);
}

Array idx(int64_t i) { return mj::array({double(i)}, {}, mj::i32); }

Add cases({
    Case{"slice", "keep_dim0", one([](const V& a) { return lax::slice(a[0], {0, 1}, {4, 7}); }),
         {rnd({4, 8}, 1001)}},
    Case{"slice", "strided_keep_dim1", one([](const V& a) { return lax::slice(a[0], {1, 0}, {4, 8}, {2, 1}); }),
         {rnd({4, 8}, 1002)}},
    Case{"dynamic_slice", "keep_dim1",
         one([](const V& a) { return lax::dynamic_slice(a[0], {a[1], a[2]}, {2, 8}); }),
         {rnd({4, 8}, 1003), idx(1), idx(0)}, true, true, true, {false, true, true}},
    Case{"dynamic_update_slice", "keep_dim1",
         one([](const V& a) { return lax::dynamic_update_slice(a[0], a[1], {a[2], a[3]}); }),
         {rnd({4, 8}, 1004), rnd({2, 8}, 1005), idx(2), idx(0)}, true, true, true, {false, false, true, true}},
    Case{"concatenate", "dim1_of_4_rows", one([](const V& a) { return lax::concatenate({a[0], a[1]}, 1); }),
         {rnd({4, 2}, 1006), rnd({4, 6}, 1007)}},
    Case{"pad", "dim1_only", one([](const V& a) { return lax::pad(a[0], a[1], {{0, 0, 0}, {1, 2, 1}}); }),
         {rnd({4, 4}, 1008), mj::scalar(0.25, mj::f64)}},
    Case{"gather", "wide_rows", one([](const V& a) { return lax::gather(a[0], a[1]); }),
         {rnd({6, 8}, 1009), mj::array({5, 0, 3, 3, 1, 2, 4, 0}, {4, 2}, mj::i32)}, true, true, true,
         {false, true}},
    Case{"scatter_add", "wide_rows", one([](const V& a) { return lax::scatter_add(a[0], a[1], a[2]); }),
         {rnd({4, 8}, 1010), mj::array({3, 0, 3, 1}, {4}, mj::i32), rnd({4, 8}, 1011)}, true, true, true,
         {false, true, false}},
    Case{"iota", "plus_arg_dim1", one([](const V& a) { return lax::iota(mj::f64, {4, 8}, 1) + a[0]; }),
         {rnd({4, 8}, 1012)}},
    Case{"iota", "plus_arg_dim0", one([](const V& a) { return lax::iota(mj::f64, {8, 4}, 0) * a[0]; }),
         {rnd({8, 4}, 1013)}},
    Case{"argmax", "rows_of_8", one([](const V& a) { return lax::argmax(a[0], 1); }), {spread({4, 8}, 1014)}},
    Case{"argmin", "cols_of_4", one([](const V& a) { return lax::argmin(a[0], 0); }), {spread({4, 8}, 1015)}},
    Case{"cumsum", "rows_of_8", one([](const V& a) { return lax::cumsum(a[0], 1); }), {rnd({4, 8}, 1016)}},
    Case{"rev", "dim1_of_4x8", one([](const V& a) { return lax::rev(a[0], {1}); }), {rnd({4, 8}, 1017)}},
    Case{"reduce_sum", "dim1_of_4x8", one([](const V& a) { return lax::reduce_sum(a[0], {1}); }),
         {rnd({4, 8}, 1018)}},
    Case{"reduce_max", "dim1_of_4x8", one([](const V& a) { return lax::reduce_max(a[0], {1}); }),
         {spread({4, 8}, 1019)}},
    Case{"reduce_min", "dim0_of_8x4", one([](const V& a) { return lax::reduce_min(a[0], {0}); }),
         {spread({8, 4}, 1020)}},
    Case{"reduce_prod", "dim1_of_2x8", one([](const V& a) { return lax::reduce_prod(a[0], {1}); }),
         {rnd({2, 8}, 1021, 0.5, 1.5)}},
    Case{"dot_general", "matmul_8", one([](const V& a) { return lax::dot_general(a[0], a[1], {{1}, {0}, {}, {}}); }),
         {rnd({4, 8}, 1022), rnd({8, 4}, 1023)}},
    Case{"dot_general", "batched_8",
         one([](const V& a) { return lax::dot_general(a[0], a[1], {{2}, {1}, {0}, {0}}); }),
         {rnd({2, 4, 8}, 1024), rnd({2, 8, 4}, 1025)}},
    Case{"reshape", "merge_4x8", one([](const V& a) { return lax::reshape(a[0], {32}); }), {rnd({4, 8}, 1026)}},
    Case{"reshape", "split_4x8", one([](const V& a) { return lax::reshape(a[0], {2, 2, 8}); }),
         {rnd({4, 8}, 1027)}},
    Case{"broadcast_in_dim", "rows_8", one([](const V& a) { return lax::broadcast_in_dim(a[0], {4, 8}, {1}); }),
         {rnd({8}, 1028)}},
    Case{"transpose", "4x8x2", one([](const V& a) { return lax::transpose(a[0], {1, 2, 0}); }),
         {rnd({4, 8, 2}, 1029)}},
    Case{"squeeze", "4x1x8", one([](const V& a) { return lax::squeeze(a[0], {1}); }), {rnd({4, 1, 8}, 1030)}},
    Case{"expand_dims", "4x8", one([](const V& a) { return lax::expand_dims(a[0], {1}); }), {rnd({4, 8}, 1031)}},
    Case{"mul", "8x4", one([](const V& a) { return lax::mul(a[0], a[1]); }), {rnd({8, 4}, 1032), rnd({8, 4}, 1033)}},
    Case{"select_n", "8x4", one([](const V& a) { return lax::select_n(lax::gt(a[0], a[1]), {a[0], a[1]}); }),
         {rnd({8, 4}, 1034), rnd({8, 4}, 1035)}, false},
    Case{"iota_2x32_shape", "xor_arg",
         [](const V& a) {
           auto [hi, lo] = lax::iota_2x32_shape({4, 8});
           return V{lax::xor_(hi, a[0]), lax::xor_(lo, a[0])};
         },
         {mj::astype(rnd_int({4, 8}, 1036, 0, 1000), mj::u32)}, false, false, false},
    Case{"threefry2x32", "4x8",
         [](const V& a) {
           auto [y0, y1] = lax::threefry2x32(a[0], a[1], a[2], a[3]);
           return V{y0, y1};
         },
         {mj::astype(rnd_int({4, 8}, 1037, 0, 1000), mj::u32), mj::astype(rnd_int({4, 8}, 1038, 0, 1000), mj::u32),
          mj::astype(rnd_int({4, 8}, 1039, 0, 1000), mj::u32), mj::astype(rnd_int({4, 8}, 1040, 0, 1000), mj::u32)},
         false},
    Case{"optimization_barrier", "4x8", [](const V& a) { return lax::optimization_barrier({a[0], a[1]}); },
         {rnd({4, 8}, 1041), rnd({8}, 1042)}},
});

}  // namespace
}  // namespace conformance
