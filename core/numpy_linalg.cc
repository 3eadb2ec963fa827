// minijax jax.numpy.linalg (core/numpy_linalg.h): inv, solve, det, slogdet, pinv, norm and
// matrix_power as compositions of the lax.linalg primitives, and the LU solve helpers they share.
#include "core/numpy_linalg.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "autodiff/custom_derivatives.h"
#include "core/control_flow.h"
#include "core/errors.h"
#include "core/gather_scatter.h"
#include "core/lax.h"
#include "core/linalg.h"
#include "core/linalg_rows.h"

namespace minijax::linalg {

using detail::take_rows;

namespace {

namespace la = lax::linalg;

constexpr double kInf = std::numeric_limits<double>::infinity();

int64_t dim(const Array& x, int64_t i) { return x.shape()[size_t(i < 0 ? x.ndim() + i : i)]; }

// x's shape without its last `core` dims.
Shape batch_of(const Array& x, int64_t core) {
  return Shape(x.shape().begin(), x.shape().end() - std::min<int64_t>(core, x.ndim()));
}

Shape concat(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<int64_t> iota_dims(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = i;
  return v;
}

std::string num_str(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void check_defined(const char* fn, std::initializer_list<const Array*> xs, SL loc) {
  for (const Array* x : xs)
    if (!x->defined()) throw ValueError(std::string(fn) + ": an operand is an empty Array", loc);
}

// A square matrix or a batch of them: ShapeError naming fn and the shape otherwise.
void check_square(const char* fn, const Array& a, SL loc) {
  check_defined(fn, {&a}, loc);
  if (a.ndim() < 2 || dim(a, -1) != dim(a, -2))
    throw ShapeError(std::string(fn) +
                         ": expected a square matrix or a batch of them, shape [..., n, n]; got " +
                         shape_str(a.shape()),
                     loc);
}

// JAX's promote_dtypes_inexact of two operands: their promoted dtype, an integer one f32.
std::pair<Array, Array> promote_pair(const Array& a, const Array& b, SL loc) {
  DType d = promote_types({a.dtype(), a.weak_type()}, {b.dtype(), b.weak_type()}, loc).dtype;
  if (!is_floating(d)) d = DType::f32;
  auto to = [&](const Array& x) { return x.dtype() == d ? x : lax::convert_element_type(x, d, false, loc); };
  return {to(a), to(b)};
}

// A scalar literal of dtype d (lax's binary ops broadcast a rank-0 operand).
Array lit(double v, DType d) { return lax::full({}, v, d); }
// v broadcast to `shape` (a broadcast of a literal in the jaxpr, not a constant array).
Array fill(const Shape& shape, double v, DType d, SL loc) {
  return lax::broadcast_in_dim(lit(v, d), shape, {}, loc);
}

// x reduced over `axes` by `red`, the reduced dims kept as size 1 with keepdims.
template <class Red>
Array reduce_keep(const Array& x, const std::vector<int64_t>& axes, bool keepdims, Red red, SL loc) {
  Array y = red(x, axes, loc);
  if (!keepdims) return y;
  Shape s = x.shape();
  for (int64_t a : axes) s[size_t(a)] = 1;
  return lax::reshape(y, s, loc);
}

// The diagonal of each matrix of x ([..., n, n]) as [..., n]: a strided slice of the flattened
// matrix (exact, no arithmetic, so inf and NaN elsewhere do not reach it).
Array diagonal(const Array& x, SL loc) {
  const int64_t n = dim(x, -1);
  Shape flat = batch_of(x, 2);
  flat.push_back(n * n);
  const Array f = lax::reshape(x, flat, loc);
  std::vector<int64_t> start(flat.size(), 0), limit(flat.begin(), flat.end()), strides(flat.size(), 1);
  strides.back() = n + 1;
  return lax::slice(f, start, limit, strides, loc);
}

Array trace(const Array& x, SL loc) { return lax::reduce_sum(diagonal(x, loc), {x.ndim() - 2}, loc); }

// x[..., i, j] of each matrix of x, of shape x.shape[:-2].
Array entry(const Array& x, int64_t i, int64_t j, SL loc) {
  const int64_t r = x.ndim();
  std::vector<int64_t> start(size_t(r), 0), limit(x.shape().begin(), x.shape().end());
  start[size_t(r - 2)] = i, limit[size_t(r - 2)] = i + 1;
  start[size_t(r - 1)] = j, limit[size_t(r - 1)] = j + 1;
  return lax::reshape(lax::slice(x, start, limit, {}, loc), batch_of(x, 2), loc);
}

// x[..., k0:k1] along the last dim.
Array last_slice(const Array& x, int64_t k0, int64_t k1, SL loc) {
  std::vector<int64_t> start(size_t(x.ndim()), 0), limit(x.shape().begin(), x.shape().end());
  start.back() = k0, limit.back() = k1;
  return lax::slice(x, start, limit, {}, loc);
}

// x[..., r0:r1, :] along the row dim.
Array row_slice(const Array& x, int64_t r0, int64_t r1, SL loc) {
  const size_t r = size_t(x.ndim());
  std::vector<int64_t> start(r, 0), limit(x.shape().begin(), x.shape().end());
  start[r - 2] = r0, limit[r - 2] = r1;
  return lax::slice(x, start, limit, {}, loc);
}

// v of shape x.shape[:-k] broadcast over x's last k dims.
Array over_batch(const Array& v, const Shape& shape, SL loc) {
  return lax::broadcast_in_dim(v, shape, iota_dims(v.ndim()), loc);
}

Array mT(const Array& x, SL loc) { return la::detail::matrix_transpose(x, loc); }


// The machine epsilon of a float dtype (jnp.finfo(dtype).eps).
double eps_of(DType d) {
  switch (d) {
    case DType::bf16: return std::ldexp(1.0, -7);
    case DType::f32: return std::ldexp(1.0, -23);
    default: return std::ldexp(1.0, -52);
  }
}

}  // namespace

std::string Ord::str() const {
  switch (kind) {
    case Kind::none: return "None";
    case Kind::number: return num_str(value);
    case Kind::name: return "\"" + name + "\"";
  }
  return "";
}

// ---- LU solves ----------------------------------------------------------------------------------

namespace detail {

Array promote_inexact(const Array& x, SL loc) {
  return is_floating(x.dtype()) ? x : lax::convert_element_type(x, DType::f32, false, loc);
}

void check_lapack_dtype(const char* fn, const Array& x, SL loc) {
  if (x.dtype() != DType::f32 && x.dtype() != DType::f64)
    throw TypeError(std::string(fn) +
                        ": accepts f32 and f64 operands (integers are promoted to f32), got dtype " +
                        dtype_name(x.dtype()),
                    loc);
}

// JAX's _generic_lu_pivots_to_permutation: from the identity, swap entry i with entry pivots[i] for
// i = 0 .. k-1 (a fori_loop; each swap reads and writes through one-hot masks, batched).
Array lu_pivots_to_permutation(const Array& pivots, int64_t permutation_size, SL loc) {
  if (pivots.ndim() < 1)
    throw ShapeError("lu_pivots_to_permutation: pivots must have rank >= 1, got " + shape_str(pivots.shape()),
                     loc);
  const int64_t r = pivots.ndim(), k = dim(pivots, -1), m = permutation_size;
  if (m < k)
    throw ValueError("lu_pivots_to_permutation: the permutation size " + std::to_string(m) +
                         " is smaller than the number of pivots " + std::to_string(k),
                     loc);
  const Array piv = pivots.dtype() == DType::i32 ? pivots
                                                 : lax::convert_element_type(pivots, DType::i32, false, loc);
  Shape ps = batch_of(piv, 1);
  ps.push_back(m);
  const Array iota = lax::iota(DType::i32, ps, r - 1, loc);
  if (m == 0 || k == 0) return iota;
  const Array zero = fill(ps, 0.0, DType::i32, loc);
  auto body = [&](const Array& i, const Array& perm) {
    std::vector<Array> starts(size_t(r), lax::scalar(0.0, DType::i32));
    starts.back() = i;
    std::vector<int64_t> sizes(piv.shape().begin(), piv.shape().end());
    sizes.back() = 1;
    const Array j = lax::dynamic_slice(piv, starts, sizes, loc);  // [..., 1]
    const Array at_i = lax::eq(iota, lax::broadcast_in_dim(i, ps, {}, loc), loc);
    const Array at_j = lax::eq(iota, lax::broadcast_in_dim(j, ps, iota_dims(r), loc), loc);
    auto read = [&](const Array& at) {  // perm[..., at] broadcast over the last dim
      const Array v = lax::reduce_sum(lax::select_n(at, {zero, perm}, loc), {r - 1}, loc);
      return over_batch(v, ps, loc);
    };
    const Array x = read(at_i), y = read(at_j);
    // permutation.at[i].set(y), then .at[j].set(x): the second write wins where i == j.
    return lax::select_n(at_j, {lax::select_n(at_i, {perm, y}, loc), x}, loc);
  };
  return fori_loop(0, k, body, iota, {}, loc);
}

Array lu_solve(const Array& lu, const Array& permutation, const Array& b0, int trans, const char* fn,
               SL loc) {
  if (trans < 0 || trans > 2)
    throw ValueError(std::string(fn) + ": 'trans' must be 0, 1 or 2, got " + std::to_string(trans), loc);
  const std::string shapes = "; got lu=" + shape_str(lu.shape()) + " and b=" + shape_str(b0.shape());
  if (lu.ndim() < 2 || dim(lu, -1) != dim(lu, -2))
    throw ShapeError(std::string(fn) + ": the LU factors must be square, [..., m, m]" + shapes, loc);
  const int64_t m = dim(lu, -1);
  const bool vec = b0.ndim() >= 1 && lu.ndim() == b0.ndim() + 1;
  const bool fits = vec ? dim(b0, -1) == m : b0.ndim() >= 2 && dim(b0, -2) == m;
  if (!fits)
    throw ShapeError(std::string(fn) +
                         ": operands must have shapes lu=[..., m, m] and b=[..., m] (of rank one less) or "
                         "b=[..., m, k] (a x = b, a on the left side)" +
                         shapes,
                     loc);
  Array b = vec ? lax::expand_dims(b0, {b0.ndim()}, loc) : b0;
  Shape batch;
  try {
    batch = broadcast_shapes(broadcast_shapes(batch_of(lu, 2), batch_of(permutation, 1), loc), batch_of(b, 2),
                             loc);
  } catch (const ShapeError&) {
    throw ShapeError(std::string(fn) + ": the batch dims of the operands do not broadcast" + shapes, loc);
  }
  const Array f = broadcast_to(lu, concat(batch, {m, m}), loc);
  const Array perm = broadcast_to(permutation, concat(batch, {m}), loc);
  b = broadcast_to(b, concat(batch, {m, dim(b, -1)}), loc);
  Array x;
  if (trans == 0) {  // P^T L U x = b: x = U^-1 L^-1 (P b)
    x = take_rows(b, perm, loc);
    x = la::triangular_solve(f, x, true, true, false, false, true, loc);
    x = la::triangular_solve(f, x, true, false, false, false, false, loc);
  } else {  // U^T L^T P x = b: P x = L^-T U^-T b, then the inverse permutation
    x = la::triangular_solve(f, b, true, false, true, false, false, loc);
    x = la::triangular_solve(f, x, true, true, true, false, true, loc);
    const Array inverse = lax::sort_key_val(perm, lax::iota(DType::i32, perm.shape(), perm.ndim() - 1, loc),
                                            -1, true, loc)
                              .second;
    x = take_rows(x, inverse, loc);
  }
  return vec ? lax::squeeze(x, {x.ndim() - 1}, loc) : x;
}

}  // namespace detail

Array solve(const Array& a0, const Array& b0, SL loc) {
  check_defined("solve", {&a0, &b0}, loc);
  const auto [a, b] = promote_pair(a0, b0, loc);
  detail::check_lapack_dtype("solve", a, loc);
  const std::string shapes = "; got a=" + shape_str(a.shape()) + " and b=" + shape_str(b.shape());
  if (b.ndim() > 1 && a.ndim() == b.ndim() + 1 && dim(a, -1) == dim(b, -1) && dim(a, -1) != dim(b, -2))
    throw ShapeError(
        "solve: invalid shapes for a x = b (a on the left side): b [..., m] of rank > 1 is a batch of "
        "[m, k] matrices since JAX v0.5.0, not of vectors (use solve(a, b[..., None])[..., 0])" +
            shapes,
        loc);
  const bool square = a.ndim() >= 2 && dim(a, -1) == dim(a, -2);
  const bool vec = b.ndim() == 1;
  if (!square || b.ndim() < 1 || (vec ? dim(b, -1) : dim(b, -2)) != dim(a, -1))
    throw ShapeError(
        "solve: operands must have shapes a=[..., m, m] and b=[m] or b=[..., m, k] (a x = b, a on the "
        "left side)" +
            shapes,
        loc);
  // jnp.vectorize's signature (m,m),(m)->(m) or (m,m),(m,n)->(m,n): b broadcast to the batch.
  Shape batch = batch_of(a, 2);
  if (!vec) {
    try {
      batch = broadcast_shapes(batch, batch_of(b, 2), loc);
    } catch (const ShapeError&) {
      throw ShapeError("solve: the batch dims of a and b (a x = b, a on the left side) do not broadcast" +
                           shapes,
                       loc);
    }
  }
  const Shape core(b.shape().end() - (vec ? 1 : 2), b.shape().end());
  const auto [lu, pivots, perm] = la::lu(a, loc);
  return detail::lu_solve(lu, perm, broadcast_to(b, concat(batch, core), loc), 0, "solve", loc);
}

Array inv(const Array& a0, SL loc) {
  check_square("inv", a0, loc);
  const Array a = detail::promote_inexact(a0, loc);
  detail::check_lapack_dtype("inv", a, loc);
  const Array id = broadcast_to(eye(dim(a, -1), a.dtype(), loc), a.shape(), loc);
  return solve(a, id, loc);
}

// ---- slogdet and det ----------------------------------------------------------------------------

namespace {

// JAX's _slogdet_lu: the sign from the parity of the row swaps and of U's negative diagonal
// entries; 0 and -inf where U's diagonal holds a zero.
std::pair<Array, Array> slogdet_value(const Array& a, SL loc) {
  const auto [lu, pivots, perm] = la::lu(a, loc);
  const DType d = a.dtype();
  const Array diag = diagonal(lu, loc);
  const int64_t last = diag.ndim() - 1;
  const Array is_zero = lax::reduce_or(lax::eq(diag, lit(0.0, d), loc), {last}, loc);
  const Array iota = lax::iota(DType::i32, pivots.shape(), last, loc);
  auto count = [&](const Array& pred) {
    return lax::reduce_sum(lax::convert_element_type(pred, DType::i32, false, loc), {last}, loc);
  };
  const Array parity = lax::add(count(lax::ne(pivots, iota, loc)), count(lax::lt(diag, lit(0.0, d), loc)),
                                loc);
  const Array odd = lax::eq(lax::rem(parity, lit(2.0, DType::i32), loc), lit(1.0, DType::i32), loc);
  const Shape bs = odd.shape();
  const Array sign = lax::select_n(odd, {fill(bs, 1.0, d, loc), fill(bs, -1.0, d, loc)}, loc);
  const Array logabs = lax::reduce_sum(lax::log(lax::abs(diag, loc), loc), {last}, loc);
  return {lax::select_n(is_zero, {sign, fill(bs, 0.0, d, loc)}, loc),
          lax::select_n(is_zero, {logabs, fill(bs, -kInf, d, loc)}, loc)};
}

std::pair<Array, Array> slogdet_custom(const Array& a, SL loc);

// JAX's _slogdet_jvp: log|det|_dot = trace(solve(x, g)), the sign's tangent zero.
std::pair<std::pair<Array, Array>, std::pair<Array, Array>> slogdet_jvp(const Array& x, const Array& g,
                                                                        SL loc) {
  std::pair<Array, Array> out = slogdet_custom(x, loc);
  const Array ans_dot = trace(solve(x, g, loc), loc);
  return {out, {fill(out.first.shape(), 0.0, out.first.dtype(), loc), ans_dot}};
}

std::pair<Array, Array> slogdet_custom(const Array& a, SL loc) {
  const auto f = custom_jvp([loc](const Array& x) { return slogdet_value(x, loc); },
                            [loc](const Array& x, const Array& g) { return slogdet_jvp(x, g, loc); },
                            "_slogdet_lu", loc);
  return f(a);
}

// JAX's _cofactor_solve: (det(a), adj(a) b) for square a and b of a's shape, finite where a has
// rank n - 1 (U's last diagonal entry replaced by 1 / (the determinant of the rest), the rows of
// L^-1 P b but the last scaled by det(a)) and zero where a has a lower rank (a solve with the
// replaced U that is not finite).
std::pair<Array, Array> cofactor_solve(const Array& a, const Array& b, SL loc) {
  const int64_t n = dim(a, -1), r = a.ndim();
  if (n == 1) return {entry(a, 0, 0, loc), b};
  const auto [lu0, pivots, perm] = la::lu(a, loc);
  const DType d = a.dtype();
  const Array diag = diagonal(lu0, loc);  // [..., n]
  const Array iota = lax::iota(DType::i32, pivots.shape(), r - 2, loc);
  const Array parity = lax::reduce_sum(lax::convert_element_type(lax::ne(pivots, iota, loc), DType::i32,
                                                                 false, loc),
                                       {r - 2}, loc);
  const Array odd = lax::eq(lax::rem(parity, lit(2.0, DType::i32), loc), lit(1.0, DType::i32), loc);
  const Array sign = lax::select_n(odd, {fill(odd.shape(), 1.0, d, loc), fill(odd.shape(), -1.0, d, loc)},
                                   loc);
  // partial_det[..., n-1] is det(a); partial_det[..., n-2] is det(a) / U_nn.
  const Array partial_det = lax::mul(lax::cumprod(diag, r - 2, false, loc),
                                     over_batch(sign, diag.shape(), loc), loc);
  const Array det_a = lax::reshape(last_slice(partial_det, n - 1, n, loc), batch_of(a, 2), loc);
  const Array rest = lax::reshape(last_slice(partial_det, n - 2, n - 1, loc), batch_of(a, 2), loc);
  const Shape ms = lu0.shape();
  const Array corner =
      lax::and_(lax::eq(lax::iota(DType::i32, ms, r - 2, loc), lit(double(n - 1), DType::i32), loc),
                lax::eq(lax::iota(DType::i32, ms, r - 1, loc), lit(double(n - 1), DType::i32), loc), loc);
  const Array inv_rest = lax::div(lit(1.0, d), rest, loc);
  const Array lu = lax::select_n(corner, {lu0, over_batch(inv_rest, ms, loc)}, loc);
  // Matrices of rank < n - 1: the solve with the replaced U is not finite; their result is zero.
  const Array ones = fill(diag.shape(), 1.0, d, loc);
  const Array probe = la::triangular_solve(lu, ones, true, false, false, false, false, loc);
  const Array low_rank = lax::reduce_or(lax::not_(lax::is_finite(probe, loc), loc), {r - 2}, loc);
  const Array mask = over_batch(low_rank, b.shape(), loc);
  const Array zero = fill(b.shape(), 0.0, d, loc);
  Array x = lax::select_n(mask, {b, zero}, loc);
  x = take_rows(x, perm, loc);
  x = la::triangular_solve(lu, x, true, true, false, false, true, loc);
  const Array top = lax::mul(row_slice(x, 0, n - 1, loc),
                             over_batch(det_a, concat(batch_of(a, 2), {n - 1, dim(b, -1)}), loc), loc);
  x = lax::concatenate({top, row_slice(x, n - 1, n, loc)}, r - 2, loc);
  x = la::triangular_solve(lu, x, true, false, false, false, false, loc);
  return {det_a, lax::select_n(mask, {x, zero}, loc)};
}

// JAX's _det: sign * exp(log|det|) from slogdet, with _det_jvp: (det, trace(adj(a) a_dot)).
Array det_custom(const Array& a, SL loc) {
  const auto f = custom_jvp(
      [loc](const Array& x) {
        const auto [sign, logdet] = slogdet_custom(x, loc);
        return lax::mul(sign, lax::exp(logdet, loc), loc);
      },
      [loc](const Array& x, const Array& g) {
        const auto [y, z] = cofactor_solve(x, g, loc);
        return std::pair{y, trace(z, loc)};
      },
      "_det", loc);
  return f(a);
}

}  // namespace

std::pair<Array, Array> slogdet(const Array& a0, SL loc) {
  check_square("slogdet", a0, loc);
  const Array a = detail::promote_inexact(a0, loc);
  detail::check_lapack_dtype("slogdet", a, loc);
  return slogdet_custom(a, loc);
}

Array det(const Array& a0, SL loc) {
  check_square("det", a0, loc);
  const Array a = detail::promote_inexact(a0, loc);
  auto e = [&](int64_t i, int64_t j) { return entry(a, i, j, loc); };
  auto m = [&](const Array& x, const Array& y) { return lax::mul(x, y, loc); };
  if (dim(a, -1) == 2) return lax::sub(m(e(0, 0), e(1, 1)), m(e(0, 1), e(1, 0)), loc);
  if (dim(a, -1) == 3) {  // the rule of Sarrus, in JAX's order of terms (_det_3x3)
    Array s = m(m(e(0, 0), e(1, 1)), e(2, 2));
    s = lax::add(s, m(m(e(0, 1), e(1, 2)), e(2, 0)), loc);
    s = lax::add(s, m(m(e(0, 2), e(1, 0)), e(2, 1)), loc);
    s = lax::sub(s, m(m(e(0, 2), e(1, 1)), e(2, 0)), loc);
    s = lax::sub(s, m(m(e(0, 0), e(1, 2)), e(2, 1)), loc);
    return lax::sub(s, m(m(e(0, 1), e(1, 0)), e(2, 2)), loc);
  }
  detail::check_lapack_dtype("det", a, loc);
  return det_custom(a, loc);
}

// ---- pinv ---------------------------------------------------------------------------------------

namespace {

// JAX's _pinv (numpy's algorithm): V diag(1/s) U^T over the singular values above rtol * s_max.
Array pinv_value(const Array& a, const Array& rtol, SL loc) {
  const std::vector<Array> usv = la::svd(a, false, true, loc);
  const Array &u = usv[0], &s = usv[1], &vh = usv[2];
  Shape rs = rtol.shape();
  rs.push_back(1);
  const Array cutoff = multiply(lax::reshape(rtol, rs, loc), last_slice(s, 0, 1, loc));
  const Array kept = where(s > cutoff, s, kInf);
  return lax::convert_element_type(matmul(mT(vh, loc),
                                          divide(mT(u, loc), lax::expand_dims(kept, {kept.ndim()}, loc)),
                                          loc),
                                   a.dtype(), false, loc);
}

Array pinv_custom(const Array& a, const Array& rtol, SL loc);

// JAX's _pinv_jvp (Golub and Pereyra 1973): p_dot = -p a_dot p + (p p^T a_dot^T)(1 - a p)
// + (1 - p a)(a_dot^T p^T p), each product associated as JAX's for m >= n and m < n.
std::pair<Array, Array> pinv_jvp(const Array& a, const Array& rtol, const Array& a_dot, SL loc) {
  const Array p = pinv_custom(a, rtol, loc);
  auto mm = [&](const Array& x, const Array& y) { return matmul(x, y, loc); };
  const Array pt = mT(p, loc), at = mT(a_dot, loc);
  Array p_dot;
  if (dim(a, -2) >= dim(a, -1)) {
    const Array s = mm(mm(p, pt), at), t = mm(mm(at, pt), p);
    p_dot = lax::neg(mm(mm(p, a_dot), p), loc);
    p_dot = lax::add(p_dot, s, loc);
    p_dot = lax::sub(p_dot, mm(mm(s, a), p), loc);
    p_dot = lax::add(p_dot, t, loc);
    p_dot = lax::sub(p_dot, mm(mm(p, a), t), loc);
  } else {
    const Array s = mm(p, mm(pt, at)), t = mm(at, mm(pt, p));
    p_dot = lax::neg(mm(p, mm(a_dot, p)), loc);
    p_dot = lax::add(p_dot, s, loc);
    p_dot = lax::sub(p_dot, mm(s, mm(a, p)), loc);
    p_dot = lax::add(p_dot, t, loc);
    p_dot = lax::sub(p_dot, mm(p, mm(a, t)), loc);
  }
  return {p, p_dot};
}

Array pinv_custom(const Array& a, const Array& rtol, SL loc) {
  const auto f = custom_jvp([loc](const Array& x, const Array& r) { return pinv_value(x, r, loc); },
                            [loc](const Array& x, const Array& r, const Array& x_dot, const Array&) {
                              return pinv_jvp(x, r, x_dot, loc);
                            },
                            "_pinv", loc);
  return f(a, rtol);
}

}  // namespace

Array pinv(const Array& a0, const std::optional<Operand>& rtol, SL loc) {
  check_defined("pinv", {&a0}, loc);
  if (a0.ndim() < 2)
    throw ShapeError("pinv: expected a matrix or a batch of them, shape [..., m, n]; got " +
                         shape_str(a0.shape()),
                     loc);
  const Array a = detail::promote_inexact(a0, loc);
  detail::check_lapack_dtype("pinv", a, loc);
  const int64_t m = dim(a, -2), n = dim(a, -1);
  if (m == 0 || n == 0) return zeros(concat(batch_of(a, 2), {n, m}), a.dtype(), loc);
  Array r;
  if (!rtol) r = lax::full({}, 10.0 * double(std::max(m, n)) * eps_of(a.dtype()), a.dtype());
  else if (rtol->literal) r = lax::full({}, *rtol->literal, a.dtype());
  else {
    check_defined("pinv", {&rtol->value}, loc);
    r = rtol->value.dtype() == a.dtype() ? rtol->value
                                         : lax::convert_element_type(rtol->value, a.dtype(), false, loc);
  }
  return pinv_custom(a, r, loc);
}

// ---- norm ---------------------------------------------------------------------------------------

namespace {

Array sum_of(const Array& x, const std::vector<int64_t>& axes, bool keepdims, SL loc) {
  return reduce_keep(
      x, axes, keepdims,
      [](const Array& v, const std::vector<int64_t>& a, SL l) { return lax::reduce_sum(v, a, l); }, loc);
}
Array max_of(const Array& x, const std::vector<int64_t>& axes, bool keepdims, SL loc) {
  return reduce_keep(
      x, axes, keepdims,
      [](const Array& v, const std::vector<int64_t>& a, SL l) { return lax::reduce_max(v, a, l); }, loc);
}
Array min_of(const Array& x, const std::vector<int64_t>& axes, bool keepdims, SL loc) {
  return reduce_keep(
      x, axes, keepdims,
      [](const Array& v, const std::vector<int64_t>& a, SL l) { return lax::reduce_min(v, a, l); }, loc);
}
// jnp.amax(..., initial=0): the maximum, and 0 for an empty reduction.
Array max_or_zero(const Array& x, const std::vector<int64_t>& axes, bool keepdims, SL loc) {
  const Array y = max_of(x, axes, keepdims, loc);
  return lax::max(y, lit(0.0, y.dtype()), loc);
}

// JAX's vector_norm over one axis.
Array vector_norm(const Array& x, const Ord& ord, int64_t axis, bool keepdims, SL loc) {
  const std::vector<int64_t> ax{axis};
  if (ord.kind == Ord::Kind::name)
    throw ValueError("norm: invalid order " + ord.str() + " for a vector norm" +
                         (ord.name == "inf" || ord.name == "-inf"
                              ? " (pass the number " + ord.name + ", not a string)"
                              : ""),
                     loc);
  const double p = ord.kind == Ord::Kind::none ? 2.0 : ord.value;
  if (p == 2.0) return lax::sqrt(sum_of(lax::mul(x, x, loc), ax, keepdims, loc), loc);
  const Array ab = lax::abs(x, loc);
  if (p == kInf) return max_or_zero(ab, ax, keepdims, loc);
  if (p == -kInf) return min_of(ab, ax, keepdims, loc);
  if (p == 0.0)
    return sum_of(lax::convert_element_type(lax::ne(x, lit(0.0, x.dtype()), loc), x.dtype(), false, loc), ax,
                  keepdims, loc);
  if (p == 1.0) return sum_of(ab, ax, keepdims, loc);
  const Array s = sum_of(lax::pow(ab, lit(p, ab.dtype()), loc), ax, keepdims, loc);
  return lax::pow(s, lit(1.0 / p, s.dtype()), loc);
}

// JAX's norm over two axes (row, col): Frobenius, nuclear, the induced 1, inf and 2 norms and
// their minima.
Array matrix_norm(const Array& x, const Ord& ord, int64_t row, int64_t col, bool keepdims, SL loc) {
  const bool named = ord.kind == Ord::Kind::name, number = ord.kind == Ord::Kind::number;
  if (ord.kind == Ord::Kind::none || (named && (ord.name == "fro" || ord.name == "f")))
    return lax::sqrt(sum_of(lax::mul(x, x, loc), {row, col}, keepdims, loc), loc);
  const Array ab = lax::abs(x, loc);
  if (number && std::abs(ord.value) == 1.0) {  // column sums, then over the columns
    const int64_t c = !keepdims && col > row ? col - 1 : col;
    const Array s = sum_of(ab, {row}, keepdims, loc);
    return ord.value > 0 ? max_or_zero(s, {c}, keepdims, loc) : min_of(s, {c}, keepdims, loc);
  }
  if (number && std::isinf(ord.value)) {  // row sums, then over the rows
    const int64_t rr = !keepdims && row > col ? row - 1 : row;
    const Array s = sum_of(ab, {col}, keepdims, loc);
    return ord.value > 0 ? max_or_zero(s, {rr}, keepdims, loc) : min_of(s, {rr}, keepdims, loc);
  }
  const bool nuc = named && ord.name == "nuc";
  if (!nuc && !(number && std::abs(ord.value) == 2.0))
    throw ValueError("norm: invalid order " + ord.str() +
                         " for a matrix norm (None, \"fro\", \"nuc\", 1, -1, 2, -2, "
                         "inf or -inf)",
                     loc);
  detail::check_lapack_dtype("norm", x, loc);
  std::vector<int64_t> perm;  // moveaxis(x, (row, col), (-2, -1))
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (d != row && d != col) perm.push_back(d);
  perm.push_back(row);
  perm.push_back(col);
  const Array s = la::svd(lax::transpose(x, perm, loc), true, false, loc)[0];
  const std::vector<int64_t> last{s.ndim() - 1};
  Array y = nuc             ? lax::reduce_sum(s, last, loc)
            : ord.value > 0 ? max_or_zero(s, last, false, loc)
                            : lax::reduce_min(s, last, loc);
  if (!keepdims) return y;
  Shape ks = x.shape();
  ks[size_t(row)] = ks[size_t(col)] = 1;
  return lax::reshape(y, ks, loc);
}

}  // namespace

Array norm(const Array& x0, const Ord& ord, const std::optional<std::vector<int64_t>>& axis, bool keepdims,
           SL loc) {
  check_defined("norm", {&x0}, loc);
  const Array x = detail::promote_inexact(x0, loc);
  const int64_t nd = x.ndim();
  std::vector<int64_t> ax;
  if (!axis) {
    if (ord.kind == Ord::Kind::none)  // numpy's any-rank 2-norm of the flattened x
      return lax::sqrt(sum_of(lax::mul(x, x, loc), iota_dims(nd), keepdims, loc), loc);
    ax = iota_dims(nd);
  } else {
    for (int64_t a : *axis) {
      if (a < -nd || a >= nd)
        throw ValueError("norm: axis " + std::to_string(a) + " is out of bounds for an array of rank " +
                             std::to_string(nd) + " (shape " + shape_str(x.shape()) + ")",
                         loc);
      ax.push_back(a < 0 ? a + nd : a);
    }
  }
  auto axes_str = [&] {
    std::string s = "(";
    for (size_t i = 0; i < ax.size(); ++i) s += (i ? ", " : "") + std::to_string(ax[i]);
    return s + (ax.size() == 1 ? ",)" : ")");
  };
  if (ax.size() == 1) return vector_norm(x, ord, ax[0], keepdims, loc);
  if (ax.size() == 2 && ax[0] != ax[1]) return matrix_norm(x, ord, ax[0], ax[1], keepdims, loc);
  if (ax.size() == 2) throw ValueError("norm: duplicate axes " + axes_str() + " for a matrix norm", loc);
  throw ValueError("norm: improper number of axes, axis=" + axes_str() + " for shape " +
                       shape_str(x.shape()) + ": pass one axis for a vector norm or two for a matrix norm",
                   loc);
}

// ---- matrix_power -------------------------------------------------------------------------------

Array matrix_power(const Array& a0, int64_t n, SL loc) {
  check_square("matrix_power", a0, loc);
  // As jnp.linalg.matrix_power: no promotion (an integer matrix's powers stay integer); a negative
  // power goes through inv, which promotes.
  Array a = a0;
  if (n == 0) return broadcast_to(eye(dim(a, -1), a.dtype(), loc), a.shape(), loc);
  // |n| without overflow at INT64_MIN.
  uint64_t k = n < 0 ? uint64_t(-(n + 1)) + 1 : uint64_t(n);
  if (n < 0) a = inv(a, loc);
  auto mm = [&](const Array& x, const Array& y) { return matmul(x, y, loc); };
  if (k == 1) return a;
  if (k == 2) return mm(a, a);
  if (k == 3) return mm(mm(a, a), a);
  // JAX's binary powering: z runs through a^(2^i); result gathers the set bits, lowest first.
  std::optional<Array> z, result;
  while (k > 0) {
    z = z ? mm(*z, *z) : a;
    const bool bit = k % 2 != 0;
    k /= 2;
    if (bit) result = result ? mm(*result, *z) : *z;
  }
  return *result;
}

namespace detail {

Array matrix_power_of_double(const Array& a, double n, SL loc) {
  // 2^63 is the first double past int64's range.
  if (!std::isfinite(n) || n != std::floor(n) || n < -9.2233720368547758e18 || n >= 9.2233720368547758e18)
    throw ValueError("matrix_power: the exponent must be an integer, got " + num_str(n), loc);
  return matrix_power(a, int64_t(n), loc);
}

}  // namespace detail

namespace detail {

Array take_rows(const Array& x, const Array& perm, SL loc) {
  const int64_t r = x.ndim();
  if (x.size() == 0) return x;
  lax::GatherDimensionNumbers dn;
  dn.offset_dims = {r - 1};
  dn.collapsed_slice_dims = {r - 2};
  dn.start_index_map = {r - 2};
  for (int64_t d = 0; d + 2 < r; ++d) {
    dn.operand_batching_dims.push_back(d);
    dn.start_indices_batching_dims.push_back(d);
  }
  Shape is = perm.shape();
  is.push_back(1);
  std::vector<int64_t> sizes(size_t(r), 1);
  sizes.back() = x.shape().back();
  lax::GatherOptions o;
  o.mode = lax::GatherScatterMode::PROMISE_IN_BOUNDS;
  return lax::gather(x, lax::reshape(perm, is, loc), dn, sizes, o, loc);
}

}  // namespace detail

}  // namespace minijax::linalg
