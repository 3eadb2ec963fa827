// minijax sorting primitives: sort (several operands, lexicographic on the first num_keys) and
// top_k (the k largest along the last axis). Owns their shape rules, eager implementations and lax:: entry points.
//
// Params (as JAX prints them): sort[dimension=0 is_stable=True num_keys=1], top_k[k=3].
// sort's order is JAX's _sort_lt_comparator (jax/_src/lax/lax.py): floats through
// _canonicalize_float_for_sort, so -0.0 == +0.0 and every NaN (either sign) sorts after +inf, equal
// to the other NaNs. top_k's order is XLA:CPU's (the TopkDecomposer's stable sort with
// GtTotalOrder, xla/hlo/builder/lib/comparators.cc, and the runtime's __xla_cpu_runtime_TopKF32,
// xla/service/cpu/runtime_topk.cc): the IEEE total order +NaN > +inf > ... > +0 > -0 > ... > -inf >
// -NaN, ties in index order. The eager implementations sort index permutations with
// std::stable_sort and those comparators; the compiled runtime (jit/runtime/sort.cc) uses its own
// algorithms, checked against these.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/lax.h"
#include "core/param_reads.h"
#include "core/primitive.h"
#include "core/trace.h"

namespace minijax {

namespace {

void check_sortable(DType d, const char* what) {
  if (d == DType::float0 || d == DType::token)
    throw TypeError(std::string(what) + " does not accept operands of dtype " + dtype_name(d));
}

// ---- sort ---------------------------------------------------------------------------------------

std::vector<ShapedArray> sort_shape_rule(const std::vector<ShapedArray>& in, const Params& p) {
  if (in.empty()) throw TypeError("sort requires at least one operand");
  const int64_t dimension = param_int(p, "dimension");
  const int64_t num_keys = param_int(p, "num_keys");
  param_bool(p, "is_stable");
  for (size_t i = 0; i < in.size(); ++i) {
    check_sortable(in[i].dtype, "sort");
    if (in[i].shape != in[0].shape)
      throw ShapeError("sort operands must have equal shapes, got " + in[0].str() + " (operand 0) and " +
                       in[i].str() + " (operand " + std::to_string(i) + ")");
  }
  if (num_keys < 1 || num_keys > int64_t(in.size()))
    throw ValueError("sort num_keys=" + std::to_string(num_keys) +
                     " must be between 1 and the number of operands (" + std::to_string(in.size()) + ")");
  if (dimension < 0 || dimension >= in[0].ndim())
    throw ValueError("sort dimension " + std::to_string(dimension) + " out of range for rank " +
                     std::to_string(in[0].ndim()));
  return in;
}

// A key element as JAX's comparator sees it: floats canonicalized (every NaN one value, after
// +inf; -0.0 equal to +0.0), integers and bools by value (exact in a double).
struct SortKey {
  bool nan = false;
  double v = 0;
};

std::vector<SortKey> sort_keys(const Array& x) {
  std::vector<SortKey> k(static_cast<size_t>(x.size()));
  dispatch_dtype(x.dtype(), [&]<class T>() {
    const T* d = x.data<T>();
    for (size_t i = 0; i < k.size(); ++i) {
      const double v = double(static_cast<std::conditional_t<std::is_same_v<T, bfloat16>, float, T>>(d[i]));
      k[i] = std::isnan(v) ? SortKey{true, 0} : SortKey{false, v};
    }
  });
  return k;
}

// JAX's _sort_lt_comparator on one key: a NaN is less than nothing; anything else is less than a NaN.
bool key_lt(const SortKey& a, const SortKey& b) {
  if (a.nan) return false;
  if (b.nan) return true;
  return a.v < b.v;
}
bool key_eq(const SortKey& a, const SortKey& b) { return a.nan == b.nan && (a.nan || a.v == b.v); }

std::vector<Array> sort_impl(const std::vector<Array>& args, const Params& p,
                             const std::vector<ShapedArray>& out_avals) {
  const int64_t dimension = param_int(p, "dimension");
  const size_t num_keys = size_t(param_int(p, "num_keys"));
  const Shape& s = args.at(0).shape();
  int64_t outer = 1, inner = 1, n = s.at(size_t(dimension));
  for (int64_t i = 0; i < dimension; ++i) outer *= s[size_t(i)];
  for (size_t i = size_t(dimension) + 1; i < s.size(); ++i) inner *= s[i];
  std::vector<std::vector<SortKey>> keys;
  for (size_t k = 0; k < num_keys; ++k) keys.push_back(sort_keys(args[k]));
  std::vector<Array> outs;
  for (const ShapedArray& a : out_avals) outs.push_back(Array::empty(a));
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t t) { return size_t((o * n + t) * inner + j); };
      std::iota(perm.begin(), perm.end(), int64_t(0));
      // Lexicographic over the keys (JAX's comparator); stable whatever is_stable says (an unstable
      // sort may give any order of equal keys: this is one, and the compiled runtime's).
      std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
        for (size_t k = 0; k < num_keys; ++k) {
          const SortKey &x = keys[k][at(a)], &y = keys[k][at(b)];
          if (key_lt(x, y)) return true;
          if (!key_eq(x, y)) return false;
        }
        return false;
      });
      for (size_t q = 0; q < args.size(); ++q) {
        const size_t w = itemsize(args[q].dtype());
        const char* src = static_cast<const char*>(args[q].raw_data());
        char* dst = static_cast<char*>(const_cast<void*>(outs[q].raw_data()));
        for (int64_t t = 0; t < n; ++t) std::memcpy(dst + at(t) * w, src + at(perm[size_t(t)]) * w, w);
      }
    }
  return outs;
}

