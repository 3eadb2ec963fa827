// Tests of conv_general_dilated and its wrappers (lax::conv, conv_with_general_padding,
// conv_transpose): eager values against a naive oracle, the dtypes, the gradient's jaxpr, printing
// and parsing, the cost and the errors of bad geometry.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/views/windowed.h"
#include "jit/passes/cost_analysis.h"

using minijax::Array;
namespace lax = mj::lax;

namespace {

using Ints = std::vector<int64_t>;
using A3 = std::array<int64_t, 3>;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

// ---- the oracle ----------------------------------------------------------------------------------
// XLA's ConvGeneralDilated as its operation semantics define it ("Conv", openxla.org/xla/
// operation_semantics): the input dilated by lhs_dilation (lhs_dilation - 1 zeros between
// elements), padded by (lo, hi) (negative crops), and the kernel dilated by rhs_dilation; output
// position q of a spatial dim reads dilated-padded position q * stride + k * rhs_dilation for
// kernel index k. With feature_group_count G, output feature o belongs to group o / (O / G) and
// reads input features [g * I, (g + 1) * I); with batch_group_count B, output feature o belongs to
// group o / (O / B) and output batch n reads input batch g * (N / B) + n. Written as a direct loop
// over canonical [N, C, D, H, W] input and [O, I, KD, KH, KW] kernel; 1-D and 2-D convolutions are
// 3-D ones whose leading spatial dims have size 1 (stride 1, no padding, no dilation).
struct Geo {
  int64_t N = 1, C = 1, O = 1, I = 1;
  A3 S{1, 1, 1}, K{1, 1, 1}, stride{1, 1, 1}, lo{0, 0, 0}, hi{0, 0, 0}, ld{1, 1, 1}, rd{1, 1, 1};
  int64_t fgc = 1, bgc = 1;
  A3 out() const {
    A3 q;
    for (size_t d = 0; d < 3; ++d) {
      const int64_t padded = (S[d] - 1) * ld[d] + 1 + lo[d] + hi[d], window = (K[d] - 1) * rd[d] + 1;
      q[d] = (padded - window) / stride[d] + 1;
    }
    return q;
  }
};

std::vector<double> oracle(const std::vector<double>& x, const std::vector<double>& w, const Geo& g) {
  const A3 Q = g.out();
  const int64_t Nout = g.N / g.bgc, Og = g.O / (g.fgc * g.bgc);
  std::vector<double> y;
  for (int64_t n = 0; n < Nout; ++n)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t q0 = 0; q0 < Q[0]; ++q0)
        for (int64_t q1 = 0; q1 < Q[1]; ++q1)
          for (int64_t q2 = 0; q2 < Q[2]; ++q2) {
            const int64_t grp = o / Og;
            const int64_t nb = g.bgc > 1 ? grp * Nout + n : n, c0 = g.fgc > 1 ? grp * g.I : 0;
            const A3 q{q0, q1, q2};
            double sum = 0;
            for (int64_t ci = 0; ci < g.I; ++ci)
              for (int64_t k0 = 0; k0 < g.K[0]; ++k0)
                for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
                  for (int64_t k2 = 0; k2 < g.K[2]; ++k2) {
                    const A3 k{k0, k1, k2};
                    A3 s;
                    bool inside = true;
                    for (size_t d = 0; d < 3; ++d) {
                      const int64_t xd = q[d] * g.stride[d] + k[d] * g.rd[d] -
                                         g.lo[d];  // dilated input position
                      inside = inside && xd >= 0 && xd % g.ld[d] == 0 && xd / g.ld[d] < g.S[d];
                      s[d] = xd / g.ld[d];
                    }
                    if (!inside) continue;
                    sum +=
                        x[size_t((((nb * g.C + c0 + ci) * g.S[0] + s[0]) * g.S[1] + s[1]) * g.S[2] + s[2])] *
                        w[size_t((((o * g.I + ci) * g.K[0] + k0) * g.K[1] + k1) * g.K[2] + k2)];
                  }
            y.push_back(sum);
          }
  return y;
}

// ---- running a case --------------------------------------------------------------------------------

// Values: small integers (exact in every dtype and every sum here) or uniform reals.
std::vector<double> values(int64_t n, uint32_t seed, bool integers) {
  std::mt19937 gen(seed);
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(integers ? double(int(gen() % 7) - 3) : std::uniform_real_distribution<double>(-1, 1)(gen));
  return v;
}

