// minijax numpy-level reductions, nn functions and matrix products (jax.numpy / jax.nn names).
// Owns sum/mean/var/max/min/prod, argmax/argmin, cumsum, cumprod, logsumexp, softmax, log_softmax,
// one_hot, matmul and dot over the lax primitives.
//
// Conventions (as jax.numpy with x64 off): sum/prod/cumsum/cumprod of bool promote to i32; mean, var,
// logsumexp, softmax and log_softmax of integers and bools promote to f32; axes may be negative
// (out of range -> ShapeError naming the function, the axis, the shape and the call site).
#include <algorithm>
#include <numeric>
#include <string>

#include "core/lax.h"
#include "core/numpy.h"

namespace minijax {

namespace {

std::vector<int64_t> canon_axes(const Array& x, const std::vector<int64_t>& axes, const char* fn,
                                SL loc) {
  const int64_t n = x.ndim();
  std::vector<int64_t> r;
  for (int64_t a : axes) {
    if (a < -n || a >= n)
      throw ShapeError(std::string(fn) + ": axis " + std::to_string(a) +
                           " is out of bounds for an array of shape " + shape_str(x.shape()) +
                           " (rank " + std::to_string(n) + ")",
                       loc);
    r.push_back(a < 0 ? a + n : a);
  }
  std::sort(r.begin(), r.end());
  if (std::adjacent_find(r.begin(), r.end()) != r.end())
    throw ValueError(std::string(fn) + ": duplicate value in axes for an array of shape " +
                         shape_str(x.shape()),
                     loc);
  return r;
}
int64_t canon_axis(const Array& x, int64_t axis, const char* fn, SL loc) {
  return canon_axes(x, {axis}, fn, loc)[0];
}
std::vector<int64_t> all_axes(const Array& x) {
  std::vector<int64_t> r(static_cast<size_t>(x.ndim()));
  std::iota(r.begin(), r.end(), int64_t(0));
  return r;
}
std::vector<int64_t> kept_dims(int64_t ndim, const std::vector<int64_t>& axes) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < ndim; ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) r.push_back(i);
  return r;
}
int64_t reduced_count(const Array& x, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= x.shape()[size_t(a)];
  return n;
}
// r (the reduction of x over sorted axes) with the reduced dims kept as size 1 if keepdims.
Array finish(const Array& r, const Array& x, const std::vector<int64_t>& axes, bool keepdims, SL loc) {
  if (!keepdims) return r;
  Shape s = x.shape();
  for (int64_t a : axes) s[size_t(a)] = 1;
  return lax::reshape(r, s, loc);
}
// r (reduced over axes) broadcast back to x's shape.
Array back(const Array& r, const Array& x, const std::vector<int64_t>& axes, SL loc) {
  return lax::broadcast_in_dim(r, x.shape(), kept_dims(x.ndim(), axes), loc);
}
// A scalar v broadcast to like's aval (a rank-0 literal under tracing).
Array splat(double v, const Array& like, SL loc) {
  Array s = lax::scalar(v, like.dtype(), like.weak_type());
  return like.ndim() == 0 ? s : lax::broadcast_in_dim(s, like.shape(), {}, loc);
}
// The max along ax of stop_gradient(x): the shift of the stable exp-sum formulas. Taking the max
// of the stopped x (not stopping the max afterwards) gives the same values and derivatives
// without running reduce_max's JVP rule only to discard it.
Array stopped_max(const Array& xf, const std::vector<int64_t>& ax, SL loc) {
  return lax::reduce_max(lax::stop_gradient(xf, loc), ax, loc);
}
Array sum_dtype(const Array& x, SL loc) {
  return x.dtype() == DType::bool_ ? lax::convert_element_type(x, DType::i32, false, loc) : x;
}
Array float_dtype(const Array& x, SL loc) {
  return is_floating(x.dtype()) ? x : lax::convert_element_type(x, DType::f32, false, loc);
}
void check_nonempty(const Array& x, const std::vector<int64_t>& axes, const char* fn, SL loc) {
  for (int64_t a : axes)
    if (x.shape()[size_t(a)] == 0)
      throw ValueError(std::string(fn) + ": zero-size array (shape " + shape_str(x.shape()) +
                           ", axis " + std::to_string(a) + ") to a reduction that has no identity",
                       loc);
}

