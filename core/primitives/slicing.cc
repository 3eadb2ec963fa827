// minijax slicing and indexing primitives: slice, dynamic_slice, dynamic_update_slice,
// concatenate, pad, the row forms of gather and scatter_add (binders only), and iota. Owns their shape rules, eager
// implementations and lax:: binders (semantics of jax/_src/lax/slicing.py and XLA's clamping).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/gather_scatter_params.h"
#include "core/lax.h"
#include "core/lax_params.h"
#include "core/param_reads.h"
#include "core/parser.h"
#include "core/primitive.h"
#include "core/primitives/strided_copy.h"
#include "core/trace.h"

namespace minijax {

namespace {

std::string tuple_str(const std::vector<int64_t>& v) { return param_to_string(Param(v)); }

ShapedArray with_shape(const ShapedArray& x, Shape s) {
  ShapedArray o = x;
  o.shape = std::move(s);
  return o;
}

char* out_bytes(Array& a) { return static_cast<char*>(const_cast<void*>(a.raw_data())); }
const char* in_bytes(const Array& a) { return static_cast<const char*>(a.raw_data()); }

int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

/// Array operands of one op must live in one memory kind (index operands are exempt).
void check_same_memory_kind(const ShapedArray& a, const ShapedArray& b) {
  if (a.memory_kind != b.memory_kind)
    throw TypeError(std::string("operands live in different memory kinds (") +
                    memory_kind_name(a.memory_kind) + " and " + memory_kind_name(b.memory_kind) +
                    "): device_put one of them first");
}

/// Index operands (dynamic_slice starts, gather indices) must be integers.
void check_index(const ShapedArray& a, const std::string& what, bool rank0) {
  if (!is_integer(a.dtype) || (rank0 && a.ndim() != 0))
    throw TypeError(what + " must be " + (rank0 ? "a rank-0 " : "an ") + "integer array, got " + a.str());
}

/// The integer elements of an index array as int64.
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

/// Start indices of dynamic_slice/dynamic_update_slice clamped as XLA does:
/// start = clamp(start, 0, dim - size).
std::vector<int64_t> clamped_starts(const std::vector<Array>& args, size_t first, const Shape& dims,
                                    const Shape& sizes) {
  std::vector<int64_t> s(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t v = read_indices(args[first + i])[0];
    s[i] = std::clamp<int64_t>(v, 0, dims[i] - sizes[i]);
  }
  return s;
}

int64_t offset_of(const std::vector<int64_t>& idx, const std::vector<int64_t>& strides) {
  int64_t o = 0;
  for (size_t i = 0; i < idx.size(); ++i) o += idx[i] * strides[i];
  return o;
}

// ---- slice ---------------------------------------------------------------------------------------

std::vector<int64_t> slice_strides(const Params& p, size_t n) {
  if (p.has("strides") && std::holds_alternative<std::vector<int64_t>>(param_at(p, "strides")))
    return param_ints(p, "strides");
  return std::vector<int64_t>(n, 1);
}

std::vector<ShapedArray> slice_shape(const std::vector<ShapedArray>& in, const Params& p) {
  if (in.size() != 1) throw ValueError("slice takes one operand, got " + std::to_string(in.size()));
  const auto& x = in[0];
  const auto& start = param_ints(p, "start_indices");
  const auto& limit = param_ints(p, "limit_indices");
  auto strides = slice_strides(p, x.shape.size());
  const size_t n = x.shape.size();
  if (start.size() != n || limit.size() != n || strides.size() != n)
    throw ShapeError("start_indices " + tuple_str(start) + ", limit_indices " + tuple_str(limit) +
                     " and strides must have one entry per dimension of shape " + tuple_str(x.shape));
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    if (start[i] < 0 || start[i] > limit[i] || limit[i] > x.shape[i])
      throw ShapeError("slice [" + std::to_string(start[i]) + ":" + std::to_string(limit[i]) +
                       ") of dimension " + std::to_string(i) + " is out of bounds for shape " +
                       tuple_str(x.shape) + " (need 0 <= start <= limit <= dim)");
    if (strides[i] < 1) throw ShapeError("strides " + tuple_str(strides) + " must be positive");
    out[i] = (limit[i] - start[i] + strides[i] - 1) / strides[i];
  }
  return {with_shape(x, out)};
}

std::vector<Array> slice_impl(const std::vector<Array>& a, const Params& p,
                              const std::vector<ShapedArray>& out) {
  const auto& start = param_ints(p, "start_indices");
  auto strides = slice_strides(p, start.size());
  auto st = strides_of(a[0].shape());
  std::vector<int64_t> src(st.size());
  for (size_t i = 0; i < st.size(); ++i) src[i] = st[i] * strides[i];
  Array o = Array::empty(out[0]);
  detail::copy_strided(out_bytes(o), 0, strides_of(out[0].shape), in_bytes(a[0]), offset_of(start, st), src,
                       out[0].shape, itemsize(out[0].dtype));
  return {o};
}

// ---- dynamic_slice -------------------------------------------------------------------------------

std::vector<ShapedArray> dynamic_slice_shape(const std::vector<ShapedArray>& in, const Params& p) {
  if (in.empty()) throw ValueError("dynamic_slice takes an operand and its start indices, got no operands");
  const auto& x = in[0];
  const auto& sizes = param_ints(p, "slice_sizes");
  if (int64_t(in.size()) - 1 != x.ndim())
    throw ShapeError("an operand of rank " + std::to_string(x.ndim()) + " needs " + std::to_string(x.ndim()) +
                     " start indices, got " + std::to_string(in.size() - 1));
  for (size_t i = 1; i < in.size(); ++i) check_index(in[i], "start index " + std::to_string(i - 1), true);
  if (int64_t(sizes.size()) != x.ndim())
    throw ShapeError("slice_sizes " + tuple_str(sizes) + " must have one entry per dimension of " +
                     tuple_str(x.shape));
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] < 0 || sizes[i] > x.shape[i])
      throw ShapeError("slice_sizes " + tuple_str(sizes) + " do not fit in shape " + tuple_str(x.shape));
  return {with_shape(x, sizes)};
}

