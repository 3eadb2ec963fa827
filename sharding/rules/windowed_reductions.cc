// minijax sharding rules of the windowed reductions: reduce_window_sum/max/min, reduce_window,
// select_and_scatter_add and select_and_gather_add.
//
// A dimension whose window is 1 with stride 1, no padding and no dilation is a plain map: one
// factor shared by every windowed operand and result (so a batch or feature dimension carries
// its sharding with no communication). A windowed dimension reads neighbouring elements (and
// may change size): its factors need replication (no halo exchange), so a sharded windowed
// dimension is gathered first. The generic reduce_window's scalar init values have no dims.
#include "core/primitive.h"
#include "core/views/windowed.h"
#include "sharding/rules/rule_builder.h"

namespace minijax::sharding_rules_detail {
namespace {

bool plain_dim(const WindowParams& w, size_t d) {
  const int64_t i = int64_t(d);
  return w.window_dimensions[d] == 1 && w.window_strides[d] == 1 && w.pad_lo(i) == 0 && w.pad_hi(i) == 0 &&
         w.base_dilation[d] == 1 && w.window_dilation[d] == 1;
}

// The rule of one windowed equation: `full_operands` have the operand's shape and
// `windowed_operands` the windowed shape; the results have the operand's shape (result_full) or
// the windowed one.
FactorRule window_rule(const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                       const WindowParams& w, const std::vector<size_t>& full_operands,
                       const std::vector<size_t>& windowed_operands, bool result_full) {
  RuleBuilder b(in, out);
  const Shape& full = in.at(full_operands.at(0)).shape;
  for (size_t d = 0; d < full.size(); ++d) {
    if (plain_dim(w, d)) {
      const int f = b.factor(full[d]);
      for (size_t i : full_operands) b.operand(i, d, f);
      for (size_t i : windowed_operands) b.operand(i, d, f);
      for (size_t r = 0; r < out.size(); ++r) b.result(r, d, f);
      continue;
    }
    // A windowed dimension: the full-size dims share one factor, the windowed-size dims another,
    // both replicated.
    const int f = b.factor(full[d]);
    b.need_replication(f);
    for (size_t i : full_operands) b.operand(i, d, f);
    int g = -1;
    auto windowed = [&](int64_t size) {
      if (g < 0) {
        g = b.factor(size);
        b.need_replication(g);
      }
      return g;
    };
    for (size_t i : windowed_operands) b.operand(i, d, windowed(in[i].shape[d]));
    for (size_t r = 0; r < out.size(); ++r) {
      if (result_full) b.result(r, d, f);
      else b.result(r, d, windowed(out[r].shape[d]));
    }
  }
  return b.take();
}

Registrar reg([] {
  auto& t = sharding_rules();
  for (const char* n : {"reduce_window_sum", "reduce_window_max", "reduce_window_min"})
    t[n] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out, const Params& p) {
      return window_rule(in, out, ReduceWindowMonoidParams::from(p).window, {0}, {}, false);
    };
  // reduce_window: operands (operands..., init values...); the operands share every factor.
  t["reduce_window"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                          const Params& p) {
    std::vector<size_t> ops;
    for (size_t i = 0; i < in.size() / 2; ++i) ops.push_back(i);
    return window_rule(in, out, ReduceWindowParams::from(p).window, ops, {}, false);
  };
  // select_and_scatter_add(source [windowed], operand) -> [operand's shape].
  t["select_and_scatter_add"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                                   const Params& p) {
    return window_rule(in, out, SelectAndWindowParams::from(p).window, {1}, {0}, true);
  };
  // select_and_gather_add(tangents, operand) -> [windowed].
  t["select_and_gather_add"] = [](const std::vector<ShapedArray>& in, const std::vector<ShapedArray>& out,
                                  const Params& p) {
    return window_rule(in, out, SelectAndWindowParams::from(p).window, {0, 1}, {}, false);
  };
});

}  // namespace
}  // namespace minijax::sharding_rules_detail
