// minijax buffer rules: per primitive, which outputs are views of an input's buffer (no copy) and
// which may be computed in place of an input that dies there, and what workspace it needs. The
// table the buffer planner reads.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/jaxpr.h"

namespace minijax {

/// The workspace an equation needs while it runs (LAPACK's work arrays): `slots` separate pieces
/// of `slot_bytes` each, one per task that may run at once (memory/plan_buffers.h places them in
/// the device arena, live only during the equation).
struct ScratchNeed {
  int64_t slot_bytes = 0;
  int64_t slots = 0;
};

/// How a primitive's outputs may share storage with its inputs (memory/plan_buffers.h), and the
/// workspace it needs.
struct BufferRule {
  /// views[k] = i: output k is input i's bytes reinterpreted (reshape, squeeze, expand_dims on a
  /// row-major buffer; optimization_barrier; a same-kind device_put): no code runs, the output
  /// is an alias. -1: not a view.
  std::function<std::vector<int>(const Eqn&)> views;
  /// in_place(e, k) = inputs output k may overwrite when that input's buffer dies at e and has
  /// the same byte size and memory kind (dynamic_update_slice and scatter_add on their operand;
  /// a loop fusion on an operand it reads only elementwise at the identity index).
  std::function<std::vector<int>(const Eqn&, size_t output)> in_place;
  /// The equation's workspace (the linear-algebra primitives'), or none when null.
  std::function<ScratchNeed(const Eqn&)> scratch = nullptr;
};

/// The rule of eqn's primitive, or nullptr when its outputs always get their own buffers.
const BufferRule* buffer_rule(const Eqn& eqn);
/// Registers a rule (static initializers; memory/buffer_rules.cc holds the table).
void register_buffer_rule(const std::string& primitive, BufferRule rule);

/// Whether a fusion body reads its invar `i` only at the index each output element is written
/// at: every path from the invar to an outvar goes through elementwise equations of the invar's
/// shape (so a loop kernel may overwrite the invar's buffer with an output of the same size).
bool fusion_reads_elementwise(const Jaxpr& body, size_t i);

}  // namespace minijax