std::vector<Array> dynamic_slice_impl(const std::vector<Array>& a, const Params& p,
                                      const std::vector<ShapedArray>& out) {
  const auto& sizes = param_ints(p, "slice_sizes");
  auto starts = clamped_starts(a, 1, a[0].shape(), sizes);
  auto st = strides_of(a[0].shape());
  Array o = Array::empty(out[0]);
  detail::copy_strided(out_bytes(o), 0, strides_of(sizes), in_bytes(a[0]), offset_of(starts, st), st, sizes,
                       itemsize(out[0].dtype));
  return {o};
}

// ---- dynamic_update_slice ------------------------------------------------------------------------

std::vector<ShapedArray> dus_shape(const std::vector<ShapedArray>& in, const Params&) {
  if (in.size() < 2) throw ShapeError("needs an operand and an update");
  const auto& x = in[0];
  const auto& u = in[1];
  if (int64_t(in.size()) - 2 != x.ndim())
    throw ShapeError("an operand of rank " + std::to_string(x.ndim()) + " needs " + std::to_string(x.ndim()) +
                     " start indices, got " + std::to_string(in.size() - 2));
  for (size_t i = 2; i < in.size(); ++i) check_index(in[i], "start index " + std::to_string(i - 2), true);
  if (u.ndim() != x.ndim())
    throw ShapeError("update of shape " + tuple_str(u.shape) + " must have the rank of the operand " +
                     tuple_str(x.shape));
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (u.shape[i] > x.shape[i])
      throw ShapeError("update of shape " + tuple_str(u.shape) + " does not fit in operand of shape " +
                       tuple_str(x.shape));
  if (u.dtype != x.dtype)
    throw TypeError(std::string("update dtype ") + dtype_name(u.dtype) + " differs from operand dtype " +
                    dtype_name(x.dtype));
  check_same_memory_kind(x, u);
  return {x};
}

