// minijax gradient checking (JAX's jax/_src/public_test_util.py): check_jvp, check_vjp and
// check_grads. Owns the host-side finite differences, random directions and closeness test.
#include "autodiff/check_grads.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "autodiff/jvp.h"
#include "autodiff/transpose.h"

namespace minijax {
namespace {

constexpr double kEps = 1e-4;  // JAX's EPS

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// The elements of a concrete array as doubles.
std::vector<double> to_doubles(const Array& a, std::source_location loc) {
  Array c = a.concrete(loc, "a concrete value for check_grads");
  std::vector<double> out(size_t(c.size()));
  if (c.dtype() == DType::float0) return out;
  dispatch_dtype(c.dtype(), [&]<class T>() {
    const T* d = c.data<T>(loc);
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, bfloat16>) out[i] = double(float(d[i]));
      else out[i] = double(d[i]);
    }
  });
  return out;
}

template <class T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, bfloat16>) return bfloat16(float(v));
  else return T(v);
}
template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, bfloat16>) return double(float(v));
  else return double(v);
}

/// A concrete array of aval `a` (weak type dropped) holding `vals` rounded to its dtype.
Array from_doubles(const ShapedArray& a, const std::vector<double>& vals) {
  ShapedArray av = a;
  av.weak_type = false;
  Array r = Array::allocate(av);
  dispatch_dtype(a.dtype, [&]<class T>() {
    T* d = r.mutable_data<T>();
    for (size_t i = 0; i < vals.size(); ++i) d[i] = from_double<T>(vals[i]);
  });
  return r;
}

/// JAX's rand_like: standard normal values in x's dtype.
Array rand_like(std::mt19937_64& rng, const ShapedArray& a) {
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<double> v(size_t(a.size()));
  for (auto& e : v) e = nd(rng);
  return from_doubles(a, v);
}

/// x + sign * (eps * t), each step rounded to x's dtype (JAX's add(primals, scalar_mul(t, eps))).
Array perturb(const Array& x, const Array& t, double eps, double sign, std::source_location loc) {
  std::vector<double> xv = to_doubles(x, loc), tv = to_doubles(t, loc), out(xv.size());
  dispatch_dtype(x.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, float>) {
      for (size_t i = 0; i < xv.size(); ++i) {
        float delta = float(eps) * float(tv[i]);
        out[i] = double(sign > 0 ? float(xv[i]) + delta : float(xv[i]) - delta);
      }
    } else {
      for (size_t i = 0; i < xv.size(); ++i) {
        double delta = as_double(from_double<T>(as_double(from_double<T>(eps)) * tv[i]));
        out[i] = as_double(from_double<T>(sign > 0 ? xv[i] + delta : xv[i] - delta));
      }
    }
  });
  return from_doubles(x.aval(), out);
}

/// JAX's numerical_jvp: central differences of f at args along tangents.
std::vector<std::vector<double>> numerical_jvp(const FlatFn& f, const std::vector<Array>& args,
                                               const std::vector<Array>& tangents, double eps,
                                               std::source_location loc) {
  std::vector<Array> pos, neg;
  for (size_t i = 0; i < args.size(); ++i) {
    pos.push_back(perturb(args[i], tangents[i], eps, +1, loc));
    neg.push_back(perturb(args[i], tangents[i], eps, -1, loc));
  }
  std::vector<Array> fp = f(pos), fn = f(neg);
  std::vector<std::vector<double>> out;
  for (size_t k = 0; k < fp.size(); ++k) {
    auto a = to_doubles(fp[k], loc), b = to_doubles(fn[k], loc);
    std::vector<double> d(a.size());
    for (size_t i = 0; i < a.size(); ++i) d[i] = (a[i] == b[i] ? 0.0 : a[i] - b[i]) * (0.5 / eps);
    out.push_back(std::move(d));
  }
  return out;
}

double tol_for(DType d, const std::optional<double>& user) {
  return user ? *user : default_gradient_tolerance(d);
}