// ---- top_k --------------------------------------------------------------------------------------

std::vector<ShapedArray> top_k_shape_rule(const std::vector<ShapedArray>& in, const Params& p) {
  const ShapedArray& x = in.at(0);
  check_sortable(x.dtype, "top_k");
  const int64_t k = param_int(p, "k");
  if (x.ndim() == 0) throw TypeError("top_k operand must have >= 1 dimension, got " + x.str());
  if (k < 0)
    throw ValueError("top_k k=" + std::to_string(k) + " must be nonnegative (operand " + x.str() + ")");
  const int64_t n = x.shape.back();
  if (k > n)
    throw ValueError("top_k k=" + std::to_string(k) + " must be no larger than the last axis of " + x.str());
  if (n > int64_t(std::numeric_limits<int32_t>::max()) + 1)
    throw ValueError("top_k returns i32 indices, which overflow for a last axis of " + std::to_string(n));
  ShapedArray v = x, i = x;
  v.shape.back() = k;
  i.shape.back() = k;
  i.dtype = DType::i32;
  i.weak_type = false;
  return {v, i};
}

// XLA's total order of a float's bits as a signed integer (runtime_topk.cc's convert_to_int, widened):
// negative floats reversed, so -NaN < -inf < -0 < +0 < +inf < +NaN; integers and bools by value.
template <class T>
int64_t total_order(T v) {
  if constexpr (std::is_same_v<T, float>) {
    int32_t b;
    std::memcpy(&b, &v, 4);
    return b < 0 ? int64_t(std::numeric_limits<int32_t>::max()) - int64_t(uint32_t(b)) : int64_t(b);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return total_order(static_cast<float>(v));  // its bits are the top half of the f32's
  } else if constexpr (std::is_same_v<T, double>) {
    int64_t b;
    std::memcpy(&b, &v, 8);
    return b < 0 ? b ^ std::numeric_limits<int64_t>::max() : b;
  } else {
    return int64_t(v);
  }
}

