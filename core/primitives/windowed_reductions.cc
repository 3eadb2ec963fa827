// minijax windowed reductions: reduce_window_sum, reduce_window_max, reduce_window_min,
// select_and_scatter_add and select_and_gather_add. Owns their shape rules, eager
// implementations, classes and lax:: entry points, and the window geometry (window_geometry.h).
//
// Semantics (XLA's ReduceWindow and JAX's jax/_src/lax/windowed_reductions.py): the operand is
// dilated by base_dilation (holes between elements), padded by (low, high) per dimension
// (negative values crop), and a window of window_dimensions, dilated by window_dilation, moves by
// window_strides; each output element reduces the window's elements. Padding and holes are the
// monoid's identity (0; -inf or the dtype's lowest; +inf or the dtype's highest). Params, as JAX
// prints them (padding flattened): reduce_window_max[base_dilation=(1, 1) padding=(0, 0, 0, 0)
// window_dilation=(1, 1) window_dimensions=(2, 2) window_strides=(2, 2)]; select_and_* add
// select_prim="ge" (max windows) or "le" (min windows). The eager sum adds in window order in
// the dtype (f32 for bf16; i32/u32 wrap); a max/min window's NaN propagates (the first NaN wins).
// The select_and_* primitives pick, in each window, the first element in window order holding
// the window's maximum ("ge") or minimum ("le") — a NaN if there is one, as reduce_window_max
// returns it —, never padding or a hole (a window of padding only selects nothing): the element
// XLA's ge/le selector keeps. select_and_scatter_add takes every window param (JAX's has no
// dilations) so that it is the exact transpose of select_and_gather_add.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/primitives/window_geometry.h"
#include "core/trace.h"
#include "core/windowed_reductions.h"