std::vector<Array> dus_impl(const std::vector<Array>& a, const Params&, const std::vector<ShapedArray>& out) {
  const Array& x = a[0];
  const Array& u = a[1];
  auto starts = clamped_starts(a, 2, x.shape(), u.shape());
  auto st = strides_of(x.shape());
  Array o = Array::empty(out[0]);  // every byte is written by the copy of x below
  if (out[0].nbytes() > 0) std::memcpy(out_bytes(o), in_bytes(x), size_t(out[0].nbytes()));
  detail::copy_strided(out_bytes(o), offset_of(starts, st), st, in_bytes(u), 0, strides_of(u.shape()),
                       u.shape(), itemsize(out[0].dtype));
  return {o};
}

// ---- concatenate ---------------------------------------------------------------------------------

std::vector<ShapedArray> concatenate_shape(const std::vector<ShapedArray>& in, const Params& p) {
  if (in.empty()) throw ValueError("concatenate needs at least one operand");
  const int64_t d = param_int(p, "dimension");
  const auto& a0 = in[0];
  if (d < 0 || d >= a0.ndim())
    throw ValueError("dimension " + std::to_string(d) + " is out of range for operands of rank " +
                     std::to_string(a0.ndim()));
  ShapedArray out = a0;
  out.shape[size_t(d)] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const auto& a = in[i];
    if (a.ndim() != a0.ndim())
      throw ShapeError("operands must have equal ranks, got shapes " + tuple_str(a0.shape) + " and " +
                       tuple_str(a.shape));
    for (int64_t k = 0; k < a.ndim(); ++k)
      if (k != d && a.shape[size_t(k)] != a0.shape[size_t(k)])
        throw ShapeError("operand shapes " + tuple_str(a0.shape) + " and " + tuple_str(a.shape) +
                         " differ outside dimension " + std::to_string(d));
    if (a.dtype != a0.dtype)
      throw TypeError(std::string("operands must have equal dtypes, got ") + dtype_name(a0.dtype) + " and " +
                      dtype_name(a.dtype));
    check_same_memory_kind(a0, a);
    out.shape[size_t(d)] += a.shape[size_t(d)];
    out.weak_type = out.weak_type && a.weak_type;
  }
  return {out};
}

std::vector<Array> concatenate_impl(const std::vector<Array>& a, const Params& p,
                                    const std::vector<ShapedArray>& out) {
  const int64_t d = param_int(p, "dimension");
  Array o = Array::empty(out[0]);  // the operands tile dimension d: every element is written
  auto ost = strides_of(out[0].shape);
  int64_t pos = 0;
  for (const auto& x : a) {
    detail::copy_strided(out_bytes(o), pos * ost[size_t(d)], ost, in_bytes(x), 0, strides_of(x.shape()),
                         x.shape(), itemsize(out[0].dtype));
    pos += x.shape()[size_t(d)];
  }
  return {o};
}

// ---- pad -----------------------------------------------------------------------------------------

/// pad's padding_config: flat (low, high, interior) triples, printed as JAX's nested tuples.
class PaddingConfigParam final : public ParamObject {
 public:
  explicit PaddingConfigParam(std::vector<int64_t> flat) : flat_(std::move(flat)) {}
  const std::vector<int64_t>& flat() const { return flat_; }
  std::string str() const override {
    std::string s = "(";
    for (size_t i = 0; i + 2 < flat_.size(); i += 3)
      s += (i ? ", (" : "(") + std::to_string(flat_[i]) + ", " + std::to_string(flat_[i + 1]) + ", " +
           std::to_string(flat_[i + 2]) + ")";
    if (flat_.size() == 3) s += ",";
    return s + ")";
  }
  bool equals(const ParamObject& o) const override {
    auto* q = dynamic_cast<const PaddingConfigParam*>(&o);
    return q && q->flat_ == flat_;
  }

