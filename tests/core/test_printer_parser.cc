// Tests of the jaxpr tooling: printer goldens (JAX's text format), parser round trips, verifier,
// DCE, and jit/closed_call/make_jaxpr over pytrees.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <minijax/minijax.h>

namespace {

using mj::Array;
using mj::ShapedArray;
namespace lax = mj::lax;

ShapedArray f32s(mj::Shape s) { return ShapedArray{std::move(s), mj::f32}; }

// Concrete f32 array with the given values.
Array vals(const std::vector<double>& v, mj::Shape s) { return mj::array(v, s, mj::f32); }

std::string roundtrip(const std::string& text, const std::vector<Array>& consts = {}) {
  return mj::to_string(mj::parse_jaxpr(text, consts));
}

// An effectful test primitive (an "io" effect), identity on its operand.
const mj::Primitive& effect_p() {
  static const mj::Primitive& p = [] () -> const mj::Primitive& {
    auto& q = mj::get_or_create_primitive("test_io_effect");
    q.shape_rule = [](const std::vector<ShapedArray>& in, const mj::Params&) { return in; };
    q.impl = [](const std::vector<Array>& a, const mj::Params&, const std::vector<ShapedArray>&) { return a; };
    q.multiple_results = true;
    q.effects = {"io"};
    return q;
  }();
  return p;
}

// A test primitive carrying params of every kind; identity on its operand.
const mj::Primitive& params_p() {
  static const mj::Primitive& p = [] () -> const mj::Primitive& {
    auto& q = mj::get_or_create_primitive("test_all_params");
    q.shape_rule = [](const std::vector<ShapedArray>& in, const mj::Params&) { return in; };
    return q;
  }();
  return p;
}

// ---------------------------------------------------------------- printer goldens
// Each golden is JAX's layout worked out by hand: a group prints flat iff its flat text fits in
// the 80 - column left on the line; equations then sit at indent 4, `in` at indent 2.

TEST(PrinterGolden, Sin) {
  // Flat width 49 <= 80: one line.
  auto j = mj::make_jaxpr([](const Array& x) { return lax::sin(x); })(vals({1, 2, 3}, {3}));
  EXPECT_EQ(mj::to_string(j), "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }");
}

TEST(PrinterGolden, BroadcastMulReduceSum) {
  // Flat form exceeds 80 columns, so the let-group breaks; the broadcast equation's params
  // group starts at column 33 and is 40 wide (73 <= 80), so it stays flat.
  auto f = [](const Array& x, const Array& y) {
    Array yb = lax::broadcast_in_dim(y, {2, 3}, {1});
    return lax::reduce_sum(lax::mul(x, yb), {1});
  };
  auto j = mj::make_jaxpr(f)(mj::full({2, 3}, 1.0), mj::full({3}, 2.0));
  EXPECT_EQ(mj::to_string(j),
            "{ lambda ; a:f32[2,3] b:f32[3]. let\n"
            "    c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] b\n"
            "    d:f32[2,3] = mul a c\n"
            "    e:f32[2] = reduce_sum[axes=(1,)] d\n"
            "  in (e,) }");
}

TEST(PrinterGolden, NestedJitIsPjit) {
  // pjit's printing rule: name= first; the body's input is named like the operand (a) and its
  // output like the equation's result (b). The params group (64 wide) starting at column 19
  // does not fit, so it breaks with the params at indent 6 and `]` at indent 4.
  auto f = mj::jit([](const Array& x) { return lax::sin(x); }, "f");
  auto j = mj::make_jaxpr([&](const Array& x) { return lax::mul(f(x), x); })(vals({1, 2, 3}, {3}));
  EXPECT_EQ(mj::to_string(j),
            "{ lambda ; a:f32[3]. let\n"
            "    b:f32[3] = pjit[\n"
            "      name=f\n"
            "      jaxpr={ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }\n"
            "    ] a\n"
            "    c:f32[3] = mul b a\n"
            "  in (c,) }");
}

TEST(PrinterGolden, SharedJaxprPrintedOnce) {
  // The cached body is used twice, so (as JAX) it is printed first as `let f = ... in` and its
  // variables a, b are not reused by the outer jaxpr (c, d, e).
  auto f = mj::jit([](const Array& x) { return lax::sin(x); }, "f");
  auto j = mj::make_jaxpr([&](const Array& x) { return f(f(x)); })(vals({1, 2, 3}, {3}));
  EXPECT_EQ(mj::to_string(j),
            "let f = { lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) } in\n"
            "{ lambda ; c:f32[3]. let\n"
            "    d:f32[3] = pjit[name=f jaxpr=f] c\n"
            "    e:f32[3] = pjit[name=f jaxpr=f] d\n"
            "  in (e,) }");
}

TEST(PrinterGolden, ClosedCall) {
  // closed_call has no custom rule: params sorted (call_jaxpr, name), fresh names inside.
  auto g = mj::closed_call([](const Array& x) { return lax::sin(x); }, "g");
  auto j = mj::make_jaxpr([&](const Array& x) { return g(x); })(vals({1, 2, 3}, {3}));
  EXPECT_EQ(mj::to_string(j),
            "{ lambda ; a:f32[3]. let\n"
            "    b:f32[3] = closed_call[\n"
            "      call_jaxpr={ lambda ; c:f32[3]. let d:f32[3] = sin c in (d,) }\n"
            "      name=g\n"
            "    ] a\n"
            "  in (b,) }");
}

TEST(PrinterGolden, UnusedOutputIsDropvar) {
  // An equation output nobody uses prints as `_` and takes no name (JAX's _dropvars).
  auto j = mj::make_jaxpr([](const Array& x) {
    Array unused = lax::sin(x);
    (void)unused;
    return lax::cos(x);
  })(vals({1, 2, 3}, {3}));
  EXPECT_EQ(mj::to_string(j), "{ lambda ; a:f32[3]. let _:f32[3] = sin a; b:f32[3] = cos a in (b,) }");
}

TEST(PrinterGolden, PinnedHostDevicePut) {
  // 98 columns flat: broken; the memory kind shows in the result's type.
  auto j = mj::make_jaxpr([](const Array& x) { return lax::device_put(x, mj::MemoryKind::pinned_host); })(
      mj::full({2, 3}, 1.0));
  EXPECT_EQ(mj::to_string(j),
            "{ lambda ; a:f32[2,3]. let\n"
            "    b:f32<pinned_host>[2,3] = device_put[memory_kind=pinned_host] a\n"
            "  in (b,) }");
}

TEST(PrinterGolden, Literals) {
  // Scalar constants are inlined as literals with their type; 0.1f prints as 0.1 (shortest
  // form that reads back to the same f32), 1e-5f as 1e-05 (numpy's scientific style).
  // The flat text would be 84 wide (without " }"): broken.
  auto j = mj::make_jaxpr([](const Array& x) {
    return lax::add(lax::mul(x, lax::scalar(0.1, mj::f32, true)), lax::scalar(1e-5, mj::f32, true));
  })(mj::scalar(3.0));
  EXPECT_EQ(mj::to_string(j),
            "{ lambda ; a:f32[]. let\n"
            "    b:f32[] = mul a 0.1:f32[]\n"
            "    c:f32[] = add b 1e-05:f32[]\n"
            "  in (c,) }");
  auto k = mj::make_jaxpr([](const Array& i) { return lax::add(i, lax::scalar(-3, mj::i32)); })(
      mj::scalar(4, mj::i32));
  EXPECT_EQ(mj::to_string(k), "{ lambda ; a:i32[]. let b:i32[] = add a -3:i32[] in (b,) }");
}

TEST(PrinterGolden, ConstvarsAndEmptyBody) {
  Array c = vals({1, 2, 3}, {3});
  auto j = mj::make_jaxpr([&](const Array& x) { return lax::mul(x, c); })(vals({4, 5, 6}, {3}));
  EXPECT_EQ(mj::to_string(j), "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = mul b a in (c,) }");
  ASSERT_EQ(j.consts.size(), 1u);
  // No equations: JAX prints two spaces between `let` and `in`.
  auto id = mj::make_jaxpr([](const Array& x) { return x; })(vals({1}, {1}));
  EXPECT_EQ(mj::to_string(id), "{ lambda ; a:f32[1]. let  in (a,) }");
}

TEST(MakeJaxpr, Pytrees) {
  // Leaves flatten in order: vector elements, then map values by sorted key; outputs likewise.
  auto f = [](const std::vector<Array>& xs, const std::map<std::string, Array>& m) {
    Array first = lax::add(xs[0], m.at("w"));
    Array second = lax::mul(xs[1], m.at("b"));
    return std::make_pair(first, second);
  };
  std::map<std::string, Array> m{{"w", vals({1, 2}, {2})}, {"b", vals({3, 4}, {2})}};
  auto j = mj::make_jaxpr(f)(std::vector<Array>{vals({0, 0}, {2}), vals({1, 1}, {2})}, m);
  // invars: xs[0]=a, xs[1]=b, m["b"]=c, m["w"]=d.
  EXPECT_EQ(mj::to_string(j),
            "{ lambda ; a:f32[2] b:f32[2] c:f32[2] d:f32[2]. let\n"
            "    e:f32[2] = add a d\n"
            "    f:f32[2] = mul b c\n"
            "  in (e, f) }");
}

// ---------------------------------------------------------------- parser

TEST(Parser, GoldensRoundTrip) {
  const std::vector<std::string> goldens = {
      "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }",
      "{ lambda ; a:f32[2,3] b:f32[3]. let\n"
      "    c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] b\n"
      "    d:f32[2,3] = mul a c\n"
      "    e:f32[2] = reduce_sum[axes=(1,)] d\n"
      "  in (e,) }",
      "{ lambda ; a:f32[3]. let\n"
      "    b:f32[3] = pjit[\n"
      "      name=f\n"
      "      jaxpr={ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }\n"
      "    ] a\n"
      "    c:f32[3] = mul b a\n"
      "  in (c,) }",
      "let f = { lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) } in\n"
      "{ lambda ; c:f32[3]. let\n"
      "    d:f32[3] = pjit[name=f jaxpr=f] c\n"
      "    e:f32[3] = pjit[name=f jaxpr=f] d\n"
      "  in (e,) }",
      "{ lambda ; a:f32[3]. let _:f32[3] = sin a; b:f32[3] = cos a in (b,) }",
      "{ lambda ; a:f32[2,3]. let\n"
      "    b:f32<pinned_host>[2,3] = device_put[memory_kind=pinned_host] a\n"
      "  in (b,) }",
      "{ lambda ; a:f32[]. let\n"
      "    b:f32[] = mul a 0.1:f32[]\n"
      "    c:f32[] = add b 1e-05:f32[]\n"
      "  in (c,) }",
      "{ lambda ; a:i32[]. let b:i32[] = add a -3:i32[] in (b,) }",
      "{ lambda ; a:f32[1]. let  in (a,) }",
      "{ lambda ; a:f32[3]. let\n"
      "    b:f32[3] = closed_call[\n"
      "      call_jaxpr={ lambda ; c:f32[3]. let d:f32[3] = sin c in (d,) }\n"
      "      name=g\n"
      "    ] a\n"
      "  in (b,) }",
  };
  for (auto& g : goldens) EXPECT_EQ(roundtrip(g), g);
  const std::string with_consts = "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = mul b a in (c,) }";
  EXPECT_EQ(roundtrip(with_consts, {vals({1, 2, 3}, {3})}), with_consts);
}

TEST(Parser, ParsedJaxprEvaluates) {
  // sin(x) * 2 evaluated from text, against std::sin.
  auto cj = mj::parse_jaxpr("{ lambda ; a:f32[2]. let b:f32[2] = sin a; c:f32[2] = mul b b in (c, 2.5:f32[]) }");
  auto out = mj::eval_jaxpr(cj, {vals({0.5, 1.0}, {2})});
  ASSERT_EQ(out.size(), 2u);
  const float* p = out[0].data<float>();
  EXPECT_FLOAT_EQ(p[0], std::sin(0.5f) * std::sin(0.5f));
  EXPECT_FLOAT_EQ(p[1], std::sin(1.0f) * std::sin(1.0f));
  EXPECT_EQ(out[1].item<float>(), 2.5f);
}

TEST(Parser, TokensBoolsAndDropvarBinders) {
  const std::string t = "{ lambda ; a:Tok b:bool[2] c:u32[]. let  in (b, a, True:bool[], c) }";
  auto cj = mj::parse_jaxpr(t);
  EXPECT_TRUE(cj.jaxpr->invars[0].aval().is_token());
  EXPECT_EQ(cj.jaxpr->invars[2].aval().dtype, mj::DType::u32);
  EXPECT_EQ(mj::to_string(cj), t);
  // An explicit dropvar binder among several outputs.
  const std::string d =
      "{ lambda ; a:f32[3]. let _:f32[3] b:f32[3] = test_io_effect a a in (b,) }";
  (void)effect_p();
  auto dj = mj::parse_jaxpr(d);
  EXPECT_TRUE(dj.jaxpr->eqns[0].outputs[0].is_dropvar());
  EXPECT_EQ(dj.jaxpr->eqns[0].effects, mj::Effects{"io"});
  EXPECT_EQ(mj::to_string(dj), d);
}

TEST(Parser, ParamsOfEveryKind) {
  (void)params_p();
  auto body = mj::parse_jaxpr("{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }");
  auto bodyp = std::make_shared<mj::ClosedJaxpr>(body);
  auto j = std::make_shared<mj::Jaxpr>();
  mj::Var a(f32s({2}));
  mj::Var b(f32s({2}));
  j->invars = {a};
  mj::Eqn e;
  e.primitive = &params_p();
  e.inputs = {a};
  e.outputs = {b};
  e.params.set("flag", true);
  e.params.set("count", int64_t(-7));
  e.params.set("scale", 0.25);
  e.params.set("label", std::string("hello_world"));
  e.params.set("axes", std::vector<int64_t>{0, 2});
  e.params.set("one", std::vector<int64_t>{5});
  e.params.set("dtype", mj::DType::bf16);
  e.params.set("kind", mj::MemoryKind::unpinned_host);
  e.params.set("body", mj::ClosedJaxprPtr(bodyp));
  e.params.set("branches", std::vector<mj::ClosedJaxprPtr>{bodyp, bodyp});
  e.params.set("policy", mj::ParamObjectPtr());
  j->eqns.push_back(e);
  j->outvars = {b};
  std::string text = mj::to_string(*j);
  auto p = mj::parse_jaxpr(text);
  EXPECT_EQ(mj::to_string(p), text);
  // Read back through the public storage (the string-keyed getters are core/'s, not a test's).
  const auto& q = p.jaxpr->eqns.at(0).params.items();
  EXPECT_EQ(std::get<bool>(q.at("flag")), true);
  EXPECT_EQ(std::get<int64_t>(q.at("count")), -7);
  EXPECT_EQ(std::get<double>(q.at("scale")), 0.25);
  EXPECT_EQ(std::get<std::string>(q.at("label")), "hello_world");
  EXPECT_EQ(std::get<std::vector<int64_t>>(q.at("axes")), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(std::get<std::vector<int64_t>>(q.at("one")), (std::vector<int64_t>{5}));
  EXPECT_EQ(std::get<mj::DType>(q.at("dtype")), mj::DType::bf16);
  EXPECT_EQ(std::get<mj::MemoryKind>(q.at("kind")), mj::MemoryKind::unpinned_host);
  EXPECT_EQ(mj::to_string(*std::get<mj::ClosedJaxprPtr>(q.at("body"))), "{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }");
  const auto& branches = std::get<std::vector<mj::ClosedJaxprPtr>>(q.at("branches"));
  ASSERT_EQ(branches.size(), 2u);
  // The same body object twice -> parsed as one shared jaxpr.
  EXPECT_EQ(branches[0], branches[1]);
  EXPECT_EQ(std::get<mj::ParamObjectPtr>(q.at("policy")), nullptr);
}

TEST(Parser, ErrorsNameLineAndColumn) {
  try {
    mj::parse_jaxpr("{ lambda ; a:f32[3]. let\n    b:f32[3] = frobnicate a\n  in (b,) }");
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("unknown primitive 'frobnicate'"), std::string::npos) << m;
    EXPECT_NE(m.find("line 2, column 16"), std::string::npos) << m;
  }
  try {
    mj::parse_jaxpr("{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,)");
    FAIL() << "expected ValueError";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("expected '}'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mj::parse_jaxpr("{ lambda ; a:f33[3]. let  in (a,) }"), mj::ValueError);
  EXPECT_THROW(mj::parse_jaxpr("{ lambda ; a:f32[3]. let b:f32[3] = sin z in (b,) }"), mj::ValueError);
  EXPECT_THROW(mj::parse_jaxpr("{ lambda ; a:f32<hbm>[3]. let  in (a,) }"), mj::ValueError);
  // Constvars need their values.
  EXPECT_THROW(mj::parse_jaxpr("{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = mul b a in (c,) }"),
               mj::ValueError);
}

// Random compositions: print -> parse -> print is the identity, and the parsed jaxpr computes
// the same values as the original.
TEST(Parser, RandomCompositionsRoundTrip) {
  std::mt19937 rng(1234);
  auto inner = mj::jit([](const Array& x, const Array& y) { return std::make_pair(lax::cos(x), lax::add(x, y)); }, "inner");
  for (int trial = 0; trial < 40; ++trial) {
    unsigned seed = rng();
    auto f = [seed, &inner](const Array& x, const Array& y) {
      std::mt19937 r(seed);
      std::vector<Array> pool{x, y};
      int n = 2 + int(r() % 14);
      for (int i = 0; i < n; ++i) {
        const Array& u = pool[r() % pool.size()];
        const Array& v = pool[r() % pool.size()];
        switch (r() % 7) {
          case 0: pool.push_back(lax::sin(u)); break;
          case 1: pool.push_back(lax::mul(u, v)); break;
          case 2: pool.push_back(lax::sub(u, v)); break;
          case 3: pool.push_back(lax::mul(u, lax::broadcast_in_dim(lax::scalar(0.5, mj::f32), {4}, {}))); break;
          case 4: pool.push_back(lax::broadcast_in_dim(lax::reduce_sum(u, {0}), {4}, {})); break;
          case 5: { auto [c, s] = inner(u, v); pool.push_back(c); pool.push_back(s); break; }
          default: pool.push_back(lax::neg(u)); break;
        }
      }
      return std::vector<Array>{pool.back(), pool[pool.size() / 2]};
    };
    Array x = vals({0.1, 0.2, 0.3, 0.4}, {4}), y = vals({1, -1, 2, -2}, {4});
    auto j = mj::make_jaxpr(f)(x, y);
    std::string text = mj::to_string(j);
    auto p = mj::parse_jaxpr(text, j.consts);
    ASSERT_EQ(mj::to_string(p), text) << "trial " << trial;
    mj::verify_jaxpr(p);
    auto o1 = mj::eval_jaxpr(j, {x, y});
    auto o2 = mj::eval_jaxpr(p, {x, y});
    ASSERT_EQ(o1.size(), o2.size());
    for (size_t i = 0; i < o1.size(); ++i)
      for (int k = 0; k < 4; ++k) EXPECT_EQ(o1[i].data<float>()[k], o2[i].data<float>()[k]) << text;
  }
}

// ---------------------------------------------------------------- verifier

TEST(Verifier, WrongOutputAvalNamesTheEquation) {
  auto j = std::make_shared<mj::Jaxpr>();
  mj::Var a(f32s({3}));
  mj::Var b(f32s({4}));  // sin of f32[3] is f32[3], not f32[4]
  j->invars = {a};
  mj::Eqn e;
  e.primitive = &mj::primitive("sin");
  e.inputs = {a};
  e.outputs = {b};
  j->eqns.push_back(e);
  j->outvars = {b};
  try {
    mj::verify_jaxpr(*j);
    FAIL() << "expected ShapeError";
  } catch (const mj::ShapeError& err) {
    std::string m = err.what();
    EXPECT_NE(m.find("b:f32[4] = sin a"), std::string::npos) << m;
    EXPECT_NE(m.find("f32[3]"), std::string::npos) << m;
  }
  // Dtype mismatch: TypeError.
  auto k = mj::detail::parse_jaxpr_unchecked("{ lambda ; a:f32[3]. let b:f64[3] = sin a in (b,) }");
  EXPECT_THROW(mj::verify_jaxpr(k), mj::TypeError);
  // Memory kind mismatch: TypeError.
  auto m = mj::detail::parse_jaxpr_unchecked("{ lambda ; a:f32[3]. let b:f32<pinned_host>[3] = sin a in (b,) }");
  EXPECT_THROW(mj::verify_jaxpr(m), mj::TypeError);
  // Errors inside a nested jaxpr are found too.
  auto n = mj::detail::parse_jaxpr_unchecked(
      "{ lambda ; a:f32[3]. let b:f32[3] = pjit[name=f jaxpr={ lambda ; a:f32[3]. let b:f32[2] = sin a in (b,) }] a in (b,) }");
  EXPECT_THROW(mj::verify_jaxpr(n), mj::ShapeError);
  // A well-typed jaxpr passes.
  EXPECT_NO_THROW(mj::verify_jaxpr(mj::parse_jaxpr("{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }")));
}

// Parsed text is untrusted: a jaxpr whose declared avals disagree with its primitives' shape rules
// is refused by parse_jaxpr itself (before, `b:f32[4] = sin a` of an f32[3] parsed, and eval_jaxpr,
// jit and grad returned an f32[3] for the declared f32[4]). The error names the equation and the
// caller's line.
TEST(Verifier, ParseJaxprRefusesAnIllTypedJaxprAtTheCallersLine) {
  const int line = __LINE__ + 2;
  try {
    mj::parse_jaxpr("{ lambda ; a:f32[3]. let b:f32[4] = sin a in (b,) }");
    ADD_FAILURE() << "parse_jaxpr accepted b:f32[4] = sin a of an f32[3]";
  } catch (const mj::ShapeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("b:f32[4] = sin a"), std::string::npos) << m;
    EXPECT_EQ(e.where().line(), unsigned(line)) << m;
    EXPECT_NE(std::string(e.where().file_name()).find("test_printer_parser.cc"), std::string::npos) << m;
  }
  EXPECT_THROW(mj::parse_jaxpr("{ lambda ; a:f32[3]. let b:f64[3] = sin a in (b,) }"), mj::TypeError);
  try {  // a syntax error also names the caller's line
    mj::parse_jaxpr("{ lambda ; a:f32[3]. let b:f32[3] = sin in (b,) }");
    ADD_FAILURE() << "parse_jaxpr accepted sin without an operand";
  } catch (const mj::Error& e) {
    EXPECT_NE(std::string(e.where().file_name()).find("test_printer_parser.cc"), std::string::npos) << e.what();
  }
}

// A param the parser keeps as raw text (no reader accepts it) never buys an equation out of its
// type check, whatever the text says: an ill-typed reshape with such a param, or with one that
// spells the parser's own "not of type object" message, is refused.
TEST(Verifier, ParseJaxprRefusesIllTypedEquationsWhateverTheirRawTextParams) {
  EXPECT_THROW(mj::parse_jaxpr("{ lambda ; a:f32[3]. let b:f32[4] = reshape[dimensions=None new_sizes=(4,) junk=[y]] a in (b,) }"),
               mj::ShapeError);
  EXPECT_THROW(mj::parse_jaxpr("{ lambda ; a:f32[3]. let b:f32[4] = reshape[dimensions=None new_sizes=(4,) "
                               "junk=[parameter 'junk' is not of type object]] a in (b,) }"),
               mj::ShapeError);
  EXPECT_THROW(mj::parse_jaxpr("{ lambda ; a:f32[3]. let b:f32[1048576] = sharding_constraint[sharding=[x]] a in (b,) }"),
               mj::ShapeError);
}

TEST(Verifier, BindingErrors) {
  mj::Var a(f32s({3}));
  mj::Var b(f32s({3}));
  mj::Var stray(f32s({3}));
  mj::Jaxpr j;
  j.invars = {a};
  mj::Eqn e;
  e.primitive = &mj::primitive("sin");
  e.inputs = {stray};  // never bound
  e.outputs = {b};
  j.eqns.push_back(e);
  j.outvars = {b};
  EXPECT_THROW(mj::verify_jaxpr(j), mj::TypeError);
  j.eqns[0].inputs = {a};
  j.eqns[0].outputs = {a};  // rebinds the input
  j.outvars = {a};
  EXPECT_THROW(mj::verify_jaxpr(j), mj::TypeError);
  j.eqns[0].outputs = {b};
  j.outvars = {stray};  // unbound output
  EXPECT_THROW(mj::verify_jaxpr(j), mj::TypeError);
}

TEST(Verifier, RunsFromTraceToJaxprWhenEnabled) {
  // A primitive whose staging lies about its output (the shape rule says f32[2] but the test
  // rule appends an f32[5] equation through add_eqn) is caught when verification is on.
  auto& liar = mj::get_or_create_primitive("test_liar");
  liar.shape_rule = [](const std::vector<ShapedArray>& in, const mj::Params&) { return in; };
  bool saved = mj::config().verify_jaxprs;
  mj::config().verify_jaxprs = true;
  auto f = [&](const std::vector<Array>& ins) {
    auto* t = dynamic_cast<mj::JaxprTrace*>(ins[0].tracer()->trace().get());
    return t->add_eqn(liar, ins, {}, {f32s({5})});
  };
  EXPECT_THROW(mj::trace_to_jaxpr(f, {f32s({2})}), mj::ShapeError);
  mj::config().verify_jaxprs = false;
  EXPECT_NO_THROW(mj::trace_to_jaxpr(f, {f32s({2})}));
  mj::config().verify_jaxprs = saved;
}

// ---------------------------------------------------------------- DCE

TEST(Dce, RemovesUnusedEquationsAndReportsUsedInputs) {
  auto j = mj::parse_jaxpr(
      "{ lambda ; a:f32[3] b:f32[3] c:f32[3]. let\n"
      "    d:f32[3] = sin a\n"
      "    e:f32[3] = cos b\n"
      "    f:f32[3] = mul d e\n"
      "    g:f32[3] = neg c\n"
      "  in (d, f, g) }");
  // Only output 0 (d = sin a) is wanted: cos, mul and neg go; only a is used.
  auto [p, used] = mj::dce_jaxpr(*j.jaxpr, {true, false, false});
  EXPECT_EQ(used, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(mj::to_string(p), "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }");
  // Output 1 needs sin a and cos b.
  auto [p2, used2] = mj::dce_jaxpr(*j.jaxpr, {false, true, false});
  EXPECT_EQ(used2, (std::vector<bool>{true, true, false}));
  EXPECT_EQ(p2.eqns.size(), 3u);
  // instantiate keeps every input.
  auto [p3, used3] = mj::dce_jaxpr(*j.jaxpr, {false, false, true}, true);
  EXPECT_EQ(used3, (std::vector<bool>{true, true, true}));
  EXPECT_EQ(mj::to_string(p3), "{ lambda ; a:f32[3] b:f32[3] c:f32[3]. let d:f32[3] = neg c in (d,) }");
  EXPECT_THROW(mj::dce_jaxpr(*j.jaxpr, {true}), mj::ValueError);
}

TEST(Dce, KeepsEffects) {
  (void)effect_p();
  auto j = mj::parse_jaxpr(
      "{ lambda ; a:f32[3] b:f32[3]. let\n"
      "    c:f32[3] = test_io_effect b\n"
      "    d:f32[3] = sin a\n"
      "  in (d,) }");
  auto [p, used] = mj::dce_jaxpr(*j.jaxpr, {true});
  EXPECT_EQ(used, (std::vector<bool>{true, true}));
  ASSERT_EQ(p.eqns.size(), 2u);
  EXPECT_EQ(p.eqns[0].primitive->name, "test_io_effect");
  EXPECT_EQ(p.effects, mj::Effects{"io"});
  // Effects inside a pjit body keep the pjit equation.
  auto k = mj::parse_jaxpr(
      "{ lambda ; a:f32[3]. let\n"
      "    b:f32[3] = pjit[name=f jaxpr={ lambda ; a:f32[3]. let b:f32[3] = test_io_effect a in (b,) }] a\n"
      "  in () }");
  auto [pk, usedk] = mj::dce_jaxpr(*k.jaxpr, {});
  EXPECT_EQ(pk.eqns.size(), 1u);
  EXPECT_EQ(usedk, (std::vector<bool>{true}));
}

TEST(Dce, PrunesInsidePjit) {
  auto j = mj::parse_jaxpr(
      "{ lambda ; a:f32[3] b:f32[3]. let\n"
      "    c:f32[3] d:f32[3] = pjit[\n"
      "      name=f\n"
      "      jaxpr={ lambda ; e:f32[3] f:f32[3]. let g:f32[3] = sin e; h:f32[3] = cos f in (g, h) }\n"
      "    ] a b\n"
      "  in (c, d) }");
  auto [p, used] = mj::dce_jaxpr(*j.jaxpr, {false, true});
  EXPECT_EQ(used, (std::vector<bool>{false, true}));
  // The pjit keeps one operand and one result; its body keeps only cos.
  EXPECT_EQ(mj::to_string(p),
            "{ lambda ; a:f32[3]. let\n"
            "    b:f32[3] = pjit[\n"
            "      name=f\n"
            "      jaxpr={ lambda ; a:f32[3]. let b:f32[3] = cos a in (b,) }\n"
            "    ] a\n"
            "  in (b,) }");
  auto [q, usedq] = mj::dce_jaxpr(*j.jaxpr, {false, false});
  EXPECT_TRUE(q.eqns.empty());
  EXPECT_EQ(usedq, (std::vector<bool>{false, false}));
}

// ---------------------------------------------------------------- jit

TEST(Jit, TracesOncePerSignature) {
  int traced = 0;
  auto f = mj::jit([&traced](const Array& x) {
    ++traced;
    return lax::sin(x);
  }, "f");
  Array x = vals({0.5, 1.5, 2.5}, {3});
  Array r1 = f(x);
  Array r2 = f(vals({1, 2, 3}, {3}));
  EXPECT_EQ(traced, 1);
  EXPECT_EQ(f.trace_count(), 1);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(r1.data<float>()[i], std::sin(0.5f + float(i)));
  EXPECT_FLOAT_EQ(r2.data<float>()[2], std::sin(3.0f));
  f(vals({1, 2, 3, 4}, {4}));  // new shape: retrace
  EXPECT_EQ(traced, 2);
  EXPECT_EQ(f.cache_size(), 2u);
  f(mj::array(std::vector<double>{1, 2, 3}, {3}, mj::f64));  // new dtype: retrace
  EXPECT_EQ(traced, 3);
}

TEST(Jit, ClosedOverConstantsAndPytrees) {
  Array c = vals({10, 20}, {2});
  auto f = mj::jit([&c](const std::pair<Array, Array>& p) {
    return std::vector<Array>{lax::mul(p.first, c), lax::add(p.second, c)};
  }, "g");
  auto out = f(std::make_pair(vals({1, 2}, {2}), vals({3, 4}, {2})));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data<float>()[1], 40.0f);  // 2 * 20
  EXPECT_EQ(out[1].data<float>()[0], 13.0f);  // 3 + 10
  // Under make_jaxpr the constant becomes an outer constvar passed as pjit's first operand.
  auto j = mj::make_jaxpr([&](const Array& x) { return f(std::make_pair(x, x))[0]; })(vals({1, 2}, {2}));
  ASSERT_EQ(j.jaxpr->eqns.size(), 1u);
  EXPECT_EQ(j.jaxpr->eqns[0].primitive->name, "pjit");
  EXPECT_EQ(j.jaxpr->eqns[0].inputs.size(), 3u);
  EXPECT_EQ(j.jaxpr->constvars.size(), 1u);
  EXPECT_EQ(mj::eval_jaxpr(j, {vals({1, 2}, {2})})[0].data<float>()[0], 10.0f);
}

TEST(Jit, BranchingOnTracedValueThrowsConcretizationError) {
  const int item_line = __LINE__ + 2;  // the line of the item() call below
  auto f = mj::jit([](const Array& x) {
    if (x.item<float>() > 0) return lax::sin(x);
    return lax::cos(x);
  }, "branchy");
  try {
    f(mj::scalar(1.0));
    FAIL() << "expected ConcretizationError";
  } catch (const mj::ConcretizationError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("branchy"), std::string::npos) << m;
    EXPECT_NE(m.find("traced value"), std::string::npos) << m;
    EXPECT_NE(m.find("test_printer_parser.cc"), std::string::npos) << m;
    EXPECT_EQ(int(e.where().line()), item_line) << m;
  }
}

TEST(Jit, WrongOperandsForPjitAreRejected) {
  auto body = std::make_shared<mj::ClosedJaxpr>(mj::parse_jaxpr("{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }"));
  EXPECT_THROW(mj::bind_call(mj::pjit_p(), body, "f", {vals({1, 2}, {2})}), mj::TypeError);
  auto out = mj::bind_call(mj::pjit_p(), body, "f", {vals({0, 0, 1}, {3})});
  EXPECT_FLOAT_EQ(out[0].data<float>()[2], std::sin(1.0f));
}

}  // namespace