/// numpy's assert_allclose(actual, desired, atol, rtol) with JAX's size-scaled tolerances.
void check_close(const std::vector<double>& got, const std::vector<double>& want, DType dtype,
                 const GradCheckOptions& opts, const std::string& what, int order, size_t leaf,
                 std::source_location loc) {
  const double n = double(want.size());
  double atol = tol_for(dtype, opts.atol) * n;
  double rtol = tol_for(dtype, opts.rtol) * n;
  if (rtol == 0) rtol = 1e-7;  // numpy's default when JAX passes no rtol
  double max_abs = 0, max_rel = 0;
  bool failed = false;
  size_t worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < want.size(); ++i) {
    double a = got[i], b = want[i];
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(a) || std::isinf(b)) {
      if (a == b) continue;
      failed = true;
      max_abs = INFINITY;
      worst = i;
      worst_excess = INFINITY;
      continue;
    }
    double err = std::fabs(a - b);
    if (std::isnan(err)) err = INFINITY;
    max_abs = std::max(max_abs, err);
    if (b != 0) max_rel = std::max(max_rel, err / std::fabs(b));
    double excess = err - (atol + rtol * std::fabs(b));
    if (excess > 0 || std::isnan(a) != std::isnan(b)) {
      failed = true;
      if (!(excess <= worst_excess)) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  if (!failed) return;
  throw GradCheckError("check_grads: " + what + " mismatch (derivative order " +
                           std::to_string(order) + ", output " + std::to_string(leaf) + ", " +
                           dtype_name(dtype) + ", " + std::to_string(want.size()) +
                           " elements): max abs error " + fmt(max_abs) + ", max rel error " +
                           fmt(max_rel) + "; atol " + fmt(atol) + ", rtol " + fmt(rtol) +
                           " (tolerance x size, as JAX); worst element " + std::to_string(worst) +
                           ": got " + fmt(got[worst]) + ", expected " + fmt(want[worst]),
                       loc);
}

void check_floating_args(const std::vector<Array>& args, std::source_location loc) {
  for (size_t i = 0; i < args.size(); ++i)
    if (!is_floating(args[i].dtype()))
      throw TypeError("check_grads: argument leaf " + std::to_string(i) + " is " +
                          args[i].aval().str() + "; gradients are checked for floating arguments only",
                      loc);
}

void check_primals(const std::vector<Array>& got, const std::vector<Array>& want,
                   const GradCheckOptions& opts, const std::string& what, int order,
                   std::source_location loc) {
  if (got.size() != want.size())
    throw GradCheckError("check_grads: " + what + " primal: " + std::to_string(got.size()) +
                             " outputs vs " + std::to_string(want.size()) + " from f",
                         loc);
  for (size_t k = 0; k < got.size(); ++k) {
    if (got[k].shape() != want[k].shape())
      throw GradCheckError("check_grads: " + what + " primal output " + std::to_string(k) +
                               " is " + got[k].aval().str() + " but f gives " + want[k].aval().str(),
                           loc);
    check_close(to_doubles(got[k], loc), to_doubles(want[k], loc), want[k].dtype(), opts,
                what + " primal", order, k, loc);
  }
}

/// The dtype whose tolerance applies to an inner product of leaves of these dtypes (numpy
/// promotes mixed float dtypes to the widest).
DType widest(const std::vector<Array>& xs, DType d) {
  auto rank = [](DType t) { return t == DType::f64 ? 3 : t == DType::f32 ? 2 : t == DType::bf16 ? 1 : 0; };
  for (auto& x : xs)
    if (rank(x.dtype()) > rank(d)) d = x.dtype();
  return d;
}

double inner(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t i = 0; i < a[k].size(); ++i) s += a[k][i] * b[k][i];
  return s;
}

std::vector<Array> slice_vec(const std::vector<Array>& v, size_t from, size_t to) {
  return std::vector<Array>(v.begin() + std::ptrdiff_t(from), v.begin() + std::ptrdiff_t(to));
}

// The modes check_grads was asked for: forward (JVP) and reverse (VJP).
struct Modes {
  bool fwd = false, rev = false;
};

void check_grads_rec(const FlatFn& f, const std::vector<Array>& args, int order, int depth, Modes modes,
                     const GradCheckOptions& opts, const std::string& err_msg, std::source_location loc) {
  if (modes.fwd) {
    std::string msg = err_msg.empty() ? "JVP" : "JVP of " + err_msg;
    check_jvp(f, args, opts, msg, depth, loc);
    if (order > 1) {
      size_t n = args.size();
      FlatFn g = [f, n, loc](const std::vector<Array>& xs) {
        auto [po, to] = jvp_flat(f, slice_vec(xs, 0, n), slice_vec(xs, n, xs.size()), loc);
        for (size_t i = 0; i < to.size(); ++i) po.push_back(instantiate_zero(to[i], po[i].aval()));
        return po;
      };
      std::vector<Array> args2 = args;
      args2.insert(args2.end(), args.begin(), args.end());
      check_grads_rec(g, args2, order - 1, depth + 1, modes, opts, msg, loc);
    }
  }
  if (modes.rev) {
    std::string msg = err_msg.empty() ? "VJP" : "VJP of " + err_msg;
    check_vjp(f, args, opts, msg, depth, loc);
    if (order > 1) {
      FlatFn g = [f, loc](const std::vector<Array>& xs) {
        VjpResult vr = vjp_flat(f, xs, loc);
        return vr.pullback(vr.primal_outs, loc);
      };
      check_grads_rec(g, args, order - 1, depth + 1, modes, opts, msg, loc);
    }
  }
}

}  // namespace

