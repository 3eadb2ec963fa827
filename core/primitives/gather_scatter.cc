// minijax general gather and the scatter family with JAX's dimension numbers: their params (printed
// and parsed as JAX prints them), shape rules, eager implementations and lax:: binders.
//
// Semantics: XLA's Gather/Scatter as jax/_src/lax/slicing.py binds them, with the index vector dim
// last. One geometry serves both: a gather's output and a scatter's updates are the "window
// array" whose dims are either window dims (offset_dims / update_window_dims, one per operand dim
// not collapsed/inserted nor batching, in order) or batch dims (indices.shape[:-1], in order).
// Each batch position's index vector gives a start per operand dim (start_index_map /
// scatter_dims_to_operand_dims; a batching dim starts at the batch position), and a window
// element lies at start + its window index. Modes (GatherScatterMode): CLIP clamps each start
// into [0, dim - window]; FILL_OR_DROP marks the whole window invalid when a start is outside it
// (gather fills it, a scatter drops it); PROMISE_IN_BOUNDS raises IndexError here.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>

#include "core/gather_scatter_params.h"
#include "core/primitives/elementwise_scalar.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/param_reads.h"
#include "core/parser.h"
#include "core/primitive.h"
#include "core/trace.h"

namespace minijax {

namespace {

std::string tup(const std::vector<int64_t>& v) { return param_to_string(Param(v)); }

// ---- dimension numbers params ---------------------------------------------------------------------

const char* const kGatherKeys[] = {"offset_dims", "collapsed_slice_dims", "start_index_map",
                                   "operand_batching_dims", "start_indices_batching_dims"};
const char* const kScatterKeys[] = {"update_window_dims", "inserted_window_dims",
                                    "scatter_dims_to_operand_dims", "operand_batching_dims",
                                    "scatter_indices_batching_dims"};

std::string named_str(const char* name, const char* const* keys,
                      const std::vector<const std::vector<int64_t>*>& v) {
  std::string s = std::string(name) + "(";
  for (size_t i = 0; i < v.size(); ++i) s += std::string(i ? ", " : "") + keys[i] + "=" + tup(*v[i]);
  return s + ")";
}

std::vector<const std::vector<int64_t>*> fields(const lax::GatherDimensionNumbers& d) {
  return {&d.offset_dims, &d.collapsed_slice_dims, &d.start_index_map, &d.operand_batching_dims,
          &d.start_indices_batching_dims};
}
std::vector<std::vector<int64_t>*> fields(lax::GatherDimensionNumbers& d) {
  return {&d.offset_dims, &d.collapsed_slice_dims, &d.start_index_map, &d.operand_batching_dims,
          &d.start_indices_batching_dims};
}
std::vector<const std::vector<int64_t>*> fields(const lax::ScatterDimensionNumbers& d) {
  return {&d.update_window_dims, &d.inserted_window_dims, &d.scatter_dims_to_operand_dims,
          &d.operand_batching_dims, &d.scatter_indices_batching_dims};
}
std::vector<std::vector<int64_t>*> fields(lax::ScatterDimensionNumbers& d) {
  return {&d.update_window_dims, &d.inserted_window_dims, &d.scatter_dims_to_operand_dims,
          &d.operand_batching_dims, &d.scatter_indices_batching_dims};
}

/// A gather's or a scatter's dimension numbers, printed as JAX prints the NamedTuple.
template <class D>
class DimsParam final : public ParamObject {
 public:
  explicit DimsParam(D d) : d_(std::move(d)) {}
  const D& dims() const { return d_; }
  std::string str() const override {
    if constexpr (std::is_same_v<D, lax::GatherDimensionNumbers>)
      return named_str("GatherDimensionNumbers", kGatherKeys, fields(d_));
    else return named_str("ScatterDimensionNumbers", kScatterKeys, fields(d_));
  }
  bool equals(const ParamObject& o) const override {
    auto* q = dynamic_cast<const DimsParam*>(&o);
    return q && q->d_ == d_;
  }

