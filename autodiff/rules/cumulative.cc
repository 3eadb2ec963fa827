// minijax autodiff rules of cumprod, cummax, cummin and cumlogsumexp: JAX's _cumulative_jvp_rule
// (jax/_src/lax/control_flow/loops.py) and the batching rule they share with cumsum.
//
// JAX's JVP is jvp(associative_scan(combine)) with combine mul, max, min or logaddexp. The scan's
// slices, pads and concatenations are linear, so that JVP is the same scan run over (primal,
// tangent) pairs with the combine's own JVP: lax::associative_scan over {x, t} with
//   mul:       (a b,            ta b + a tb)
//   max/min:   (max(a, b),      ta w(a) + tb w(b)), w JAX's _balanced_eq: 1 for the chosen
//              operand, 0.5 each on a tie (as the binary max/min JVP; autodiff/rules/elementwise.cc)
//   logaddexp: (o = logaddexp(a, b), ta exp(a' - o') + tb exp(b' - o')), ' replacing +inf by 0:
//              JAX's custom JVP of jnp.logaddexp (jax/_src/numpy/ufuncs.py _logaddexp_jvp).
// The primal output is the primitive's own (eager's loop); the tangent is the scan's second
// output, written in primitives, so higher orders differentiate it again. Integer operands have
// float0 (symbolic zero) tangents. None of the four is linear: no transpose.
#include <cmath>

#include "autodiff/batching_util.h"
#include "core/lax.h"
#include "core/primitive.h"
#include "core/trace.h"
#include "core/views/array_ops.h"

namespace minijax {

namespace {

using Outs = std::pair<std::vector<Array>, std::vector<Array>>;
using BOuts = std::pair<std::vector<Array>, std::vector<int64_t>>;
using Vec = std::vector<Array>;

Array filled(const Array& like, double v) { return lax::full(like.shape(), v, like.dtype()); }

// JAX's _balanced_eq(x, z, y): 1 where x == z, halved where also y == z.
Array balanced_eq(const Array& x, const Array& z, const Array& y) {
  return lax::div(lax::select_n(lax::eq(x, z), {filled(z, 0), filled(z, 1)}),
                  lax::select_n(lax::eq(y, z), {filled(z, 1), filled(z, 2)}));
}

// JAX's jnp.logaddexp on floats: max + log1p(exp(-|a - b|)), a + b where a - b is NaN.
Array logaddexp(const Array& a, const Array& b) {
  Array amax = lax::max(a, b);
  Array delta = lax::sub(a, b);
  Array stable = lax::add(amax, lax::log1p(lax::exp(lax::neg(lax::abs(delta)))));
  return lax::select_n(lax::ne(delta, delta), {stable, lax::add(a, b)});
}

// JAX's _replace_inf: +inf -> 0.
Array replace_posinf(const Array& x) {
  return lax::select_n(lax::eq(x, filled(x, INFINITY)), {x, filled(x, 0)});
}

// Which combine a cumulative primitive scans with (set once, by the registration loop below).
enum class Combine { mul, max, min, logaddexp };

// The combine of (primal, tangent) pairs: {a, ta} (+) {b, tb}.
Vec pair_combine(Combine k, const Vec& a, const Vec& b) {
  if (k == Combine::mul) return {lax::mul(a[0], b[0]), lax::add(lax::mul(a[1], b[0]), lax::mul(a[0], b[1]))};
  if (k == Combine::max || k == Combine::min) {
    Array c = k == Combine::max ? lax::max(a[0], b[0]) : lax::min(a[0], b[0]);
    return {c,
            lax::add(lax::mul(a[1], balanced_eq(a[0], c, b[0])), lax::mul(b[1], balanced_eq(b[0], c, a[0])))};
  }
  Array o = logaddexp(a[0], b[0]);
  Array ro = replace_posinf(o);
  return {o, lax::add(lax::mul(a[1], lax::exp(lax::sub(replace_posinf(a[0]), ro))),
                      lax::mul(b[1], lax::exp(lax::sub(replace_posinf(b[0]), ro))))};
}

JvpRule cumulative_jvp(const std::string& name, Combine k) {
  return [name, k](const Vec& primals, const Vec& tangents, const Params& params) -> Outs {
    const Array& x = primals.at(0);
    Array ans = minijax::bind1(primitive(name), {x}, params);
    const Array& t = tangents.at(0);
    if (!t.defined() || !is_floating(x.dtype())) return {{ans}, {Array()}};
    const CumulativeParams c = CumulativeParams::from(params, name);
    lax::ScanCombine f = [k](const Vec& a, const Vec& b) { return pair_combine(k, a, b); };
    Vec scanned = lax::associative_scan(f, {x, t}, c.reverse, c.axis);
    return {{ans}, {scanned[1]}};
  };
}

Registrar reg([] {
  const std::pair<const char*, Combine> kinds[] = {{"cumprod", Combine::mul},
                                                   {"cummax", Combine::max},
                                                   {"cummin", Combine::min},
                                                   {"cumlogsumexp", Combine::logaddexp}};
  for (const auto& [name, kind] : kinds) {
    auto& p = get_or_create_primitive(name);
    p.jvp = cumulative_jvp(name, kind);
    p.no_transpose_reason = "not linear";
    const std::string n = name;
    p.batch = [n](const Vec& args, const std::vector<int64_t>& dims, const Params& params) -> BOuts {
      const int64_t d = dims.at(0);
      CumulativeParams c = CumulativeParams::from(params, n);
      c.axis = batched_axis(c.axis, d);
      return {{minijax::bind1(primitive(n), {args.at(0)}, c.to_params())}, {d}};
    };
  }
});

}  // namespace

}  // namespace minijax
