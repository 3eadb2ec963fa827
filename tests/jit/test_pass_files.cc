// minijax pass tests from text: each tests/passes/<stage>/<case>.jaxpr holds an input jaxpr (under
// an optional `# mesh:` header) and, after a line "# expected", what the stage gives; one gtest per file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "jit/pipeline.h"
#include "sharding/parse_sharded.h"

namespace {

namespace fs = std::filesystem;

// Leading and trailing whitespace removed.
std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// What `stage` gives for `parsed`: without a mesh, the program after the stage alone; with one,
// after run_sharded_stage (partition_spmd runs after propagate_shardings), the program or, for
// propagate_shardings (which leaves the program as it is), the annotated program it gives.
std::string stage_output(const std::string& stage, const mj::ShardedJaxpr& parsed) {
  if (!parsed.mesh) return mj::to_string(mj::run_stage(stage, *parsed.jaxpr.jaxpr));
  const mj::ShardingRequest request{parsed.mesh, parsed.in_shardings, parsed.out_shardings,
                                    std::source_location::current()};
  mj::Compilation c = mj::run_sharded_stage(stage, *parsed.jaxpr.jaxpr, request);
  return stage == "propagate_shardings" ? c.propagation.text : mj::to_string(c.program);
}

// Whether `file` has a `# mesh:` header line (a sharded program).
bool has_mesh_header(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (trimmed(line).rfind("# mesh:", 0) == 0) return true;
  return false;
}

// One file: the input before the line "# expected" (lines starting with '#' are comments, the
// `# mesh:`, `# in_shardings:` and `# out_shardings:` ones its header), the expected text after
// it. The file's stage is the name of its folder.
class PassFile : public testing::Test {
 public:
  explicit PassFile(fs::path file) : file_(std::move(file)) {}

  void TestBody() override {
    const std::string stage = file_.parent_path().filename().string();
    const mj::Stage* s = mj::find_stage(stage);
    ASSERT_NE(s, nullptr) << file_ << ": no stage named '" << stage << "' in jit/pipeline.cc's table";
    std::ifstream in(file_);
    std::string input, expected, line;
    bool after = false;
    while (std::getline(in, line)) {
      if (trimmed(line) == "# expected") {
        after = true;
        continue;
      }
      (after ? expected : input) += line + "\n";  // the input's comments too: parse errors name file lines
    }
    ASSERT_TRUE(after) << file_ << ": no line '# expected' (the stage's output follows it)";
    ASSERT_FALSE(trimmed(expected).empty()) << file_ << ": nothing after '# expected'";
    const mj::ShardedJaxpr parsed = mj::parse_sharded_jaxpr(input);
    EXPECT_EQ(trimmed(stage_output(stage, parsed)), trimmed(expected)) << file_ << " (stage " << stage << ")";
  }

 private:
  fs::path file_;
};

// Registers one test per file, named PassFiles.<stage>/<case>, before main runs the tests.
[[maybe_unused]] const bool registered = [] {
  const fs::path root = fs::path(MINIJAX_SOURCE_DIR) / "tests" / "passes";
  if (!fs::is_directory(root)) return false;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().extension() == ".jaxpr") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    const std::string name = f.parent_path().filename().string() + "/" + f.stem().string();
    testing::RegisterTest("PassFiles", name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [f]() -> testing::Test* { return new PassFile(f); });
  }
  return true;
}();

// Every stage that rewrites a program on its own has at least two files; the sharded stages
// (propagate_shardings, partition_spmd) and dce have two of a sharded program (a `# mesh:` header).
TEST(PassFiles, EveryProgramStageHasTwoFiles) {
  const fs::path root = fs::path(MINIJAX_SOURCE_DIR) / "tests" / "passes";
  const std::vector<std::string> on_sharded = {"dce", "propagate_shardings", "partition_spmd"};
  for (const mj::Stage& s : mj::pipeline_stages()) {
    const bool lower = std::find(on_sharded.begin(), on_sharded.end(), s.name) != on_sharded.end();
    if (!lower && (!s.rewrites_program || s.applies)) continue;
    int n = 0, sharded = 0;
    if (fs::is_directory(root / s.name))
      for (const auto& e : fs::directory_iterator(root / s.name))
        if (e.path().extension() == ".jaxpr") {
          ++n;
          sharded += has_mesh_header(e.path());
        }
    EXPECT_GE(n, 2) << "tests/passes/" << s.name << "/ holds " << n << " .jaxpr files";
    if (lower) {
      EXPECT_GE(sharded, 2) << "tests/passes/" << s.name << "/ holds " << sharded << " files with a `# mesh:` header";
    }
  }
}

// run_sharded_stage runs only the lower phase's stages, on a ShardingRequest with a mesh.
TEST(PassFiles, RunShardedStageRefusesOtherStages) {
  const mj::ShardedJaxpr parsed = mj::parse_sharded_jaxpr("# mesh: data=4\n{ lambda ; a:f32[8]. let b:f32[8] = sin a in (b,) }");
  const mj::ShardingRequest request{parsed.mesh, parsed.in_shardings, parsed.out_shardings,
                                    std::source_location::current()};
  EXPECT_THROW(mj::run_sharded_stage("simplify", *parsed.jaxpr.jaxpr, request), mj::ValueError);
  EXPECT_THROW(mj::run_sharded_stage("no_such_stage", *parsed.jaxpr.jaxpr, request), mj::ValueError);
  const mj::ShardingRequest no_mesh{nullptr, {}, {}, std::source_location::current()};
  EXPECT_THROW(mj::run_sharded_stage("dce", *parsed.jaxpr.jaxpr, no_mesh), mj::ValueError);
  // partition_spmd after propagate_shardings: with no sharding given all is replicated, so the
  // local program keeps the whole f32[8].
  const mj::Compilation c = mj::run_sharded_stage("partition_spmd", *parsed.jaxpr.jaxpr, request);
  EXPECT_EQ(c.program.in_avals().at(0).shape, (mj::Shape{8})) << mj::to_string(c.program);
  EXPECT_FALSE(c.propagation.text.empty());
}

}  // namespace
