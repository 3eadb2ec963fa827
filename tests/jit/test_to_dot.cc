// Tests of mj::to_dot (core/to_dot.h, sharding/sharding_dot.h, jit/jit.h): the DOT text of known
// programs, and Graphviz's `dot -Tsvg` (Debian's graphviz) rendering it without a warning.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include <minijax/minijax.h>

using mj::Array;

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

/// Renders `dot` with `dot -Tsvg`; expects exit status 0 and nothing on stderr; returns the SVG.
std::string render_svg(const std::string& dot, const std::string& stem) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("minijax_to_dot_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto in = dir / (stem + ".dot"), out = dir / (stem + ".svg"), err = dir / (stem + ".err");
  std::ofstream(in) << dot;
  const std::string cmd = "dot -Tsvg '" + in.string() + "' -o '" + out.string() + "' 2> '" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(status, 0) << cmd << " (Graphviz's dot is Debian's graphviz, installed by setup.sh)\n"
                       << read_file(err) << "\n" << dot;
  EXPECT_EQ(read_file(err), "") << dot;  // no warning: valid DOT, every lhead a real cluster
  std::string svg = read_file(out);
  std::filesystem::remove_all(dir);
  return svg;
}

}  // namespace

TEST(DotGraph, QuotesEveryStringForDot) {
  EXPECT_EQ(mj::dot_quote("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
  EXPECT_EQ(mj::dot_quote(""), "\"\"");
}

// sin(x) * 2: two equation boxes, the input, one output; edges labelled name: type.
TEST(DotGraph, EquationsAreNodesAndVariablesAreTypedEdges) {
  auto j = mj::make_jaxpr([](const Array& x) { return mj::sin(x) * 2.0; })(mj::ones({2, 3}));
  const std::string dot = mj::to_dot(j, {.name = "small \"one\""});
  EXPECT_EQ(dot.rfind("digraph \"small \\\"one\\\"\" {", 0), 0u) << dot;
  EXPECT_EQ(count(dot, "shape=box"), 2u) << dot;
  EXPECT_NE(dot.find("[label=\"sin\", shape=box]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("[label=\"mul\\noperand 1 = 2.0:f32[]\", shape=box]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n0 -> n1 [label=\"a: f32[2,3]\"]"), std::string::npos) << dot;  // x -> sin
  EXPECT_NE(dot.find("n1 -> n2 [label=\"b: f32[2,3]\"]"), std::string::npos) << dot;  // sin -> mul
  EXPECT_NE(dot.find("n2 -> n3 [label=\"c: f32[2,3]\"]"), std::string::npos) << dot;  // mul -> out 0
  EXPECT_EQ(count(dot, " -> "), 3u) << dot;
  EXPECT_EQ(count(dot, "subgraph"), 0u);
  const std::string svg = render_svg(dot, "small");
  EXPECT_NE(svg.find(">sin</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">mul</text>"), std::string::npos) << svg;
}

// The README's remat example: grad of a scan whose body is a checkpoint offloading a named value
// to pinned_host. Bodies are clusters (nested), and the host stack's memory kind is on its edges.
TEST(DotGraph, ScanOfOffloadedCheckpointShowsClustersAndMemoryKinds) {
  namespace cp = mj::checkpoint_policies;
  auto step = [](const Array& y, const Array&) {
    Array h = mj::checkpoint_name(mj::sin(y), "save_remat");
    return std::pair{mj::sin(h), mj::None{}};
  };
  auto step_r = mj::checkpoint(step, {.policy = cp::save_and_offload_only_these_names(
                                          {}, {"save_remat"}, "device", "pinned_host")});
  auto loss = [&](const Array& p) { return mj::sum(mj::scan(step_r, p, mj::ones({2, 3})).first); };
  auto fwd = mj::make_jaxpr(loss)(mj::ones({3}));
  const std::string fdot = mj::to_dot(fwd);
  // The forward program: a scan whose body holds the checkpoint, whose body holds the name.
  EXPECT_NE(fdot.find("label=\"scan: jaxpr\""), std::string::npos) << fdot;
  EXPECT_NE(fdot.find("label=\"checkpoint: jaxpr\""), std::string::npos) << fdot;
  EXPECT_NE(fdot.find("policy="), std::string::npos) << fdot;
  EXPECT_LT(fdot.find("label=\"scan: jaxpr\""), fdot.find("label=\"checkpoint: jaxpr\""));
  EXPECT_NE(fdot.find("    subgraph cluster_1 {"), std::string::npos) << fdot;  // nested one deeper
  EXPECT_EQ(count(fdot, "lhead=cluster_"), 2u) << fdot;

  auto bwd = mj::make_jaxpr(mj::grad(loss))(mj::ones({3}));
  const std::string bdot = mj::to_dot(bwd);
  EXPECT_NE(bdot.find("f32<pinned_host>[2,3]"), std::string::npos) << bdot;  // the stacked residual
  EXPECT_NE(bdot.find("device_put"), std::string::npos) << bdot;
  EXPECT_GE(count(bdot, "label=\"scan: jaxpr\""), 2u) << bdot;  // forward and backward loops
  const std::string svg = render_svg(bdot, "offload");
  EXPECT_NE(svg.find(">scan</text>"), std::string::npos);
  EXPECT_NE(svg.find("pinned_host"), std::string::npos);
  EXPECT_NE(svg.find("class=\"cluster\""), std::string::npos);
  const std::string fsvg = render_svg(fdot, "forward");
  EXPECT_NE(fsvg.find(">checkpoint</text>"), std::string::npos);
  EXPECT_NE(fsvg.find(">name</text>"), std::string::npos);
}

// A sharded jit: propagated shardings label the edges (inside a nested jit's body too), the
// constraint's sharding its node, and a jit name with quotes still renders.
TEST(DotGraph, ShardedProgramShowsPropagatedShardingsAndConstraints) {
  mj::Mesh mesh = mj::make_mesh({4, 2}, {"data", "model"});
  auto act = mj::jit([](const Array& h) { return mj::tanh(h); }, mj::JitOptions{.name = "act \"q\""});
  auto f = mj::jit(
      [&](const Array& x, const Array& w) {
        return act(mj::with_sharding_constraint(mj::matmul(x, w), mj::NamedSharding(mesh, mj::P("data", "model"))));
      },
      mj::JitOptions{.in_shardings = {mj::NamedSharding(mesh, mj::P("data")), mj::NamedSharding(mesh, mj::P())}});
  auto lowered = f.lower(mj::ShapeDtypeStruct{{8, 4}, mj::f32}, mj::ShapeDtypeStruct{{4, 6}, mj::f32});
  const std::string dot = mj::to_dot(lowered);
  EXPECT_NE(dot.find("sharding_constraint"), std::string::npos) << dot;
  EXPECT_NE(dot.find("sharding="), std::string::npos) << dot;
  // x's edges: its type, then its propagated sharding.
  EXPECT_NE(dot.find("a: f32[8,4]\\n[{\\\"data\\\"}, {}]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("[{\\\"data\\\"}, {\\\"model\\\"}]"), std::string::npos) << dot;  // the constraint's
  EXPECT_NE(dot.find("name=act \\\"q\\\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"pjit: jaxpr\""), std::string::npos) << dot;
  const std::string svg = render_svg(dot, "sharded");
  EXPECT_NE(svg.find(">sharding_constraint</text>"), std::string::npos);
  EXPECT_NE(svg.find(">tanh</text>"), std::string::npos);
  EXPECT_NE(svg.find("&quot;data&quot;"), std::string::npos);
  // Unsharded, the same program has no sharding line.
  auto plain = mj::jit([](const Array& x) { return mj::tanh(x); }).lower(mj::ShapeDtypeStruct{{8}, mj::f32});
  const std::string pdot = mj::to_dot(plain);
  EXPECT_EQ(pdot.find("{\\\""), std::string::npos) << pdot;
  EXPECT_NE(pdot.find("a: f32[8]\"]"), std::string::npos) << pdot;
}
