// minijax pass tests from text: each tests/passes/<stage>/<case>.jaxpr holds an input jaxpr and,
// after a line "# expected", the printed program the stage gives; one gtest per file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <minijax/minijax.h>

#include "core/parser.h"
#include "jit/pipeline.h"

namespace {

namespace fs = std::filesystem;

// Leading and trailing whitespace removed.
std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// One file: the input before the line "# expected" (lines starting with '#' are comments), the
// expected text after it. The file's stage is the name of its folder.
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
      if (!after && line.rfind('#', 0) == 0) continue;  // a comment
      (after ? expected : input) += line + "\n";
    }
    ASSERT_TRUE(after) << file_ << ": no line '# expected' (the stage's output follows it)";
    ASSERT_FALSE(trimmed(expected).empty()) << file_ << ": nothing after '# expected'";
    const mj::ClosedJaxpr parsed = mj::parse_jaxpr(input);
    const mj::Jaxpr out = mj::run_stage(stage, *parsed.jaxpr);
    EXPECT_EQ(trimmed(mj::to_string(out)), trimmed(expected)) << file_ << " (stage " << stage << ")";
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

// Every stage that rewrites a program on its own has at least two files.
TEST(PassFiles, EveryProgramStageHasTwoFiles) {
  const fs::path root = fs::path(MINIJAX_SOURCE_DIR) / "tests" / "passes";
  for (const mj::Stage& s : mj::pipeline_stages()) {
    if (!s.rewrites_program || s.applies) continue;  // the sharded stages need a mesh
    int n = 0;
    if (fs::is_directory(root / s.name))
      for (const auto& e : fs::directory_iterator(root / s.name)) n += e.path().extension() == ".jaxpr";
    EXPECT_GE(n, 2) << "tests/passes/" << s.name << "/ holds " << n << " .jaxpr files";
  }
}

}  // namespace
