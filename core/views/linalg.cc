// minijax typed views of the linear-algebra primitives' params (core/views/linalg.h).
// Owns the name literals of triangular_solve, qr, eigh and svd outside their registrations, and
// their params checks.
#include "core/views/linalg.h"
#include "core/views/define_view.h"

#include "core/param_reads.h"

namespace minijax {

MJ_DEFINE_VIEW(TriangularSolveParams, triangular_solve_params, "triangular_solve")
TriangularSolveParams TriangularSolveParams::from(const Params& p) {
  return views::read_view("triangular_solve", [&] {
    return TriangularSolveParams{param_bool(p, "left_side"), param_bool(p, "lower"),
                                 param_bool(p, "transpose_a"), param_bool(p, "conjugate_a"),
                                 param_bool(p, "unit_diagonal")};
  });
}
Params TriangularSolveParams::to_params() const {
  return Params{{"left_side", left_side},
                {"lower", lower},
                {"transpose_a", transpose_a},
                {"conjugate_a", conjugate_a},
                {"unit_diagonal", unit_diagonal}};
}

MJ_DEFINE_VIEW(QrParams, qr_params, "qr")
MJ_DEFINE_VIEW(EighParams, eigh_params, "eigh")
MJ_DEFINE_VIEW(SvdParams, svd_params, "svd")

QrParams QrParams::from(const Params& p) {
  return views::read_view("qr", [&] {
    return QrParams{param_bool(p, "pivoting"), param_bool(p, "full_matrices")};
  });
}
Params QrParams::to_params() const {
  return Params{{"full_matrices", full_matrices}, {"pivoting", pivoting}};
}

EighParams EighParams::from(const Params& p) {
  return views::read_view("eigh", [&] {
    return EighParams{param_bool(p, "lower"), param_bool(p, "sort_eigenvalues")};
  });
}
Params EighParams::to_params() const {
  return Params{{"lower", lower}, {"sort_eigenvalues", sort_eigenvalues}};
}

SvdParams SvdParams::from(const Params& p) {
  return views::read_view("svd", [&] {
    return SvdParams{param_bool(p, "full_matrices"), param_bool(p, "compute_uv")};
  });
}
Params SvdParams::to_params() const {
  return Params{{"full_matrices", full_matrices}, {"compute_uv", compute_uv}};
}

namespace {

Registrar reg_checks([] {
  get_or_create_primitive("triangular_solve").check_params = [](const Params& p) {
    return TriangularSolveParams::from(p).to_params();
  };
  get_or_create_primitive("qr").check_params = [](const Params& p) { return QrParams::from(p).to_params(); };
  get_or_create_primitive("eigh").check_params = [](const Params& p) {
    return EighParams::from(p).to_params();
  };
  get_or_create_primitive("svd").check_params = [](const Params& p) {
    return SvdParams::from(p).to_params();
  };
});

}  // namespace
}  // namespace minijax
