// minijax dot_general primitive: tensor contraction with batch and contracting dimensions.
// Owns its shape rule, its eager implementation through core/gemm.h and lax::dot_general.
//
// Params: JAX prints one nested tuple, dimension_numbers=(((1,), (0,)), ((), ())); minijax's
// Params hold flat values only, so the four tuples are stored as separate int-tuple params,
// named as in lax.DotDimensionNumbers' documentation:
//   dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) precision=None
//               preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)]
// (precision is the string "None"; preferred_element_type is the operands' dtype).
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/gemm.h"
#include "core/lax.h"
#include "core/primitive.h"
#include "core/trace.h"

namespace minijax {

namespace {

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() == 1) s += ",";
  return s + ")";
}

lax::DotDimensionNumbers dims_of(const Params& p) {
  return {p.get_ints("lhs_contracting_dimensions"), p.get_ints("rhs_contracting_dimensions"),
          p.get_ints("lhs_batch_dimensions"), p.get_ints("rhs_batch_dimensions")};
}

// Dims of a rank-n operand that are neither batch nor contracting, ascending.
std::vector<int64_t> free_dims(int64_t n, const std::vector<int64_t>& batch,
                               const std::vector<int64_t>& contract) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < n; ++i)
    if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
        std::find(contract.begin(), contract.end(), i) == contract.end())
      r.push_back(i);
  return r;
}

void check_side(const char* side, const ShapedArray& x, const std::vector<int64_t>& batch,
                const std::vector<int64_t>& contract) {
  std::vector<int64_t> all = batch;
  all.insert(all.end(), contract.begin(), contract.end());
  for (int64_t d : all)
    if (d < 0 || d >= x.ndim())
      throw ShapeError(std::string(side) + " dimension " + std::to_string(d) +
                       " out of range for an operand of rank " + std::to_string(x.ndim()) +
                       " (batch " + ints_str(batch) + ", contracting " + ints_str(contract) + ")");
  std::sort(all.begin(), all.end());
  if (std::adjacent_find(all.begin(), all.end()) != all.end())
    throw ShapeError(std::string(side) + " batch " + ints_str(batch) + " and contracting " +
                     ints_str(contract) + " dimensions must be distinct");
}

std::vector<ShapedArray> dot_shape_rule(const std::vector<ShapedArray>& in, const Params& p) {
  const ShapedArray& l = in.at(0);
  const ShapedArray& r = in.at(1);
  auto d = dims_of(p);
  for (DType t : {l.dtype, r.dtype})
    if (t == DType::bool_ || t == DType::float0 || t == DType::token)
      throw TypeError(std::string("operands of dtype ") + dtype_name(t) + " are not supported");
  if (l.dtype != r.dtype)
    throw TypeError(std::string("operand dtypes must be equal, got ") + dtype_name(l.dtype) +
                    " and " + dtype_name(r.dtype));
  if (p.get_dtype("preferred_element_type") != l.dtype)
    throw TypeError(std::string("preferred_element_type must equal the operand dtype ") +
                    dtype_name(l.dtype));
  if (l.memory_kind != r.memory_kind)
    throw TypeError(std::string("operands live in different memory kinds (") +
                    memory_kind_name(l.memory_kind) + " and " + memory_kind_name(r.memory_kind) + ")");
  if (d.lhs_batch.size() != d.rhs_batch.size())
    throw ShapeError("lhs and rhs must have the same number of batch dimensions, got " +
                     ints_str(d.lhs_batch) + " and " + ints_str(d.rhs_batch));
  if (d.lhs_contracting.size() != d.rhs_contracting.size())
    throw ShapeError("lhs and rhs must have the same number of contracting dimensions, got " +
                     ints_str(d.lhs_contracting) + " and " + ints_str(d.rhs_contracting));
  check_side("lhs", l, d.lhs_batch, d.lhs_contracting);
  check_side("rhs", r, d.rhs_batch, d.rhs_contracting);
  for (size_t i = 0; i < d.lhs_batch.size(); ++i)
    if (l.shape[size_t(d.lhs_batch[i])] != r.shape[size_t(d.rhs_batch[i])])
      throw ShapeError("batch dimension sizes differ: lhs dim " + std::to_string(d.lhs_batch[i]) +
                       " has size " + std::to_string(l.shape[size_t(d.lhs_batch[i])]) + ", rhs dim " +
                       std::to_string(d.rhs_batch[i]) + " has size " +
                       std::to_string(r.shape[size_t(d.rhs_batch[i])]));
  for (size_t i = 0; i < d.lhs_contracting.size(); ++i)
    if (l.shape[size_t(d.lhs_contracting[i])] != r.shape[size_t(d.rhs_contracting[i])])
      throw ShapeError("contracting dimension sizes differ: lhs dim " +
                       std::to_string(d.lhs_contracting[i]) + " has size " +
                       std::to_string(l.shape[size_t(d.lhs_contracting[i])]) + ", rhs dim " +
                       std::to_string(d.rhs_contracting[i]) + " has size " +
                       std::to_string(r.shape[size_t(d.rhs_contracting[i])]));
  Shape out;
  for (int64_t b : d.lhs_batch) out.push_back(l.shape[size_t(b)]);
  for (int64_t f : free_dims(l.ndim(), d.lhs_batch, d.lhs_contracting)) out.push_back(l.shape[size_t(f)]);
  for (int64_t f : free_dims(r.ndim(), d.rhs_batch, d.rhs_contracting)) out.push_back(r.shape[size_t(f)]);
  return {ShapedArray{out, l.dtype, l.weak_type && r.weak_type, l.memory_kind}};
}

