// minijax conv_general_dilated primitive: JAX's general dilated convolution (XLA's ConvGeneralDilated).
// Owns its registration, shape and dtype rules, cost rule and the lax:: functions of core/convolution.h.
//
// Params (ConvParams, core/views/windowed.h), printed as JAX prints the equation but with the
// dimension numbers as three tuples:
//   conv_general_dilated[batch_group_count=1 feature_group_count=1 lhs_dilation=(1, 1)
//     lhs_spec=(0, 1, 2, 3) out_spec=(0, 1, 2, 3) padding=(0, 0, 0, 0) precision=None
//     preferred_element_type=None rhs_dilation=(1, 1) rhs_spec=(0, 1, 2, 3) window_strides=(1, 1)]
// Sources: jax/_src/lax/convolution.py (v0.7.0: conv_general_dilated, conv_dimension_numbers,
// conv_general_permutations, _conv_general_dilated_shape_rule, _conv_general_dilated_dtype_rule,
// _conv_transpose_padding, conv_transpose), jax/_src/lax/lax.py (padtype_to_pads,
// _validate_preferred_element_type) and XLA's HloCostAnalysis::HandleConvolution (the flops).
// Deliberate differences from JAX, from the issue that added it: a padded input smaller than the
// dilated window is a ShapeError (JAX returns an empty spatial dim), group-count mismatches are a
// ShapeError (JAX: ValueError), and bad dimension-number strings a ValueError (JAX: TypeError).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <utility>

#include "core/convolution.h"
#include "core/lax_params.h"
#include "core/primitive.h"
#include "core/primitives/convolution_eager.h"
#include "core/trace.h"
#include "core/views/windowed.h"

namespace minijax {

namespace {

using Ints = std::vector<int64_t>;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;
using conv_detail::dilate_dim;

std::string tuple_str(const Ints& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() == 1) s += ",";
  return s + ")";
}

std::string pairs_str(const Pairs& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", (" : "(") + std::to_string(v[i].first) + ", " + std::to_string(v[i].second) + ")";
  if (v.size() == 1) s += ",";
  return s + ")";
}

Pairs as_pairs(const Ints& flat) {
  Pairs p;
  for (size_t i = 0; i + 1 < flat.size(); i += 2) p.emplace_back(flat[i], flat[i + 1]);
  return p;
}

std::string shapes_str(const Shape& l, const Shape& r) {
  return "lhs shape " + shape_str(l) + " and rhs shape " + shape_str(r);
}

// ---- dimension numbers ---------------------------------------------------------------------------

// JAX's conv_general_permutations: 'N'/'C' (lhs, out) and 'O'/'I' (rhs) once each, no letter
// twice, the same set of spatial letters in all three; spatial dims ordered as the kernel's.
lax::ConvDimensionNumbers numbers_from_strings(const std::vector<std::string>& s, const Shape& l,
                                               const Shape& r) {
  const std::string given = "dimension_numbers ('" + s[0] + "', '" + s[1] + "', '" + s[2] + "')";
  const char pairs[3][2] = {{'N', 'C'}, {'O', 'I'}, {'N', 'C'}};
  for (size_t i = 0; i < 3; ++i) {
    if (s[i].size() != l.size())
      throw ValueError(given + ": string " + std::to_string(i) + " '" + s[i] + "' has " +
                       std::to_string(s[i].size()) + " letters, but " + shapes_str(l, r) + " have rank " +
                       std::to_string(l.size()));
    for (char c : pairs[i])
      if (std::count(s[i].begin(), s[i].end(), c) != 1)
        throw ValueError(given + ": string " + std::to_string(i) + " '" + s[i] + "' must hold '" + c +
                         "' exactly once (" + shapes_str(l, r) + ")");
    for (size_t a = 0; a < s[i].size(); ++a)
      if (s[i].find(s[i][a], a + 1) != std::string::npos)
        throw ValueError(given + ": string " + std::to_string(i) + " '" + s[i] + "' repeats the letter '" +
                         s[i][a] + "' (" + shapes_str(l, r) + ")");
  }
  auto spatial = [&](size_t i) {
    std::string sp;
    for (char c : s[i])
      if (c != pairs[i][0] && c != pairs[i][1]) sp += c;
    std::sort(sp.begin(), sp.end());
    return sp;
  };
  if (spatial(0) != spatial(1) || spatial(2) != spatial(1))
    throw ValueError(given +
                     ": the three strings must name the same spatial letters (a letter of one is unknown " +
                     "to another; " + shapes_str(l, r) + ")");
  lax::ConvDimensionNumbers n;
  Ints* out[3] = {&n.lhs_spec, &n.rhs_spec, &n.out_spec};
  for (size_t i = 0; i < 3; ++i) {
    *out[i] = {int64_t(s[i].find(pairs[i][0])), int64_t(s[i].find(pairs[i][1]))};
    for (char c : s[1])  // spatial dims in the kernel string's order
      if (c != 'O' && c != 'I') out[i]->push_back(int64_t(s[i].find(c)));
  }
  return n;
}