namespace minijax {

// ---- window geometry (window_geometry.h) -------------------------------------------------------

namespace window_detail {

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

std::string pads_str(const std::vector<int64_t>& flat) {
  std::string s = "(";
  for (size_t i = 0; i + 1 < flat.size(); i += 2)
    s += (i ? ", (" : "(") + std::to_string(flat[i]) + ", " + std::to_string(flat[i + 1]) + ")";
  return s + (flat.size() == 2 ? ",)" : ")");
}

namespace {

int64_t dilate(int64_t n, int64_t d) { return n == 0 ? 0 : (n - 1) * d + 1; }

void check_length(const char* param, const std::vector<int64_t>& v, size_t want, const ShapedArray& x) {
  if (v.size() != want)
    throw ValueError(std::string(param) + " " + ints_str(v) + " has " + std::to_string(v.size()) +
                     " entries but the operand " + x.str() + " has rank " + std::to_string(x.ndim()));
}

// Values past 2^31 would overflow the size arithmetic (a dilated size is (n - 1) * d + 1 in int64).
void check_positive(const char* param, const std::vector<int64_t>& v) {
  constexpr int64_t kMax = (int64_t(1) << 31) - 1;
  for (int64_t e : v)
    if (e <= 0 || e > kMax)
      throw ValueError(std::string(param) + " " + ints_str(v) + " has a value " + (e <= 0 ? "<= 0" : ">= 2^31") +
                       " (each must be in [1, 2^31))");
}

}  // namespace

Shape window_output_shape(const ShapedArray& x, const WindowParams& w) {
  const size_t r = size_t(x.ndim());
  check_length("window_dimensions", w.window_dimensions, r, x);
  check_length("window_strides", w.window_strides, r, x);
  check_length("base_dilation", w.base_dilation, r, x);
  check_length("window_dilation", w.window_dilation, r, x);
  if (w.padding.size() != 2 * r)
    throw ValueError("padding " + pads_str(w.padding) + " has " + std::to_string(w.padding.size() / 2) +
                     " (low, high) pairs but the operand " + x.str() + " has rank " + std::to_string(r));
  check_positive("window_dimensions", w.window_dimensions);
  check_positive("window_strides", w.window_strides);
  check_positive("base_dilation", w.base_dilation);
  check_positive("window_dilation", w.window_dilation);
  for (int64_t pad : w.padding)
    if (pad <= -(int64_t(1) << 31) || pad >= (int64_t(1) << 31))
      throw ValueError("padding " + pads_str(w.padding) + " has a value outside (-2^31, 2^31)");
  Shape out(r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t padded = dilate(x.shape[d], w.base_dilation[d]) + w.pad_lo(int64_t(d)) +
                           w.pad_hi(int64_t(d));
    const int64_t win = dilate(w.window_dimensions[d], w.window_dilation[d]);
    const std::string where = " in dimension " + std::to_string(d) + ": operand " + x.str() +
                              ", window_dimensions " + ints_str(w.window_dimensions) + ", padding " +
                              pads_str(w.padding) + ", base_dilation " + ints_str(w.base_dilation) +
                              ", window_dilation " + ints_str(w.window_dilation);
    if (padded < 0)
      throw ShapeError("the padding crops the operand below zero (size " + std::to_string(padded) + ")" +
                       where);
    if (win > padded)
      throw ShapeError("the dilated window (" + std::to_string(win) + ") is larger than the padded input (" +
                       std::to_string(padded) + ")" + where);
    out[d] = (padded - win) / w.window_strides[d] + 1;
  }
  return out;
}

WindowParams resolve_window(const char* fn, const ShapedArray& x,
                            const std::vector<int64_t>& window_dimensions,
                            const std::vector<int64_t>& window_strides, const lax::Padding& padding,
                            const std::vector<int64_t>& base_dilation,
                            const std::vector<int64_t>& window_dilation, std::source_location loc) {
  try {
    const size_t r = size_t(x.ndim());
    WindowParams w;
    w.window_dimensions = window_dimensions;
    w.window_strides = window_strides;
    w.base_dilation = base_dilation.empty() ? std::vector<int64_t>(r, 1) : base_dilation;
    w.window_dilation = window_dilation.empty() ? std::vector<int64_t>(r, 1) : window_dilation;
    std::vector<std::pair<int64_t, int64_t>> pairs = padding.pairs;
    if (!padding.mode.empty()) {
      check_length("window_dimensions", w.window_dimensions, r, x);
      check_length("window_strides", w.window_strides, r, x);
      check_length("window_dilation", w.window_dilation, r, x);
      check_positive("window_strides", w.window_strides);
      check_positive("window_dilation", w.window_dilation);
      Shape win(r);
      for (size_t d = 0; d < r; ++d) win[d] = dilate(w.window_dimensions[d], w.window_dilation[d]);
      pairs = lax::padtype_to_pads(x.shape, win, w.window_strides, padding.mode);
    }
    for (auto [lo, hi] : pairs) {
      w.padding.push_back(lo);
      w.padding.push_back(hi);
    }
    window_output_shape(x, w);
    return w;
  } catch (const Error& e) {
    detail::rethrow_at(e, std::string(fn) + ": ", loc);
    throw;
  }
}

int64_t window_size(const WindowParams& w) {
  int64_t n = 1;
  for (int64_t d : w.window_dimensions) n *= d;
  return n;
}

void for_each_window(const Shape& shape, const WindowParams& w,
                     const std::function<void(int64_t o, const int64_t* offs)>& f) {
  const size_t r = shape.size();
  const Shape out = window_output_shape(ShapedArray{shape, DType::f32}, w);
  const int64_t n_out = shape_size(out), n_win = window_size(w);
  if (n_out == 0) return;
  // Per dimension, the operand index under (output index, window index), or -1.
  std::vector<std::vector<int64_t>> tab(r);
  std::vector<int64_t> stride(r, 1);
  for (size_t d = r; d-- > 1;) stride[d - 1] = stride[d] * shape[d];
  for (size_t d = 0; d < r; ++d) {
    const int64_t wd = w.window_dimensions[d], b = w.base_dilation[d], dil = dilate(shape[d], b);
    tab[d].resize(size_t(out[d] * wd));
    for (int64_t o = 0; o < out[d]; ++o)
      for (int64_t k = 0; k < wd; ++k) {
        const int64_t p = o * w.window_strides[d] + k * w.window_dilation[d] - w.pad_lo(int64_t(d));
        tab[d][size_t(o * wd + k)] = (p < 0 || p >= dil || p % b != 0) ? -1 : (p / b) * stride[d];
      }
  }
  std::vector<int64_t> cur(size_t(std::max<int64_t>(n_win, 1))), nxt(cur.size()), idx(r, 0);
  for (int64_t o = 0; o < n_out; ++o) {
    size_t n = 1;
    cur[0] = 0;
    for (size_t d = 0; d < r; ++d) {
      const int64_t wd = w.window_dimensions[d];
      const int64_t* t = tab[d].data() + idx[d] * wd;
      size_t m = 0;
      for (size_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < wd; ++k) nxt[m++] = (cur[i] < 0 || t[k] < 0) ? -1 : cur[i] + t[k];
      std::swap(cur, nxt);
      n = m;
    }
    f(o, cur.data());
    for (size_t d = r; d-- > 0;) {  // next output index, row-major
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace window_detail

namespace {

using window_detail::for_each_window;
using window_detail::window_output_shape;
using window_detail::window_size;

enum class Monoid { sum, max, min };

template <class T>
constexpr bool is_float_t = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                            std::is_same_v<T, bfloat16>;
template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, bfloat16>) return double(float(v));
  else return double(v);
}
template <class T>
bool is_nan(T v) {
  if constexpr (is_float_t<T>) return std::isnan(as_double(v));
  else return false;
}
// The identity of max (lowest) or min (highest) in T: -inf/+inf for floats.
template <class T>
T extreme(bool lowest) {
  if constexpr (std::is_same_v<T, bool>) return !lowest;
  else if constexpr (is_float_t<T>) return T(lowest ? -INFINITY : INFINITY);
  else return lowest ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}
// Sum accumulator: the dtype (f32 for bf16; uint32 for integers, wrapping as XLA).
template <class T>
using SumAcc = std::conditional_t<std::is_same_v<T, double>, double,
                                  std::conditional_t<std::is_integral_v<T>, uint32_t, float>>;

void check_numeric(DType d, bool allow_bool, const char* what) {
  if (d == DType::float0 || d == DType::token || (!allow_bool && d == DType::bool_))
    throw TypeError(std::string(what) + " does not accept operands of dtype " + dtype_name(d));
}

std::vector<ShapedArray> monoid_shape_rule(const std::vector<ShapedArray>& in, const Params& p, Monoid m) {
  const ShapedArray& x = in.at(0);
  check_numeric(x.dtype, m != Monoid::sum, "this windowed reduction");
  const WindowParams w = ReduceWindowMonoidParams::from(p).window;
  return {ShapedArray{window_output_shape(x, w), x.dtype, x.weak_type, x.memory_kind}};
}

std::vector<Array> monoid_impl(const std::vector<Array>& args, const Params& p,
                               const std::vector<ShapedArray>& outs, Monoid m) {
  const Array& x = args.at(0);
  const WindowParams w = ReduceWindowMonoidParams::from(p).window;
  Array out = Array::empty(outs.at(0));
  const int64_t n_win = window_size(w);
  dispatch_dtype(x.dtype(), [&]<class T>() {
    const T* src = x.data<T>();
    T* dst = out.mutable_data<T>();
    if constexpr (!std::is_same_v<T, bool>) {
      if (m == Monoid::sum) {
        for_each_window(x.shape(), w, [&](int64_t o, const int64_t* offs) {
          SumAcc<T> acc = SumAcc<T>(0);
          for (int64_t k = 0; k < n_win; ++k)
            if (offs[k] >= 0) acc += SumAcc<T>(src[offs[k]]);
          dst[o] = T(acc);
        });
        return;
      }
    }
    const bool is_max = m == Monoid::max;
    for_each_window(x.shape(), w, [&](int64_t o, const int64_t* offs) {
      T best = extreme<T>(is_max);
      for (int64_t k = 0; k < n_win; ++k) {
        if (offs[k] < 0) continue;
        const T v = src[offs[k]];
        if (is_nan(v)) {  // NaN propagates
          best = v;
          break;
        }
        if (is_max ? as_double(v) > as_double(best) : as_double(v) < as_double(best)) best = v;
      }
      dst[o] = best;
    });
  });
  return {out};
}

// ---- select_and_scatter_add / select_and_gather_add ---------------------------------------------

// Checks the two operands (first: source or tangents) and returns the window params.
SelectAndWindowParams check_select_operands(const std::vector<ShapedArray>& in, const Params& p,
                                            const char* first) {
  const SelectAndWindowParams s = SelectAndWindowParams::from(p);
  const ShapedArray& a = in.at(0);
  const ShapedArray& x = in.at(1);
  check_numeric(x.dtype, false, "select_and_*");
  if (a.dtype != x.dtype)
    throw TypeError(std::string(first) + " and operand must have one dtype, got " + a.str() + " and " +
                    x.str());
  return s;
}

std::vector<ShapedArray> scatter_shape_rule(const std::vector<ShapedArray>& in, const Params& p) {
  const SelectAndWindowParams s = check_select_operands(in, p, "source");
  const ShapedArray &src = in[0], &x = in[1];
  const Shape windowed = window_output_shape(x, s.window);
  if (src.shape != windowed)
    throw ShapeError("source " + src.str() + " must have the windowed shape of operand " + x.str() + ", " +
                     ShapedArray{windowed, x.dtype}.str());
  return {ShapedArray{x.shape, src.dtype, src.weak_type, x.memory_kind}};
}

std::vector<ShapedArray> gather_shape_rule(const std::vector<ShapedArray>& in, const Params& p) {
  const SelectAndWindowParams s = check_select_operands(in, p, "tangents");
  const ShapedArray &t = in[0], &x = in[1];
  if (t.shape != x.shape)
    throw ShapeError("tangents " + t.str() + " and operand " + x.str() + " must have one shape");
  return {ShapedArray{window_output_shape(x, s.window), t.dtype, t.weak_type, x.memory_kind}};
}

// The operand offset the selector picks in one window (-1: the window holds padding only).
template <class T>
int64_t select_in_window(const T* x, const int64_t* offs, int64_t n, bool ge) {
  int64_t sel = -1;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t off = offs[k];
    if (off < 0) continue;
    if (sel < 0) {
      sel = off;
      continue;
    }
    if (is_nan(x[sel])) break;  // a NaN is the window's value: it keeps the selection
    const double v = as_double(x[off]), cur = as_double(x[sel]);
    if (is_nan(x[off]) || (ge ? v > cur : v < cur)) sel = off;  // ties keep the first
  }
  return sel;
}

std::vector<Array> scatter_impl(const std::vector<Array>& args, const Params& p,
                                const std::vector<ShapedArray>& outs) {
  const Array &src = args.at(0), &x = args.at(1);
  const SelectAndWindowParams s = SelectAndWindowParams::from(p);
  Array out = Array::allocate(outs.at(0));  // zeros: accumulated into
  const int64_t n_win = window_size(s.window);
  const bool ge = s.select_prim == "ge";
  dispatch_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* xs = x.data<T>();
      const T* ss = src.data<T>();
      T* dst = out.mutable_data<T>();
      for_each_window(x.shape(), s.window, [&](int64_t o, const int64_t* offs) {
        const int64_t sel = select_in_window(xs, offs, n_win, ge);
        if (sel < 0) return;
        if constexpr (std::is_integral_v<T>) dst[sel] = T(uint32_t(dst[sel]) + uint32_t(ss[o]));
        else if constexpr (std::is_same_v<T, bfloat16>) dst[sel] = T(float(dst[sel]) + float(ss[o]));
        else dst[sel] += ss[o];
      });
    }
  });
  return {out};
}

