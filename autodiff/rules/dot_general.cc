// minijax autodiff rules of dot_general: bilinear JVP, transposes with respect to either operand
// and the batching rule. Sources: JAX's _dot_general_transpose_lhs/_rhs and
// _dot_general_batch_dim_nums (jax/_src/lax/lax.py).
#include <algorithm>
#include <numeric>

#include "core/lax.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/array_ops.h"

namespace minijax {

namespace {

using Ints = std::vector<int64_t>;

lax::DotDimensionNumbers dims_of(const Params& p) { return DotGeneralParams::from(p).dimension_numbers; }

// dot_general with the equation's precision and output dtype and other dimension numbers (every
// rule keeps JAX's precision= and preferred_element_type=).
Array dot_like(const Array& x, const Array& y, const lax::DotDimensionNumbers& d, const Params& params,
               DType out) {
  DotGeneralParams v = DotGeneralParams::from(params);
  v.dimension_numbers = d;
  v.preferred_element_type = out;
  return minijax::bind1(primitive("dot_general"), {x, y}, v.to_params());
}

// A tangent that carries a value (not a symbolic or float0 zero).
bool carries(const Array& t) { return t.defined() && t.dtype() != DType::float0; }

bool contains(const Ints& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// range(n) minus the listed dims (JAX's `remaining`).
Ints remaining(int64_t n, const Ints& a, const Ints& b) {
  Ints r;
  for (int64_t i = 0; i < n; ++i)
    if (!contains(a, i) && !contains(b, i)) r.push_back(i);
  return r;
}
Ints range(int64_t start, int64_t len) {
  Ints r(static_cast<size_t>(len));
  std::iota(r.begin(), r.end(), start);
  return r;
}
Ints argsort(const Ints& v) {
  Ints idx = range(0, int64_t(v.size()));
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return v[size_t(a)] < v[size_t(b)]; });
  return idx;
}
Array transpose_unless_identity(const Array& x, const Ints& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i)) return lax::transpose(x, perm);
  return x;
}

// Cotangent of x in dot_general(x, y) (or, with swap_ans, in dot_general(y, x)): JAX's
// _dot_general_transpose_lhs. g has dims [batch, x_kept, y_kept] ([batch, y_kept, x_kept] when
// swapped); contracting g's y_kept with y's kept dims leaves [batch, x_kept, x_contract sorted
// by y's contracting order], which a transpose puts back in x's order.
// With a preferred_element_type, g has the output dtype while y has the operands': JAX contracts
// the two dtypes directly (XLA upcasting the narrower), here both are converted to the wider one
// first; the product keeps the output dtype and the cotangent is converted back to x's dtype
// (`x_dtype`), as JAX's _dot_general_transpose_lhs does.
Array transpose_lhs(const Array& g, int64_t x_ndim, DType x_dtype, const Array& y, const Ints& x_contract,
                    const Ints& y_contract, const Ints& x_batch, const Ints& y_batch, bool swap_ans,
                    const Params& params) {
  const int64_t y_ndim = y.ndim();
  Ints x_kept = remaining(x_ndim, x_contract, x_batch);
  Ints y_kept = remaining(y_ndim, y_contract, y_batch);
  const int64_t nb = int64_t(x_batch.size());
  Ints ans_batch = range(0, nb);
  Ints ans_y = swap_ans ? range(nb, int64_t(y_kept.size()))
                        : range(nb + int64_t(x_kept.size()), int64_t(y_kept.size()));
  lax::DotDimensionNumbers d{ans_y, y_kept, ans_batch, y_batch};
  Ints order = argsort(y_contract);
  Ints x_contract_sorted_by_y;
  for (int64_t i : order) x_contract_sorted_by_y.push_back(x_contract[size_t(i)]);
  Ints pre = x_batch;
  pre.insert(pre.end(), x_kept.begin(), x_kept.end());
  pre.insert(pre.end(), x_contract_sorted_by_y.begin(), x_contract_sorted_by_y.end());
  const DType wide = itemsize(g.dtype()) >= itemsize(y.dtype()) ? g.dtype() : y.dtype();
  auto as_wide = [&](const Array& v) { return v.dtype() == wide ? v : lax::convert_element_type(v, wide, false); };
  Array x_bar = transpose_unless_identity(dot_like(as_wide(g), as_wide(y), d, params, g.dtype()), argsort(pre));
  return x_bar.dtype() == x_dtype ? x_bar : lax::convert_element_type(x_bar, x_dtype, false);
}