void check_spec(const char* name, const Ints& spec, size_t rank, const std::string& operands) {
  Ints sorted = spec;
  std::sort(sorted.begin(), sorted.end());
  bool perm = sorted.size() == rank;
  for (size_t i = 0; perm && i < rank; ++i) perm = sorted[i] == int64_t(i);
  if (!perm)
    throw ValueError(std::string(name) + " " + tuple_str(spec) + " must be a permutation of the " +
                     std::to_string(rank) + " dimensions of " + operands);
}

void check_ranks(const Shape& l, const Shape& r, const std::string& operands) {
  if (l.size() != r.size())
    throw ValueError("lhs and rhs must have the same rank, got " + std::to_string(l.size()) + " and " +
                     std::to_string(r.size()) + " (" + operands + ")");
  if (l.size() < 3)
    throw ValueError(
        "lhs and rhs must have rank >= 3 (batch, feature and at least one spatial dimension), got " +
        std::to_string(l.size()) + " (" + operands + ")");
}

// The ConvDimensionNumbers of `spec` for operands of shapes l and r; ValueError (plain message).
lax::ConvDimensionNumbers resolve_numbers(const Shape& l, const Shape& r,
                                          const lax::ConvDimensionSpec& spec) {
  check_ranks(l, r, shapes_str(l, r));
  lax::ConvDimensionNumbers n;
  if (spec.numbers) {
    n = *spec.numbers;
  } else if (spec.strings) {
    if (spec.strings->size() != 3)
      throw ValueError("dimension_numbers must be three strings (lhs, rhs, out), got " +
                       std::to_string(spec.strings->size()) + " (" + shapes_str(l, r) + ")");
    n = numbers_from_strings(*spec.strings, l, r);
  } else {
    for (int64_t i = 0; i < int64_t(l.size()); ++i) n.lhs_spec.push_back(i);
    n.rhs_spec = n.out_spec = n.lhs_spec;
  }
  check_spec("dimension_numbers lhs_spec", n.lhs_spec, l.size(), shapes_str(l, r));
  check_spec("dimension_numbers rhs_spec", n.rhs_spec, l.size(), shapes_str(l, r));
  check_spec("dimension_numbers out_spec", n.out_spec, l.size(), shapes_str(l, r));
  return n;
}

// ---- shape and dtype rules ------------------------------------------------------------------------

// Window sizes, strides and dilations past 2^31 would overflow the size arithmetic (a dilated
// size is (n - 1) * d + 1 in int64).
constexpr int64_t kMaxWindowParam = (int64_t(1) << 31) - 1;

void check_spatial(const char* param, const Ints& v, size_t n, const std::string& operands) {
  if (v.size() != n)
    throw ValueError(std::string(param) + "=" + tuple_str(v) + " has " + std::to_string(v.size()) +
                     " entries, but " + operands + " have " + std::to_string(n) + " spatial dimensions");
  for (int64_t x : v)
    if (x <= 0 || x > kMaxWindowParam)
      throw ValueError(std::string(param) + "=" + tuple_str(v) + " must hold positive values below 2^31, got " +
                       std::to_string(x));
}

