// Tests of the simplify pass: each rewrite on a small program (structure checked by counting the
// equations left) and value preservation, bit for bit, on inputs with -0.0, NaN and infinities.
#include <gtest/gtest.h>

#include "core/views/array_ops.h"
#include "core/views/windowed.h"
#include "jit/passes/simplify.h"
#include "pass_helpers.h"

namespace {

using mj::Array;
using passtest::count_eqns;
using passtest::expect_same_values;
using passtest::parse;

/// Simplifies `text`, verifies the result and checks values against the original.
mj::Jaxpr simplified(const std::string& text) {
  mj::Jaxpr j = parse(text);
  mj::Jaxpr r = mj::simplify(j);
  EXPECT_NO_THROW(mj::verify_jaxpr(r)) << r;
  EXPECT_EQ(r.invars.size(), j.invars.size()) << "simplify keeps every input";
  expect_same_values(j, r, {}, text);
  return r;
}

// ---- CSE ------------------------------------------------------------------------------------------

TEST(Simplify, CseMergesEqualEquations) {
  mj::Jaxpr r = simplified(
      "{ lambda ; a:f32[4] b:f32[4]. let c:f32[4] = sin a; d:f32[4] = sin a; e:f32[4] = mul c 2.0:f32[]; "
      "f:f32[4] = mul d 2.0:f32[]; g:f32[4] = add e f; h:f32[4] = sin b in (g, h) }");
  // sin a, mul 2.0 and add remain once; sin b differs in its operand.
  EXPECT_EQ(count_eqns(r, "sin"), 2) << r;
  EXPECT_EQ(count_eqns(r, "mul"), 1) << r;
  EXPECT_EQ(r.eqns.size(), 4u) << r;
}

TEST(Simplify, CseComparesLiteralBitsAndParams) {
  // 0.0 and -0.0 are different literals; reduce_sum over different axes differs.
  mj::Jaxpr r = simplified(
      "{ lambda ; a:f32[2,3]. let b:f32[2,3] = mul a 0.0:f32[]; c:f32[2,3] = mul a -0.0:f32[]; "
      "d:f32[2,3] = add b c; e:f32[3] = reduce_sum[axes=(0,)] d; f:f32[2] = reduce_sum[axes=(1,)] d; "
      "g:f32[3] = reduce_sum[axes=(0,)] d in (e, f, g) }");
  EXPECT_EQ(count_eqns(r, "mul"), 2) << r;
  EXPECT_EQ(count_eqns(r, "reduce_sum"), 2) << r;
  EXPECT_TRUE(std::get<mj::Var>(r.outvars[0]) == std::get<mj::Var>(r.outvars[2]));
}

TEST(Simplify, CseNeverMergesBarriersOrEffects) {
  mj::Jaxpr r = simplified(
      "{ lambda ; a:f32[4]. let b:f32[4] = optimization_barrier a; c:f32[4] = optimization_barrier a; "
      "d:f32[4] = sin b; e:f32[4] = sin c; f:f32[4] = test_jit_io a; g:f32[4] = test_jit_io a; "
      "h:f32[4] = add d e; i:f32[4] = add f g in (h, i) }");
  EXPECT_EQ(count_eqns(r, "optimization_barrier"), 2) << r;
  EXPECT_EQ(count_eqns(r, "sin"), 2) << "no rewrite looks through a barrier\n" << r;
  EXPECT_EQ(count_eqns(r, "test_jit_io"), 2) << r;
}

TEST(Simplify, CseInsideLoopBodies) {
  auto cj = mj::make_jaxpr([](const Array& c0, const Array& xs) {
    return mj::scan([](const Array& c, const Array& x) {
      return std::pair{mj::exp(c * x) + mj::exp(c * x), c};
    }, c0, xs);
  })(mj::ones({3}), mj::ones({5, 3}));
  EXPECT_EQ(count_eqns(*cj.jaxpr, "exp"), 2) << cj;
  mj::Jaxpr r = mj::simplify(*cj.jaxpr);
  EXPECT_EQ(count_eqns(r, "exp"), 1) << r;
  EXPECT_EQ(count_eqns(r, "mul"), 1) << r;
  expect_same_values(*cj.jaxpr, r, cj.consts, "scan body CSE");
}

// ---- constant folding -------------------------------------------------------------------------

TEST(Simplify, FoldsRank0LiteralEquations) {
  mj::Jaxpr r = simplified(
      "{ lambda ; a:f32[4]. let b:f32[] = mul 2.0:f32[] 3.0:f32[]; c:f32[] = add b 1.0:f32[]; "
      "d:f32[4] = mul a c; e:bool[] = lt 1.0:f32[] 2.0:f32[]; f:f32[4] = broadcast_in_dim["
      "broadcast_dimensions=() shape=(4,)] c; g:f32[4] = add d f in (g, e, c) }");
  // 2*3+1 = 7 (by hand) becomes a literal; the [4] broadcast of it is not folded.
  EXPECT_EQ(count_eqns(r, "broadcast_in_dim"), 1) << r;
  EXPECT_EQ(r.eqns.size(), 3u) << r;
  ASSERT_TRUE(std::holds_alternative<mj::Literal>(r.outvars[2])) << r;
  EXPECT_EQ(std::get<mj::Literal>(r.outvars[2]).value.item<float>(), 7.0f);
  ASSERT_TRUE(std::holds_alternative<mj::Literal>(r.outvars[1])) << r;
  EXPECT_TRUE(std::get<mj::Literal>(r.outvars[1]).value.item<bool>());
  ASSERT_TRUE(std::holds_alternative<mj::Literal>(r.eqns[0].inputs[1])) << r;
}

TEST(Simplify, FoldsToWhatTheEagerImplementationGives) {
  // log of -1 is NaN and integer division by zero has a defined result (core's safe_div): both
  // fold to exactly the eager values (simplified() compares the results bit for bit).
  mj::Jaxpr r = simplified(
      "{ lambda ; a:f32[]. let b:f32[] = log -1.0:f32[]; c:i32[] = div 7:i32[] 0:i32[]; "
      "d:f32[] = add a b in (d, c) }");
  EXPECT_EQ(count_eqns(r, "log"), 0) << r;
  EXPECT_EQ(count_eqns(r, "div"), 0) << r;
}

// ---- algebraic rewrites -------------------------------------------------------------------------

TEST(Simplify, BroadcastToOwnShapeAndBroadcastOfBroadcast) {
  mj::Jaxpr r = simplified(
      "{ lambda ; a:f32[3]. let b:f32[3] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(3,)] a; "
      "c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] b; "
      "d:f32[5,2,3] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(5, 2, 3)] c in (d,) }");
  ASSERT_EQ(r.eqns.size(), 1u) << r;
  EXPECT_EQ(mj::broadcast_in_dim_params(r.eqns[0]).broadcast_dimensions, (std::vector<int64_t>{2}));
  EXPECT_TRUE(std::get<mj::Var>(r.eqns[0].inputs[0]) == r.invars[0]);
}

TEST(Simplify, TransposeIdentityAndTransposeOfTranspose) {
  mj::Jaxpr r = simplified(
      "{ lambda ; a:f32[2,3,4]. let b:f32[2,3,4] = transpose[permutation=(0, 1, 2)] a; "
      "c:f32[3,4,2] = transpose[permutation=(1, 2, 0)] b; d:f32[4,2,3] = transpose[permutation=(1, 2, 0)] c; "
      "e:f32[3,2,4] = transpose[permutation=(2, 1, 0)] d; f:f32[2,3,4] = transpose[permutation=(2, 0, 1)] c "
      "in (e, f) }");
  // By hand (out dim i = operand dim perm[i]): c = a dims (1,2,0), d = a dims (2,0,1),
  // e = a dims (1,0,2): one transpose of a; f = c dims (2,0,1) = a dims (0,1,2): a itself.
  ASSERT_EQ(count_eqns(r, "transpose"), 1) << r;
  EXPECT_EQ(mj::transpose_params(r.eqns[0]).permutation, (std::vector<int64_t>{1, 0, 2})) << r;
  EXPECT_TRUE(std::get<mj::Var>(r.eqns[0].inputs[0]) == r.invars[0]);
  EXPECT_TRUE(std::get<mj::Var>(r.outvars[1]) == r.invars[0]) << r;
}

TEST(Simplify, ReshapeToSameShapeAndReshapeOfReshape) {
  mj::Jaxpr r = simplified(
      "{ lambda ; a:f32[2,6]. let b:f32[2,6] = reshape[dimensions=None new_sizes=(2, 6)] a; "
      "c:f32[12] = reshape[dimensions=None new_sizes=(12,)] b; d:f32[3,4] = reshape[dimensions=None "
      "new_sizes=(3, 4)] c; e:f32[12] = reshape[dimensions=None new_sizes=(12,)] d; "
      "f:f32[2,6] = reshape[dimensions=None new_sizes=(2, 6)] e in (d, f) }");
  ASSERT_EQ(count_eqns(r, "reshape"), 1) << r;  // d = reshape a; f = a
  EXPECT_TRUE(std::get<mj::Var>(r.eqns[0].inputs[0]) == r.invars[0]);
  EXPECT_TRUE(std::get<mj::Var>(r.outvars[1]) == r.invars[0]) << r;
}

TEST(Simplify, IdentityElementwiseOps) {
  mj::Jaxpr r = simplified(
      "{ lambda ; a:f32[4] b:f32[4] p:bool[4] i:i32[4]. let c:f32[4] = convert_element_type["
      "new_dtype=float32 weak_type=False] a; d:f32[4] = stop_gradient c; e:f32[4] = select_n p d; "
      "f:f32[4] = mul e 1.0:f32[]; g:f32[4] = mul 1.0:f32[] f; h:i32[4] = mul i 1:i32[]; "
      "k:f32[4] = convert_element_type[new_dtype=float32 weak_type=True] a; "
      "l:f64[4] = convert_element_type[new_dtype=float64 weak_type=False] a in (g, h, k, l) }");
  // g is a, h is i; the two converts that change the dtype or the weak type stay.
  EXPECT_TRUE(std::get<mj::Var>(r.outvars[0]) == r.invars[0]) << r;
  EXPECT_TRUE(std::get<mj::Var>(r.outvars[1]) == r.invars[3]) << r;
  EXPECT_EQ(r.eqns.size(), 2u) << r;
  EXPECT_EQ(count_eqns(r, "convert_element_type"), 2) << r;
}

TEST(Simplify, AddAnyBecomesAddButAddZeroStays) {
  mj::Jaxpr r = simplified(
      "{ lambda ; a:f32[4] b:f32[4]. let c:f32[4] = add_any a b; d:f32[4] = add c 0.0:f32[]; "
      "e:f32[4] = mul d 2.0:f32[] in (e,) }");
  EXPECT_EQ(count_eqns(r, "add_any"), 0) << r;
  // add_any became add; `add c 0.0` stays (-0.0 + 0.0 = +0.0).
  EXPECT_EQ(count_eqns(r, "add"), 2) << r;
  // The add of zero changes -0.0 to +0.0: by hand, so removing it would be wrong.
  mj::Jaxpr z = parse("{ lambda ; a:f32[]. let b:f32[] = add a 0.0:f32[] in (b,) }");
  auto out = passtest::run(z, {}, {mj::scalar(-0.0)});
  EXPECT_FALSE(std::signbit(out[0].item<float>()));
}

TEST(Simplify, WeakTypeChangingRewriteIsRefused) {
  // mul of a weak x by a non-weak 1: the result is not weak, so it is not x's aval.
  mj::Jaxpr j;
  {
    auto cj = mj::make_jaxpr([](const Array& x) {
      return mj::lax::mul(mj::lax::convert_element_type(x, mj::f32, true), mj::lax::scalar(1.0, mj::f32));
    })(mj::ones({3}));
    j = *cj.jaxpr;
  }
  ASSERT_EQ(count_eqns(j, "mul"), 1) << j;
  ASSERT_TRUE(j.invars[0].aval().weak_type == false && j.eqns[0].outputs[0].aval().weak_type) << j;
  mj::Jaxpr r = mj::simplify(j);
  EXPECT_EQ(count_eqns(r, "mul"), 1) << r;
  EXPECT_EQ(r.out_avals()[0], j.out_avals()[0]);
}

TEST(Simplify, IdentitiesFixOutvarsAndDceKeepsInputs) {
  mj::Jaxpr r = simplified(
      "{ lambda ; a:f32[4] b:f32[4]. let c:f32[4] = stop_gradient a; d:f32[4] = sin b in (c, c) }");
  EXPECT_EQ(r.eqns.size(), 0u) << r;  // sin b is dead
  EXPECT_EQ(r.invars.size(), 2u);
  EXPECT_TRUE(std::get<mj::Var>(r.outvars[0]) == r.invars[0]);
  EXPECT_TRUE(std::get<mj::Var>(r.outvars[1]) == r.invars[0]);
}

// Every rewrite in one traced program, on random inputs with specials, bitwise.
TEST(Simplify, ValuesPreservedOnATracedProgram) {
  auto f = [](const Array& x, const Array& y) {
    namespace lax = mj::lax;
    Array a = lax::broadcast_in_dim(lax::broadcast_in_dim(x, {3, 4}, {1}), {2, 3, 4}, {1, 2});
    Array t = lax::transpose(lax::transpose(a, {2, 0, 1}), {1, 2, 0});
    Array r = lax::reshape(lax::reshape(t, {24}), {2, 3, 4});
    Array s = lax::stop_gradient(r) * 1.0 + lax::add_any(r, r) + (r + 0.0);
    Array c = lax::convert_element_type(s, mj::f32);
    return std::pair{mj::sum(c * y, 0) + mj::sin(x) * mj::sin(x), lax::mul(lax::scalar(2.0, mj::f32), lax::scalar(4.0, mj::f32))};
  };
  auto cj = mj::make_jaxpr(f)(mj::ones({4}), mj::ones({2, 3, 4}));
  mj::Jaxpr r = mj::simplify(*cj.jaxpr);
  EXPECT_LT(r.eqns.size(), cj.jaxpr->eqns.size()) << r;
  EXPECT_EQ(count_eqns(r, "sin"), 1) << r;
  EXPECT_EQ(count_eqns(r, "transpose"), 0) << r;
  EXPECT_EQ(count_eqns(r, "stop_gradient"), 0) << r;
  EXPECT_NO_THROW(mj::verify_jaxpr(r));
  expect_same_values(*cj.jaxpr, r, cj.consts, "traced program", true, 5);
}

// ---- a pad folded into a windowed reduction ------------------------------------------------------

// JAX's transpose of reduce_window_sum (windowed_reductions.py, _reduce_window_sum_transpose_rule)
// pads the cotangent by (k - 1 - pad_lo, ..., stride - 1) and sums stride-1 windows: one windowed
// sum of the cotangent with that padding and the stride as base dilation. Values bit for bit.
TEST(Simplify, FoldsAZeroPadIntoAWindowedSum) {
  mj::Jaxpr r = simplified(
      "{ lambda ; a:f32[2,3,3,4]. let b:f32[2,7,7,4] = pad[padding_config=((0, 0, 0), (1, 1, 1), (1, 1, 1), "
      "(0, 0, 0))] a 0.0:f32[]; c:f32[2,6,6,4] = reduce_window_sum[base_dilation=(1, 1, 1, 1) "
      "padding=(0, 0, 0, 0, 0, 0, 0, 0) window_dilation=(1, 1, 1, 1) window_dimensions=(1, 2, 2, 1) "
      "window_strides=(1, 1, 1, 1)] b in (c,) }");
  EXPECT_EQ(count_eqns(r, "pad"), 0) << r;
  ASSERT_EQ(count_eqns(r, "reduce_window_sum"), 1) << r;
  const mj::WindowParams w = mj::reduce_window_monoid_params(r.eqns[0]).window;
  EXPECT_EQ(w.base_dilation, (std::vector<int64_t>{1, 2, 2, 1})) << r;
  EXPECT_EQ(w.padding, (std::vector<int64_t>{0, 0, 1, 1, 1, 1, 0, 0})) << r;
  EXPECT_TRUE(std::get<mj::Var>(r.eqns[0].inputs[0]) == r.invars[0]) << r;
}

TEST(Simplify, FoldsAMinusInfPadIntoAWindowedMaxAndAddsToItsPadding) {
  mj::Jaxpr r = simplified(
      "{ lambda ; a:f32[5,6]. let b:f32[7,7] = pad[padding_config=((1, 1, 0), (0, 1, 0))] a -inf:f32[]; "
      "c:f32[4,3] = reduce_window_max[base_dilation=(1, 1) padding=(1, 0, 0, 1) window_dilation=(1, 2) "
      "window_dimensions=(2, 2) window_strides=(2, 2)] b in (c,) }");
  EXPECT_EQ(count_eqns(r, "pad"), 0) << r;
  ASSERT_EQ(count_eqns(r, "reduce_window_max"), 1) << r;
  EXPECT_EQ(mj::reduce_window_monoid_params(r.eqns[0]).window.padding, (std::vector<int64_t>{2, 1, 0, 2})) << r;
}

TEST(Simplify, FoldsIntegerAndBf16ZeroPadsIntoWindowedSums) {
  for (const char* dt : {"i32", "bf16"}) {
    const std::string zero = std::string(dt) == "i32" ? "0:i32[]" : "0.0:bf16[]";
    mj::Jaxpr r = simplified(std::string("{ lambda ; a:") + dt + "[4,3]. let b:" + dt +
                             "[9,3] = pad[padding_config=((1, 1, 1), (0, 0, 0))] a " + zero + "; c:" + dt +
                             "[8,3] = reduce_window_sum[base_dilation=(1, 1) padding=(0, 0, 0, 0) "
                             "window_dilation=(1, 1) window_dimensions=(2, 1) window_strides=(1, 1)] b in (c,) }");
    EXPECT_EQ(count_eqns(r, "pad"), 0) << dt << "\n" << r;
    ASSERT_EQ(count_eqns(r, "reduce_window_sum"), 1) << r;
    EXPECT_EQ(mj::reduce_window_monoid_params(r.eqns[0]).window.base_dilation, (std::vector<int64_t>{2, 1})) << r;
  }
}

TEST(Simplify, KeepsAPadThatIsNotTheWindowsIdentity) {
  // 0 is not max's identity; -inf is not sum's; a negative edge crops; a pad by a variable.
  const char* programs[] = {
      "{ lambda ; a:f32[4]. let b:f32[6] = pad[padding_config=((1, 1, 0),)] a 0.0:f32[]; "
      "c:f32[5] = reduce_window_max[base_dilation=(1,) padding=(0, 0) window_dilation=(1,) "
      "window_dimensions=(2,) window_strides=(1,)] b in (c,) }",
      "{ lambda ; a:f32[4]. let b:f32[6] = pad[padding_config=((1, 1, 0),)] a -inf:f32[]; "
      "c:f32[5] = reduce_window_sum[base_dilation=(1,) padding=(0, 0) window_dilation=(1,) "
      "window_dimensions=(2,) window_strides=(1,)] b in (c,) }",
      "{ lambda ; a:f32[4]. let b:f32[4] = pad[padding_config=((1, -1, 0),)] a 0.0:f32[]; "
      "c:f32[3] = reduce_window_sum[base_dilation=(1,) padding=(0, 0) window_dilation=(1,) "
      "window_dimensions=(2,) window_strides=(1,)] b in (c,) }",
      "{ lambda ; a:f32[4]. let b:f32[6] = pad[padding_config=((1, 1, 0),)] a 0.0:f32[]; "
      "c:f32[10] = reduce_window_sum[base_dilation=(2,) padding=(0, 0) window_dilation=(1,) "
      "window_dimensions=(2,) window_strides=(1,)] b in (c,) }",
      "{ lambda ; a:f32[4] z:f32[]. let b:f32[6] = pad[padding_config=((1, 1, 0),)] a z; "
      "c:f32[5] = reduce_window_sum[base_dilation=(1,) padding=(0, 0) window_dilation=(1,) "
      "window_dimensions=(2,) window_strides=(1,)] b in (c,) }",
  };
  for (const char* text : programs) {
    mj::Jaxpr r = simplified(text);
    EXPECT_EQ(count_eqns(r, "pad"), 1) << r;
  }
}

}  // namespace