 private:
  std::vector<int64_t> flat_;
};

/// Reads back PaddingConfigParam::str(): `((1, 2, 0), (0, 0, 1))` for param padding_config.
ParamObjectPtr parse_padding_config(const std::string& key, const std::string& text) {
  if (key != "padding_config" || text.rfind("((", 0) != 0) return nullptr;
  std::vector<int64_t> flat;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t end = 0;
      flat.push_back(std::stoll(text.substr(i), &end));
      i += end;
    } else if (c == '(' || c == ')' || c == ',' || c == ' ') {
      ++i;
    } else {
      return nullptr;
    }
  }
  if (flat.size() % 3 != 0) return nullptr;
  return std::make_shared<PaddingConfigParam>(std::move(flat));
}

std::vector<ShapedArray> pad_shape(const std::vector<ShapedArray>& in, const Params& p) {
  if (in.size() != 2) throw ValueError("pad takes an operand and a padding value");
  const auto& x = in[0];
  const auto& pv = in[1];
  auto cfg = lax::padding_config(p);
  if (pv.ndim() != 0) throw ShapeError("padding_value must be rank 0, got shape " + tuple_str(pv.shape));
  if (pv.dtype != x.dtype)
    throw TypeError(std::string("padding_value dtype ") + dtype_name(pv.dtype) +
                    " differs from operand dtype " + dtype_name(x.dtype));
  check_same_memory_kind(x, pv);
  if (int64_t(cfg.size()) != x.ndim())
    throw ShapeError("padding_config has " + std::to_string(cfg.size()) +
                     " entries for an operand of shape " + tuple_str(x.shape));
  ShapedArray out = x;
  out.weak_type = x.weak_type && pv.weak_type;
  for (size_t i = 0; i < cfg.size(); ++i) {
    if (cfg[i].interior < 0)
      throw ShapeError("interior padding must be non-negative, got " + std::to_string(cfg[i].interior));
    const int64_t n = x.shape[i];
    const int64_t o = cfg[i].low + cfg[i].high + n + std::max<int64_t>(n - 1, 0) * cfg[i].interior;
    if (o < 0)
      throw ShapeError("padding (" + std::to_string(cfg[i].low) + ", " + std::to_string(cfg[i].high) + ", " +
                       std::to_string(cfg[i].interior) + ") of dimension " + std::to_string(i) +
                       " of shape " + tuple_str(x.shape) + " gives a negative size " + std::to_string(o));
    out.shape[i] = o;
  }
  return {out};
}

std::vector<Array> pad_impl(const std::vector<Array>& a, const Params& p,
                            const std::vector<ShapedArray>& out) {
  const Array& x = a[0];
  auto cfg = lax::padding_config(p);
  const size_t elem = itemsize(out[0].dtype);
  Array o = Array::empty(out[0]);  // fill_elems writes every element before the copy
  detail::fill_elems(out_bytes(o), out[0].size(), a[1].raw_data(), elem);
  auto ost = strides_of(out[0].shape);
  auto ist = strides_of(x.shape());
  // Operand index i of dim k lands at out position low + i * (interior + 1); negative low/high
  // crop, so only the operand indices landing inside [0, out dim) are copied.
  Shape count(cfg.size());
  std::vector<int64_t> dst_strides(cfg.size());
  int64_t src_off = 0, dst_off = 0;
  for (size_t k = 0; k < cfg.size(); ++k) {
    const int64_t step = cfg[k].interior + 1, n = x.shape()[k], on = out[0].shape[k];
    const int64_t i0 = cfg[k].low >= 0 ? 0 : floordiv(-cfg[k].low + step - 1, step);
    const int64_t last = on - 1 - cfg[k].low;  // largest i * step allowed
    const int64_t i1 = last < 0 ? 0 : std::min(n, floordiv(last, step) + 1);
    count[k] = std::max<int64_t>(i1 - i0, 0);
    dst_strides[k] = ost[k] * step;
    src_off += i0 * ist[k];
    dst_off += (cfg[k].low + i0 * step) * ost[k];
  }
  if (shape_size(count) > 0)
    detail::copy_strided(out_bytes(o), dst_off, dst_strides, in_bytes(x), src_off, ist, count, elem);
  return {o};
}