// JAX's _conv_general_dilated_dtype_rule and _validate_preferred_element_type (minijax has one
// integer width: i32 -> u32 changes signedness and is refused, u32 -> i32 is allowed as in JAX).
DType conv_result_dtype(DType l, DType r, std::optional<DType> pref) {
  for (DType t : {l, r})
    if (t == DType::bool_ || t == DType::float0 || t == DType::token)
      throw TypeError(std::string("operands of dtype ") + dtype_name(t) + " are not supported");
  if (l != r)
    throw TypeError(std::string("operand dtypes must be equal, got ") + dtype_name(l) + " and " +
                    dtype_name(r));
  if (!pref) return l;
  const DType p = *pref;
  bool ok;
  if (is_integer(l) && is_floating(p)) ok = true;
  else if (is_floating(l)) ok = is_floating(p);
  else ok = is_integer(p) && !(l == DType::i32 && is_unsigned(p));
  ok = ok && itemsize(p) >= itemsize(l);
  if (!ok)
    throw TypeError(std::string("preferred_element_type ") + dtype_name(p) +
                    " is incompatible with operands of " + dtype_name(l) +
                    " (as JAX: floating operands take a floating type at least as wide, integer " +
                    "operands a floating type at least as wide or an integer type of the same signedness)");
  return p;
}

// The group counts against the feature and batch sizes (JAX's shape rule, as ShapeError).
void check_groups(const Shape& l, const Shape& r, const ConvParams& p) {
  const int64_t fgc = p.feature_group_count, bgc = p.batch_group_count;
  if (fgc < 1) throw ValueError("feature_group_count must be a positive integer, got " + std::to_string(fgc));
  if (bgc < 1) throw ValueError("batch_group_count must be a positive integer, got " + std::to_string(bgc));
  const int64_t C = l[size_t(p.lhs_spec[1])], N = l[size_t(p.lhs_spec[0])];
  const int64_t O = r[size_t(p.rhs_spec[0])], I = r[size_t(p.rhs_spec[1])];
  if (fgc > 1 && bgc > 1)
    throw ShapeError(
        "at most one of feature_group_count and batch_group_count may be > 1, got feature_group_count=" +
        std::to_string(fgc) + " and batch_group_count=" + std::to_string(bgc));
  if (C % fgc != 0 || C / fgc != I)
    throw ShapeError("feature_group_count=" + std::to_string(fgc) + ": the lhs feature dimension (size " +
                     std::to_string(C) + ") must equal the kernel's input features (size " +
                     std::to_string(I) + ") times feature_group_count");
  if (O % fgc != 0)
    throw ShapeError("feature_group_count=" + std::to_string(fgc) +
                     " must divide the kernel's output features (size " + std::to_string(O) + ")");
  if (N % bgc != 0)
    throw ShapeError("batch_group_count=" + std::to_string(bgc) +
                     " must divide the lhs batch dimension (size " + std::to_string(N) + ")");
  if (O % bgc != 0)
    throw ShapeError("batch_group_count=" + std::to_string(bgc) +
                     " must divide the kernel's output features (size " + std::to_string(O) + ")");
}

