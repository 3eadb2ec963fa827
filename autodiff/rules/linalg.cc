// minijax autodiff and batching rules of the linear-algebra primitives: cholesky and
// triangular_solve (JAX's _cholesky_jvp_rule, _triangular_solve_jvp_rule_a, its transpose and
// batching rules, and expand_dims_batcher; jax/_src/lax/linalg.py).
//
// cholesky is not linear; triangular_solve is linear in b (its transpose solves with op(a)^T) and
// not in a. Every derivative is built from these primitives and dot_general, so reverse mode,
// second order and vmap of a derivative reuse the same rules.
#include "core/linalg.h"
#include "autodiff/batching_util.h"
#include "core/lax.h"
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

Registrar reg([] {
  auto& c = get_or_create_primitive("cholesky");
  c.jvp = cholesky_jvp;
  c.no_transpose_reason = "not linear";
  c.batch = cholesky_batch;
  auto& t = get_or_create_primitive("triangular_solve");
  t.jvp = triangular_solve_jvp;
  t.transpose = triangular_solve_transpose;
  t.batch = triangular_solve_batch;
});

}  // namespace

}  // namespace minijax
