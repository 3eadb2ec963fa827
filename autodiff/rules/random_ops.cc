// minijax autodiff and batching rules of the PRNG primitives: threefry2x32, iota_2x32_shape,
// shift_right_logical, shift_left, xor, bitcast_convert_type (integer/bit ops) and erf_inv.
#include <cmath>
#include <numeric>

#include "core/lax.h"
#include "core/numpy.h"
#include "core/primitive.h"
#include "core/random.h"
#include "core/trace.h"
#include "core/views/array_ops.h"

namespace minijax {

namespace {

/// x with dimension `from` moved to the front.
Array move_to_front(const Array& x, int64_t from) {
  if (from == 0) return x;
  std::vector<int64_t> perm{from};
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != from) perm.push_back(i);
  return lax::transpose(x, perm);
}

/// x (unbatched) broadcast to carry a leading batch dimension of size b.
Array add_batch_dim(const Array& x, int64_t b) {
  Shape s{b};
  s.insert(s.end(), x.shape().begin(), x.shape().end());
  std::vector<int64_t> dims(size_t(x.ndim()));
  std::iota(dims.begin(), dims.end(), 1);
  return lax::broadcast_in_dim(x, s, dims);
}

/// Batching of a lax-level elementwise binary primitive (equal operand shapes).
BatchRule binary_batch(const char* name) {
  return [name](const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& params) {
    const Primitive& p = primitive(name);
    if (dims[0] == dims[1])
      return std::pair{minijax::bind(p, args, params), std::vector<int64_t>{dims[0]}};
    int64_t b = dims[0] != kNotMapped ? args[0].shape()[size_t(dims[0])]
                                      : args[1].shape()[size_t(dims[1])];
    std::vector<Array> moved(2);
    for (size_t i = 0; i < 2; ++i)
      moved[i] = dims[i] == kNotMapped ? add_batch_dim(args[i], b) : move_to_front(args[i], dims[i]);
    return std::pair{minijax::bind(p, moved, params), std::vector<int64_t>{0}};
  };
}

/// Integer-valued outputs: the tangent is a symbolic zero (JAX's defjvp_zero).
JvpRule zero_jvp(const char* name) {
  return [name](const std::vector<Array>& primals, const std::vector<Array>&, const Params& params) {
    auto outs = minijax::bind(primitive(name), primals, params);
    return std::pair{outs, std::vector<Array>(outs.size())};
  };
}

Registrar reg([] {
  {
    auto& p = get_or_create_primitive("threefry2x32");
    p.no_jvp_reason = "integer (uint32) values";
    p.no_transpose_reason = "not linear";
    // JAX's defbroadcasting: batched operands get their batch dim in front and are padded with
    // size-1 dims to the common rank, so numpy broadcasting aligns the unbatched ones behind it.
    p.batch = [](const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& params) {
      int64_t rank = 0;
      for (size_t i = 0; i < args.size(); ++i)
        rank = std::max(rank, args[i].ndim() - (dims[i] == kNotMapped ? 0 : 1));
      std::vector<Array> in(args.size());
      for (size_t i = 0; i < args.size(); ++i) {
        if (dims[i] == kNotMapped) { in[i] = args[i]; continue; }
        Array x = move_to_front(args[i], dims[i]);
        Shape s{x.shape()[0]};
        for (int64_t k = x.ndim() - 1; k < rank; ++k) s.push_back(1);
        s.insert(s.end(), x.shape().begin() + 1, x.shape().end());
        in[i] = s == x.shape() ? x : lax::reshape(x, s);
      }
      return std::pair{minijax::bind(primitive("threefry2x32"), in, params),
                       std::vector<int64_t>{0, 0}};
    };
  }
  {
    auto& p = get_or_create_primitive("iota_2x32_shape");
    p.no_jvp_reason = "no operands (integer outputs)";
    p.no_transpose_reason = "not linear";
    p.batch = [](const std::vector<Array>& args, const std::vector<int64_t>&, const Params& params) {
      return std::pair{minijax::bind(primitive("iota_2x32_shape"), args, params),
                       std::vector<int64_t>{kNotMapped, kNotMapped}};
    };
  }
  for (const char* name : {"shift_right_logical", "shift_left", "xor"}) {
    auto& p = get_or_create_primitive(name);
    p.jvp = zero_jvp(name);
    p.no_transpose_reason = "not linear";
    p.batch = binary_batch(name);
  }
  {
    auto& p = get_or_create_primitive("bitcast_convert_type");
    // Bits are not a differentiable function of the value: zero tangent (as for integers).
    p.jvp = zero_jvp("bitcast_convert_type");
    p.no_transpose_reason = "not linear";
    p.batch = [](const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params& params) {
      const Primitive& prim = primitive("bitcast_convert_type");
      bool same_size = itemsize(args[0].dtype()) == itemsize(BitcastConvertTypeParams::from(params).new_dtype);
      if (same_size || dims[0] == kNotMapped)
        return std::pair{minijax::bind(prim, args, params), std::vector<int64_t>{dims[0]}};
      // The trailing dim changes: keep the batch dim out of the way, in front.
      return std::pair{minijax::bind(prim, {move_to_front(args[0], dims[0])}, params),
                       std::vector<int64_t>{0}};
    };
  }
  {
    auto& p = get_or_create_primitive("erf_inv");
    // d/dx erf_inv(x) = sqrt(pi)/2 * exp(erf_inv(x)^2).
    p.jvp = [](const std::vector<Array>& primals, const std::vector<Array>& tangents, const Params&) {
      Array y = lax::erf_inv(primals[0]);
      if (!tangents[0].defined()) return std::pair{std::vector<Array>{y}, std::vector<Array>{Array()}};
      Array c = lax::broadcast_in_dim(scalar(std::sqrt(M_PI) / 2.0, y.dtype()), y.shape(), {});
      Array dy = lax::mul(lax::mul(c, lax::exp(lax::mul(y, y))), tangents[0]);
      return std::pair{std::vector<Array>{y}, std::vector<Array>{dy}};
    };
    p.no_transpose_reason = "not linear";
    p.batch = [](const std::vector<Array>& args, const std::vector<int64_t>& dims, const Params&) {
      return std::pair{std::vector<Array>{lax::erf_inv(args[0])}, std::vector<int64_t>{dims[0]}};
    };
  }
});

}  // namespace

}  // namespace minijax
