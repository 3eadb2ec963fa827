// Tests of dot_general/dot/matmul's precision= and preferred_element_type= (JAX's lax.Precision and
// output dtype): values, printing and parsing, and every rule (JVP, transpose, vmap, jit, sharding).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <minijax/minijax.h>

using minijax::Array;
namespace lax = mj::lax;
using lax::Precision;

namespace {

std::vector<double> vals(const Array& a) {
  Array c = lax::convert_element_type(a, mj::f64, false);
  return std::vector<double>(c.data<double>(), c.data<double>() + c.size());
}

// bf16 operands whose exact product sums need more than bf16's 8 significant bits:
// A = [[16, 1], [1, 1]], B = [[16, 1], [1, 1]] -> A @ B = [[257, 17], [17, 2]] exactly (257 is not a
// bf16: it rounds to 256). Every operand value is a bf16 exactly.
Array a16() { return mj::astype(mj::array({16, 1, 1, 1}, {2, 2}, mj::f32), mj::bf16); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// f() throws E at this file's `line`, its message containing each of `parts`.
template <class E, class F>
void expect_error(F f, int line, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const E& e) {
    for (auto& p : parts) EXPECT_TRUE(contains(e.what(), p)) << p << " not in " << e.what();
    EXPECT_EQ(int(e.where().line()), line) << e.what();
  }
}

}  // namespace

// preferred_element_type=f32 on bf16 operands returns f32, accumulated in f32 (257, where the
// bf16 result rounds to 256); eager, jit and every entry point agree. Before: no such argument.
TEST(DotOptions, PreferredElementTypeIsTheOutputDtype) {
  const std::vector<double> exact{257, 17, 17, 2};
  EXPECT_EQ(vals(mj::matmul(a16(), a16())), (std::vector<double>{256, 17, 17, 2}));  // bf16 result
  Array c = mj::matmul(a16(), a16(), {.preferred_element_type = mj::f32});
  EXPECT_EQ(c.aval().str(), "f32[2,2]");
  EXPECT_EQ(vals(c), exact);
  EXPECT_EQ(vals(mj::dot(a16(), a16(), {.preferred_element_type = mj::f32})), exact);
  EXPECT_EQ(vals(lax::dot_general(a16(), a16(), {{1}, {0}, {}, {}}, {.preferred_element_type = mj::f32})), exact);
  auto jf = mj::jit([](const Array& x, const Array& y) { return mj::matmul(x, y, {.preferred_element_type = mj::f32}); });
  Array cj = jf(a16(), a16());
  EXPECT_EQ(cj.dtype(), mj::f32);
  EXPECT_EQ(vals(cj), exact);
  // The compiled program converts the operands (XLA's operand upcasting) and runs an f32 GEMM;
  // its output buffer is f32: 4 elements x 4 bytes.
  auto compiled = jf.lower(a16(), a16()).compile();
  EXPECT_EQ(compiled.memory_analysis().output_size_in_bytes, 16);
  // i32 operands with a float output (JAX's integer -> floating case); f32 -> f64 accumulates in
  // f64 (1e8 + 1 - 1e8 = 1 exactly, which f32 cannot hold); f32 -> bf16 rounds the f32 product.
  Array ai = mj::array({1, 2, 3, 4}, {2, 2}, mj::i32);
  Array ci = mj::matmul(ai, ai, {.preferred_element_type = mj::f32});
  EXPECT_EQ(ci.dtype(), mj::f32);
  EXPECT_EQ(vals(ci), (std::vector<double>{7, 10, 15, 22}));
  Array big = mj::array({1e8f, 1, -1e8f});
  Array c64 = mj::dot(big, mj::ones({3}), {.preferred_element_type = mj::f64});
  EXPECT_EQ(c64.dtype(), mj::f64);
  EXPECT_EQ(c64.item<double>(), 1.0);
  EXPECT_EQ(vals(mj::jit([](const Array& x) { return mj::dot(x, mj::ones({3}), {.preferred_element_type = mj::f64}); })(big)),
            (std::vector<double>{1.0}));
  Array f = mj::array({{16.f, 1.f}, {1.f, 1.f}});
  Array cb = mj::matmul(f, f, {.preferred_element_type = mj::bf16});
  EXPECT_EQ(cb.dtype(), mj::bf16);
  EXPECT_EQ(vals(cb), (std::vector<double>{256, 17, 17, 2}));
  // A scalar operand multiplies, in the output dtype.
  EXPECT_EQ(mj::dot(mj::scalar(3, mj::i32), ai, {.preferred_element_type = mj::f32}).aval().str(), "f32[2,2]");
}