 private:
  D d_;
};

// Reads `Name(k0=(i, ...), k1=(), ...)` with exactly `keys` in order into `out`; false otherwise.
bool read_named(const std::string& t, const std::string& name, const char* const* keys,
                const std::vector<std::vector<int64_t>*>& out) {
  size_t i = 0;
  auto skip = [&] {
    while (i < t.size() && t[i] == ' ') ++i;
  };
  auto eat = [&](const std::string& w) {
    skip();
    if (t.compare(i, w.size(), w) != 0) return false;
    i += w.size();
    return true;
  };
  if (!eat(name + "(")) return false;
  for (size_t k = 0; k < out.size(); ++k) {
    if ((k && !eat(",")) || !eat(std::string(keys[k]) + "=") || !eat("(")) return false;
    while (!eat(")")) {
      skip();
      size_t b = i;
      if (i < t.size() && t[i] == '-') ++i;
      while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
      if (i == b || (i == b + 1 && t[b] == '-')) return false;
      out[k]->push_back(std::stoll(t.substr(b, i - b)));
      if (!eat(",")) {
        skip();
        if (i >= t.size() || t[i] != ')') return false;
      }
    }
  }
  if (!eat(")")) return false;
  skip();
  return i == t.size();
}

ParamObjectPtr parse_dims(const std::string& key, const std::string& text) {
  if (key != "dimension_numbers") return nullptr;
  lax::GatherDimensionNumbers g;
  if (read_named(text, "GatherDimensionNumbers", kGatherKeys, fields(g)))
    return std::make_shared<DimsParam<lax::GatherDimensionNumbers>>(std::move(g));
  lax::ScatterDimensionNumbers s;
  if (read_named(text, "ScatterDimensionNumbers", kScatterKeys, fields(s)))
    return std::make_shared<DimsParam<lax::ScatterDimensionNumbers>>(std::move(s));
  return nullptr;
}

template <class D>
D read_dims(const Params& params, const char* what) {
  if (params.has("dimension_numbers"))
    if (auto* o = std::get_if<ParamObjectPtr>(&param_at(params, "dimension_numbers")))
      if (auto* d = dynamic_cast<const DimsParam<D>*>(o->get())) return d->dims();
  throw ValueError(std::string("parameter 'dimension_numbers' must hold ") + what);
}

// ---- shape rules ----------------------------------------------------------------------------------

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

/// The checks JAX's shape rules make of one dims tuple: (sorted,) unique, each in [0, bound).
void check_dims(const std::string& ctx, const char* param, const std::vector<int64_t>& v, int64_t bound,
                bool sorted, const std::string& bound_what) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < 0 || v[i] >= bound)
      throw ShapeError(ctx + "dimension_numbers." + param + " " + tup(v) + " has dim " +
                       std::to_string(v[i]) + " out of range [0, " + std::to_string(bound) + ") (" +
                       bound_what + ")");
    for (size_t j = 0; j < i; ++j)
      if (v[j] == v[i])
        throw ShapeError(ctx + "dimension_numbers." + param + " " + tup(v) + " repeats dim " +
                         std::to_string(v[i]));
    if (sorted && i > 0 && v[i - 1] > v[i])
      throw ShapeError(ctx + "dimension_numbers." + param + " " + tup(v) + " must be sorted");
  }
}

void check_disjoint(const std::string& ctx, const char* a, const std::vector<int64_t>& va, const char* b,
                    const std::vector<int64_t>& vb) {
  for (int64_t x : va)
    if (contains(vb, x))
      throw ShapeError(ctx + "dim " + std::to_string(x) + " is in both dimension_numbers." + a + " " +
                       tup(va) + " and dimension_numbers." + b + " " + tup(vb));
}

/// Checks shared by gather and scatter, in gather's terms: `window` (offset/update window dims, of
/// the window array of rank `wrank`), `dropped` (collapsed/inserted), `sim`, the batching dims.
struct Names {
  const char *window, *dropped, *sim, *ibatch;
};

