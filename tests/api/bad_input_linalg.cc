// minijax public-API bad-input cases: the linear-algebra functions (core/linalg.h, scipy_linalg.h,
// numpy_linalg.h). Owns linalg_cases(): ranks, shapes, sides, dtypes and values the functions refuse.
#include "api/bad_input.h"

namespace bad_input {
namespace {
namespace mj = minijax;
namespace la = minijax::lax::linalg;
namespace sla = minijax::scipy::linalg;
namespace nla = minijax::linalg;
using mj::Array;
using mj::DType;
using mj::ShapeError;
using mj::TypeError;
using mj::ValueError;

Array m33(DType d = DType::f64) { return mj::astype(mj::eye(3, DType::f64), d); }
Array v3() { return mj::array({1.0, 2.0, 3.0}, {3}, DType::f64); }

}  // namespace

std::vector<Case> linalg_cases() {
  return {
      BAD("minijax::lax::linalg::cholesky", ShapeError, la::cholesky(v3()), "cholesky", "[3]"),
      BAD("minijax::lax::linalg::cholesky", ShapeError, la::cholesky(mj::scalar(2.0, DType::f64)), "cholesky",
          "[]"),
      BAD("minijax::lax::linalg::cholesky", ShapeError, la::cholesky(mj::zeros({2, 3}, DType::f64)),
          "cholesky", "square", "[2,3]"),
      BAD("minijax::lax::linalg::cholesky", TypeError, la::cholesky(m33(DType::i32)), "cholesky", "i32"),
      BAD("minijax::lax::linalg::cholesky", TypeError, la::cholesky(m33(DType::bf16)), "cholesky", "bf16"),
      BAD("minijax::lax::linalg::triangular_solve", ShapeError,
          la::triangular_solve(m33(), mj::zeros({2, 3}, DType::f64), true), "triangular_solve", "[3,3]",
          "[2,3]", "left_side=True"),
      BAD("minijax::lax::linalg::triangular_solve", ShapeError,
          la::triangular_solve(m33(), mj::zeros({3, 2}, DType::f64), false), "triangular_solve", "[3,3]",
          "[3,2]", "left_side=False"),
      BAD("minijax::lax::linalg::triangular_solve", ShapeError,
          la::triangular_solve(mj::zeros({2, 3, 3}, DType::f64), mj::zeros({4, 3, 1}, DType::f64), true),
          "triangular_solve", "[2,3,3]", "[4,3,1]"),
      BAD("minijax::lax::linalg::triangular_solve", ShapeError,
          la::triangular_solve(mj::zeros({3, 2}, DType::f64), mj::zeros({3, 2}, DType::f64)),
          "triangular_solve", "square", "[3,2]"),
      BAD("minijax::lax::linalg::triangular_solve", ShapeError, la::triangular_solve(v3(), v3()),
          "triangular_solve", "[3]"),
      BAD("minijax::lax::linalg::triangular_solve", TypeError,
          la::triangular_solve(m33(DType::i32), m33(DType::i32)), "triangular_solve", "i32"),
      BAD("minijax::lax::linalg::triangular_solve", TypeError, la::triangular_solve(m33(DType::f32), m33()),
          "triangular_solve", "f32", "f64"),
      BAD("minijax::lax::linalg::lu", ShapeError, la::lu(v3()), "lu", "[3]"),
      BAD("minijax::lax::linalg::lu", ShapeError, la::lu(mj::scalar(2.0, DType::f64)), "lu", "[]"),
      BAD("minijax::lax::linalg::lu", TypeError, la::lu(m33(DType::i32)), "lu", "i32"),
      BAD("minijax::lax::linalg::lu", TypeError, la::lu(m33(DType::bf16)), "lu", "bf16"),
      BAD("minijax::lax::linalg::qr", ShapeError, la::qr(v3()), "qr", "[3]"),
      BAD("minijax::lax::linalg::qr", TypeError, la::qr(m33(DType::bf16)), "qr", "bf16"),
      BAD("minijax::lax::linalg::qr", ValueError, la::qr(m33(), /*pivoting=*/true), "qr", "pivoting=True"),
      BAD("minijax::lax::linalg::eigh", ShapeError, la::eigh(v3()), "eigh", "[3]"),
      BAD("minijax::lax::linalg::eigh", ShapeError, la::eigh(mj::zeros({2, 3}, DType::f64)), "eigh", "square",
          "[2,3]"),
      BAD("minijax::lax::linalg::eigh", TypeError, la::eigh(m33(DType::i32)), "eigh", "i32"),
      BAD("minijax::lax::linalg::svd", ShapeError, la::svd(mj::scalar(2.0, DType::f64)), "svd", "[]"),
      BAD("minijax::lax::linalg::svd", TypeError, la::svd(m33(DType::u32)), "svd", "u32"),
      BAD("minijax::scipy::linalg::solve_triangular", ValueError, sla::solve_triangular(m33(), v3(), 3),
          "solve_triangular", "trans", "3"),
      BAD("minijax::scipy::linalg::solve_triangular", ValueError, sla::solve_triangular(m33(), v3(), "X"),
          "solve_triangular", "trans", "\"X\""),
      BAD("minijax::scipy::linalg::solve_triangular", ShapeError,
          sla::solve_triangular(m33(), mj::zeros({2, 3}, DType::f64)), "triangular_solve", "[3,3]", "[2,3]",
          "left_side=True"),
      BAD("minijax::scipy::linalg::cho_factor", ShapeError, sla::cho_factor(v3()), "cholesky", "[3]"),
      BAD("minijax::scipy::linalg::cho_factor", ShapeError,
          sla::cho_factor(mj::zeros({3, 2}, DType::f64), true), "cholesky", "square", "[3,2]"),
      BAD("minijax::scipy::linalg::cho_solve", ShapeError,
          sla::cho_solve({m33(), true}, mj::zeros({2}, DType::f64)), "cho_solve", "a=[3,3]", "b=[2]"),
      // jax.scipy.linalg's LU factor and solve.
      BAD("minijax::scipy::linalg::lu_factor", ShapeError, sla::lu_factor(v3()), "lu", "[3]"),
      BAD("minijax::scipy::linalg::lu_factor", TypeError, sla::lu_factor(m33(DType::bf16)), "lu_factor",
          "bf16"),
      BAD("minijax::scipy::linalg::lu_solve", ShapeError,
          sla::lu_solve(sla::lu_factor(m33()), mj::zeros({2}, DType::f64)), "lu_solve", "lu=[3,3]", "b=[2]",
          "left side"),
      BAD("minijax::scipy::linalg::lu_solve", ShapeError,
          sla::lu_solve(sla::lu_factor(m33()), mj::zeros({2, 3}, DType::f64)), "lu_solve", "lu=[3,3]",
          "b=[2,3]", "left side"),
      BAD("minijax::scipy::linalg::lu_solve", ShapeError,
          sla::lu_solve(sla::lu_factor(mj::zeros({2, 3}, DType::f64)), mj::zeros({2}, DType::f64)),
          "lu_solve", "lu=[2,3]"),
      BAD("minijax::scipy::linalg::lu_solve", ShapeError,
          sla::lu_solve(sla::lu_factor(mj::zeros({2, 3, 3}, DType::f64)), mj::zeros({4, 3, 1}, DType::f64)),
          "lu_solve", "batch", "lu=[2,3,3]", "b=[4,3,1]"),
      BAD("minijax::scipy::linalg::lu_solve", ValueError, sla::lu_solve(sla::lu_factor(m33()), v3(), 3),
          "lu_solve", "trans", "3"),
      // mj::linalg (jnp.linalg).
      BAD("minijax::linalg::inv", ShapeError, nla::inv(v3()), "inv", "[3]"),
      BAD("minijax::linalg::inv", ShapeError, nla::inv(mj::zeros({2, 3}, DType::f64)), "inv", "square",
          "[2,3]"),
      BAD("minijax::linalg::inv", TypeError, nla::inv(m33(DType::bf16)), "inv", "bf16"),
      BAD("minijax::linalg::solve", ShapeError, nla::solve(m33(), mj::zeros({2}, DType::f64)), "solve",
          "a=[3,3]", "b=[2]", "left side"),
      BAD("minijax::linalg::solve", ShapeError, nla::solve(v3(), v3()), "solve", "a=[3]", "b=[3]"),
      BAD("minijax::linalg::solve", ShapeError,
          nla::solve(mj::zeros({3, 2}, DType::f64), mj::zeros({3}, DType::f64)), "solve", "a=[3,2]", "b=[3]"),
      BAD("minijax::linalg::solve", ShapeError,
          nla::solve(mj::zeros({2, 3, 3}, DType::f64), mj::zeros({4, 3, 1}, DType::f64)), "solve", "batch",
          "a=[2,3,3]", "b=[4,3,1]"),
      BAD("minijax::linalg::solve", ShapeError,
          nla::solve(mj::zeros({2, 3, 3}, DType::f64), mj::zeros({2, 3}, DType::f64)), "solve", "a=[2,3,3]",
          "b=[2,3]", "b[..., None]"),
      BAD("minijax::linalg::det", ShapeError, nla::det(v3()), "det", "[3]"),
      BAD("minijax::linalg::det", ShapeError, nla::det(mj::zeros({4, 3}, DType::f64)), "det", "square",
          "[4,3]"),
      BAD("minijax::linalg::det", TypeError, nla::det(mj::astype(mj::eye(4, DType::f64), DType::bf16)), "det",
          "bf16"),
      BAD("minijax::linalg::slogdet", ShapeError, nla::slogdet(mj::scalar(2.0, DType::f64)), "slogdet", "[]"),
      BAD("minijax::linalg::slogdet", ShapeError, nla::slogdet(mj::zeros({3, 2}, DType::f64)), "slogdet",
          "[3,2]"),
      BAD("minijax::linalg::pinv", ShapeError, nla::pinv(v3()), "pinv", "[3]"),
      BAD("minijax::linalg::pinv", TypeError, nla::pinv(m33(DType::bf16)), "pinv", "bf16"),
      BAD("minijax::linalg::norm", ValueError, nla::norm(m33(), 3), "norm", "invalid order 3", "matrix"),
      BAD("minijax::linalg::norm", ValueError, nla::norm(m33(), "max"), "norm", "\"max\"", "matrix"),
      BAD("minijax::linalg::norm", ValueError, nla::norm(v3(), "fro"), "norm", "\"fro\"", "vector"),
      BAD("minijax::linalg::norm", ValueError, nla::norm(mj::zeros({2, 3, 4}, DType::f64), {}, {{0, 1, 2}}),
          "norm", "axis=(0, 1, 2)"),
      BAD("minijax::linalg::norm", ValueError, nla::norm(mj::zeros({2, 3, 4}, DType::f64), 2), "norm",
          "axis=(0, 1, 2)", "[2,3,4]"),
      BAD("minijax::linalg::norm", ValueError, nla::norm(m33(), 2, {{0, -2}}), "norm", "duplicate", "(0, 0)"),
      BAD("minijax::linalg::norm", ValueError, nla::norm(v3(), 2, {{1}}), "norm", "axis 1", "rank 1"),
      BAD("minijax::linalg::matrix_power", ShapeError, nla::matrix_power(mj::zeros({2, 3}, DType::f64), 2),
          "matrix_power", "square", "[2,3]"),
      BAD("minijax::linalg::matrix_power", ShapeError, nla::matrix_power(v3(), 2), "matrix_power", "[3]"),
      BAD("minijax::linalg::matrix_power", ValueError, nla::matrix_power(m33(), 2.5), "matrix_power",
          "integer", "2.5"),
  };
}

}  // namespace bad_input
