// minijax typed views of the array primitives' params: shape ops, slicing and indexing, reductions,
// dot_general, converts, iota and the random-bits ops (typed params; see view.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/lax.h"
#include "core/lax_params.h"
#include "core/views/gather_scatter.h"
#include "core/views/view.h"

namespace minijax {

// Every view below has the same form:
//   static bool is(const Eqn& e);            // e's primitive is one the view describes
//   static bool is(const Primitive& p);      // the same for a primitive
//   static X from(const Params& p);          // ValueError "<primitive>: missing parameter 'k'"
//                                            // or "<primitive>: parameter 'k' is not of type ..."
//   Params to_params() const;                // exactly the keys and types the binder sets
// and an accessor `x_params(eqn)` that throws ValueError (views::wrong_primitive) when the
// equation is of another primitive. Each view registers `check_params` on its primitives.
// Keys JAX always sets but old texts may omit (slice's strides, gather's mode/fill_value,
// dot_general's precision, reshape's dimensions) read as their default when absent and are
// written by to_params() in JAX's form.

/// broadcast_in_dim: result `shape`; operand dim k becomes result dim broadcast_dimensions[k].
struct BroadcastInDimParams {
  std::vector<int64_t> shape, broadcast_dimensions;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static BroadcastInDimParams from(const Params& p);
  Params to_params() const;
};
BroadcastInDimParams broadcast_in_dim_params(const Eqn& e);

/// reshape: `new_sizes`, and JAX's `dimensions` (None: row-major; the only form minijax binds).
struct ReshapeParams {
  std::vector<int64_t> new_sizes;
  std::optional<std::vector<int64_t>> dimensions;  ///< nullopt: None
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static ReshapeParams from(const Params& p);
  Params to_params() const;
};
ReshapeParams reshape_params(const Eqn& e);

/// squeeze: the size-1 `dimensions` removed (sorted, non-negative).
struct SqueezeParams {
  std::vector<int64_t> dimensions;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static SqueezeParams from(const Params& p);
  Params to_params() const;
};
SqueezeParams squeeze_params(const Eqn& e);

/// expand_dims: the result positions of the inserted size-1 `dimensions` (sorted).
struct ExpandDimsParams {
  std::vector<int64_t> dimensions;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static ExpandDimsParams from(const Params& p);
  Params to_params() const;
};
ExpandDimsParams expand_dims_params(const Eqn& e);

/// rev: the reversed `dimensions` (sorted).
struct RevParams {
  std::vector<int64_t> dimensions;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static RevParams from(const Params& p);
  Params to_params() const;
};
RevParams rev_params(const Eqn& e);

/// transpose: result dim d is operand dim permutation[d].
struct TransposeParams {
  std::vector<int64_t> permutation;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static TransposeParams from(const Params& p);
  Params to_params() const;
};
TransposeParams transpose_params(const Eqn& e);

/// slice: [start_indices, limit_indices) with `strides` (nullopt: None, all 1).
struct SliceParams {
  std::vector<int64_t> start_indices, limit_indices;
  std::optional<std::vector<int64_t>> strides;
  /// The strides, all 1 for None (n = the operand's rank).
  std::vector<int64_t> strides_or_ones(size_t n) const;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static SliceParams from(const Params& p);
  Params to_params() const;
};
SliceParams slice_params(const Eqn& e);

/// dynamic_slice: the static `slice_sizes` (the start indices are operands).
struct DynamicSliceParams {
  std::vector<int64_t> slice_sizes;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static DynamicSliceParams from(const Params& p);
  Params to_params() const;
};
DynamicSliceParams dynamic_slice_params(const Eqn& e);

/// dynamic_update_slice: no params (operand, update, start indices).
struct DynamicUpdateSliceParams {
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static DynamicUpdateSliceParams from(const Params& p);
  Params to_params() const;
};

/// concatenate: the operands are joined along `dimension`.
struct ConcatenateParams {
  int64_t dimension = 0;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static ConcatenateParams from(const Params& p);
  Params to_params() const;
};
ConcatenateParams concatenate_params(const Eqn& e);

/// pad: per dim (low, high, interior) (lax::PadConfig); printed as JAX's nested tuples.
struct PadParams {
  std::vector<lax::PadConfig> padding_config;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static PadParams from(const Params& p);
  Params to_params() const;
};
PadParams pad_params(const Eqn& e);

/// dot_general: dimension numbers, precision (nullopt: None; no effect on the CPU) and the
/// output dtype. The generalisation of lax::dot_dimension_numbers (which reads one field).
struct DotGeneralParams {
  lax::DotDimensionNumbers dimension_numbers;
  std::optional<std::pair<lax::Precision, lax::Precision>> precision;
  DType preferred_element_type = DType::f32;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static DotGeneralParams from(const Params& p);
  Params to_params() const;
};
DotGeneralParams dot_general_params(const Eqn& e);

/// reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_and, reduce_or, reduce_xor: the reduced
/// `axes`.
struct ReduceParams {
  std::vector<int64_t> axes;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  /// `primitive` names the primitive in errors.
  static ReduceParams from(const Params& p, const std::string& primitive = "reduce_sum");
  Params to_params() const;
};
ReduceParams reduce_params(const Eqn& e);

/// argmax, argmin: the one reduced axis (`axes`, of length 1) and the result's `index_dtype`.
struct ArgReduceParams {
  std::vector<int64_t> axes;
  DType index_dtype = DType::i32;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static ArgReduceParams from(const Params& p, const std::string& primitive = "argmax");
  Params to_params() const;
};
ArgReduceParams arg_reduce_params(const Eqn& e);

/// The reduced axes of a reduce_* or argmax/argmin equation (ValueError for other primitives).
std::vector<int64_t> reduction_axes(const Eqn& e);
/// Whether `e` is a reduce_* or argmax/argmin equation (they have `axes`).
bool has_reduction_axes(const Eqn& e);

/// cumsum: inclusive prefix sums along `axis`, from the end when `reverse`.
struct CumsumParams {
  int64_t axis = 0;
  bool reverse = false;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static CumsumParams from(const Params& p);
  Params to_params() const;
};
CumsumParams cumsum_params(const Eqn& e);

/// cumprod, cummax, cummin, cumlogsumexp: the running combine along `axis`, from the end when
/// `reverse` (the params of cumsum).
struct CumulativeParams {
  int64_t axis = 0;
  bool reverse = false;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  /// `primitive` names the primitive in errors.
  static CumulativeParams from(const Params& p, const std::string& primitive = "cumprod");
  Params to_params() const;
};
CumulativeParams cumulative_params(const Eqn& e);

/// iota: integers along `dimension` of `shape`, of `dtype`.
struct IotaParams {
  int64_t dimension = 0;
  DType dtype = DType::i32;
  std::vector<int64_t> shape;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static IotaParams from(const Params& p);
  Params to_params() const;
};
IotaParams iota_params(const Eqn& e);

/// convert_element_type: the result's `new_dtype` and `weak_type`.
struct ConvertElementTypeParams {
  DType new_dtype = DType::f32;
  bool weak_type = false;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static ConvertElementTypeParams from(const Params& p);
  Params to_params() const;
};
ConvertElementTypeParams convert_element_type_params(const Eqn& e);

/// round: `rounding_method` (0: away from zero, 1: to nearest even; JAX's RoundingMethod).
struct RoundParams {
  int64_t rounding_method = 0;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static RoundParams from(const Params& p);
  Params to_params() const;
};
RoundParams round_params(const Eqn& e);

/// integer_pow: the static integer exponent `y`.
struct IntegerPowParams {
  int64_t y = 0;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static IntegerPowParams from(const Params& p);
  Params to_params() const;
};
IntegerPowParams integer_pow_params(const Eqn& e);

/// iota_2x32_shape (the random-bits counters): the result `shape`.
struct Iota2x32ShapeParams {
  std::vector<int64_t> shape;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static Iota2x32ShapeParams from(const Params& p);
  Params to_params() const;
};
Iota2x32ShapeParams iota_2x32_shape_params(const Eqn& e);

/// bitcast_convert_type: the reinterpreted `new_dtype`.
struct BitcastConvertTypeParams {
  DType new_dtype = DType::u32;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static BitcastConvertTypeParams from(const Params& p);
  Params to_params() const;
};
BitcastConvertTypeParams bitcast_convert_type_params(const Eqn& e);

namespace views {
/// The names of the primitives whose params the views of this file describe, for the tests
/// that round-trip every view.
const std::vector<std::string>& array_op_primitive_names();
}  // namespace views

}  // namespace minijax