std::vector<Array> top_k_impl(const std::vector<Array>& args, const Params& p,
                              const std::vector<ShapedArray>& out_avals) {
  const Array& x = args.at(0);
  const int64_t k = param_int(p, "k");
  const int64_t n = x.shape().back();
  const int64_t rows = n ? x.size() / n : 0;
  Array vals = Array::empty(out_avals.at(0)), idx = Array::empty(out_avals.at(1));
  int32_t* id = idx.mutable_data<int32_t>();
  dispatch_dtype(x.dtype(), [&]<class T>() {
    const T* src = x.data<T>();
    T* dst = vals.mutable_data<T>();
    std::vector<int64_t> key(static_cast<size_t>(n));
    std::vector<int32_t> perm(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n; ++j) key[size_t(j)] = total_order(src[r * n + j]);
      std::iota(perm.begin(), perm.end(), 0);
      std::stable_sort(perm.begin(), perm.end(),
                       [&](int32_t a, int32_t b) { return key[size_t(a)] > key[size_t(b)]; });
      for (int64_t j = 0; j < k; ++j) {
        id[r * k + j] = perm[size_t(j)];
        dst[r * k + j] = src[r * n + perm[size_t(j)]];
      }
    }
  });
  return {vals, idx};
}

Registrar reg([] {
  {
    auto& p = get_or_create_primitive("sort");
    p.multiple_results = true;
    p.shape_rule = sort_shape_rule;
    p.impl = sort_impl;
    set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
    // n log2 n comparisons per row of n, each comparing up to num_keys keys.
    p.cost = [](const Eqn& e, bool count_bytes, const JaxprCost&) {
      CostEstimate c = operand_and_result_bytes(e, count_bytes);
      const ShapedArray& a = atom_aval(e.inputs.at(0));
      const int64_t n = a.shape.at(size_t(param_int(e.params, "dimension")));
      c.flops = double(a.size()) * std::ceil(std::log2(double(std::max<int64_t>(n, 2)))) *
                double(param_int(e.params, "num_keys"));
      return c;
    };
  }
  {
    auto& p = get_or_create_primitive("top_k");
    p.multiple_results = true;
    p.shape_rule = top_k_shape_rule;
    p.impl = top_k_impl;
    set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
    // One comparison per operand element (a selection of k), plus log2(k) per kept element.
    p.cost = [](const Eqn& e, bool count_bytes, const JaxprCost&) {
      CostEstimate c = operand_and_result_bytes(e, count_bytes);
      const int64_t k = param_int(e.params, "k");
      c.flops = double(atom_aval(e.inputs.at(0)).size()) +
                double(e.outputs.at(0).aval().size()) * std::ceil(std::log2(double(std::max<int64_t>(k, 2))));
      return c;
    };
  }
});

}  // namespace

namespace lax {

std::vector<Array> sort(const std::vector<Array>& operands, int64_t dimension, bool is_stable,
                        int64_t num_keys, SL loc) {
  if (operands.empty()) throw TypeError("sort requires at least one operand", loc);
  if (num_keys < 1 || num_keys > int64_t(operands.size()))
    throw ValueError("sort: num_keys=" + std::to_string(num_keys) +
                         " must be between 1 and the number of operands (" + std::to_string(operands.size()) +
                         ")",
                     loc);
  if (!operands[0].defined()) throw ValueError("sort: operand 0 is an empty Array", loc);
  const int64_t rank = operands[0].ndim();
  if (dimension < -rank || dimension >= rank)
    throw ValueError("sort: dimension " + std::to_string(dimension) + " out of range for rank " +
                         std::to_string(rank) + " (operand " + operands[0].aval().str() + ")",
                     loc);
  if (dimension < 0) dimension += rank;
  return minijax::bind(primitive("sort"), operands,
                       Params{{"dimension", dimension}, {"is_stable", is_stable}, {"num_keys", num_keys}},
                       loc);
}

Array sort(const Array& operand, int64_t dimension, bool is_stable, SL loc) {
  return sort(std::vector<Array>{operand}, dimension, is_stable, 1, loc).at(0);
}

std::pair<Array, Array> sort_key_val(const Array& keys, const Array& values, int64_t dimension,
                                     bool is_stable, SL loc) {
  auto r = sort(std::vector<Array>{keys, values}, dimension, is_stable, 1, loc);
  return {r.at(0), r.at(1)};
}

std::pair<Array, Array> top_k(const Array& operand, int64_t k, SL loc) {
  auto r = minijax::bind(primitive("top_k"), {operand}, Params{{"k", k}}, loc);
  return {r.at(0), r.at(1)};
}

}  // namespace lax

}  // namespace minijax
