// Tests of the loop-nest lowering of the windowed primitives (jit/codegen/lower/window_loops.h):
// conv_general_dilated, reduce_window_sum/max/min, the generic reduce_window,
// select_and_scatter_add and select_and_gather_add, given as jaxpr text, compiled with the loop
// nests forced (whatever the oneDNN-aware rules would pick) and compared with eager evaluation of
// the same jaxpr and with naive loops written here from XLA's definitions (ConvGeneralDilated,
// ReduceWindow, SelectAndScatter; JAX v0.7.0 jax/_src/lax/convolution.py, windowed_reductions.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jit/caches.h"
#include "jit/codegen/lower/program.h"
#include "jit/codegen/lower/window_loops.h"
#include "lowering_helpers.h"

namespace {

using lowtest::bit_equal;
using lowtest::small_ints;
using lowtest::uniform;
using mj::Array;
using Ints = std::vector<int64_t>;
using Pads = std::vector<std::pair<int64_t, int64_t>>;
namespace lower = minijax::lower;

// ---- the loop nests, forced ------------------------------------------------------------------

// Installs the loop-nest rules for the six primitives (restoring the previous rules after), with
// the executable caches cleared on both sides so no program compiled under other rules is reused.
class LoopNests {
 public:
  LoopNests() {
    mj::clear_caches();
    auto& t = lower::program_rules();
    auto set = [&](const std::string& name, lower::ProgramRule rule) {
      if (auto it = t.find(name); it != t.end()) saved_[name] = it->second;
      t[name] = lower::ProgramRuleEntry{"loop nest", std::move(rule)};
    };
    set("conv_general_dilated", [](lower::ProgramEmitter& pe, const mj::Eqn& e) { lower::emit_conv_loop_nest(pe, e); });
    for (const char* n : {"reduce_window_sum", "reduce_window_max", "reduce_window_min", "reduce_window"})
      set(n, [](lower::ProgramEmitter& pe, const mj::Eqn& e) { lower::emit_reduce_window_loop_nest(pe, e); });
    set("select_and_scatter_add",
        [](lower::ProgramEmitter& pe, const mj::Eqn& e) { lower::emit_select_and_scatter_add_loop_nest(pe, e); });
    set("select_and_gather_add",
        [](lower::ProgramEmitter& pe, const mj::Eqn& e) { lower::emit_select_and_gather_add_loop_nest(pe, e); });
  }
  ~LoopNests() {
    for (auto& [name, entry] : saved_) lower::program_rules()[name] = entry;
    mj::clear_caches();
  }

 private:
  std::map<std::string, lower::ProgramRuleEntry> saved_;
};

struct Result {
  std::vector<Array> eager, got;
  std::string text;
};

// The jaxpr `text` evaluated eagerly and compiled (under the forced loop nests) on `args`.
Result run(const std::string& text, const std::vector<Array>& args) {
  LoopNests force;
  const mj::ClosedJaxpr cj = mj::parse_jaxpr(text);
  Result r;
  r.eager = mj::eval_jaxpr(cj, args);
  auto jf = mj::jit([cj](const std::vector<Array>& xs) { return mj::eval_jaxpr(cj, xs); });
  r.got = jf(args);
  r.text = jf.lower(args).compile().as_text();
  return r;
}

std::string tuple(const Ints& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}
std::string flat(const Pads& p) {
  Ints f;
  for (auto [lo, hi] : p) f.insert(f.end(), {lo, hi});
  return tuple(f);
}
std::string aval(mj::DType dt, const mj::Shape& s) { return mj::ShapedArray{s, dt}.str(); }
const char* numpy_name(mj::DType d) {
  return d == mj::f64 ? "float64" : d == mj::f32 ? "float32" : d == mj::bf16 ? "bfloat16" : mj::dtype_name(d);
}

std::vector<double> values(const Array& a) {
  Array d = mj::astype(a, mj::f64);
  return std::vector<double>(d.data<double>(), d.data<double>() + a.size());
}

// Calls f(index) for every index of `shape`, row-major.
void for_each_index(const mj::Shape& shape, const std::function<void(const Ints&)>& f) {
  if (mj::shape_size(shape) == 0) return;
  Ints i(shape.size(), 0);
  while (true) {
    f(i);
    size_t d = shape.size();
    while (d > 0 && ++i[d - 1] == shape[d - 1]) i[--d] = 0;
    if (d == 0) return;
  }
}

int64_t dilate(int64_t n, int64_t d) { return n == 0 ? 0 : (n - 1) * d + 1; }

// The element x of a window tap: position q of the dilated, padded axis (XLA), or -1.
int64_t tap(int64_t y, int64_t k, int64_t s, int64_t lo, int64_t wd, int64_t bd, int64_t n) {
  const int64_t q = y * s + k * wd - lo;
  return q < 0 || q % bd != 0 || q / bd >= n ? -1 : q / bd;
}

// ---- convolution -----------------------------------------------------------------------------

struct Conv {
  mj::DType dt = mj::f32;
  std::optional<mj::DType> preferred;
  mj::Shape lhs, rhs;
  Ints lhs_spec{0, 1, 2, 3}, rhs_spec{0, 1, 2, 3}, out_spec{0, 1, 2, 3};
  Ints strides{1, 1};
  Pads pad{{0, 0}, {0, 0}};
  Ints lhs_dil{1, 1}, rhs_dil{1, 1};
  int64_t fgc = 1, bgc = 1;

