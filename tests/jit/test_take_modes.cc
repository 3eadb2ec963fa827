// Tests of jnp.take's modes (fill, clip, wrap), axis and fill_value, and of lax::gather /
// scatter_add's GatherScatterMode: eager and compiled (mj::jit) against a hand-written reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/parser.h"
#include "lowering_helpers.h"

namespace {

using lowtest::bit_equal;
using mj::Array;
using mj::Shape;
namespace lax = mj::lax;

// ---- the reference ------------------------------------------------------------------------------
// Hand-written from the documented semantics, not from minijax: numpy.take's modes "clip" (the
// index clamped into [0, n - 1]) and "wrap" (Python's i mod n), and jax.numpy.take's "fill"
// (https://docs.jax.dev/en/latest/_autosummary/jax.numpy.take.html: negative indices count from
// the end once, -n <= i < 0 -> i + n; anything else outside [0, n) gives fill_value, by default
// NaN for inexact dtypes, the minimum for signed, the maximum for unsigned ints, True for bool).
// out[pre..., idx..., post...] = x[pre..., resolve(idx), post...].

std::optional<int64_t> resolve(int64_t i, int64_t n, const std::string& mode) {
  if (mode == "clip") return std::min(std::max<int64_t>(i, 0), n - 1);
  if (mode == "wrap") return ((i % n) + n) % n;
  if (i < 0) i += n;
  if (i < 0 || i >= n) return std::nullopt;
  return i;
}

/// take(x, idx, axis, mode) of row-major `xv` (shape xs) as doubles; `fill` for dropped indices.
std::vector<double> ref_take(const std::vector<double>& xv, Shape xs, const std::vector<int64_t>& idx,
                             std::optional<int64_t> axis, const std::string& mode, double fill) {
  if (!axis) xs = {int64_t(xv.size())};
  const int64_t a = axis.value_or(0);
  const size_t ax = size_t(a < 0 ? a + int64_t(xs.size()) : a);
  int64_t pre = 1, post = 1;
  for (size_t d = 0; d < ax; ++d) pre *= xs[d];
  for (size_t d = ax + 1; d < xs.size(); ++d) post *= xs[d];
  const int64_t n = xs[ax];
  std::vector<double> out;
  for (int64_t p = 0; p < pre; ++p)
    for (int64_t i : idx)
      for (int64_t q = 0; q < post; ++q) {
        auto r = resolve(i, n, mode);
        out.push_back(r ? xv[size_t((p * n + *r) * post + q)] : fill);
      }
  return out;
}

std::vector<double> as_doubles(const Array& a) {
  Array f = mj::astype(a, mj::f64);
  return std::vector<double>(f.data<double>(), f.data<double>() + f.size());
}

bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

std::string str(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += std::to_string(x) + " ";
  return s;
}

Array index_range(int64_t lo, int64_t hi) {
  std::vector<double> v;
  for (int64_t i = lo; i <= hi; ++i) v.push_back(double(i));
  return mj::array(v, {int64_t(v.size())}, mj::i32);
}

std::vector<int64_t> ints(const Array& a) {
  std::vector<int64_t> r;
  for (double d : as_doubles(a)) r.push_back(int64_t(d));
  return r;
}

// Eager, compiled (indices traced, so the compiler cannot see their values) and the reference
// agree on every index of `idx`.
void check_take(const Array& x, const Array& idx, std::optional<int64_t> axis, const std::string& mode,
                std::optional<double> fill_value, double ref_fill, const std::string& what) {
  Array eager = mj::take(x, idx, axis, mode, fill_value);
  auto jf = mj::jit([axis, mode, fill_value](const Array& a, const Array& i) {
    return mj::take(a, i, axis, mode, fill_value);
  });
  Array compiled = jf(x, idx);
  std::vector<double> want = ref_take(as_doubles(x), x.shape(), ints(idx), axis, mode, ref_fill);
  EXPECT_TRUE(bit_equal(compiled, eager)) << what << "\n compiled " << compiled << "\n eager " << eager;
  EXPECT_TRUE(same_values(as_doubles(eager), want)) << what << "\n eager " << eager << "\n want  " << str(want);
  EXPECT_EQ(eager.dtype(), x.dtype()) << what;
}

std::string axis_name(std::optional<int64_t> a) { return a ? std::to_string(*a) : std::string("unset"); }

// ---- take ---------------------------------------------------------------------------------------

// take with -1, eagerly and under jit: both give the last row (fill mode counts -1 from the end;
// the compiled code does not clamp it to row 0, and eager raises no IndexError).
TEST(TakeModes, NegativeIndexUnderJitIsTheLastRow) {
  Array x = mj::array({{0.f, 1.f}, {10.f, 11.f}, {20.f, 21.f}});
  Array idx = mj::array({-1.0}, {1}, mj::i32);
  Array eager = mj::take(x, idx, 0);
  Array compiled = mj::jit([](const Array& a, const Array& i) { return mj::take(a, i, 0); })(x, idx);
  EXPECT_EQ(as_doubles(eager), (std::vector<double>{20, 21}));
  EXPECT_TRUE(bit_equal(compiled, eager)) << compiled;
}

// Every in-range, negative and out-of-range index of a 5-row array (-7..7), for each mode and
// for axis 0, 1 (a 5 x 5 array, so axis 1 also has 5 entries) and unset (25 elements flattened:
// indices -27..27).
TEST(TakeModes, EveryIndexOfAFiveRowArrayEagerEqualsCompiledEqualsReference) {
  std::vector<double> v;
  for (int i = 0; i < 25; ++i) v.push_back(100 + i);
  Array x = mj::array(v, {5, 5}, mj::f32);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const std::string mode : {"fill", "clip", "wrap"})
    for (std::optional<int64_t> axis : {std::optional<int64_t>(0), std::optional<int64_t>(1),
                                        std::optional<int64_t>(-1), std::optional<int64_t>()}) {
      Array idx = axis ? index_range(-7, 7) : index_range(-27, 27);
      const std::string what = "mode " + mode + " axis " + axis_name(axis);
      check_take(x, idx, axis, mode, std::nullopt, nan, what);
      check_take(x, idx, axis, mode, -1.5, -1.5, what + " fill_value -1.5");
    }
}

