// minijax vectorized transcendental functions emitted as KIR (exp, log, sin, erf, pow, ...) and the
// VMath helper they are written with; lane-count generic, no libm calls, no per-element branches.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "jit/codegen/kir.h"

namespace minijax::lower::math {

/// Emits floating-point code for one type `t` (f32 or f64, any lane count) into a Builder: splatted
/// constants, fused multiply-add (the hardware FMA when the host has one, otherwise a multiply and
/// an add: no libm call either way), selects, bit manipulation of the IEEE encoding and exact
/// two-term arithmetic. Integers are the same-width type (i32 for f32, i64 for f64).
class VMath {
 public:
  VMath(kir::Builder& b, kir::Type t);

  kir::Builder& b;
  kir::Type t;   ///< the float type
  kir::Type it;  ///< the integer type of the same width and lanes
  kir::Type mt;  ///< the mask type (i1 lanes)
  bool is_f64() const { return t.s == kir::Scalar::f64; }
  int lanes() const { return t.lanes; }
  /// Mantissa bits (23 / 52), exponent bias (127 / 1023).
  int mant_bits() const { return is_f64() ? 52 : 23; }
  int bias() const { return is_f64() ? 1023 : 127; }

  // ---- constants ------------------------------------------------------------------------------
  kir::Value c(double v);        ///< float constant (v rounded to t's precision)
  kir::Value ci(int64_t v);      ///< integer constant of type it
  kir::Value from_bits_c(uint64_t bits);  ///< float constant from its encoding

  // ---- float arithmetic -----------------------------------------------------------------------
  kir::Value add(kir::Value a, kir::Value x) { return b.fadd(a, x); }
  kir::Value sub(kir::Value a, kir::Value x) { return b.fsub(a, x); }
  kir::Value mul(kir::Value a, kir::Value x) { return b.fmul(a, x); }
  kir::Value div(kir::Value a, kir::Value x) { return b.fdiv(a, x); }
  kir::Value neg(kir::Value a) { return b.fneg(a); }
  /// a * x + y: fused (one rounding) when the host has FMA, else two roundings.
  kir::Value mad(kir::Value a, kir::Value x, kir::Value y);
  /// a * x + y with one rounding always (llvm.fma; only where exactness is required).
  kir::Value fma_exact(kir::Value a, kir::Value x, kir::Value y);
  kir::Value abs(kir::Value a);
  kir::Value sqrt(kir::Value a);
  kir::Value copysign(kir::Value mag, kir::Value sign);
  /// Round to nearest even for |a| < 2^(mant_bits - 1) (adding and subtracting 1.5 * 2^mant).
  kir::Value rint_small(kir::Value a);
  /// Round to nearest even for any a (values >= 2^mant_bits are integers already; NaN, inf kept).
  kir::Value rint(kir::Value a);
  /// Horner's rule: cs[0] + x * (cs[1] + x * (...)), with mad.
  kir::Value poly(kir::Value x, const std::vector<double>& cs);
  /// Piecewise polynomial: per lane the coefficients of piece i where sel[i-1] is set (later
  /// pieces win); piece 0 elsewhere. All pieces have cs[0].size() coefficients.
  kir::Value poly_pieces(kir::Value x, const std::vector<kir::Value>& sel,
                         const std::vector<std::vector<double>>& cs);

  // ---- comparisons and selects ----------------------------------------------------------------
  kir::Value lt(kir::Value a, kir::Value x) { return b.fcmp(kir::Pred::folt, a, x); }
  kir::Value le(kir::Value a, kir::Value x) { return b.fcmp(kir::Pred::fole, a, x); }
  kir::Value gt(kir::Value a, kir::Value x) { return b.fcmp(kir::Pred::fogt, a, x); }
  kir::Value ge(kir::Value a, kir::Value x) { return b.fcmp(kir::Pred::foge, a, x); }
  kir::Value eq(kir::Value a, kir::Value x) { return b.fcmp(kir::Pred::foeq, a, x); }
  kir::Value isnan(kir::Value a) { return b.fcmp(kir::Pred::funo, a, a); }
  /// |a| == inf.
  kir::Value isinf(kir::Value a);
  /// The sign bit of a is set (true for -0 and negative NaNs).
  kir::Value signbit(kir::Value a);
  kir::Value sel(kir::Value m, kir::Value a, kir::Value x) { return b.select(m, a, x); }
  kir::Value mand(kir::Value m, kir::Value n) { return b.binop(kir::Op::And, m, n); }
  kir::Value mor(kir::Value m, kir::Value n) { return b.binop(kir::Op::Or, m, n); }
  kir::Value mnot(kir::Value m);
  /// min(max(a, lo), hi) where NaN becomes lo (for values fed to int conversions).
  kir::Value clamp_nan_low(kir::Value a, double lo, double hi);