std::vector<Array> gather_impl(const std::vector<Array>& args, const Params& p,
                               const std::vector<ShapedArray>& outs) {
  const Array &t = args.at(0), &x = args.at(1);
  const SelectAndWindowParams s = SelectAndWindowParams::from(p);
  Array out = Array::empty(outs.at(0));
  const int64_t n_win = window_size(s.window);
  const bool ge = s.select_prim == "ge";
  dispatch_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* xs = x.data<T>();
      const T* ts = t.data<T>();
      T* dst = out.mutable_data<T>();
      for_each_window(x.shape(), s.window, [&](int64_t o, const int64_t* offs) {
        const int64_t sel = select_in_window(xs, offs, n_win, ge);
        dst[o] = sel < 0 ? T(0) : ts[sel];
      });
    }
  });
  return {out};
}

// One flop per window element per output element (the select_and_* compare and add, the
// monoids combine), and the bytes of the operands and the result.
CostRule window_cost(size_t windowed_input) {
  return [windowed_input](const Eqn& e, bool count_bytes, const JaxprCost&) {
    CostEstimate c = operand_and_result_bytes(e, count_bytes);
    const WindowParams w = WindowParams::from(e.params);
    const ShapedArray& x = atom_aval(e.inputs.at(windowed_input));
    c.flops = double(shape_size(window_output_shape(x, w))) * double(window_size(w));
    return c;
  };
}

