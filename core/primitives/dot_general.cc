// minijax dot_general primitive: tensor contraction with batch and contracting dimensions.
// Owns its shape rule, its eager implementation through core/gemm.h and lax::dot_general.
//
// Params, as JAX 0.4.30 prints them for jnp.matmul (see docs/jaxpr-format.md):
//   dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32]
// dimension_numbers is one ParamObject holding ((lhs_contracting, rhs_contracting),
// (lhs_batch, rhs_batch)) that prints as that nested tuple of lists and reads back through a
// registered param parser; precision is None (a null ParamObject) or a (lhs, rhs) pair of
// lax::Precision printed `(Precision.HIGHEST, Precision.HIGHEST)` as JAX prints it (read back
// by a registered parser; no effect on CPU); preferred_element_type is the output dtype (the
// operands' dtype unless the caller asked for another one).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <type_traits>

#include "core/gemm.h"
#include "core/lax_params.h"
#include "core/param_reads.h"
#include "core/lax.h"
#include "core/parser.h"
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

lax::DotDimensionNumbers dims_of(const Params& p) { return lax::dot_dimension_numbers(p); }

// `[1, 2]`: how JAX prints the lists jnp.matmul/jnp.dot pass as dimension numbers.
std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// dot_general's dimension_numbers: ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)),
/// printed as JAX prints them, `(([1], [0]), ([], []))`.
class DotDimensionNumbersParam final : public ParamObject {
 public:
  explicit DotDimensionNumbersParam(lax::DotDimensionNumbers d) : d_(std::move(d)) {}
  const lax::DotDimensionNumbers& dims() const { return d_; }
  std::string str() const override {
    return "((" + list_str(d_.lhs_contracting) + ", " + list_str(d_.rhs_contracting) + "), (" +
           list_str(d_.lhs_batch) + ", " + list_str(d_.rhs_batch) + "))";
  }
  bool equals(const ParamObject& o) const override {
    auto* q = dynamic_cast<const DotDimensionNumbersParam*>(&o);
    return q && q->d_.lhs_contracting == d_.lhs_contracting &&
           q->d_.rhs_contracting == d_.rhs_contracting && q->d_.lhs_batch == d_.lhs_batch &&
           q->d_.rhs_batch == d_.rhs_batch;
  }

 private:
  lax::DotDimensionNumbers d_;
};

// Recursive-descent reader of `((L, L), (L, L))` where L is `[i, ...]` or `(i, ...)` (lax.dot's
// tuple spelling `(((1,), (0,)), ((), ()))` is accepted too). Returns false on any other text.
class DimsReader {
 public:
  explicit DimsReader(const std::string& t) : t_(t) {}
  bool read(lax::DotDimensionNumbers* d) {
    if (!eat('(') || !pair(&d->lhs_contracting, &d->rhs_contracting) || !eat(',') ||
        !pair(&d->lhs_batch, &d->rhs_batch) || !eat(')'))
      return false;
    skip();
    return i_ == t_.size();
  }

 private:
  void skip() {
    while (i_ < t_.size() && t_[i_] == ' ') ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < t_.size() && t_[i_] == c) { ++i_; return true; }
    return false;
  }
  bool pair(std::vector<int64_t>* a, std::vector<int64_t>* b) {
    return eat('(') && list(a) && eat(',') && list(b) && eat(')');
  }
  bool list(std::vector<int64_t>* v) {
    skip();
    if (i_ >= t_.size() || (t_[i_] != '[' && t_[i_] != '(')) return false;
    const char close = t_[i_] == '[' ? ']' : ')';
    ++i_;
    while (true) {
      if (eat(close)) return true;
      skip();
      size_t b = i_;
      if (i_ < t_.size() && t_[i_] == '-') ++i_;
      while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_]))) ++i_;
      if (i_ == b || (i_ == b + 1 && t_[b] == '-')) return false;
      v->push_back(std::stoll(t_.substr(b, i_ - b)));
      if (!eat(',') && !(skip(), i_ < t_.size() && t_[i_] == close)) return false;
    }
  }
  const std::string& t_;
  size_t i_ = 0;
};

/// Reads back DotDimensionNumbersParam::str() for param dimension_numbers.
ParamObjectPtr parse_dot_dimension_numbers(const std::string& key, const std::string& text) {
  if (key != "dimension_numbers" || text.rfind("((", 0) != 0) return nullptr;
  lax::DotDimensionNumbers d;
  if (!DimsReader(text).read(&d)) return nullptr;
  return std::make_shared<DotDimensionNumbersParam>(std::move(d));
}

const char* const kPrecisionNames[] = {"DEFAULT", "HIGH", "HIGHEST"};

/// dot_general's precision when given: one lax::Precision per operand, printed as JAX prints the
/// canonical pair, `(Precision.HIGHEST, Precision.HIGHEST)`.
class PrecisionParam final : public ParamObject {
 public:
  explicit PrecisionParam(std::pair<lax::Precision, lax::Precision> p) : p_(p) {}
  const std::pair<lax::Precision, lax::Precision>& pair() const { return p_; }
  std::string str() const override {
    return std::string("(Precision.") + lax::precision_name(p_.first) + ", Precision." +
           lax::precision_name(p_.second) + ")";
  }
  bool equals(const ParamObject& o) const override {
    auto* q = dynamic_cast<const PrecisionParam*>(&o);
    return q && q->p_ == p_;
  }

