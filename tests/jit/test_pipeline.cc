// minijax compile pipeline: the table of stages (jit/pipeline.cc) is what the docs list, the
// offload tunables come from CompileOptions and key the caches, and one stage runs alone by name.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/config.h"
#include "core/parser.h"
#include "jit/pipeline.h"

namespace {

using mj::Array;

std::string read_doc(const std::string& rel) {
  std::ifstream in(std::string(MINIJAX_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> table_names() {
  std::vector<std::string> names;
  for (const mj::Stage& s : mj::pipeline_stages()) names.push_back(s.name);
  return names;
}

// The backquoted identifiers of `text`, in order.
std::vector<std::string> quoted_names(const std::string& text) {
  std::vector<std::string> out;
  const std::regex name("`([a-z_0-9]+)`");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), name); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

// docs/compiler.md's section "## The pipeline" numbers the stages, one per item ("3. `fuse`: ...").
TEST(Pipeline, CompilerDocNumbersTheTableStagesInOrder) {
  const std::string doc = read_doc("docs/compiler.md");
  const size_t at = doc.find("\n## The pipeline");
  ASSERT_NE(at, std::string::npos) << "docs/compiler.md has no section '## The pipeline'";
  const size_t end = doc.find("\n## ", at + 1);
  std::istringstream section(doc.substr(at, end == std::string::npos ? std::string::npos : end - at));
  std::vector<std::string> listed;
  const std::regex item(R"(^\d+\. `([a-z_0-9]+)`)");
  for (std::string line; std::getline(section, line);) {
    std::smatch m;
    if (std::regex_search(line, m, item)) listed.push_back(m[1]);
  }
  EXPECT_EQ(listed, table_names());
}

// docs/profiler.md's `compile` row lists the stage events "in order: `dce`, ...; ".
TEST(Pipeline, ProfilerDocListsTheTableStagesAsEvents) {
  const std::string doc = read_doc("docs/profiler.md");
  const size_t row = doc.find("| `compile` |");
  ASSERT_NE(row, std::string::npos);
  const size_t from = doc.find("in order:", row);
  ASSERT_NE(from, std::string::npos) << "the compile row of docs/profiler.md says no 'in order:'";
  const size_t to = doc.find(';', from);
  EXPECT_EQ(quoted_names(doc.substr(from, to - from)), table_names());
}

// Each stage's name is unique, the phases come in order (lower, compile, codegen), and every
// stage that rewrites the program runs alone through run_stage except the sharded ones.
TEST(Pipeline, TheTableIsOrderedByPhaseWithUniqueNames) {
  const auto& stages = mj::pipeline_stages();
  std::set<std::string> seen;
  int phase = 0;
  for (const mj::Stage& s : stages) {
    EXPECT_TRUE(seen.insert(s.name).second) << s.name << " twice";
    EXPECT_GE(int(s.phase), phase) << s.name << " is out of its phase's place";
    phase = int(s.phase);
    EXPECT_EQ(mj::find_stage(s.name), &s);
  }
  EXPECT_EQ(mj::find_stage("schedule_offloads"), nullptr);
  const mj::Jaxpr j = *mj::parse_jaxpr("{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = cos a in (b,) }").jaxpr;
  EXPECT_EQ(mj::to_string(mj::run_stage("dce", j)), "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }");
  try {
    (void)mj::run_stage("no_such_stage", j);
    ADD_FAILURE() << "run_stage accepted an unknown stage";
  } catch (const mj::ValueError& e) {
    EXPECT_NE(e.message().find("no_such_stage"), std::string::npos) << e.message();
  }
  EXPECT_THROW((void)mj::run_stage("partition_spmd", j), mj::ValueError);  // needs a mesh
  EXPECT_THROW((void)mj::run_stage("plan_buffers", j), mj::ValueError);    // not a program
}

// grad(scan(checkpoint(step))) whose named residual goes to pinned_host, 8 iterations of 12-byte
// rows: coalesced into copies of k rows by default, one row per copy with coalescing off.
auto offloaded_loss() {
  namespace cp = mj::checkpoint_policies;
  auto policy = cp::save_and_offload_only_these_names({}, {"row"}, "device", "pinned_host");
  auto step = [](const Array& y, const Array&) {
    return std::pair{mj::sin(mj::checkpoint_name(mj::sin(y), "row")), mj::None{}};
  };
  const Array xs = mj::zeros({8, 0}, mj::f32);
  return [=](const Array& p) { return mj::sum(mj::scan(mj::checkpoint(step, {.policy = policy}), p, xs).first); };
}

// The offload tunables are compile options: one program compiled under two
// offload_coalesce_bytes values is two entries of the executable cache and two programs, and
// the first value compiles to the first program again (a hit).
TEST(Pipeline, OffloadCoalesceBytesKeysTheExecutableCache) {
  struct Restore {
    int64_t was = mj::config().offload_coalesce_bytes;
    ~Restore() { mj::config().offload_coalesce_bytes = was; }
  } restore;
  auto g = mj::jit(mj::grad(offloaded_loss()));
  const Array p = mj::ones({3});
  mj::config().offload_coalesce_bytes = 0;
  const auto before = mj::compilation_cache_stats();
  const std::string off = g.lower(p).compile().as_text();
  mj::config().offload_coalesce_bytes = 4096;
  const std::string on = g.lower(p).compile().as_text();
  const auto after = mj::compilation_cache_stats();
  EXPECT_EQ(after.misses - before.misses, 2u);
  EXPECT_NE(off, on);
  EXPECT_EQ(off.find("k=8"), std::string::npos) << off;
  EXPECT_NE(on.find("k=8"), std::string::npos) << on;
  mj::config().offload_coalesce_bytes = 0;
  const auto again = mj::compilation_cache_stats();
  EXPECT_EQ(g.lower(p).compile().as_text(), off);
  EXPECT_EQ(mj::compilation_cache_stats().hits - again.hits, 1u);
}

// The same for a tunable that leaves the program as it is: a prefetch budget that no reload
// reaches changes nothing in the program, yet the two compilations are two cache entries.
TEST(Pipeline, EveryOffloadTunableKeysTheExecutableCache) {
  struct Restore {
    int64_t was = mj::config().offload_prefetch_bytes;
    ~Restore() { mj::config().offload_prefetch_bytes = was; }
  } restore;
  auto g = mj::jit(mj::grad(offloaded_loss()));
  const Array p = mj::ones({3});
  mj::config().offload_prefetch_bytes = int64_t(1) << 30;
  const auto before = mj::compilation_cache_stats();
  const auto a = g.lower(p).compile();
  mj::config().offload_prefetch_bytes = int64_t(1) << 31;
  const auto b = g.lower(p).compile();
  EXPECT_EQ(mj::compilation_cache_stats().misses - before.misses, 2u);
  EXPECT_EQ(a.as_text(), b.as_text());
  mj::config().offload_prefetch_bytes = int64_t(1) << 30;
  const Array got = g(p), want = mj::grad(offloaded_loss())(p);  // eager: the reference
  for (int64_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got.data<float>()[k], want.data<float>()[k], 1e-6) << k;
}

}  // namespace
