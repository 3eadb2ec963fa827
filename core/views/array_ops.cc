// minijax typed views of the array primitives' params (core/views/array_ops.h).
// Owns the only name literals of these primitives outside their registrations, and their checks.
#include "core/views/array_ops.h"
#include "core/views/define_view.h"
#include "core/lax_params.h"
#include "core/param_reads.h"

#include <algorithm>

namespace minijax {
namespace {

const Primitive* prim(const char* name) { return &get_or_create_primitive(name); }

// An optional int tuple stored as None (a null object) or an int tuple; absent reads as None.
std::optional<std::vector<int64_t>> ints_or_none(const Params& p, const char* key) {
  if (!p.has(key)) return std::nullopt;
  const Param& v = param_at(p, key);
  if (auto* o = std::get_if<ParamObjectPtr>(&v); o && !*o) return std::nullopt;
  if (auto* x = std::get_if<std::vector<int64_t>>(&v)) return *x;
  throw ValueError(std::string("parameter '") + key + "' is not None or an int tuple");
}

Param none_or(const std::optional<std::vector<int64_t>>& v) {
  if (v) return *v;
  return ParamObjectPtr{};  // printed None, as in JAX
}

}  // namespace

// ---- shape ops -------------------------------------------------------------------------------------

MJ_DEFINE_VIEW(BroadcastInDimParams, broadcast_in_dim_params, "broadcast_in_dim")
BroadcastInDimParams BroadcastInDimParams::from(const Params& p) {
  return views::read_view("broadcast_in_dim", [&] {
    return BroadcastInDimParams{param_ints(p, "shape"), param_ints(p, "broadcast_dimensions")};
  });
}
Params BroadcastInDimParams::to_params() const {
  return Params{{"shape", shape}, {"broadcast_dimensions", broadcast_dimensions}};
}

MJ_DEFINE_VIEW(ReshapeParams, reshape_params, "reshape")
ReshapeParams ReshapeParams::from(const Params& p) {
  return views::read_view("reshape", [&] { return ReshapeParams{param_ints(p, "new_sizes"), ints_or_none(p, "dimensions")}; });
}
Params ReshapeParams::to_params() const {
  return Params{{"dimensions", none_or(dimensions)}, {"new_sizes", new_sizes}};
}

MJ_DEFINE_VIEW(SqueezeParams, squeeze_params, "squeeze")
SqueezeParams SqueezeParams::from(const Params& p) {
  return views::read_view("squeeze", [&] { return SqueezeParams{param_ints(p, "dimensions")}; });
}
Params SqueezeParams::to_params() const { return Params{{"dimensions", dimensions}}; }

MJ_DEFINE_VIEW(ExpandDimsParams, expand_dims_params, "expand_dims")
ExpandDimsParams ExpandDimsParams::from(const Params& p) {
  return views::read_view("expand_dims", [&] { return ExpandDimsParams{param_ints(p, "dimensions")}; });
}
Params ExpandDimsParams::to_params() const { return Params{{"dimensions", dimensions}}; }

MJ_DEFINE_VIEW(RevParams, rev_params, "rev")
RevParams RevParams::from(const Params& p) {
  return views::read_view("rev", [&] { return RevParams{param_ints(p, "dimensions")}; });
}
Params RevParams::to_params() const { return Params{{"dimensions", dimensions}}; }

MJ_DEFINE_VIEW(TransposeParams, transpose_params, "transpose")
TransposeParams TransposeParams::from(const Params& p) {
  return views::read_view("transpose", [&] { return TransposeParams{param_ints(p, "permutation")}; });
}
Params TransposeParams::to_params() const { return Params{{"permutation", permutation}}; }

// ---- slicing and indexing --------------------------------------------------------------------------

MJ_DEFINE_VIEW(SliceParams, slice_params, "slice")
SliceParams SliceParams::from(const Params& p) {
  return views::read_view("slice", [&] {
    return SliceParams{param_ints(p, "start_indices"), param_ints(p, "limit_indices"), ints_or_none(p, "strides")};
  });
}
Params SliceParams::to_params() const {
  return Params{{"start_indices", start_indices}, {"limit_indices", limit_indices}, {"strides", none_or(strides)}};
}
std::vector<int64_t> SliceParams::strides_or_ones(size_t n) const {
  return strides ? *strides : std::vector<int64_t>(n, 1);
}

MJ_DEFINE_VIEW(DynamicSliceParams, dynamic_slice_params, "dynamic_slice")
DynamicSliceParams DynamicSliceParams::from(const Params& p) {
  return views::read_view("dynamic_slice", [&] { return DynamicSliceParams{param_ints(p, "slice_sizes")}; });
}
Params DynamicSliceParams::to_params() const { return Params{{"slice_sizes", slice_sizes}}; }

bool DynamicUpdateSliceParams::is(const Primitive& p) {
  static const Primitive* q = prim("dynamic_update_slice");
  return &p == q;
}
bool DynamicUpdateSliceParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
DynamicUpdateSliceParams DynamicUpdateSliceParams::from(const Params&) { return {}; }
Params DynamicUpdateSliceParams::to_params() const { return {}; }

MJ_DEFINE_VIEW(ConcatenateParams, concatenate_params, "concatenate")
ConcatenateParams ConcatenateParams::from(const Params& p) {
  return views::read_view("concatenate", [&] { return ConcatenateParams{param_int(p, "dimension")}; });
}
Params ConcatenateParams::to_params() const { return Params{{"dimension", dimension}}; }

MJ_DEFINE_VIEW(PadParams, pad_params, "pad")
PadParams PadParams::from(const Params& p) {
  return views::read_view("pad", [&] { return PadParams{lax::padding_config(p)}; });
}
Params PadParams::to_params() const { return Params{{"padding_config", lax::padding_config_param(padding_config)}}; }

// ---- contraction -----------------------------------------------------------------------------------

MJ_DEFINE_VIEW(DotGeneralParams, dot_general_params, "dot_general")
DotGeneralParams DotGeneralParams::from(const Params& p) {
  return views::read_view("dot_general", [&] {
    DotGeneralParams v;
    v.dimension_numbers = lax::dot_dimension_numbers(p);
    v.precision = lax::dot_precision(p);
    v.preferred_element_type = param_dtype(p, "preferred_element_type");
    return v;
  });
}
Params DotGeneralParams::to_params() const {
  return lax::dot_general_params(dimension_numbers, precision, preferred_element_type);
}

// ---- reductions ------------------------------------------------------------------------------------

bool ReduceParams::is(const Primitive& p) {
  static const Primitive* q[] = {prim("reduce_sum"), prim("reduce_max"), prim("reduce_min"), prim("reduce_prod"),
                                 prim("reduce_and"), prim("reduce_or"),   prim("reduce_xor")};
  return std::find(std::begin(q), std::end(q), &p) != std::end(q);
}
bool ReduceParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
ReduceParams ReduceParams::from(const Params& p, const std::string& primitive) {
  return views::read_view(primitive.c_str(), [&] { return ReduceParams{param_ints(p, "axes")}; });
}
Params ReduceParams::to_params() const { return Params{{"axes", axes}}; }
ReduceParams reduce_params(const Eqn& e) {
  if (!ReduceParams::is(e)) views::wrong_primitive("ReduceParams", e);
  return ReduceParams::from(e.params, e.primitive->name);
}

bool ArgReduceParams::is(const Primitive& p) {
  static const Primitive* mx = prim("argmax");
  static const Primitive* mn = prim("argmin");
  return &p == mx || &p == mn;
}
bool ArgReduceParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
ArgReduceParams ArgReduceParams::from(const Params& p, const std::string& primitive) {
  return views::read_view(primitive.c_str(),
                          [&] { return ArgReduceParams{param_ints(p, "axes"), param_dtype(p, "index_dtype")}; });
}
Params ArgReduceParams::to_params() const { return Params{{"axes", axes}, {"index_dtype", index_dtype}}; }
ArgReduceParams arg_reduce_params(const Eqn& e) {
  if (!ArgReduceParams::is(e)) views::wrong_primitive("ArgReduceParams", e);
  return ArgReduceParams::from(e.params, e.primitive->name);
}

bool has_reduction_axes(const Eqn& e) { return ReduceParams::is(e) || ArgReduceParams::is(e); }
std::vector<int64_t> reduction_axes(const Eqn& e) {
  if (ArgReduceParams::is(e)) return arg_reduce_params(e).axes;
  return reduce_params(e).axes;
}

MJ_DEFINE_VIEW(CumsumParams, cumsum_params, "cumsum")
CumsumParams CumsumParams::from(const Params& p) {
  return views::read_view("cumsum", [&] { return CumsumParams{param_int(p, "axis"), param_bool(p, "reverse")}; });
}
Params CumsumParams::to_params() const { return Params{{"axis", axis}, {"reverse", reverse}}; }

bool CumulativeParams::is(const Primitive& p) {
  static const Primitive* q[] = {prim("cumprod"), prim("cummax"), prim("cummin"), prim("cumlogsumexp")};
  return std::find(std::begin(q), std::end(q), &p) != std::end(q);
}
bool CumulativeParams::is(const Eqn& e) { return e.primitive && is(*e.primitive); }
CumulativeParams CumulativeParams::from(const Params& p, const std::string& primitive) {
  return views::read_view(primitive.c_str(),
                          [&] { return CumulativeParams{param_int(p, "axis"), param_bool(p, "reverse")}; });
}
Params CumulativeParams::to_params() const { return Params{{"axis", axis}, {"reverse", reverse}}; }
CumulativeParams cumulative_params(const Eqn& e) {
  if (!CumulativeParams::is(e)) views::wrong_primitive("CumulativeParams", e);
  return CumulativeParams::from(e.params, e.primitive->name);
}

// ---- iota, converts, elementwise params ------------------------------------------------------------

MJ_DEFINE_VIEW(IotaParams, iota_params, "iota")
IotaParams IotaParams::from(const Params& p) {
  return views::read_view("iota", [&] {
    return IotaParams{param_int(p, "dimension"), param_dtype(p, "dtype"), param_ints(p, "shape")};
  });
}
Params IotaParams::to_params() const { return Params{{"dimension", dimension}, {"dtype", dtype}, {"shape", shape}}; }

MJ_DEFINE_VIEW(ConvertElementTypeParams, convert_element_type_params, "convert_element_type")
ConvertElementTypeParams ConvertElementTypeParams::from(const Params& p) {
  return views::read_view("convert_element_type", [&] {
    return ConvertElementTypeParams{param_dtype(p, "new_dtype"), param_bool(p, "weak_type")};
  });
}
Params ConvertElementTypeParams::to_params() const {
  return Params{{"new_dtype", new_dtype}, {"weak_type", weak_type}};
}

MJ_DEFINE_VIEW(RoundParams, round_params, "round")
RoundParams RoundParams::from(const Params& p) {
  return views::read_view("round", [&] { return RoundParams{param_int(p, "rounding_method")}; });
}
Params RoundParams::to_params() const { return Params{{"rounding_method", rounding_method}}; }

MJ_DEFINE_VIEW(IntegerPowParams, integer_pow_params, "integer_pow")
IntegerPowParams IntegerPowParams::from(const Params& p) {
  return views::read_view("integer_pow", [&] { return IntegerPowParams{param_int(p, "y")}; });
}
Params IntegerPowParams::to_params() const { return Params{{"y", y}}; }

MJ_DEFINE_VIEW(Iota2x32ShapeParams, iota_2x32_shape_params, "iota_2x32_shape")
Iota2x32ShapeParams Iota2x32ShapeParams::from(const Params& p) {
  return views::read_view("iota_2x32_shape", [&] { return Iota2x32ShapeParams{param_ints(p, "shape")}; });
}
Params Iota2x32ShapeParams::to_params() const { return Params{{"shape", shape}}; }

MJ_DEFINE_VIEW(BitcastConvertTypeParams, bitcast_convert_type_params, "bitcast_convert_type")
BitcastConvertTypeParams BitcastConvertTypeParams::from(const Params& p) {
  return views::read_view("bitcast_convert_type", [&] { return BitcastConvertTypeParams{param_dtype(p, "new_dtype")}; });
}
Params BitcastConvertTypeParams::to_params() const { return Params{{"new_dtype", new_dtype}}; }

namespace views {
const std::vector<std::string>& array_op_primitive_names() {
  static const std::vector<std::string> names = {
      "broadcast_in_dim", "reshape", "squeeze", "expand_dims", "rev", "transpose", "slice",
      "dynamic_slice", "dynamic_update_slice", "concatenate", "pad", "gather", "scatter_add",
      "dot_general", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
      "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "iota",
      "convert_element_type", "round", "integer_pow", "iota_2x32_shape", "bitcast_convert_type", "sort", "top_k",
      "triangular_solve", "qr", "eigh", "svd"};
  return names;
}
}  // namespace views

namespace {

// Each primitive's check_params: its view reads the params (the parser calls it on every
// parsed equation).
template <class View>
ParamsCheck check_with() {
  return [](const Params& p) { return View::from(p).to_params(); };
}

Registrar reg_checks([] {
  auto set = [](const char* name, ParamsCheck c) { get_or_create_primitive(name).check_params = std::move(c); };
  set("broadcast_in_dim", check_with<BroadcastInDimParams>());
  set("reshape", check_with<ReshapeParams>());
  set("squeeze", check_with<SqueezeParams>());
  set("expand_dims", check_with<ExpandDimsParams>());
  set("rev", check_with<RevParams>());
  set("transpose", check_with<TransposeParams>());
  set("slice", check_with<SliceParams>());
  set("dynamic_slice", check_with<DynamicSliceParams>());
  set("dynamic_update_slice", check_with<DynamicUpdateSliceParams>());
  set("concatenate", check_with<ConcatenateParams>());
  set("pad", check_with<PadParams>());
  set("dot_general", check_with<DotGeneralParams>());
  for (const char* n : {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or", "reduce_xor"})
    set(n, [n](const Params& p) { return ReduceParams::from(p, n).to_params(); });
  for (const char* n : {"argmax", "argmin"}) set(n, [n](const Params& p) { return ArgReduceParams::from(p, n).to_params(); });
  set("cumsum", check_with<CumsumParams>());
  for (const char* n : {"cumprod", "cummax", "cummin", "cumlogsumexp"})
    set(n, [n](const Params& p) { return CumulativeParams::from(p, n).to_params(); });
  set("iota", check_with<IotaParams>());
  set("convert_element_type", check_with<ConvertElementTypeParams>());
  set("round", check_with<RoundParams>());
  set("integer_pow", check_with<IntegerPowParams>());
  set("iota_2x32_shape", check_with<Iota2x32ShapeParams>());
  set("bitcast_convert_type", check_with<BitcastConvertTypeParams>());
});

}  // namespace
}  // namespace minijax