  size_t ns() const { return strides.size(); }
  mj::DType out_dt() const { return preferred.value_or(dt); }
  mj::Shape out() const {
    mj::Shape o(ns() + 2);
    o[size_t(out_spec[0])] = lhs[size_t(lhs_spec[0])] / bgc;
    o[size_t(out_spec[1])] = rhs[size_t(rhs_spec[0])];
    for (size_t d = 0; d < ns(); ++d) {
      const int64_t padded = dilate(lhs[size_t(lhs_spec[2 + d])], lhs_dil[d]) + pad[d].first + pad[d].second;
      o[size_t(out_spec[2 + d])] = (padded - dilate(rhs[size_t(rhs_spec[2 + d])], rhs_dil[d])) / strides[d] + 1;
    }
    return o;
  }
  std::string text() const {
    return "{ lambda ; a:" + aval(dt, lhs) + " b:" + aval(dt, rhs) + ". let c:" + aval(out_dt(), out()) +
           " = conv_general_dilated[batch_group_count=" + std::to_string(bgc) +
           " feature_group_count=" + std::to_string(fgc) + " lhs_dilation=" + tuple(lhs_dil) +
           " lhs_spec=" + tuple(lhs_spec) + " out_spec=" + tuple(out_spec) + " padding=" + flat(pad) +
           " precision=None preferred_element_type=" + (preferred ? numpy_name(*preferred) : "None") +
           " rhs_dilation=" + tuple(rhs_dil) + " rhs_spec=" + tuple(rhs_spec) + " window_strides=" + tuple(strides) +
           "] a b in (c,) }";
  }
};

// XLA's ConvGeneralDilated from its definition, per output element: the value (f64, or wrapping
// u32 arithmetic for integers), the sum of the products' magnitudes and their number. Feature
// group g (of the output features, O / groups each) reads input features [g*I, (g+1)*I); batch
// group g reads input batch [g*N', (g+1)*N') (N' the output batch).
struct ConvRef {
  std::vector<double> val, mag;
  int64_t terms = 0;
};

ConvRef naive_conv(const Conv& c, const Array& l, const Array& r) {
  const auto lv = values(l), rv = values(r);
  const auto ls = mj::strides_of(c.lhs), rs = mj::strides_of(c.rhs);
  const mj::Shape out = c.out();
  const auto os = mj::strides_of(out);
  const int64_t O = c.rhs[size_t(c.rhs_spec[0])], I = c.rhs[size_t(c.rhs_spec[1])];
  const int64_t Og = O / (c.fgc * c.bgc), Nout = out[size_t(c.out_spec[0])];
  mj::Shape ys, ks;
  for (size_t d = 0; d < c.ns(); ++d) {
    ys.push_back(out[size_t(c.out_spec[2 + d])]);
    ks.push_back(c.rhs[size_t(c.rhs_spec[2 + d])]);
  }
  const bool integer = !mj::is_floating(c.dt);
  ConvRef ref{std::vector<double>(size_t(mj::shape_size(out))), std::vector<double>(size_t(mj::shape_size(out))),
              I * mj::shape_size(ks)};
  for (int64_t n = 0; n < Nout; ++n)
    for (int64_t o = 0; o < O; ++o) {
      const int64_t g = o / Og, nb = c.bgc > 1 ? g * Nout + n : n, c0 = c.fgc > 1 ? g * I : 0;
      for_each_index(ys, [&](const Ints& y) {
        double sum = 0, mag = 0;
        uint32_t isum = 0;
        for (int64_t i = 0; i < I; ++i)
          for_each_index(ks, [&](const Ints& k) {
            int64_t li = nb * ls[size_t(c.lhs_spec[0])] + (c0 + i) * ls[size_t(c.lhs_spec[1])];
            int64_t ri = o * rs[size_t(c.rhs_spec[0])] + i * rs[size_t(c.rhs_spec[1])];
            for (size_t d = 0; d < c.ns(); ++d) {
              const int64_t x = tap(y[d], k[d], c.strides[d], c.pad[d].first, c.rhs_dil[d], c.lhs_dil[d],
                                    c.lhs[size_t(c.lhs_spec[2 + d])]);
              if (x < 0) return;
              li += x * ls[size_t(c.lhs_spec[2 + d])];
              ri += k[d] * rs[size_t(c.rhs_spec[2 + d])];
            }
            const double p = lv[size_t(li)] * rv[size_t(ri)];
            sum += p;
            mag += std::fabs(p);
            isum += uint32_t(int64_t(lv[size_t(li)])) * uint32_t(int64_t(rv[size_t(ri)]));
          });
        int64_t oi = n * os[size_t(c.out_spec[0])] + o * os[size_t(c.out_spec[1])];
        for (size_t d = 0; d < c.ns(); ++d) oi += y[d] * os[size_t(c.out_spec[2 + d])];
        ref.val[size_t(oi)] = !integer ? sum : c.out_dt() == mj::u32 ? double(isum) : double(int32_t(isum));
        ref.mag[size_t(oi)] = mag;
      });
    }
  return ref;
}

// Compiled and eager against the definition: integers exactly; floats within the rounding of a
// sum of `terms` products in the accumulator (f32, or f64) plus the result's rounding (bf16: one
// ulp, 2^-7, since eager and compiled may round sums on either side of a tie apart).
void expect_conv(const std::string& what, const Conv& c, const Array& got, const Array& eager, const ConvRef& ref) {
  ASSERT_EQ(got.aval().str(), aval(c.out_dt(), c.out())) << what;
  const auto g = values(got), e = values(eager);
  const bool f64 = c.dt == mj::f64 || c.out_dt() == mj::f64;
  const double eps = f64 ? 0x1p-52 : 0x1p-23;
  const double round = c.out_dt() == mj::bf16 ? 0x1p-7 : c.out_dt() == mj::f32 ? 0x1p-23 : 0x1p-52;
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i) {
    const double want = ref.val[i];
    const double tol = mj::is_floating(c.dt) ? double(ref.terms) * eps * ref.mag[i] + round * std::fabs(want) : 0;
    const bool ok = std::fabs(g[i] - want) <= tol && std::fabs(g[i] - e[i]) <= 2 * tol;
    if (!ok) ++bad;
    EXPECT_TRUE(ok) << what << " element " << i << ": compiled " << g[i] << " eager " << e[i] << " definition " << want;
  }
}

