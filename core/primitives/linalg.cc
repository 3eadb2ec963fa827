// minijax linear-algebra primitives (JAX's jax/_src/lax/linalg.py): cholesky, triangular_solve, lu,
// qr, eigh and svd.
// Owns their shape rules, eager implementations, costs and the lax::linalg entry points.
//
// Every primitive works on the last two dims, batched over the leading ones, in f32 and f64.
// Params (as JAX prints them): cholesky (none), triangular_solve[left_side=False lower=False
// transpose_a=False conjugate_a=False unit_diagonal=False]. The eager implementations call LAPACK
// one matrix at a time through core/linalg_kernels.h, as the compiled runtime does per batch
// element (jit/runtime/linalg.cc); the tests check both against independent oracles.
#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "core/lax.h"
#include "core/linalg.h"
#include "core/linalg_kernels.h"
#include "core/param_reads.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/linalg.h"

namespace minijax {

namespace {

// f32 or f64 (LAPACK's s and d routines); anything else is a TypeError naming the dtype.
void check_linalg_dtype(const ShapedArray& a, const char* fn) {
  if (a.dtype != DType::f32 && a.dtype != DType::f64)
    throw TypeError(std::string(fn) + " accepts f32 and f64 operands, got dtype " + dtype_name(a.dtype) +
                    " (operand " + a.str() + ")");
}

// Rank >= 2 and dims that fit LAPACK's 32-bit integers; `square`: the last two dims equal.
void check_matrix(const ShapedArray& a, const char* fn, bool square) {
  if (a.ndim() < 2)
    throw ShapeError(std::string(fn) + " needs a matrix or a batch of matrices (rank >= 2), got shape " +
                     shape_str(a.shape));
  const int64_t r = a.shape[a.shape.size() - 2], c = a.shape.back();
  if (square && r != c)
    throw ShapeError(std::string(fn) + " needs square matrices, got shape " + shape_str(a.shape));
  if (r > INT_MAX || c > INT_MAX)
    throw ValueError(std::string(fn) + ": matrix dims of " + shape_str(a.shape) +
                     " exceed LAPACK's 32-bit integers");
}

Shape batch_dims(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

// Matrices in a batch of shape s (the product of its leading dims).
double batch_count(const Shape& s) {
  double c = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) c *= double(s[i]);
  return c;
}
int64_t batch_count_of(const Shape& s) { return int64_t(batch_count(s)); }

// ---- cholesky -----------------------------------------------------------------------------------

std::vector<ShapedArray> cholesky_shape_rule(const std::vector<ShapedArray>& in, const Params&) {
  const ShapedArray& a = in.at(0);
  check_linalg_dtype(a, "cholesky");
  check_matrix(a, "cholesky", true);
  ShapedArray out = a;
  out.weak_type = false;
  return {out};
}

template <class T>
void cholesky_batch(const Array& x, Array& out) {
  const int64_t n = x.shape().back(), mat = n * n, count = mat ? x.size() / mat : 0;
  T* o = out.mutable_data<T>();
  std::memcpy(o, x.data<T>(), size_t(x.size()) * sizeof(T));
  for (int64_t i = 0; i < count; ++i) linalg_kernels::cholesky_lower(o + i * mat, n);
}

std::vector<Array> cholesky_impl(const std::vector<Array>& args, const Params&,
                                 const std::vector<ShapedArray>& out_avals) {
  Array out = Array::empty(out_avals.at(0));
  if (args.at(0).dtype() == DType::f32) cholesky_batch<float>(args[0], out);
  else cholesky_batch<double>(args[0], out);
  return {out};
}

// ---- triangular_solve ---------------------------------------------------------------------------

std::vector<ShapedArray> triangular_solve_shape_rule(const std::vector<ShapedArray>& in, const Params& p) {
  const ShapedArray &a = in.at(0), &b = in.at(1);
  check_linalg_dtype(a, "triangular_solve");
  check_linalg_dtype(b, "triangular_solve");
  const TriangularSolveParams tp = TriangularSolveParams::from(p);
  if (a.dtype != b.dtype)
    throw TypeError(std::string("triangular_solve operands must have one dtype, got ") + dtype_name(a.dtype) +
                    " and " + dtype_name(b.dtype));
  check_matrix(a, "triangular_solve", true);
  check_matrix(b, "triangular_solve", false);
  const char* side = tp.left_side ? "left_side=True: a [..., m, m] with b [..., m, n]"
                                  : "left_side=False: a [..., m, m] with b [..., n, m]";
  const int64_t common = tp.left_side ? b.shape[b.shape.size() - 2] : b.shape.back();
  if (batch_dims(a.shape) != batch_dims(b.shape) || a.shape.back() != common)
    throw ShapeError("triangular_solve operands do not fit: a " + shape_str(a.shape) + " and b " +
                     shape_str(b.shape) + " (" + side + ")");
  ShapedArray out = b;
  out.weak_type = false;
  return {out};
}

template <class T>
void triangular_solve_batch(const Array& a, const Array& b, Array& out, const TriangularSolveParams& tp) {
  const int64_t m = a.shape().back(), rows = b.shape()[size_t(b.ndim() - 2)], cols = b.shape().back();
  const int64_t count = rows * cols != 0 ? b.size() / (rows * cols) : 0;
  T* o = out.mutable_data<T>();
  std::memcpy(o, b.data<T>(), size_t(b.size()) * sizeof(T));
  const T* ad = a.data<T>();
  for (int64_t i = 0; i < count; ++i)
    linalg_kernels::triangular_solve(ad + i * m * m, o + i * rows * cols, rows, cols, tp.left_side, tp.lower,
                                     tp.transpose_a, tp.unit_diagonal);
}

std::vector<Array> triangular_solve_impl(const std::vector<Array>& args, const Params& p,
                                         const std::vector<ShapedArray>& out_avals) {
  const TriangularSolveParams tp = TriangularSolveParams::from(p);
  Array out = Array::empty(out_avals.at(0));
  if (args.at(0).dtype() == DType::f32) triangular_solve_batch<float>(args[0], args.at(1), out, tp);
  else triangular_solve_batch<double>(args[0], args.at(1), out, tp);
  return {out};
}

// ---- lu, qr, eigh, svd --------------------------------------------------------------------------

ShapedArray with_shape(const ShapedArray& a, Shape s, DType dt) {
  ShapedArray r = a;
  r.shape = std::move(s);
  r.dtype = dt;
  r.weak_type = false;
  return r;
}
Shape matrix_shape(const Shape& s, int64_t rows, int64_t cols) {
  Shape r = batch_dims(s);
  r.push_back(rows);
  r.push_back(cols);
  return r;
}
Shape vector_shape(const Shape& s, int64_t len) {
  Shape r = batch_dims(s);
  r.push_back(len);
  return r;
}
int64_t rows_of(const Shape& s) { return s[s.size() - 2]; }

// lu: (lu [..., m, n], pivots i32 [..., k], permutation i32 [..., m]).
std::vector<ShapedArray> lu_shape_rule(const std::vector<ShapedArray>& in, const Params&) {
  const ShapedArray& a = in.at(0);
  check_linalg_dtype(a, "lu");
  check_matrix(a, "lu", false);
  const int64_t m = rows_of(a.shape), k = std::min(m, a.shape.back());
  return {with_shape(a, a.shape, a.dtype), with_shape(a, vector_shape(a.shape, k), DType::i32),
          with_shape(a, vector_shape(a.shape, m), DType::i32)};
}

// The workspace of one matrix's kernel, reused over the batch (the compiled program's is an
// arena temporary instead).
struct Work {
  std::vector<double> buf;
  explicit Work(int64_t bytes) : buf(size_t(bytes + 7) / 8) {}
  void* get() { return buf.data(); }
  int64_t bytes() const { return int64_t(buf.size() * sizeof(double)); }
};

template <class T>
void lu_batch(const Array& x, std::vector<Array>& outs) {
  const int64_t m = rows_of(x.shape()), n = x.shape().back(), k = std::min(m, n);
  const int64_t count = batch_count_of(x.shape());
  const T* xs = x.data<T>();
  T* a = outs[0].mutable_data<T>();
  int32_t* piv = outs[1].mutable_data<int32_t>();
  int32_t* perm = outs[2].mutable_data<int32_t>();
  Work w(linalg_kernels::lu_workspace_bytes(int32_t(x.dtype()), m, n));
  for (int64_t i = 0; i < count; ++i)
    linalg_kernels::lu<T>(xs + i * m * n, a + i * m * n, m, n, piv + i * k, perm + i * m, w.get(), w.bytes());
}

std::vector<Array> lu_impl(const std::vector<Array>& args, const Params&,
                           const std::vector<ShapedArray>& avals) {
  std::vector<Array> outs;
  for (auto& a : avals) outs.push_back(Array::empty(a));
  if (args.at(0).dtype() == DType::f32) lu_batch<float>(args[0], outs);
  else lu_batch<double>(args[0], outs);
  return outs;
}

// qr: (q [..., m, m or k], r [..., m or k, n]).
std::vector<ShapedArray> qr_shape_rule(const std::vector<ShapedArray>& in, const Params& p) {
  const ShapedArray& a = in.at(0);
  check_linalg_dtype(a, "qr");
  const QrParams qp = QrParams::from(p);
  if (qp.pivoting)
    throw ValueError(
        "qr: pivoting=True (JAX's column-pivoted QR) is outside minijax's qr; use pivoting=False");
  check_matrix(a, "qr", false);
  const int64_t m = rows_of(a.shape), n = a.shape.back(), k = std::min(m, n);
  const int64_t qc = qp.full_matrices ? m : k;
  return {with_shape(a, matrix_shape(a.shape, m, qc), a.dtype),
          with_shape(a, matrix_shape(a.shape, qc, n), a.dtype)};
}

template <class T>
void qr_batch(const Array& x, std::vector<Array>& outs, bool full) {
  const int64_t m = rows_of(x.shape()), n = x.shape().back(), k = std::min(m, n), qc = full ? m : k;
  const int64_t count = batch_count_of(x.shape());
  const T* xd = x.data<T>();
  T* q = outs[0].mutable_data<T>();
  T* r = outs[1].mutable_data<T>();
  Work w(linalg_kernels::qr_workspace_bytes(int32_t(x.dtype()), m, n, full));
  for (int64_t i = 0; i < count; ++i)
    linalg_kernels::qr<T>(xd + i * m * n, q + i * m * qc, r + i * qc * n, m, n, full, w.get(), w.bytes());
}

std::vector<Array> qr_impl(const std::vector<Array>& args, const Params& p,
                           const std::vector<ShapedArray>& avals) {
  const bool full = QrParams::from(p).full_matrices;
  std::vector<Array> outs;
  for (auto& a : avals) outs.push_back(Array::empty(a));
  if (args.at(0).dtype() == DType::f32) qr_batch<float>(args[0], outs, full);
  else qr_batch<double>(args[0], outs, full);
  return outs;
}

// eigh: (v [..., n, n], w [..., n]).
std::vector<ShapedArray> eigh_shape_rule(const std::vector<ShapedArray>& in, const Params& p) {
  const ShapedArray& a = in.at(0);
  check_linalg_dtype(a, "eigh");
  (void)EighParams::from(p);
  check_matrix(a, "eigh", true);
  return {with_shape(a, a.shape, a.dtype), with_shape(a, vector_shape(a.shape, a.shape.back()), a.dtype)};
}

template <class T>
void eigh_batch(const Array& x, std::vector<Array>& outs, bool lower) {
  const int64_t n = x.shape().back(), count = batch_count_of(x.shape());
  const T* xd = x.data<T>();
  T* v = outs[0].mutable_data<T>();
  T* w = outs[1].mutable_data<T>();
  Work wk(linalg_kernels::eigh_workspace_bytes(int32_t(x.dtype()), n));
  for (int64_t i = 0; i < count; ++i)
    linalg_kernels::eigh<T>(xd + i * n * n, v + i * n * n, w + i * n, n, lower, wk.get(), wk.bytes());
}

std::vector<Array> eigh_impl(const std::vector<Array>& args, const Params& p,
                             const std::vector<ShapedArray>& avals) {
  const bool lower = EighParams::from(p).lower;
  std::vector<Array> outs;
  for (auto& a : avals) outs.push_back(Array::empty(a));
  if (args.at(0).dtype() == DType::f32) eigh_batch<float>(args[0], outs, lower);
  else eigh_batch<double>(args[0], outs, lower);
  return outs;
}

// svd: (s [..., k]) and, with compute_uv, (u [..., m, m or k], vh [..., n or k, n]).
std::vector<ShapedArray> svd_shape_rule(const std::vector<ShapedArray>& in, const Params& p) {
  const ShapedArray& a = in.at(0);
  check_linalg_dtype(a, "svd");
  const SvdParams sp = SvdParams::from(p);
  check_matrix(a, "svd", false);
  const int64_t m = rows_of(a.shape), n = a.shape.back(), k = std::min(m, n);
  std::vector<ShapedArray> out{with_shape(a, vector_shape(a.shape, k), a.dtype)};
  if (sp.compute_uv) {
    out.push_back(with_shape(a, matrix_shape(a.shape, m, sp.full_matrices ? m : k), a.dtype));
    out.push_back(with_shape(a, matrix_shape(a.shape, sp.full_matrices ? n : k, n), a.dtype));
  }
  return out;
}

template <class T>
void svd_batch(const Array& x, std::vector<Array>& outs, const SvdParams& sp) {
  const int64_t m = rows_of(x.shape()), n = x.shape().back(), k = std::min(m, n);
  const int64_t uc = sp.full_matrices ? m : k, vr = sp.full_matrices ? n : k;
  const int64_t count = batch_count_of(x.shape());
  const T* xd = x.data<T>();
  T* s = outs[0].mutable_data<T>();
  T* u = sp.compute_uv ? outs[1].mutable_data<T>() : nullptr;
  T* vt = sp.compute_uv ? outs[2].mutable_data<T>() : nullptr;
  Work w(linalg_kernels::svd_workspace_bytes(int32_t(x.dtype()), m, n, sp.full_matrices, sp.compute_uv));
  for (int64_t i = 0; i < count; ++i)
    linalg_kernels::svd<T>(xd + i * m * n, s + i * k, u ? u + i * m * uc : nullptr,
                           vt ? vt + i * vr * n : nullptr, m, n, sp.full_matrices, sp.compute_uv, w.get(),
                           w.bytes());
}

std::vector<Array> svd_impl(const std::vector<Array>& args, const Params& p,
                            const std::vector<ShapedArray>& avals) {
  const SvdParams sp = SvdParams::from(p);
  std::vector<Array> outs;
  for (auto& a : avals) outs.push_back(Array::empty(a));
  if (args.at(0).dtype() == DType::f32) svd_batch<float>(args[0], outs, sp);
  else svd_batch<double>(args[0], outs, sp);
  return outs;
}

// The cost of a factorisation of e's operand: flops(m, n) per matrix (Golub and Van Loan,
// "Matrix Computations", 4th ed., the operation counts of their algorithms 3.2.1, 5.2.1, 8.3.3
// and 8.6.2 in multiply-adds), the operand's and results' bytes.
template <class F>
auto factor_cost(F flops) {
  return [flops](const Eqn& e, bool count_bytes, const JaxprCost&) {
    CostEstimate c = operand_and_result_bytes(e, count_bytes);
    const Shape& s = atom_aval(e.inputs.at(0)).shape;
    c.flops = batch_count(s) * flops(double(s[s.size() - 2]), double(s.back()), e);
    return c;
  };
}

void register_factorizations() {
  {
    auto& p = get_or_create_primitive("lu");
    p.shape_rule = lu_shape_rule;
    p.impl = lu_impl;
    p.multiple_results = true;
    set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
    // m n^2 - n^3 / 3 for m >= n (and its transpose's count otherwise).
    p.cost = factor_cost([](double m, double n, const Eqn&) {
      const double a = std::max(m, n), b = std::min(m, n);
      return a * b * b - b * b * b / 3;
    });
  }
  {
    auto& p = get_or_create_primitive("qr");
    p.shape_rule = qr_shape_rule;
    p.impl = qr_impl;
    p.multiple_results = true;
    set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
    // Householder QR, 2 (m n^2 - n^3 / 3), and forming Q as much again.
    p.cost = factor_cost([](double m, double n, const Eqn&) {
      const double k = std::min(m, n);
      return 4 * (std::max(m, n) * k * k - k * k * k / 3);
    });
  }
  {
    auto& p = get_or_create_primitive("eigh");
    p.shape_rule = eigh_shape_rule;
    p.impl = eigh_impl;
    p.multiple_results = true;
    set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
    // Tridiagonal reduction 4 n^3 / 3, divide and conquer and back-transformation ~ 3 n^3.
    p.cost = factor_cost([](double, double n, const Eqn&) { return 13 * n * n * n / 3; });
  }
  {
    auto& p = get_or_create_primitive("svd");
    p.shape_rule = svd_shape_rule;
    p.impl = svd_impl;
    p.multiple_results = true;
    set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
    // Bidiagonalisation 4 m n^2 - 4 n^3 / 3 (m >= n); the singular vectors ~ 4 m n^2 + 8 n^3 more.
    p.cost = factor_cost([](double m, double n, const Eqn& e) {
      const double a = std::max(m, n), b = std::min(m, n);
      const double base = 4 * a * b * b - 4 * b * b * b / 3;
      return svd_params(e).compute_uv ? base + 4 * a * b * b + 8 * b * b * b : base;
    });
  }
}

Registrar reg([] {
  {
    auto& p = get_or_create_primitive("cholesky");
    p.shape_rule = cholesky_shape_rule;
    p.impl = cholesky_impl;
    set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
    // n^3 / 3 multiply-adds per matrix (LAPACK Working Note 41's count for ?potrf).
    p.cost = [](const Eqn& e, bool count_bytes, const JaxprCost&) {
      CostEstimate c = operand_and_result_bytes(e, count_bytes);
      const Shape& s = atom_aval(e.inputs.at(0)).shape;
      const double n = double(s.back());
      c.flops = batch_count(s) * n * n * n / 3;
      return c;
    };
  }
  {
    auto& p = get_or_create_primitive("triangular_solve");
    p.shape_rule = triangular_solve_shape_rule;
    p.impl = triangular_solve_impl;
    set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
    // m^2 multiply-adds per right-hand side of length m (?trsm): m * m * n for b of m x n.
    p.cost = [](const Eqn& e, bool count_bytes, const JaxprCost&) {
      CostEstimate c = operand_and_result_bytes(e, count_bytes);
      const Shape& b = atom_aval(e.inputs.at(1)).shape;
      const double m = double(atom_aval(e.inputs.at(0)).shape.back());
      const double rhs = double(b.size() >= 2 ? b[b.size() - 2] * b.back() : 0) / (m > 0 ? m : 1);
      c.flops = batch_count(b) * m * m * rhs;
      return c;
    };
  }
  register_factorizations();
});

}  // namespace

namespace lax::linalg {

Array cholesky(const Array& x, bool symmetrize_input, SL loc) {
  if (!x.defined()) throw ValueError("cholesky: the operand is an empty Array", loc);
  Array a = x;
  // JAX's symmetrize, (x + x^T) / 2 (a product by 0.5: the same value), before the primitive,
  // which reads only the lower triangle. Inputs the primitive refuses skip it, so its shape rule
  // names them.
  const bool square = x.ndim() >= 2 && x.shape()[size_t(x.ndim() - 1)] == x.shape()[size_t(x.ndim() - 2)];
  if (symmetrize_input && square && is_floating(x.dtype())) a = detail::symmetrize(x, loc);
  return minijax::bind(primitive("cholesky"), {a}, Params{}, loc).at(0);
}

Array triangular_solve(const Array& a, const Array& b, bool left_side, bool lower, bool transpose_a,
                       bool conjugate_a, bool unit_diagonal, SL loc) {
  if (!a.defined() || !b.defined()) throw ValueError("triangular_solve: an operand is an empty Array", loc);
  // JAX's singleton form: b of rank a.ndim - 1 is one right-hand side (a column if left_side).
  const bool singleton = b.ndim() == a.ndim() - 1 && b.ndim() >= 1;
  Array bb = singleton ? lax::expand_dims(b, {left_side ? b.ndim() : b.ndim() - 1}, loc) : b;
  // conjugate_a changes nothing on real operands (the only ones minijax has): JAX binds it as
  // False for them, and so does minijax.
  (void)conjugate_a;
  const TriangularSolveParams tp{left_side, lower, transpose_a, false, unit_diagonal};
  Array out = minijax::bind(primitive("triangular_solve"), {a, bb}, tp.to_params(), loc).at(0);
  if (!singleton) return out;
  return lax::squeeze(out, {left_side ? out.ndim() - 1 : out.ndim() - 2}, loc);
}

std::tuple<Array, Array, Array> lu(const Array& x, SL loc) {
  if (!x.defined()) throw ValueError("lu: the operand is an empty Array", loc);
  const std::vector<Array> r = minijax::bind(primitive("lu"), {x}, Params{}, loc);
  return {r.at(0), r.at(1), r.at(2)};
}

std::pair<Array, Array> qr(const Array& x, bool pivoting, bool full_matrices, SL loc) {
  if (!x.defined()) throw ValueError("qr: the operand is an empty Array", loc);
  if (pivoting)
    throw ValueError(
        "qr: pivoting=True (JAX's column-pivoted QR) is outside minijax's qr; use pivoting=False", loc);
  const QrParams qp{false, full_matrices};
  const std::vector<Array> r = minijax::bind(primitive("qr"), {x}, qp.to_params(), loc);
  return {r.at(0), r.at(1)};
}

std::pair<Array, Array> eigh(const Array& x, bool lower, bool symmetrize_input, bool sort_eigenvalues,
                             SL loc) {
  if (!x.defined()) throw ValueError("eigh: the operand is an empty Array", loc);
  Array a = x;
  const bool square = x.ndim() >= 2 && x.shape()[size_t(x.ndim() - 1)] == x.shape()[size_t(x.ndim() - 2)];
  if (symmetrize_input && square && is_floating(x.dtype())) a = detail::symmetrize(x, loc);
  const EighParams ep{lower, sort_eigenvalues};
  const std::vector<Array> r = minijax::bind(primitive("eigh"), {a}, ep.to_params(), loc);
  return {r.at(0), r.at(1)};
}

std::vector<Array> svd(const Array& x, bool full_matrices, bool compute_uv, SL loc) {
  if (!x.defined()) throw ValueError("svd: the operand is an empty Array", loc);
  const SvdParams sp{full_matrices, compute_uv};
  const std::vector<Array> r = minijax::bind(primitive("svd"), {x}, sp.to_params(), loc);
  if (!compute_uv) return {r.at(0)};
  return {r.at(1), r.at(0), r.at(2)};
}

namespace detail {

Array matrix_transpose(const Array& x, SL loc) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.ndim(); ++i) perm.push_back(i);
  std::swap(perm[size_t(x.ndim() - 1)], perm[size_t(x.ndim() - 2)]);
  return lax::transpose(x, perm, loc);
}

Array symmetrize(const Array& x, SL loc) {
  return lax::mul(lax::add(x, matrix_transpose(x, loc), loc), lax::full(x.shape(), 0.5, x.dtype()), loc);
}

Array tri_mask(const Array& x, int64_t k, bool lower, SL loc) {
  const int64_t r = x.ndim();
  const Shape s = x.shape();
  const Array rows = lax::iota(DType::i32, s, r - 2, loc), cols = lax::iota(DType::i32, s, r - 1, loc);
  // lower: col - row <= k; upper: col - row >= k.
  const Array diff = lax::sub(cols, rows, loc), kk = lax::full(s, double(k), DType::i32);
  const Array keep = lower ? lax::le(diff, kk, loc) : lax::ge(diff, kk, loc);
  return lax::select_n(keep, {lax::full(s, 0.0, x.dtype()), x}, loc);
}

}  // namespace detail

}  // namespace lax::linalg

}  // namespace minijax
