// Tests of sharded jaxpr text (sharding/parse_sharded.h): the `# mesh:`, `# in_shardings:` and
// `# out_shardings:` header, `sharding=` params read against its mesh, and the bad-input errors.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/views/memory_ops.h"
#include "sharding/parse_sharded.h"
#include "tests/sharding/spmd_helpers.h"

using minijax::Array;
using minijax::AxisRef;
using minijax::Sharding;
using minijax::ShardedJaxpr;
using minijax::testing::mesh42;
using minijax::testing::named;

namespace {

// The sharding object of a sharding_constraint equation's param.
const Sharding& constraint_sharding(const mj::Eqn& e) {
  return mj::sharding_of_param(mj::sharding_constraint_params(e).sharding);
}

// Runs `f`, which must throw E; every string of `parts` is in its message, and the error names
// this file (the test's call site).
template <class E, class F>
void expect_error(F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming " << ::testing::PrintToString(parts);
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
    EXPECT_NE(std::string(e.where().file_name()).find("test_parse_sharded.cc"), std::string::npos) << msg;
  }
}

const char* kBody = "{ lambda ; a:f32[8,4] b:f32[4]. let\n"
                    "    c:f32[8,4] = sharding_constraint[sharding=[{\"x\"}, {}]] a\n"
                    "    d:f32[4] = reduce_sum[axes=(0,)] c\n"
                    "    e:f32[4] = add d b\n"
                    "  in (e,) }";

}  // namespace

// A traced constraint prints, and its text under a `# mesh:` header parses back to the same
// text with the same Sharding (the param is a sharding object again, on an equal mesh).
TEST(ParseSharded, RoundTripsAPrintedConstraint) {
  auto m = mesh42();
  const Sharding s = named(m, mj::P("x", mj::None{}), 2);
  auto f = [&](Array x) { return mj::sin(mj::with_sharding_constraint(x, s)); };
  const std::string text = mj::to_string(mj::make_jaxpr(f)(minijax::testing::ramp({8, 2})));
  const ShardedJaxpr r = mj::parse_sharded_jaxpr("# mesh: x=4, y=2\n" + text);
  ASSERT_TRUE(r.mesh);
  EXPECT_EQ(*r.mesh, *m);
  EXPECT_EQ(mj::to_string(r.jaxpr), text);
  EXPECT_TRUE(constraint_sharding(r.jaxpr.jaxpr->eqns.at(0)) == s);
  // No in/out shardings given: one unconstrained entry per invar and outvar.
  EXPECT_EQ(r.in_shardings.size(), 1u);
  EXPECT_EQ(r.out_shardings.size(), 1u);
  EXPECT_FALSE(r.in_shardings[0] || r.out_shardings[0]);
}

// The mesh as `name=size` pairs, as Mesh::str() prints it, and with a device order in either
// spelling (Mesh::str()'s `devices=[...]`, JAX's nested `device_ids=[[...]]`).
TEST(ParseSharded, ReadsTheMeshForms) {
  const std::string body = "\n{ lambda ; a:f32[4]. let b:f32[4] = sin a in (b,) }";
  const mj::Mesh natural({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2}, {"data", "model"});
  const mj::Mesh permuted({0, 2, 4, 6, 1, 3, 5, 7}, {4, 2}, {"data", "model"});
  EXPECT_EQ(*mj::parse_sharded_jaxpr("# mesh: data=4, model=2" + body).mesh, natural);
  EXPECT_EQ(*mj::parse_sharded_jaxpr("# mesh: Mesh('data': 4, 'model': 2)" + body).mesh, natural);
  EXPECT_EQ(*mj::parse_sharded_jaxpr("# mesh: " + permuted.str() + body).mesh, permuted);
  EXPECT_EQ(*mj::parse_sharded_jaxpr("# mesh: data=4, model=2, devices=[0, 2, 4, 6, 1, 3, 5, 7]" + body).mesh,
            permuted);
  EXPECT_EQ(*mj::parse_sharded_jaxpr("#mesh: data=4, model=2, device_ids=[[0, 2], [4, 6], [1, 3], [5, 7]]" + body).mesh,
            permuted);
  // Fewer devices than the process's 8: the first ones, as make_mesh.
  EXPECT_EQ(*mj::parse_sharded_jaxpr("# mesh: data=2" + body).mesh, mj::Mesh({0, 1}, {2}, {"data"}));
  // A comment that is no header, before or after the header lines, is ignored.
  EXPECT_FALSE(mj::parse_sharded_jaxpr("# a case\n{ lambda ; a:f32[4]. let b:f32[4] = sin a in (b,) }").mesh);
}