void check_conv(const std::string& what, const Conv& c, uint32_t seed, double lo = -2, double hi = 2) {
  Array l = uniform(c.lhs, seed, c.dt, lo, hi), r = uniform(c.rhs, seed + 1, c.dt, lo, hi);
  Result res = run(c.text(), {l, r});
  expect_conv(what, c, res.got.at(0), res.eager.at(0), naive_conv(c, l, r));
  EXPECT_NE(res.text.find("[loop nest] conv_general_dilated"), std::string::npos) << what << "\n" << res.text;
}

TEST(WindowLoops, ConvNchwStridesNegativePaddingAndRhsDilation) {
  Conv c;
  c.dt = mj::f64;
  c.lhs = {2, 3, 9, 8};
  c.rhs = {4, 3, 3, 2};
  c.strides = {2, 1};
  c.pad = {{1, 2}, {0, -1}};
  c.rhs_dil = {1, 2};
  check_conv("nchw f64", c, 1);
  c.dt = mj::f32;  // the innermost output dim (W) vectorized inside its interior, scalar at the borders
  c.lhs = {2, 3, 7, 40};
  c.strides = {1, 1};
  c.pad = {{1, 1}, {3, 2}};
  check_conv("nchw f32 wide", c, 3);
  c.rhs = {7, 3, 3, 2};  // output features in register blocks of 4, then the last 3 one at a time
  check_conv("nchw f32 feature blocks", c, 4);
}

TEST(WindowLoops, ConvNhwcHwioVectorizesOutputFeaturesAndRunsInParallel) {
  Conv c;
  c.lhs = {4, 16, 16, 8};
  c.rhs = {3, 3, 8, 19};
  c.lhs_spec = {0, 3, 1, 2};  // NHWC
  c.rhs_spec = {3, 2, 0, 1};  // HWIO
  c.out_spec = {0, 3, 1, 2};
  c.pad = {{1, 1}, {1, 1}};
  check_conv("nhwc f32", c, 5);
  Result res = run(c.text(), {uniform(c.lhs, 7), uniform(c.rhs, 8)});
  EXPECT_NE(res.text.find("parallel"), std::string::npos) << res.text;
  c.dt = mj::f64;
  c.lhs = {2, 6, 5, 3};
  c.rhs = {2, 3, 3, 5};
  c.strides = {2, 1};
  c.pad = {{0, 1}, {2, -1}};
  check_conv("nhwc f64", c, 9);
  c.lhs = {6, 6, 5, 3};  // images in register blocks of 4, then the last 2 one at a time
  check_conv("nhwc f64 image blocks", c, 10);
}

TEST(WindowLoops, ConvLhsDilationSkipsHoles) {
  Conv c;
  c.dt = mj::f64;
  c.lhs = {2, 3, 5, 4};
  c.rhs = {2, 3, 3, 3};
  c.lhs_dil = {2, 3};
  c.strides = {1, 2};
  c.pad = {{2, 1}, {1, 2}};
  c.rhs_dil = {2, 1};
  check_conv("lhs dilation", c, 11);
  c.lhs_spec = {0, 3, 1, 2};  // NHWC, holes along the innermost spatial dim of the input
  c.rhs_spec = {3, 2, 0, 1};
  c.out_spec = {0, 3, 1, 2};
  c.lhs = {2, 5, 4, 3};
  c.rhs = {3, 3, 3, 2};
  check_conv("lhs dilation nhwc", c, 13);
}

TEST(WindowLoops, ConvFeatureGroupsAndDepthwise) {
  Conv c;
  c.lhs_spec = {0, 3, 1, 2};
  c.rhs_spec = {3, 2, 0, 1};
  c.out_spec = {0, 3, 1, 2};
  c.lhs = {2, 6, 5, 6};
  c.rhs = {3, 2, 2, 9};  // 3 groups of 2 input and 3 output features
  c.fgc = 3;
  c.pad = {{1, 0}, {0, 1}};
  check_conv("feature groups", c, 15);
  c.lhs = {2, 7, 6, 4};
  c.rhs = {3, 3, 1, 4};  // depthwise: one output feature per group, vectorized across groups
  c.fgc = 4;
  c.pad = {{1, 1}, {1, 1}};
  check_conv("depthwise", c, 17);
  c.rhs = {3, 3, 1, 8};  // depthwise with multiplier 2
  check_conv("depthwise x2", c, 19);
  c.dt = mj::f64;  // NCHW groups
  c.lhs_spec = c.rhs_spec = c.out_spec = {0, 1, 2, 3};
  c.lhs = {1, 4, 6, 5};
  c.rhs = {6, 2, 2, 3};
  c.fgc = 2;
  c.pad = {{0, 0}, {1, 1}};
  check_conv("groups nchw", c, 21);
  c.rhs = {10, 2, 2, 3};  // 2 groups of 5 output features: a block of 4 and 1 per group
  check_conv("groups nchw, blocks within groups", c, 22);
}