Registrar reg([] {
  const std::pair<const char*, Monoid> monoids[] = {{"reduce_window_sum", Monoid::sum},
                                                    {"reduce_window_max", Monoid::max},
                                                    {"reduce_window_min", Monoid::min}};
  for (auto [name, m] : monoids) {
    auto& p = get_or_create_primitive(name);
    p.shape_rule = [m](const std::vector<ShapedArray>& in, const Params& ps) {
      return monoid_shape_rule(in, ps, m);
    };
    p.impl = [m](const std::vector<Array>& a, const Params& ps, const std::vector<ShapedArray>& o) {
      return monoid_impl(a, ps, o, m);
    };
    set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
    p.cost = window_cost(0);
  }
  auto& s = get_or_create_primitive("select_and_scatter_add");
  s.shape_rule = scatter_shape_rule;
  s.impl = scatter_impl;
  set_classes(s, OpClass::other, CostClass::custom, FusionClass::normal);
  s.cost = window_cost(1);
  auto& g = get_or_create_primitive("select_and_gather_add");
  g.shape_rule = gather_shape_rule;
  g.impl = gather_impl;
  set_classes(g, OpClass::other, CostClass::custom, FusionClass::normal);
  g.cost = window_cost(1);
});

Array bind_monoid(const char* name, const Array& x, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& strides, const lax::Padding& padding,
                  const std::vector<int64_t>& base, const std::vector<int64_t>& wdil,
                  std::source_location loc) {
  if (!x.defined()) throw ValueError(std::string(name) + ": the operand is an empty Array", loc);
  const WindowParams w = window_detail::resolve_window(name, x.aval(), dims, strides, padding, base, wdil,
                                                       loc);
  return minijax::bind1(primitive(name), {x}, ReduceWindowMonoidParams{w}.to_params(), loc);
}