// precision is kept in the params, printed as JAX prints the canonical pair and parsed back; its
// string and pair spellings canonicalize as canonicalize_precision; the default prints as before.
TEST(DotOptions, PrecisionPrintsParsesAndChangesNoValue) {
  Array x = mj::reshape(mj::arange(0, 6, 1, mj::f32), {2, 3});
  Array y = mj::reshape(mj::arange(0, 12, 1, mj::f32), {3, 4});
  const std::vector<double> want = vals(mj::matmul(x, y));
  for (lax::DotPrecision p : {lax::DotPrecision(Precision::HIGHEST), lax::DotPrecision("float32"),
                              lax::DotPrecision("bfloat16"), lax::DotPrecision(Precision::HIGH, Precision::DEFAULT)})
    EXPECT_EQ(vals(mj::matmul(x, y, {.precision = p})), want);  // on the CPU every precision is full f32
  auto text = [&](const lax::DotOptions& o) {
    return mj::to_string(mj::make_jaxpr([&](const Array& a, const Array& b) { return mj::matmul(a, b, o); })(x, y));
  };
  const std::string highest = text({.precision = "highest"});
  EXPECT_TRUE(contains(highest, "precision=(Precision.HIGHEST, Precision.HIGHEST)")) << highest;
  EXPECT_TRUE(contains(text({.precision = {"tensorfloat32", "fastest"}}), "precision=(Precision.HIGH, Precision.DEFAULT)"));
  const std::string plain = text({});
  EXPECT_EQ(plain, mj::to_string(mj::make_jaxpr([](const Array& a, const Array& b) { return mj::matmul(a, b); })(x, y)));
  EXPECT_TRUE(contains(plain, "precision=None")) << plain;
  EXPECT_TRUE(contains(plain, "preferred_element_type=float32")) << plain;
  // Parsed back to the same program (the precision an object again, not raw text).
  mj::ClosedJaxpr parsed = mj::parse_jaxpr(highest);
  EXPECT_EQ(mj::to_string(parsed), highest);
  const mj::Params& params = parsed.jaxpr->eqns.at(0).params;
  ASSERT_TRUE(lax::dot_precision(params).has_value());
  EXPECT_EQ(lax::dot_precision(params)->first, Precision::HIGHEST);
  EXPECT_EQ(vals(mj::eval_jaxpr(parsed, {x, y}).at(0)), want);
  EXPECT_THROW(mj::parse_jaxpr(
                   "{ lambda ; a:f32[2,3] b:f32[3,4]. let c:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), "
                   "([], [])) precision=(Precision.ULTRA, Precision.HIGH) preferred_element_type=float32] a b in (c,) }"),
               mj::Error);
}