// in_shardings and out_shardings: one entry per invar / outvar in Sharding::str()'s form (open
// dims, priorities, sub-axes, replicated= and the other trailing fields) or None.
TEST(ParseSharded, ReadsInAndOutShardings) {
  const ShardedJaxpr r = mj::parse_sharded_jaxpr(
      "# a constraint and both headers\n"
      "# mesh: x=4, y=2\n"
      "# in_shardings: [{\"x\":(1)2, ?}p1, {}], replicated={\"y\"}, None\n"
      "# out_shardings: [{\"y\", \"x\"}]\n" +
      std::string(kBody));
  auto m = mesh42();
  ASSERT_EQ(r.in_shardings.size(), 2u);
  ASSERT_TRUE(r.in_shardings[0]);
  EXPECT_FALSE(r.in_shardings[1]);
  const Sharding& a = *r.in_shardings[0];
  EXPECT_EQ(a.dims.at(0).axes, (std::vector<AxisRef>{AxisRef::sub("x", 1, 2)}));
  EXPECT_FALSE(a.dims[0].closed);
  EXPECT_EQ(a.dims[0].priority, 1);
  EXPECT_TRUE(a.dims[1].closed && a.dims[1].axes.empty());
  EXPECT_EQ(a.replicated, (std::vector<AxisRef>{AxisRef::axis("y")}));
  EXPECT_EQ(a.str(), "[{\"x\":(1)2, ?}p1, {}], replicated={\"y\"}");
  ASSERT_EQ(r.out_shardings.size(), 1u);
  EXPECT_TRUE(*r.out_shardings[0] == named(m, mj::P({"y", "x"}), 1));
  EXPECT_TRUE(constraint_sharding(r.jaxpr.jaxpr->eqns.at(0)) == named(m, mj::P("x", mj::None{}), 2));
}

// A constraint's sharding with trailing fields (`, memory_kind=pinned_host`, `, unreduced=`)
// reads back whole, and prints as it was written.
TEST(ParseSharded, ConstraintWithTrailingFieldsRoundTrips) {
  const std::string text =
      "{ lambda ; a:f32[8,4]. let\n"
      "    b:f32<pinned_host>[8,4] = sharding_constraint[\n"
      "      sharding=[{\"x\"}, {}], replicated={\"y\"}, memory_kind=pinned_host\n"
      "    ] a\n"
      "  in (b,) }";
  const ShardedJaxpr r = mj::parse_sharded_jaxpr("# mesh: x=4, y=2\n" + text);
  const Sharding& s = constraint_sharding(r.jaxpr.jaxpr->eqns.at(0));
  EXPECT_EQ(s.memory_kind, mj::MemoryKind::pinned_host);
  EXPECT_EQ(s.replicated, (std::vector<AxisRef>{AxisRef::axis("y")}));
  EXPECT_EQ(mj::to_string(r.jaxpr), text);
}

// parse_sharding alone: Sharding::str()'s form back; an axis the mesh lacks or bad syntax is a
// ValueError naming the text.
TEST(ParseSharded, ParseShardingReadsWhatStrPrints) {
  auto m = mesh42();
  Sharding s = named(m, mj::P(mj::None{}, {"y", "x"}), 2);
  s.dims[0].closed = false;
  EXPECT_TRUE(mj::parse_sharding(s.str(), m) == s) << s.str();
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharding("[{\"z\"}]", m); },
                               {"parse_sharding", "[{\"z\"}]", "axis 'z'", "Mesh('x': 4, 'y': 2)"});
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharding("[{\"x\"}, {}] junk", m); },
                               {"parse_sharding", "unexpected text"});
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharding("[{\"x\"}", m); }, {"parse_sharding", "expected ']'"});
}