void check_common(const std::string& ctx, const Names& n, const lax::GatherDimensionNumbers& d,
                  const ShapedArray& x, const ShapedArray& idx, int64_t wrank) {
  const int64_t r = x.ndim();
  if (idx.ndim() < 1)
    throw ShapeError(ctx + "indices " + idx.str() +
                     " must have rank >= 1 (their last dim is the index vector)");
  check_dims(ctx, n.window, d.offset_dims, wrank, true,
             "the rank of the " + std::string(n.window[0] == 'o' ? "output" : "updates"));
  check_dims(ctx, n.dropped, d.collapsed_slice_dims, r, true, "the operand's rank");
  check_dims(ctx, "operand_batching_dims", d.operand_batching_dims, r, true, "the operand's rank");
  check_dims(ctx, n.ibatch, d.start_indices_batching_dims, idx.ndim() - 1, false,
             "the indices' rank without the index vector dim");
  if (d.operand_batching_dims.size() != d.start_indices_batching_dims.size())
    throw ShapeError(ctx + "dimension_numbers.operand_batching_dims " + tup(d.operand_batching_dims) +
                     " and " + n.ibatch + " " + tup(d.start_indices_batching_dims) +
                     " must have the same length");
  check_disjoint(ctx, n.dropped, d.collapsed_slice_dims, "operand_batching_dims", d.operand_batching_dims);
  const int64_t k = idx.shape.back();
  if (int64_t(d.start_index_map.size()) != k)
    throw ShapeError(ctx + "dimension_numbers." + n.sim + " " + tup(d.start_index_map) +
                     " must have one entry per "
                     "element of the index vector (the last dim of indices " +
                     idx.str() + ")");
  check_dims(ctx, n.sim, d.start_index_map, r, false, "the operand's rank");
  check_disjoint(ctx, n.sim, d.start_index_map, "operand_batching_dims", d.operand_batching_dims);
  if (int64_t(d.offset_dims.size() + d.collapsed_slice_dims.size() + d.operand_batching_dims.size()) != r)
    throw ShapeError(ctx + "dimension_numbers." + n.window + " " + tup(d.offset_dims) + ", " + n.dropped +
                     " " + tup(d.collapsed_slice_dims) + " and operand_batching_dims " +
                     tup(d.operand_batching_dims) + " must together count the operand's rank " +
                     std::to_string(r));
  for (size_t i = 0; i < d.operand_batching_dims.size(); ++i) {
    const int64_t od = d.operand_batching_dims[i], id = d.start_indices_batching_dims[i];
    if (x.shape[size_t(od)] != idx.shape[size_t(id)])
      throw ShapeError(ctx + "operand batching dim " + std::to_string(od) + " (size " +
                       std::to_string(x.shape[size_t(od)]) + ") and indices batching dim " +
                       std::to_string(id) + " (size " + std::to_string(idx.shape[size_t(id)]) +
                       ") must have the same size");
  }
}

/// The operand dims that are window dims (not dropped nor batching), in order.
std::vector<int64_t> window_operand_dims(const lax::GatherDimensionNumbers& d, int64_t rank) {
  std::vector<int64_t> w;
  for (int64_t i = 0; i < rank; ++i)
    if (!contains(d.collapsed_slice_dims, i) && !contains(d.operand_batching_dims, i)) w.push_back(i);
  return w;
}

void check_index_dtype(const std::string& ctx, const ShapedArray& idx) {
  if (!is_integer(idx.dtype)) throw TypeError(ctx + "indices must be an integer array, got " + idx.str());
}