 private:
  std::pair<lax::Precision, lax::Precision> p_;
};

/// Reads back PrecisionParam::str() for param precision (`None` stays a null object).
ParamObjectPtr parse_precision(const std::string& key, const std::string& text) {
  if (key != "precision" || text.rfind("(Precision.", 0) != 0) return nullptr;
  auto one = [&](size_t& at, lax::Precision* out) {
    static const std::string kPrefix = "Precision.";
    if (text.compare(at, kPrefix.size(), kPrefix) != 0) return false;
    at += kPrefix.size();
    for (int i = 2; i >= 0; --i) {  // HIGHEST before HIGH
      const std::string n = kPrecisionNames[i];
      if (text.compare(at, n.size(), n) == 0) {
        at += n.size();
        *out = lax::Precision(i);
        return true;
      }
    }
    return false;
  };
  size_t at = 1;
  lax::Precision a, b;
  if (!one(at, &a) || text.compare(at, 2, ", ") != 0) return nullptr;
  at += 2;
  if (!one(at, &b) || at + 1 != text.size() || text[at] != ')') return nullptr;
  return std::make_shared<PrecisionParam>(std::pair{a, b});
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
  const DType out_dtype = param_dtype(p, "preferred_element_type");
  lax::detail::check_preferred_element_type(l.dtype, out_dtype);
  if (p.has("precision")) {
    auto* o = std::get_if<ParamObjectPtr>(&param_at(p, "precision"));
    if (!o || (*o && !dynamic_cast<const PrecisionParam*>(o->get())))
      throw TypeError("parameter 'precision' must be None or a (lhs, rhs) pair of Precision values");
  }
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
  // Weak only when both operands are and no other output dtype was asked (as jnp.matmul).
  return {ShapedArray{out, out_dtype, l.weak_type && r.weak_type && out_dtype == l.dtype, l.memory_kind}};
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

// The product in the operands' own dtype (out_avals[0].dtype == the operands' dtype).
std::vector<Array> dot_compute(const std::vector<Array>& args, const Params& p,
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
  // Uninitialised: GEMM runs with beta = 0 (C is written, never read; k = 0 stores zeros, see
  // core/gemm.cc) and the integer loop stores every element.
  Array out = Array::empty(out_avals.at(0));
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

// Eager convert_element_type (no tracing: the impl runs on concrete values).
Array converted(const Array& x, DType to) {
  static const Primitive& cvt = primitive("convert_element_type");
  ShapedArray a = x.aval();
  a.dtype = to;
  a.weak_type = false;
  return cvt.impl({x}, Params{{"new_dtype", to}, {"weak_type", false}}, {a}).at(0);
}

// A preferred_element_type other than the operands' dtype: the operands converted to the
// accumulation dtype (lax::detail::dot_accumulation_dtype), the product there, then converted
// to the output dtype.
std::vector<Array> dot_impl(const std::vector<Array>& args, const Params& p,
                            const std::vector<ShapedArray>& out_avals) {
  const DType in = args.at(0).dtype(), out = out_avals.at(0).dtype;
  if (in == out) return dot_compute(args, p, out_avals);
  const DType acc = lax::detail::dot_accumulation_dtype(in, out);
  std::vector<Array> ops = args;
  if (acc != in)
    for (Array& a : ops) a = converted(a, acc);
  ShapedArray acc_aval = out_avals[0];
  acc_aval.dtype = acc;
  Array res = dot_compute(ops, p, {acc_aval}).at(0);
  return {acc == out ? res : converted(res, out)};
}

Registrar reg([] {
  auto& p = get_or_create_primitive("dot_general");
  p.shape_rule = dot_shape_rule;
  p.impl = dot_impl;
  set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
  // 2 flops (a multiply and an add) per output element and contracted index.
  p.cost = [](const Eqn& e, bool count_bytes, const JaxprCost&) {
    CostEstimate c = operand_and_result_bytes(e, count_bytes);
    const auto d = lax::dot_dimension_numbers(e.params);
    double k = 1;
    for (int64_t ax : d.lhs_contracting) k *= double(atom_aval(e.inputs[0]).shape[size_t(ax)]);
    c.flops = 2 * double(e.outputs[0].aval().size()) * k;
    return c;
  };
  register_param_object_parser(parse_dot_dimension_numbers);
  register_param_object_parser(parse_precision);
});

}  // namespace

namespace lax {

Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims, SL loc) {
  if (!lhs.defined() || !rhs.defined())
    throw ValueError("dot_general: an operand is an empty Array", loc);
  return minijax::bind1(primitive("dot_general"), {lhs, rhs}, dot_general_params(dims, lhs.dtype()), loc);
}

Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims, const DotOptions& options,
                  SL loc) {
  if (!lhs.defined() || !rhs.defined())
    throw ValueError("dot_general: an operand is an empty Array", loc);
  const auto precision = options.precision.resolve("dot_general", loc);
  const DType out = options.preferred_element_type.value_or(lhs.dtype());
  return minijax::bind1(primitive("dot_general"), {lhs, rhs}, dot_general_params(dims, precision, out), loc);
}

