// minijax typed views of the sorting primitives' params: sort and top_k (typed params; see view.h
// and core/views/array_ops.h for the form every view has).
#pragma once
#include <cstdint>

#include "core/views/view.h"

namespace minijax {

/// sort: the sorted `dimension` (non-negative), `is_stable` and the number of leading operands
/// that are keys, `num_keys`.
struct SortParams {
  int64_t dimension = 0;
  bool is_stable = true;
  int64_t num_keys = 1;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static SortParams from(const Params& p);
  Params to_params() const;
};
SortParams sort_params(const Eqn& e);

/// top_k: the number `k` of largest entries kept along the last axis.
struct TopKParams {
  int64_t k = 0;
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static TopKParams from(const Params& p);
  Params to_params() const;
};
TopKParams top_k_params(const Eqn& e);

}  // namespace minijax