// ---- gather / scatter_add rows ----------------------------------------------------------------------
// lax::gather(x, indices[, mode, fill_value]) and lax::scatter_add(operand, indices, updates[, mode])
// are rows along dim 0: the general gather/scatter_add (core/primitives/gather_scatter.cc) with the
// indices given a trailing index vector dim of 1, offset_dims/update_window_dims the row dims,
// collapsed/inserted (0,) and start_index_map (0,). PROMISE_IN_BOUNDS checks the rows eagerly here
// to name the user's call site.

Shape row_slice_sizes(const Shape& x) {
  Shape s = x;
  if (!s.empty()) s[0] = 1;
  return s;
}

std::string position_str(int64_t flat, const Shape& s) {
  auto st = strides_of(s);
  std::vector<int64_t> idx(s.size());
  for (size_t i = 0; i < s.size(); ++i) idx[i] = (flat / st[i]) % s[i];
  return tuple_str(idx);
}

/// Throws IndexError for the first index outside [0, n), naming the primitive and the avals of
/// its operand and indices: "gather(f32[2,3], i32[1]): index 5 at position (0,) ...".
void check_rows(const std::vector<int64_t>& idx, const ShapedArray& x, const ShapedArray& indices,
                const char* prim, std::source_location loc) {
  const int64_t n = x.shape[0];
  const Shape& idx_shape = indices.shape;
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i] < 0 || idx[i] >= n)
      throw IndexError(std::string(prim) + "(" + x.str() + ", " + indices.str() + "): index " +
                           std::to_string(idx[i]) + " at position " + position_str(int64_t(i), idx_shape) +
                           " of the indices is out of bounds for dimension 0 of size " + std::to_string(n) +
                           " (mode GatherScatterMode.PROMISE_IN_BOUNDS; pass a mode to clip or fill)",
                       loc);
}

// ---- iota ----------------------------------------------------------------------------------------

std::vector<ShapedArray> iota_shape(const std::vector<ShapedArray>& in, const Params& p) {
  if (!in.empty()) throw ValueError("iota takes no operands");
  const DType d = param_dtype(p, "dtype");
  const auto& shape = param_ints(p, "shape");
  const int64_t dim = param_int(p, "dimension");
  if (!is_integer(d) && !is_floating(d))
    throw TypeError(std::string("iota needs an integer or floating dtype, got ") + dtype_name(d));
  for (auto s : shape)
    if (s < 0) throw ShapeError("shape " + tuple_str(shape) + " has a negative dimension");
  if (dim < 0 || dim >= int64_t(shape.size()))
    throw ValueError("dimension " + std::to_string(dim) + " is out of range for shape " + tuple_str(shape));
  return {ShapedArray{shape, d, false, MemoryKind::device}};
}

std::vector<Array> iota_impl(const std::vector<Array>&, const Params& p,
                             const std::vector<ShapedArray>& out) {
  const int64_t dim = param_int(p, "dimension");
  Array o = Array::empty(out[0]);
  auto st = strides_of(out[0].shape);
  const int64_t len = out[0].shape[size_t(dim)], stride = st[size_t(dim)];
  dispatch_dtype(out[0].dtype, [&]<class T>() {
    T* dst = o.mutable_data<T>();
    for (int64_t i = 0; i < out[0].size(); ++i) {
      const int64_t v = (i / stride) % len;
      if constexpr (std::is_same_v<T, bfloat16>) dst[i] = bfloat16(float(v));
      else dst[i] = T(v);
    }
  });
  return {o};
}

