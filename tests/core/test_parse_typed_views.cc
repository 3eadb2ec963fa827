// minijax parser and typed views: a parsed equation whose params do not fit its primitive's typed
// view (core/views/) is a ValueError naming the primitive, the param and the line of the text.
#include <gtest/gtest.h>

#include <string>

#include "core/errors.h"
#include "core/parser.h"

namespace {

// The message parse_jaxpr throws for `text`, or "" when it parses.
std::string parse_error(const std::string& text) {
  try {
    (void)minijax::parse_jaxpr(text);
  } catch (const minijax::ValueError& e) {
    return e.message();
  }
  return "";
}

void expect_names(const std::string& msg, const std::string& prim, const std::string& param, int line) {
  EXPECT_NE(msg.find("line " + std::to_string(line) + ","), std::string::npos) << msg;
  EXPECT_NE(msg.find(prim + ":"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'" + param + "'"), std::string::npos) << msg;
}

TEST(ParseTypedViews, AMissingParamNamesThePrimitiveTheParamAndTheLine) {
  // reduce_sum without its axes, on line 3.
  const std::string text =
      "{ lambda ; a:f32[3]. let\n"
      "    b:f32[3] = neg a\n"
      "    c:f32[] = reduce_sum b\n"
      "  in (c,) }";
  expect_names(parse_error(text), "reduce_sum", "axes", 3);
}

TEST(ParseTypedViews, AParamOfAnotherTypeNamesThePrimitiveTheParamAndTheLine) {
  // transpose's permutation as an int instead of a tuple, on line 2.
  const std::string text =
      "{ lambda ; a:f32[2,3]. let\n"
      "    b:f32[3,2] = transpose[permutation=1] a\n"
      "  in (b,) }";
  const std::string msg = parse_error(text);
  expect_names(msg, "transpose", "permutation", 2);
  EXPECT_NE(msg.find("not of type"), std::string::npos) << msg;
}

TEST(ParseTypedViews, ALoopWithoutItsCarryCountIsRefused) {
  // scan without num_carry, on line 2 (its body on the same line).
  const std::string text =
      "{ lambda ; a:f32[]. let\n"
      "    b:f32[] = scan[jaxpr={ lambda ; c:f32[]. let d:f32[] = neg c in (d,) } length=2 linear=(0,) "
      "num_consts=0 reverse=False unroll=1 _split_transpose=False] a\n"
      "  in (b,) }";
  expect_names(parse_error(text), "scan", "num_carry", 2);
}

TEST(ParseTypedViews, AParamTheViewDoesNotKnowIsRefused) {
  // reduce_sum with a misspelt key beside its axes, on line 2: the next pass that rebuilds the
  // equation from its view would drop it, so the parser refuses it.
  const std::string text =
      "{ lambda ; a:f32[3]. let\n"
      "    b:f32[] = reduce_sum[axes=(0,) axis=0] a\n"
      "  in (b,) }";
  const std::string msg = parse_error(text);
  expect_names(msg, "reduce_sum", "axis", 2);
  EXPECT_NE(msg.find("unexpected parameter"), std::string::npos) << msg;
  // The same for a collective and a memory primitive.
  expect_names(parse_error("{ lambda ; a:f32[3]. let\n"
                           "    b:f32[3] = all_reduce[axis_name=('x',) axis_size=2 reduction=sum extra=1] a\n"
                           "  in (b,) }"),
               "all_reduce", "extra", 2);
  expect_names(parse_error("{ lambda ; a:f32[3]. let\n"
                           "    b:f32[3] = optimization_barrier[extra=1] a\n"
                           "  in (b,) }"),
               "optimization_barrier", "extra", 2);
}

TEST(ParseTypedViews, ACallKeepsTheParamsItDoesNotType) {
  // pjit's view types name and jaxpr and keeps JAX's other params (keep_unused here) as they are:
  // the text parses and prints back with them.
  const std::string text =
      "{ lambda ; a:f32[3]. let\n"
      "    b:f32[3] = pjit[\n"
      "      name=inner\n"
      "      jaxpr={ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }\n"
      "      keep_unused=False\n"
      "    ] a\n"
      "  in (b,) }";
  EXPECT_EQ(parse_error(text), "");
  const std::string back = minijax::to_string(minijax::parse_jaxpr(text));
  EXPECT_NE(back.find("keep_unused=False"), std::string::npos) << back;
}

TEST(ParseTypedViews, WellFormedParamsStillParse) {
  // The control: the same programs with their params complete parse.
  EXPECT_EQ(parse_error("{ lambda ; a:f32[3]. let b:f32[] = reduce_sum[axes=(0,)] a in (b,) }"), "");
  EXPECT_EQ(parse_error("{ lambda ; a:f32[2,3]. let b:f32[3,2] = transpose[permutation=(1, 0)] a in (b,) }"), "");
}

}  // namespace