  // ---- integers and the encoding --------------------------------------------------------------
  kir::Value bits(kir::Value a) { return b.cast(kir::Op::Bitcast, it, a); }
  kir::Value from_bits(kir::Value i) { return b.cast(kir::Op::Bitcast, t, i); }
  kir::Value iadd(kir::Value a, kir::Value x) { return b.add(a, x); }
  kir::Value isub(kir::Value a, kir::Value x) { return b.sub(a, x); }
  kir::Value iand(kir::Value a, kir::Value x) { return b.binop(kir::Op::And, a, x); }
  kir::Value ior(kir::Value a, kir::Value x) { return b.binop(kir::Op::Or, a, x); }
  kir::Value ishl(kir::Value a, int s) { return b.binop(kir::Op::Shl, a, ci(s)); }
  kir::Value iashr(kir::Value a, int s) { return b.binop(kir::Op::AShr, a, ci(s)); }
  kir::Value ilshr(kir::Value a, int s) { return b.binop(kir::Op::LShr, a, ci(s)); }
  /// Integer-valued float (in range) to int / int to float.
  kir::Value to_int(kir::Value a) { return b.cast(kir::Op::FPToSI, it, a); }
  kir::Value to_float(kir::Value i) { return b.cast(kir::Op::SIToFP, t, i); }
  /// 2^k for integer k in the normal exponent range.
  kir::Value pow2i(kir::Value k);
  /// x * 2^k for integer k in [-2 (bias - 1), 2 bias] by two exact scalings (one final rounding,
  /// so subnormal and overflowing results are rounded correctly).
  kir::Value ldexp(kir::Value x, kir::Value k);

  // ---- exact two-term arithmetic (Dekker, Knuth; "Handbook of Floating-Point Arithmetic") -------
  /// s + e == a + x exactly (Knuth's TwoSum, 6 operations, no ordering condition).
  void two_sum(kir::Value a, kir::Value x, kir::Value& s, kir::Value& e);
  /// p + e == a * x exactly (FMA when present, else Veltkamp/Dekker splitting).
  void two_prod(kir::Value a, kir::Value x, kir::Value& p, kir::Value& e);