Registrar reg([] {
  auto set = [](const char* name, ShapeRule s, ImplRule i, OpClass op, CostClass cost) {
    auto& p = get_or_create_primitive(name);
    p.shape_rule = std::move(s);
    p.impl = std::move(i);
    set_classes(p, op, cost, FusionClass::normal);
  };
  constexpr OpClass kIndexMap = OpClass::index_map, kOther = OpClass::other;
  constexpr CostClass kMove = CostClass::data_movement;
  set("slice", slice_shape, slice_impl, kIndexMap, kMove);
  set("dynamic_slice", dynamic_slice_shape, dynamic_slice_impl, kIndexMap, kMove);
  set("dynamic_update_slice", dus_shape, dus_impl, kOther, kMove);
  set("concatenate", concatenate_shape, concatenate_impl, kIndexMap, kMove);
  set("pad", pad_shape, pad_impl, kIndexMap, kMove);
  set("iota", iota_shape, iota_impl, kIndexMap, kMove);
  // Duplicated into every consumer group by fusion: computing an index is cheaper than a store.
  get_or_create_primitive("iota").fusion_class = FusionClass::cheap;
  register_param_object_parser(parse_padding_config);
});

/// The concrete value of `x` when it has one (concrete, or a tracer over a concrete primal)
/// and no staging trace is active; otherwise an empty Array. Used for eager index checks that
/// can name the user's call site.
Array eager_value(const Array& x) {
  if (TraceStack::dynamic() != TraceStack::eval()) return Array();
  Array cur = x;
  while (auto* tr = cur.tracer()) {
    auto c = tr->concrete_value();
    if (!c) return Array();
    cur = *c;
  }
  return cur;
}

void eager_check_rows(const Array& x, const Array& indices, const char* prim, std::source_location loc) {
  if (x.ndim() < 1 || !is_integer(indices.dtype())) return;  // the shape rule reports these
  Array iv = eager_value(indices);
  if (iv.defined()) check_rows(read_indices(iv), x.aval(), indices.aval(), prim, loc);
}

}  // namespace

Param lax::padding_config_param(const std::vector<PadConfig>& config) {
  std::vector<int64_t> flat;
  for (auto& c : config) flat.insert(flat.end(), {c.low, c.high, c.interior});
  // Rank 0: `()` reads back as an empty int tuple, so store exactly that.
  if (flat.empty()) return flat;
  return ParamObjectPtr(std::make_shared<PaddingConfigParam>(std::move(flat)));
}

std::vector<lax::PadConfig> lax::padding_config(const Params& params) {
  const Param& v = param_at(params, "padding_config");
  const std::vector<int64_t>* flat = nullptr;
  if (auto* o = std::get_if<ParamObjectPtr>(&v))
    if (auto* pc = dynamic_cast<const PaddingConfigParam*>(o->get())) flat = &pc->flat();
  if (auto* f = std::get_if<std::vector<int64_t>>(&v)) flat = f;
  if (!flat || flat->size() % 3 != 0)
    throw ValueError("parameter 'padding_config' must hold (low, high, interior) triples");
  std::vector<PadConfig> r;
  for (size_t i = 0; i < flat->size(); i += 3) r.push_back({(*flat)[i], (*flat)[i + 1], (*flat)[i + 2]});
  return r;
}

Array lax::slice(const Array& x, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
                 const std::vector<int64_t>& strides, SL loc) {
  Params p{{"start_indices", start}, {"limit_indices", limit}};
  if (strides.empty()) p.set("strides", ParamObjectPtr{});  // printed strides=None, as in JAX
  else p.set("strides", strides);
  return minijax::bind1(primitive("slice"), {x}, p, loc);
}