std::vector<ShapedArray> gather_shape(const std::vector<ShapedArray>& in, const Params& p) {
  if (in.size() != 2) throw ValueError("gather takes an operand and indices");
  const ShapedArray &x = in[0], &idx = in[1];
  const std::string ctx = "gather(" + x.str() + ", " + idx.str() + "): ";
  check_index_dtype(ctx, idx);
  const auto d = lax::gather_dimension_numbers(p);
  const auto& ss = param_ints(p, "slice_sizes");
  lax::gather_scatter_mode(p);  // validates the mode and fill_value params
  lax::gather_fill_value(p);
  const int64_t out_rank = int64_t(d.offset_dims.size()) + idx.ndim() - 1;
  check_common(ctx, {"offset_dims", "collapsed_slice_dims", "start_index_map", "start_indices_batching_dims"},
               d, x, idx, out_rank);
  if (ss.size() != x.shape.size())
    throw ShapeError(ctx + "slice_sizes " + tup(ss) + " must have one entry per operand dim (rank " +
                     std::to_string(x.ndim()) + ")");
  for (size_t i = 0; i < ss.size(); ++i) {
    if (ss[i] < 0 || ss[i] > x.shape[i])
      throw ShapeError(ctx + "slice_sizes " + tup(ss) + ": slice size " + std::to_string(ss[i]) + " of dim " +
                       std::to_string(i) + " is outside [0, " + std::to_string(x.shape[i]) + "] (operand " +
                       x.str() + ")");
    if (contains(d.collapsed_slice_dims, int64_t(i)) && ss[i] != 1)
      throw ShapeError(ctx + "slice_sizes " + tup(ss) + ": a collapsed dim (" + std::to_string(i) +
                       ") must have slice size 1");
    if (contains(d.operand_batching_dims, int64_t(i)) && ss[i] > 1)  // 0 where the dim is empty, as JAX
      throw ShapeError(ctx + "slice_sizes " + tup(ss) + ": a batching dim (" + std::to_string(i) +
                       ") must have slice size 0 or 1");
  }
  const auto wdims = window_operand_dims(d, x.ndim());
  Shape out;
  size_t w = 0, b = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (contains(d.offset_dims, i)) out.push_back(ss[size_t(wdims[w++])]);
    else out.push_back(idx.shape[b++]);
  }
  ShapedArray o = x;
  o.shape = out;
  return {o};
}

/// A scatter's numbers in gather's terms (the window array is the updates).
lax::GatherDimensionNumbers as_gather(const lax::ScatterDimensionNumbers& s) {
  return lax::mirrored_gather_dims(s);
}

std::vector<ShapedArray> scatter_shape_of(const char* prim, const std::vector<ShapedArray>& in,
                                          const Params& p) {
  if (in.size() != 3) throw ValueError(std::string(prim) + " takes an operand, indices and updates");
  const ShapedArray &x = in[0], &idx = in[1], &u = in[2];
  const std::string ctx = std::string(prim) + "(" + x.str() + ", " + idx.str() + ", " + u.str() + "): ";
  check_index_dtype(ctx, idx);
  const auto s = lax::scatter_dimension_numbers(p);
  lax::gather_scatter_mode(p);  // validates the mode param
  const auto d = as_gather(s);
  check_common(ctx,
               {"update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
                "scatter_indices_batching_dims"},
               d, x, idx, u.ndim());
  if (u.ndim() != int64_t(s.update_window_dims.size()) + idx.ndim() - 1)
    throw ShapeError(
        ctx + "updates " + u.str() + " must have rank len(update_window_dims " + tup(s.update_window_dims) +
        ") + indices rank - 1 = " + std::to_string(int64_t(s.update_window_dims.size()) + idx.ndim() - 1));
  const auto wdims = window_operand_dims(d, x.ndim());
  size_t w = 0, b = 0;
  for (int64_t i = 0; i < u.ndim(); ++i) {
    const int64_t n = u.shape[size_t(i)];
    if (contains(s.update_window_dims, i)) {
      const int64_t od = wdims[w++];
      if (n > x.shape[size_t(od)])
        throw ShapeError(ctx + "updates window dim " + std::to_string(i) + " (size " + std::to_string(n) +
                         ", dimension_numbers.update_window_dims " + tup(s.update_window_dims) +
                         ") is larger than operand dim " + std::to_string(od) + " (size " +
                         std::to_string(x.shape[size_t(od)]) + ")");
    } else if (n != idx.shape[b++]) {
      throw ShapeError(ctx + "updates scatter dim " + std::to_string(i) + " has size " + std::to_string(n) +
                       " but the indices' batch dims " + tup(Shape(idx.shape.begin(), idx.shape.end() - 1)) +
                       " want " + std::to_string(idx.shape[b - 1]));
    }
  }
  if (u.dtype != x.dtype)
    throw TypeError(ctx + "updates dtype " + dtype_name(u.dtype) + " differs from operand dtype " +
                    dtype_name(x.dtype));
  if (x.memory_kind != u.memory_kind)
    throw TypeError(ctx + "operand and updates live in different memory kinds: device_put one of them first");
  ShapedArray out = x;
  out.weak_type = x.weak_type;  // JAX's _argnum_weak_type(0)
  return {out};
}