Array sum_impl(const Array& x, const std::vector<int64_t>& ax, bool keepdims, SL loc) {
  return finish(lax::reduce_sum(sum_dtype(x, loc), ax, loc), x, ax, keepdims, loc);
}
// mean over sorted canonical axes, without keepdims.
Array mean_impl(const Array& x, const std::vector<int64_t>& ax, SL loc) {
  Array s = lax::reduce_sum(float_dtype(x, loc), ax, loc);
  return lax::div(s, splat(double(reduced_count(x, ax)), s, loc), loc);
}
Array var_impl(const Array& x, const std::vector<int64_t>& ax, bool keepdims, SL loc) {
  Array xf = float_dtype(x, loc);
  Array d = lax::sub(xf, back(mean_impl(xf, ax, loc), xf, ax, loc), loc);
  return finish(mean_impl(lax::mul(d, d, loc), ax, loc), x, ax, keepdims, loc);
}
Array max_impl(const Array& x, const std::vector<int64_t>& ax, bool keepdims, const char* fn,
               bool is_max, SL loc) {
  check_nonempty(x, ax, fn, loc);
  Array r = is_max ? lax::reduce_max(x, ax, loc) : lax::reduce_min(x, ax, loc);
  return finish(r, x, ax, keepdims, loc);
}

DType promoted(const Array& a, const Array& b, SL loc, bool* weak) {
  WeakDType w = promote_types({a.dtype(), a.weak_type()}, {b.dtype(), b.weak_type()}, loc);
  *weak = w.weak;
  return w.dtype;
}
Array as(const Array& x, DType d, bool weak, SL loc) {
  return x.dtype() == d ? x : lax::convert_element_type(x, d, weak, loc);
}

}  // namespace

// ---- reductions ---------------------------------------------------------------------------------

Array sum(const Array& x, SL loc) { return sum_impl(x, all_axes(x), false, loc); }
Array sum(const Array& x, int64_t axis, bool keepdims, SL loc) {
  return sum_impl(x, {canon_axis(x, axis, "sum", loc)}, keepdims, loc);
}
Array sum(const Array& x, const std::vector<int64_t>& axes, bool keepdims, SL loc) {
  return sum_impl(x, canon_axes(x, axes, "sum", loc), keepdims, loc);
}

Array mean(const Array& x, SL loc) { return mean_impl(x, all_axes(x), loc); }
Array mean(const Array& x, int64_t axis, bool keepdims, SL loc) {
  auto ax = std::vector<int64_t>{canon_axis(x, axis, "mean", loc)};
  return finish(mean_impl(x, ax, loc), x, ax, keepdims, loc);
}

Array var(const Array& x, SL loc) { return var_impl(x, all_axes(x), false, loc); }
Array var(const Array& x, int64_t axis, bool keepdims, SL loc) {
  return var_impl(x, {canon_axis(x, axis, "var", loc)}, keepdims, loc);
}

Array max(const Array& x, SL loc) { return max_impl(x, all_axes(x), false, __func__, true, loc); }
Array max(const Array& x, int64_t axis, bool keepdims, SL loc) {
  return max_impl(x, {canon_axis(x, axis, __func__, loc)}, keepdims, __func__, true, loc);
}
Array min(const Array& x, SL loc) { return max_impl(x, all_axes(x), false, __func__, false, loc); }
Array min(const Array& x, int64_t axis, bool keepdims, SL loc) {
  return max_impl(x, {canon_axis(x, axis, __func__, loc)}, keepdims, __func__, false, loc);
}

Array prod(const Array& x, SL loc) { return lax::reduce_prod(sum_dtype(x, loc), all_axes(x), loc); }
Array prod(const Array& x, int64_t axis, bool keepdims, SL loc) {
  std::vector<int64_t> ax{canon_axis(x, axis, "prod", loc)};
  return finish(lax::reduce_prod(sum_dtype(x, loc), ax, loc), x, ax, keepdims, loc);
}

Array argmax(const Array& x, int64_t axis, SL loc) {
  return lax::argmax(x, canon_axis(x, axis, __func__, loc), DType::i32, loc);
}
Array argmin(const Array& x, int64_t axis, SL loc) {
  return lax::argmin(x, canon_axis(x, axis, __func__, loc), DType::i32, loc);
}
Array cumsum(const Array& x, int64_t axis, SL loc) {
  return lax::cumsum(sum_dtype(x, loc), canon_axis(x, axis, __func__, loc), false, loc);
}
Array cumprod(const Array& x, int64_t axis, SL loc) {
  return lax::cumprod(sum_dtype(x, loc), canon_axis(x, axis, __func__, loc), false, loc);
}