TEST(WindowLoops, ConvBatchGroups) {
  Conv c;
  c.dt = mj::f64;
  c.lhs = {4, 3, 6, 5};
  c.rhs = {6, 3, 3, 2};  // 2 batch groups of 2 images; output features 0-2 read group 0, 3-5 group 1
  c.bgc = 2;
  c.pad = {{1, 0}, {0, 0}};
  check_conv("batch groups", c, 23);
  c.lhs_spec = {3, 0, 1, 2};  // the shape of a kernel gradient: batch groups over the input's last dim
  c.rhs_spec = {3, 2, 0, 1};
  c.out_spec = {2, 3, 0, 1};
  c.lhs = {3, 5, 4, 6};
  c.rhs = {2, 2, 3, 3};  // 3 batch groups, one output feature each
  c.bgc = 3;
  c.pad = {{0, 0}, {0, 0}};
  check_conv("batch groups, one feature each", c, 25);
}

TEST(WindowLoops, ConvOneAndThreeSpatialDimsAndPermutedLayouts) {
  Conv c;
  c.lhs = {2, 23, 4};  // NWC, WIO
  c.rhs = {4, 4, 6};
  c.lhs_spec = {0, 2, 1};
  c.rhs_spec = {2, 1, 0};
  c.out_spec = {0, 2, 1};
  c.strides = {3};
  c.pad = {{2, 0}};
  c.lhs_dil = {1};
  c.rhs_dil = {2};
  check_conv("1-d", c, 27);
  Conv t;
  t.dt = mj::f64;
  t.lhs = {1, 2, 5, 6, 4};  // NCDHW, OIDHW
  t.rhs = {3, 2, 2, 3, 2};
  t.lhs_spec = t.rhs_spec = t.out_spec = {0, 1, 2, 3, 4};
  t.strides = {1, 2, 1};
  t.pad = {{0, 1}, {1, 0}, {1, 1}};
  t.lhs_dil = {1, 1, 2};
  t.rhs_dil = {2, 1, 1};
  check_conv("3-d", t, 29);
  Conv p;  // lhs [H, N, W, C], rhs [I, H, W, O], out [C, W, N, H]: the innermost output dim is spatial 0
  p.lhs = {9, 2, 7, 3};
  p.rhs = {3, 3, 2, 4};
  p.lhs_spec = {1, 3, 0, 2};
  p.rhs_spec = {3, 0, 1, 2};
  p.out_spec = {2, 0, 3, 1};
  p.pad = {{1, 1}, {0, 1}};
  check_conv("permuted", p, 31);
  Conv n;  // lhs and out [C, H, W, N]: vectors along the batch, blocks of output features
  n.lhs = {3, 6, 5, 18};
  n.rhs = {6, 3, 2, 2};
  n.lhs_spec = n.out_spec = {3, 0, 1, 2};
  n.pad = {{0, 1}, {1, 0}};
  check_conv("batch innermost", n, 32);
}

TEST(WindowLoops, ConvBf16AccumulatesInF32AndIntegersWrap) {
  Conv c;
  c.dt = mj::bf16;
  c.lhs_spec = {0, 3, 1, 2};
  c.rhs_spec = {3, 2, 0, 1};
  c.out_spec = {0, 3, 1, 2};
  c.lhs = {2, 6, 6, 16};
  c.rhs = {3, 3, 16, 8};
  c.pad = {{1, 1}, {1, 1}};
  check_conv("bf16", c, 33);
  c.preferred = mj::f32;
  check_conv("bf16 -> f32", c, 35);
  c.dt = mj::f32;
  c.preferred = mj::f64;  // f32 operands, products and sums in f64
  check_conv("f32 -> f64", c, 36);
  Conv i;
  i.dt = mj::i32;
  i.lhs = {2, 3, 6, 5};
  i.rhs = {4, 3, 2, 2};
  i.pad = {{1, 0}, {0, 1}};
  check_conv("i32", i, 37, -9, 9);
  check_conv("i32 wrapping", i, 39, -3e9 / 4, 3e9 / 4);  // products of up to 2^59: the sums wrap mod 2^32
  i.dt = mj::u32;
  check_conv("u32 wrapping", i, 41, 0, 4e9);
}

// ---- windowed reductions -----------------------------------------------------------------------

