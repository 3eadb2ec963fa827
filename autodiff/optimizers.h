// minijax optimizers: SGD (with momentum, Nesterov, weight decay), Adam and AdamW over pytrees.
// Owns namespace minijax::optim: the optimizer configs, their pytree states, init and update.
#pragma once
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/pytree.h"

namespace minijax::optim {

// The updates are pure functions of (grads, state, params) written with minijax ops: eagerly they
// run op by op (Adam with a fused loop per leaf), and under mj::jit they trace into one graph in
// which the step count is an i32[] operand, so one trace serves every step.

/// What update() returns: the new parameters and the new state (neither input is modified).
/// Use with structured bindings: `auto [params2, state2] = opt.update(grads, state, params);`.
/// It is a pytree (leaves: those of params, then those of state), so a jitted training step may
/// return it directly.
template <class P, class S>
struct OptimizerUpdate {
  P params;
  S state;
};

// ---- flat updates (the leaves of one step; used by the pytree updates below) --------------------
// g, p and the state vectors hold one entry per parameter leaf, in tree_flatten order; an empty
// g entry (a symbolic zero) counts as zeros of p's aval. `step` is the state's i32[] step count
// (steps taken so far). Each returns the new parameter leaves and fills the new state leaves.

struct SGD;
struct Adam;

namespace detail {
/// The new leaves of one step: parameters, the two state vectors (SGD uses only `a`, the momentum
/// buffers) and the new i32[] step count.
struct FlatStep {
  std::vector<Array> p, a, b;
  Array step;
};
/// One SGD step on flat leaves (see SGD). Throws TypeError if `step` is not an i32[] array.
FlatStep sgd_step(const SGD& opt, const std::vector<Array>& g, const std::vector<Array>& p,
                  const std::vector<Array>& buf, const Array& step, std::source_location loc);
/// One Adam/AdamW step on flat leaves (see Adam). Throws TypeError if `step` is not i32[].
FlatStep adam_step(const Adam& opt, const std::vector<Array>& g, const std::vector<Array>& p,
                   const std::vector<Array>& mu, const std::vector<Array>& nu, const Array& step,
                   std::source_location loc);
/// The i32[] step count 0 (strongly typed, so a traced step keeps one signature across steps).
Array zero_step();
/// zeros_like(p): the initial state leaf of parameter leaf p.
Array zeros_like_leaf(const Array& p);

/// Throws TypeError: `who`.update's `what` (the gradients, state.mu, ...) has another pytree
/// structure than the parameters; names both trees' leaf paths, the first that differs and
/// `why` (tree_check_same's message), at the user's `loc`.
[[noreturn]] void throw_structure_mismatch(const char* who, const char* what, const PathLeaves& params,
                                           const PathLeaves& tree, const std::string& why,
                                           std::source_location loc);
/// The index of the first leaf of `t` that is defined and whose shape differs from the
/// parameter leaf's in `p`, or t.size() when none does.
size_t first_shape_mismatch(const std::vector<Array>& t, const std::vector<Array>& p);
/// Throws ShapeError: `who`.update's `what` leaf for the parameter at `path` has aval `t`, the
/// parameter `p`; at the user's `loc`.
[[noreturn]] void throw_shape_mismatch(const char* who, const char* what, const std::string& path,
                                       const Array& t, const Array& p, std::source_location loc);
/// Flattens `tree` (`what`: the gradients or a state tree) after checking its structure and its
/// leaves' shapes against the parameters': TypeError naming the paths of both trees, ShapeError
/// naming the parameter's path (flatten_with_path, e.g. `layers.1.w`) and both shapes, at `loc`.
template <class P>
std::vector<Array> leaves_like(const P& tree, const P& params, const std::vector<Array>& param_leaves,
                               const char* who, const char* what, std::source_location loc) {
  try {
    tree_check_same(params, tree, loc);
  } catch (const TypeError& e) {
    throw_structure_mismatch(who, what, flatten_with_path(params), flatten_with_path(tree), e.message(), loc);
  }
  std::vector<Array> leaves = tree_flatten(tree);
  const size_t bad = first_shape_mismatch(leaves, param_leaves);
  if (bad < leaves.size())
    throw_shape_mismatch(who, what, flatten_with_path(params).at(bad).first, leaves[bad], param_leaves[bad], loc);
  return leaves;
}
}  // namespace detail

// ---- SGD ----------------------------------------------------------------------------------------
/// State of SGD: the momentum buffers (a pytree shaped like the parameters) and the number of
/// steps taken as an i32[] array (0 after init). A pytree whose leaves are the momentum leaves,
/// then step.
template <class P>
struct SGDState {
  P momentum;
  Array step;
};

/// Stochastic gradient descent with momentum, as torch.optim.SGD (defaults: momentum 0,
/// dampening 0, weight_decay 0, nesterov false). Per leaf, at step t = step + 1 (1-based):
///   g = grad + weight_decay * p
///   buf = g                                     if t == 1
///   buf = momentum * buf + (1 - dampening) * g  otherwise          (only when momentum != 0)
///   g = g + momentum * buf if nesterov, else buf                     (only when momentum != 0)
///   p = p - lr * g
/// The t == 1 case is a select on `step == 0` computed in the graph (both branches are
/// evaluated), so a traced update does not depend on the step's value.
/// Source: https://pytorch.org/docs/stable/generated/torch.optim.SGD.html (algorithm box).
struct SGD {
  double lr = 1e-2;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;