// The last `ns` of three spatial entries.
Ints last(const A3& a, size_t ns) { return Ints(a.end() - ptrdiff_t(ns), a.end()); }

// Layout strings: the permutation taking the canonical array (N/O, C/I, spatial in the kernel
// string's order) to the layout's dim order, and its inverse.
Ints perm_of(const std::string& layout, const std::string& canonical) {
  Ints p;
  for (char c : layout) p.push_back(int64_t(canonical.find(c)));
  return p;
}
Ints inverse(const Ints& p) {
  Ints inv(p.size());
  for (size_t j = 0; j < p.size(); ++j) inv[size_t(p[j])] = int64_t(j);
  return inv;
}

struct Layout {
  std::string lhs, rhs, out;
};

struct Outcome {
  Array got;                  // the result, back in canonical order, as f64
  std::vector<double> want;   // the oracle
};

// conv_general_dilated of the case `g` with `ns` spatial dims in layout `lay` (none: default), the
// operands converted to `dt`; padding given as pairs (or as `mode` when not empty).
Outcome run_case(const Geo& g, size_t ns, mj::DType dt, const std::optional<Layout>& lay = std::nullopt,
                 bool integers = true, const std::string& mode = "",
                 std::optional<mj::DType> pref = std::nullopt) {
  const std::vector<double> x = values(g.N * g.C * g.S[0] * g.S[1] * g.S[2], 7, integers);
  const std::vector<double> w = values(g.O * g.I * g.K[0] * g.K[1] * g.K[2], 11, integers);
  Ints xs{g.N, g.C}, ws{g.O, g.I};
  for (int64_t s : last(g.S, ns)) xs.push_back(s);
  for (int64_t k : last(g.K, ns)) ws.push_back(k);
  Array xa = mj::astype(mj::array(x, xs, mj::f64), dt), wa = mj::astype(mj::array(w, ws, mj::f64), dt);
  lax::ConvGeneralDilatedOptions o;
  o.lhs_dilation = last(g.ld, ns);
  o.rhs_dilation = last(g.rd, ns);
  o.feature_group_count = g.fgc;
  o.batch_group_count = g.bgc;
  o.preferred_element_type = pref;
  Ints out_perm;
  if (lay) {
    std::string spatial;
    for (char c : lay->rhs)
      if (c != 'O' && c != 'I') spatial += c;
    xa = lax::transpose(xa, perm_of(lay->lhs, "NC" + spatial));
    wa = lax::transpose(wa, perm_of(lay->rhs, "OI" + spatial));
    out_perm = perm_of(lay->out, "NC" + spatial);
    o.dimension_numbers = lax::ConvDimensionSpec(lay->lhs, lay->rhs, lay->out);
  }
  lax::Padding pad = mode.empty() ? lax::Padding(Pairs{}) : lax::Padding(mode);
  if (mode.empty())
    for (size_t d = 3 - ns; d < 3; ++d) pad.pairs.emplace_back(g.lo[d], g.hi[d]);
  Array y = lax::conv_general_dilated(xa, wa, last(g.stride, ns), pad, o);
  if (lay) y = lax::transpose(y, inverse(out_perm));
  return {mj::astype(y, mj::f64), oracle(x, w, g)};
}

std::vector<double> f64s(const Array& a) {
  Array c = mj::astype(a, mj::f64);
  return std::vector<double>(c.data<double>(), c.data<double>() + c.size());
}

void expect_values(const Outcome& r, double tol = 0) {
  const std::vector<double> got = f64s(r.got);
  ASSERT_EQ(got.size(), r.want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], r.want[i], tol * (1 + std::fabs(r.want[i]))) << "element " << i;
}

void expect_shape(const Outcome& r, const Ints& canonical_shape) {
  EXPECT_EQ(r.got.shape(), canonical_shape);
}

Geo base2d() {
  Geo g;
  g.N = 2, g.C = 3, g.O = 4, g.I = 3;
  g.S = {1, 7, 6};
  g.K = {1, 3, 2};
  return g;
}

}  // namespace