const char* precision_name(Precision p, SL loc) {
  const int i = int(p);
  if (i < 0 || i > 2)
    throw ValueError("precision_name: " + std::to_string(i) + " is not a Precision (DEFAULT = 0, HIGH = 1, HIGHEST = 2)",
                     loc);
  return kPrecisionNames[i];
}

DotPrecision::DotPrecision(Precision p) : operands(std::pair{p, p}) {}
DotPrecision::DotPrecision(Precision lhs, Precision rhs) : operands(std::pair{lhs, rhs}) {}
DotPrecision::DotPrecision(const char* s) : names({s ? s : "", s ? s : ""}) {}
DotPrecision::DotPrecision(const std::string& s) : names({s, s}) {}
DotPrecision::DotPrecision(const std::string& lhs, const std::string& rhs) : names({lhs, rhs}) {}

std::optional<std::pair<Precision, Precision>> DotPrecision::resolve(const char* fn, SL loc) const {
  if (!names) return operands;
  // jax/_src/lax/lax.py's _precision_strings.
  static const std::pair<const char*, Precision> kSpellings[] = {
      {"highest", Precision::HIGHEST}, {"float32", Precision::HIGHEST}, {"high", Precision::HIGH},
      {"bfloat16_3x", Precision::HIGH}, {"tensorfloat32", Precision::HIGH}, {"default", Precision::DEFAULT},
      {"bfloat16", Precision::DEFAULT}, {"fastest", Precision::DEFAULT}};
  auto one = [&](const std::string& s) {
    for (auto& [name, p] : kSpellings)
      if (s == name) return p;
    throw ValueError(std::string(fn) + ": precision '" + s +
                         "' is not one of 'highest', 'float32', 'high', 'bfloat16_3x', 'tensorfloat32', "
                         "'default', 'bfloat16', 'fastest' (JAX's DotAlgorithmPreset names are not supported)",
                     loc);
  };
  return std::pair{one(names->first), one(names->second)};
}

Param dot_dimension_numbers_param(const DotDimensionNumbers& dims) {
  return ParamObjectPtr(std::make_shared<DotDimensionNumbersParam>(dims));
}

DotDimensionNumbers dot_dimension_numbers(const Params& params) {
  if (auto* o = std::get_if<ParamObjectPtr>(&param_at(params, "dimension_numbers")))
    if (auto* d = dynamic_cast<const DotDimensionNumbersParam*>(o->get())) return d->dims();
  throw ValueError("parameter 'dimension_numbers' must hold dot_general dimension numbers "
                   "((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))");
}

Params dot_general_params(const DotDimensionNumbers& dims, DType preferred_element_type) {
  return dot_general_params(dims, std::nullopt, preferred_element_type);
}

Params dot_general_params(const DotDimensionNumbers& dims,
                          const std::optional<std::pair<Precision, Precision>>& precision,
                          DType preferred_element_type) {
  ParamObjectPtr prec;
  if (precision) prec = std::make_shared<PrecisionParam>(*precision);
  return Params{{"dimension_numbers", dot_dimension_numbers_param(dims)},
                {"precision", prec},
                {"preferred_element_type", preferred_element_type}};
}

Param precision_param(const std::optional<std::pair<Precision, Precision>>& precision) {
  ParamObjectPtr prec;
  if (precision) prec = std::make_shared<PrecisionParam>(*precision);
  return prec;
}

std::optional<std::pair<Precision, Precision>> dot_precision(const Params& params) {
  if (!params.has("precision")) return std::nullopt;
  if (auto* o = std::get_if<ParamObjectPtr>(&param_at(params, "precision"))) {
    if (!*o) return std::nullopt;
    if (auto* q = dynamic_cast<const PrecisionParam*>(o->get())) return q->pair();
  }
  throw ValueError("parameter 'precision' must be None or a (lhs, rhs) pair of Precision values");
}

namespace detail {

void check_preferred_element_type(DType in, DType out) {
  const bool ok = out == in || (is_floating(in) && is_floating(out)) || (is_integer(in) && is_floating(out));
  if (!ok)
    throw TypeError(std::string("preferred_element_type ") + dtype_name(out) + " is incompatible with operands of " +
                    dtype_name(in) +
                    " (as JAX: floating operands take a floating output, integer operands their own dtype "
                    "or a floating one)");
}

DType dot_accumulation_dtype(DType in, DType out) {
  if (in == out) return in;
  if (is_integer(in)) return out;  // to a float: operands converted (XLA's operand upcasting)
  return itemsize(out) > itemsize(in) ? out : in;  // wider float: upcast; narrower: round the result
}

}  // namespace detail

}  // namespace lax

}  // namespace minijax