  /// Zero momentum buffers shaped like params (same avals); step = i32[] 0.
  template <class P>
  SGDState<P> init(const P& params) const {
    return SGDState<P>{tree_map([](const Array& p) { return detail::zeros_like_leaf(p); }, params),
                       detail::zero_step()};
  }
  /// One step, as a pure function: returns the new parameters and the new state (step + 1);
  /// grads, state and params are left as they are. Traceable (mj::jit traces it once for all
  /// steps). Throws TypeError if the structures of grads, state.momentum and params differ
  /// (naming the leaf paths of both) or state.step is not an i32[] array, and ShapeError naming
  /// the parameter's path (e.g. `layers.1.w`) and both shapes for a gradient or momentum leaf of
  /// another shape than its parameter; all at the line of the update call.
  template <class P>
  OptimizerUpdate<P, SGDState<P>> update(
      const P& grads, const SGDState<P>& state, const P& params,
      std::source_location loc = std::source_location::current()) const {
    const std::vector<Array> p = tree_flatten(params);
    auto g = detail::leaves_like(grads, params, p, "SGD", "the gradient", loc);
    auto buf = detail::leaves_like(state.momentum, params, p, "SGD", "state.momentum", loc);
    detail::FlatStep s = detail::sgd_step(*this, g, p, buf, state.step, loc);
    return {tree_unflatten(params, s.p, loc),
            SGDState<P>{tree_unflatten(state.momentum, s.a, loc), s.step}};
  }
};

// ---- Adam / AdamW -------------------------------------------------------------------------------
/// State of Adam/AdamW: first and second moment estimates (pytrees shaped like the parameters)
/// and the number of steps taken as an i32[] array (0 after init). A pytree whose leaves are the
/// mu leaves, then the nu leaves, then step.
template <class P>
struct AdamState {
  P mu, nu;
  Array step;
};

/// Adam (Kingma & Ba, https://arxiv.org/abs/1412.6980) exactly as torch.optim.Adam computes it
/// (defaults lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0, L2-style). Per leaf, at step
/// t = step + 1:
///   g  = grad + weight_decay * p
///   mu = b1 * mu + (1 - b1) * g
///   nu = b2 * nu + (1 - b2) * g^2
///   p  = p - (lr / (1 - b1^t)) * mu / (sqrt(nu) / sqrt(1 - b2^t) + eps)
/// The bias corrections are computed in the graph, in each parameter leaf's dtype: t is converted
/// from i32 to that dtype and b^t is lax::pow(b, t) with b rounded to the dtype (so f32 leaves get
/// f32 corrections, f64 leaves f64 ones); lr / (1 - b1^t) and sqrt(1 - b2^t) are rank-0 arrays of
/// the dtype, computed once per dtype and shared by its leaves.
/// Source: https://pytorch.org/docs/stable/generated/torch.optim.Adam.html and PyTorch's
/// _single_tensor_adam (torch/optim/adam.py), which places eps after the bias correction as here.
struct Adam {
  double lr = 1e-3;
  double b1 = 0.9;
  double b2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  /// False: Adam's L2 penalty added to the gradient. True: AdamW's decoupled decay.
  bool decoupled = false;

