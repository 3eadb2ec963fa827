// Tests of the collective primitives and the reference SPMD executor (run_spmd): values on
// meshes (8) and (4,2), an SPMD matmul, traffic/live-bytes stats, autodiff structure, errors.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/collectives.h"
#include "jit/reference/reference_executor.h"

namespace {
using namespace minijax;

Mesh mesh8() { return Mesh({0, 1, 2, 3, 4, 5, 6, 7}, {8}, {"x"}); }
Mesh mesh42() { return Mesh({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2}, {"x", "y"}); }

// The program of a one-input function on local avals.
ClosedJaxpr prog(const std::function<std::vector<Array>(const std::vector<Array>&)>& f,
                 std::vector<ShapedArray> avals) {
  return trace_to_jaxpr(f, avals);
}

// The printed program on one line (the printer breaks long equations over several lines).
std::string flat(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '\n' || c == ' ') {
      if (!o.empty() && o.back() != ' ' && o.back() != '[') o += ' ';
    } else {
      if (c == ']' && !o.empty() && o.back() == ' ') o.pop_back();
      o += c;
    }
  }
  return o;
}

std::vector<double> vals(const Array& a) {
  std::vector<double> v;
  const float* p = a.data<float>();
  for (int64_t i = 0; i < a.aval().size(); ++i) v.push_back(p[i]);
  return v;
}

// Per-device f32 arguments from a function of (mesh position, element index).
std::vector<std::vector<Array>> args_of(const Mesh& m, const Shape& s, const std::function<double(size_t, int64_t)>& f) {
  std::vector<std::vector<Array>> a;
  for (size_t p = 0; p < m.num_devices(); ++p) {
    std::vector<double> v(size_t(shape_size(s)));
    for (int64_t k = 0; k < int64_t(v.size()); ++k) v[size_t(k)] = f(p, k);
    a.push_back({array(v, s, f32)});
  }
  return a;
}

TEST(Collectives, AllGatherOfIotaBlocksIsTheGlobalArange) {
  Mesh m = mesh8();
  auto j = prog([](const std::vector<Array>& x) { return std::vector<Array>{lax::all_gather(x[0], {"x"}, 8, 0)}; },
                {ShapedArray{{2}, f32}});
  EXPECT_NE(flat(to_string(j)).find("all_gather[axis_name=x axis_size=8 gather_dimension=0 tiled=True]"),
            std::string::npos)
      << to_string(j);
  EXPECT_EQ(j.out_avals()[0].shape, (Shape{16}));
  // device p holds [2p, 2p+1]: gathering in rank order yields 0..15 everywhere.
  SpmdStats st;
  auto out = run_spmd(j, m, args_of(m, {2}, [](size_t p, int64_t k) { return 2.0 * double(p) + double(k); }), &st);
  std::vector<double> want(16);
  std::iota(want.begin(), want.end(), 0.0);
  for (auto& o : out) EXPECT_EQ(vals(o[0]), want);
  // Direct model: each device sends its 8-byte shard to 7 peers and receives 7 shards.
  ASSERT_EQ(st.collectives.size(), 1u);
  EXPECT_EQ(st.collectives[0].primitive, "all_gather");
  for (size_t p = 0; p < 8; ++p) {
    EXPECT_EQ(st.collectives[0].bytes_sent[p], 56);
    EXPECT_EQ(st.collectives[0].bytes_received[p], 56);
    // arg (8 bytes) and result (64 bytes) coexist: peak 72.
    EXPECT_EQ(st.peak_live_bytes[p], 72);
  }
}

