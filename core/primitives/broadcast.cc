// minijax broadcast_in_dim (shape rule, byte-generic eager impl) and the constant helpers
// lax::scalar, lax::full and lax::zeros_like_aval.
#include <cstring>

#include "core/lax.h"
#include "core/lax_params.h"
#include "core/param_reads.h"
#include "core/primitives/elementwise_family.h"
#include "core/trace.h"

namespace minijax {

namespace {

Registrar reg_broadcast([] {
  auto& p = get_or_create_primitive("broadcast_in_dim");
  // Duplicated into every consumer group by fusion: re-reading the operand is cheaper than a store.
  set_classes(p, OpClass::index_map, CostClass::data_movement, FusionClass::cheap);
  p.shape_rule = [](const std::vector<ShapedArray>& in, const Params& params) {
    elementwise::check_arity(in, 1);
    const ShapedArray& x = in[0];
    if (x.is_token()) throw TypeError("cannot broadcast a token");
    const Shape& shape = param_ints(params, "shape");
    const auto& bd = param_ints(params, "broadcast_dimensions");
    for (int64_t d : shape)
      if (d < 0) throw ShapeError("negative dimension in target shape " + shape_str(shape));
    if (int64_t(bd.size()) != x.ndim())
      throw ShapeError("broadcast_dimensions must have one entry per operand dimension (" +
                       std::to_string(x.ndim()) + "), got " + std::to_string(bd.size()));
    if (x.ndim() > int64_t(shape.size()))
      throw ShapeError("target shape " + shape_str(shape) + " has lower rank than the operand " +
                       shape_str(x.shape));
    for (size_t i = 0; i < bd.size(); ++i) {
      if (bd[i] < 0 || bd[i] >= int64_t(shape.size()))
        throw ShapeError("broadcast dimension " + std::to_string(bd[i]) +
                         " out of range for target shape " + shape_str(shape));
      if (i > 0 && bd[i] <= bd[i - 1])
        throw ShapeError("broadcast_dimensions must be strictly increasing");
      if (x.shape[i] != 1 && x.shape[i] != shape[size_t(bd[i])])
        throw ShapeError("operand dimension " + std::to_string(i) + " of size " +
                         std::to_string(x.shape[i]) + " cannot be broadcast to target dimension " +
                         std::to_string(bd[i]) + " of size " + std::to_string(shape[size_t(bd[i])]) +
                         " (target shape " + shape_str(shape) + ")");
    }
    ShapedArray out = x;
    out.shape = shape;
    return std::vector<ShapedArray>{out};
  };
  p.impl = [](const std::vector<Array>& args, const Params& params,
              const std::vector<ShapedArray>& out_avals) {
    Array out = Array::empty(out_avals[0]);
    const size_t isz = itemsize(out.dtype());
    const int64_t n = out.size();
    if (isz == 0 || n == 0) return std::vector<Array>{out};
    const Array& x = args[0];
    const Shape& shape = out.shape();
    const auto& bd = param_ints(params, "broadcast_dimensions");
    // Stride (in operand elements) of each output dim; 0 where the operand is broadcast.
    const auto xs = strides_of(x.shape());
    std::vector<int64_t> st(shape.size(), 0);
    for (size_t i = 0; i < bd.size(); ++i)
      if (x.shape()[i] != 1) st[size_t(bd[i])] = xs[i];
    const char* px = static_cast<const char*>(x.raw_data());
    char* po = static_cast<char*>(const_cast<void*>(out.raw_data()));
    const size_t r = shape.size();
    if (r == 0) {
      std::memcpy(po, px, isz);
      return std::vector<Array>{out};
    }
    // Odometer over all output dims but the last; the last dim is an inner loop.
    std::vector<int64_t> idx(r, 0);
    const int64_t inner = shape[r - 1], inner_st = st[r - 1];
    int64_t src = 0;  // operand offset of idx (last dim at 0)
    for (int64_t o = 0; o < n; o += inner) {
      char* dst = po + size_t(o) * isz;
      if (inner_st == 0) {
        for (int64_t j = 0; j < inner; ++j) std::memcpy(dst + size_t(j) * isz, px + size_t(src) * isz, isz);
      } else if (inner_st == 1) {
        std::memcpy(dst, px + size_t(src) * isz, size_t(inner) * isz);
      } else {
        for (int64_t j = 0; j < inner; ++j)
          std::memcpy(dst + size_t(j) * isz, px + size_t(src + j * inner_st) * isz, isz);
      }
      for (int64_t d = int64_t(r) - 2; d >= 0; --d) {
        if (++idx[size_t(d)] < shape[size_t(d)]) {
          src += st[size_t(d)];
          break;
        }
        src -= st[size_t(d)] * (shape[size_t(d)] - 1);
        idx[size_t(d)] = 0;
      }
    }
    return std::vector<Array>{out};
  };
});

// A concrete rank-0 array of value v in dtype d and memory kind mk.
Array make_scalar(double v, DType d, bool weak, MemoryKind mk) {
  if (!elementwise::accepts(elementwise::Accept::any_value, d))
    throw TypeError(std::string("no scalar of dtype ") + dtype_name(d));
  Array out = Array::empty(ShapedArray{{}, d, weak, mk});
  dispatch_dtype(d, [&]<class T>() { out.mutable_data<T>()[0] = elementwise::convert_value<T, double>(v); });
  return out;
}

}  // namespace

namespace lax {

Array broadcast_in_dim(const Array& x, const Shape& shape,
                       const std::vector<int64_t>& broadcast_dimensions, SL loc) {
  static const Primitive& p = get_or_create_primitive("broadcast_in_dim");
  return minijax::bind1(p, {x},
                        Params{{"shape", std::vector<int64_t>(shape)},
                               {"broadcast_dimensions", broadcast_dimensions}},
                        loc);
}

Array scalar(double v, DType d, bool weak) { return make_scalar(v, d, weak, MemoryKind::device); }

Array full(const Shape& shape, double v, DType d, bool weak) {
  if (!elementwise::accepts(elementwise::Accept::any_value, d))
    throw TypeError(std::string("cannot fill an array of dtype ") + dtype_name(d));
  for (int64_t s : shape)
    if (s < 0) throw ShapeError("negative dimension in shape " + shape_str(shape));
  Array out = Array::empty(ShapedArray{shape, d, weak, MemoryKind::device});
  dispatch_dtype(d, [&]<class T>() {
    T val = elementwise::convert_value<T, double>(v);
    T* po = out.mutable_data<T>();
    const int64_t n = out.size();
    for (int64_t i = 0; i < n; ++i) po[i] = val;
  });
  return out;
}

Array zeros_like_aval(const ShapedArray& a) {
  if (a.dtype == DType::float0 || a.dtype == DType::token) return Array::allocate(a);
  Array z = make_scalar(0.0, a.dtype, a.weak_type, a.memory_kind);
  if (a.ndim() == 0) return z;
  return broadcast_in_dim(z, a.shape, {});
}

}  // namespace lax
}  // namespace minijax