struct Window {
  Ints dims, strides;
  Pads pad;
  Ints base, wdil;
  mj::Shape out(const mj::Shape& x) const {
    mj::Shape o;
    for (size_t d = 0; d < x.size(); ++d)
      o.push_back((dilate(x[d], base[d]) + pad[d].first + pad[d].second - dilate(dims[d], wdil[d])) / strides[d] + 1);
    return o;
  }
  std::string params() const {
    return "base_dilation=" + tuple(base) + " padding=" + flat(pad) + " window_dilation=" + tuple(wdil) +
           " window_dimensions=" + tuple(dims) + " window_strides=" + tuple(strides);
  }
  // f(output offset, operand offset of each window element in window order, or -1), row-major.
  void each(const mj::Shape& x, const std::function<void(int64_t, const Ints&)>& f) const {
    const auto xs = mj::strides_of(x);
    int64_t o = 0;
    for_each_index(out(x), [&](const Ints& y) {
      Ints offs;
      for_each_index(mj::Shape(dims.begin(), dims.end()), [&](const Ints& k) {
        int64_t off = 0;
        for (size_t d = 0; d < x.size() && off >= 0; ++d) {
          const int64_t e = tap(y[d], k[d], strides[d], pad[d].first, wdil[d], base[d], x[d]);
          off = e < 0 ? -1 : off + e * xs[d];
        }
        offs.push_back(off);
      });
      f(o++, offs);
    });
  }
};

// a + b in dtype dt's arithmetic: f64; f32 (IEEE single); bf16 (rounded after the f32 add);
// i32/u32 wrapping mod 2^32.
double add_in(mj::DType dt, double a, double b) {
  switch (dt) {
    case mj::DType::f64: return a + b;
    case mj::DType::f32: return double(float(a) + float(b));
    case mj::DType::bf16: return double(float(mj::bfloat16(float(a) + float(b))));
    case mj::DType::i32: return double(int32_t(uint32_t(int64_t(a)) + uint32_t(int64_t(b))));
    default: return double(uint32_t(int64_t(a)) + uint32_t(int64_t(b)));
  }
}

// The same values: both NaN, or equal with the same sign (of zeros).
void expect_same(const std::string& what, const Array& got, const std::vector<double>& want) {
  const auto g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i) {
    const bool ok = (std::isnan(g[i]) && std::isnan(want[i])) ||
                    (g[i] == want[i] && std::signbit(g[i]) == std::signbit(want[i]));
    bad += !ok;
    EXPECT_TRUE(ok) << what << " element " << i << ": got " << g[i] << " want " << want[i];
  }
}

// Eager's and the definition's monoid windows (XLA's ReduceWindow; padding and holes skipped): sums
// in window order in the dtype (f32 for bf16, rounded once), max/min taking the first NaN.
std::vector<double> naive_monoid(const std::string& m, const Window& w, const Array& x) {
  const auto xv = values(x);
  const mj::DType acc = x.dtype() == mj::bf16 ? mj::f32 : x.dtype();
  std::vector<double> out;
  w.each(x.shape(), [&](int64_t, const Ints& offs) {
    double r = m == "sum" ? 0 : m == "max" ? -INFINITY : INFINITY;
    if (m != "sum" && !mj::is_floating(x.dtype())) {
      const bool u = x.dtype() == mj::u32;
      r = m == "max" ? (u ? 0.0 : double(INT32_MIN)) : (u ? double(UINT32_MAX) : double(INT32_MAX));
    }
    for (int64_t off : offs) {
      if (off < 0 || std::isnan(r)) continue;
      const double v = xv[size_t(off)];
      if (m == "sum") r = add_in(acc, r, v);
      else if (std::isnan(v) || (m == "max" ? v > r : v < r)) r = v;
    }
    out.push_back(x.dtype() == mj::bf16 ? double(float(mj::bfloat16(float(r)))) : r);
  });
  return out;
}

std::string monoid_text(const std::string& m, mj::DType dt, const mj::Shape& x, const Window& w) {
  return "{ lambda ; a:" + aval(dt, x) + ". let b:" + aval(dt, w.out(x)) + " = reduce_window_" + m + "[" + w.params() +
         "] a in (b,) }";
}

void check_monoid(const std::string& m, const Array& x, const Window& w) {
  const std::string what = "reduce_window_" + m + " " + x.aval().str();
  Result r = run(monoid_text(m, x.dtype(), x.shape(), w), {x});
  EXPECT_TRUE(bit_equal(r.got.at(0), r.eager.at(0))) << what << "\n got  " << r.got[0] << "\n want " << r.eager[0];
  expect_same(what, r.got.at(0), naive_monoid(m, w, x));
  EXPECT_NE(r.text.find("[loop nest] reduce_window_" + m), std::string::npos) << r.text;
}

// Ties (small integers), signed zeros and NaNs.
Array with_nans(const mj::Shape& s, uint32_t seed, mj::DType dt) {
  std::vector<double> v = values(small_ints(s, seed, mj::f64, 5));
  for (size_t i = 0; i < v.size(); ++i) {
    if (i % 17 == 3) v[i] = NAN;
    if (i % 13 == 5) v[i] = -0.0;
    if (i % 11 == 7) v[i] = -INFINITY;
  }
  return mj::array(v, s, dt);
}