  /// Whether `mad` fuses and `two_prod` uses FMA: the host has FMA, unless overridden.
  static bool host_has_fma();
  /// For tests: -1 (default) uses the host's answer, 0 emits the code for hosts without FMA, 1 the
  /// code with FMA. Affects code emitted afterwards (compile different programs to compare).
  static void set_fma_override(int v);
};

/// Loop-carried vectors of m's type in stack slots (a KIR value lives in the block that defines it;
/// LLVM's SROA turns the slots back into registers).
struct LoopState {
  VMath& m;
  /// A new slot holding `init`.
  kir::Value make(kir::Value init);
  kir::Value get(kir::Value slot);
  void set(kir::Value slot, kir::Value v);
  /// set(slot, on ? v : get(slot)) lane by lane.
  void set_where(kir::Value on, kir::Value slot, kir::Value v);
};

/// for (i = 0; i < n; ++i) body(i): a KIR loop (i an i64 scalar), not unrolled into the code.
void repeat(kir::Builder& b, int n, const std::function<void(kir::Value)>& body);

/// ValueError naming `fn` unless x's scalar type is s.
void need(kir::Builder& b, kir::Value x, kir::Scalar s, const char* fn);
/// f on x: f64 directly; f32 (is32) widened to f64, f, rounded once. ValueError naming `name` for
/// x of the other type.
kir::Value through_f64(kir::Builder& b, kir::Value x, kir::Value (*f)(VMath&, kir::Value), bool is32, const char* name);

/// Floating-point type conversion helpers (lanes kept).
kir::Value to_f64(kir::Builder& b, kir::Value x);
kir::Value to_f32(kir::Builder& b, kir::Value x);

/// True when some lane of the i1 vector m is set (a scalar i1; log2(lanes) shuffles).
kir::Value any_lane(kir::Builder& b, kir::Value m);

// ---- the functions ---------------------------------------------------------------------------------
// Each takes and returns an f32 or f64 value of any lane count (the _f32/_f64 forms throw ValueError
// for another type; the unsuffixed forms dispatch on it) and emits straight-line code: selects, no
// per-element branches (sin/cos/tan add one branch per vector for huge arguments), no calls but of
// the module's outlined functions: lgamma, digamma, polygamma and igamma call log, log1p, exp and
// digamma through call_outlined and run fixed loops, so a module using them must run
// define_outlined_functions. Errors
// are relative to the exact value, measured by tests/jit/test_transcendentals.cc over 2^24 f32
// inputs (reference: f64 libm) and 2^20 f64 inputs (reference: long double libm) plus the special
// values; the bracket gives the maximum found with FMA (f32 / f64). All are within 4 ulp. Special
// values follow C99 Annex F (as glibc), signed zeros included. Polynomial coefficients are our own
// minimax fits (Remez exchange, weighted relative error, mpmath at 50 digits); each table in the
// .cc files states its interval and bound. bf16 arrays use the f32 forms.

/// e^x [1.01 / 1.02 ulp]. Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2 (Cody & Waite,
/// "Software Manual for the Elementary Functions", 1980), 1 + r + r^2 P(r), and 2^k applied in two
/// exact scalings so that subnormal results are rounded once. Overflow to inf, underflow to 0.
kir::Value exp_f32(kir::Builder& b, kir::Value x);
kir::Value exp_f64(kir::Builder& b, kir::Value x);
/// Natural log [0.92 / 0.83 ulp]. x = m 2^e, m in [sqrt(1/2), sqrt(2)) read from the encoding
/// (subnormals scaled by 2^23 / 2^54 first), f = m - 1 exact. f32: log1p(f) = f + f^2 Q(f); f64:
/// fdlibm's arrangement with s = f / (2 + f) (e_log.c, Sun Microsystems 1993). log(0) = -inf,
/// log(x < 0) = NaN.
kir::Value log_f32(kir::Builder& b, kir::Value x);
kir::Value log_f64(kir::Builder& b, kir::Value x);
/// log(1 + x) [1.66 / 0.83 ulp]: u = 1 + x rounded, its rounding error c recovered exactly
/// (Fast2Sum with the larger operand first), log(u) + c / u.
kir::Value log1p_f32(kir::Builder& b, kir::Value x);
kir::Value log1p_f64(kir::Builder& b, kir::Value x);
/// e^x - 1 [1.42 / 1.81 ulp]: x = k ln2 + r, expm1(r) = r + r^2 P(r), 2^k expm1(r) + (2^k - 1)
/// in one rounding (Tang, "Table-driven implementation of the expm1 function", ACM TOMS 18(2),
/// 1992, without the table).
kir::Value expm1_f32(kir::Builder& b, kir::Value x);
kir::Value expm1_f64(kir::Builder& b, kir::Value x);
/// tanh [1.32 / 1.28 ulp]: x + x^3 T(x^2) for |x| < 0.625, else 1 - 2 / (expm1(2|x|) + 2) with the
/// sign of x (|x| clamped to 20, where tanh rounds to 1).
kir::Value tanh_f32(kir::Builder& b, kir::Value x);
kir::Value tanh_f64(kir::Builder& b, kir::Value x);
/// The logistic function [2.40 / 2.24 ulp] in eager's stable form: e = exp(-|x|); x >= 0:
/// 1 / (1 + e), else e / (1 + e).
kir::Value logistic(kir::Builder& b, kir::Value x);
/// sin, cos, tan [0.50 / 0.78, 0.50 / 0.82, 0.50 / 2.16 ulp] for every finite x (inf, NaN: NaN).
/// f32 is computed in f64 and rounded once. x 2/pi = k + f: Cody-Waite with pi/2 in two parts (33 +
/// 53 bits) for |x| < 2^19 (f32) or four 27-bit parts and two-term sums for |x| < 2^26 (f64); larger
/// lanes (computed only when the vector has one) use an exact chunked product with the bits of 2/pi
/// in the manner of Payne & Hanek ("Radian reduction for trigonometric functions", SIGNUM 1983):
/// the 26-bit chunks that matter for x's exponent (a 48-entry table), times x split in halves, each
/// product exact and reduced mod 4 exactly, summed in three terms; f times pi/2 as a two-term r.
/// That rare path is the runtime function mj_rt_trig_reduce (kTrigReduceRuntime, one call per
/// vector holding such a lane), so it adds no code to the kernels; a module whose code calls it
/// declares it (define_outlined_functions does so).
/// Minimax polynomials for sin and cos on |r| <= pi/4, the quadrant k mod 4 selecting and negating;
/// tan = sin / cos or -cos / sin.
kir::Value sin_f32(kir::Builder& b, kir::Value x);
kir::Value cos_f32(kir::Builder& b, kir::Value x);
kir::Value tan_f32(kir::Builder& b, kir::Value x);
kir::Value sin_f64(kir::Builder& b, kir::Value x);
kir::Value cos_f64(kir::Builder& b, kir::Value x);
kir::Value tan_f64(kir::Builder& b, kir::Value x);
/// atan2(y, x) [0.50 / 1.77 ulp] (C's argument order: the angle of the point (x, y)):
/// t = min(|x|,|y|) / max(|x|,|y|) in [0, 1], atan(t) = t + t^3 A(t^2), the octant added as
/// 0, pi/2 or pi in two parts with the sign of y. f32 is computed in f64.
kir::Value atan2_f32(kir::Builder& b, kir::Value y, kir::Value x);
kir::Value atan2_f64(kir::Builder& b, kir::Value y, kir::Value x);
/// erf [1.09 / 1.01 ulp]. |x| < 1 (f32) / 0.8 (f64): x + x P(x^2); beyond: 1 - exp(h(|x|) - x^2)
/// with the sign of x, h(a) = log(erfc(a) e^(a^2)) a minimax polynomial on [1, 4] (f32) or three
/// pieces on [0.8, 6] (f64, with a^2 as an exact two-term product and exp of a two-term argument).
kir::Value erf_f32(kir::Builder& b, kir::Value x);
kir::Value erf_f64(kir::Builder& b, kir::Value x);
/// erfc(x) for x >= 0 with relative accuracy (f64; used by erf_inv's Newton steps): 1 - erf(x) for
/// x < 0.8, exp(h(x) - x^2) on [0.8, 6]; x > 6 is evaluated at 6 (erfc(6) = 2.2e-17).
kir::Value erfc_pos_f64(kir::Builder& b, kir::Value x);
/// The inverse of erf [2.25 / 1.54 ulp] on (-1, 1); ±1: ±inf; |x| > 1 and NaN: NaN. f32: Mike
/// Giles' single-precision polynomials in w = -log(1 - x^2) ("Approximating the erfinv function",
/// GPU Computing Gems, 2011; eager's erf_inv uses the same) evaluated in f64. f64: that start (and
/// our own fit for w >= 16), then two Newton steps on erf(y) = |x| written as erfc(y) = 1 - |x|
/// (exact) for |x| >= 1/2, so the tail keeps full accuracy.
kir::Value erf_inv_f32(kir::Builder& b, kir::Value x);
kir::Value erf_inv_f64(kir::Builder& b, kir::Value x);
/// x^y [0.50 / 1.05 ulp] with C99's special cases (pow(x, ±0) = 1, pow(1, y) = 1, pow(-1, ±inf) = 1,
/// negative x: NaN unless y is an integer, sign from odd integers, zeros and infinities by the
/// sign of y). f32: exp(y log|x|) in f64. f64: log|x| as a two-term value (relative error 2^-68;
/// the head of the log((1+s)/(1-s)) series in two-term arithmetic, as in SLEEF's logk, Shibata &
/// Petrogalli, IEEE TPDS 2020), y log|x| as an exact product plus a correction, exp of the two-term
/// argument.
kir::Value pow_f32(kir::Builder& b, kir::Value x, kir::Value y);
kir::Value pow_f64(kir::Builder& b, kir::Value x, kir::Value y);

/// The functions of transcendentals_elementary.cc and erfc (issue 29). Their bound, measured by
/// tests/jit/test_special_accuracy.cc against tools/special_reference.py's mpmath values (a grid,
/// the special values and 10,000 random points per type), is 4 ulp in f32 and f64 wherever the
/// result is finite (erfc: where it is normal; absolute error below the smallest normal where it is
/// subnormal), and each overflows to ±inf exactly where the correctly rounded result does. f32 is
/// computed in f64 and rounded once. Every loop has a fixed iteration count stated below, and no
/// function calls the C library.
/// sinh: |x| <= 1: x + x z S(z), z = x^2, S a Chebyshev fit (tools/fit_special_polys.py); beyond:
/// E - 1/(4E) with E = e^|x| / 2 from exp of the two-term argument |x| - ln 2 (exp_dd_f64), so E
/// overflows exactly where sinh does. cosh: E + 1/(4E).
kir::Value sinh_f32(kir::Builder& b, kir::Value x);
kir::Value sinh_f64(kir::Builder& b, kir::Value x);
kir::Value cosh_f32(kir::Builder& b, kir::Value x);
kir::Value cosh_f64(kir::Builder& b, kir::Value x);
/// asin(x) = atan2(x, sqrt(1 - x^2)), acos(x) = atan2(sqrt(1 - x^2), x), 1 - x^2 as (1 - |x|)(1 + |x|)
/// (exact difference) for |x| >= 1/2 and one multiply-add below; |x| > 1: NaN. atan(x) = atan2(x, 1).
kir::Value asin_f32(kir::Builder& b, kir::Value x);
kir::Value asin_f64(kir::Builder& b, kir::Value x);
kir::Value acos_f32(kir::Builder& b, kir::Value x);
kir::Value acos_f64(kir::Builder& b, kir::Value x);
kir::Value atan_f32(kir::Builder& b, kir::Value x);
kir::Value atan_f64(kir::Builder& b, kir::Value x);
/// asinh, acosh, atanh: fdlibm's arrangements (s_asinh.c, e_acosh.c, e_atanh.c, Sun Microsystems
/// 1993) on our log and log1p: asinh |x| > 2^28: log|x| + ln 2, > 2: log(2|x| + 1/(sqrt(x^2+1) + |x|)),
/// else log1p(|x| + x^2/(1 + sqrt(1 + x^2))); acosh x > 2^28: log x + ln 2, > 2: log(2x - 1/(x +
/// sqrt(x^2-1))), else log1p(t + sqrt(2t + t^2)) with t = x - 1 (exact), NaN below 1; atanh |x| < 1/2:
/// log1p(2a + 2a^2/(1-a))/2, else log1p(2a/(1-a))/2, ±inf at ±1, NaN beyond. Each takes one log1p
/// of its selected argument (log(v) as log1p(v - 1)), so its code holds one logarithm.
kir::Value asinh_f32(kir::Builder& b, kir::Value x);
kir::Value asinh_f64(kir::Builder& b, kir::Value x);
kir::Value acosh_f32(kir::Builder& b, kir::Value x);
kir::Value acosh_f64(kir::Builder& b, kir::Value x);
kir::Value atanh_f32(kir::Builder& b, kir::Value x);
kir::Value atanh_f64(kir::Builder& b, kir::Value x);
/// cbrt: a start from the encoding (exponent / 3, relative error < 6%), exactly 4 Newton steps (error
/// 1e-20), then one correction from the exact residual y^3 - |x| (two-term products); subnormals
/// scaled by 2^54 first; the sign of x; ±0, ±inf, NaN returned.
kir::Value cbrt_f32(kir::Builder& b, kir::Value x);
kir::Value cbrt_f64(kir::Builder& b, kir::Value x);
/// erfc: |x| < 0.8: 1 ∓ x P(x^2) (erf's polynomial); [0.8, 3): exp(h(|x|) - x^2) (erfc_pos_f64);
/// [3, 28]: e^(-x^2) G(1/x^2) / |x| with G a Chebyshev fit of degree 19 (tools/fit_special_polys.py),
/// x^2 two-term, one exp of a two-term argument for both pieces; beyond 28: 0; x <= -0.8: 2 - erfc(|x|).
kir::Value erfc_f32(kir::Builder& b, kir::Value x);
kir::Value erfc_f64(kir::Builder& b, kir::Value x);

/// lgamma, digamma, polygamma (transcendentals_gamma.cc, issue 29; f32 computed in f64, rounded
/// once). Bounds, measured by tests/jit/test_special_accuracy.cc against tools/special_reference.py's
/// mpmath values (specials, a grid, 10,000 random points per type): lgamma x > 0: 4 ulp, or absolute
/// 2 eps where |lgamma| < 1; x < 0 not an integer: absolute 16 eps (1 + |lgamma(1 - x)|); +inf at 0,
/// the negative integers and ±inf. digamma x > 0: 4 ulp, or absolute 2 eps where |digamma| < 1;
/// x < 0 not an integer: absolute 16 eps (1 + |digamma(1 - x)| + |pi / tan(pi x)|); NaN at 0, the
/// negative integers and -inf (JAX's values). polygamma m = 1..4, x > 0: relative 1e-12 (f64),
/// 1e-5 (f32) where the result is normal; x <= 0 as JAX v0.7.0 (+inf / NaN at the poles for odd /
/// even m, XLA's zeta formula elsewhere). Fixed iteration counts: lgamma 7 recurrence steps, digamma
/// 8; polygamma 10 direct terms, 12 Euler–Maclaurin terms, 11 squarings per power.
/// lgamma: a Chebyshev fit of lgamma(1 + t) / (t (t - 1)) on t in [0, 1] (degree 23,
/// tools/fit_special_polys.py) for x in (0, 3) (minus log x below 1, plus log1p(x - 2) above 2),
/// recurrence down to [2, 3) below 10, Stirling's series (8 terms, two-term log) from 10, the
/// reflection formula with the exact reduction r = x - rint(x) below 0.
kir::Value lgamma_f32(kir::Builder& b, kir::Value x);
kir::Value lgamma_f64(kir::Builder& b, kir::Value x);
/// digamma: a fit of digamma(1 + t) / (t - t0) on [0, 1] around its zero (degree 25), compensated
/// recurrences (up from (0, 1), down from [2, 10)), the asymptotic series (8 terms) from 10, the
/// reflection digamma(1 - x) - pi / tan(pi r) below 0.
kir::Value digamma_f32(kir::Builder& b, kir::Value x);
kir::Value digamma_f64(kir::Builder& b, kir::Value x);
/// polygamma(m, x): m = 0 digamma; integer m in [1, 2046]: (-1)^(m+1) m! zeta(m + 1, x), the Hurwitz
/// zeta as 10 direct terms (x + k)^-(m+1) by binary powering plus the Euler–Maclaurin tail at
/// a = x + 10 with B_2 .. B_24; other m: NaN.
kir::Value polygamma_f32(kir::Builder& b, kir::Value m, kir::Value x);
kir::Value polygamma_f64(kir::Builder& b, kir::Value m, kir::Value x);
/// igamma(a, x) = P(a, x), the regularised lower incomplete gamma function, and igamma_grad_a(a, x) =
/// dP/da (transcendentals_igamma.cc; issue 29). f32 is computed in f64 and rounded once. Algorithm
/// (XLA's math.cc Igamma / IgammaGradA, Numerical Recipes 6.2): with E = x^a e^-x / Gamma(a + 1)
/// (one exp of a log x - x - lgamma(a + 1), lgamma and digamma of a + 1 by Stirling's series after
/// shifting a < 10 by 10), P = E S for x < a + 1, S = sum_n x^n / ((a+1)...(a+n)) the power series,
/// and P = 1 - a E F otherwise, F Legendre's continued fraction of the upper function (Cephes's
/// p/q recurrence, rescaled by 2^-52 past 2^52). igamma_grad_a carries dS/da and dF/da alongside
/// (forward mode) and adds d/da log E = log x - digamma(a + 1) (+ 1/a for the fraction). Each is a
/// vector loop over the lanes that need it: a lane stops when its last step moves its value (and
/// derivative) by at most 2^-53 relative; the loop ends when no lane is left or after the fixed
/// bound below (reached only far outside the checked domain, a > ~5e4: then the partial sum is
/// returned). Lanes whose E underflows to 0 skip both loops (P = 0 or 1, dP/da = 0). NaN where
/// a <= 0, x < 0, either is NaN, or a = x = inf; P = 0 (dP/da = 0) at x = 0 and a = inf; P = 1
/// (dP/da = 0) at x = inf. Measured against mpmath (tests/jit/test_special_accuracy_igamma.cc, a in
/// (0, 100], x in [0, 200], 11,196 pairs per type): igamma relative error <= 1e-12 (f64) / 1e-4
/// (f32) where P >= 1e-290 / 1e-30, absolute below [found: 1.5e-13 / 5.8e-8]; igamma_grad_a
/// relative <= 1e-9 / 1e-3 [found: 1.8e-13 / 5.9e-8]. The eager code
/// (core/primitives/special_igamma.cc) runs the same steps on scalars with std::lgamma.
inline constexpr int kIgammaSeriesIters = 2000;
inline constexpr int kIgammaCfIters = 2000;
kir::Value igamma_f32(kir::Builder& b, kir::Value a, kir::Value x);
kir::Value igamma_f64(kir::Builder& b, kir::Value a, kir::Value x);
kir::Value igamma_grad_a_f32(kir::Builder& b, kir::Value a, kir::Value x);
kir::Value igamma_grad_a_f64(kir::Builder& b, kir::Value a, kir::Value x);

/// Type-dispatching forms (f32 or f64 operands).
kir::Value exp(kir::Builder& b, kir::Value x);
kir::Value log(kir::Builder& b, kir::Value x);
kir::Value log1p(kir::Builder& b, kir::Value x);
kir::Value expm1(kir::Builder& b, kir::Value x);
kir::Value tanh(kir::Builder& b, kir::Value x);
kir::Value sin(kir::Builder& b, kir::Value x);
kir::Value cos(kir::Builder& b, kir::Value x);
kir::Value tan(kir::Builder& b, kir::Value x);
kir::Value erf(kir::Builder& b, kir::Value x);
kir::Value erf_inv(kir::Builder& b, kir::Value x);
kir::Value atan2(kir::Builder& b, kir::Value y, kir::Value x);
kir::Value pow(kir::Builder& b, kir::Value x, kir::Value y);
kir::Value sinh(kir::Builder& b, kir::Value x);
kir::Value cosh(kir::Builder& b, kir::Value x);
kir::Value asin(kir::Builder& b, kir::Value x);
kir::Value acos(kir::Builder& b, kir::Value x);
kir::Value atan(kir::Builder& b, kir::Value x);
kir::Value asinh(kir::Builder& b, kir::Value x);
kir::Value acosh(kir::Builder& b, kir::Value x);
kir::Value atanh(kir::Builder& b, kir::Value x);
kir::Value cbrt(kir::Builder& b, kir::Value x);
kir::Value erfc(kir::Builder& b, kir::Value x);
kir::Value lgamma(kir::Builder& b, kir::Value x);
kir::Value digamma(kir::Builder& b, kir::Value x);
kir::Value polygamma(kir::Builder& b, kir::Value m, kir::Value x);
kir::Value igamma(kir::Builder& b, kir::Value a, kir::Value x);
kir::Value igamma_grad_a(kir::Builder& b, kir::Value a, kir::Value x);

// ---- outlined functions: one definition per module ---------------------------------------------------
// A fusion kernel calls each transcendental through a module function of its own (one per function
// and float type, on the vector register's lanes) instead of inlining the code at every use: LLVM
// then optimizes and compiles each function's code once per module, however many equations use it,
// so a kernel's compile time grows with its equations by a call each rather than by the function's
// whole code.

/// The runtime function sin, cos and tan call for huge arguments (jit/runtime/trig_reduction.h).
inline constexpr const char* kTrigReduceRuntime = "mj_rt_trig_reduce";

/// Whether `fn` ("exp", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "erf",
/// "erf_inv", "pow", "atan2", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh",
/// "cbrt", "erfc", "lgamma", "digamma", "polygamma", "igamma", "igamma_grad_a") is one of the functions call_outlined handles.
bool is_outlined_function(const std::string& fn);

/// Emits a call of module function `mj_math_<fn>_<f32|f64>x<W>` on args (one operand, two for
/// pow, atan2, polygamma, igamma and igamma_grad_a, all of one f32 or f64 type of any lane count)
/// and returns its result, of the args' type. W is the register's lanes for the type the code runs
/// in: args with fewer lanes (a loop's scalar tail) are padded with lane 0's value and cut back,
/// more are split into calls of W lanes and joined. The functions whose f32 form is their f64 code
/// on widened operands (sinh, cosh, asin, acos, asinh, acosh, atanh, cbrt, erfc and the gamma
/// family) widen f32 args to f64 here, call the f64 function (two calls for a whole f32 register;
/// one call of a definition on the f32 register's lanes for erfc, lgamma, igamma and
/// igamma_grad_a, whose halves then interleave) and round once, so a module has no f32 copy of
/// their code. The shuffles and conversions of
/// constants fold where they are emitted: a constant operand (polygamma's order) reaches the call
/// as a constant, which LLVM propagates into the function when every call passes the same one. The function is defined later by
/// define_outlined_functions. ValueError for an unknown fn, a non-float type or operands of
/// different types.
kir::Value call_outlined(kir::Builder& b, const std::string& fn, const std::vector<kir::Value>& args);

/// Defines in `m` every `mj_math_*` function its functions call that it does not define yet, with
/// the code of the functions above; a definition may call others (lgamma calls log, polygamma
/// calls digamma), which are defined in turn. A function called from one place is always inlined;
/// one called from several places is never inlined, so LLVM optimizes and compiles its code once.
/// Each is marked kir::Function::light_optimization (LLVM's cleanup passes once, not the whole O2
/// function pipeline) and keeps its loops rolled. Declares mj_rt_trig_reduce when some function
/// calls it. Call once, after the module's last kernel.
void define_outlined_functions(kir::Module& m);

// ---- building blocks shared by the implementation files ---------------------------------------------
/// exp(hi + lo) for a two-term argument (|lo| < 2^-30; f64): e^r (1 + d) with d = lo - k ln2_lo;
/// overflow and underflow as exp (a clamped hi drops lo).
kir::Value exp_dd_f64(kir::Builder& b, kir::Value hi, kir::Value lo);
/// s = sin(pi r) and c = cos(pi r) for |r| <= 1/2 (f64; r exact, as x - rint(x) is): r = f + n/2 with
/// |f| <= 1/4, pi f in two terms, the sin/cos polynomials of sin_f64 (within 1 ulp). The reflection
/// formulas of lgamma and digamma use it instead of sin and tan of pi r (no argument reduction).
void sincos_pi_f64(kir::Builder& b, kir::Value r, kir::Value& s, kir::Value& c);
/// log(x) as hi + lo (x > 0 finite, f64), relative error about 2^-68 (see pow_f64).
void log_dd_f64(kir::Builder& b, kir::Value x, kir::Value& hi, kir::Value& lo);

}  // namespace minijax::lower::math