Array bind_select(const char* name, const Array& a, const Array& x, lax::SelectPrim select_prim,
                  const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                  const std::vector<std::pair<int64_t, int64_t>>& padding, const std::vector<int64_t>& base,
                  const std::vector<int64_t>& wdil, std::source_location loc) {
  if (!a.defined() || !x.defined())
    throw ValueError(std::string(name) + ": an operand is an empty Array", loc);
  SelectAndWindowParams s;
  s.select_prim = select_prim == lax::SelectPrim::ge ? "ge" : "le";
  s.window = window_detail::resolve_window(name, x.aval(), dims, strides, padding, base, wdil, loc);
  return minijax::bind1(primitive(name), {a, x}, s.to_params(), loc);
}

}  // namespace

namespace lax {

Array reduce_window_sum(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const Padding& padding,
                        const std::vector<int64_t>& base_dilation,
                        const std::vector<int64_t>& window_dilation, std::source_location loc) {
  return bind_monoid("reduce_window_sum", x, window_dimensions, window_strides, padding, base_dilation,
                     window_dilation, loc);
}
Array reduce_window_max(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const Padding& padding,
                        const std::vector<int64_t>& base_dilation,
                        const std::vector<int64_t>& window_dilation, std::source_location loc) {
  return bind_monoid("reduce_window_max", x, window_dimensions, window_strides, padding, base_dilation,
                     window_dilation, loc);
}
Array reduce_window_min(const Array& x, const std::vector<int64_t>& window_dimensions,
                        const std::vector<int64_t>& window_strides, const Padding& padding,
                        const std::vector<int64_t>& base_dilation,
                        const std::vector<int64_t>& window_dilation, std::source_location loc) {
  return bind_monoid("reduce_window_min", x, window_dimensions, window_strides, padding, base_dilation,
                     window_dilation, loc);
}

Array select_and_scatter_add(const Array& source, const Array& operand, SelectPrim select_prim,
                             const std::vector<int64_t>& window_dimensions,
                             const std::vector<int64_t>& window_strides,
                             const std::vector<std::pair<int64_t, int64_t>>& padding,
                             const std::vector<int64_t>& base_dilation,
                             const std::vector<int64_t>& window_dilation, std::source_location loc) {
  return bind_select("select_and_scatter_add", source, operand, select_prim, window_dimensions,
                     window_strides, padding, base_dilation, window_dilation, loc);
}
Array select_and_gather_add(const Array& tangents, const Array& operand, SelectPrim select_prim,
                            const std::vector<int64_t>& window_dimensions,
                            const std::vector<int64_t>& window_strides,
                            const std::vector<std::pair<int64_t, int64_t>>& padding,
                            const std::vector<int64_t>& base_dilation,
                            const std::vector<int64_t>& window_dilation, std::source_location loc) {
  return bind_select("select_and_gather_add", tangents, operand, select_prim, window_dimensions,
                     window_strides, padding, base_dilation, window_dilation, loc);
}

}  // namespace lax

}  // namespace minijax