TEST(Convolution, StridesAndValidPadding) {
  Geo g = base2d();
  g.stride = {1, 2, 1};
  Outcome r = run_case(g, 2, mj::f32);
  expect_shape(r, {2, 4, 3, 5});  // (7 - 3) / 2 + 1, (6 - 2) / 1 + 1
  expect_values(r);
}

// SAME: output ceil(in / stride), the padding (out - 1) * stride + window - in split with the odd
// element at the end; SAME_LOWER at the beginning (JAX's padtype_to_pads docstring).
TEST(Convolution, SameAndSameLowerPadding) {
  EXPECT_EQ(lax::padtype_to_pads({5, 6}, {3, 3}, {2, 2}, "SAME"), (Pairs{{1, 1}, {0, 1}}));
  EXPECT_EQ(lax::padtype_to_pads({5, 6}, {3, 3}, {2, 2}, "SAME_LOWER"), (Pairs{{1, 1}, {1, 0}}));
  EXPECT_EQ(lax::padtype_to_pads({5, 6}, {3, 3}, {2, 2}, "VALID"), (Pairs{{0, 0}, {0, 0}}));
  Geo g = base2d();
  g.S = {1, 6, 5};
  g.K = {1, 3, 4};
  g.stride = {1, 2, 2};
  // H: out 3, pad 2 * 2 + 3 - 6 = 1; W: out 3, pad 2 * 2 + 4 - 5 = 3.
  g.lo = {0, 0, 1}, g.hi = {0, 1, 2};
  Outcome same = run_case(g, 2, mj::f64, std::nullopt, true, "SAME");
  expect_shape(same, {2, 4, 3, 3});
  expect_values(same);
  g.lo = {0, 1, 2}, g.hi = {0, 0, 1};
  expect_values(run_case(g, 2, mj::f64, std::nullopt, true, "SAME_LOWER"));
}

TEST(Convolution, ExplicitAndNegativePadding) {
  Geo g = base2d();
  g.lo = {0, 2, -1}, g.hi = {0, 1, -2};
  Outcome r = run_case(g, 2, mj::f32);
  expect_shape(r, {2, 4, 8, 2});  // 7 + 3 - 3 + 1, 6 - 3 - 2 + 1
  expect_values(r);
  g.lo = {0, -3, 1}, g.hi = {0, 0, 0};
  expect_values(run_case(g, 2, mj::f64));
}

TEST(Convolution, LhsAndRhsDilation) {
  Geo g = base2d();
  g.ld = {1, 2, 3};
  g.lo = {0, 1, 2}, g.hi = {0, 2, 0};
  Outcome r = run_case(g, 2, mj::f32);
  expect_shape(r, {2, 4, 14, 17});  // 13 + 3 - 3 + 1, 16 + 2 - 2 + 1
  expect_values(r);
  g = base2d();
  g.rd = {1, 2, 3};
  g.stride = {1, 1, 2};
  Outcome a = run_case(g, 2, mj::f32);
  expect_shape(a, {2, 4, 3, 2});  // 7 - 5 + 1, (6 - 4) / 2 + 1
  expect_values(a);
  g.ld = {1, 2, 2};
  g.lo = {0, -1, 3}, g.hi = {0, 2, -1};
  expect_values(run_case(g, 2, mj::f64));
}

TEST(Convolution, FeatureGroupsAndDepthwise) {
  Geo g = base2d();
  g.C = 4, g.I = 2, g.O = 6, g.fgc = 2;
  expect_values(run_case(g, 2, mj::f32));
  // Depthwise: one group per input feature, two output features each.
  Geo d = base2d();
  d.C = 3, d.I = 1, d.O = 6, d.fgc = 3;
  d.stride = {1, 2, 1};
  d.lo = {0, 1, 1}, d.hi = {0, 1, 1};
  expect_values(run_case(d, 2, mj::f32));
}

TEST(Convolution, BatchGroupCount) {
  Geo g = base2d();
  g.N = 4, g.bgc = 2, g.O = 4;
  Outcome r = run_case(g, 2, mj::f32);
  expect_shape(r, {2, 4, 5, 5});
  expect_values(r);
  g.N = 6, g.bgc = 3, g.O = 6;
  g.rd = {1, 2, 1};
  expect_values(run_case(g, 2, mj::f64));
}