// ---- eager implementation -------------------------------------------------------------------------

std::vector<int64_t> read_indices(const Array& idx) {
  std::vector<int64_t> r(size_t(idx.size()));
  if (idx.dtype() == DType::i32) {
    const int32_t* p = idx.data<int32_t>();
    for (size_t i = 0; i < r.size(); ++i) r[i] = p[i];
  } else {
    const uint32_t* p = idx.data<uint32_t>();
    for (size_t i = 0; i < r.size(); ++i) r[i] = int64_t(p[i]);
  }
  return r;
}

/// Calls visit(window_flat, operand_flat) for every element of the window array in row-major
/// order; operand_flat is -1 for an element of a dropped/filled window (FILL_OR_DROP).
void for_each_position(const char* prim, const ShapedArray& xa, const Array& indices,
                       const Shape& window_shape, const lax::GatherDimensionNumbers& d,
                       const std::vector<int64_t>& sizes, lax::GatherScatterMode mode,
                       const std::function<void(int64_t, int64_t)>& visit) {
  const Shape& xs = xa.shape;
  const size_t r = xs.size();
  const Shape& is = indices.shape();
  const Shape batch(is.begin(), is.end() - 1);
  const int64_t K = is.back(), nb = shape_size(batch);
  const auto idx = read_indices(indices);
  const auto bst = strides_of(batch), xst = strides_of(xs);
  // Per batch position: the operand offset of its window's first element, or -1.
  std::vector<int64_t> base(static_cast<size_t>(nb));
  std::vector<int64_t> bpos(batch.size());
  for (int64_t bf = 0; bf < nb; ++bf) {
    for (size_t j = 0; j < batch.size(); ++j) bpos[j] = (bf / bst[j]) % batch[j];
    int64_t off = 0;
    bool valid = true;
    for (int64_t k = 0; k < K; ++k) {
      const size_t od = size_t(d.start_index_map[size_t(k)]);
      const int64_t hi = xs[od] - sizes[od], v = idx[size_t(bf * K + k)];
      int64_t s = v;
      if (v < 0 || v > hi) {
        if (mode == lax::GatherScatterMode::PROMISE_IN_BOUNDS)
          throw IndexError(std::string(prim) + "(" + xa.str() + ", " + indices.aval().str() +
                           "): start index " + std::to_string(v) + " (entry " + std::to_string(k) +
                           " of the index vector at " + tup(bpos) +
                           ") is out of bounds for a window of size " + std::to_string(sizes[od]) +
                           " in operand dim " + std::to_string(od) + " of size " + std::to_string(xs[od]) +
                           " (mode GatherScatterMode.PROMISE_IN_BOUNDS; pass a mode to clip or fill)");
        // A window that cannot fit at all (an indexed dim shorter than it: hi < 0, a scatter into
        // an empty dim) is dropped in every mode, as XLA drops it.
        if (mode == lax::GatherScatterMode::FILL_OR_DROP || hi < 0) valid = false;
        s = std::clamp<int64_t>(v, 0, std::max<int64_t>(hi, 0));
      }
      off += s * xst[od];
    }
    for (size_t i = 0; i < d.operand_batching_dims.size(); ++i)
      off += bpos[size_t(d.start_indices_batching_dims[i])] * xst[size_t(d.operand_batching_dims[i])];
    base[size_t(bf)] = valid ? off : -1;
  }
  // Per window-array dim: its stride into the batch position or into the operand.
  const auto wdims = window_operand_dims(d, int64_t(r));
  std::vector<int64_t> to_batch(window_shape.size(), 0), to_operand(window_shape.size(), 0);
  size_t w = 0, b = 0;
  for (size_t i = 0; i < window_shape.size(); ++i) {
    if (contains(d.offset_dims, int64_t(i))) to_operand[i] = xst[size_t(wdims[w++])];
    else to_batch[i] = bst[b++];
  }
  const int64_t n = shape_size(window_shape);
  std::vector<int64_t> pos(window_shape.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t bf = 0, off = 0;
    for (size_t i = 0; i < pos.size(); ++i) {
      bf += pos[i] * to_batch[i];
      off += pos[i] * to_operand[i];
    }
    const int64_t b0 = base[size_t(bf)];
    visit(e, b0 < 0 ? -1 : b0 + off);
    for (size_t i = pos.size(); i-- > 0;) {
      if (++pos[i] < window_shape[i]) break;
      pos[i] = 0;
    }
  }
}

