// minijax optimizers: the flat (per-leaf) steps of SGD, Adam and AdamW.
// Written with the numpy-level API (runs eagerly and under tracing); Adam has a fused one-pass
// loop for concrete f32/f64 leaves that computes the same expressions in the same order.
#include "autodiff/optimizers.h"

#include <cmath>
#include <utility>

#include "core/numpy.h"

namespace minijax::optim {

namespace detail {

Array zeros_like_leaf(const Array& p) { return zeros_like(p); }

Array zero_step() { return scalar(0, DType::i32); }

namespace {
std::string path_name(const std::string& path) { return path.empty() ? "<root>" : path; }

std::string path_list(const PathLeaves& leaves) {
  std::string s = "[";
  for (size_t i = 0; i < leaves.size() && i < 16; ++i) s += (i ? ", " : "") + path_name(leaves[i].first);
  if (leaves.size() > 16) s += ", ... (" + std::to_string(leaves.size()) + " leaves)";
  return s + "]";
}
}  // namespace

void throw_structure_mismatch(const char* who, const char* what, const PathLeaves& params, const PathLeaves& tree,
                              const std::string& why, std::source_location loc) {
  size_t i = 0;
  while (i < params.size() && i < tree.size() && params[i].first == tree[i].first) ++i;
  std::string first = "`" + (i < params.size() ? path_name(params[i].first) : std::string("(none)")) + "` vs `" +
                      (i < tree.size() ? path_name(tree[i].first) : std::string("(none)")) + "`";
  throw TypeError(std::string(who) + ".update: " + what + " has another pytree structure than the parameters: " +
                      "parameter paths " + path_list(params) + ", " + what + " paths " + path_list(tree) +
                      " (first difference: " + first + "; " + why + ")",
                  loc);
}

size_t first_shape_mismatch(const std::vector<Array>& t, const std::vector<Array>& p) {
  for (size_t i = 0; i < t.size() && i < p.size(); ++i)
    if (t[i].defined() && p[i].defined() && t[i].shape() != p[i].shape()) return i;
  return t.size();
}

void throw_shape_mismatch(const char* who, const char* what, const std::string& path, const Array& t, const Array& p,
                          std::source_location loc) {
  throw ShapeError(std::string(who) + ".update: " + what + " of parameter `" + path_name(path) + "` has shape " +
                       t.aval().str() + " but the parameter has shape " + p.aval().str(),
                   loc);
}

}  // namespace detail

namespace {

// TypeError unless step is the i32[] step count and every parameter leaf is floating point.
void check_inputs(const char* who, const std::vector<Array>& p, const Array& step,
                  std::source_location loc) {
  if (!step.defined() || step.dtype() != DType::i32 || step.ndim() != 0)
    throw TypeError(std::string(who) + ".update: state.step must be an i32[] array (the number of " +
                        "steps taken), got " + (step.defined() ? step.aval().str() : "an empty array"),
                    loc);
  for (size_t i = 0; i < p.size(); ++i)
    if (!is_floating(p[i].dtype()))
      throw TypeError(std::string(who) + ".update: parameter leaf " + std::to_string(i) + " is " +
                          p[i].aval().str() + "; optimizers update floating-point parameters only",
                      loc);
}

Array grad_or_zeros(const Array& g, const Array& p) { return g.defined() ? g : zeros_like(p); }

// ---- Adam ---------------------------------------------------------------------------------------

// The bias-corrected factors of one dtype at step t (i32[]): step_size = lr / (1 - b1^t) and
// sqrt_bc2 = sqrt(1 - b2^t), rank-0 arrays of dtype computed with minijax ops (so a traced t
// stays symbolic). b1, b2 are rounded to dtype first, as PyTorch's tensors of that dtype are.
struct Correction {
  DType dtype;
  Array step_size, sqrt_bc2;
};

Correction adam_correction(const Array& t, DType dtype, const Adam& o) {
  Array tf = lax::convert_element_type(t, dtype);
  Array bc1 = 1.0 - lax::pow(scalar(o.b1, dtype), tf);
  Array bc2 = 1.0 - lax::pow(scalar(o.b2, dtype), tf);
  return Correction{dtype, o.lr / bc1, sqrt(bc2)};
}

// True when every operand is a concrete (untraced) array of p's shape, dtype (f32 or f64) and
// memory kind, and the corrections are concrete: then the fused loop may read their buffers.
bool fusable(const Array& g, const Array& p, const Array& mu, const Array& nu, const Correction& c) {
  if (!g.defined() || !p.is_concrete() || !g.is_concrete() || !mu.is_concrete() || !nu.is_concrete())
    return false;
  if (!c.step_size.is_concrete() || !c.sqrt_bc2.is_concrete()) return false;
  if (p.dtype() != DType::f32 && p.dtype() != DType::f64) return false;
  for (const Array* a : {&g, &mu, &nu})
    if (!a->aval().same_type(p.aval())) return false;
  return true;
}

struct LeafOut {
  Array p, mu, nu;
};

// One pass over the elements with the expressions of the generic path, in p's precision (the
// constants rounded to it as weakly typed scalars are; the corrections read from their arrays).
template <class T>
LeafOut adam_fused(const Array& g, const Array& p, const Array& mu, const Array& nu,
                   const Correction& c, const Adam& o) {
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
  const T cb1 = T(o.b1), c1b1 = T(1.0 - o.b1), cb2 = T(o.b2), c1b2 = T(1.0 - o.b2);
  const T css = c.step_size.data<T>()[0], csb = c.sqrt_bc2.data<T>()[0];
  const T ceps = T(o.eps), cwd = T(o.weight_decay);
  const T decay = T(1.0 - o.lr * o.weight_decay);
  const bool wd = o.weight_decay != 0.0;
  const int64_t n = p.size();
  for (int64_t i = 0; i < n; ++i) {
    T gi = gp[i], pi = pp[i];
    if (wd) {
      if (o.decoupled) pi = pi * decay;
      else gi = gi + cwd * pi;
    }
    const T m = cb1 * mp[i] + c1b1 * gi;
    const T v = cb2 * vp[i] + c1b2 * (gi * gi);
    mo[i] = m;
    vo[i] = v;
    po[i] = pi - css * (m / (std::sqrt(v) / csb + ceps));
  }
  return LeafOut{p_out, mu_out, nu_out};
}

// Adam/AdamW for one leaf (see Adam in the header): fused when fusable, else op by op.
LeafOut adam_leaf(const Array& g_in, const Array& p_in, const Array& mu_in, const Array& nu_in,
                  const Correction& c, const Adam& o) {
  if (fusable(g_in, p_in, mu_in, nu_in, c)) {
    if (p_in.dtype() == DType::f32) return adam_fused<float>(g_in, p_in, mu_in, nu_in, c, o);
    return adam_fused<double>(g_in, p_in, mu_in, nu_in, c, o);
  }
  Array g = grad_or_zeros(g_in, p_in);
  Array p = p_in;
  if (o.weight_decay != 0.0) {
    if (o.decoupled)
      p = p * (1.0 - o.lr * o.weight_decay);
    else
      g = g + o.weight_decay * p;
  }
  Array mu = o.b1 * mu_in + (1.0 - o.b1) * g;
  Array nu = o.b2 * nu_in + (1.0 - o.b2) * (g * g);
  Array denom = sqrt(nu) / c.sqrt_bc2 + o.eps;
  return LeafOut{p - c.step_size * (mu / denom), mu, nu};
}

}  // namespace

namespace detail {

FlatStep sgd_step(const SGD& o, const std::vector<Array>& g, const std::vector<Array>& p,
                  const std::vector<Array>& buf, const Array& step, std::source_location loc) {
  check_inputs("SGD", p, step, loc);
  FlatStep out;
  out.p.resize(p.size());
  out.a = buf;
  // PyTorch initialises the buffer to the gradient on the first step: a select on step == 0.
  Array first = o.momentum != 0.0 ? (step == 0) : Array();
  for (size_t i = 0; i < p.size(); ++i) {
    Array gi = grad_or_zeros(g[i], p[i]);
    if (o.weight_decay != 0.0) gi = gi + o.weight_decay * p[i];
    if (o.momentum != 0.0) {
      Array damped = o.dampening != 0.0 ? (1.0 - o.dampening) * gi : gi;  // exact when 0
      Array b = where(first, gi, o.momentum * buf[i] + damped);
      gi = o.nesterov ? gi + o.momentum * b : b;
      out.a[i] = b;
    }
    out.p[i] = p[i] - o.lr * gi;
  }
  out.step = step + 1;
  return out;
}

FlatStep adam_step(const Adam& o, const std::vector<Array>& g, const std::vector<Array>& p,
                   const std::vector<Array>& mu, const std::vector<Array>& nu, const Array& step,
                   std::source_location loc) {
  check_inputs("Adam", p, step, loc);
  FlatStep out;
  out.step = step + 1;  // t: this step's 1-based number
  std::vector<Correction> corrections;  // one per parameter dtype, shared by its leaves
  auto correction_for = [&](DType d) -> const Correction& {
    for (auto& c : corrections)
      if (c.dtype == d) return c;
    corrections.push_back(adam_correction(out.step, d, o));
    return corrections.back();
  };
  for (size_t i = 0; i < p.size(); ++i) {
    LeafOut r = adam_leaf(g[i], p[i], mu[i], nu[i], correction_for(p[i].dtype()), o);
    out.p.push_back(std::move(r.p));
    out.a.push_back(std::move(r.mu));
    out.b.push_back(std::move(r.nu));
  }
  return out;
}

}  // namespace detail

}  // namespace minijax::optim