  /// Zero moments shaped like params (same avals); step = i32[] 0. mu and nu are distinct
  /// buffers (a jitted step may donate the state: each leaf's buffer must be passed once).
  template <class P>
  AdamState<P> init(const P& params) const {
    auto zeros = [&] { return tree_map([](const Array& p) { return detail::zeros_like_leaf(p); }, params); };
    return AdamState<P>{zeros(), zeros(), detail::zero_step()};
  }
  /// One step, as a pure function: returns the new parameters and the new state (step + 1);
  /// grads, state and params are left as they are. Traceable (mj::jit traces it once for all
  /// steps). When every leaf is a concrete f32/f64 array of one aval, each leaf runs as one fused
  /// loop computing the same expressions in the same order. Throws TypeError if the structures of
  /// grads, state.mu, state.nu and params differ (naming the leaf paths of both) or state.step is
  /// not an i32[] array, and ShapeError naming the parameter's path (e.g. `layers.1.w`) and both
  /// shapes for a gradient, mu or nu leaf of another shape than its parameter; all at the line of
  /// the update call (errors name AdamW when decoupled).
  template <class P>
  OptimizerUpdate<P, AdamState<P>> update(
      const P& grads, const AdamState<P>& state, const P& params,
      std::source_location loc = std::source_location::current()) const {
    const char* who = decoupled ? "AdamW" : "Adam";
    const std::vector<Array> p = tree_flatten(params);
    auto g = detail::leaves_like(grads, params, p, who, "the gradient", loc);
    auto mu = detail::leaves_like(state.mu, params, p, who, "state.mu", loc);
    auto nu = detail::leaves_like(state.nu, params, p, who, "state.nu", loc);
    detail::FlatStep s = detail::adam_step(*this, g, p, mu, nu, state.step, loc);
    return {tree_unflatten(params, s.p, loc),
            AdamState<P>{tree_unflatten(state.mu, s.a, loc), tree_unflatten(state.nu, s.b, loc),
                         s.step}};
  }
};

/// AdamW (Loshchilov & Hutter, https://arxiv.org/abs/1711.05101) as torch.optim.AdamW
/// (defaults lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0.01): first
///   p = p * (1 - lr * weight_decay)
/// then the Adam step above without the L2 term.
/// Source: https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html.
struct AdamW : Adam {
  AdamW() {
    weight_decay = 0.01;
    decoupled = true;
  }
  AdamW(double lr_, double b1_ = 0.9, double b2_ = 0.999, double eps_ = 1e-8, double wd = 0.01) {
    lr = lr_;
    b1 = b1_;
    b2 = b2_;
    eps = eps_;
    weight_decay = wd;
    decoupled = true;
  }
};

}  // namespace minijax::optim