TEST(WindowLoops, ReduceWindowMaxPoolNhwcVectorizedAndParallel) {
  Window w{{1, 3, 3, 1}, {1, 2, 2, 1}, {{0, 0}, {1, 1}, {1, 1}, {0, 0}}, {1, 1, 1, 1}, {1, 1, 1, 1}};
  check_monoid("max", uniform({2, 9, 8, 21}, 51), w);
  check_monoid("max", with_nans({2, 9, 8, 5}, 52, mj::f32), w);
  check_monoid("min", with_nans({2, 9, 8, 5}, 53, mj::f64), w);
  Window pool{{1, 2, 2, 1}, {1, 2, 2, 1}, {{0, 0}, {0, 0}, {0, 0}, {0, 0}}, {1, 1, 1, 1}, {1, 1, 1, 1}};
  Array big = uniform({8, 32, 32, 16}, 54);
  check_monoid("max", big, pool);
  Result r = run(monoid_text("max", mj::f32, big.shape(), pool), {big});
  EXPECT_NE(r.text.find("parallel"), std::string::npos) << r.text;
}

TEST(WindowLoops, ReduceWindowAlongTheInnermostDimBordersAndInterior) {
  // Window along the innermost dim: vectors inside [1, 39), scalars with clipped taps at the borders.
  Window w{{1, 3}, {1, 1}, {{0, 0}, {1, 1}}, {1, 1}, {1, 1}};
  check_monoid("max", with_nans({3, 40}, 55, mj::f32), w);
  check_monoid("sum", uniform({3, 40}, 56, mj::f32), w);
  check_monoid("sum", uniform({3, 40}, 57, mj::bf16), w);
  Window s2{{1, 4}, {1, 3}, {{0, 0}, {2, -1}}, {1, 1}, {1, 2}};  // strided (gathers), cropped, window dilation
  check_monoid("min", with_nans({2, 50}, 58, mj::f32), s2);
  check_monoid("sum", uniform({2, 50}, 59, mj::f64), s2);
}

TEST(WindowLoops, ReduceWindowDilationsPaddingAndDtypes) {
  Window w{{1, 1, 3, 2}, {1, 1, 1, 2}, {{0, 0}, {0, 0}, {2, -1}, {1, 1}}, {1, 1, 2, 1}, {1, 1, 1, 2}};
  check_monoid("sum", uniform({2, 3, 10, 9}, 60, mj::f64), w);
  check_monoid("max", small_ints({2, 3, 10, 9}, 61, mj::i32, 7), w);
  check_monoid("sum", uniform({2, 3, 10, 9}, 62, mj::i32, -2e9, 2e9), w);  // wraps
  check_monoid("min", uniform({2, 3, 10, 9}, 63, mj::u32, 0, 4e9), w);
  Window one{{4}, {3}, {{2, 3}}, {2}, {1}};  // 1-D with base dilation: holes between elements
  check_monoid("min", uniform({17}, 64, mj::i32, -50, 50), one);
  check_monoid("max", uniform({17}, 65, mj::bf16), one);
  Window three{{1, 2, 2, 3}, {1, 2, 1, 2}, {{0, 0}, {1, 0}, {0, 0}, {1, 1}}, {1, 1, 1, 1}, {1, 1, 2, 1}};
  check_monoid("sum", uniform({2, 5, 6, 7}, 66, mj::bf16), three);
  Window pad_only{{2}, {1}, {{3, 3}}, {1}, {1}};  // windows of padding only: the identity
  check_monoid("max", uniform({4}, 67), pad_only);
  check_monoid("sum", uniform({4}, 68), pad_only);
  check_monoid("sum", uniform({}, 69, mj::f64), Window{{}, {}, {}, {}, {}});  // rank 0
  check_monoid("max", small_ints({3, 20}, 70, mj::bool_, 2), Window{{2, 3}, {1, 2}, {{1, 0}, {1, 1}}, {1, 1}, {1, 1}});
  check_monoid("min", small_ints({3, 20}, 71, mj::bool_, 2), Window{{2, 3}, {1, 2}, {{1, 0}, {1, 1}}, {1, 1}, {1, 1}});
}

// ---- the generic reduce_window -------------------------------------------------------------------

// Two operands and a body (s, m) <- (s + x * y, max(m, y)) from init values (0.5, 1.0), neither the
// identity: padding and holes hold the init values, which the body meets as it meets elements.
std::string generic_text(const mj::Shape& x, const Window& w) {
  const std::string in = aval(mj::f32, x), out = aval(mj::f32, w.out(x));
  return "{ lambda ; a:" + in + " b:" + in + ". let c:" + out + " d:" + out + " = reduce_window[" +
         "base_dilation=" + tuple(w.base) +
         " jaxpr={ lambda ; e:f32[] f:f32[] g:f32[] h:f32[]. let i:f32[] = mul g h; j:f32[] = add e i; "
         "k:f32[] = max f h in (j, k) } padding=" + flat(w.pad) + " window_dilation=" + tuple(w.wdil) +
         " window_dimensions=" + tuple(w.dims) + " window_strides=" + tuple(w.strides) +
         "] a b 0.5:f32[] 1.0:f32[] in (c, d) }";
}

// The definition in f32 arithmetic, each operation rounded (no fused multiply-add).
std::pair<std::vector<double>, std::vector<double>> naive_generic(const Window& w, const Array& a, const Array& b) {
  const auto av = values(a), bv = values(b);
  std::vector<double> s_out, m_out;
  w.each(a.shape(), [&](int64_t, const Ints& offs) {
    float s = 0.5f, m = 1.0f;
    for (int64_t off : offs) {
      const float x = off < 0 ? 0.5f : float(av[size_t(off)]), y = off < 0 ? 1.0f : float(bv[size_t(off)]);
      volatile float p = x * y;
      s = s + p;
      m = std::isnan(m) || std::isnan(y) ? NAN : std::max(m, y);
    }
    s_out.push_back(s);
    m_out.push_back(m);
  });
  return {s_out, m_out};
}

