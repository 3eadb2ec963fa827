// minijax autodiff and batching rules of the linear-algebra primitives: cholesky, triangular_solve,
// lu, qr, eigh and svd (JAX's _cholesky_jvp_rule, _triangular_solve_jvp_rule_a and its transpose,
// _lu_jvp_rule, qr_jvp_rule, _eigh_jvp_rule, _svd_jvp_rule, and the batching rules; jax/_src/lax/linalg.py).
//
// The factorisations are not linear; triangular_solve is linear in b (its transpose solves with op(a)^T) and
// not in a. Every derivative is built from these primitives and dot_general, so reverse mode,
// second order and vmap of a derivative reuse the same rules.
#include <algorithm>

#include "autodiff/batching_util.h"
#include "core/errors.h"
#include "core/lax.h"
#include "core/linalg.h"
#include "core/linalg_rows.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/linalg.h"

namespace minijax {

namespace {

namespace la = lax::linalg;
using Outs = std::pair<std::vector<Array>, std::vector<Array>>;
using BOuts = std::pair<std::vector<Array>, std::vector<int64_t>>;

// JAX's lax.batch_matmul: x @ y over the last two dims, the leading dims a batch of both.
Array batch_matmul(const Array& x, const Array& y) {
  const int64_t r = x.ndim();
  lax::DotDimensionNumbers dn;
  dn.lhs_contracting = {r - 1};
  dn.rhs_contracting = {r - 2};
  for (int64_t i = 0; i + 2 < r; ++i) {
    dn.lhs_batch.push_back(i);
    dn.rhs_batch.push_back(i);
  }
  return lax::dot_general(x, y, dn);
}

Array solve(const Array& a, const Array& b, const TriangularSolveParams& tp) {
  return minijax::bind(primitive("triangular_solve"), {a, b}, tp.to_params()).at(0);
}

// ---- cholesky -----------------------------------------------------------------------------------

// JAX's _cholesky_jvp_rule (Murray, arXiv:1602.07527, forward mode): with L = cholesky(x),
// L_dot = L phi(L^-1 x_dot L^-T), where phi takes the lower triangle and halves the diagonal.
// Like JAX's, the rule reads x_dot whole (the wrapper symmetrizes the primal and so the tangent).
Outs cholesky_jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& p) {
  const Array L = minijax::bind(primitive("cholesky"), {primals.at(0)}, p).at(0);
  const Array& x_dot = tangents.at(0);
  TriangularSolveParams right;  // x_dot L^-T: X L^T = x_dot
  right.left_side = false;
  right.lower = true;
  right.transpose_a = true;
  TriangularSolveParams left;  // L^-1 (...): L Y = (...)
  left.left_side = true;
  left.lower = true;
  const Array inner = solve(L, solve(L, x_dot, right), left);
  const int64_t r = inner.ndim();
  const Array l = la::detail::tri_mask(inner, 0, true);
  const Array diag = lax::eq(lax::iota(DType::i32, l.shape(), r - 2),
                             lax::iota(DType::i32, l.shape(), r - 1));
  const Array phi = lax::select_n(diag, {l, lax::mul(l, lax::full(l.shape(), 0.5, l.dtype()))});
  return {{L}, {batch_matmul(L, phi)}};
}

// JAX's expand_dims_batcher: the batch dim moved to the front, where it is one more batch dim.
BOuts cholesky_batch(const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& p) {
  const Array x = move_batch_dim(args.at(0), dims.at(0), 0);
  return {minijax::bind(primitive("cholesky"), {x}, p), {0}};
}

// ---- triangular_solve ---------------------------------------------------------------------------

// JAX's _triangular_solve_jvp_rule_a: the tangent from a's tangent g_a, with ans the primal result:
// -op(A)^-1 op(g_a) X (left side) or -X op(g_a) op(A)^-1, g_a restricted to the triangle read
// (without the diagonal when it is unit), multiplied in the cheaper order.
Array triangular_solve_jvp_a(Array g_a, const Array& ans, const Array& a, const TriangularSolveParams& tp) {
  const int64_t m = ans.shape()[size_t(ans.ndim() - 2)], n = ans.shape().back();
  const int64_t k = tp.unit_diagonal ? 1 : 0;
  g_a = tp.lower ? la::detail::tri_mask(g_a, -k, true) : la::detail::tri_mask(g_a, k, false);
  g_a = lax::neg(g_a);
  if (tp.transpose_a) g_a = la::detail::matrix_transpose(g_a);
  if (tp.left_side)
    return m > n ? solve(a, batch_matmul(g_a, ans), tp) : batch_matmul(solve(a, g_a, tp), ans);
  return m < n ? solve(a, batch_matmul(ans, g_a), tp) : batch_matmul(ans, solve(a, g_a, tp));
}

Outs triangular_solve_jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                          const Params& p) {
  const TriangularSolveParams tp = TriangularSolveParams::from(p);
  const Array& a = primals.at(0);
  const Array ans = solve(a, primals.at(1), tp);
  Array t;
  if (tangents.at(0).defined()) t = triangular_solve_jvp_a(tangents[0], ans, a, tp);
  if (tangents.at(1).defined()) {
    const Array tb = solve(a, tangents[1], tp);
    t = t.defined() ? lax::add_any(t, tb) : tb;
  }
  return {{ans}, {t}};
}