// Indices of rank 2 (out shape pre + idx.shape + post) and of rank 0, on a rank-3 operand.
TEST(TakeModes, IndexShapesLandAtTheAxis) {
  Array x = lowtest::uniform({4, 5, 3}, 7);
  Array idx = mj::array({-6, -5, -1, 0, 4, 5}, {2, 3}, mj::i32);
  for (const std::string mode : {"fill", "clip", "wrap"}) {
    EXPECT_EQ(mj::take(x, idx, 1, mode).shape(), (Shape{4, 2, 3, 3}));
    check_take(x, idx, 1, mode, std::nullopt, std::nan(""), "rank-2 indices, axis 1, " + mode);
    check_take(x, idx, 2, mode, std::nullopt, std::nan(""), "rank-2 indices, axis 2, " + mode);
    Array i0 = mj::array({-2.0}, {}, mj::i32);
    EXPECT_EQ(mj::take(x, i0, 1, mode).shape(), (Shape{4, 3}));
    check_take(x, i0, 1, mode, std::nullopt, std::nan(""), "rank-0 index, " + mode);
  }
}

// The default fill value per dtype (JAX's _gather_fill) and u32 indices (never negative).
TEST(TakeModes, DefaultFillValuePerDtype) {
  Array idx = index_range(-7, 7);
  const struct {
    mj::DType dt;
    double fill;
  } cases[] = {{mj::f64, std::nan("")},
               {mj::bf16, std::nan("")},
               {mj::i32, double(std::numeric_limits<int32_t>::min())},
               {mj::u32, double(std::numeric_limits<uint32_t>::max())},
               {mj::bool_, 1.0}};
  for (auto c : cases) {
    Array x = lowtest::small_ints({5, 2}, 3, c.dt, 2);  // bool: 0/1; others 0..1
    const std::string what = std::string("dtype ") + mj::dtype_name(c.dt);
    check_take(x, idx, 0, "fill", std::nullopt, c.fill, what);
    check_take(x, idx, std::nullopt, "fill", std::nullopt, c.fill, what + " flattened");
  }
  Array x = lowtest::uniform({5, 2}, 4);
  Array uidx = mj::array({0, 3, 4, 5, 6, 4294967295.0}, {6}, mj::u32);
  for (const std::string mode : {"fill", "clip", "wrap"}) {
    // The reference reads u32 4294967295 as that (positive) value.
    Array eager = mj::take(x, uidx, 0, mode);
    Array compiled = mj::jit([mode](const Array& a, const Array& i) { return mj::take(a, i, 0, mode); })(x, uidx);
    EXPECT_TRUE(bit_equal(compiled, eager)) << "u32 " << mode;
    std::vector<int64_t> iv{0, 3, 4, 5, 6, 4294967295LL};
    EXPECT_TRUE(same_values(as_doubles(eager), ref_take(as_doubles(x), {5, 2}, iv, 0, mode, std::nan(""))))
        << "u32 " << mode << " " << eager;
  }
}

