// minijax tests (core): the inputs the parser's fuzzer found (tests/fuzz/corpus/parser/regression-*).
// Owns one case per finding: text that escaped parse_jaxpr or verify_jaxpr untyped (or was UB) is a typed mj:: error now.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

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
  // The largest int64 still parses.
  EXPECT_NO_THROW(mj::parse_jaxpr("{ lambda ; a:f32[9223372036854775807]. let  in (a,) }"));
}

// An equation of a one-operand primitive with no operand parses (the parser does not know
// arities); verify_jaxpr's shape rule then read in[0] of an empty vector (UBSan: reference
// binding to null). Each shape primitive now says how many operands it takes (verify_jaxpr
// reports it as its own typed error, naming the equation).
TEST(ParserFuzzRegression, ShapePrimitivesWithoutTheirOperandAreTypedErrors) {
  const mj::ClosedJaxpr j = mj::parse_jaxpr(corpus_file("regression-transpose-without-operand.jaxpr"));
  try {
    mj::verify_jaxpr(j);
    ADD_FAILURE() << "verify_jaxpr accepted a transpose without an operand";
  } catch (const mj::Error& e) {
    EXPECT_NE(std::string(e.what()).find("transpose takes one operand, got 0"), std::string::npos) << e.what();
  }
  for (const char* eqn : {"reshape[dimensions=None new_sizes=(6,)]", "squeeze[dimensions=(0,)]",
                          "expand_dims[dimensions=(0,)]", "rev[dimensions=(0,)]"}) {
    const mj::ClosedJaxpr k =
        mj::parse_jaxpr(std::string("{ lambda ; a:f32[1,6]. let b:f32[6] = ") + eqn + " a a in (b,) }");
    EXPECT_THROW(mj::verify_jaxpr(k), mj::Error) << eqn;
  }
}

}  // namespace