TEST(Convolution, OneAndThreeSpatialDimensions) {
  Geo a;
  a.N = 2, a.C = 3, a.O = 2, a.I = 3;
  a.S = {1, 1, 9}, a.K = {1, 1, 3};
  a.stride = {1, 1, 2}, a.lo = {0, 0, 1}, a.hi = {0, 0, 2}, a.ld = {1, 1, 2}, a.rd = {1, 1, 2};
  Outcome r = run_case(a, 1, mj::f32);
  expect_shape(r, {2, 2, 8});  // (17 + 3 - 5) / 2 + 1
  expect_values(r);
  expect_values(run_case(a, 1, mj::f32, Layout{"NWC", "WIO", "NWC"}));
  Geo b;
  b.N = 2, b.C = 2, b.O = 3, b.I = 2;
  b.S = {4, 5, 6}, b.K = {2, 3, 2};
  b.stride = {1, 2, 2}, b.lo = {1, 0, 0}, b.hi = {0, 1, 1}, b.rd = {2, 1, 1};
  Outcome c = run_case(b, 3, mj::f32);
  expect_shape(c, {2, 3, 3, 2, 3});
  expect_values(c);
  expect_values(run_case(b, 3, mj::f64, Layout{"NDHWC", "DHWIO", "NDHWC"}));
}

// The layouts JAX's lax_test uses, and a permutation of every operand where the kernel's spatial
// order (W before H) decides which stride goes with which dim.
TEST(Convolution, DimensionNumbers) {
  Geo g = base2d();
  g.stride = {1, 2, 1};
  g.lo = {0, 1, 0}, g.hi = {0, 0, 1};
  for (const Layout& lay : {Layout{"NCHW", "OIHW", "NCHW"}, Layout{"NHWC", "HWIO", "NHWC"},
                            Layout{"NCHW", "HWIO", "NHWC"}, Layout{"HWCN", "OIHW", "CNHW"}}) {
    SCOPED_TRACE(lay.lhs + " " + lay.rhs + " " + lay.out);
    expect_values(run_case(g, 2, mj::f32, lay));
  }
  // Kernel "IWHO": spatial order (W, H), so the case's first spatial entries (the oracle's) are W.
  Geo t = base2d();
  t.S = {1, 6, 7};
  t.K = {1, 2, 3};
  t.stride = {1, 1, 2};
  expect_values(run_case(t, 2, mj::f32, Layout{"WNCH", "IWHO", "CWNH"}));
  const auto dn = lax::conv_dimension_numbers({2, 7, 6, 3}, {3, 2, 3, 4}, {"NHWC", "HWIO", "NHWC"});
  EXPECT_EQ(dn.lhs_spec, (Ints{0, 3, 1, 2}));
  EXPECT_EQ(dn.rhs_spec, (Ints{3, 2, 0, 1}));
  EXPECT_EQ(dn.out_spec, (Ints{0, 3, 1, 2}));
  EXPECT_EQ(lax::conv_dimension_numbers({2, 3, 4}, {2, 3, 4}, {}).rhs_spec, (Ints{0, 1, 2}));
}

// Every dtype: integer values make every result exact, bf16's once rounded from the f32 sum. The
// second geometry's output is larger than its input (lhs dilation, padding): the eager kernel's
// scatter form; the first's is smaller: its gather (im2col) form.
TEST(Convolution, Dtypes) {
  Geo g = base2d();
  g.stride = {1, 2, 1};
  g.lo = {0, 1, 1}, g.hi = {0, 1, 0};
  Geo t = base2d();
  t.ld = {1, 2, 2};
  t.lo = {0, 2, 1}, t.hi = {0, 2, 1};
  t.fgc = 3, t.I = 1, t.O = 6;
  for (mj::DType dt : {mj::f32, mj::f64, mj::i32, mj::bf16})
    for (const Geo& geo : {g, t}) {
      SCOPED_TRACE(mj::dtype_name(dt));
      Outcome r = run_case(geo, 2, dt);
      if (dt == mj::bf16)
        for (double& v : r.want) v = double(float(mj::bfloat16(float(v))));
      expect_values(r);
    }
  expect_values(run_case(t, 2, mj::f64, std::nullopt, false), 1e-13);
  expect_values(run_case(g, 2, mj::f64, std::nullopt, false), 1e-13);
  expect_values(run_case(g, 2, mj::f32, std::nullopt, false), 1e-5);
}