// An integer fill_value outside i32's range saturates; a bool fill of 0 is False.
TEST(TakeModes, ExplicitFillValueInTheOperandsDtype) {
  Array idx = mj::array({-9, 0, 9}, {3}, mj::i32);
  Array xi = mj::array({1, 2, 3}, {3}, mj::i32);
  EXPECT_EQ(as_doubles(mj::take(xi, idx, 0, "fill", 7.9)), (std::vector<double>{7, 1, 7}));
  EXPECT_EQ(as_doubles(mj::take(xi, idx, 0, "fill", 1e20)), (std::vector<double>{2147483647, 1, 2147483647}));
  Array xb = mj::array({1, 1, 1}, {3}, mj::bool_);
  EXPECT_EQ(as_doubles(mj::take(xb, idx, 0, "fill", 0.0)), (std::vector<double>{0, 1, 0}));
  auto jf = mj::jit([](const Array& a, const Array& i) { return mj::take(a, i, 0, "fill", 1e20); });
  EXPECT_TRUE(bit_equal(jf(xi, idx), mj::take(xi, idx, 0, "fill", 1e20)));
}

// Gradients: the transpose of take is a scatter_add in the same mode. Closed form: d/dx of
// sum(w * take(x, idx, 0, mode)) is, per row r, the sum of the w rows whose index resolves to r
// (fill mode: an index that resolves to nothing contributes nothing and the gradient has no NaN).
TEST(TakeModes, GradientInEachModeIsTheClosedForm) {
  Array x = lowtest::uniform({5, 3}, 11, mj::f64);
  Array idx = index_range(-7, 7);
  Array w = lowtest::uniform({15, 3}, 12, mj::f64);
  const std::vector<double> wv = as_doubles(w);
  for (const std::string mode : {"fill", "clip", "wrap"}) {
    auto loss = [&, mode](const Array& a) { return mj::sum(w * mj::take(a, idx, 0, mode)); };
    std::vector<double> want(15, 0.0);
    for (int64_t p = 0; p < 15; ++p)
      if (auto r = resolve(p - 7, 5, mode))
        for (int64_t c = 0; c < 3; ++c) want[size_t(*r * 3 + c)] += wv[size_t(p * 3 + c)];
    Array g = mj::grad(loss)(x);
    Array gj = mj::jit(mj::grad(loss))(x);
    const std::vector<double> gv = as_doubles(g);
    ASSERT_EQ(gv.size(), want.size());
    for (size_t i = 0; i < gv.size(); ++i) EXPECT_NEAR(gv[i], want[i], 1e-12) << mode << " element " << i;
    EXPECT_TRUE(same_values(as_doubles(gj), gv)) << mode << " jit(grad) " << gj << " vs grad " << g;
    // The tangent of a filled row is 0, not NaN: jvp of take in fill mode.
    Array t = mj::jvp([&, mode](const Array& a) { return mj::take(a, idx, 0, mode); }, x, mj::ones_like(x)).second;
    for (double d : as_doubles(t)) EXPECT_FALSE(std::isnan(d)) << mode << " tangent " << t;
  }
}

// vmap of take over the indices and over the operand equals the loop of takes.
TEST(TakeModes, VmapMatchesTheLoop) {
  Array x = lowtest::uniform({3, 5}, 13);
  Array idx = mj::array({-7, -1, 2, 5, 6, 0}, {3, 2}, mj::i32);
  for (const std::string mode : {"fill", "clip", "wrap"}) {
    Array vi = mj::vmap([mode](const Array& a, const Array& i) { return mj::take(a, i, 0, mode); })(x, idx);
    for (int64_t b = 0; b < 3; ++b) {
      Array row = mj::take(x[b], idx[b], 0, mode);
      EXPECT_TRUE(bit_equal(vi[b], row)) << mode << " example " << b << ": " << vi[b] << " vs " << row;
    }
  }
}

// ---- lax::gather / scatter_add modes --------------------------------------------------------------

