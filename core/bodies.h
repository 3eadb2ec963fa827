// minijax bodies: the nested jaxprs of an equation (JAX's core.subjaxprs) and how its operands
// and results map to their invars and outvars, from the primitive's body fact (core/primitive.h).
#pragma once
#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/jaxpr.h"
#include "core/primitive.h"

namespace minijax {

/// One nested jaxpr of an equation: the param holding it and, for a list param (cond's
/// branches), its position.
struct SubJaxpr {
  std::string param;
  size_t index = 0;
  bool in_list = false;
  ClosedJaxprPtr jaxpr;
  /// "jaxpr", or "branches[1]" for an element of a list param.
  std::string label() const { return in_list ? param + "[" + std::to_string(index) + "]" : param; }
};

/// Every nested jaxpr of `e` (JAX's core.subjaxprs): the primitive's body params in their
/// declared order (while: cond_jaxpr, body_jaxpr), then any other jaxpr-valued param in key
/// order. Null jaxprs are skipped.
std::vector<SubJaxpr> subjaxprs(const Eqn& e);

/// Sentinel of BodyLayout's maps: no operand / no result.
inline constexpr size_t kNoSlot = std::numeric_limits<size_t>::max();

/// How an equation's operands and results map to its bodies (in subjaxprs order), from the
/// primitive's BodyForm and the counts in its typed params (core/views/control_flow.h):
/// a plain call 1:1; scan consts | carry | xs; while cond_consts | body_consts | carry; cond
/// index | operands.
struct BodyLayout {
  BodyForm form = BodyForm::none;
  size_t num_operands = 0, num_results = 0;
  size_t num_index = 0;                            ///< cond: the leading index operand
  size_t num_cond_consts = 0, num_body_consts = 0;  ///< while
  size_t num_consts = 0;                           ///< scan's consts; while's cond + body consts
  size_t num_carry = 0;                            ///< loop-carried values (scan, while)
  size_t num_xs = 0;                               ///< scan's scanned operands

  size_t carry_begin() const { return num_index + num_consts; }
  size_t xs_begin() const { return carry_begin() + num_carry; }
  /// The operand feeding each invar of body `b` (subjaxprs order).
  std::vector<size_t> body_inputs(size_t b) const;
  /// The result each outvar of body `b` produces (kNoSlot: none, e.g. while's predicate).
  std::vector<size_t> body_results(size_t b) const;
  /// For a loop: the invar of body `b` that each outvar feeds on the next iteration (kNoSlot:
  /// none, e.g. scan's ys); empty for non-loops and for while's cond.
  std::vector<size_t> loop_back(size_t b) const;
};

/// The layout of `e`'s operands and results; ValueError if its params do not fit its view.
BodyLayout body_layout(const Eqn& e);

/// Whether `e`'s primitive is a plain call (its body fact).
inline bool is_plain_call(const Eqn& e) { return e.primitive && e.primitive->plain_call(); }

/// The params of `ps` with every nested jaxpr (a ClosedJaxprPtr param, or each element of a
/// std::vector<ClosedJaxprPtr> param such as cond's branches) replaced by f(jaxpr), its consts
/// kept. `f` must keep each jaxpr's invar and outvar avals (the equation stays well typed).
Params map_bodies(const Params& ps, const std::function<Jaxpr(const Jaxpr&)>& f);

/// Whether any param of `ps` holds a nested jaxpr.
bool has_bodies(const Params& ps);

}  // namespace minijax