// Linear in b: b's cotangent solves with op(a)^T (JAX's _triangular_solve_transpose_rule).
std::vector<Array> triangular_solve_transpose(const std::vector<Array>& cts, const std::vector<Array>& args,
                                              const std::vector<ShapedArray>&, const Params& p) {
  if (!args.at(0).defined())
    throw TypeError("triangular_solve is not linear in a: its transpose needs a known a");
  if (!cts.at(0).defined()) return {Array(), Array()};
  TriangularSolveParams tp = TriangularSolveParams::from(p);
  tp.transpose_a = !tp.transpose_a;
  return {Array(), solve(args[0], cts[0], tp)};
}

// JAX's _triangular_solve_batching_rule: an unmapped a solves one wider b (the batch folded into
// b's right-hand sides: its columns on the left side, its rows on the right); otherwise both are
// batched at the front, one more batch dim.
BOuts triangular_solve_batch(const std::vector<Array>& args, const std::vector<int64_t>& dims,
                             const Params& p) {
  const TriangularSolveParams tp = TriangularSolveParams::from(p);
  const Array &a = args.at(0), &b = args.at(1);
  if (dims.at(0) == kNotMapped) {
    const int64_t r = b.ndim();  // b with its batch dim
    const Array y = move_batch_dim(b, dims.at(1), tp.left_side ? r - 1 : r - 2);
    const Shape& s = y.shape();
    Shape f(s.begin(), s.end());
    if (tp.left_side) {
      f.pop_back();
      f.back() = s[size_t(r - 2)] * s[size_t(r - 1)];
    } else {
      f.erase(f.end() - 2);
      f[size_t(r - 3)] = s[size_t(r - 3)] * s[size_t(r - 2)];
    }
    const Array out = solve(a, lax::reshape(y, f), tp);
    return {{lax::reshape(out, s)}, {tp.left_side ? r - 1 : r - 2}};
  }
  const int64_t size = batch_axis_size(args, dims);
  return {{solve(materialize_batch(a, dims[0], size), materialize_batch(b, dims.at(1), size), tp)}, {0}};
}

// ---- lu, qr, eigh, svd --------------------------------------------------------------------------

Array matmul_t(const Array& x, const Array& y) { return batch_matmul(la::detail::matrix_transpose(x), y); }

// An n x n identity broadcast to the batch dims of `like` (a [..., *, *] array), in its dtype;
// `from`: only the diagonal elements from index `from` on are ones.
Array eye_like(const Array& like, int64_t n, int64_t from = 0) {
  Shape s(like.shape().begin(), like.shape().end() - 2);
  s.push_back(n);
  s.push_back(n);
  const int64_t r = int64_t(s.size());
  const Array rows = lax::iota(DType::i32, s, r - 2), cols = lax::iota(DType::i32, s, r - 1);
  Array on = lax::eq(rows, cols);
  if (from > 0) on = lax::and_(on, lax::ge(rows, lax::full(s, double(from), DType::i32)));
  return lax::convert_element_type(on, like.dtype());
}

