// minijax optimizers: the per-leaf update formulas of SGD, Adam and AdamW.
// Written with the numpy-level API so that they run eagerly and under tracing alike.
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

Array adam_leaf(const Array& g_in, const Array& p_in, Array& mu, Array& nu, int64_t t, double lr,
                double b1, double b2, double eps, double weight_decay, bool decoupled) {
  Array g = g_in.defined() ? g_in : zeros_like(p_in);
  Array p = p_in;
  if (weight_decay != 0.0) {
    if (decoupled)
      p = p * (1.0 - lr * weight_decay);
    else
      g = g + weight_decay * p;
  }
  mu = b1 * mu + (1.0 - b1) * g;
  nu = b2 * nu + (1.0 - b2) * square(g);
  const double bc1 = 1.0 - std::pow(b1, double(t));
  const double bc2 = 1.0 - std::pow(b2, double(t));
  const double step_size = lr / bc1;
  Array denom = sqrt(nu) * (1.0 / std::sqrt(bc2)) + eps;
  return p - step_size * (mu / denom);
}

}  // namespace minijax::optim
