// Tests of minijax's cholesky, triangular_solve, lu, qr, eigh and svd against PyTorch (f64, issue 30
// item 7): values, gradients, JVPs and Hessian-vector products of sum(sin(op(inputs)) * c), eager
// and compiled, from tests/autodiff/torch_reference_data_linalg.h (tools/torch_reference.py writes
// each op with torch.linalg's cholesky, solve_triangular, lu_factor, qr, eigh, svd and svdvals; the
// comment above each namespace there names the call). Every side, transpose and unit-diagonal
// combination of the solve; lu with a clear pivot at each step (both sides pivot alike); qr full and
// reduced; eigh and svd through gauge-invariant quantities only. Then mj::linalg's (jnp.linalg's)
// inv, solve, det, slogdet, pinv, norm and matrix_power against torch.linalg's inv, solve, det,
// slogdet, pinv, vector_norm, matrix_norm and matrix_power, on inputs the generator checks are away
// from the points where each is not smooth. All batched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <minijax/minijax.h>

#include "autodiff/torch_reference_check.h"
#include "autodiff/torch_reference_data_linalg.h"
#include "autodiff/torch_reference_data_numpy_linalg.h"

namespace {

namespace ref = torch_reference_linalg;
namespace la = mj::lax::linalg;
using namespace torch_check;

#define MJ_AB_CASE(ns)                                                                               \
  Case {                                                                                             \
    {arr(ns::a, ns::a_shape), arr(ns::b, ns::b_shape)}, ns::value,                                   \
        {arr(ns::grad_a, ns::grad_a_shape), arr(ns::grad_b, ns::grad_b_shape)},                      \
        {arr(ns::jvp_a_dir, ns::jvp_a_dir_shape), arr(ns::jvp_b_dir, ns::jvp_b_dir_shape)}, ns::jvp, \
        {{0, arr(ns::hvp_a_dir, ns::hvp_a_dir_shape), arr(ns::hvp_a, ns::hvp_a_shape)},              \
         {1, arr(ns::hvp_b_dir, ns::hvp_b_dir_shape), arr(ns::hvp_b, ns::hvp_b_shape)}},             \
  }

// cholesky(x x^T / n + I), x [2, 4, 4].
TEST(TorchReferenceLinalg, CholeskyBatched) {
  namespace d = ref::cholesky_batched;
  auto op = [](const V& a) {
    const mj::Array& x = a[0];
    const int64_t n = x.shape().back();
    return la::cholesky(mj::matmul(x, mj::transpose(x, {0, 2, 1})) / double(n) + mj::eye(n, mj::f64));
  };
  check_case(op, arr(d::c, d::c_shape), MJ_X_CASE(d));
}

// triangular_solve(a + 3 I, b, left_side, lower, transpose_a, unit_diagonal) for the generator's
// eight combinations: combo bit 0 left_side, bit 1 transpose_a, bit 2 unit_diagonal, lower unless
// combo % 3 == 1 (tools/torch_reference.py).
void check_solve(int combo, const Case& k, const RefArray& c) {
  const bool left = combo & 1, trans = combo & 2, unit = combo & 4, lower = combo % 3 != 1;
  auto op = [=](const V& a) {
    const mj::Array shifted = a[0] + mj::eye(a[0].shape().back(), mj::f64) * 3.0;
    return la::triangular_solve(shifted, a[1], left, lower, trans, false, unit);
  };
  SCOPED_TRACE("combo " + std::to_string(combo));
  check_case(op, c, k);
}

#define MJ_SOLVE_TEST(i)                                  \
  TEST(TorchReferenceLinalg, TriangularSolve##i) {        \
    namespace d = ref::triangular_solve_##i;              \
    check_solve(i, MJ_AB_CASE(d), arr(d::c, d::c_shape)); \
  }
MJ_SOLVE_TEST(0)
MJ_SOLVE_TEST(1)
MJ_SOLVE_TEST(2)
MJ_SOLVE_TEST(3)
MJ_SOLVE_TEST(4)
MJ_SOLVE_TEST(5)
MJ_SOLVE_TEST(6)
MJ_SOLVE_TEST(7)

// ---- lu, qr, eigh, svd --------------------------------------------------------------------------

// x + P, P with 3 at (rows[j], j): the same matrix as tools/torch_reference.py's pivot_matrix.
mj::Array plus_pivots(const mj::Array& x, const std::vector<int64_t>& rows) {
  const int64_t m = x.shape()[1], n = x.shape()[2];
  std::vector<double> p(size_t(m * n), 0.0);
  for (size_t j = 0; j < rows.size(); ++j) p[size_t(rows[j] * n) + j] = 3.0;
  return x + mj::array(p, {m, n}, mj::f64);
}

// x + d[i] at (i, i) (tools/torch_reference.py's band).
mj::Array plus_band(const mj::Array& x, const std::vector<double>& d) {
  const int64_t m = x.shape()[1], n = x.shape()[2];
  std::vector<double> b(size_t(m * n), 0.0);
  for (size_t i = 0; i < d.size(); ++i) b[i * size_t(n) + i] = d[i];
  return x + mj::array(b, {m, n}, mj::f64);
}

void check_lu(const std::vector<int64_t>& rows, const Case& k, const RefArray& c) {
  auto op = [rows](const V& a) { return std::get<0>(la::lu(plus_pivots(a[0], rows))); };
  check_case(op, c, k);
  // The premise of the comparison: the pivots are the rows chosen (torch's are LAPACK's too).
  const std::vector<int32_t> piv = [&] {
    const mj::Array p = std::get<1>(la::lu(plus_pivots(to_array(k.inputs[0]), rows)));
    return std::vector<int32_t>(p.data<int32_t>(), p.data<int32_t>() + p.size());
  }();
  // Step j swaps row j with the row now holding rows[j]'s entries.
  std::vector<int64_t> order;
  for (int64_t i = 0; i < k.inputs[0].shape[1]; ++i) order.push_back(i);
  for (size_t j = 0; j < rows.size(); ++j) {
    const int64_t at = int64_t(std::find(order.begin(), order.end(), rows[j]) - order.begin());
    std::swap(order[j], order[size_t(at)]);
    EXPECT_EQ(piv[j], at) << "step " << j;
    EXPECT_EQ(piv[rows.size() + j], at) << "step " << j << " of batch element 1";
  }
}

TEST(TorchReferenceLinalg, LuSquare) {
  namespace d = ref::lu_square;
  check_lu({2, 0, 3, 1}, MJ_X_CASE(d), arr(d::c, d::c_shape));
}
TEST(TorchReferenceLinalg, LuTall) {
  namespace d = ref::lu_tall;
  check_lu({4, 1, 3}, MJ_X_CASE(d), arr(d::c, d::c_shape));
}
TEST(TorchReferenceLinalg, LuWide) {
  namespace d = ref::lu_wide;
  check_lu({1, 2, 0}, MJ_X_CASE(d), arr(d::c, d::c_shape));
}

// Q and R of qr(x + band(3, 2.5, 2)), each flattened per batch element, joined.
Fn qr_flat(bool full) {
  return [full](const V& a) {
    const int64_t m = a[0].shape()[1], n = a[0].shape()[2];
    std::vector<double> d;
    for (int64_t i = 0; i < std::min(m, n); ++i) d.push_back(3.0 - 0.5 * double(i));
    auto [q, r] = la::qr(plus_band(a[0], d), false, full);
    return mj::concatenate({mj::reshape(q, {2, -1}), mj::reshape(r, {2, -1})}, 1);
  };
}

TEST(TorchReferenceLinalg, QrReducedTall) {
  namespace d = ref::qr_reduced_tall;
  check_case(qr_flat(false), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, QrCompleteSquare) {
  namespace d = ref::qr_complete_square;
  check_case(qr_flat(true), arr(d::c, d::c_shape), MJ_X_CASE(d));
}

// eigh(x + diag(1, 1.5, 4, 5.5)): JAX's default symmetrizes the input, as the generator does.
std::pair<mj::Array, mj::Array> eigh_shifted(const mj::Array& x) {
  return la::eigh(x + mj::array({1, 0, 0, 0, 0, 1.5, 0, 0, 0, 0, 4, 0, 0, 0, 0, 5.5}, {4, 4}, mj::f64));
}
mj::Array last_t(const mj::Array& v) { return mj::transpose(v, {0, 2, 1}); }

TEST(TorchReferenceLinalg, EighEigenvalues) {
  namespace d = ref::eigh_eigenvalues;
  check_case([](const V& a) { return eigh_shifted(a[0]).second; }, arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, EighVDiagFwVt) {
  namespace d = ref::eigh_v_fw_vt;
  auto op = [](const V& a) {
    auto [v, w] = eigh_shifted(a[0]);
    return mj::matmul(v * mj::expand_dims(mj::exp(w * 0.3), 1), last_t(v));
  };
  check_case(op, arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, EighProjectorOntoTheTwoSmallest) {
  namespace d = ref::eigh_projector;
  auto op = [](const V& a) {
    const mj::Array v2 = mj::lax::slice(eigh_shifted(a[0]).first, {0, 0, 0}, {2, 4, 2});
    return mj::matmul(v2, last_t(v2));
  };
  check_case(op, arr(d::c, d::c_shape), MJ_X_CASE(d));
}

// svd(x + band(3, 2, 1), full_matrices=False).
std::vector<mj::Array> svd_shifted(const mj::Array& x, bool compute_uv) {
  return la::svd(plus_band(x, {3, 2, 1}), false, compute_uv);
}
Fn u_fs_vh(bool identity) {
  return [identity](const V& a) {
    const std::vector<mj::Array> r = svd_shifted(a[0], true);
    return mj::matmul(r[0] * mj::expand_dims(identity ? r[1] : mj::tanh(r[1]), 1), r[2]);
  };
}

// The singular values with compute_uv false and, the same reference, true.
TEST(TorchReferenceLinalg, SvdSingularValues) {
  namespace d = ref::svd_singular_values;
  for (bool uv : {false, true}) {
    SCOPED_TRACE(uv ? "compute_uv" : "s only");
    check_case([uv](const V& a) { return svd_shifted(a[0], uv)[uv ? 1 : 0]; }, arr(d::c, d::c_shape),
               MJ_X_CASE(d));
  }
}
TEST(TorchReferenceLinalg, SvdUDiagFsVhTall) {
  namespace d = ref::svd_u_fs_vh_tall;
  check_case(u_fs_vh(false), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, SvdUDiagFsVhWide) {
  namespace d = ref::svd_u_fs_vh_wide;
  check_case(u_fs_vh(false), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, SvdUDiagSVhWide) {
  namespace d = ref::svd_u_s_vh_wide;
  check_case(u_fs_vh(true), arr(d::c, d::c_shape), MJ_X_CASE(d));
}

// ---- mj::linalg: inv, solve, det, slogdet, pinv, norm, matrix_power ------------------------------

namespace nla = mj::linalg;
const std::vector<int64_t> kPiv4 = {2, 0, 3, 1};  // tools/torch_reference.py's PIV4 (odd)
const double kInf = INFINITY;

mj::Array plus_3i(const mj::Array& x) { return x + mj::eye(x.shape().back(), mj::f64) * 3.0; }

// torch.linalg.inv(x + 3 I).
TEST(TorchReferenceLinalg, Inv) {
  namespace d = ref::inv;
  check_case([](const V& a) { return nla::inv(plus_3i(a[0])); }, arr(d::c, d::c_shape), MJ_X_CASE(d));
}
// torch.linalg.solve(a + 3 P, b), b [2, 4, 2]; P moves the pivots off the diagonal.
TEST(TorchReferenceLinalg, SolveMatrixRhs) {
  namespace d = ref::solve_matrix_rhs;
  check_case([](const V& a) { return nla::solve(plus_pivots(a[0], kPiv4), a[1]); }, arr(d::c, d::c_shape),
             MJ_AB_CASE(d));
}
// torch.linalg.solve(a + 3 I, b), b [3]: one right-hand side for both matrices, result [2, 3].
TEST(TorchReferenceLinalg, SolveVectorRhs) {
  namespace d = ref::solve_vector_rhs;
  check_case([](const V& a) { return nla::solve(plus_3i(a[0]), a[1]); }, arr(d::c, d::c_shape),
             MJ_AB_CASE(d));
}
// torch.linalg.det(x + 3 I), 2x2 and 3x3 (minijax's closed forms), and det(x + 3 P), 4x4
// (slogdet's LU with pivoting and JAX's custom JVP; the determinant is negative).
TEST(TorchReferenceLinalg, Det2x2) {
  namespace d = ref::det_2x2;
  check_case([](const V& a) { return nla::det(plus_3i(a[0])); }, arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, Det3x3) {
  namespace d = ref::det_3x3;
  check_case([](const V& a) { return nla::det(plus_3i(a[0])); }, arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, Det4x4Pivoted) {
  namespace d = ref::det_4x4;
  check_case([](const V& a) { return nla::det(plus_pivots(a[0], kPiv4)); }, arr(d::c, d::c_shape),
             MJ_X_CASE(d));
}
// torch.linalg.slogdet(x + 3 P).logabsdet; the sign (no derivative) is torch's -1 for both.
TEST(TorchReferenceLinalg, SlogdetLogAbsDet) {
  namespace d = ref::slogdet;
  check_case([](const V& a) { return nla::slogdet(plus_pivots(a[0], kPiv4)).second; }, arr(d::c, d::c_shape),
             MJ_X_CASE(d));
  const mj::Array sign = nla::slogdet(plus_pivots(to_array(arr(d::x, d::x_shape)), kPiv4)).first;
  ASSERT_EQ(sign.shape(), mj::Shape({2}));
  EXPECT_EQ(sign.data<double>()[0], -1.0);
  EXPECT_EQ(sign.data<double>()[1], -1.0);
}
// torch.linalg.pinv(x + band(3, 2, 1)), tall [2, 4, 3] and wide [2, 3, 4] (distinct singular
// values ~3, 2, 1; JAX's default rtol drops none).
TEST(TorchReferenceLinalg, PinvTall) {
  namespace d = ref::pinv_tall;
  check_case([](const V& a) { return nla::pinv(plus_band(a[0], {3, 2, 1})); }, arr(d::c, d::c_shape),
             MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, PinvWide) {
  namespace d = ref::pinv_wide;
  check_case([](const V& a) { return nla::pinv(plus_band(a[0], {3, 2, 1})); }, arr(d::c, d::c_shape),
             MJ_X_CASE(d));
}

// norm(x, ord, axis, keepdims) of x [2, 3, 4].
Fn norm_of(nla::Ord ord, std::optional<std::vector<int64_t>> axis, bool keepdims) {
  return [=](const V& a) { return nla::norm(a[0], ord, axis, keepdims); };
}
// Vector norms (no zero entry, distinct |x|): torch.linalg.vector_norm(x, 1, dim=-1),
// (x, 2, dim=1, keepdim=True), (x, 3.5, dim=0), (x, inf, dim=-1, keepdim=True), and
// (x, keepdim=True), the flattened x's.
TEST(TorchReferenceLinalg, VectorNorm1) {
  namespace d = ref::vector_norm_1;
  check_case(norm_of(1, std::vector<int64_t>{-1}, false), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, VectorNorm2Keepdims) {
  namespace d = ref::vector_norm_2;
  check_case(norm_of(2, std::vector<int64_t>{1}, true), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, VectorNorm3Point5) {
  namespace d = ref::vector_norm_3_5;
  check_case(norm_of(3.5, std::vector<int64_t>{0}, false), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, VectorNormInfKeepdims) {
  namespace d = ref::vector_norm_inf;
  check_case(norm_of(kInf, std::vector<int64_t>{-1}, true), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, VectorNormFlattened) {
  namespace d = ref::vector_norm_flat;
  check_case(norm_of({}, std::nullopt, true), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
// Matrix norms (distinct singular values for nuc, 2 and -2; distinct row or column sums of |x| for
// 1, inf, -1, -inf): torch.linalg.matrix_norm(x, "fro", dim=(0, 1), keepdim=True), (x, "nuc"),
// (x, 1, dim=(0, 2)), (x, inf, dim=(2, 1)), (x, 2, dim=(1, 2), keepdim=True), (x, -2, dim=(2, 0)),
// and stack([(x, -1, dim=(1, 2), keepdim=True), (x, -inf, dim=(1, 2), keepdim=True)]).
TEST(TorchReferenceLinalg, MatrixNormFroKeepdims) {
  namespace d = ref::matrix_norm_fro;
  check_case(norm_of("fro", std::vector<int64_t>{0, 1}, true), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, MatrixNormNuc) {
  namespace d = ref::matrix_norm_nuc;
  check_case(norm_of("nuc", std::vector<int64_t>{-2, -1}, false), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, MatrixNorm1) {
  namespace d = ref::matrix_norm_1;
  check_case(norm_of(1, std::vector<int64_t>{0, 2}, false), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, MatrixNormInf) {
  namespace d = ref::matrix_norm_inf;
  check_case(norm_of(kInf, std::vector<int64_t>{2, 1}, false), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, MatrixNorm2Keepdims) {
  namespace d = ref::matrix_norm_2;
  check_case(norm_of(2, std::vector<int64_t>{1, 2}, true), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, MatrixNormMinus2) {
  namespace d = ref::matrix_norm_neg_2;
  check_case(norm_of(-2, std::vector<int64_t>{2, 0}, false), arr(d::c, d::c_shape), MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, MatrixNormMinus1MinusInf) {
  namespace d = ref::matrix_norm_neg_1_neg_inf;
  auto op = [](const V& a) {
    return mj::stack({nla::norm(a[0], -1, std::vector<int64_t>{1, 2}, true),
                      nla::norm(a[0], -kInf, std::vector<int64_t>{1, 2}, true)});
  };
  check_case(op, arr(d::c, d::c_shape), MJ_X_CASE(d));
}
// torch.linalg.matrix_power(x + 3 I, 3) and (x + 3 I, -2) (through inv).
TEST(TorchReferenceLinalg, MatrixPower3) {
  namespace d = ref::matrix_power_3;
  check_case([](const V& a) { return nla::matrix_power(plus_3i(a[0]), 3); }, arr(d::c, d::c_shape),
             MJ_X_CASE(d));
}
TEST(TorchReferenceLinalg, MatrixPowerMinus2) {
  namespace d = ref::matrix_power_neg_2;
  check_case([](const V& a) { return nla::matrix_power(plus_3i(a[0]), -2); }, arr(d::c, d::c_shape),
             MJ_X_CASE(d));
}

}  // namespace