// A header that does not parse is a ValueError naming its line (number and text).
TEST(ParseSharded, BadHeadersNameTheirLine) {
  const std::string body = std::string("\n") + kBody;
  // An axis the mesh lacks, in a sharding of the header.
  expect_error<mj::ValueError>(
      [&] { (void)mj::parse_sharded_jaxpr("# mesh: x=4, y=2\n# in_shardings: [{\"z\"}, {}], None" + body); },
      {"line 2", "# in_shardings: [{\"z\"}, {}], None", "axis 'z'"});
  // A size that does not divide the device count: the process's 8, or the listed devices'.
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharded_jaxpr("# mesh: x=3" + body); },
                               {"line 1", "# mesh: x=3", "size 3", "does not divide the device count 8"});
  expect_error<mj::ValueError>(
      [&] { (void)mj::parse_sharded_jaxpr("# case\n# mesh: x=4, devices=[0, 1, 2, 3, 4, 5]" + body); },
      {"line 2", "size 4", "does not divide the device count 6"});
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharded_jaxpr("# mesh: x=4, y=4" + body); },
                               {"line 1", "needs 16 devices"});
  // A repeated or negative device.
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharded_jaxpr("# mesh: x=4, devices=[0, 1, 1, 2]" + body); },
                               {"line 1", "device 1 appears twice"});
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharded_jaxpr("# mesh: x=2, devices=[0, -1]" + body); },
                               {"line 1", "negative"});
  // Syntax, sizes, names.
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharded_jaxpr("# mesh: x=four" + body); },
                               {"line 1", "expected an integer"});
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharded_jaxpr("# mesh: x=0" + body); }, {"line 1", ">= 1"});
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharded_jaxpr("# mesh: x=2, x=2" + body); },
                               {"line 1", "axis name 'x' appears twice"});
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharded_jaxpr("# mesh: x=4\n# mesh: x=2" + body); },
                               {"line 2", "a second `# mesh:` line"});
  // Shardings without a mesh, a wrong number of entries, a sharding that does not fit its invar.
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharded_jaxpr("# in_shardings: None, None" + body); },
                               {"line 1", "without a `# mesh:` line"});
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharded_jaxpr("# mesh: x=4, y=2\n# out_shardings: None, None" + body); },
                               {"line 2", "2 entries", "1 outvars"});
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharded_jaxpr("# mesh: x=4, y=2\n# in_shardings: [{\"x\"}], None" + body); },
                               {"line 2", "entry 0", "rank 2"});
}

// A `sharding=` param naming an axis the mesh lacks is a ValueError naming the param and its
// line; without a `# mesh:` header a printed sharding is refused as parse_jaxpr refuses it.
TEST(ParseSharded, BadShardingParamsAndUnshardedText) {
  const std::string bad = "# the case\n# mesh: x=4, y=2\n"
                          "{ lambda ; a:f32[8,4]. let\n"
                          "    b:f32[8,4] = sharding_constraint[sharding=[{\"model\"}, {}]] a\n"
                          "  in (b,) }";
  expect_error<mj::ValueError>([&] { (void)mj::parse_sharded_jaxpr(bad); },
                               {"line 4", "parameter 'sharding'", "axis 'model'", "Mesh('x': 4, 'y': 2)"});
  std::string expected;
  try {
    (void)mj::parse_jaxpr(kBody);
  } catch (const mj::ShapeError& e) {
    expected = e.message();
  }
  ASSERT_FALSE(expected.empty()) << "parse_jaxpr accepted a printed sharding";
  expect_error<mj::ShapeError>([&] { (void)mj::parse_sharded_jaxpr(std::string("# no header\n") + kBody); },
                               {expected});
  // A syntax error in the jaxpr names the text's own line, comment lines counted.
  expect_error<mj::ValueError>(
      [&] { (void)mj::parse_sharded_jaxpr("# mesh: x=4, y=2\n# more\n{ lambda ; a:f32[8]. let b:f32[8] = nosuch a in (b,) }"); },
      {"parse_jaxpr: line 3", "unknown primitive 'nosuch'"});
  // Every equation is still type-checked: a declared type the constraint does not give is refused.
  expect_error<mj::Error>(
      [&] {
        (void)mj::parse_sharded_jaxpr("# mesh: x=4, y=2\n{ lambda ; a:f32[8,4]. let "
                                      "b:f32[1048576] = sharding_constraint[sharding=[{\"x\"}, {}]] a in (b,) }");
      },
      {"sharding_constraint"});
}