char* out_bytes(Array& a) { return static_cast<char*>(const_cast<void*>(a.raw_data())); }
const char* in_bytes(const Array& a) { return static_cast<const char*>(a.raw_data()); }

std::vector<Array> gather_impl(const std::vector<Array>& a, const Params& p,
                               const std::vector<ShapedArray>& out) {
  const Array& x = a[0];
  Array o = Array::empty(out[0]);
  const size_t item = itemsize(x.dtype());
  if (out[0].size() == 0 || item == 0) return {o};
  const double fill = lax::gather_fill(x.dtype(), lax::gather_fill_value(p));
  std::vector<char> fill_bytes(item);
  dispatch_dtype(x.dtype(), [&]<class T>() {
    T v;
    if constexpr (std::is_same_v<T, bool>) v = fill != 0;
    else if constexpr (std::is_same_v<T, bfloat16>) v = bfloat16(float(fill));
    else if constexpr (std::is_same_v<T, uint32_t>) v = T(uint32_t(int64_t(fill)));
    else v = T(fill);
    std::memcpy(fill_bytes.data(), &v, sizeof(T));
  });
  char* dst = out_bytes(o);
  const char* src = in_bytes(x);
  for_each_position("gather", x.aval(), a[1], out[0].shape, lax::gather_dimension_numbers(p),
                    param_ints(p, "slice_sizes"), lax::gather_scatter_mode(p), [&](int64_t e, int64_t xo) {
                      std::memcpy(dst + size_t(e) * item,
                                  xo < 0 ? fill_bytes.data() : src + size_t(xo) * item, item);
                    });
  return {o};
}

enum class Combine { set, add, mul, min, max };

template <class T>
T combine(Combine c, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (c) {
      case Combine::set: return b;
      case Combine::add:
      case Combine::max: return a || b;
      case Combine::mul:
      case Combine::min: return a && b;
    }
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return bfloat16(combine(c, float(a), float(b)));
  } else {
    switch (c) {
      case Combine::set: return b;
      case Combine::add: return elementwise::wrap_add(a, b);  // i32 wraps, as compiled code
      case Combine::mul: return elementwise::wrap_mul(a, b);
      // NaN propagates, as XLA's min/max (and minijax's lax::min/max) do.
      case Combine::min: return (a != a || b != b) ? T(a + b) : (b < a ? b : a);
      case Combine::max: return (a != a || b != b) ? T(a + b) : (b > a ? b : a);
    }
  }
  return b;
}

