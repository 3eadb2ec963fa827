// minijax public-API bad-input cases: the linear-algebra functions (core/linalg.h).
// Owns linalg_cases(): ranks, shapes, sides and dtypes the functions refuse.
#include "api/bad_input.h"

namespace bad_input {
namespace {
namespace mj = minijax;
namespace la = minijax::lax::linalg;
namespace sla = minijax::scipy::linalg;
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
  };
}

}  // namespace bad_input