TEST(GatherScatterModes, EagerAndCompiledAgreeOnOutOfRangeIndices) {
  Array x = mj::array({{0.f, 1.f}, {10.f, 11.f}, {20.f, 21.f}});
  Array idx = mj::array({-1, 0, 2, 3}, {4}, mj::i32);
  auto gather = [](lax::GatherScatterMode m, std::optional<double> f) {
    return [m, f](const Array& a, const Array& i) { return lax::gather(a, i, m, f); };
  };
  const double nan = std::nan("");
  // CLIP: -1 -> row 0, 3 -> row 2. FILL_OR_DROP: -1 and 3 are filled (gather does not wrap).
  struct {
    lax::GatherScatterMode m;
    std::optional<double> fill;
    std::vector<double> want;
  } cases[] = {
      {lax::GatherScatterMode::CLIP, std::nullopt, {0, 1, 0, 1, 20, 21, 20, 21}},
      {lax::GatherScatterMode::FILL_OR_DROP, std::nullopt, {nan, nan, 0, 1, 20, 21, nan, nan}},
      {lax::GatherScatterMode::FILL_OR_DROP, 5.0, {5, 5, 0, 1, 20, 21, 5, 5}},
  };
  for (auto& c : cases) {
    Array eager = gather(c.m, c.fill)(x, idx);
    Array compiled = mj::jit(gather(c.m, c.fill))(x, idx);
    EXPECT_TRUE(same_values(as_doubles(eager), c.want)) << lax::gather_scatter_mode_name(c.m) << " " << eager;
    EXPECT_TRUE(bit_equal(compiled, eager)) << lax::gather_scatter_mode_name(c.m) << " " << compiled;
  }
  // scatter_add: CLIP adds -1's update to row 0 and 3's to row 2; FILL_OR_DROP drops both.
  Array up = mj::array({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}, {7.f, 8.f}});
  auto scatter = [&](lax::GatherScatterMode m) {
    return [m](const Array& a, const Array& i, const Array& u) { return lax::scatter_add(a, i, u, m); };
  };
  const std::pair<lax::GatherScatterMode, std::vector<double>> sc[] = {
      {lax::GatherScatterMode::CLIP, {4, 7, 10, 11, 32, 35}},
      {lax::GatherScatterMode::FILL_OR_DROP, {3, 5, 10, 11, 25, 27}},
  };
  for (auto& [m, want] : sc) {
    Array eager = scatter(m)(x, idx, up);
    Array compiled = mj::jit(scatter(m))(x, idx, up);
    EXPECT_EQ(as_doubles(eager), want) << lax::gather_scatter_mode_name(m) << " " << eager;
    EXPECT_TRUE(bit_equal(compiled, eager)) << lax::gather_scatter_mode_name(m) << " " << compiled;
  }
}

// The mode and fill value are params of the equation, printed as JAX prints them and read back.
TEST(GatherScatterModes, ParamsPrintAndParseBack) {
  auto cj = mj::make_jaxpr([](const Array& a, const Array& i) {
    return lax::scatter_add(a, i, lax::gather(a, i, lax::GatherScatterMode::FILL_OR_DROP, 2.5),
                            lax::GatherScatterMode::CLIP);
  })(lowtest::uniform({4, 2}, 1), mj::array({0, 1}, {2}, mj::i32));
  const std::string text = mj::to_string(cj);
  for (const char* p : {"fill_value=2.5", "mode=GatherScatterMode.FILL_OR_DROP", "slice_sizes=(1, 2)"})
    EXPECT_NE(text.find(p), std::string::npos) << p << "\n" << text;
  // JAX's params of the general primitives (the row form: indices [2, 1], collapsed/inserted dim 0),
  // one per line (the printer breaks a long equation).
  for (const char* p :
       {"dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), "
        "start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())",
        "dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), "
        "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())",
        "indices_are_sorted=False", "unique_indices=False", "mode=GatherScatterMode.CLIP"})
    EXPECT_NE(text.find(p), std::string::npos) << p << "\n" << text;
  EXPECT_EQ(mj::to_string(mj::parse_jaxpr(text)), text);
  auto plain = mj::make_jaxpr([](const Array& a, const Array& i) { return lax::gather(a, i); })(
      lowtest::uniform({4, 2}, 1), mj::array({0, 1}, {2}, mj::i32));
  for (const char* p : {"fill_value=None", "mode=GatherScatterMode.PROMISE_IN_BOUNDS"})
    EXPECT_NE(mj::to_string(plain).find(p), std::string::npos) << p << "\n" << mj::to_string(plain);
  // An unknown mode in jaxpr text is rejected by the type check, naming it and the equation.
  std::string bad = text;
  bad.replace(bad.find("GatherScatterMode.CLIP"), 22, "GatherScatterMode.NEAREST");
  try {
    mj::parse_jaxpr(bad);
    ADD_FAILURE() << "parsed an unknown mode";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("GatherScatterMode.NEAREST"), std::string::npos) << e.what();
  }
}

}  // namespace