// Output spatial sizes in window_strides' order: floor((padded - dilated window) / stride) + 1,
// with the padded input checked to be >= 0 and >= the dilated window.
Ints output_spatial(const Shape& l, const Shape& r, const ConvParams& p) {
  Ints out;
  for (int64_t i = 0; i < p.num_spatial(); ++i) {
    const size_t s = size_t(i);
    const int64_t in = l[size_t(p.lhs_spec[s + 2])], k = r[size_t(p.rhs_spec[s + 2])];
    if (std::abs(p.pad_lo(i)) > kMaxWindowParam || std::abs(p.pad_hi(i)) > kMaxWindowParam)
      throw ValueError("padding=" + pairs_str(as_pairs(p.padding)) + " has a value outside (-2^31, 2^31)");
    const int64_t dilated = dilate_dim(in, p.lhs_dilation[s]);
    const int64_t padded = dilated + p.pad_lo(i) + p.pad_hi(i), window = dilate_dim(k, p.rhs_dilation[s]);
    const std::string where = "spatial dimension " + std::to_string(i) + " (lhs size " + std::to_string(in) +
                              ", lhs_dilation " + std::to_string(p.lhs_dilation[s]) + ", padding " +
                              pairs_str(as_pairs(p.padding)) + ")";
    if (padded < 0)
      throw ShapeError("the padding crops " + where + " below zero (padded size " + std::to_string(padded) +
                       ")");
    if (padded < window)
      throw ShapeError("the padded input of " + where + " has size " + std::to_string(padded) +
                       ", smaller than the dilated window (kernel size " + std::to_string(k) +
                       ", rhs_dilation " + std::to_string(p.rhs_dilation[s]) + ": " + std::to_string(window) +
                       ")");
    out.push_back((padded - window) / p.window_strides[s] + 1);
  }
  return out;
}

std::vector<ShapedArray> conv_shape_rule(const std::vector<ShapedArray>& in, const Params& params) {
  if (in.size() != 2) throw ValueError("takes 2 operands (lhs, rhs), got " + std::to_string(in.size()));
  const ShapedArray& l = in[0];
  const ShapedArray& r = in[1];
  const ConvParams p = ConvParams::from(params);
  const DType out_dtype = conv_result_dtype(l.dtype, r.dtype, p.preferred_element_type);
  if (l.memory_kind != r.memory_kind)
    throw TypeError(std::string("operands live in different memory kinds (") +
                    memory_kind_name(l.memory_kind) + " and " + memory_kind_name(r.memory_kind) + ")");
  const std::string operands = shapes_str(l.shape, r.shape);
  check_ranks(l.shape, r.shape, operands);
  check_spec("lhs_spec", p.lhs_spec, l.shape.size(), operands);
  check_spec("rhs_spec", p.rhs_spec, l.shape.size(), operands);
  check_spec("out_spec", p.out_spec, l.shape.size(), operands);
  const size_t n = l.shape.size() - 2;
  check_spatial("window_strides", p.window_strides, n, operands);
  check_spatial("lhs_dilation", p.lhs_dilation, n, operands);
  check_spatial("rhs_dilation", p.rhs_dilation, n, operands);
  check_groups(l.shape, r.shape, p);
  const Ints spatial = output_spatial(l.shape, r.shape, p);
  Shape out(l.shape.size());
  out[size_t(p.out_spec[0])] = l.shape[size_t(p.lhs_spec[0])] / p.batch_group_count;
  out[size_t(p.out_spec[1])] = r.shape[size_t(p.rhs_spec[0])];
  for (size_t i = 0; i < n; ++i) out[size_t(p.out_spec[i + 2])] = spatial[i];
  return {ShapedArray{out, out_dtype, l.weak_type && r.weak_type && out_dtype == l.dtype, l.memory_kind}};
}

// XLA's HloCostAnalysis::HandleConvolution: 2 flops per multiply-add, the multiply-adds being
// (input features / feature_group_count) * output features * (input batch / batch_group_count)
// times, per spatial dim, the (kernel, output) index pairs that read an input element (not
// padding, not an lhs-dilation hole). Without padding or lhs dilation that is 2 * output elements
// * kernel input features * kernel spatial size.
CostEstimate conv_cost(const Eqn& e, bool count_bytes, const JaxprCost&) {
  CostEstimate c = operand_and_result_bytes(e, count_bytes);
  const ConvParams p = conv_params(e);
  const auto g = conv_detail::conv_geometry(atom_aval(e.inputs.at(0)).shape, atom_aval(e.inputs.at(1)).shape,
                                            p);
  double positions = 1;
  for (size_t d = 0; d < g.num_spatial(); ++d) {
    const Ints t = conv_detail::input_index_table(g, d);
    positions *= double(std::count_if(t.begin(), t.end(), [](int64_t x) { return x >= 0; }));
  }
  const double fma = double(g.features / g.feature_groups) * double(g.out_features) *
                     double(g.batch / g.batch_groups) * positions;
  c.flops = 2 * fma;
  return c;
}

