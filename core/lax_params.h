// minijax lax equations' params: how dot_general and pad store their parameters in an equation, and
// zeros of an aval. Internal: the primitives, rules, passes and parser read them; users call core/lax.h.
#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "core/lax.h"
#include "core/params.h"

namespace minijax::lax {

/// dot_general's `dimension_numbers` parameter: one object printed as JAX prints it,
/// `(([1], [0]), ([], []))`, and read back by the jaxpr parser.
Param dot_dimension_numbers_param(const DotDimensionNumbers& dims);
/// The dimension numbers of a dot_general equation's params; ValueError if absent or malformed.
DotDimensionNumbers dot_dimension_numbers(const Params& params);
/// A dot_general equation's full params: dimension_numbers, precision=None and
/// preferred_element_type.
Params dot_general_params(const DotDimensionNumbers& dims, DType preferred_element_type);
/// The same with a precision (nullopt: None).
Params dot_general_params(const DotDimensionNumbers& dims,
                          const std::optional<std::pair<Precision, Precision>>& precision,
                          DType preferred_element_type);
/// The `precision` param of a dot_general or conv_general_dilated equation: None or the pair.
Param precision_param(const std::optional<std::pair<Precision, Precision>>& precision);
/// The precision of a dot_general equation's params: nullopt for None; ValueError if malformed.
std::optional<std::pair<Precision, Precision>> dot_precision(const Params& params);

/// pad's `padding_config` parameter: the (low, high, interior) triples stored as one flat int
/// vector inside a ParamObject that prints as JAX's nested tuples `((1, 2, 0), (0, 0, 1))` and
/// parses back (core/parser.h); for rank 0, the empty int tuple `()`.
Param padding_config_param(const std::vector<PadConfig>& config);
/// The triples of a pad equation's `padding_config` (the object above, or a flat int vector of
/// length 3 * rank as a parser may produce). Throws ValueError if missing or malformed.
std::vector<PadConfig> padding_config(const Params& params);

/// zeros of aval a (symbolic-zero instantiation); float0 avals give a float0 array.
Array zeros_like_aval(const ShapedArray& a);

}  // namespace minijax::lax