// jax.nn.logsumexp: max + log(sum(exp(x - max))) with the max held constant for autodiff
// (stop_gradient) and replaced by 0 where it is not finite (all -inf rows give -inf, not NaN).
Array logsumexp(const Array& x, int64_t axis, bool keepdims, SL loc) {
  std::vector<int64_t> ax{canon_axis(x, axis, "logsumexp", loc)};
  Array xf = float_dtype(x, loc);
  Array m = stopped_max(xf, ax, loc);
  Array finite = lax::eq(lax::sub(m, m, loc), splat(0.0, m, loc), loc);  // inf - inf, NaN -> NaN
  m = lax::select_n(finite, {splat(0.0, m, loc), m}, loc);
  Array s = lax::reduce_sum(lax::exp(lax::sub(xf, back(m, xf, ax, loc), loc), loc), ax, loc);
  return finish(lax::add(lax::log(s, loc), m, loc), x, ax, keepdims, loc);
}

// jax.nn.softmax: exp(x - stop_gradient(max)) normalized along axis.
Array softmax(const Array& x, int64_t axis, SL loc) {
  std::vector<int64_t> ax{canon_axis(x, axis, "softmax", loc)};
  Array xf = float_dtype(x, loc);
  Array m = stopped_max(xf, ax, loc);
  Array u = lax::exp(lax::sub(xf, back(m, xf, ax, loc), loc), loc);
  return lax::div(u, back(lax::reduce_sum(u, ax, loc), u, ax, loc), loc);
}

// jax.nn.log_softmax: shifted - log(sum(exp(shifted))), shifted = x - stop_gradient(max).
Array log_softmax(const Array& x, int64_t axis, SL loc) {
  std::vector<int64_t> ax{canon_axis(x, axis, "log_softmax", loc)};
  Array xf = float_dtype(x, loc);
  Array m = stopped_max(xf, ax, loc);
  Array shifted = lax::sub(xf, back(m, xf, ax, loc), loc);
  Array lse = lax::log(lax::reduce_sum(lax::exp(shifted, loc), ax, loc), loc);
  return lax::sub(shifted, back(lse, shifted, ax, loc), loc);
}

// jax.nn.one_hot: labels[..., None] == iota over a new last axis, converted to dtype.
Array one_hot(const Array& labels, int64_t num_classes, DType dtype, SL loc) {
  if (!is_integer(labels.dtype()))
    throw TypeError(std::string("one_hot: labels must be integers, got ") + labels.aval().str(), loc);
  if (num_classes < 0)
    throw ValueError("one_hot: num_classes must be non-negative, got " + std::to_string(num_classes), loc);
  Shape out = labels.shape();
  out.push_back(num_classes);
  const int64_t r = labels.ndim();
  Array lb = lax::broadcast_in_dim(labels, out, all_axes(labels), loc);
  Array io = lax::iota(labels.dtype(), out, r, loc);
  return lax::convert_element_type(lax::eq(lb, io, loc), dtype, false, loc);
}

// ---- linear algebra -----------------------------------------------------------------------------

// numpy matmul: 1-D operands are promoted to matrices (and the added dim removed), leading
// (batch) dims broadcast. A 1-D or 2-D right operand contracts directly without broadcasting.
Array matmul(const Array& a0, const Array& b0, SL loc) { return matmul(a0, b0, lax::DotOptions{}, loc); }