Registrar reg([] {
  auto& p = get_or_create_primitive("conv_general_dilated");
  p.shape_rule = conv_shape_rule;
  p.impl = [](const std::vector<Array>& args, const Params& params, const std::vector<ShapedArray>& out) {
    return std::vector<Array>{
        conv_detail::conv_eager(args.at(0), args.at(1), ConvParams::from(params), out.at(0))};
  };
  set_classes(p, OpClass::other, CostClass::custom, FusionClass::normal);
  p.cost = conv_cost;
});

// ---- the lax functions' argument handling -----------------------------------------------------------

// JAX's padtype_to_pads; ValueError (plain message) for an unknown string.
Pairs pads_of_mode(const Ints& in, const Ints& window, const Ints& strides, const std::string& mode) {
  std::string m = mode;
  for (char& c : m) c = char(std::toupper(static_cast<unsigned char>(c)));
  Pairs pads;
  if (m == "VALID") return Pairs(in.size(), {0, 0});
  if (m != "SAME" && m != "SAME_LOWER")
    throw ValueError("padding '" + mode +
                     "' is not one of 'SAME', 'SAME_LOWER', 'VALID' or (low, high) pairs");
  if (window.size() != in.size() || strides.size() != in.size())
    throw ValueError("padding '" + mode + "': in_shape " + tuple_str(in) + ", window_shape " +
                     tuple_str(window) + " and strides " + tuple_str(strides) +
                     " must have one entry per dimension");
  for (size_t i = 0; i < in.size(); ++i) {
    if (strides[i] <= 0) throw ValueError("strides " + tuple_str(strides) + " must hold positive values");
    const int64_t out = (in[i] + strides[i] - 1) / strides[i];
    const int64_t pad = std::max<int64_t>(0, (out - 1) * strides[i] + window[i] - in[i]);
    if (m == "SAME") pads.emplace_back(pad / 2, pad - pad / 2);
    else pads.emplace_back(pad - pad / 2, pad / 2);
  }
  return pads;
}

struct ConvCall {
  const Ints& window_strides;
  const lax::Padding& padding;
  Ints lhs_dilation, rhs_dilation;
  const lax::ConvDimensionSpec& dimension_numbers;
  int64_t feature_group_count, batch_group_count;
  std::optional<std::pair<lax::Precision, lax::Precision>> precision;
  std::optional<DType> preferred_element_type;
};

// The equation's params of a user's call (JAX's conv_general_dilated before the bind); ValueError
// (plain message) for bad dimension numbers, strides, dilations or padding.
ConvParams conv_call_params(const ShapedArray& l, const ShapedArray& r, ConvCall c) {
  const lax::ConvDimensionNumbers dn = resolve_numbers(l.shape, r.shape, c.dimension_numbers);
  const size_t n = l.shape.size() - 2;
  const std::string operands = "lhs " + l.str() + " and rhs " + r.str();
  if (c.lhs_dilation.empty()) c.lhs_dilation.assign(n, 1);
  if (c.rhs_dilation.empty()) c.rhs_dilation.assign(n, 1);
  check_spatial("window_strides", c.window_strides, n, operands);
  check_spatial("lhs_dilation", c.lhs_dilation, n, operands);
  check_spatial("rhs_dilation", c.rhs_dilation, n, operands);
  Pairs pads = c.padding.pairs;
  if (!c.padding.mode.empty()) {
    if (std::any_of(c.lhs_dilation.begin(), c.lhs_dilation.end(), [](int64_t d) { return d != 1; }))
      // JAX's conv_general_dilated refuses this too: the padding of a transposed convolution
      // depends on its strides, which conv_transpose's _conv_transpose_padding resolves.
      throw ValueError("string padding '" + c.padding.mode + "' with lhs_dilation=" + tuple_str(c.lhs_dilation) +
                       " is ambiguous (as in JAX): give (low, high) pairs or use conv_transpose");
    Ints in, window;
    for (size_t i = 0; i < n; ++i) {
      in.push_back(l.shape[size_t(dn.lhs_spec[i + 2])]);
      window.push_back(dilate_dim(r.shape[size_t(dn.rhs_spec[i + 2])], c.rhs_dilation[i]));
    }
    pads = pads_of_mode(in, window, c.window_strides, c.padding.mode);
  } else if (pads.size() != n) {
    throw ValueError("padding " + pairs_str(pads) + " has " + std::to_string(pads.size()) +
                     " (low, high) pairs, but " + operands + " have " + std::to_string(n) +
                     " spatial dimensions");
  }
  ConvParams p;
  p.window_strides = c.window_strides;
  for (auto [lo, hi] : pads) p.padding.insert(p.padding.end(), {lo, hi});
  p.lhs_dilation = c.lhs_dilation;
  p.rhs_dilation = c.rhs_dilation;
  p.lhs_spec = dn.lhs_spec;
  p.rhs_spec = dn.rhs_spec;
  p.out_spec = dn.out_spec;
  p.feature_group_count = c.feature_group_count;
  p.batch_group_count = c.batch_group_count;
  p.precision = c.precision;
  p.preferred_element_type = c.preferred_element_type;
  return p;
}