TEST(WindowLoops, GenericReduceWindowTwoOperandsEmitsItsBodyOnScalars) {
  const mj::Shape x{3, 11, 7};
  for (const Window& w : {Window{{1, 3, 2}, {1, 2, 1}, {{0, 0}, {1, 1}, {0, 1}}, {1, 1, 1}, {1, 1, 1}},
                          Window{{2, 2, 3}, {1, 3, 2}, {{1, 0}, {2, -1}, {1, 1}}, {1, 2, 1}, {1, 1, 2}}}) {
    Array a = uniform(x, 70), b = uniform(x, 71, mj::f32, -3, 0.5);
    Result r = run(generic_text(x, w), {a, b});
    ASSERT_EQ(r.got.size(), 2u);
    for (size_t i = 0; i < 2; ++i)
      EXPECT_TRUE(bit_equal(r.got[i], r.eager[i])) << i << "\n got  " << r.got[i] << "\n want " << r.eager[i];
    auto [s, m] = naive_generic(w, a, b);
    expect_same("generic sum of products", r.got[0], s);
    expect_same("generic max", r.got[1], m);
    EXPECT_NE(r.text.find("[loop nest] reduce_window"), std::string::npos) << r.text;
    EXPECT_NE(r.text.find("body of 3 equations"), std::string::npos) << r.text;
  }
}

TEST(WindowLoops, GenericReduceWindowOfIntegersAndAnEmptyOperand) {
  // i32 body acc * 3 + x (wrapping), init 1: every window element, padding included, multiplies by 3.
  const std::string text =
      "{ lambda ; a:i32[9,6]. let b:i32[5,6] = reduce_window[base_dilation=(1, 1) jaxpr={ lambda ; c:i32[] "
      "d:i32[]. let e:i32[] = mul c 3:i32[]; f:i32[] = add e d in (f,) } padding=(2, 1, 0, 0) "
      "window_dilation=(1, 1) window_dimensions=(4, 1) window_strides=(2, 1)] a 1:i32[] in (b,) }";
  Array a = uniform({9, 6}, 72, mj::i32, -2e9, 2e9);
  Result r = run(text, {a});
  EXPECT_TRUE(bit_equal(r.got.at(0), r.eager.at(0))) << r.got[0] << "\n" << r.eager[0];
  std::vector<double> want;
  const auto av = values(a);
  Window w{{4, 1}, {2, 1}, {{2, 1}, {0, 0}}, {1, 1}, {1, 1}};
  w.each({9, 6}, [&](int64_t, const Ints& offs) {
    uint32_t acc = 1;
    for (int64_t off : offs) acc = acc * 3u + (off < 0 ? 1u : uint32_t(int64_t(av[size_t(off)])));
    want.push_back(double(int32_t(acc)));
  });
  expect_same("i32 body", r.got[0], want);
  // An empty operand with padding: every window holds init values only.
  const std::string empty =
      "{ lambda ; a:f32[0]. let b:f32[3] = reduce_window[base_dilation=(1,) jaxpr={ lambda ; c:f32[] d:f32[]. "
      "let e:f32[] = add c d in (e,) } padding=(2, 2) window_dilation=(1,) window_dimensions=(2,) "
      "window_strides=(1,)] a 1.5:f32[] in (b,) }";
  Result er = run(empty, {mj::zeros({0}, mj::f32)});
  EXPECT_TRUE(bit_equal(er.got.at(0), er.eager.at(0))) << er.got[0] << "\n" << er.eager[0];
  expect_same("empty operand", er.got[0], {4.5, 4.5, 4.5});
}

TEST(WindowLoops, GenericReduceWindowBodyWithoutAnElementalRuleIsAValueError) {
  const std::string text =
      "{ lambda ; a:f32[6]. let b:f32[5] = reduce_window[base_dilation=(1,) jaxpr={ lambda ; c:f32[] d:f32[]. "
      "let e:f32[] = dot_general[dimension_numbers=(([], []), ([], [])) precision=None "
      "preferred_element_type=float32] c d in (e,) } padding=(0, 0) window_dilation=(1,) "
      "window_dimensions=(2,) window_strides=(1,)] a 0.0:f32[] in (b,) }";
  try {
    run(text, {uniform({6}, 73)});
    ADD_FAILURE() << "no error";
  } catch (const mj::ValueError& err) {
    EXPECT_NE(std::string(err.what()).find("dot_general"), std::string::npos) << err.what();
  }
}

// ---- select_and_scatter_add / select_and_gather_add ------------------------------------------------

std::string select_text(const std::string& prim, const std::string& sel, mj::DType dt, const mj::Shape& x,
                        const Window& w) {
  const bool scatter = prim == "select_and_scatter_add";
  const mj::Shape y = w.out(x);
  return "{ lambda ; a:" + aval(dt, scatter ? y : x) + " b:" + aval(dt, x) + ". let c:" + aval(dt, scatter ? x : y) +
         " = " + prim + "[" + "base_dilation=" + tuple(w.base) + " padding=" + flat(w.pad) + " select_prim=" + sel +
         " window_dilation=" + tuple(w.wdil) + " window_dimensions=" + tuple(w.dims) +
         " window_strides=" + tuple(w.strides) + "] a b in (c,) }";
}