Array matmul(const Array& a0, const Array& b0, const lax::DotOptions& options, SL loc) {
  auto shapes = [&] { return shape_str(a0.shape()) + " and " + shape_str(b0.shape()); };
  if (a0.ndim() == 0 || b0.ndim() == 0)
    throw ShapeError("matmul: operands must be at least 1-D, got shapes " + shapes(), loc);
  bool weak = false;
  DType dt = promoted(a0, b0, loc, &weak);
  Array a = as(a0, dt, weak, loc), b = as(b0, dt, weak, loc);
  const int64_t na = a.ndim(), nb = b.ndim();
  const int64_t bk_axis = nb == 1 ? 0 : nb - 2;
  if (a.shape().back() != b.shape()[size_t(bk_axis)])
    throw ShapeError("matmul: shapes " + shapes() + " are not aligned: size " +
                         std::to_string(a.shape().back()) + " of the first operand's last axis != size " +
                         std::to_string(b.shape()[size_t(bk_axis)]) + " of the second operand's axis " +
                         std::to_string(bk_axis),
                     loc);
  if (nb <= 2) return lax::dot_general(a, b, {{na - 1}, {0}, {}, {}}, options, loc);
  if (na == 1) return lax::dot_general(a, b, {{0}, {nb - 2}, {}, {}}, options, loc);
  if (na == 2) {  // [m, k] @ [..., k, n] -> [m, ..., n] -> [..., m, n]
    Array r = lax::dot_general(a, b, {{1}, {nb - 2}, {}, {}}, options, loc);
    std::vector<int64_t> perm;
    for (int64_t i = 1; i <= nb - 2; ++i) perm.push_back(i);
    perm.push_back(0);
    perm.push_back(nb - 1);
    return lax::transpose(r, perm, loc);
  }
  // Both batched: broadcast the leading dims (numpy rules, aligned from the right).
  Shape la(a.shape().begin(), a.shape().end() - 2), lb(b.shape().begin(), b.shape().end() - 2);
  const size_t L = std::max(la.size(), lb.size());
  Shape bs(L);
  for (size_t i = 0; i < L; ++i) {
    int64_t x = i < L - la.size() ? 1 : la[i - (L - la.size())];
    int64_t y = i < L - lb.size() ? 1 : lb[i - (L - lb.size())];
    if (x != y && x != 1 && y != 1)
      throw ShapeError("matmul: batch dimensions of shapes " + shapes() +
                           " cannot be broadcast together",
                       loc);
    bs[i] = x == 1 ? y : x;
  }
  auto bcast = [&](const Array& v) {
    Shape s = bs;
    s.push_back(v.shape()[size_t(v.ndim() - 2)]);
    s.push_back(v.shape().back());
    if (s == v.shape()) return v;
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < v.ndim(); ++i) dims.push_back(int64_t(s.size()) - v.ndim() + i);
    return lax::broadcast_in_dim(v, s, dims, loc);
  };
  a = bcast(a);
  b = bcast(b);
  std::vector<int64_t> batch(L);
  std::iota(batch.begin(), batch.end(), int64_t(0));
  const int64_t Li = int64_t(L);
  return lax::dot_general(a, b, {{Li + 1}, {Li}, batch, batch}, options, loc);
}

// numpy dot: scalars multiply; otherwise a's last axis contracts with b's second-to-last (its
// only axis when 1-D); the result is a's other dims followed by b's.
Array dot(const Array& a0, const Array& b0, SL loc) { return dot(a0, b0, lax::DotOptions{}, loc); }

Array dot(const Array& a0, const Array& b0, const lax::DotOptions& options, SL loc) {
  bool weak = false;
  DType dt = promoted(a0, b0, loc, &weak);
  Array a = as(a0, dt, weak, loc), b = as(b0, dt, weak, loc);
  if (a.ndim() == 0 || b.ndim() == 0) {
    // A scalar product has nothing to accumulate: a multiply (the precision changes nothing), in
    // the accumulation dtype of a preferred_element_type, then converted to it.
    (void)options.precision.resolve("dot", loc);
    const DType out = options.preferred_element_type.value_or(dt);
    try {
      lax::detail::check_preferred_element_type(dt, out);
    } catch (const TypeError& e) {
      throw TypeError("dot(" + a.aval().str() + ", " + b.aval().str() + "): " + e.message(), loc);
    }
    const DType acc = lax::detail::dot_accumulation_dtype(dt, out);
    const Array& big = a.ndim() == 0 ? b : a;
    auto up = [&](const Array& v) {
      Array w = acc == dt ? v : lax::convert_element_type(v, acc, false, loc);
      return w.ndim() == 0 ? lax::broadcast_in_dim(w, big.shape(), {}, loc) : w;
    };
    Array r = lax::mul(up(a), up(b), loc);
    return r.dtype() == out ? r : lax::convert_element_type(r, out, false, loc);
  }
  const int64_t bk_axis = b.ndim() == 1 ? 0 : b.ndim() - 2;
  if (a.shape().back() != b.shape()[size_t(bk_axis)])
    throw ShapeError("dot: shapes " + shape_str(a0.shape()) + " and " + shape_str(b0.shape()) +
                         " are not aligned: size " + std::to_string(a.shape().back()) + " != size " +
                         std::to_string(b.shape()[size_t(bk_axis)]) + " (axis " +
                         std::to_string(bk_axis) + " of the second operand)",
                     loc);
  return lax::dot_general(a, b, {{a.ndim() - 1}, {bk_axis}, {}, {}}, options, loc);
}

}  // namespace minijax
