// minijax typed params of the control-flow and call primitives: scan, while, cond, the plain
// calls (pjit, closed_call, checkpoint, custom_jvp_call, custom_vjp_call, fusion) and name.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/views/view.h"

namespace minijax {

/// scan's params (JAX's scan_p): operands are consts | carry | xs, results carry | ys.
/// from() throws ValueError "scan: missing parameter 'num_carry'" (or a wrong type) naming it.
struct ScanParams {
  ClosedJaxprPtr jaxpr;  ///< the body: invars consts | carry | x slices, outvars carry | y slices
  int64_t num_consts = 0, num_carry = 0, length = 0;
  bool reverse = false;
  std::optional<int64_t> unroll;               ///< absent in some parsed texts: 1
  std::optional<std::vector<int64_t>> linear;  ///< one flag per operand
  std::optional<bool> split_transpose;         ///< `_split_transpose`
  Params other;                                ///< params this view does not type, kept as they are

  int64_t unroll_or_one() const { return unroll.value_or(1); }
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static ScanParams from(const Params& p);
  static const Primitive& primitive();
  Params to_params() const;
};
/// The scan params of `e`; ValueError if `e` is not a scan.
ScanParams scan_params(const Eqn& e);

/// while's params (JAX's while_p): operands cond_consts | body_consts | carry, results carry.
struct WhileParams {
  ClosedJaxprPtr cond_jaxpr, body_jaxpr;
  int64_t cond_nconsts = 0, body_nconsts = 0;
  Params other;

  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static WhileParams from(const Params& p);
  static const Primitive& primitive();
  Params to_params() const;
};
WhileParams while_params(const Eqn& e);

/// cond's params (JAX's cond_p): operands index | operands; each branch maps operands to results.
struct CondParams {
  std::vector<ClosedJaxprPtr> branches;
  Params other;

  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static CondParams from(const Params& p);
  static const Primitive& primitive();
  Params to_params() const;
};
CondParams cond_params(const Eqn& e);

/// The params of a plain call (Primitive::plain_call(): pjit, closed_call, checkpoint,
/// custom_jvp_call, custom_vjp_call, fusion). The body is kept under the primitive's
/// body_params[0] ("jaxpr" or "call_jaxpr"); every other param is optional, as each call has
/// its own: pjit/closed_call a name; checkpoint differentiated, policy, prevent_cse; fusion kind
/// and name; custom_jvp_call/custom_vjp_call name, num_consts, symbolic_zeros, jvp or fwd/bwd.
struct CallParams {
  std::string body_key = "jaxpr";  ///< the param holding the body
  ClosedJaxprPtr jaxpr;            ///< the body: operands are its invars, results its outvars
  std::optional<std::string> name;
  std::optional<bool> differentiated;  ///< checkpoint
  std::optional<Param> prevent_cse;    ///< checkpoint: a bool or one flag per operand (core/prevent_cse.h)
  std::optional<ParamObjectPtr> policy;  ///< checkpoint (its value null: `policy=None`)
  std::optional<std::string> kind;     ///< fusion: "loop" or "reduction"
  std::optional<int64_t> num_consts;   ///< custom_jvp_call/custom_vjp_call: leading closed-over operands
  std::optional<bool> symbolic_zeros;  ///< custom_jvp_call/custom_vjp_call
  ParamObjectPtr jvp, fwd, bwd;        ///< custom_jvp_call's rule; custom_vjp_call's fwd and bwd
  Params other;

  /// The name, or `fallback` when the call has none.
  std::string name_or(const std::string& fallback) const { return name.value_or(fallback); }
  bool is_differentiated() const { return differentiated.value_or(false); }
  /// Whether `e`'s primitive is a plain call (its body fact, not its name).
  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  /// Reads the params of a call of primitive `prim` (its body key from its body fact).
  static CallParams from(const Primitive& prim, const Params& p);
  Params to_params() const;
};
CallParams call_params(const Eqn& e);
/// `p` read as the params of a checkpoint equation.
CallParams checkpoint_params(const Params& p);
/// `p` read as the params of a custom_jvp_call / custom_vjp_call equation.
CallParams custom_jvp_call_params(const Params& p);
CallParams custom_vjp_call_params(const Params& p);
/// The custom_jvp_call and custom_vjp_call primitives.
const Primitive& custom_jvp_call_primitive();
const Primitive& custom_vjp_call_primitive();
/// The checkpoint primitive (remat).
const Primitive& checkpoint_primitive();

/// The checkpoint_name primitive `name` (an identity that tags a value): its `name` param.
struct CheckpointNameParams {
  std::string name;
  Params other;

  static bool is(const Eqn& e);
  static bool is(const Primitive& p);
  static CheckpointNameParams from(const Params& p);
  static const Primitive& primitive();
  Params to_params() const;
};
CheckpointNameParams checkpoint_name_params(const Eqn& e);

/// Primitive facts by identity (pointer compare), for code that must single out one primitive.
bool is_checkpoint(const Primitive& p);
bool is_fusion(const Primitive& p);
bool is_pjit(const Primitive& p);
bool is_closed_call(const Primitive& p);
/// custom_jvp_call or custom_vjp_call.
bool is_custom_derivative_call(const Primitive& p);

}  // namespace minijax