// The diagonal of each matrix of x ([..., n, n] -> [..., n]): JAX's _extract_diagonal.
Array extract_diagonal(const Array& x) {
  const int64_t r = x.ndim();
  const Array mask = lax::eq(lax::iota(DType::i32, x.shape(), r - 2),
                             lax::iota(DType::i32, x.shape(), r - 1));
  return lax::reduce_sum(lax::select_n(mask, {lax::full(x.shape(), 0.0, x.dtype()), x}), {r - 1});
}

// x[..., :, j] / v[..., j] for a vector v of x's last dim (JAX's x / s[..., None, :]).
Array scale_columns(const Array& x, const Array& v, bool divide) {
  const int64_t r = x.ndim();
  std::vector<int64_t> dims;
  for (int64_t i = 0; i + 2 < r; ++i) dims.push_back(i);
  dims.push_back(r - 1);
  const Array b = lax::broadcast_in_dim(v, x.shape(), dims);
  return divide ? lax::div(x, b) : lax::mul(x, b);
}
// x[..., i, :] * v[..., i] (JAX's s[..., :, None] * x).
Array scale_rows(const Array& x, const Array& v) {
  const int64_t r = x.ndim();
  std::vector<int64_t> dims;
  for (int64_t i = 0; i + 2 < r; ++i) dims.push_back(i);
  dims.push_back(r - 2);
  return lax::mul(x, lax::broadcast_in_dim(v, x.shape(), dims));
}

// x[..., r0:r1, c0:c1].
Array matrix_slice(const Array& x, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const int64_t r = x.ndim();
  std::vector<int64_t> start(size_t(r), 0), limit(x.shape().begin(), x.shape().end());
  start[size_t(r - 2)] = r0, limit[size_t(r - 2)] = r1;
  start[size_t(r - 1)] = c0, limit[size_t(r - 1)] = c1;
  return lax::slice(x, start, limit);
}
// x zero-padded at the end of its last two dims by (rows, cols).
Array matrix_pad(const Array& x, int64_t rows, int64_t cols) {
  std::vector<lax::PadConfig> cfg(size_t(x.ndim()), lax::PadConfig{0, 0, 0});
  cfg[cfg.size() - 2].high = rows;
  cfg.back().high = cols;
  return lax::pad(x, lax::full({}, 0.0, x.dtype()), cfg);
}

// JAX's _lu_jvp_rule / _lu_jvp_inner (De Hoog, Anderssen and Lukas, "Differentiation of matrix
// functionals using triangular factorization"), on the whole batch at once: with L (m x m, unit
// lower) and U (n x n, upper) padded from the packed factors, X = L^-1 P a_dot U^-1 and
// lu_dot = L tril(X, -1) + triu(X) U. The pivots and the permutation have no tangent.
Outs lu_jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& p) {
  const std::vector<Array> outs = minijax::bind(primitive("lu"), {primals.at(0)}, p);
  const Array &lu = outs[0], &perm = outs[2];
  const int64_t m = lu.shape()[size_t(lu.ndim() - 2)], n = lu.shape().back(), k = std::min(m, n);
  const Array l = lax::add(matrix_pad(la::detail::tri_mask(matrix_slice(lu, 0, m, 0, k), -1, true), 0, m - k),
                           eye_like(lu, m));
  const Array u = lax::add(matrix_pad(la::detail::tri_mask(matrix_slice(lu, 0, k, 0, n), 0, false), n - k, 0),
                           eye_like(lu, n, k));
  TriangularSolveParams left;
  left.left_side = true;
  left.lower = true;
  left.unit_diagonal = true;
  TriangularSolveParams right;  // X u = la
  const Array lau = solve(u, solve(l, linalg::detail::take_rows(tangents.at(0), perm), left), right);
  const Array lu_dot = lax::add(batch_matmul(l, la::detail::tri_mask(lau, -1, true)),
                                batch_matmul(la::detail::tri_mask(lau, 0, false), u));
  return {outs, {lu_dot, Array(), Array()}};
}