template <class D, class S>
D convert(S v) {
  if constexpr (std::is_same_v<S, bfloat16>) return D(float(v));
  else if constexpr (std::is_same_v<D, bfloat16>) return bfloat16(float(v));
  else return D(v);
}

// dst (row-major, shape shape[perm]) = src (shape `shape`) with its dims permuted, converted.
template <class S, class D>
void permute_copy(const S* src, const Shape& shape, const std::vector<int64_t>& perm, D* dst) {
  const size_t r = perm.size();
  const int64_t total = shape_size(shape);
  if (total == 0) return;
  auto st = strides_of(shape);
  std::vector<int64_t> pd(r), ps(r), idx(r, 0);
  for (size_t i = 0; i < r; ++i) {
    pd[i] = shape[size_t(perm[i])];
    ps[i] = st[size_t(perm[i])];
  }
  int64_t off = 0;
  for (int64_t o = 0; o < total; ++o) {
    dst[o] = convert<D>(src[off]);
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < pd[d]) { off += ps[d]; break; }
      off -= ps[d] * (pd[d] - 1);
      idx[d] = 0;
    }
  }
}

bool is_identity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != int64_t(i)) return false;
  return true;
}
std::vector<int64_t> cat(std::vector<int64_t> a, const std::vector<int64_t>& b,
                         const std::vector<int64_t>& c) {
  a.insert(a.end(), b.begin(), b.end());
  a.insert(a.end(), c.begin(), c.end());
  return a;
}

// One operand as a stack of row-major matrices: either the original data (when its dims are
// already in [batch, rows, cols] or [batch, cols, rows] order) or a permuted copy.
template <class C>
struct MatOperand {
  std::vector<C> storage;
  const C* data = nullptr;
  char trans = 'N';
  int64_t ld = 1;
};

// want_nt: dims in the order of the untransposed matrix ([batch, m, k] for lhs, [batch, k, n] for
// rhs); alt: the transposed order. rows x cols of the untransposed matrix.
template <class T, class C>
MatOperand<C> as_matrices(const Array& x, const std::vector<int64_t>& want_nt,
                          const std::vector<int64_t>& alt, int64_t rows, int64_t cols) {
  MatOperand<C> m;
  const T* src = x.data<T>();
  if constexpr (std::is_same_v<T, C>) {
    if (is_identity(want_nt)) {
      m.data = src, m.trans = 'N', m.ld = std::max<int64_t>(1, cols);
      return m;
    }
    if (is_identity(alt)) {
      m.data = src, m.trans = 'T', m.ld = std::max<int64_t>(1, rows);
      return m;
    }
  }
  m.storage.resize(size_t(x.size()));
  permute_copy<T, C>(src, x.shape(), want_nt, m.storage.data());
  m.data = m.storage.data(), m.trans = 'N', m.ld = std::max<int64_t>(1, cols);
  return m;
}