Array lax::dynamic_slice(const Array& x, const std::vector<Array>& start_indices,
                         const std::vector<int64_t>& slice_sizes, SL loc) {
  std::vector<Array> args{x};
  args.insert(args.end(), start_indices.begin(), start_indices.end());
  return minijax::bind1(primitive("dynamic_slice"), args, Params{{"slice_sizes", slice_sizes}}, loc);
}

Array lax::dynamic_update_slice(const Array& x, const Array& update, const std::vector<Array>& start_indices,
                                SL loc) {
  std::vector<Array> args{x, update};
  args.insert(args.end(), start_indices.begin(), start_indices.end());
  return minijax::bind1(primitive("dynamic_update_slice"), args, {}, loc);
}

Array lax::concatenate(const std::vector<Array>& xs, int64_t dimension, SL loc) {
  if (xs.empty()) throw ValueError("concatenate needs at least one operand", loc);
  const int64_t n = xs[0].ndim();
  if (dimension < 0 && dimension >= -n) dimension += n;
  return minijax::bind1(primitive("concatenate"), xs, Params{{"dimension", dimension}}, loc);
}

Array lax::pad(const Array& x, const Array& padding_value, const std::vector<PadConfig>& config, SL loc) {
  return minijax::bind1(primitive("pad"), {x, padding_value},
                        Params{{"padding_config", padding_config_param(config)}}, loc);
}

const char* lax::gather_scatter_mode_name(GatherScatterMode mode) {
  switch (mode) {
    case GatherScatterMode::CLIP: return "GatherScatterMode.CLIP";
    case GatherScatterMode::FILL_OR_DROP: return "GatherScatterMode.FILL_OR_DROP";
    case GatherScatterMode::PROMISE_IN_BOUNDS: return "GatherScatterMode.PROMISE_IN_BOUNDS";
  }
  throw ValueError("unknown GatherScatterMode " + std::to_string(int(mode)));
}

lax::GatherScatterMode lax::gather_scatter_mode(const Params& params) {
  if (!params.has("mode")) return GatherScatterMode::PROMISE_IN_BOUNDS;
  const Param& v = param_at(params, "mode");
  const std::string* s = std::get_if<std::string>(&v);
  if (s) {
    std::string t = *s;
    if (t.rfind("GatherScatterMode.", 0) == 0) t = t.substr(18);
    if (t == "CLIP") return GatherScatterMode::CLIP;
    if (t == "FILL_OR_DROP") return GatherScatterMode::FILL_OR_DROP;
    if (t == "PROMISE_IN_BOUNDS") return GatherScatterMode::PROMISE_IN_BOUNDS;
  }
  throw ValueError(
      "parameter 'mode' must be GatherScatterMode.CLIP, GatherScatterMode.FILL_OR_DROP or "
      "GatherScatterMode.PROMISE_IN_BOUNDS, got " +
      param_to_string(v));
}

std::optional<double> lax::gather_fill_value(const Params& params) {
  if (!params.has("fill_value")) return std::nullopt;
  const Param& v = param_at(params, "fill_value");
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* i = std::get_if<int64_t>(&v)) return double(*i);
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  if (auto* o = std::get_if<ParamObjectPtr>(&v); o && !*o) return std::nullopt;
  throw ValueError("parameter 'fill_value' must be a number or None, got " + param_to_string(v));
}

double lax::default_fill_value(DType dtype) {
  switch (dtype) {
    case DType::bool_: return 1.0;
    case DType::i32: return double(std::numeric_limits<int32_t>::min());
    case DType::u32: return double(std::numeric_limits<uint32_t>::max());
    default: return is_floating(dtype) ? std::numeric_limits<double>::quiet_NaN() : 0.0;
  }
}