std::vector<Array> scatter_impl_of(const char* prim, Combine c, const std::vector<Array>& a, const Params& p,
                                   const std::vector<ShapedArray>& out) {
  const Array &x = a[0], &u = a[2];
  Array o = Array::empty(out[0]);  // the copy of x below initialises every byte first
  if (out[0].dtype == DType::float0) return {o};  // zero-sized elements: nothing to combine
  std::memcpy(out_bytes(o), in_bytes(x), size_t(out[0].nbytes()));
  if (u.size() == 0) return {o};
  const auto s = lax::scatter_dimension_numbers(p);
  const auto sizes = lax::scatter_slice_sizes(s, size_t(x.ndim()), u.shape());
  dispatch_dtype(out[0].dtype, [&]<class T>() {
    T* dst = o.mutable_data<T>();
    const T* src = u.data<T>();
    for_each_position(prim, x.aval(), a[1], u.shape(), as_gather(s), sizes, lax::gather_scatter_mode(p),
                      [&](int64_t e, int64_t xo) {
                        if (xo >= 0) dst[xo] = combine(c, dst[xo], src[e]);
                      });
  });
  return {o};
}

struct ScatterKind {
  const char* name;
  Combine combine;
};
const ScatterKind kScatters[] = {{"scatter", Combine::set},
                                 {"scatter_add", Combine::add},
                                 {"scatter_mul", Combine::mul},
                                 {"scatter_min", Combine::min},
                                 {"scatter_max", Combine::max}};

Registrar reg([] {
  auto& g = get_or_create_primitive("gather");
  g.shape_rule = gather_shape;
  g.impl = gather_impl;
  set_classes(g, OpClass::index_map, CostClass::data_movement, FusionClass::normal);
  for (const ScatterKind& k : kScatters) {
    auto& p = get_or_create_primitive(k.name);
    p.shape_rule = [n = k.name](const std::vector<ShapedArray>& in, const Params& ps) {
      return scatter_shape_of(n, in, ps);
    };
    p.impl = [k](const std::vector<Array>& a, const Params& ps, const std::vector<ShapedArray>& out) {
      return scatter_impl_of(k.name, k.combine, a, ps, out);
    };
    set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
    // One combine per scattered element.
    p.cost = [](const Eqn& e, bool count_bytes, const JaxprCost&) {
      CostEstimate c = operand_and_result_bytes(e, count_bytes);
      c.flops = double(atom_aval(e.inputs.back()).size());
      return c;
    };
  }
  register_param_object_parser(parse_dims);
});

}  // namespace

// ---- params -----------------------------------------------------------------------------------------

Param lax::gather_dimension_numbers_param(const GatherDimensionNumbers& dims) {
  return ParamObjectPtr(std::make_shared<DimsParam<GatherDimensionNumbers>>(dims));
}
Param lax::scatter_dimension_numbers_param(const ScatterDimensionNumbers& dims) {
  return ParamObjectPtr(std::make_shared<DimsParam<ScatterDimensionNumbers>>(dims));
}
lax::GatherDimensionNumbers lax::gather_dimension_numbers(const Params& params) {
  return read_dims<GatherDimensionNumbers>(params, "GatherDimensionNumbers(offset_dims=..., ...)");
}
lax::ScatterDimensionNumbers lax::scatter_dimension_numbers(const Params& params) {
  return read_dims<ScatterDimensionNumbers>(params, "ScatterDimensionNumbers(update_window_dims=..., ...)");
}

Params lax::gather_params(const GatherDimensionNumbers& dims, const std::vector<int64_t>& slice_sizes,
                          const GatherOptions& o) {
  Params p{{"dimension_numbers", gather_dimension_numbers_param(dims)},
           {"slice_sizes", slice_sizes},
           {"indices_are_sorted", o.indices_are_sorted},
           {"unique_indices", o.unique_indices},
           {"mode", std::string(gather_scatter_mode_name(o.mode))}};
  if (o.fill_value) p.set("fill_value", *o.fill_value);
  else p.set("fill_value", ParamObjectPtr{});  // printed fill_value=None, as in JAX
  return p;
}

Params lax::scatter_params(const ScatterDimensionNumbers& dims, const ScatterOptions& o) {
  return Params{{"dimension_numbers", scatter_dimension_numbers_param(dims)},
                {"indices_are_sorted", o.indices_are_sorted},
                {"unique_indices", o.unique_indices},
                {"mode", std::string(gather_scatter_mode_name(o.mode))}};
}