// The element XLA's ge/le selector keeps in each window (eager's select_in_window): the first in
// window order, replaced by a later one that is NaN or beats it, unless it is NaN; -1: none.
std::vector<int64_t> naive_selection(const Window& w, const Array& x, bool ge) {
  const auto xv = values(x);
  std::vector<int64_t> sel;
  w.each(x.shape(), [&](int64_t, const Ints& offs) {
    int64_t s = -1;
    for (int64_t off : offs) {
      if (off < 0) continue;
      const double v = xv[size_t(off)];
      if (s < 0 || (!std::isnan(xv[size_t(s)]) && (std::isnan(v) || (ge ? v > xv[size_t(s)] : v < xv[size_t(s)])))) s = off;
    }
    sel.push_back(s);
  });
  return sel;
}

void check_select(const std::string& sel, const Array& x, const Window& w, uint32_t seed) {
  const bool ge = sel == "ge";
  const mj::DType dt = x.dtype();
  const std::vector<int64_t> pick = naive_selection(w, x, ge);
  const std::string what = sel + " " + x.aval().str();
  // scatter: the source's elements added, in window order, at the selected elements
  const bool fl = mj::is_floating(dt);
  Array src = fl ? uniform(w.out(x.shape()), seed, dt) : uniform(w.out(x.shape()), seed, dt, 0, 2e9);
  Result s = run(select_text("select_and_scatter_add", sel, dt, x.shape(), w), {src, x});
  EXPECT_TRUE(bit_equal(s.got.at(0), s.eager.at(0))) << what << "\n got  " << s.got[0] << "\n want " << s.eager[0];
  std::vector<double> want(size_t(x.size()), 0.0);
  const auto sv = values(src);
  for (size_t o = 0; o < pick.size(); ++o)
    if (pick[o] >= 0) want[size_t(pick[o])] = add_in(dt, want[size_t(pick[o])], sv[o]);
  expect_same("scatter " + what, s.got[0], want);
  EXPECT_NE(s.text.find("[loop nest] select_and_scatter_add"), std::string::npos) << s.text;
  // gather: the tangent at the selected element, 0 for a window of padding only
  Array t = uniform(x.shape(), seed + 1, dt, fl ? -50 : 0, 50);
  Result g = run(select_text("select_and_gather_add", sel, dt, x.shape(), w), {t, x});
  EXPECT_TRUE(bit_equal(g.got.at(0), g.eager.at(0))) << what << "\n got  " << g.got[0] << "\n want " << g.eager[0];
  const auto tv = values(t);
  std::vector<double> gw;
  for (int64_t p : pick) gw.push_back(p < 0 ? 0.0 : tv[size_t(p)]);
  expect_same("gather " + what, g.got[0], gw);
  EXPECT_NE(g.text.find("[loop nest] select_and_gather_add"), std::string::npos) << g.text;
}

TEST(WindowLoops, SelectAndScatterAndGatherTiesGoToTheFirst) {
  // Overlapping 3x3 windows, stride 2, padding 1 (NCHW): ties among small integers, NaNs, -0.
  Window nchw{{1, 1, 3, 3}, {1, 1, 2, 2}, {{0, 0}, {0, 0}, {1, 1}, {1, 1}}, {1, 1, 1, 1}, {1, 1, 1, 1}};
  for (const char* sel : {"ge", "le"}) {
    check_select(sel, with_nans({2, 3, 9, 8}, 80, mj::f32), nchw, 81);
    check_select(sel, small_ints({2, 3, 9, 8}, 82, mj::f64, 3), nchw, 83);
  }
  // NHWC: vectors along the channels, parallel over the batch.
  Window nhwc{{1, 2, 2, 1}, {1, 1, 1, 1}, {{0, 0}, {0, 1}, {1, 0}, {0, 0}}, {1, 1, 1, 1}, {1, 1, 1, 1}};
  check_select("ge", small_ints({4, 7, 6, 19}, 84, mj::bf16, 4), nhwc, 85);
  check_select("le", small_ints({4, 7, 6, 19}, 86, mj::i32, 4), nhwc, 87);
  check_select("ge", uniform({3, 9, 9, 8}, 88, mj::u32, 0, 4e9), nhwc, 89);
}

TEST(WindowLoops, SelectWithDilationsAndWindowsOfPaddingOnly) {
  Window w{{3, 2}, {2, 1}, {{4, 1}, {0, -1}}, {2, 1}, {1, 2}};
  check_select("ge", with_nans({5, 9}, 90, mj::f32), w, 91);
  check_select("le", small_ints({5, 9}, 92, mj::f64, 4), w, 93);
  Window pad_only{{2}, {1}, {{3, 3}}, {1}, {1}};
  check_select("ge", uniform({4}, 94), pad_only, 95);
  // Large enough to run in parallel.
  Window pool{{1, 3, 3, 1}, {1, 2, 2, 1}, {{0, 0}, {1, 1}, {1, 1}, {0, 0}}, {1, 1, 1, 1}, {1, 1, 1, 1}};
  Array x = uniform({16, 32, 32, 8}, 96);
  check_select("ge", x, pool, 97);
  Result r = run(select_text("select_and_scatter_add", "ge", mj::f32, x.shape(), pool), {uniform(pool.out(x.shape()), 98), x});
  EXPECT_NE(r.text.find("parallel"), std::string::npos) << r.text;
}

}  // namespace
