// Tests of minijax's cholesky and triangular_solve against PyTorch (f64, issue 30 item 7): values,
// gradients, JVPs and Hessian-vector products of sum(sin(op(inputs)) * c), eager and compiled, from
// tests/autodiff/torch_reference_data_linalg.h (tools/torch_reference.py writes each op with
// torch.linalg.cholesky and torch.linalg.solve_triangular; the comment above each namespace there
// names the call). Every side, transpose and unit-diagonal combination of the solve, batched.
#include <gtest/gtest.h>

#include <minijax/minijax.h>

#include "autodiff/torch_reference_check.h"
#include "autodiff/torch_reference_data_linalg.h"

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

}  // namespace