// JAX's _conv_transpose_padding for one dim: kernel size k (dilated), stride s.
std::pair<int64_t, int64_t> transpose_padding(int64_t k, int64_t s, const std::string& mode) {
  int64_t len, a;
  if (mode == "SAME") {
    len = k + s - 2;
    a = s > k - 1 ? k - 1 : (len + 1) / 2;
  } else {
    len = k + s - 2 + std::max<int64_t>(k - s, 0);
    a = k - 1;
  }
  return {a, len - a};
}

// conv_transpose's default layout when none is given (JAX's, TensorFlow's convention).
lax::ConvDimensionSpec transpose_default_numbers(size_t rank) {
  switch (rank) {
    case 3: return {"NHC", "HIO", "NHC"};
    case 4: return {"NHWC", "HWIO", "NHWC"};
    case 5: return {"NHWDC", "HWDIO", "NHWDC"};
    default:
      throw ValueError("no default dimension_numbers for operands of rank " + std::to_string(rank) +
                       " (JAX's are for ranks 3, 4, 5): pass dimension_numbers");
  }
}

}  // namespace

namespace lax {

ConvDimensionNumbers conv_dimension_numbers(const Shape& lhs_shape, const Shape& rhs_shape,
                                            const ConvDimensionSpec& spec) {
  try {
    return resolve_numbers(lhs_shape, rhs_shape, spec);
  } catch (const ValueError& e) {
    throw ValueError("conv_dimension_numbers: " + e.message());
  }
}

std::vector<std::pair<int64_t, int64_t>> padtype_to_pads(const Shape& in_shape, const Shape& window_shape,
                                                         const std::vector<int64_t>& strides,
                                                         const std::string& mode) {
  try {
    return pads_of_mode(in_shape, window_shape, strides, mode);
  } catch (const ValueError& e) {
    throw ValueError("padtype_to_pads: " + e.message());
  }
}

Array conv_general_dilated(const Array& lhs, const Array& rhs, const std::vector<int64_t>& window_strides,
                           const Padding& padding, const ConvGeneralDilatedOptions& options,
                           std::source_location loc) {
  if (!lhs.defined() || !rhs.defined())
    throw ValueError("conv_general_dilated: an operand is an empty Array", loc);
  const auto precision = options.precision.resolve("conv_general_dilated", loc);
  ConvParams p;
  try {
    p = conv_call_params(lhs.aval(), rhs.aval(),
                         ConvCall{window_strides, padding, options.lhs_dilation, options.rhs_dilation,
                                  options.dimension_numbers, options.feature_group_count,
                                  options.batch_group_count, precision, options.preferred_element_type});
  } catch (const Error& e) {
    minijax::detail::rethrow_at(e, "conv_general_dilated: ", loc);
    throw;
  }
  return minijax::bind1(primitive("conv_general_dilated"), {lhs, rhs}, p.to_params(), loc);
}

Array conv(const Array& lhs, const Array& rhs, const std::vector<int64_t>& window_strides,
           const Padding& padding, const DotPrecision& precision, std::optional<DType> preferred_element_type,
           std::source_location loc) {
  try {
    ConvGeneralDilatedOptions o;
    o.precision = precision;
    o.preferred_element_type = preferred_element_type;
    return conv_general_dilated(lhs, rhs, window_strides, padding, o, loc);
  } catch (const Error& e) {
    minijax::detail::rethrow_at(e, "conv: ", loc);
    throw;
  }
}

Array conv_with_general_padding(const Array& lhs, const Array& rhs,
                                const std::vector<int64_t>& window_strides, const Padding& padding,
                                const std::vector<int64_t>& lhs_dilation,
                                const std::vector<int64_t>& rhs_dilation, const DotPrecision& precision,
                                std::optional<DType> preferred_element_type, std::source_location loc) {
  try {
    ConvGeneralDilatedOptions o;
    o.lhs_dilation = lhs_dilation;
    o.rhs_dilation = rhs_dilation;
    o.precision = precision;
    o.preferred_element_type = preferred_element_type;
    return conv_general_dilated(lhs, rhs, window_strides, padding, o, loc);
  } catch (const Error& e) {
    minijax::detail::rethrow_at(e, "conv_with_general_padding: ", loc);
    throw;
  }
}

Array conv_transpose(const Array& lhs, const Array& rhs, const std::vector<int64_t>& strides,
                     const Padding& padding, const ConvTransposeOptions& options, std::source_location loc) {
  try {
    if (!lhs.defined() || !rhs.defined()) throw ValueError("an operand is an empty Array");
    check_ranks(lhs.shape(), rhs.shape(), "lhs " + lhs.aval().str() + " and rhs " + rhs.aval().str());
    const bool given = options.dimension_numbers.numbers || options.dimension_numbers.strings;
    const ConvDimensionNumbers dn = resolve_numbers(lhs.shape(), rhs.shape(),
                                                    given ? options.dimension_numbers
                                                          : transpose_default_numbers(lhs.shape().size()));
    const size_t n = lhs.shape().size() - 2;
    const std::string operands = "lhs " + lhs.aval().str() + " and rhs " + rhs.aval().str();
    check_spatial("strides", strides, n, operands);
    Ints rhs_dilation = options.rhs_dilation.empty() ? Ints(n, 1) : options.rhs_dilation;
    check_spatial("rhs_dilation", rhs_dilation, n, operands);
    Padding pads = padding;
    if (padding.mode == "SAME" || padding.mode == "VALID") {
      Pairs p;
      for (size_t i = 0; i < n; ++i)
        p.push_back(transpose_padding(dilate_dim(rhs.shape()[size_t(dn.rhs_spec[i + 2])], rhs_dilation[i]),
                                      strides[i], padding.mode));
      pads = Padding(p);
    }
    Array kernel = rhs;
    if (options.transpose_kernel) {
      // Flip the spatial dims and swap the kernel's input and output feature dims.
      kernel = lax::rev(kernel, Ints(dn.rhs_spec.begin() + 2, dn.rhs_spec.end()), loc);
      Ints perm(size_t(kernel.ndim()));
      for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(i);
      std::swap(perm[size_t(dn.rhs_spec[0])], perm[size_t(dn.rhs_spec[1])]);
      kernel = lax::transpose(kernel, perm, loc);
    }
    ConvGeneralDilatedOptions o;
    o.lhs_dilation = strides;
    o.rhs_dilation = rhs_dilation;
    o.dimension_numbers = dn;
    o.precision = options.precision;
    o.preferred_element_type = options.preferred_element_type;
    return conv_general_dilated(lhs, kernel, Ints(n, 1), pads, o, loc);
  } catch (const Error& e) {
    minijax::detail::rethrow_at(e, "conv_transpose: ", loc);
    throw;
  }
}

}  // namespace lax

}  // namespace minijax