// bf16 operands are multiplied exactly and summed in f32: 16 * 16 + 1 * 1 = 257 is the f32
// result with preferred_element_type f32; the bf16 result rounds it to 256. i32 wraps mod 2^32.
TEST(Convolution, Bf16AccumulatesInF32AndIntegersWrap) {
  Array x = mj::astype(mj::array({16.0, 1.0}, {1, 2, 1}, mj::f32), mj::bf16);
  Array w = mj::astype(mj::array({16.0, 1.0}, {1, 2, 1}, mj::f32), mj::bf16);
  Array b = lax::conv(x, w, {1}, "VALID");
  EXPECT_EQ(b.aval().str(), "bf16[1,1,1]");
  EXPECT_EQ(f64s(b), (std::vector<double>{256}));
  Array f = lax::conv(x, w, {1}, "VALID", {}, mj::f32);
  EXPECT_EQ(f.aval().str(), "f32[1,1,1]");
  EXPECT_EQ(f64s(f), (std::vector<double>{257}));
  Array xi = mj::array({65536.0, 3.0}, {1, 2, 1}, mj::i32);
  Array wi = mj::array({65536.0, 5.0}, {1, 2, 1}, mj::i32);
  EXPECT_EQ(f64s(lax::conv(xi, wi, {1}, "VALID")), (std::vector<double>{15}));  // 2^32 + 15 mod 2^32
  EXPECT_EQ(lax::conv(xi, wi, {1}, "VALID", {}, mj::f32).dtype(), mj::f32);
}

TEST(Convolution, ConvAndConvWithGeneralPaddingAreTheGeneralConvolution) {
  Geo g = base2d();
  g.stride = {1, 2, 2};
  g.lo = {0, 1, 0}, g.hi = {0, 1, 0};  // SAME: H out 4, pad 3 * 2 + 3 - 7 = 2; W out 3, pad 2 * 2 + 2 - 6 = 0
  const std::vector<double> x = values(2 * 3 * 7 * 6, 7, true), w = values(4 * 3 * 3 * 2, 11, true);
  Array xa = mj::array(x, {2, 3, 7, 6}, mj::f64), wa = mj::array(w, {4, 3, 3, 2}, mj::f64);
  EXPECT_EQ(f64s(lax::conv(xa, wa, {2, 2}, "SAME")), oracle(x, w, g));
  Geo d = base2d();
  d.lo = {0, 2, -1}, d.hi = {0, 0, 1}, d.ld = {1, 2, 1}, d.rd = {1, 1, 2};
  EXPECT_EQ(f64s(lax::conv_with_general_padding(xa, wa, {1, 1}, {{2, 0}, {-1, 1}}, {2, 1}, {1, 2})),
            oracle(x, w, d));
  // The wrappers bind the general primitive with the default layout.
  std::string text = mj::to_string(
      mj::make_jaxpr([](const Array& a, const Array& b) { return lax::conv(a, b, {2, 2}, "SAME"); })(xa, wa));
  EXPECT_NE(text.find("conv_general_dilated["), std::string::npos) << text;
  EXPECT_NE(text.find("lhs_spec=(0, 1, 2, 3)"), std::string::npos) << text;
  EXPECT_NE(text.find("padding=(1, 1, 0, 0)"), std::string::npos) << text;
}