double default_gradient_tolerance(DType d) {
  switch (d) {
    case DType::bf16: return 1e-1;
    case DType::f32: return 2e-3;
    case DType::f64: return 1e-5;
    default: return 0.0;
  }
}

void check_jvp(const FlatFn& f, const std::vector<Array>& args, const GradCheckOptions& opts,
               const std::string& what, int order, std::source_location loc) {
  check_floating_args(args, loc);
  const double eps = opts.eps.value_or(kEps);
  std::mt19937_64 rng(0);
  std::vector<Array> tangents;
  for (auto& a : args) tangents.push_back(rand_like(rng, a.aval()));
  auto [v_out, t_out] = jvp_flat(f, args, tangents, loc);
  std::vector<Array> v_expected = f(args);
  check_primals(v_out, v_expected, opts, what, order, loc);
  auto t_expected = numerical_jvp(f, args, tangents, eps, loc);
  for (size_t k = 0; k < t_out.size(); ++k) {
    if (!is_floating(v_out[k].dtype())) continue;
    Array t = instantiate_zero(t_out[k], v_out[k].aval());
    check_close(to_doubles(t, loc), t_expected[k], v_out[k].dtype(), opts, what + " tangent",
                order, k, loc);
  }
}

void check_vjp(const FlatFn& f, const std::vector<Array>& args, const GradCheckOptions& opts,
               const std::string& what, int order, std::source_location loc) {
  check_floating_args(args, loc);
  const double eps = opts.eps.value_or(kEps);
  VjpResult vr = vjp_flat(f, args, loc);
  std::vector<Array> v_expected = f(args);
  check_primals(vr.primal_outs, v_expected, opts, what, order, loc);
  std::mt19937_64 rng(0);
  std::vector<Array> tangents;
  for (auto& a : args) tangents.push_back(rand_like(rng, a.aval()));
  auto tangent_out = numerical_jvp(f, args, tangents, eps, loc);
  std::vector<Array> cts;
  std::vector<std::vector<double>> ct_vals, t_out_used;
  for (size_t k = 0; k < vr.primal_outs.size(); ++k) {
    const ShapedArray& oa = vr.primal_outs[k].aval();
    if (!is_floating(oa.dtype)) {
      cts.push_back(Array());
      continue;
    }
    cts.push_back(rand_like(rng, oa));
    ct_vals.push_back(to_doubles(cts.back(), loc));
    t_out_used.push_back(tangent_out[k]);
  }
  std::vector<Array> ct_in = vr.pullback(cts, loc);
  std::vector<std::vector<double>> tv, cv;
  for (size_t i = 0; i < args.size(); ++i) {
    tv.push_back(to_doubles(tangents[i], loc));
    cv.push_back(to_doubles(ct_in[i], loc));
  }
  double ip = inner(tv, cv);
  double ip_expected = inner(t_out_used, ct_vals);
  DType d = widest(args, DType::bf16);
  check_close({ip}, {ip_expected}, d, opts, what + " cotangent projection", order, 0, loc);
}

void check_grads_flat(const FlatFn& f, const std::vector<Array>& args, int order,
                      const std::vector<std::string>& modes, const GradCheckOptions& opts,
                      std::source_location loc) {
  if (order < 1) throw ValueError("check_grads: order must be >= 1, got " + std::to_string(order), loc);
  Modes which;
  for (auto& m : modes) {
    if (m == kCheckGradsModes[0]) which.fwd = true;
    else if (m == kCheckGradsModes[1]) which.rev = true;
    else throw ValueError("check_grads: unknown mode '" + m + "' (expected \"fwd\" or \"rev\")", loc);
  }
  check_floating_args(args, loc);
  check_grads_rec(f, args, order, 1, which, opts, "", loc);
}

}  // namespace minijax