TEST(Collectives, AllGatherOnASubAxisAndUntiled) {
  Mesh m = mesh42();  // position p = 2*i + j, coordinates (i, j)
  auto j = prog([](const std::vector<Array>& x) {
    return std::vector<Array>{lax::all_gather(x[0], {"x"}, 4, 0), lax::all_gather(x[0], {"y"}, 2, 0, false)};
  }, {ShapedArray{{3}, f32}});
  // shard of (i, j): 100*j + 3*i + k. Gather over x (group: same j) -> 100*j + 0..11; untiled over
  // y (group: same i) -> [[3i+k], [100+3i+k]].
  auto out = run_spmd(j, m, args_of(m, {3}, [](size_t p, int64_t k) { return 100.0 * double(p % 2) + 3.0 * double(p / 2) + double(k); }));
  for (size_t p = 0; p < 8; ++p) {
    double jj = double(p % 2), ii = double(p / 2);
    std::vector<double> w;
    for (int k = 0; k < 12; ++k) w.push_back(100 * jj + k);
    EXPECT_EQ(vals(out[p][0]), w);
    EXPECT_EQ(out[p][1].shape(), (Shape{2, 3}));
    EXPECT_EQ(vals(out[p][1]), (std::vector<double>{3 * ii, 3 * ii + 1, 3 * ii + 2, 100 + 3 * ii, 101 + 3 * ii, 102 + 3 * ii}));
  }
}

TEST(Collectives, AllReduceSumMaxOverOneAndTwoAxes) {
  Mesh m = mesh42();
  auto j = prog([](const std::vector<Array>& x) {
    return std::vector<Array>{lax::psum(x[0], {"y"}, 2), lax::all_reduce(x[0], {"x", "y"}, 8, "max"),
                              lax::psum(x[0], {"x", "y"}, 8)};
  }, {ShapedArray{{2}, f32}});
  EXPECT_NE(flat(to_string(j)).find("all_reduce[axis_name=('x', 'y') axis_size=8 reduction=max]"), std::string::npos)
      << to_string(j);
  // device p holds [p, -p]. Over y (pairs 2i, 2i+1): [4i+1, -(4i+1)]; max over all: [7, 0];
  // sum over all: 0+..+7 = 28 -> [28, -28].
  auto out = run_spmd(j, m, args_of(m, {2}, [](size_t p, int64_t k) { return k ? -double(p) : double(p); }));
  for (size_t p = 0; p < 8; ++p) {
    double i = double(p / 2);
    EXPECT_EQ(vals(out[p][0]), (std::vector<double>{4 * i + 1, -(4 * i + 1)}));
    EXPECT_EQ(vals(out[p][1]), (std::vector<double>{7, 0}));
    EXPECT_EQ(vals(out[p][2]), (std::vector<double>{28, -28}));
  }
}

TEST(Collectives, ReduceScatterKeepsTheRanksBlockOfTheSum) {
  Mesh m = mesh8();
  auto j = prog([](const std::vector<Array>& x) { return std::vector<Array>{lax::reduce_scatter(x[0], {"x"}, 8, 0)}; },
                {ShapedArray{{16}, f32}});
  EXPECT_EQ(j.out_avals()[0].shape, (Shape{2}));
  // device d holds 10*d + k (k < 16); sum over d at k = 10*28 + 8k; rank r keeps k = 2r, 2r+1.
  SpmdStats st;
  auto out = run_spmd(j, m, args_of(m, {16}, [](size_t d, int64_t k) { return 10.0 * double(d) + double(k); }), &st);
  for (size_t r = 0; r < 8; ++r)
    EXPECT_EQ(vals(out[r][0]), (std::vector<double>{280.0 + 16.0 * r, 280.0 + 8.0 * (2 * r + 1)}));
  // 7 blocks of 8 bytes out and in.
  EXPECT_EQ(st.collectives[0].bytes_sent[3], 56);
}

TEST(Collectives, AllToAllTransposesBlocks) {
  Mesh m = mesh42();
  // Over x (4 devices, one group per j): device (i, j) holds row i of A_j[r][c] = 10r + c + 100j
  // (local [1,4]); split the columns, concatenate rows: rank c receives column c, [4,1].
  auto j = prog([](const std::vector<Array>& x) { return std::vector<Array>{lax::all_to_all(x[0], {"x"}, 4, 1, 0)}; },
                {ShapedArray{{1, 4}, f32}});
  EXPECT_EQ(j.out_avals()[0].shape, (Shape{4, 1}));
  auto out = run_spmd(j, m, args_of(m, {1, 4}, [](size_t p, int64_t k) { return 10.0 * double(p / 2) + double(k) + 100.0 * double(p % 2); }));
  for (size_t p = 0; p < 8; ++p) {
    double c = double(p / 2), jj = double(p % 2);
    EXPECT_EQ(vals(out[p][0]), (std::vector<double>{c + 100 * jj, 10 + c + 100 * jj, 20 + c + 100 * jj, 30 + c + 100 * jj}));
  }
}

