// minijax tests (core): the inputs the parser's fuzzer found (tests/fuzz/corpus/parser/regression-*).
// Owns one case per finding: text that escaped parse_jaxpr or verify_jaxpr untyped (or was UB) is a typed mj:: error now.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <source_location>
#include <string>
#include <typeinfo>
#include <vector>

#include <minijax/minijax.h>

namespace {

std::string corpus_file(const std::string& name) {
  const std::string path = std::string(MINIJAX_SOURCE_DIR) + "/tests/fuzz/corpus/parser/" + name;
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f) << path;
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Runs parse_jaxpr(text), expecting mj::ValueError whose message holds `part`.
void expect_parse_error(const std::string& text, const std::string& part) {
  try {
    mj::parse_jaxpr(text);
    ADD_FAILURE() << "parsed without an error: " << text;
  } catch (const mj::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// A dimension, an integer parameter or an integer in a tuple parameter beyond int64: std::stoll
// threw std::out_of_range (not an mj:: error) out of parse_jaxpr.
TEST(ParserFuzzRegression, IntegersBeyondInt64AreValueErrors) {
  const std::string found = corpus_file("regression-int64-overflow-dim.jaxpr");
  expect_parse_error(found, "line 1, column 18: integer 211111111111111111111111... is out of the range of int64");
  expect_parse_error("{ lambda ; a:f32[9223372036854775808]. let  in (a,) }",
                     "integer 9223372036854775808 is out of the range of int64");
  expect_parse_error("{ lambda ; a:f32[6]. let b:f32[6] = integer_pow[y=99999999999999999999] a in (b,) }",
                     "integer 99999999999999999999 is out of the range of int64");
  expect_parse_error("{ lambda ; a:f32[6]. let b:f32[2,3] = reshape[dimensions=None new_sizes=(2, 99999999999999999999)] a in (b,) }",
                     "integer 99999999999999999999 is out of the range of int64");
  // The largest int64 still parses as a dimension (of a one-byte dtype: an f32 aval of that many
  // elements is refused, its bytes being beyond int64).
  EXPECT_NO_THROW(mj::parse_jaxpr("{ lambda ; a:bool[9223372036854775807]. let  in (a,) }"));
  expect_parse_error("{ lambda ; a:f32[9223372036854775807]. let  in (a,) }", "the aval's size overflows int64 bytes");
  expect_parse_error("{ lambda ; a:f32[4294967296,4294967296,4294967296]. let  in (a,) }",
                     "the aval's size overflows int64 bytes");
}

// An equation of a one-operand primitive with no operand parses (the parser does not know
// arities); verify_jaxpr's shape rule then read in[0] of an empty vector (UBSan: reference
// binding to null). Each shape primitive now says how many operands it takes (verify_jaxpr
// reports it as its own typed error, naming the equation).
TEST(ParserFuzzRegression, ShapePrimitivesWithoutTheirOperandAreTypedErrors) {
  const mj::ClosedJaxpr j = mj::detail::parse_jaxpr_unchecked(corpus_file("regression-transpose-without-operand.jaxpr"));
  try {
    mj::verify_jaxpr(j);
    ADD_FAILURE() << "verify_jaxpr accepted a transpose without an operand";
  } catch (const mj::Error& e) {
    EXPECT_NE(std::string(e.what()).find("transpose takes one operand, got 0"), std::string::npos) << e.what();
  }
  for (const char* eqn : {"reshape[dimensions=None new_sizes=(6,)]", "squeeze[dimensions=(0,)]",
                          "expand_dims[dimensions=(0,)]", "rev[dimensions=(0,)]"}) {
    const mj::ClosedJaxpr k =
        mj::detail::parse_jaxpr_unchecked(std::string("{ lambda ; a:f32[1,6]. let b:f32[6] = ") + eqn + " a a in (b,) }");
    EXPECT_THROW(mj::verify_jaxpr(k), mj::Error) << eqn;
  }
}

}  // namespace

// The open finding generalised (tests/fuzz/corpus/parser/regression-dot-general-one-operand.jaxpr):
// a parsed equation can give any primitive any number of operands, so every registered
// primitive's shape rule, called through abstract_eval with 0 to 4 operands of f32[2,3] and no
// params, either returns or throws a typed mj:: error naming the primitive; never an untyped
// exception and never a read past the operands (which this test would see as a crash, and
// tools/sanitize.sh as a report).
TEST(ParserFuzzRegressions, EveryShapeRuleRejectsAnyOperandCountWithATypedError) {
  const mj::ShapedArray f32{{2, 3}, mj::DType::f32, false, mj::MemoryKind::device};
  int calls = 0;
  for (const std::string& name : mj::primitive_names()) {
    const mj::Primitive& p = mj::primitive(name);
    if (!p.shape_rule) continue;
    for (size_t n = 0; n <= 4; ++n) {
      std::vector<mj::ShapedArray> in(n, f32);
      ++calls;
      try {
        (void)mj::abstract_eval(p, in, mj::Params{}, std::source_location::current());
      } catch (const mj::Error& e) {
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << name << " with " << n << ": " << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << name << " with " << n << " operands threw an untyped " << typeid(e).name() << ": "
                      << e.what();
      }
    }
  }
  EXPECT_GT(calls, 400);  // ~90 primitives x 5 operand counts
}

// The finding itself: a mangled equation left dot_general one operand; its shape rule read the
// second with .at(1) and std::out_of_range escaped verify_jaxpr untyped. Now a ValueError naming
// dot_general and the operand count (abstract_eval, core/primitive.cc).
TEST(ParserFuzzRegressions, DotGeneralWithOneOperandIsAValueErrorNamingIt) {
  const mj::ClosedJaxpr j = mj::detail::parse_jaxpr_unchecked(
      "{ lambda ; a:f32[5,2,3]. let b:f32[5,2,3] = dot_general[dimension_numbers=(([2], [1]), ([0], [0])) "
      "precision=None preferred_element_type=float32] a in (b,) }");
  try {
    mj::verify_jaxpr(j);
    ADD_FAILURE() << "verify_jaxpr accepted dot_general with one operand";
  } catch (const mj::Error& e) {
    EXPECT_NE(std::string(e.what()).find("dot_general"), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "untyped " << typeid(e).name() << ": " << e.what();
  }
  std::ifstream f(std::string(MINIJAX_SOURCE_DIR) + "/tests/fuzz/corpus/parser/regression-dot-general-one-operand.jaxpr");
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  try {  // the fuzzer's own steps (tests/fuzz/fuzz_parser.cc): each may reject, none may escape untyped
    const mj::ClosedJaxpr k = mj::detail::parse_jaxpr_unchecked(text);
    try { mj::verify_jaxpr(k); } catch (const mj::Error&) {}
    try { mj::parse_jaxpr(mj::to_string(k)); } catch (const mj::Error&) {}
  } catch (const mj::Error&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << "untyped " << typeid(e).name() << ": " << e.what();
  }
}

// A registered parameter reader (dot_general's dimension_numbers, pad's padding_config) read an
// integer beyond int64 with std::stoll: std::out_of_range escaped parse_jaxpr
// (tests/fuzz/corpus/parser/regression-dot-dimension-numbers-beyond-int64.jaxpr).
TEST(ParserFuzzRegressions, ParameterObjectsWithIntegersBeyondInt64AreValueErrors) {
  for (const char* text :
       {"{ lambda ; a:f32[2,3] b:f32[3,4]. let c:f32[2,4] = dot_general[dimension_numbers=(([100000000000000000000000], [0]), ([], [])) "
        "precision=None preferred_element_type=float32] a b in (c,) }",
        "{ lambda ; a:f32[3]. let b:f32[5] = pad[padding_config=((100000000000000000000000, 1, 0),)] a 0.0:f32[] in (b,) }"}) {
    try {
      (void)mj::parse_jaxpr(text);
      ADD_FAILURE() << "parsed: " << text;
    } catch (const mj::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("out of the range of int64"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "untyped " << typeid(e).name() << ": " << e.what();
    }
  }
}
