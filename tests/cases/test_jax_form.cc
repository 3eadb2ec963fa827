// Golden tests: make_jaxpr of common programs printed exactly as JAX 0.4.30 prints the same
// Python program, with a parse(print(j)) round trip for each. See docs/jaxpr-format.md.
//
// Every expected string is JAX's printed form for the Python program quoted above it; the
// source of that form (a JAX doc or source file, and the JAX version) is cited next to it.
// minijax's documented deviations from JAX 0.4.30 (docs/jaxpr-format.md) are applied where
// marked "Deviation":
//   D1 literals print with their type, `3.0:f32[]`, where JAX 0.4.30 prints `3.0` (later JAX
//      releases print the type as minijax does; the parser needs it to read the dtype back);
//   D2 the body of a pjit equation names its variables after the equation's operands and
//      results (the suggest_same_var_names rule of later JAX releases' _pjit_pp_rule), where
//      JAX 0.4.30 gives them fresh names;
//   D3 expand_dims is its own primitive, `expand_dims[dimensions=(0,)]`, where JAX's
//      lax.expand_dims binds broadcast_in_dim.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/bodies.h"

namespace {

using mj::Array;
namespace lax = mj::lax;

Array f32v(std::vector<double> v, mj::Shape s) { return mj::array(v, s, mj::f32); }
Array f32z(mj::Shape s) { return mj::zeros(s, mj::f32); }
Array i32z(mj::Shape s) { return mj::zeros(s, mj::i32); }

// print(j) must equal the golden, and parse(print(j)) must print the same text and carry
// equal params in every top-level equation.
// Every equation of `j` and of its bodies fits its primitive's typed view: from, then to_params,
// gives back the params as they are (so a pass that rebuilds an equation from its view keeps
// the golden text).
void expect_views_round_trip(const mj::Jaxpr& j) {
  for (size_t i = 0; i < j.eqns.size(); ++i) {
    const auto& e = j.eqns[i];
    if (e.primitive->check_params)
      EXPECT_TRUE(e.primitive->check_params(e.params) == e.params)
          << e.primitive->name << "'s view of equation " << i << ": " << mj::eqn_to_string(j, i);
    for (const auto& b : mj::subjaxprs(e)) expect_views_round_trip(*b.jaxpr->jaxpr);
  }
}

void expect_form(const mj::ClosedJaxpr& j, const std::string& golden) {
  const std::string text = mj::to_string(j);
  EXPECT_EQ(text, golden);
  mj::ClosedJaxpr back = mj::parse_jaxpr(text, j.consts);
  EXPECT_EQ(mj::to_string(back), text);
  expect_views_round_trip(*j.jaxpr);
  ASSERT_EQ(back.jaxpr->eqns.size(), j.jaxpr->eqns.size());
  for (size_t i = 0; i < j.jaxpr->eqns.size(); ++i) {
    const auto& a = j.jaxpr->eqns[i];
    const auto& b = back.jaxpr->eqns[i];
    EXPECT_EQ(a.primitive, b.primitive) << "equation " << i;
    EXPECT_TRUE(a.params == b.params) << "params of equation " << i << ": "
                                      << mj::eqn_to_string(*j.jaxpr, i);
  }
}

// def func1(first, second):
//   temp = first + jnp.sin(second) * 3.
//   return jnp.sum(temp)
// make_jaxpr(func1)(jnp.zeros(8), jnp.ones(8))
// Source: jax-ml/jax docs/jaxpr.rst, "Understanding Jaxprs" (JAX 0.4.2x; unchanged in 0.4.30's
// docs/jaxpr.md), whose printout is
//   { lambda ; a:f32[8] b:f32[8]. let
//       c:f32[8] = sin b
//       d:f32[8] = mul c 3.0
//       e:f32[8] = add a d
//       f:f32[] = reduce_sum[axes=(0,)] e
//     in (f,) }
TEST(JaxForm, DocsFunc1SinMulAddSum) {
  auto j = mj::make_jaxpr([](const Array& first, const Array& second) {
    return mj::sum(first + mj::sin(second) * 3.0);
  })(f32z({8}), f32z({8}));
  expect_form(j,
              "{ lambda ; a:f32[8] b:f32[8]. let\n"
              "    c:f32[8] = sin b\n"
              "    d:f32[8] = mul c 3.0:f32[]\n"  // Deviation D1: JAX 0.4.30 prints `mul c 3.0`.
              "    e:f32[8] = add a d\n"
              "    f:f32[] = reduce_sum[axes=(0,)] e\n"
              "  in (f,) }");
}

// lambda x: lax.mul(lax.sin(x), lax.cos(x)) on f32[3]
// Source: JAX 0.4.30 jax/_src/lax/lax.py (sin_p, cos_p, mul_p take no params); layout by
// jax/_src/core.py pp_jaxpr: the flat text (87 columns before " }") does not fit in 80, so
// each equation goes on its own line. (Python evaluates sin before cos; C++ leaves argument
// order unspecified, so the C++ program names them first.)
TEST(JaxForm, SinCosMulChain) {
  auto j = mj::make_jaxpr([](const Array& x) {
    Array s = lax::sin(x);
    Array c = lax::cos(x);
    return lax::mul(s, c);
  })(f32z({3}));
  expect_form(j,
              "{ lambda ; a:f32[3]. let\n"
              "    b:f32[3] = sin a\n"
              "    c:f32[3] = cos a\n"
              "    d:f32[3] = mul b c\n"
              "  in (d,) }");
}

// lambda x: lax.sin(x) on f32[3]: short enough (49 columns) to print on one line.
// Source: JAX 0.4.30 core.py pp_jaxpr (one group, laid out flat when it fits).
TEST(JaxForm, OneLineSin) {
  auto j = mj::make_jaxpr([](const Array& x) { return lax::sin(x); })(f32z({3}));
  expect_form(j, "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }");
}

// lambda x: lax.reduce_sum(x, (1,)) and lax.reduce_max(x, (0,)) on f32[2,3]
// Source: JAX 0.4.30 lax.py (reduce_sum_p.bind(operand, axes=tuple(axes)); reduce_max_p alike);
// `reduce_sum[axes=(0,)]` as in docs/jaxpr.rst. Newer JAX (0.6) adds out_sharding=None.
TEST(JaxForm, Reductions) {
  auto j = mj::make_jaxpr([](const Array& x) {
    return std::vector<Array>{lax::reduce_sum(x, {1}), lax::reduce_max(x, {0})};
  })(f32z({2, 3}));
  expect_form(j,
              "{ lambda ; a:f32[2,3]. let\n"
              "    b:f32[2] = reduce_sum[axes=(1,)] a\n"
              "    c:f32[3] = reduce_max[axes=(0,)] a\n"
              "  in (b, c) }");
}

// lambda x: lax.broadcast_in_dim(x, (2, 3), (1,)) on f32[3]
// Source: docs/jaxpr.rst (JAX 0.4.2x) prints `broadcast_in_dim[broadcast_dimensions=() shape=(16,)]`;
// JAX 0.4.30 lax.py binds broadcast_in_dim_p with shape and broadcast_dimensions only (the
// sharding=None param came with later releases).
TEST(JaxForm, BroadcastInDim) {
  auto j = mj::make_jaxpr([](const Array& x) { return lax::broadcast_in_dim(x, {2, 3}, {1}); })(f32z({3}));
  expect_form(j,
              "{ lambda ; a:f32[3]. let\n"
              "    b:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] a\n"
              "  in (b,) }");
}

// lambda x, w: jnp.matmul(x, w) on f32[2,3], f32[3,4]
// Source: JAX 0.4.30 jax/_src/numpy/lax_numpy.py matmul (jit with inline=True, so no pjit) binds
// dot_general with dimension_numbers=(([1], [0]), ([], [])) (lists), precision=None and
// preferred_element_type=float32; printed as
//   dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32]
// which, too wide for one line, breaks into one param per line (pp_kv_pairs).
TEST(JaxForm, MatmulDotGeneral) {
  auto j = mj::make_jaxpr([](const Array& x, const Array& w) { return mj::matmul(x, w); })(
      f32z({2, 3}), f32z({3, 4}));
  expect_form(j,
              "{ lambda ; a:f32[2,3] b:f32[3,4]. let\n"
              "    c:f32[2,4] = dot_general[\n"
              "      dimension_numbers=(([1], [0]), ([], []))\n"
              "      precision=None\n"
              "      preferred_element_type=float32\n"
              "    ] a b\n"
              "  in (c,) }");
}

// lambda x, y: lax.dot_general(x, y, (([2], [1]), ([0], [0]))) on f32[5,2,3], f32[5,3,4]
// Source: as above (JAX 0.4.30); a batched contraction prints its batch dims in the second pair.
TEST(JaxForm, BatchedDotGeneral) {
  auto j = mj::make_jaxpr([](const Array& x, const Array& y) {
    return lax::dot_general(x, y, {{2}, {1}, {0}, {0}});
  })(f32z({5, 2, 3}), f32z({5, 3, 4}));
  expect_form(j,
              "{ lambda ; a:f32[5,2,3] b:f32[5,3,4]. let\n"
              "    c:f32[5,2,4] = dot_general[\n"
              "      dimension_numbers=(([2], [1]), ([0], [0]))\n"
              "      precision=None\n"
              "      preferred_element_type=float32\n"
              "    ] a b\n"
              "  in (c,) }");
}

// lambda x: lax.convert_element_type(x, jnp.int32) on f32[3]
// Source: docs/jaxpr.rst (JAX 0.4.2x): `convert_element_type[new_dtype=int32 weak_type=False] a`;
// JAX 0.4.30 lax.py binds new_dtype and weak_type only (sharding=None came later).
TEST(JaxForm, ConvertElementType) {
  auto j = mj::make_jaxpr([](const Array& x) { return lax::convert_element_type(x, mj::i32); })(f32z({3}));
  expect_form(j,
              "{ lambda ; a:f32[3]. let\n"
              "    b:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
              "  in (b,) }");
}

// lambda p, x, y: lax.select_n(p, x, y) on bool[3], f32[3], f32[3]
// Source: JAX 0.4.30 lax.py (select_n_p.bind(which, *cases), no params); `select_n bg bi bh`
// appears in printed _where bodies of that era.
TEST(JaxForm, SelectN) {
  auto j = mj::make_jaxpr([](const Array& p, const Array& x, const Array& y) {
    return lax::select_n(p, {x, y});
  })(mj::zeros({3}, mj::bool_), f32z({3}), f32z({3}));
  expect_form(j, "{ lambda ; a:bool[3] b:f32[3] c:f32[3]. let d:f32[3] = select_n a b c in (d,) }");
}

// lambda x: lax.transpose(lax.reshape(x, (3, 2)), (1, 0)) on f32[2,3]
// Source: JAX 0.4.30 lax.py: reshape_p.bind(operand, new_sizes=..., dimensions=None) prints
// `reshape[dimensions=None new_sizes=(3, 2)]`; transpose_p.bind(operand, permutation=...)
// prints `transpose[permutation=(1, 0)]` (both forms seen in printed jaxprs of that era).
TEST(JaxForm, ReshapeTranspose) {
  auto j = mj::make_jaxpr([](const Array& x) {
    return lax::transpose(lax::reshape(x, {3, 2}), {1, 0});
  })(f32z({2, 3}));
  expect_form(j,
              "{ lambda ; a:f32[2,3]. let\n"
              "    b:f32[3,2] = reshape[dimensions=None new_sizes=(3, 2)] a\n"
              "    c:f32[2,3] = transpose[permutation=(1, 0)] b\n"
              "  in (c,) }");
}

// lambda x: lax.squeeze(lax.slice(x, (1, 0), (2, 3)), (0,)) on f32[4,3]
// Source: JAX 0.4.30 jax/_src/lax/slicing.py: slice_p.bind(operand, start_indices=...,
// limit_indices=..., strides=None) prints `slice[limit_indices=(2, 3) start_indices=(1, 0)
// strides=None]`; lax.py squeeze_p.bind(array, dimensions=...) prints `squeeze[dimensions=(0,)]`.
TEST(JaxForm, SliceSqueeze) {
  auto j = mj::make_jaxpr([](const Array& x) {
    return lax::squeeze(lax::slice(x, {1, 0}, {2, 3}), {0});
  })(f32z({4, 3}));
  expect_form(j,
              "{ lambda ; a:f32[4,3]. let\n"
              "    b:f32[1,3] = slice[limit_indices=(2, 3) start_indices=(1, 0) strides=None] a\n"
              "    c:f32[3] = squeeze[dimensions=(0,)] b\n"
              "  in (c,) }");
}

// lambda x: lax.dynamic_slice(x, (1,), (2,)) on f32[5]
// Source: JAX 0.4.30 slicing.py: dynamic_slice_p.bind(operand, *start_indices, slice_sizes=...);
// a static non-negative Python index stays as it is, so it is a literal operand:
//   b:f32[2] = dynamic_slice[slice_sizes=(2,)] a 1
TEST(JaxForm, DynamicSliceStaticIndex) {
  auto j = mj::make_jaxpr([](const Array& x) {
    return lax::dynamic_slice(x, {mj::scalar(1, mj::i32)}, {2});
  })(f32z({5}));
  expect_form(j,
              "{ lambda ; a:f32[5]. let\n"
              "    b:f32[2] = dynamic_slice[slice_sizes=(2,)] a 1:i32[]\n"  // Deviation D1.
              "  in (b,) }");
}

// lambda x, y: lax.concatenate([x, y], 0) on f32[2], f32[3]
// Source: JAX 0.4.30 jax/_src/lax/lax.py: concatenate_p.bind(*operands, dimension=dimension).
TEST(JaxForm, Concatenate) {
  auto j = mj::make_jaxpr([](const Array& x, const Array& y) { return lax::concatenate({x, y}, 0); })(
      f32z({2}), f32z({3}));
  // 81 columns flat (before " }"): broken.
  expect_form(j,
              "{ lambda ; a:f32[2] b:f32[3]. let\n"
              "    c:f32[5] = concatenate[dimension=0] a b\n"
              "  in (c,) }");
}

// lambda x: x + lax.iota(jnp.int32, 4) on i32[4]
// Source: JAX 0.4.30 lax.py broadcasted_iota: iota_p.bind(dtype=..., shape=..., dimension=...)
// prints `iota[dimension=0 dtype=int32 shape=(4,)]` (sharding=None was added later); an
// equation without operands keeps the space before its (empty) operand list.
TEST(JaxForm, Iota) {
  auto j = mj::make_jaxpr([](const Array& x) { return lax::add(x, lax::iota(mj::i32, {4}, 0)); })(i32z({4}));
  expect_form(j,
              "{ lambda ; a:i32[4]. let\n"
              "    b:i32[4] = iota[dimension=0 dtype=int32 shape=(4,)] \n"
              "    c:i32[4] = add a b\n"
              "  in (c,) }");
}

// lambda x: lax.log(lax.integer_pow(lax.exp(x), 2)) on f32[3]
// Source: JAX 0.4.30 lax.py: exp_p/log_p have no params (accuracy=None came in later
// releases); integer_pow_p.bind(x, y=y) prints `integer_pow[y=2]`.
TEST(JaxForm, ExpIntegerPowLog) {
  auto j = mj::make_jaxpr([](const Array& x) {
    return lax::log(lax::integer_pow(lax::exp(x), 2));
  })(f32z({3}));
  expect_form(j,
              "{ lambda ; a:f32[3]. let\n"
              "    b:f32[3] = exp a\n"
              "    c:f32[3] = integer_pow[y=2] b\n"
              "    d:f32[3] = log c\n"
              "  in (d,) }");
}

// lambda x: (lax.argmax(x, 1, jnp.int32), lax.cumsum(x, axis=0)) on f32[2,3]
// Source: JAX 0.4.30 lax.py argmax_p.bind(operand, axes=(axis,), index_dtype=...) prints
// `argmax[axes=(1,) index_dtype=int32]`; jax/_src/lax/control_flow/loops.py cumsum_p.bind(
// operand, axis=axis, reverse=reverse) prints `cumsum[axis=0 reverse=False]`.
TEST(JaxForm, ArgmaxCumsum) {
  auto j = mj::make_jaxpr([](const Array& x) {
    return std::vector<Array>{lax::argmax(x, 1, mj::i32), lax::cumsum(x, 0)};
  })(f32z({2, 3}));
  expect_form(j,
              "{ lambda ; a:f32[2,3]. let\n"
              "    b:i32[2] = argmax[axes=(1,) index_dtype=int32] a\n"
              "    c:f32[2,3] = cumsum[axis=0 reverse=False] a\n"
              "  in (b, c) }");
}

// lambda x: lax.pad(x, 0., [(1, 2, 0)]) on f32[3]
// Source: JAX 0.4.30 lax.py pad_p.bind(operand, padding_value, padding_config=tuple(...)) prints
// `pad[padding_config=((1, 2, 0),)]`; the Python float 0. is a literal operand.
TEST(JaxForm, Pad) {
  auto j = mj::make_jaxpr([](const Array& x) {
    return lax::pad(x, mj::scalar(0.0, mj::f32), {{1, 2, 0}});
  })(f32z({3}));
  expect_form(j,
              "{ lambda ; a:f32[3]. let\n"
              "    b:f32[6] = pad[padding_config=((1, 2, 0),)] a 0.0:f32[]\n"  // Deviation D1.
              "  in (b,) }");
}

// lambda x: lax.expand_dims(x, (0,)) on f32[3]
// JAX 0.4.30's lax.expand_dims is broadcast_in_dim: it prints
//   b:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 3)] a
// Deviation D3: minijax keeps expand_dims as a primitive of its own (params: dimensions).
TEST(JaxForm, ExpandDimsDeviation) {
  auto j = mj::make_jaxpr([](const Array& x) { return lax::expand_dims(x, {0}); })(f32z({3}));
  expect_form(j, "{ lambda ; a:f32[3]. let b:f32[1,3] = expand_dims[dimensions=(0,)] a in (b,) }");
}

// @jax.jit
// def inner(x): return jnp.sin(x)
// lambda x: inner(x) * x on f32[3]
// Source: docs/jaxpr.rst "XLA_call" (JAX 0.4.2x) and JAX 0.4.30 jax/_src/pjit.py _pjit_pp_rule:
// name= first, default params (donated_invars, inline, keep_unused, shardings, resource_env)
// hidden. JAX 0.4.30 prints
//   b:f32[3] = pjit[
//     name=inner
//     jaxpr={ lambda ; c:f32[3]. let d:f32[3] = sin c in (d,) }
//   ] a
//   e:f32[3] = mul b a
// Deviation D2: the body is named after the operand and result (a, b), so the next outer
// variable is c.
TEST(JaxForm, NestedJitIsPjit) {
  auto inner = mj::jit([](const Array& x) { return mj::sin(x); }, "inner");
  auto j = mj::make_jaxpr([&](const Array& x) { return inner(x) * x; })(f32z({3}));
  expect_form(j,
              "{ lambda ; a:f32[3]. let\n"
              "    b:f32[3] = pjit[\n"
              "      name=inner\n"
              "      jaxpr={ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }\n"
              "    ] a\n"
              "    c:f32[3] = mul b a\n"
              "  in (c,) }");
}

// Nested jit inside jit:
// @jax.jit
// def g(x): return jnp.cos(x)
// @jax.jit
// def f(x): return g(x) + 1.
// make_jaxpr(f) on f32[2]
// Source: as above (JAX 0.4.30 _pjit_pp_rule, nested jaxprs printed inline when used once and
// short; literal 1.0 weak-typed). JAX 0.4.30 prints
//   { lambda ; a:f32[2]. let
//       b:f32[2] = pjit[
//         name=f
//         jaxpr={ lambda ; c:f32[2]. let
//             d:f32[2] = pjit[
//               name=g
//               jaxpr={ lambda ; e:f32[2]. let f:f32[2] = cos e in (f,) }
//             ] c
//             g:f32[2] = add d 1.0
//           in (g,) }
//       ] a
//     in (b,) }
// Deviations D1 (`1.0:f32[]`) and D2 (bodies named after their operands/results).
TEST(JaxForm, PjitOfNestedJit) {
  auto g = mj::jit([](const Array& x) { return mj::cos(x); }, "g");
  auto f = mj::jit([&](const Array& x) { return g(x) + 1.0; }, "f");
  auto j = mj::make_jaxpr([&](const Array& x) { return f(x); })(f32z({2}));
  expect_form(j,
              "{ lambda ; a:f32[2]. let\n"
              "    b:f32[2] = pjit[\n"
              "      name=f\n"
              "      jaxpr={ lambda ; a:f32[2]. let\n"
              "          c:f32[2] = pjit[\n"
              "            name=g\n"
              "            jaxpr={ lambda ; a:f32[2]. let c:f32[2] = cos a in (c,) }\n"
              "          ] a\n"
              "          b:f32[2] = add c 1.0:f32[]\n"
              "        in (b,) }\n"
              "    ] a\n"
              "  in (b,) }");
}

// Literals: lambda x: x * 2 + 0.5 on f32[3] with Python scalars (weak types keep f32).
// Source: docs/jaxpr.rst (JAX 0.4.2x): scalar literals are kept inline, `mul c 3.0`.
// Deviation D1: printed with their type.
TEST(JaxForm, InlineLiterals) {
  auto j = mj::make_jaxpr([](const Array& x) { return x * 2.0 + 0.5; })(f32v({1, 2, 3}, {3}));
  expect_form(j,
              "{ lambda ; a:f32[3]. let\n"
              "    b:f32[3] = mul a 2.0:f32[]\n"
              "    c:f32[3] = add b 0.5:f32[]\n"
              "  in (c,) }");
}

// lambda x: (jnp.round(x), lax.round(x)) on f32[3]
// Source: JAX 0.4.30 lax.py round_p.bind(x, rounding_method=RoundingMethod(...)); RoundingMethod
// is an IntEnum, which Python >= 3.11 prints as its value: jnp.round uses TO_NEAREST_EVEN (1),
// lax.round defaults to AWAY_FROM_ZERO (0).
TEST(JaxForm, Round) {
  auto j = mj::make_jaxpr([](const Array& x) {
    Array a = mj::round(x);
    Array b = lax::round(x);
    return std::vector<Array>{a, b};
  })(f32z({3}));
  expect_form(j,
              "{ lambda ; a:f32[3]. let\n"
              "    b:f32[3] = round[rounding_method=1] a\n"
              "    c:f32[3] = round[rounding_method=0] a\n"
              "  in (b, c) }");
}

// lambda x: lax.clamp(0., lax.rev(lax.logistic(x), (0,)), 1.) on f32[3]
// Source: JAX 0.4.30 lax.py: logistic_p (no params), rev_p.bind(operand, dimensions=(0,)),
// clamp_p.bind(min, x, max) with the Python floats as literal operands.
TEST(JaxForm, LogisticRevClamp) {
  auto j = mj::make_jaxpr([](const Array& x) {
    return lax::clamp(mj::scalar(0.0, mj::f32), lax::rev(lax::logistic(x), {0}), mj::scalar(1.0, mj::f32));
  })(f32z({3}));
  expect_form(j,
              "{ lambda ; a:f32[3]. let\n"
              "    b:f32[3] = logistic a\n"
              "    c:f32[3] = rev[dimensions=(0,)] b\n"
              "    d:f32[3] = clamp 0.0:f32[] c 1.0:f32[]\n"  // Deviation D1.
              "  in (d,) }");
}

// lambda x: (lax.argmin(x, 0, jnp.int32), lax.reduce_min(x, (0,)), lax.reduce_prod(x, (1,)),
//            lax.cumsum(x, axis=1, reverse=True)) on f32[2,3]
// Source: JAX 0.4.30 lax.py (argmin_p like argmax_p; reduce_min_p/reduce_prod_p with axes) and
// loops.py (cumsum_p with axis, reverse).
TEST(JaxForm, MoreReductions) {
  auto j = mj::make_jaxpr([](const Array& x) {
    Array a = lax::argmin(x, 0, mj::i32);
    Array b = lax::reduce_min(x, {0});
    Array c = lax::reduce_prod(x, {1});
    Array d = lax::cumsum(x, 1, true);
    return std::vector<Array>{a, b, c, d};
  })(f32z({2, 3}));
  expect_form(j,
              "{ lambda ; a:f32[2,3]. let\n"
              "    b:i32[3] = argmin[axes=(0,) index_dtype=int32] a\n"
              "    c:f32[3] = reduce_min[axes=(0,)] a\n"
              "    d:f32[2] = reduce_prod[axes=(1,)] a\n"
              "    e:f32[2,3] = cumsum[axis=1 reverse=True] a\n"
              "  in (b, c, d, e) }");
}

// lambda x: lax.stop_gradient(x) * x on f32[3]
// Source: JAX 0.4.30 lax.py stop_gradient binds ad_util.stop_gradient_p (name "stop_gradient",
// no params) on float operands. The group is exactly 80 columns wide before " }", which
// still fits (JAX's _fits: width - len(text) >= 0), so it prints on one line.
TEST(JaxForm, StopGradient) {
  auto j = mj::make_jaxpr([](const Array& x) { return lax::mul(lax::stop_gradient(x), x); })(f32z({3}));
  expect_form(j, "{ lambda ; a:f32[3]. let b:f32[3] = stop_gradient a; c:f32[3] = mul b a in (c,) }");
}

// Round trip of the dimension_numbers param on its own: the parser rebuilds the object (not a
// string), so the equation's params compare equal and lax::dot_dimension_numbers reads it.
TEST(JaxForm, DotDimensionNumbersReadBack) {
  auto j = mj::make_jaxpr([](const Array& x, const Array& y) {
    return lax::dot_general(x, y, {{2, 1}, {0, 1}, {0}, {2}});
  })(f32z({4, 3, 2}), f32z({2, 3, 4}));
  mj::ClosedJaxpr back = mj::parse_jaxpr(mj::to_string(j));
  const auto d = lax::dot_dimension_numbers(back.jaxpr->eqns.at(0).params);
  EXPECT_EQ(d.lhs_contracting, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(d.rhs_contracting, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(d.lhs_batch, (std::vector<int64_t>{0}));
  EXPECT_EQ(d.rhs_batch, (std::vector<int64_t>{2}));
  EXPECT_NE(mj::to_string(j).find("dimension_numbers=(([2, 1], [0, 1]), ([0], [2]))"), std::string::npos)
      << mj::to_string(j);
  // lax.dot's tuple spelling reads back to the same numbers.
  const std::string tuple_form =
      "{ lambda ; a:f32[2,3] b:f32[3,4]. let\n"
      "    c:f32[2,4] = dot_general[dimension_numbers=(((1,), (0,)), ((), ())) precision=None "
      "preferred_element_type=float32] a b\n"
      "  in (c,) }";
  auto t = mj::parse_jaxpr(tuple_form);
  const auto td = lax::dot_dimension_numbers(t.jaxpr->eqns.at(0).params);
  EXPECT_EQ(td.lhs_contracting, (std::vector<int64_t>{1}));
  EXPECT_EQ(td.rhs_contracting, (std::vector<int64_t>{0}));
  EXPECT_TRUE(td.lhs_batch.empty());
  EXPECT_TRUE(td.rhs_batch.empty());
  // Malformed dimension numbers stay a plain string and the reader rejects them.
  const std::string bad =
      "{ lambda ; a:f32[2,3] b:f32[3,4]. let\n"
      "    c:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([x], [])) precision=None "
      "preferred_element_type=float32] a b\n"
      "  in (c,) }";
  EXPECT_THROW(
      {
        auto p = mj::parse_jaxpr(bad);
        (void)lax::dot_dimension_numbers(p.jaxpr->eqns.at(0).params);
      },
      mj::Error);
}

}  // namespace