TEST(Collectives, CollectivePermuteShiftsAndZeroFillsNonTargets) {
  Mesh m = mesh8();
  std::vector<int64_t> ring, partial = {0, 5, 5, 0};
  for (int64_t i = 0; i < 8; ++i) ring.insert(ring.end(), {i, (i + 1) % 8});
  auto j = prog([&](const std::vector<Array>& x) {
    return std::vector<Array>{lax::collective_permute(x[0], {"x"}, 8, ring), lax::collective_permute(x[0], {"x"}, 8, partial)};
  }, {ShapedArray{{1}, f32}});
  SpmdStats st;
  auto out = run_spmd(j, m, args_of(m, {1}, [](size_t d, int64_t) { return double(d) + 1; }), &st);
  for (size_t d = 0; d < 8; ++d) {
    EXPECT_EQ(vals(out[d][0])[0], double((d + 7) % 8) + 1);  // from the left neighbour
    double w = d == 5 ? 1.0 : d == 0 ? 6.0 : 0.0;              // 0 -> 5, 5 -> 0, the rest zeros
    EXPECT_EQ(vals(out[d][1])[0], w);
  }
  EXPECT_EQ(st.collectives[1].bytes_sent[0], 4);
  EXPECT_EQ(st.collectives[1].bytes_sent[1], 0);
}

TEST(Collectives, AxisIndexIsTheCoordinate) {
  Mesh m = mesh42();
  auto j = prog([](const std::vector<Array>&) {
    return std::vector<Array>{lax::axis_index({"x"}), lax::axis_index({"y"}), lax::axis_index({"y", "x"})};
  }, {});
  EXPECT_NE(flat(to_string(j)).find("axis_index[axis_name=x]"), std::string::npos) << to_string(j);
  auto out = run_spmd(j, m, std::vector<std::vector<Array>>(8));
  for (size_t p = 0; p < 8; ++p) {
    int i = int(p / 2), jj = int(p % 2);
    EXPECT_EQ(out[p][0].data<int32_t>()[0], i);
    EXPECT_EQ(out[p][1].data<int32_t>()[0], jj);
    EXPECT_EQ(out[p][2].data<int32_t>()[0], jj * 4 + i);  // row-major over (y, x)
  }
}

TEST(Collectives, RaggedAllToAllMovesRowsByOffsets) {
  Mesh m({0, 1}, {2}, {"x"});
  auto i32a = [](std::vector<double> v) { return array(v, {2}, i32); };
  auto j = prog([](const std::vector<Array>& a) {
    return std::vector<Array>{lax::ragged_all_to_all(a[0], a[1], a[2], a[3], a[4], a[5], {"x"}, 2)};
  }, {ShapedArray{{3}, f32}, ShapedArray{{4}, f32}, ShapedArray{{2}, i32}, ShapedArray{{2}, i32},
      ShapedArray{{2}, i32}, ShapedArray{{2}, i32}});
  // dev0 input [1,2,3]: row 0 to itself (at 0), rows 1..2 to dev1 (at dev1's row 1).
  // dev1 input [4,5,6]: row 0 to dev0 (at dev0's row 2), row 1 to itself (at 0).
  // out0 = [1, -1, 4, -1]; out1 = [5, 2, 3, -2].
  std::vector<std::vector<Array>> args = {
      {array({1, 2, 3}, {3}, f32), array({-1, -1, -1, -1}, {4}, f32), i32a({0, 1}), i32a({1, 2}), i32a({0, 1}), i32a({1, 1})},
      {array({4, 5, 6}, {3}, f32), array({-2, -2, -2, -2}, {4}, f32), i32a({0, 1}), i32a({1, 1}), i32a({2, 0}), i32a({2, 1})}};
  SpmdStats st;
  auto out = run_spmd(j, m, args, &st);
  EXPECT_EQ(vals(out[0][0]), (std::vector<double>{1, -1, 4, -1}));
  EXPECT_EQ(vals(out[1][0]), (std::vector<double>{5, 2, 3, -2}));
  EXPECT_EQ(st.collectives[0].bytes_sent[0], 8);  // 2 rows of 4 bytes to dev1
  EXPECT_EQ(st.collectives[0].bytes_received[0], 4);
  // recv_sizes disagreeing with the sender's send_sizes is an error naming both ranks.
  args[1][5] = i32a({1, 1});
  try {
    run_spmd(j, m, args);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 sends 2 rows to rank 1"), std::string::npos) << e.what();
  }
}