lax::GatherDimensionNumbers lax::mirrored_gather_dims(const ScatterDimensionNumbers& s) {
  return {s.update_window_dims, s.inserted_window_dims, s.scatter_dims_to_operand_dims,
          s.operand_batching_dims, s.scatter_indices_batching_dims};
}

lax::ScatterDimensionNumbers lax::mirrored_scatter_dims(const GatherDimensionNumbers& g) {
  return {g.offset_dims, g.collapsed_slice_dims, g.start_index_map, g.operand_batching_dims,
          g.start_indices_batching_dims};
}

std::vector<int64_t> lax::scatter_slice_sizes(const ScatterDimensionNumbers& s, size_t operand_rank,
                                              const Shape& updates_shape) {
  std::vector<int64_t> r;
  size_t pos = 0;
  for (size_t i = 0; i < operand_rank; ++i) {
    if (contains(s.inserted_window_dims, int64_t(i)) || contains(s.operand_batching_dims, int64_t(i)))
      r.push_back(1);
    else if (pos < s.update_window_dims.size()) {
      const auto w = size_t(s.update_window_dims[pos++]);
      r.push_back(w < updates_shape.size() ? updates_shape[w] : 0);
    } else r.push_back(0);  // malformed numbers: the shape rule reports them
  }
  return r;
}

// ---- binders ------------------------------------------------------------------------------------------

/// ValueError at the user's line for a GatherScatterMode outside the enum.
void lax::check_gather_scatter_mode(const char* fn, GatherScatterMode mode, SL loc) {
  if (mode != GatherScatterMode::CLIP && mode != GatherScatterMode::FILL_OR_DROP &&
      mode != GatherScatterMode::PROMISE_IN_BOUNDS)
    throw ValueError(std::string(fn) + ": unknown GatherScatterMode " + std::to_string(int(mode)) +
                         " (expected CLIP, FILL_OR_DROP or PROMISE_IN_BOUNDS)",
                     loc);
}

Array lax::gather(const Array& operand, const Array& indices, const GatherDimensionNumbers& dimension_numbers,
                  const std::vector<int64_t>& slice_sizes, const GatherOptions& options, SL loc) {
  check_gather_scatter_mode("gather", options.mode, loc);
  return minijax::bind1(primitive("gather"), {operand, indices},
                        gather_params(dimension_numbers, slice_sizes, options), loc);
}

namespace {
Array bind_scatter(const char* prim, const Array& operand, const Array& indices, const Array& updates,
                   const lax::ScatterDimensionNumbers& dims, const lax::ScatterOptions& options,
                   std::source_location loc) {
  lax::check_gather_scatter_mode(prim, options.mode, loc);
  return minijax::bind1(primitive(prim), {operand, indices, updates}, lax::scatter_params(dims, options),
                        loc);
}
}  // namespace

Array lax::scatter(const Array& operand, const Array& indices, const Array& updates,
                   const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options, SL loc) {
  return bind_scatter("scatter", operand, indices, updates, dimension_numbers, options, loc);
}
Array lax::scatter_add(const Array& operand, const Array& indices, const Array& updates,
                       const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options,
                       SL loc) {
  return bind_scatter("scatter_add", operand, indices, updates, dimension_numbers, options, loc);
}
Array lax::scatter_mul(const Array& operand, const Array& indices, const Array& updates,
                       const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options,
                       SL loc) {
  return bind_scatter("scatter_mul", operand, indices, updates, dimension_numbers, options, loc);
}
Array lax::scatter_min(const Array& operand, const Array& indices, const Array& updates,
                       const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options,
                       SL loc) {
  return bind_scatter("scatter_min", operand, indices, updates, dimension_numbers, options, loc);
}
Array lax::scatter_max(const Array& operand, const Array& indices, const Array& updates,
                       const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options,
                       SL loc) {
  return bind_scatter("scatter_max", operand, indices, updates, dimension_numbers, options, loc);
}

}  // namespace minijax
