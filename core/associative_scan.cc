// minijax lax::associative_scan: JAX's parallel prefix scan with a user's associative combine,
// written over strided slices, interior-padding pads, concatenation and the combine itself.
//
// Source: jax/_src/lax/control_flow/loops.py associative_scan and _interleave (JAX v0.7.0), after
// Blelloch, "Prefix sums and their applications" (1990): combine adjacent pairs, scan the halved
// sequence recursively (its results are the odd positions), combine those with the even elements
// for the even positions, and interleave the two by padding each with interior zeros and adding
// (or-ing, for bool). O(n) combines, O(log n) depth; every step is an ordinary primitive, so the
// scan is differentiable, batchable and compilable wherever the combine is.
#include <string>

#include "core/errors.h"
#include "core/lax.h"

namespace minijax::lax {

namespace {

using Vec = std::vector<Array>;

// Elements [start, limit) of x along `axis`, every `stride`-th.
Array slice_axis(const Array& x, int64_t axis, int64_t start, int64_t limit, int64_t stride, SL loc) {
  std::vector<int64_t> lo(size_t(x.ndim()), 0), hi = x.shape(), st(size_t(x.ndim()), 1);
  lo[size_t(axis)] = start;
  hi[size_t(axis)] = limit;
  st[size_t(axis)] = stride;
  return lax::slice(x, lo, hi, st, loc);
}

Vec slice_all(const Vec& xs, int64_t axis, int64_t start, int64_t limit, int64_t stride, SL loc) {
  Vec r;
  for (const Array& x : xs) r.push_back(slice_axis(x, axis, start, limit, stride, loc));
  return r;
}

// JAX's _interleave: a at the even positions, b at the odd ones (|a| == |b| or |b| + 1).
Array interleave(const Array& a, const Array& b, int64_t axis, SL loc) {
  const bool same = a.shape()[size_t(axis)] == b.shape()[size_t(axis)];
  std::vector<PadConfig> pa(size_t(a.ndim()), PadConfig{0, 0, 0}), pb = pa;
  pa[size_t(axis)] = PadConfig{0, same ? 1 : 0, 1};
  pb[size_t(axis)] = PadConfig{1, same ? 0 : 1, 1};
  Array ap = lax::pad(a, lax::scalar(0.0, a.dtype()), pa, loc);
  Array bp = lax::pad(b, lax::scalar(0.0, b.dtype()), pb, loc);
  return a.dtype() == DType::bool_ ? lax::or_(ap, bp, loc) : lax::add(ap, bp, loc);
}

Vec checked_combine(const ScanCombine& fn, const Vec& a, const Vec& b, SL loc) {
  Vec c = fn(a, b);
  if (c.size() != a.size())
    throw ValueError("associative_scan: the combine function returned " + std::to_string(c.size()) +
                         " arrays for " + std::to_string(a.size()) + " operands",
                     loc);
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i].shape() != a[i].shape() || c[i].dtype() != a[i].dtype())
      throw ValueError(
          "associative_scan: the combine function must keep each operand's shape and dtype (operand " +
              std::to_string(i) + ": " + a[i].aval().str() + " combined into " + c[i].aval().str() + ")",
          loc);
  return c;
}

Vec scan_rec(const ScanCombine& fn, const Vec& elems, int64_t axis, SL loc) {
  const int64_t n = elems[0].shape()[size_t(axis)];
  if (n < 2) return elems;
  Vec reduced = checked_combine(fn, slice_all(elems, axis, 0, n - 1, 2, loc),
                                slice_all(elems, axis, 1, n, 2, loc), loc);
  Vec odd = scan_rec(fn, reduced, axis, loc);
  const int64_t m = odd[0].shape()[size_t(axis)];  // n / 2
  Vec even = n % 2 == 0 ? checked_combine(fn, slice_all(odd, axis, 0, m - 1, 1, loc),
                                          slice_all(elems, axis, 2, n, 2, loc), loc)
                        : checked_combine(fn, odd, slice_all(elems, axis, 2, n, 2, loc), loc);
  Vec out;
  for (size_t i = 0; i < elems.size(); ++i) {
    Array first = slice_axis(elems[i], axis, 0, 1, 1, loc);
    Array ev = even[i].shape()[size_t(axis)] == 0 ? first : lax::concatenate({first, even[i]}, axis, loc);
    out.push_back(interleave(ev, odd[i], axis, loc));
  }
  return out;
}

}  // namespace

std::vector<Array> associative_scan(const ScanCombine& fn, const std::vector<Array>& elems, bool reverse,
                                    int64_t axis, SL loc) {
  if (elems.empty()) throw ValueError("associative_scan: no operands", loc);
  const int64_t nd = elems[0].ndim();
  if (axis < -nd || axis >= nd || nd == 0)
    throw ValueError("associative_scan: axis " + std::to_string(axis) + " out of range for operand " +
                         elems[0].aval().str(),
                     loc);
  if (axis < 0) axis += nd;
  for (const Array& e : elems)
    if (e.ndim() <= axis || e.shape()[size_t(axis)] != elems[0].shape()[size_t(axis)])
      throw ValueError("associative_scan: every operand needs the same size along axis " +
                           std::to_string(axis) + " (" + elems[0].aval().str() + " and " + e.aval().str() +
                           ")",
                       loc);
  Vec xs = elems;
  if (reverse)
    for (Array& x : xs) x = lax::rev(x, {axis}, loc);
  Vec r = scan_rec(fn, xs, axis, loc);
  if (reverse)
    for (Array& x : r) x = lax::rev(x, {axis}, loc);
  return r;
}

Array associative_scan(const std::function<Array(const Array&, const Array&)>& fn, const Array& elems,
                       bool reverse, int64_t axis, SL loc) {
  ScanCombine f = [&fn](const std::vector<Array>& a, const std::vector<Array>& b) {
    return std::vector<Array>{fn(a[0], b[0])};
  };
  return associative_scan(f, std::vector<Array>{elems}, reverse, axis, loc)[0];
}

}  // namespace minijax::lax
