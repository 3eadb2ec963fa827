// minijax primitives lgamma, digamma and polygamma (JAX's lgamma_p, digamma_p, polygamma_p): shape
// rules, eager implementations in long double (rounded once to the element type), lax:: binders.
#include <cmath>
#include <limits>
#include <string>

#include "core/lax.h"
#include "core/primitives/elementwise_family.h"
#include "core/special_gamma.h"
#include "core/trace.h"

namespace minijax {

using elementwise::Accept;
using elementwise::def_binary;
using elementwise::def_unary;
using elementwise::kTranscendental;

namespace {

using LD = long double;
constexpr LD kPiL = 3.14159265358979323846264338327950288L;
constexpr LD kNaN = std::numeric_limits<LD>::quiet_NaN();
constexpr LD kInf = std::numeric_limits<LD>::infinity();

// x <= 0 and an integer: ±0, the negative integers and -inf.
bool at_pole(LD x) { return x <= 0 && std::floor(x) == x; }

// log|Γ(x)|: glibc's reentrant lgammal_r (no write to the global signgam); +inf at the poles and ±inf.
LD lgamma_ld(LD x) {
  if (std::isnan(x)) return x;
  if (at_pole(x) || std::isinf(x)) return kInf;
  int sign = 0;
  return ::lgammal_r(x, &sign);
}

// ψ(x): recurrence up to x >= 16, then log x - 1/(2x) - sum_{k=1..8} B_2k / (2k x^2k) (the next
// term is below 1e-25 there); below 1/2 the reflection ψ(1 - x) - π / tan(π r), r = x - rint(x)
// exact. NaN at the poles (JAX), +inf at +inf.
LD digamma_ld(LD x) {
  if (std::isnan(x)) return x;
  if (at_pole(x)) return kNaN;
  if (std::isinf(x)) return x;
  LD acc = 0;
  if (x < 0.5L) {
    const LD r = x - std::nearbyint(x);
    acc = -kPiL / std::tan(kPiL * r);
    x = 1 - x;
  }
  for (; x < 16; x += 1) acc -= 1 / x;
  static const LD kB[] = {1.0L / 12,  -1.0L / 120,     1.0L / 252, -1.0L / 240,
                          1.0L / 132, -691.0L / 32760, 1.0L / 12,  -3617.0L / 8160};
  const LD z = 1 / (x * x);
  LD poly = 0;
  for (int k = 7; k >= 0; --k) poly = poly * z + kB[k];
  return acc + std::log(x) - 0.5L / x - z * poly;
}

// ψ^(n)(x) as the compiled code computes it (jit/codegen/lower/transcendentals_gamma.cc): n = 0
// digamma; integer 1 <= n <= 2046: (-1)^(n+1) n! ζ(n + 1, x), ζ(s, x) = sum_{k<10} (x + k)^-s plus the
// Euler–Maclaurin tail at a = x + 10 with B_2 .. B_24 (the term counts of XLA's chlo.zeta); +inf (odd
// n) or NaN (even n) at the poles; NaN for any other n.
LD polygamma_ld(LD n, LD x) {
  if (std::isnan(n) || std::isnan(x) || n < 0 || std::floor(n) != n || n > 2046) return kNaN;
  if (n == 0) return digamma_ld(x);
  const bool odd = std::fmod(n, 2.0L) == 1;
  if (at_pole(x)) return odd ? kInf : kNaN;
  const LD s = n + 1;
  LD sum = 0;
  for (int k = 0; k < 10; ++k) sum += std::pow(x + k, -s);
  const LD a = x + 10;
  static const LD kEM[] = {1.0L / 12,
                           -1.0L / 720,
                           1.0L / 30240,
                           -1.0L / 1209600,
                           1.0L / 47900160,
                           -691.0L / 1307674368000.0L,
                           1.0L / 74724249600.0L,
                           -3617.0L / 10670622842880000.0L,
                           43867.0L / 5109094217170944000.0L,
                           -174611.0L / 802857662698291200000.0L,
                           854513.0L / 155111350422283542528000.0L,
                           -236364091.0L / 1693824601533693734912000000.0L};
  LD pj = s / a, em = kEM[0] * pj;
  for (int j = 1; j < 12; ++j) {
    pj *= (s + 2 * j - 1) * (s + 2 * j) / (a * a);
    em += kEM[j] * pj;
  }
  const LD zeta = sum + std::pow(a, 1 - s) / (s - 1) + std::pow(a, -s) * (0.5L + em);
  return (odd ? 1 : -1) * std::exp(lgamma_ld(s)) * zeta;
}

Registrar reg_gamma([] {
  def_unary<Accept::floating>(
      "lgamma", [](auto v) { return decltype(v)(lgamma_ld(LD(v))); }, kTranscendental);
  def_unary<Accept::floating>(
      "digamma", [](auto v) { return decltype(v)(digamma_ld(LD(v))); }, kTranscendental);
  def_binary<Accept::floating>(
      "polygamma", [](auto m, auto x) { return decltype(x)(polygamma_ld(LD(m), LD(x))); }, kTranscendental);
});

// A concrete order (or a JVP tracer's concrete primal) with a negative or non-integer element:
// ValueError naming polygamma and m (JAX's scipy.special.polygamma checks the same; lax gives NaN).
void check_concrete_order(const Array& m, std::source_location loc) {
  std::optional<Array> v;
  if (m.is_concrete()) v = m;
  else if (Tracer* t = m.tracer()) v = t->concrete_value();
  if (!v || !v->is_concrete() || !is_floating(v->dtype())) return;
  dispatch_dtype(v->dtype(), [&]<class T>() {
    if constexpr (elementwise::accepts_type<Accept::floating, T>()) {
      const T* p = v->data<T>();
      for (int64_t i = 0; i < v->size(); ++i) {
        const double e = double(elementwise::load(p[i]));
        if (!(e >= 0) || std::floor(e) != e)
          throw ValueError("polygamma: the order m must be a nonnegative integer, got m = " +
                               std::to_string(e),
                           loc);
      }
    }
  });
}

}  // namespace

namespace lax {

Array lgamma(const Array& x, std::source_location loc) {
  static const Primitive& p = get_or_create_primitive("lgamma");
  return minijax::bind1(p, {x}, {}, loc);
}

Array digamma(const Array& x, std::source_location loc) {
  static const Primitive& p = get_or_create_primitive("digamma");
  return minijax::bind1(p, {x}, {}, loc);
}

Array polygamma(const Array& m, const Array& x, std::source_location loc) {
  static const Primitive& p = get_or_create_primitive("polygamma");
  if (m.defined()) check_concrete_order(m, loc);
  return elementwise::bind_broadcasting_binary(p, m, x, loc);
}

Array polygamma(int64_t m, const Array& x, std::source_location loc) {
  if (m < 0)
    throw ValueError("polygamma: the order m must be a nonnegative integer, got m = " + std::to_string(m),
                     loc);
  if (!x.defined()) throw ValueError("polygamma: x is an empty Array", loc);
  ShapedArray a{{}, x.dtype(), false, x.memory_kind()};
  Array c = Array::allocate(a);
  dispatch_dtype(a.dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, bfloat16>) c.mutable_data<T>()[0] = bfloat16(float(m));
    else c.mutable_data<T>()[0] = static_cast<T>(m);
  });
  return polygamma(c, x, loc);
}

}  // namespace lax
}  // namespace minijax
