// minijax PRNG primitives: threefry2x32, iota_2x32_shape, shift_right_logical, shift_left, xor,
// bitcast_convert_type and erf_inv — shape rules, eager implementations and the lax:: functions.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/primitive.h"
#include "core/param_reads.h"
#include "core/primitives/elementwise_family.h"
#include "core/random.h"
#include "core/trace.h"

namespace minijax {

namespace {

using SL = std::source_location;

// ---- helpers ----------------------------------------------------------------------------------

/// numpy broadcasting of several shapes (trailing alignment; dims equal or 1).
Shape broadcast_all(const std::vector<ShapedArray>& in) {
  size_t rank = 0;
  for (auto& a : in) rank = std::max(rank, a.shape.size());
  Shape out(rank, 1);
  for (auto& a : in) {
    size_t off = rank - a.shape.size();
    for (size_t i = 0; i < a.shape.size(); ++i) {
      int64_t d = a.shape[i], &o = out[off + i];
      if (d == o || d == 1) continue;
      if (o == 1) { o = d; continue; }
      std::string msg = "operand shapes are not broadcast-compatible:";
      for (auto& b : in) msg += " " + shape_str(b.shape);
      throw ShapeError(msg);
    }
  }
  return out;
}

/// Element strides of `s` viewed as broadcast to `out` (0 along broadcast dims).
std::vector<int64_t> broadcast_strides(const Shape& s, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  auto own = strides_of(s);
  size_t off = out.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != 1) st[off + i] = own[i];
  return st;
}

MemoryKind common_memory_kind(const std::vector<ShapedArray>& in) {
  if (in.empty()) return MemoryKind::device;
  for (auto& a : in)
    if (a.memory_kind != in[0].memory_kind)
      throw TypeError(std::string("operands live in different memory kinds (") +
                      memory_kind_name(in[0].memory_kind) + " and " +
                      memory_kind_name(a.memory_kind) + ")");
  return in[0].memory_kind;
}

/// Shape rule of a lax-level binary op: equal shapes and dtypes, dtype accepted by `ok`.
ShapedArray binary_rule(const std::vector<ShapedArray>& in, bool (*ok)(DType), const char* kinds) {
  if (in.size() != 2) throw TypeError("expected 2 operands, got " + std::to_string(in.size()));
  const auto &x = in[0], &y = in[1];
  if (!ok(x.dtype) || !ok(y.dtype))
    throw TypeError(std::string("operands must be ") + kinds + ", got " + dtype_name(x.dtype) +
                    " and " + dtype_name(y.dtype));
  if (x.dtype != y.dtype)
    throw TypeError(std::string("operands must have equal dtypes, got ") + dtype_name(x.dtype) +
                    " and " + dtype_name(y.dtype));
  if (x.shape != y.shape)
    throw ShapeError("operands must have equal shapes, got " + shape_str(x.shape) + " and " +
                     shape_str(y.shape));
  return ShapedArray{x.shape, x.dtype, x.weak_type && y.weak_type, common_memory_kind(in)};
}

bool is_int(DType d) { return d == DType::i32 || d == DType::u32; }
bool is_int_or_bool(DType d) { return is_int(d) || d == DType::bool_; }

/// Applies f elementwise to two equal-shape integer (or bool) arrays.
template <class F>
Array binary_impl(const Array& x, const Array& y, const ShapedArray& out_aval, F f) {
  Array out = Array::empty(out_aval);
  int64_t n = out_aval.size();
  dispatch_dtype(out_aval.dtype, [&]<class T>() {
    if constexpr (std::is_integral_v<T>) {
      const T* a = x.data<T>();
      const T* b = y.data<T>();
      T* o = out.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
    } else {
      throw TypeError(std::string("integer operation on dtype ") + dtype_name(out_aval.dtype));
    }
  });
  return out;
}

uint32_t rotl32(uint32_t x, uint32_t r) { return (x << r) | (x >> (32u - r)); }

/// Threefry-2x32 with 20 rounds, key schedule and rotation constants as in JAX's
/// `_threefry2x32_lowering` (and Random123's threefry2x32_R(20, ...)).
void threefry_block(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1, uint32_t& y0,
                    uint32_t& y1) {
  static constexpr uint32_t kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
  for (uint32_t g = 0; g < 5; ++g) {
    for (uint32_t r : kRot[g % 2]) {
      x0 += x1;
      x1 = rotl32(x1, r);
      x1 ^= x0;
    }
    x0 += ks[(g + 1) % 3];
    x1 += ks[(g + 2) % 3] + (g + 1);
  }
  y0 = x0;
  y1 = x1;
}

/// Giles' single-precision erfinv polynomial (as XLA's ErfInv for f32), evaluated in float.
float erf_inv_f32(float x) {
  if (std::isnan(x) || std::fabs(x) > 1.0f) return std::numeric_limits<float>::quiet_NaN();
  if (std::fabs(x) == 1.0f) return std::copysign(std::numeric_limits<float>::infinity(), x);
  float w = -std::log((1.0f - x) * (1.0f + x));
  float p;
  if (w < 5.0f) {
    w = w - 2.5f;
    p = 2.81022636e-08f;
    p = 3.43273939e-07f + p * w;
    p = -3.5233877e-06f + p * w;
    p = -4.39150654e-06f + p * w;
    p = 0.00021858087f + p * w;
    p = -0.00125372503f + p * w;
    p = -0.00417768164f + p * w;
    p = 0.246640727f + p * w;
    p = 1.50140941f + p * w;
  } else {
    w = std::sqrt(w) - 3.0f;
    p = -0.000200214257f;
    p = 0.000100950558f + p * w;
    p = 0.00134934322f + p * w;
    p = -0.00367342844f + p * w;
    p = 0.00573950773f + p * w;
    p = -0.0076224613f + p * w;
    p = 0.00943887047f + p * w;
    p = 1.00167406f + p * w;
    p = 2.83297682f + p * w;
  }
  return p * x;
}

/// f64 erfinv: the f32 polynomial as a start, then Newton steps on erf(y) = x
/// (y -= (erf(y) - x) / (2/sqrt(pi) exp(-y^2))); two steps reach double precision from ~1e-7.
double erf_inv_f64(double x) {
  if (std::isnan(x) || std::fabs(x) > 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (std::fabs(x) == 1.0) return std::copysign(std::numeric_limits<double>::infinity(), x);
  double y = double(erf_inv_f32(float(x)));
  if (!std::isfinite(y)) y = std::copysign(5.9, x);  // |x| rounds to 1 in f32: start in the tail
  const double c = 2.0 / std::sqrt(M_PI);
  for (int i = 0; i < 3; ++i) {
    double d = c * std::exp(-y * y);
    if (d == 0.0) break;
    y -= (std::erf(y) - x) / d;
  }
  return y;
}

// ---- registration -----------------------------------------------------------------------------

Registrar reg_threefry([] {
  auto& p = get_or_create_primitive("threefry2x32");
  elementwise::set_elementwise(p, elementwise::kExpensiveArithmetic);
  p.multiple_results = true;
  p.shape_rule = [](const std::vector<ShapedArray>& in, const Params&) {
    if (in.size() != 4) throw TypeError("expected 4 operands (k1, k2, x1, x2), got " +
                                        std::to_string(in.size()));
    for (auto& a : in)
      if (a.dtype != DType::u32)
        throw TypeError(std::string("arguments to threefry2x32 must have uint32 type, got ") +
                        dtype_name(a.dtype));
    ShapedArray out{broadcast_all(in), DType::u32, false, common_memory_kind(in)};
    return std::vector<ShapedArray>{out, out};
  };
  p.impl = [](const std::vector<Array>& args, const Params&,
              const std::vector<ShapedArray>& out_avals) {
    const Shape& os = out_avals[0].shape;
    Array y0 = Array::empty(out_avals[0]), y1 = Array::empty(out_avals[1]);
    uint32_t* o0 = y0.mutable_data<uint32_t>();
    uint32_t* o1 = y1.mutable_data<uint32_t>();
    const uint32_t* src[4];
    std::vector<int64_t> st[4];
    for (int i = 0; i < 4; ++i) {
      src[i] = args[size_t(i)].data<uint32_t>();
      st[i] = broadcast_strides(args[size_t(i)].shape(), os);
    }
    int64_t n = shape_size(os), rank = int64_t(os.size());
    std::vector<int64_t> idx(size_t(rank), 0);
    int64_t off[4] = {0, 0, 0, 0};
    for (int64_t e = 0; e < n; ++e) {
      threefry_block(src[0][off[0]], src[1][off[1]], src[2][off[2]], src[3][off[3]], o0[e], o1[e]);
      // Advance the multi-index (row-major) and the four broadcast offsets.
      for (int64_t d = rank - 1; d >= 0; --d) {
        size_t du = size_t(d);
        if (++idx[du] < os[du]) {
          for (int i = 0; i < 4; ++i) off[i] += st[i][du];
          break;
        }
        for (int i = 0; i < 4; ++i) off[i] -= st[i][du] * (os[du] - 1);
        idx[du] = 0;
      }
    }
    return std::vector<Array>{y0, y1};
  };
});

Registrar reg_iota_2x32([] {
  auto& p = get_or_create_primitive("iota_2x32_shape");
  p.op_class = OpClass::index_map;
  p.cost_class = CostClass::data_movement;
  p.fusion_class = FusionClass::cheap;
  p.multiple_results = true;
  p.shape_rule = [](const std::vector<ShapedArray>& in, const Params& params) {
    if (!in.empty()) throw TypeError("iota_2x32_shape takes no operands");
    const auto& shape = param_ints(params, "shape");
    for (int64_t d : shape)
      if (d < 0) throw ShapeError("negative dimension in shape " + shape_str(shape));
    ShapedArray out{shape, DType::u32, false, MemoryKind::device};
    return std::vector<ShapedArray>{out, out};
  };
  p.impl = [](const std::vector<Array>&, const Params&, const std::vector<ShapedArray>& out_avals) {
    Array hi = Array::empty(out_avals[0]), lo = Array::empty(out_avals[1]);
    uint32_t* h = hi.mutable_data<uint32_t>();
    uint32_t* l = lo.mutable_data<uint32_t>();
    int64_t n = out_avals[0].size();
    for (int64_t i = 0; i < n; ++i) {
      uint64_t u = uint64_t(i);
      h[i] = uint32_t(u >> 32);
      l[i] = uint32_t(u & 0xffffffffu);
    }
    return std::vector<Array>{hi, lo};
  };
});

Registrar reg_shifts([] {
  {
    auto& p = get_or_create_primitive("shift_right_logical");
    elementwise::set_elementwise(p);
    p.shape_rule = [](const std::vector<ShapedArray>& in, const Params&) {
      return std::vector<ShapedArray>{binary_rule(in, is_int, "integers (i32/u32)")};
    };
    p.impl = [](const std::vector<Array>& a, const Params&, const std::vector<ShapedArray>& o) {
      return std::vector<Array>{binary_impl(a[0], a[1], o[0], []<class T>(T x, T y) -> T {
        uint32_t s = uint32_t(y);
        return s >= 32u ? T(0) : T(uint32_t(x) >> s);
      })};
    };
  }
  {
    auto& p = get_or_create_primitive("shift_left");
    elementwise::set_elementwise(p);
    p.shape_rule = [](const std::vector<ShapedArray>& in, const Params&) {
      return std::vector<ShapedArray>{binary_rule(in, is_int, "integers (i32/u32)")};
    };
    p.impl = [](const std::vector<Array>& a, const Params&, const std::vector<ShapedArray>& o) {
      return std::vector<Array>{binary_impl(a[0], a[1], o[0], []<class T>(T x, T y) -> T {
        uint32_t s = uint32_t(y);
        return s >= 32u ? T(0) : T(uint32_t(x) << s);
      })};
    };
  }
  {
    auto& p = get_or_create_primitive("xor");
    elementwise::set_elementwise(p);
    p.shape_rule = [](const std::vector<ShapedArray>& in, const Params&) {
      return std::vector<ShapedArray>{binary_rule(in, is_int_or_bool, "integers or bools")};
    };
    p.impl = [](const std::vector<Array>& a, const Params&, const std::vector<ShapedArray>& o) {
      return std::vector<Array>{
          binary_impl(a[0], a[1], o[0], []<class T>(T x, T y) -> T { return T(x ^ y); })};
    };
  }
});

Registrar reg_bitcast([] {
  auto& p = get_or_create_primitive("bitcast_convert_type");
  p.op_class = OpClass::other;  // 4 <-> 8-byte bitcasts change the shape: not elementwise
  p.cost_class = CostClass::data_movement;
  p.fusion_class = FusionClass::normal;
  p.shape_rule = [](const std::vector<ShapedArray>& in, const Params& params) {
    if (in.size() != 1) throw TypeError("expected 1 operand");
    DType from = in[0].dtype, to = param_dtype(params, "new_dtype");
    auto ok = [](DType d) {
      return d == DType::i32 || d == DType::u32 || d == DType::f32 || d == DType::f64;
    };
    if (!ok(from) || !ok(to))
      throw TypeError(std::string("bitcast_convert_type supports i32, u32, f32 and f64, got ") +
                      dtype_name(from) + " -> " + dtype_name(to));
    Shape s = in[0].shape;
    if (itemsize(from) == 4 && itemsize(to) == 8) {
      if (s.empty() || s.back() != 2)
        throw ShapeError(std::string("bitcasting ") + dtype_name(from) + " to " + dtype_name(to) +
                         " needs a trailing dimension of size 2, got shape " + shape_str(s));
      s.pop_back();
    } else if (itemsize(from) == 8 && itemsize(to) == 4) {
      s.push_back(2);
    }
    return std::vector<ShapedArray>{ShapedArray{s, to, false, in[0].memory_kind}};
  };
  p.impl = [](const std::vector<Array>& a, const Params&, const std::vector<ShapedArray>& o) {
    Array out = Array::empty(o[0]);
    size_t bytes = size_t(o[0].nbytes());
    if (bytes) std::memcpy(const_cast<void*>(out.raw_data()), a[0].raw_data(), bytes);
    return std::vector<Array>{out};
  };
});

Registrar reg_erf_inv([] {
  auto& p = get_or_create_primitive("erf_inv");
  elementwise::set_elementwise(p, elementwise::kTranscendental);
  p.shape_rule = [](const std::vector<ShapedArray>& in, const Params&) {
    if (in.size() != 1) throw TypeError("expected 1 operand");
    if (!is_floating(in[0].dtype))
      throw TypeError(std::string("erf_inv needs a float operand, got ") + dtype_name(in[0].dtype));
    return std::vector<ShapedArray>{in[0]};
  };
  p.impl = [](const std::vector<Array>& a, const Params&, const std::vector<ShapedArray>& o) {
    Array out = Array::empty(o[0]);
    int64_t n = o[0].size();
    dispatch_dtype(o[0].dtype, [&]<class T>() {
      if constexpr (std::is_same_v<T, float>) {
        const float* x = a[0].data<float>();
        float* y = out.mutable_data<float>();
        for (int64_t i = 0; i < n; ++i) y[i] = erf_inv_f32(x[i]);
      } else if constexpr (std::is_same_v<T, double>) {
        const double* x = a[0].data<double>();
        double* y = out.mutable_data<double>();
        for (int64_t i = 0; i < n; ++i) y[i] = erf_inv_f64(x[i]);
      } else if constexpr (std::is_same_v<T, bfloat16>) {
        const bfloat16* x = a[0].data<bfloat16>();
        bfloat16* y = out.mutable_data<bfloat16>();
        for (int64_t i = 0; i < n; ++i) y[i] = bfloat16(erf_inv_f32(float(x[i])));
      }
    });
    return std::vector<Array>{out};
  };
});

}  // namespace

// ---- lax functions ----------------------------------------------------------------------------

namespace lax {

std::pair<Array, Array> threefry2x32(const Array& k1, const Array& k2, const Array& x1,
                                     const Array& x2, SL loc) {
  auto outs = minijax::bind(primitive("threefry2x32"), {k1, k2, x1, x2}, {}, loc);
  return {outs[0], outs[1]};
}

std::pair<Array, Array> iota_2x32_shape(const Shape& shape, SL loc) {
  auto outs = minijax::bind(primitive("iota_2x32_shape"), {},
                            Params{{"shape", std::vector<int64_t>(shape)}}, loc);
  return {outs[0], outs[1]};
}

Array shift_right_logical(const Array& x, const Array& y, SL loc) {
  return elementwise::bind_broadcasting_binary(primitive("shift_right_logical"), x, y, loc);
}

Array shift_left(const Array& x, const Array& y, SL loc) {
  return elementwise::bind_broadcasting_binary(primitive("shift_left"), x, y, loc);
}

Array xor_(const Array& x, const Array& y, SL loc) {
  return elementwise::bind_broadcasting_binary(primitive("xor"), x, y, loc);
}

Array bitcast_convert_type(const Array& x, DType new_dtype, SL loc) {
  return minijax::bind1(primitive("bitcast_convert_type"), {x}, Params{{"new_dtype", new_dtype}}, loc);
}

Array erf_inv(const Array& x, SL loc) { return minijax::bind1(primitive("erf_inv"), {x}, {}, loc); }

}  // namespace lax

}  // namespace minijax