std::vector<Array> dot_impl(const std::vector<Array>& args, const Params& p,
                            const std::vector<ShapedArray>& out_avals) {
  const Array& l = args.at(0);
  const Array& r = args.at(1);
  auto d = dims_of(p);
  auto lf = free_dims(l.ndim(), d.lhs_batch, d.lhs_contracting);
  auto rf = free_dims(r.ndim(), d.rhs_batch, d.rhs_contracting);
  auto prod = [](const Shape& s, const std::vector<int64_t>& ds) {
    int64_t n = 1;
    for (int64_t i : ds) n *= s[size_t(i)];
    return n;
  };
  const int64_t B = prod(l.shape(), d.lhs_batch), M = prod(l.shape(), lf),
                K = prod(l.shape(), d.lhs_contracting), N = prod(r.shape(), rf);
  Array out = Array::allocate(out_avals.at(0));
  if (B * M * N == 0) return {out};
  auto l_mk = cat(d.lhs_batch, lf, d.lhs_contracting), l_km = cat(d.lhs_batch, d.lhs_contracting, lf);
  auto r_kn = cat(d.rhs_batch, d.rhs_contracting, rf), r_nk = cat(d.rhs_batch, rf, d.rhs_contracting);
  dispatch_dtype(l.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, bfloat16>) {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      auto A = as_matrices<T, C>(l, l_mk, l_km, M, K);
      auto Bm = as_matrices<T, C>(r, r_kn, r_nk, K, N);
      std::vector<C> tmp;
      C* dst;
      if constexpr (std::is_same_v<T, C>) {
        dst = out.mutable_data<T>();
      } else {
        tmp.resize(size_t(B * M * N));
        dst = tmp.data();
      }
      for (int64_t b = 0; b < B; ++b)
        gemm(A.trans, Bm.trans, M, N, K, C(1), A.data + b * M * K, A.ld, Bm.data + b * K * N,
             Bm.ld, C(0), dst + b * M * N, std::max<int64_t>(1, N));
      if constexpr (!std::is_same_v<T, C>) {
        T* o = out.mutable_data<T>();
        for (size_t i = 0; i < tmp.size(); ++i) o[i] = convert<T>(tmp[i]);
      }
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // No GEMM library covers 32-bit integers: a loop with wrapping (mod 2^32) arithmetic.
      std::vector<uint32_t> a(size_t(l.size())), bm(size_t(r.size()));
      permute_copy<T, uint32_t>(l.data<T>(), l.shape(), l_mk, a.data());
      permute_copy<T, uint32_t>(r.data<T>(), r.shape(), r_kn, bm.data());
      T* o = out.mutable_data<T>();
      std::vector<uint32_t> acc(static_cast<size_t>(N));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < M; ++i) {
          std::fill(acc.begin(), acc.end(), 0u);
          uint32_t* orow = acc.data();
          for (int64_t k = 0; k < K; ++k) {
            uint32_t av = a[size_t((b * M + i) * K + k)];
            const uint32_t* brow = bm.data() + (b * K + k) * N;
            for (int64_t j = 0; j < N; ++j) orow[j] += av * brow[j];
          }
          for (int64_t j = 0; j < N; ++j) o[(b * M + i) * N + j] = T(orow[j]);
        }
    }
  });
  return {out};
}

Registrar reg([] {
  auto& p = get_or_create_primitive("dot_general");
  p.shape_rule = dot_shape_rule;
  p.impl = dot_impl;
});

}  // namespace

namespace lax {

Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims, SL loc) {
  if (!lhs.defined() || !rhs.defined())
    throw ValueError("dot_general: an operand is an empty Array", loc);
  Params p{{"lhs_contracting_dimensions", dims.lhs_contracting},
           {"rhs_contracting_dimensions", dims.rhs_contracting},
           {"lhs_batch_dimensions", dims.lhs_batch},
           {"rhs_batch_dimensions", dims.rhs_batch},
           {"precision", std::string("None")},
           {"preferred_element_type", lhs.dtype()}};
  return minijax::bind1(primitive("dot_general"), {lhs, rhs}, p, loc);
}

}  // namespace lax

}  // namespace minijax