std::vector<Array> dot_transpose(const std::vector<Array>& cts, const std::vector<Array>& args,
                                 const std::vector<ShapedArray>& avals, const Params& params) {
  const Array& g = cts.at(0);
  const bool lhs_lin = !args.at(0).defined(), rhs_lin = !args.at(1).defined();
  if (lhs_lin && rhs_lin)
    throw ValueError("dot_general transpose: both operands are linear (the product is not linear)");
  std::vector<Array> res(2);
  if (!g.defined()) return res;
  auto d = dims_of(params);
  if (lhs_lin)
    res[0] = transpose_lhs(g, avals.at(0).ndim(), avals.at(0).dtype, args.at(1), d.lhs_contracting,
                           d.rhs_contracting, d.lhs_batch, d.rhs_batch, false, params);
  else
    res[1] = transpose_lhs(g, avals.at(1).ndim(), avals.at(1).dtype, args.at(0), d.rhs_contracting,
                           d.lhs_contracting, d.rhs_batch, d.lhs_batch, true, params);
  return res;
}

std::pair<std::vector<Array>, std::vector<Array>> dot_jvp(const std::vector<Array>& primals,
                                                          const std::vector<Array>& tangents,
                                                          const Params& params) {
  const Array& x = primals.at(0);
  const Array& y = primals.at(1);
  Array ans = minijax::bind1(primitive("dot_general"), {x, y}, params);
  if (!is_floating(ans.dtype())) return {{ans}, {Array()}};
  // Bilinear, with the equation's precision and output dtype: the tangent has the output's dtype.
  auto d = dims_of(params);
  const DType out = ans.dtype();
  Array t;
  if (carries(tangents.at(0))) t = dot_like(tangents[0], y, d, params, out);
  if (carries(tangents.at(1))) {
    Array t2 = dot_like(x, tangents[1], d, params, out);
    t = t.defined() ? lax::add_any(t, t2) : t2;
  }
  return {{ans}, {t}};
}

// JAX's _dot_general_batch_dim_nums: both batched -> the vmapped dims become a new leading
// batch dimension; one batched -> its vmapped dim stays a free dim of that operand.
Ints bump(const Ints& ds, int64_t b) {
  Ints r;
  for (int64_t x : ds) r.push_back(x >= b ? x + 1 : x);
  return r;
}

std::pair<std::vector<Array>, std::vector<int64_t>> dot_batch(const std::vector<Array>& args,
                                                              const std::vector<int64_t>& dims,
                                                              const Params& params) {
  const Array& x = args.at(0);
  const Array& y = args.at(1);
  const int64_t lbd = dims.at(0), rbd = dims.at(1);
  auto d = dims_of(params);
  lax::DotDimensionNumbers nd = d;
  int64_t out_bdim = kNotMapped;
  if (lbd != kNotMapped && rbd != kNotMapped) {
    nd.lhs_batch = {lbd};
    for (int64_t b : bump(d.lhs_batch, lbd)) nd.lhs_batch.push_back(b);
    nd.rhs_batch = {rbd};
    for (int64_t b : bump(d.rhs_batch, rbd)) nd.rhs_batch.push_back(b);
    nd.lhs_contracting = bump(d.lhs_contracting, lbd);
    nd.rhs_contracting = bump(d.rhs_contracting, rbd);
    out_bdim = 0;
  } else if (lbd != kNotMapped) {
    Ints lfree = remaining(x.ndim() - 1, d.lhs_batch, d.lhs_contracting);
    out_bdim = int64_t(d.lhs_batch.size()) +
               int64_t(std::count_if(lfree.begin(), lfree.end(), [&](int64_t f) { return f < lbd; }));
    nd.lhs_batch = bump(d.lhs_batch, lbd);
    nd.lhs_contracting = bump(d.lhs_contracting, lbd);
  } else if (rbd != kNotMapped) {
    Ints rfree = remaining(y.ndim() - 1, d.rhs_batch, d.rhs_contracting);
    out_bdim = x.ndim() - int64_t(d.lhs_contracting.size()) +
               int64_t(std::count_if(rfree.begin(), rfree.end(), [&](int64_t f) { return f < rbd; }));
    nd.rhs_batch = bump(d.rhs_batch, rbd);
    nd.rhs_contracting = bump(d.rhs_contracting, rbd);
  }
  return {{dot_like(x, y, nd, params, DotGeneralParams::from(params).preferred_element_type)}, {out_bdim}};
}

Registrar reg([] {
  auto& p = get_or_create_primitive("dot_general");
  p.jvp = dot_jvp;
  p.transpose = dot_transpose;
  p.batch = dot_batch;
});

}  // namespace

}  // namespace minijax
