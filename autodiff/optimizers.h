// minijax optimizers: SGD (with momentum, Nesterov, weight decay), Adam and AdamW over pytrees.
// Owns namespace minijax::optim: the optimizer configs, their pytree states, init and update.
#pragma once
#include <cstdint>
#include <source_location>
#include <vector>

#include "core/array.h"
#include "core/pytree.h"

namespace minijax::optim {

// ---- leaf updates (one parameter array; used by the pytree updates below) -----------------------
// Each takes the gradient g, the parameter p and its state arrays, and returns the new parameter
// while replacing the state arrays. An empty g (a symbolic zero) counts as zeros of p's aval.
// They are written with the numpy-level API, so they run eagerly and can be traced.

/// PyTorch's torch.optim.SGD step for one leaf; `first` is true on the first step (the momentum
/// buffer is then initialised to the gradient, as PyTorch does).
Array sgd_leaf(const Array& g, const Array& p, Array& buf, bool first, double lr, double momentum,
               double dampening, double weight_decay, bool nesterov);
/// PyTorch's torch.optim.Adam / AdamW step for one leaf at step t >= 1 (see Adam below). When
/// all four arrays are concrete f32 or f64 arrays of one aval it runs as one fused loop (same
/// expressions, same order, in the leaf's precision); otherwise (tracers, empty g) through the
/// numpy-level ops.
Array adam_leaf(const Array& g, const Array& p, Array& mu, Array& nu, int64_t t, double lr,
                double b1, double b2, double eps, double weight_decay, bool decoupled);

namespace detail {
/// Flattens a state tree and checks its structure against the parameters (TypeError otherwise).
template <class P>
std::vector<Array> leaves_like(const P& tree, const P& params, std::source_location loc) {
  tree_check_same(params, tree, loc);
  return tree_flatten(tree);
}
}  // namespace detail

// ---- SGD ----------------------------------------------------------------------------------------
/// State of SGD: the momentum buffers (a pytree shaped like the parameters) and the step count.
template <class P>
struct SGDState {
  P momentum;
  int64_t step = 0;
};

/// Stochastic gradient descent with momentum, as torch.optim.SGD (defaults: momentum 0,
/// dampening 0, weight_decay 0, nesterov false). Per leaf, at step t (1-based):
///   g = grad + weight_decay * p
///   buf = g                                     if t == 1
///   buf = momentum * buf + (1 - dampening) * g  otherwise          (only when momentum != 0)
///   g = g + momentum * buf if nesterov, else buf                     (only when momentum != 0)
///   p = p - lr * g
/// Source: https://pytorch.org/docs/stable/generated/torch.optim.SGD.html (algorithm box).
struct SGD {
  double lr = 1e-2;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;

  /// Zero momentum buffers shaped like params; step 0.
  template <class P>
  SGDState<P> init(const P& params) const {
    return SGDState<P>{tree_map([](const Array& p) { return zeros_like_leaf(p); }, params), 0};
  }
  /// One step: returns the new parameters and advances `state`. Throws TypeError if the
  /// structures of grads, state and params differ.
  template <class P>
  P update(const P& grads, SGDState<P>& state, const P& params,
           std::source_location loc = std::source_location::current()) const {
    auto g = detail::leaves_like(grads, params, loc);
    auto buf = detail::leaves_like(state.momentum, params, loc);
    auto p = tree_flatten(params);
    bool first = state.step == 0;
    for (size_t i = 0; i < p.size(); ++i)
      p[i] = sgd_leaf(g[i], p[i], buf[i], first, lr, momentum, dampening, weight_decay, nesterov);
    state.momentum = tree_unflatten(state.momentum, buf, loc);
    state.step += 1;
    return tree_unflatten(params, p, loc);
  }
  static Array zeros_like_leaf(const Array& p);
};

// ---- Adam / AdamW -------------------------------------------------------------------------------
/// State of Adam/AdamW: first and second moment estimates (pytrees shaped like the parameters)
/// and the number of steps taken.
template <class P>
struct AdamState {
  P mu, nu;
  int64_t step = 0;
};

/// Adam (Kingma & Ba, https://arxiv.org/abs/1412.6980) exactly as torch.optim.Adam computes it
/// (defaults lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0, L2-style). Per leaf, at step t:
///   g  = grad + weight_decay * p
///   mu = b1 * mu + (1 - b1) * g
///   nu = b2 * nu + (1 - b2) * g^2
///   p  = p - (lr / (1 - b1^t)) * mu / (sqrt(nu) / sqrt(1 - b2^t) + eps)
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

  /// Zero moments shaped like params; step 0.
  template <class P>
  AdamState<P> init(const P& params) const {
    auto z = tree_map([](const Array& p) { return SGD::zeros_like_leaf(p); }, params);
    return AdamState<P>{z, z, 0};
  }
  /// One step: returns the new parameters and advances `state`. Throws TypeError if the
  /// structures of grads, state and params differ.
  template <class P>
  P update(const P& grads, AdamState<P>& state, const P& params,
           std::source_location loc = std::source_location::current()) const {
    auto g = detail::leaves_like(grads, params, loc);
    auto mu = detail::leaves_like(state.mu, params, loc);
    auto nu = detail::leaves_like(state.nu, params, loc);
    auto p = tree_flatten(params);
    int64_t t = state.step + 1;
    for (size_t i = 0; i < p.size(); ++i)
      p[i] = adam_leaf(g[i], p[i], mu[i], nu[i], t, lr, b1, b2, eps, weight_decay, decoupled);
    state.mu = tree_unflatten(state.mu, mu, loc);
    state.nu = tree_unflatten(state.nu, nu, loc);
    state.step = t;
    return tree_unflatten(params, p, loc);
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