TEST(Collectives, ShardedContractingDimMatmulThenPsumIsTheMatmul) {
  Mesh m = mesh42();
  // Global A[3,8], B[8,2]; the contracting dim is split over x (4 blocks of 2), y replicates.
  auto A = [](int r, int c) { return double(r * 8 + c) * 0.5 - 3; };
  auto B = [](int r, int c) { return double((r * 3 + c * 5) % 7) - 2; };
  auto j = prog([](const std::vector<Array>& a) {
    Array part = lax::dot_general(a[0], a[1], lax::DotDimensionNumbers{{1}, {0}, {}, {}});
    return std::vector<Array>{lax::psum(part, {"x"}, 4)};
  }, {ShapedArray{{3, 2}, f32}, ShapedArray{{2, 2}, f32}});
  std::vector<std::vector<Array>> args;
  for (size_t p = 0; p < 8; ++p) {
    int i = int(p / 2);
    std::vector<double> a, b;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 2; ++c) a.push_back(A(r, 2 * i + c));
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 2; ++c) b.push_back(B(2 * i + r, c));
    args.push_back({array(a, {3, 2}, f32), array(b, {2, 2}, f32)});
  }
  auto out = run_spmd(j, m, args);
  std::vector<double> want;  // the unsharded product by a plain triple loop
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) {
      double s = 0;
      for (int k = 0; k < 8; ++k) s += A(r, k) * B(k, c);
      want.push_back(s);
    }
  for (auto& o : out) {
    auto v = vals(o[0]);
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(v[k], want[k], 1e-4);
  }
}

