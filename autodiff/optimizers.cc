// minijax optimizers: the per-leaf update formulas of SGD, Adam and AdamW.
// Written with the numpy-level API (runs eagerly and under tracing); Adam has a fused one-pass
// loop for concrete f32/f64 leaves that computes the same expressions in the same order.
#include "autodiff/optimizers.h"

#include <cmath>

#include "core/numpy.h"

namespace minijax::optim {

Array SGD::zeros_like_leaf(const Array& p) { return zeros_like(p); }

Array sgd_leaf(const Array& g_in, const Array& p, Array& buf, bool first, double lr, double momentum,
               double dampening, double weight_decay, bool nesterov) {
  Array g = g_in.defined() ? g_in : zeros_like(p);
  if (weight_decay != 0.0) g = g + weight_decay * p;
  if (momentum != 0.0) {
    buf = first ? g : momentum * buf + (1.0 - dampening) * g;
    g = nesterov ? g + momentum * buf : buf;
  }
  return p - lr * g;
}

namespace {

// True when every operand is a concrete (untraced) array of p's shape, dtype (f32 or f64) and
// memory kind: then the fused loop below may read their buffers directly.
bool fusable(const Array& g, const Array& p, const Array& mu, const Array& nu) {
  if (!g.defined() || !p.is_concrete() || !g.is_concrete() || !mu.is_concrete() || !nu.is_concrete())
    return false;
  if (p.dtype() != DType::f32 && p.dtype() != DType::f64) return false;
  for (const Array* a : {&g, &mu, &nu})
    if (!a->aval().same_type(p.aval())) return false;
  return true;
}

// One pass over the elements with the expressions of the generic path, in p's precision (the
// constants rounded to it as weakly typed scalars are).
template <class T>
Array adam_fused(const Array& g, const Array& p, Array& mu, Array& nu, double step_size,
                 double sqrt_bc2, double b1, double b2, double eps, double lr, double weight_decay,
                 bool decoupled) {
  Array p_out = Array::allocate(p.aval());
  Array mu_out = Array::allocate(mu.aval());
  Array nu_out = Array::allocate(nu.aval());
  const T* gp = g.data<T>();
  const T* pp = p.data<T>();
  const T* mp = mu.data<T>();
  const T* vp = nu.data<T>();
  T* po = p_out.mutable_data<T>();
  T* mo = mu_out.mutable_data<T>();
  T* vo = nu_out.mutable_data<T>();
  const T cb1 = T(b1), c1b1 = T(1.0 - b1), cb2 = T(b2), c1b2 = T(1.0 - b2);
  const T css = T(step_size), csb = T(sqrt_bc2), ceps = T(eps), cwd = T(weight_decay);
  const T decay = T(1.0 - lr * weight_decay);
  const bool wd = weight_decay != 0.0;
  const int64_t n = p.size();
  for (int64_t i = 0; i < n; ++i) {
    T gi = gp[i], pi = pp[i];
    if (wd) {
      if (decoupled) pi = pi * decay;
      else gi = gi + cwd * pi;
    }
    const T m = cb1 * mp[i] + c1b1 * gi;
    const T v = cb2 * vp[i] + c1b2 * (gi * gi);
    mo[i] = m;
    vo[i] = v;
    po[i] = pi - css * (m / (std::sqrt(v) / csb + ceps));
  }
  mu = mu_out;
  nu = nu_out;
  return p_out;
}

}  // namespace

Array adam_leaf(const Array& g_in, const Array& p_in, Array& mu, Array& nu, int64_t t, double lr,
                double b1, double b2, double eps, double weight_decay, bool decoupled) {
  const double bc1 = 1.0 - std::pow(b1, double(t));
  const double bc2 = 1.0 - std::pow(b2, double(t));
  const double step_size = lr / bc1;
  const double sqrt_bc2 = std::sqrt(bc2);
  if (fusable(g_in, p_in, mu, nu)) {
    if (p_in.dtype() == DType::f32)
      return adam_fused<float>(g_in, p_in, mu, nu, step_size, sqrt_bc2, b1, b2, eps, lr,
                               weight_decay, decoupled);
    return adam_fused<double>(g_in, p_in, mu, nu, step_size, sqrt_bc2, b1, b2, eps, lr,
                              weight_decay, decoupled);
  }
  Array g = g_in.defined() ? g_in : zeros_like(p_in);
  Array p = p_in;
  if (weight_decay != 0.0) {
    if (decoupled)
      p = p * (1.0 - lr * weight_decay);
    else
      g = g + weight_decay * p;
  }
  mu = b1 * mu + (1.0 - b1) * g;
  nu = b2 * nu + (1.0 - b2) * (g * g);
  Array denom = sqrt(nu) / sqrt_bc2 + eps;
  return p - step_size * (mu / denom);
}

}  // namespace minijax::optim