// jax.lax.conv_transpose with transpose_kernel=True is the gradient of conv_general_dilated with
// respect to its input (JAX's lax_test _conv_transpose_via_grad), for VALID and SAME; its output
// spatial size is in * stride + max(k - stride, 0) (VALID) or in * stride (SAME).
TEST(Convolution, ConvTransposeIsTheGradientOfConv) {
  const std::vector<double> data = values(2 * 4 * 5 * 3, 3, false), kern = values(3 * 3 * 2 * 3, 5, false);
  Array d = mj::array(data, {2, 4, 5, 3}, mj::f64);  // NHWC, features 3 (the forward's outputs)
  Array k = mj::array(kern, {3, 3, 2, 3}, mj::f64);  // HWIO: I = 2, O = 3
  for (const char* padding : {"VALID", "SAME"}) {
    SCOPED_TRACE(padding);
    lax::ConvTransposeOptions o;
    o.transpose_kernel = true;
    Array t = lax::conv_transpose(d, k, {2, 2}, padding, o);
    const bool valid = std::string(padding) == "VALID";
    const Ints out{2, valid ? 4 * 2 + 1 : 8, valid ? 5 * 2 + 1 : 10, 2};
    EXPECT_EQ(t.shape(), out);
    lax::ConvGeneralDilatedOptions fo;
    fo.dimension_numbers = lax::ConvDimensionSpec("NHWC", "HWIO", "NHWC");
    auto vr = mj::vjp_flat(
        [&](const std::vector<Array>& a) {
          return std::vector<Array>{lax::conv_general_dilated(a[0], k, {2, 2}, padding, fo)};
        },
        {mj::ones(out, mj::f64)});
    Array g = vr.pullback({d})[0];
    const std::vector<double> a = f64s(t), b = f64s(g);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << i;
  }
  // Without transpose_kernel: conv_general_dilated with lhs_dilation = strides and JAX's
  // _conv_transpose_padding, here k = 3, s = 2: SAME (2, 1) (pad_len 3, ceil(3 / 2) before);
  // VALID (2, 2) (pad_len 3 + max(3 - 2, 0), k - 1 before).
  Array x = mj::array(values(1 * 2 * 4, 9, true), {1, 4, 2}, mj::f64);  // NWC
  Array w = mj::array(values(3 * 2 * 3, 13, true), {3, 2, 3}, mj::f64);  // WIO
  for (auto [padding, lo, hi] : {std::tuple{"SAME", 2, 1}, std::tuple{"VALID", 2, 2}}) {
    lax::ConvGeneralDilatedOptions go;
    go.lhs_dilation = {2};
    go.dimension_numbers = lax::ConvDimensionSpec("NWC", "WIO", "NWC");
    EXPECT_EQ(f64s(lax::conv_transpose(x, w, {2}, padding)),
              f64s(lax::conv_general_dilated(x, w, {1}, Pairs{{lo, hi}}, go)))
        << padding;
  }
  EXPECT_EQ(lax::conv_transpose(x, w, {2}, "VALID").shape(), (Ints{1, 9, 3}));  // 4 * 2 + max(3 - 2, 0)
}

// The jaxpr of a gradient holds convolutions: one for the primal, the transpose with respect to
// the input (a convolution of the cotangent with the reversed kernel) and with respect to the
// kernel (JAX's _conv_general_dilated_transpose_lhs/_rhs); nothing else is heavy.
TEST(Convolution, GradientJaxprShowsConvolutions) {
  Array x = mj::array(values(2 * 3 * 6 * 5, 1, false), {2, 3, 6, 5}, mj::f64);
  Array w = mj::array(values(4 * 3 * 3 * 2, 2, false), {4, 3, 3, 2}, mj::f64);
  auto f = [](const Array& a, const Array& b) {
    lax::ConvGeneralDilatedOptions o;
    o.rhs_dilation = {1, 2};
    return mj::sum(mj::sin(lax::conv_general_dilated(a, b, {2, 1}, {{1, 0}, {0, 1}}, o)));
  };
  mj::ClosedJaxpr j = mj::make_jaxpr(mj::grad(f, mj::argnums<0, 1>))(x, w);
  int convs = 0, revs = 0;
  for (const auto& e : j.jaxpr->eqns) {
    convs += e.primitive->name == "conv_general_dilated";
    revs += e.primitive->name == "rev";
  }
  EXPECT_EQ(convs, 3) << mj::to_string(j);
  EXPECT_EQ(revs, 1) << mj::to_string(j);
  // The lhs transpose: window_strides and lhs_dilation exchanged (stride 2 -> lhs_dilation 2).
  const std::string text = mj::to_string(j);
  EXPECT_NE(text.find("lhs_dilation=(2, 1)"), std::string::npos) << text;
  // Second order runs through the same rules (the transposes are convolutions).
  auto h = mj::grad([&](const Array& a) { return mj::sum(mj::grad(f, mj::argnums<0>)(a, w)); })(x);
  EXPECT_EQ(h.shape(), x.shape());
}