TEST(Collectives, EagerCallsAndShapeErrors) {
  Array x = array({1, 2, 3, 4}, {4}, f32);
  try {
    lax::all_gather(x, {"x"}, 2, 0);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("collective all_gather over axis 'x' runs only under the SPMD executor"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(lax::axis_index({"x"}), ValueError);
  auto shape_err = [](const std::function<void(const Array&)>& f, const std::string& needle) {
    try {
      trace_to_jaxpr([&](const std::vector<Array>& a) { f(a[0]); return std::vector<Array>{a[0]}; }, {ShapedArray{{6, 4}, f32}});
      ADD_FAILURE() << "expected an error containing " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  shape_err([](const Array& a) { lax::reduce_scatter(a, {"x"}, 4, 0); }, "not divisible by axis_size=4");
  shape_err([](const Array& a) { lax::reduce_scatter(a, {"x"}, 4, 0); }, "f32[6,4]");
  shape_err([](const Array& a) { lax::all_gather(a, {"x"}, 4, 2); }, "gather_dimension=2 is out of range");
  shape_err([](const Array& a) { lax::all_to_all(a, {"x", "y"}, 4, 0, 1); }, "all_to_all over axis ('x', 'y')");
  shape_err([](const Array& a) { lax::collective_permute(a, {"x"}, 4, {0, 1, 2, 1}); }, "target 1 appears twice");
  shape_err([](const Array& a) { lax::collective_permute(a, {"x"}, 4, {0, 4}); }, "rank 4");
  shape_err([](const Array& a) { lax::all_reduce(a, {"x"}, 4, "prod"); }, "reduction must be sum, max, min, and, or or xor");
  EXPECT_THROW(lax::psum(x, {"x", "x"}, 4), ValueError);
}

TEST(Collectives, ExecutorErrors) {
  Mesh m = mesh42();
  auto args = args_of(m, {2}, [](size_t, int64_t) { return 1.0; });
  auto unknown = prog([](const std::vector<Array>& x) { return std::vector<Array>{lax::psum(x[0], {"z"}, 2)}; },
                      {ShapedArray{{2}, f32}});
  EXPECT_THROW(run_spmd(unknown, m, args), ShardingError);
  auto wrong_size = prog([](const std::vector<Array>& x) { return std::vector<Array>{lax::psum(x[0], {"x"}, 8)}; },
                         {ShapedArray{{2}, f32}});
  try {
    run_spmd(wrong_size, m, args);
    FAIL();
  } catch (const ShardingError& e) {
    EXPECT_NE(std::string(e.what()).find("axis_size=8"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("hold 4 devices"), std::string::npos) << e.what();
  }
  auto ok = prog([](const std::vector<Array>& x) { return std::vector<Array>{lax::psum(x[0], {"x"}, 4)}; },
                 {ShapedArray{{2}, f32}});
  EXPECT_THROW(run_spmd(ok, m, std::vector<std::vector<Array>>(args.begin(), args.begin() + 4)), ValueError);
  auto bad = args;
  bad[3][0] = array({1, 2, 3}, {3}, f32);
  EXPECT_THROW(run_spmd(ok, m, bad), ValueError);
}

// Adjoint check: for a linear SPMD map f with transpose g, summed over devices,
// <f(x), c> == <x, g(c)>. The transpose program is traced from vjp_flat.
double dot_all(const std::vector<std::vector<Array>>& a, const std::vector<std::vector<Array>>& b, size_t ia, size_t ib) {
  double s = 0;
  for (size_t d = 0; d < a.size(); ++d) {
    auto u = vals(a[d][ia]), v = vals(b[d][ib]);
    for (size_t k = 0; k < u.size(); ++k) s += u[k] * v[k];
  }
  return s;
}

void check_adjoint(const Mesh& m, const std::function<Array(const Array&)>& f, const Shape& in, const Shape& out,
                   const std::string& expect_in_transpose) {
  auto fwd = prog([&](const std::vector<Array>& x) { return std::vector<Array>{f(x[0])}; }, {ShapedArray{in, f32}});
  auto bwd = prog([&](const std::vector<Array>& a) {
    return vjp_flat([&](const std::vector<Array>& x) { return std::vector<Array>{f(x[0])}; }, {a[0]}).pullback({a[1]});
  }, {ShapedArray{in, f32}, ShapedArray{out, f32}});
  EXPECT_NE(flat(to_string(bwd)).find(expect_in_transpose), std::string::npos) << to_string(bwd);
  auto xs = args_of(m, in, [](size_t d, int64_t k) { return double((d * 7 + size_t(k) * 3) % 11) - 5; });
  auto cs = args_of(m, out, [](size_t d, int64_t k) { return double((d * 5 + size_t(k) * 2) % 13) - 6; });
  std::vector<std::vector<Array>> both(m.num_devices());
  for (size_t d = 0; d < m.num_devices(); ++d) both[d] = {xs[d][0], cs[d][0]};
  auto y = run_spmd(fwd, m, xs);
  auto g = run_spmd(bwd, m, both);
  EXPECT_NEAR(dot_all(y, cs, 0, 0), dot_all(xs, g, 0, 0), 1e-3) << expect_in_transpose;
}

TEST(CollectivesAutodiff, TransposesSatisfyTheAdjointIdentity) {
  Mesh m = mesh42();
  check_adjoint(m, [](const Array& x) { return lax::all_gather(x, {"x"}, 4, 1); }, {2, 3}, {2, 12},
                "reduce_scatter[axis_name=x axis_size=4 scatter_dimension=1]");
  check_adjoint(m, [](const Array& x) { return lax::all_gather(x, {"y"}, 2, 0, false); }, {3}, {2, 3}, "reduce_scatter");
  check_adjoint(m, [](const Array& x) { return lax::reduce_scatter(x, {"x", "y"}, 8, 0); }, {8, 2}, {1, 2}, "all_gather");
  check_adjoint(m, [](const Array& x) { return lax::psum(x, {"x"}, 4); }, {3}, {3}, "all_reduce");
  check_adjoint(m, [](const Array& x) { return lax::all_to_all(x, {"x"}, 4, 1, 0); }, {2, 4}, {8, 1},
                "all_to_all[axis_name=x axis_size=4 concat_dimension=1 split_dimension=0]");
  check_adjoint(m, [](const Array& x) { return lax::collective_permute(x, {"x"}, 4, {0, 1, 1, 3, 3, 2}); }, {2}, {2},
                "source_target_pairs=(1, 0, 3, 1, 2, 3)");
}

TEST(CollectivesAutodiff, LinearizeStagesTheSameCollectiveOnTangents) {
  auto j = prog([](const std::vector<Array>& a) {
    auto lin = linearize_flat([](const std::vector<Array>& x) {
      return std::vector<Array>{lax::all_to_all(lax::sin(x[0]), {"x"}, 2, 0, 1)};
    }, {a[0]});
    std::string s = flat(to_string(lin.linear));
    EXPECT_NE(s.find("all_to_all[axis_name=x axis_size=2 concat_dimension=1 split_dimension=0]"), std::string::npos) << s;
    EXPECT_NE(s.find("mul"), std::string::npos) << s;  // cos(x) * t before the exchange
    return lin.primal_outs;
  }, {ShapedArray{{2, 3}, f32}});
  EXPECT_NE(flat(to_string(j)).find("all_to_all"), std::string::npos);
  // pmax is not linear: no JVP.
  EXPECT_THROW(prog([](const std::vector<Array>& a) {
                 return linearize_flat([](const std::vector<Array>& x) {
                   return std::vector<Array>{lax::all_reduce(x[0], {"x"}, 2, "max")};
                 }, {a[0]}).primal_outs;
               }, {ShapedArray{{2}, f32}}),
               ValueError);
}

TEST(CollectivesAutodiff, VmapShiftsDimsAndMatchesPerExample) {
  Mesh m = mesh8();
  // Batched over a leading non-mesh dim of 2: all_gather dim 0 of each example becomes dim 1.
  auto j = prog([](const std::vector<Array>& a) {
    return vmap_flat([](const std::vector<Array>& x) { return std::vector<Array>{lax::all_gather(x[0], {"x"}, 8, 0)}; },
                     {a[0]}, {1}, {0});
  }, {ShapedArray{{3, 2}, f32}});
  EXPECT_NE(flat(to_string(j)).find("gather_dimension=1"), std::string::npos) << to_string(j);
  // device d holds x[k][b] = 100*b + 3*d + k (local [3,2], batch dim 1); example b gathers
  // 100*b + 0..23.
  auto out = run_spmd(j, m, args_of(m, {3, 2}, [](size_t d, int64_t e) { return 100.0 * double(e % 2) + 3.0 * double(d) + double(e / 2); }));
  for (auto& o : out) {
    ASSERT_EQ(o[0].shape(), (Shape{2, 24}));
    auto v = vals(o[0]);
    for (int b = 0; b < 2; ++b)
      for (int k = 0; k < 24; ++k) EXPECT_EQ(v[size_t(b * 24 + k)], 100.0 * b + k);
  }
}

// vmap (batch dim 1 of the local [4,2,4] operand) equals running the unbatched program on each
// example [4,4] separately.
void check_vmap(const Mesh& m, const std::function<Array(const Array&)>& f) {
  auto batched = prog([&](const std::vector<Array>& a) {
    return vmap_flat([&](const std::vector<Array>& x) { return std::vector<Array>{f(x[0])}; }, {a[0]}, {1}, {0});
  }, {ShapedArray{{4, 2, 4}, f32}});
  auto single = prog([&](const std::vector<Array>& x) { return std::vector<Array>{f(x[0])}; }, {ShapedArray{{4, 4}, f32}});
  auto xs = args_of(m, {4, 2, 4}, [](size_t d, int64_t k) { return double(d) * 100 + double(k); });
  auto yb = run_spmd(batched, m, xs);
  for (int64_t b = 0; b < 2; ++b) {
    auto xe = args_of(m, {4, 4}, [&](size_t d, int64_t k) { return double(d) * 100 + double((k / 4) * 8 + b * 4 + k % 4); });
    auto ye = run_spmd(single, m, xe);
    for (size_t d = 0; d < m.num_devices(); ++d) {
      auto vb = vals(yb[d][0]), ve = vals(ye[d][0]);
      ASSERT_EQ(vb.size(), 2 * ve.size());
      for (size_t k = 0; k < ve.size(); ++k) EXPECT_EQ(vb[size_t(b) * ve.size() + k], ve[k]) << d << " " << k;
    }
  }
}

TEST(CollectivesAutodiff, VmapOfEachCollectiveMatchesPerExample) {
  Mesh m = mesh42();
  check_vmap(m, [](const Array& x) { return lax::reduce_scatter(x, {"x"}, 4, 1); });
  check_vmap(m, [](const Array& x) { return lax::all_to_all(x, {"x"}, 4, 0, 1); });
  check_vmap(m, [](const Array& x) { return lax::all_gather(x, {"y"}, 2, 1, false); });
  check_vmap(m, [](const Array& x) { return lax::psum(x, {"x", "y"}, 8); });
  check_vmap(m, [](const Array& x) { return lax::collective_permute(x, {"x"}, 4, {0, 2, 2, 0}); });
}

TEST(CollectivesExecutor, CollectivesInsidePjitRunInLockstep) {
  Mesh m = mesh8();
  // inner(x) = psum(x * x) over x; outer(x) = inner(x) + x via a pjit equation.
  auto inner = std::make_shared<const ClosedJaxpr>(prog([](const std::vector<Array>& x) {
    return std::vector<Array>{lax::psum(lax::mul(x[0], x[0]), {"x"}, 8)};
  }, {ShapedArray{{1}, f32}}));
  auto j = prog([&](const std::vector<Array>& x) {
    return std::vector<Array>{lax::add(bind_call(pjit_p(), inner, "inner", {x[0]})[0], x[0])};
  }, {ShapedArray{{1}, f32}});
  ASSERT_NE(flat(to_string(j)).find("pjit[name=inner"), std::string::npos) << to_string(j);
  SpmdStats st;
  // device d holds d: sum of squares 0..7 = 140, plus d.
  auto out = run_spmd(j, m, args_of(m, {1}, [](size_t d, int64_t) { return double(d); }), &st);
  for (size_t d = 0; d < 8; ++d) EXPECT_EQ(vals(out[d][0])[0], 140.0 + double(d));
  ASSERT_EQ(st.collectives.size(), 1u);
  EXPECT_EQ(st.collectives[0].primitive, "all_reduce");
  EXPECT_EQ(st.collectives[0].eqn_index, 0u);  // the pjit equation
}

TEST(CollectivesExecutor, PeakLiveBytesFreesDeadValues) {
  Mesh m({0, 1}, {2}, {"x"});
  // The broadcasts of 2 and 1 become two f32[10] consts (40 B each), given to every device
  // with x: 120 B alive at the start. d = x*two: 160 B (peak), then x and two die -> 80;
  // e = d+one: 120, then d and one die -> 40; f = sum(e): 44 -> 4; g = psum(f): 8.
  auto j = prog([](const std::vector<Array>& x) {
    Array a = lax::mul(x[0], lax::full({10}, 2.0, f32));
    Array b = lax::add(a, lax::full({10}, 1.0, f32));
    return std::vector<Array>{lax::psum(lax::reduce_sum(b, {0}), {"x"}, 2)};
  }, {ShapedArray{{10}, f32}});
  SpmdStats st;
  auto out = run_spmd(j, m, args_of(m, {10}, [](size_t d, int64_t k) { return double(d); }), &st);
  // sum over devices and elements of 2d+1: 10*1 + 10*3 = 40.
  EXPECT_EQ(vals(out[0][0])[0], 40.0);
  ASSERT_EQ(j.jaxpr->constvars.size(), 2u) << to_string(j);
  EXPECT_EQ(st.peak_live_bytes, (std::vector<int64_t>{160, 160})) << to_string(j);
}

}  // namespace