// ---- pytree traits of the states (template structs, so not MJ_REGISTER_PYTREE) -----------------
namespace minijax {

/// SGDState<P>: leaves of momentum, then step. Structure "SGDState(<momentum>, *)"; paths
/// `momentum.<path in P>`, `step`.
template <class P>
struct pytree<optim::SGDState<P>> {
  using T = optim::SGDState<P>;
  static void flatten(const T& s, std::vector<Array>& out) {
    pytree<P>::flatten(s.momentum, out);
    out.push_back(s.step);
  }
  static void flatten_with_path(const T& s, const std::string& prefix, PathLeaves& out) {
    detail::flatten_with_path_into(s.momentum, detail::join_path(prefix, "momentum"), out);
    out.emplace_back(detail::join_path(prefix, "step"), s.step);
  }
  static T unflatten(const T& like, const Array*& next) {
    P m = pytree<P>::unflatten(like.momentum, next);
    return T{std::move(m), *next++};
  }
  static std::string structure(const T& s) {
    return "SGDState(" + pytree<P>::structure(s.momentum) + ", *)";
  }
  static void check_same(const T& a, const T& b, std::source_location loc) {
    pytree<P>::check_same(a.momentum, b.momentum, loc);
  }
};

/// AdamState<P>: leaves of mu, then of nu, then step. Structure "AdamState(<mu>, <nu>, *)";
/// paths `mu.<path in P>`, `nu.<path in P>`, `step`.
template <class P>
struct pytree<optim::AdamState<P>> {
  using T = optim::AdamState<P>;
  static void flatten(const T& s, std::vector<Array>& out) {
    pytree<P>::flatten(s.mu, out);
    pytree<P>::flatten(s.nu, out);
    out.push_back(s.step);
  }
  static void flatten_with_path(const T& s, const std::string& prefix, PathLeaves& out) {
    detail::flatten_with_path_into(s.mu, detail::join_path(prefix, "mu"), out);
    detail::flatten_with_path_into(s.nu, detail::join_path(prefix, "nu"), out);
    out.emplace_back(detail::join_path(prefix, "step"), s.step);
  }
  static T unflatten(const T& like, const Array*& next) {
    P mu = pytree<P>::unflatten(like.mu, next);  // sequenced: mu's leaves come first
    P nu = pytree<P>::unflatten(like.nu, next);
    return T{std::move(mu), std::move(nu), *next++};
  }
  static std::string structure(const T& s) {
    return "AdamState(" + pytree<P>::structure(s.mu) + ", " + pytree<P>::structure(s.nu) + ", *)";
  }
  static void check_same(const T& a, const T& b, std::source_location loc) {
    pytree<P>::check_same(a.mu, b.mu, loc);
    pytree<P>::check_same(a.nu, b.nu, loc);
  }
};

/// OptimizerUpdate<P, S>: leaves of params, then of state. Structure "OptimizerUpdate(<p>, <s>)";
/// paths `params.<path in P>`, `state.<path in S>`.
template <class P, class S>
struct pytree<optim::OptimizerUpdate<P, S>> {
  using T = optim::OptimizerUpdate<P, S>;
  static void flatten(const T& u, std::vector<Array>& out) {
    pytree<P>::flatten(u.params, out);
    pytree<S>::flatten(u.state, out);
  }
  static void flatten_with_path(const T& u, const std::string& prefix, PathLeaves& out) {
    detail::flatten_with_path_into(u.params, detail::join_path(prefix, "params"), out);
    detail::flatten_with_path_into(u.state, detail::join_path(prefix, "state"), out);
  }
  static T unflatten(const T& like, const Array*& next) {
    P p = pytree<P>::unflatten(like.params, next);
    S s = pytree<S>::unflatten(like.state, next);
    return T{std::move(p), std::move(s)};
  }
  static std::string structure(const T& u) {
    return "OptimizerUpdate(" + pytree<P>::structure(u.params) + ", " +
           pytree<S>::structure(u.state) + ")";
  }
  static void check_same(const T& a, const T& b, std::source_location loc) {
    pytree<P>::check_same(a.params, b.params, loc);
    pytree<S>::check_same(a.state, b.state, loc);
  }
};

}  // namespace minijax
