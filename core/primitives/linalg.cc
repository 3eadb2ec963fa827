// minijax linear-algebra primitives (JAX's jax/_src/lax/linalg.py): cholesky and triangular_solve.
// Owns their shape rules, eager implementations, costs and the lax::linalg entry points.
//
// Every primitive works on the last two dims, batched over the leading ones, in f32 and f64.
// Params (as JAX prints them): cholesky (none), triangular_solve[left_side=False lower=False
// transpose_a=False conjugate_a=False unit_diagonal=False]. The eager implementations call LAPACK
// one matrix at a time through core/linalg_kernels.h, as the compiled runtime does per batch
// element (jit/runtime/linalg.cc); the tests check both against independent oracles.
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
  const int64_t count = rows * cols ? b.size() / (rows * cols) : 0;
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

// Matrices in a batch of shape s (the product of its leading dims).
double batch_count(const Shape& s) {
  double c = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) c *= double(s[i]);
  return c;
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