// Every param prints as JAX names it and parses back to the same equation; the parsed program
// computes the same values.
TEST(Convolution, ParamsPrintAndParseBack) {
  Array x = mj::astype(mj::array(values(2 * 5 * 4 * 3, 4, true), {2, 5, 4, 3}, mj::f64), mj::bf16);
  Array w = mj::astype(mj::array(values(3 * 2 * 1 * 3, 6, true), {3, 2, 1, 3}, mj::f64), mj::bf16);
  auto f = [](const Array& a, const Array& b) {
    lax::ConvGeneralDilatedOptions o;
    o.dimension_numbers = lax::ConvDimensionSpec("NHWC", "HWIO", "NHWC");
    o.lhs_dilation = {1, 2};
    o.rhs_dilation = {2, 1};
    o.feature_group_count = 3;
    o.precision = lax::Precision::HIGHEST;
    o.preferred_element_type = mj::f32;
    return lax::conv_general_dilated(a, b, {1, 2}, {{1, -1}, {0, 2}}, o);
  };
  mj::ClosedJaxpr j = mj::make_jaxpr(f)(x, w);
  const std::string text = mj::to_string(j);
  for (const char* part :
       {"batch_group_count=1", "feature_group_count=3", "lhs_dilation=(1, 2)", "lhs_spec=(0, 3, 1, 2)",
        "out_spec=(0, 3, 1, 2)", "padding=(1, -1, 0, 2)", "precision=(Precision.HIGHEST, Precision.HIGHEST)",
        "preferred_element_type=float32", "rhs_dilation=(2, 1)", "rhs_spec=(3, 2, 0, 1)",
        "window_strides=(1, 2)"})
    EXPECT_NE(text.find(part), std::string::npos) << part << " not in " << text;
  mj::ClosedJaxpr parsed = mj::parse_jaxpr(text);
  EXPECT_EQ(mj::to_string(parsed), text);
  EXPECT_EQ(f64s(mj::eval_jaxpr(parsed, {x, w})[0]), f64s(f(x, w)));
  const std::string plain = mj::to_string(mj::make_jaxpr([](const Array& a, const Array& b) {
    return lax::conv(a, b, {1, 1}, "VALID");
  })(mj::ones({1, 2, 4, 4}, mj::f32), mj::ones({3, 2, 2, 2}, mj::f32)));
  EXPECT_NE(plain.find("precision=None"), std::string::npos) << plain;
  EXPECT_NE(plain.find("preferred_element_type=None"), std::string::npos) << plain;
  EXPECT_EQ(mj::to_string(mj::parse_jaxpr(plain)), plain);
}

// XLA's HloCostAnalysis: 2 flops per multiply-add, counting only the (kernel, output) positions
// that read an input element. Without padding: 2 * output elements * I * window. With padding 1 on
// each side of a 1-D dim of 4 and a window of 3 (6 padded, 4 outputs): 10 of the 12 pairs read the
// input (q = 0 misses k = 0, q = 3 misses k = 2).
TEST(Convolution, CostIsXlasConvolutionFlops) {
  auto flops = [](const Array& a, const Array& b, const lax::Padding& p) {
    mj::ClosedJaxpr j = mj::make_jaxpr(
        [&](const Array& u, const Array& v) { return lax::conv(u, v, {1}, p); })(a, b);
    return mj::cost_analysis(*j.jaxpr).at("flops");
  };
  Array x = mj::ones({2, 3, 4}, mj::f32), w = mj::ones({5, 3, 3}, mj::f32);
  EXPECT_EQ(flops(x, w, "VALID"), 2.0 * (2 * 5 * 2) * 3 * 3);
  EXPECT_EQ(flops(x, w, Pairs{{1, 1}}), 2.0 * 2 * 5 * 3 * 10);
}

// A padded input smaller than the dilated window, and padding that crops below zero, are
// ShapeErrors naming both shapes and the padding (JAX would return an empty dim).
TEST(Convolution, WindowLargerThanPaddedInputIsAShapeError) {
  Array x = mj::ones({1, 2, 4, 4}, mj::f32), w = mj::ones({3, 2, 3, 3}, mj::f32);
  auto expect = [&](const lax::Padding& p, const lax::ConvGeneralDilatedOptions& o, const std::string& part) {
    try {
      lax::conv_general_dilated(x, w, {1, 1}, p, o);
      ADD_FAILURE() << "no error";
    } catch (const mj::ShapeError& e) {
      const std::string m = e.what();
      for (const std::string& s :
           {std::string("f32[1,2,4,4]"), std::string("f32[3,2,3,3]"), std::string("padding"), part})
        EXPECT_NE(m.find(s), std::string::npos) << s << " not in " << m;
    }
  };
  expect({{-1, -1}, {0, 0}}, {}, "smaller than the dilated window");
  lax::ConvGeneralDilatedOptions dil;
  dil.rhs_dilation = {2, 1};
  expect({{0, 0}, {0, 0}}, dil, "smaller than the dilated window");
  expect({{-3, -2}, {0, 0}}, {}, "below zero");
  EXPECT_NO_THROW(lax::conv_general_dilated(x, w, {1, 1}, {{-1, 0}, {0, 0}}));
}