// Bad input: a preferred_element_type JAX refuses (float operands -> integer output, bool), an
// unknown precision string; each names the function, the dtypes or string, and the call site.
TEST(DotOptions, BadOptionsNameTheFunctionAndTheValues) {
  Array x = mj::ones({2, 2});
  int line = __LINE__ + 1;
  expect_error<mj::TypeError>([&] { mj::matmul(x, x, {.preferred_element_type = mj::i32}); }, line,
                              {"dot_general", "preferred_element_type i32", "f32"});
  line = __LINE__ + 1;
  expect_error<mj::TypeError>([&] { mj::dot(x, x, {.preferred_element_type = mj::bool_}); }, line,
                              {"dot_general", "preferred_element_type bool", "f32"});
  line = __LINE__ + 1;
  expect_error<mj::TypeError>([&] { mj::dot(mj::scalar(2.0, mj::f32), x, {.preferred_element_type = mj::i32}); },
                              line, {"dot(", "preferred_element_type i32", "f32"});
  line = __LINE__ + 1;
  expect_error<mj::ValueError>([&] { lax::dot_general(x, x, {{1}, {0}, {}, {}}, {.precision = "ultra"}); },
                               line, {"dot_general", "precision 'ultra'", "highest"});
  line = __LINE__ + 1;
  expect_error<mj::ValueError>([&] { mj::matmul(x, x, {.precision = {"high", "bf16"}}); }, line,
                               {"precision 'bf16'"});
}

// Every rule keeps the output dtype and the precision: the JVP's tangent is f32, the transposes
// give bf16 cotangents (JAX converts x_bar to x's dtype) with the closed-form values
// (d/dA sum(A @ B) = row sums of B, d/dB = column sums of A), the transposed dot_generals carry
// the precision, vmap and a sharded jit return f32 with the eager values.
TEST(DotOptions, RulesKeepPrecisionAndOutputDtype) {
  const lax::DotOptions o{.precision = Precision::HIGHEST, .preferred_element_type = mj::f32};
  auto f = [o](const Array& a, const Array& b) { return mj::sum(mj::matmul(a, b, o)); };
  auto [ga, gb] = mj::grad(f, mj::argnums<0, 1>)(a16(), a16());
  EXPECT_EQ(ga.dtype(), mj::bf16);
  EXPECT_EQ(vals(ga), (std::vector<double>{17, 2, 17, 2}));  // row sums of B: [17, 2]
  EXPECT_EQ(vals(gb), (std::vector<double>{17, 17, 2, 2}));  // column sums of A: [17, 2]
  const std::string lin = mj::to_string(mj::make_jaxpr(mj::grad(f, mj::argnums<0, 1>))(a16(), a16()));
  size_t n = 0;
  for (size_t at = lin.find("precision=(Precision.HIGHEST, Precision.HIGHEST)"); at != std::string::npos;
       at = lin.find("precision=(Precision.HIGHEST, Precision.HIGHEST)", at + 1))
    ++n;
  EXPECT_EQ(n, 3u) << lin;  // the forward product and both transposes
  auto [out, tan] = mj::jvp([o](const Array& a) { return mj::matmul(a, a16(), o); }, a16(), a16());
  EXPECT_EQ(out.dtype(), mj::f32);
  EXPECT_EQ(tan.dtype(), mj::f32);
  EXPECT_EQ(vals(tan), (std::vector<double>{257, 17, 17, 2}));
  auto [ja, jb] = mj::jit(mj::grad(f, mj::argnums<0, 1>))(a16(), a16());
  EXPECT_EQ(vals(ja), vals(ga));
  EXPECT_EQ(vals(jb), vals(gb));
  Array batch = mj::stack({a16(), a16(), a16()});
  Array vm = mj::vmap([o](const Array& a, const Array& b) { return mj::matmul(a, b, o); })(batch, batch);
  EXPECT_EQ(vm.aval().str(), "f32[3,2,2]");
  for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(vals(vm[k]), (std::vector<double>{257, 17, 17, 2}));
  mj::Mesh mesh = mj::make_mesh({2}, {"x"});
  auto sharded = mj::jit([o](const Array& a, const Array& b) { return mj::matmul(a, b, o); },
                         {.in_shardings = {mj::NamedSharding(mesh, mj::P("x")), mj::NamedSharding(mesh, mj::P())}});
  Array s = sharded(a16(), a16());
  EXPECT_EQ(s.dtype(), mj::f32);
  EXPECT_EQ(vals(s), (std::vector<double>{257, 17, 17, 2}));
}