double lax::gather_fill(DType dtype, std::optional<double> fill_value) {
  if (!fill_value) return default_fill_value(dtype);
  const double v = *fill_value;
  if (is_floating(dtype)) return v;
  if (dtype == DType::bool_) return v != 0 ? 1.0 : 0.0;  // NaN != 0: True, as numpy's bool(nan)
  if (std::isnan(v)) return 0.0;
  const double lo = dtype == DType::u32 ? 0.0 : double(std::numeric_limits<int32_t>::min());
  const double hi = dtype == DType::u32 ? double(std::numeric_limits<uint32_t>::max())
                                        : double(std::numeric_limits<int32_t>::max());
  return std::clamp(std::trunc(v), lo, hi);
}

namespace {
// The row gather's/scatter_add's general dimension numbers for indices of rank k and an operand of rank r.
lax::GatherDimensionNumbers row_gather_dims(int64_t k, int64_t r) {
  lax::GatherDimensionNumbers d;
  for (int64_t i = 0; i + 1 < r; ++i) d.offset_dims.push_back(k + i);
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  return d;
}

// indices with a trailing index vector dim of size 1; TypeError/ShapeError for what the row form refuses.
Array row_indices(const Array& x, const Array& indices, const char* prim, std::source_location loc) {
  if (!is_integer(indices.dtype()))
    throw TypeError(std::string(prim) + "(" + x.aval().str() + ", " + indices.aval().str() +
                        "): indices must be an integer array, got " + indices.aval().str(),
                    loc);
  if (x.ndim() < 1)
    throw ShapeError(std::string(prim) + " needs an operand of rank >= 1 (rows are taken along dim 0), got " +
                         x.aval().str(),
                     loc);
  Shape s = indices.shape();
  s.push_back(1);
  return lax::reshape(indices, s, loc);
}
}  // namespace

Array lax::gather(const Array& x, const Array& indices, SL loc) {
  return gather(x, indices, GatherScatterMode::PROMISE_IN_BOUNDS, std::nullopt, loc);
}

Array lax::gather(const Array& x, const Array& indices, GatherScatterMode mode,
                  std::optional<double> fill_value, SL loc) {
  check_gather_scatter_mode("gather", mode, loc);
  Array idx = row_indices(x, indices, "gather", loc);
  if (mode == GatherScatterMode::FILL_OR_DROP && x.shape()[0] == 0) {  // every index is out of range
    Shape out = indices.shape();
    out.insert(out.end(), x.shape().begin() + 1, x.shape().end());
    return full(out, gather_fill(x.dtype(), fill_value), x.dtype());
  }
  if (mode == GatherScatterMode::PROMISE_IN_BOUNDS) eager_check_rows(x, indices, "gather", loc);
  GatherOptions o;
  o.mode = mode;
  o.fill_value = fill_value;
  return gather(x, idx, row_gather_dims(indices.ndim(), x.ndim()), row_slice_sizes(x.shape()), o, loc);
}

Array lax::scatter_add(const Array& operand, const Array& indices, const Array& updates, SL loc) {
  return scatter_add(operand, indices, updates, GatherScatterMode::PROMISE_IN_BOUNDS, loc);
}

Array lax::scatter_add(const Array& operand, const Array& indices, const Array& updates,
                       GatherScatterMode mode, SL loc) {
  check_gather_scatter_mode("scatter_add", mode, loc);
  Array idx = row_indices(operand, indices, "scatter_add", loc);
  if (mode == GatherScatterMode::PROMISE_IN_BOUNDS) eager_check_rows(operand, indices, "scatter_add", loc);
  ScatterOptions o;
  o.mode = mode;
  return scatter_add(operand, idx, updates,
                     mirrored_scatter_dims(row_gather_dims(indices.ndim(), operand.ndim())), o, loc);
}

Array lax::iota(DType dtype, const Shape& shape, int64_t dimension, SL loc) {
  return minijax::bind1(primitive("iota"), {},
                        Params{{"dimension", dimension}, {"dtype", dtype}, {"shape", shape}}, loc);
}

}  // namespace minijax