// The typed view reads what the lax function writes.
TEST(Convolution, TypedViewReadsTheEquation) {
  Array x = mj::ones({2, 4, 5}, mj::f32), w = mj::ones({6, 2, 3}, mj::f32);
  lax::ConvGeneralDilatedOptions o;
  o.feature_group_count = 2;
  mj::ClosedJaxpr j = mj::make_jaxpr(
      [&](const Array& a, const Array& b) { return lax::conv_general_dilated(a, b, {2}, "SAME", o); })(x, w);
  const mj::ConvParams p = mj::conv_params(j.jaxpr->eqns.at(0));
  EXPECT_EQ(p.window_strides, (Ints{2}));
  EXPECT_EQ(p.padding, (Ints{1, 1}));  // out 3, pad 2 * 2 + 3 - 5 = 2
  EXPECT_EQ(p.feature_group_count, 2);
  EXPECT_FALSE(p.precision.has_value());
  EXPECT_FALSE(p.preferred_element_type.has_value());
}

// preferred_element_type through every rule: f32 operands with an f64 result differentiate to f32
// cotangents equal (to f32 rounding) to the gradients of the f64 convolution of the converted
// operands; the JVP's tangent is f64; vmap keeps the result dtype.
TEST(Convolution, PreferredElementTypeThroughTheRules) {
  Array x = mj::array(values(2 * 2 * 5 * 4, 21, false), {2, 2, 5, 4}, mj::f32);
  Array w = mj::array(values(4 * 1 * 3 * 2, 22, false), {4, 1, 3, 2}, mj::f32);
  auto conv = [](const Array& a, const Array& b, std::optional<mj::DType> pref) {
    lax::ConvGeneralDilatedOptions o;
    o.feature_group_count = 2;
    o.lhs_dilation = {2, 1};
    o.preferred_element_type = pref;
    return lax::conv_general_dilated(a, b, {1, 2}, Pairs{{1, 1}, {0, 1}}, o);
  };
  auto loss = [&](const Array& a, const Array& b) { return mj::sum(mj::sin(conv(a, b, mj::f64))); };
  auto loss64 = [&](const Array& a, const Array& b) { return mj::sum(mj::sin(conv(a, b, std::nullopt))); };
  auto [gx, gw] = mj::grad(loss, mj::argnums<0, 1>)(x, w);
  auto [ex, ew] = mj::grad(loss64, mj::argnums<0, 1>)(mj::astype(x, mj::f64), mj::astype(w, mj::f64));
  EXPECT_EQ(gx.dtype(), mj::f32);
  EXPECT_EQ(gw.dtype(), mj::f32);
  const std::vector<double> a = f64s(gx), b = f64s(ex), c = f64s(gw), d = f64s(ew);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5 * (1 + std::fabs(b[i]))) << i;
  for (size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(c[i], d[i], 1e-5 * (1 + std::fabs(d[i]))) << i;
  auto [out, tan] = mj::jvp([&](const Array& a) { return conv(a, w, mj::f64); }, x, x);
  EXPECT_EQ(out.dtype(), mj::f64);
  EXPECT_EQ(tan.dtype(), mj::f64);
  EXPECT_EQ(f64s(tan), f64s(out));  // linear in x: the tangent along x is the value
  Array xs = mj::stack({x, x * 2.0f}, 0);
  Array v = mj::vmap([&](const Array& a) { return conv(a, w, mj::f64); })(xs);
  EXPECT_EQ(v.dtype(), mj::f64);
  EXPECT_EQ(f64s(v[1]), f64s(conv(x * 2.0f, w, mj::f64)));
}