// JAX's qr_jvp_rule (J. Townsend, "Differentiating the QR decomposition"): from the reduced
// factors, dx_rinv = dx R^-1, C = Q^T dx_rinv, do = tril(C, -1) - tril(C, -1)^T, dQ = Q (do - C) +
// dx_rinv, dR = (C - do) R. Defined for m >= n, and with full_matrices only for m == n.
Outs qr_jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& p) {
  const QrParams qp = QrParams::from(p);
  const Array& x = primals.at(0);
  const int64_t m = x.shape()[size_t(x.ndim() - 2)], n = x.shape().back();
  if (m < n || (qp.full_matrices && m != n))
    throw NotDifferentiableError(
        "qr: the derivative is defined for [..., m, n] with m >= n, and with "
        "full_matrices=True only for square matrices (as JAX's qr_jvp_rule), got shape " +
        shape_str(x.shape()));
  QrParams reduced = qp;
  reduced.full_matrices = false;
  const std::vector<Array> qr = minijax::bind(primitive("qr"), {x}, reduced.to_params());
  const Array &q = qr[0], &r = qr[1];
  const Array dx_rinv = solve(r, tangents.at(0), TriangularSolveParams{});  // X r = dx (right side, upper)
  const Array c = matmul_t(q, dx_rinv);
  const Array c_lower = la::detail::tri_mask(c, -1, true);
  const Array d_o = lax::sub(c_lower, la::detail::matrix_transpose(c_lower));
  const Array dq = lax::add(batch_matmul(q, lax::sub(d_o, c)), dx_rinv);
  const Array dr = batch_matmul(lax::sub(c, d_o), r);
  return {qr, {dq, dr}};
}

// JAX's _eigh_jvp_rule (non-degenerate perturbation theory; Giles, "An extended collection of
// matrix derivative results", NA-08-01): from eigh of (a + a^T) / 2, with F[i, j] = 1 / (w_j -
// w_i) off the diagonal and 0 on it, C = V^T a_dot V: dV = V (F * C), dw = diag(C). Repeated
// eigenvalues make F, and so dV, inf or NaN; dw stays finite.
Outs eigh_jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& p) {
  const Array& a = primals.at(0);
  const std::vector<Array> vw = minijax::bind(primitive("eigh"), {la::detail::symmetrize(a)}, p);
  const Array &v = vw[0], &w = vw[1];
  const int64_t n = a.shape().back();
  const Array eye = eye_like(a, n);
  const int64_t r = a.ndim();
  std::vector<int64_t> row_dims, col_dims;  // w[..., None, :] and w[..., :, None]
  for (int64_t i = 0; i + 2 < r; ++i) row_dims.push_back(i), col_dims.push_back(i);
  row_dims.push_back(r - 1);
  col_dims.push_back(r - 2);
  const Array diff = lax::sub(lax::broadcast_in_dim(w, a.shape(), row_dims),
                              lax::broadcast_in_dim(w, a.shape(), col_dims));
  const Array f = lax::sub(lax::integer_pow(lax::add(eye, diff), -1), eye);
  const Array c = batch_matmul(matmul_t(v, tangents.at(0)), v);
  return {vw, {batch_matmul(v, lax::mul(f, c)), extract_diagonal(c)}};
}

// JAX's _svd_jvp_rule (Townsend, "Differentiating the singular value decomposition"; Giles,
// NA-08-01), from the reduced factors: dS = U^T dA V, ds = diag(dS); with F[i, j] = 1 / (s_j^2 -
// s_i^2) off the diagonal (0 on it), dU = U (F * (dS S + S dS^T)) and dV = V (F * (S dS + dS^T S)),
// plus the components outside the span of U (m > n) or V (n > m). (JAX's dUdV_diag term is the
// diagonal of dS - dS^H, zero for real matrices.) Repeated singular values make dU and dV inf or
// NaN; ds stays finite. With full_matrices and compute_uv: NotDifferentiableError, as JAX.
Outs svd_jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params& p) {
  const SvdParams sp = SvdParams::from(p);
  if (sp.compute_uv && sp.full_matrices)
    throw NotDifferentiableError(
        "svd: the derivative with full_matrices=True and compute_uv=True is not defined "
        "(JAX raises NotImplementedError); use full_matrices=False");
  const Array& A = primals.at(0);
  const Array& dA = tangents.at(0);
  const std::vector<Array> suv = minijax::bind(primitive("svd"), {A}, SvdParams{false, true}.to_params());
  const Array &s = suv[0], &U = suv[1], &Vt = suv[2];
  const Array V = la::detail::matrix_transpose(Vt);
  const Array dS = batch_matmul(matmul_t(U, dA), V);
  const Array ds = extract_diagonal(dS);
  if (!sp.compute_uv) return {{s}, {ds}};
  const int64_t k = s.shape().back();
  Shape ks(s.shape().begin(), s.shape().end());
  ks.push_back(k);
  const int64_t r = int64_t(ks.size());
  std::vector<int64_t> row_dims, col_dims;
  for (int64_t i = 0; i + 2 < r; ++i) row_dims.push_back(i), col_dims.push_back(i);
  row_dims.push_back(r - 1);
  col_dims.push_back(r - 2);
  const Array s_row = lax::broadcast_in_dim(s, ks, row_dims), s_col = lax::broadcast_in_dim(s, ks, col_dims);
  const Array s_diffs = lax::mul(lax::add(s_row, s_col), lax::sub(s_row, s_col));
  const Array eye = eye_like(s_row, k);
  const Array F = lax::sub(lax::div(lax::full(ks, 1.0, s.dtype()), lax::add(s_diffs, eye)), eye);
  const Array dSS = scale_columns(dS, s, false), SdS = scale_rows(dS, s);
  Array dU = batch_matmul(U, lax::mul(F, lax::add(dSS, la::detail::matrix_transpose(dSS))));
  Array dV = batch_matmul(V, lax::mul(F, lax::add(SdS, la::detail::matrix_transpose(SdS))));
  const int64_t m = A.shape()[size_t(A.ndim() - 2)], n = A.shape().back();
  if (m > n) {
    const Array dAV = batch_matmul(dA, V);
    dU = lax::add(dU, scale_columns(lax::sub(dAV, batch_matmul(U, matmul_t(U, dAV))), s, true));
  }
  if (n > m) {
    const Array dAHU = matmul_t(dA, U);
    dV = lax::add(dV, scale_columns(lax::sub(dAHU, batch_matmul(V, batch_matmul(Vt, dAHU))), s, true));
  }
  return {suv, {ds, dU, la::detail::matrix_transpose(dV)}};
}

// JAX's expand_dims_batcher for a primitive of one matrix operand and several results: the batch
// dim moved to the front, one more batch dim of every result.
BOuts factor_batch(const char* name, const std::vector<Array>& args, const std::vector<int64_t>& dims,
                   const Params& p) {
  const std::vector<Array> outs = minijax::bind(primitive(name), {move_batch_dim(args.at(0), dims.at(0), 0)},
                                                p);
  return {outs, std::vector<int64_t>(outs.size(), 0)};
}

Registrar reg([] {
  auto& c = get_or_create_primitive("cholesky");
  c.jvp = cholesky_jvp;
  c.no_transpose_reason = "not linear";
  c.batch = cholesky_batch;
  auto& t = get_or_create_primitive("triangular_solve");
  t.jvp = triangular_solve_jvp;
  t.transpose = triangular_solve_transpose;
  t.batch = triangular_solve_batch;
  const std::pair<const char*, JvpRule> factorizations[] = {{"lu", lu_jvp},
                                                            {"qr", qr_jvp},
                                                            {"eigh", eigh_jvp},
                                                            {"svd", svd_jvp}};
  for (const auto& [name, jvp] : factorizations) {
    auto& f = get_or_create_primitive(name);
    f.jvp = jvp;
    f.no_transpose_reason = "not linear";
    f.batch = [name](const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& p) {
      return factor_batch(name, args, dims, p);
    };
  }
});

}  // namespace

}  // namespace minijax
