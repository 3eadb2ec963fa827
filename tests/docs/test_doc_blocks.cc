// Tests that every fenced C++ block of README.md and docs/*.md compiles (and runs, where it has a
// main or is a fragment): one test per block, by docs/code-blocks.md's convention.
#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>
#include <fstream>
#include <string>
#include <vector>

#include "tests/docs/doc_blocks.h"

namespace fs = std::filesystem;
namespace db = minijax::doc_blocks;

namespace {

const fs::path kRoot = MINIJAX_SOURCE_DIR;
const fs::path kWork = MINIJAX_DOC_BLOCKS_WORK_DIR;

std::vector<db::Block> all_blocks() {
  std::vector<db::Block> out;
  for (auto& md : db::markdown_files(kRoot))
    for (auto& b : db::extract(md)) out.push_back(b);
  return out;
}

const db::Toolchain& toolchain() {
  static const db::Toolchain tc = db::Toolchain::read(MINIJAX_DOC_BLOCKS_TOOLCHAIN);
  return tc;
}

const char* kind_name(db::Kind k) {
  return k == db::Kind::program ? "program" : k == db::Kind::translation_unit ? "translation unit" : "fragment";
}

class DocBlock : public testing::TestWithParam<db::Block> {};

}  // namespace

namespace minijax::doc_blocks {
// How gtest prints a block (in --gtest_list_tests and failures): its file and line.
void PrintTo(const Block& b, std::ostream* os) { *os << b.file.string() << ":" << b.line; }
}  // namespace minijax::doc_blocks

TEST_P(DocBlock, CompilesAndRuns) {
  const db::Block& b = GetParam();
  const db::Outcome o = db::build_and_run(b, toolchain(), kWork);
  const std::string where = b.file.string() + ":" + std::to_string(b.line) + " (" + kind_name(b.kind) + ")";
  ASSERT_TRUE(o.compiled) << "the block at " << where << " does not build:\n" << o.log;
  if (b.kind == db::Kind::translation_unit) {
    EXPECT_FALSE(o.ran);
    return;
  }
  ASSERT_TRUE(o.ran) << where;
  EXPECT_EQ(o.exit_status, 0) << "the block at " << where << " failed when run:\n" << o.log;
}

INSTANTIATE_TEST_SUITE_P(Docs, DocBlock, testing::ValuesIn(all_blocks()),
                         [](const testing::TestParamInfo<db::Block>& i) { return i.param.name(); });

// ---- the extractor itself, on markdown written here ------------------------------------------

namespace {

fs::path write_markdown(const std::string& name, const std::string& text) {
  const fs::path dir = kWork / "extractor";
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

}  // namespace

TEST(DocBlocksExtractor, FindsCppBlocksAndClassifiesThem) {
  const fs::path md = write_markdown("kinds.md",
                                     "# t\n"                                        // 1
                                     "```sh\nls\n```\n"                             // 2-4
                                     "```cpp\nauto x = mj::ones({2});\n```\n"       // 5-7
                                     "```c++ title\n#include <vector>\nint f();\n```\n"  // 8-11
                                     "```cpp\n// a program\nint main() { return 0; }\n```\n"  // 12-15
                                     "   ```cpp\n   int y = 1;\n   ```\n"           // 16-18
                                     "```python\nprint(1)\n```\n");                 // 19-21
  const auto blocks = db::extract(md);
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks[0].line, 6);
  EXPECT_EQ(blocks[0].code, "auto x = mj::ones({2});\n");
  EXPECT_EQ(blocks[0].kind, db::Kind::fragment);
  EXPECT_EQ(blocks[0].name(), "kinds_md_L6");
  EXPECT_EQ(blocks[1].line, 9);
  EXPECT_EQ(blocks[1].kind, db::Kind::translation_unit);
  EXPECT_EQ(blocks[2].kind, db::Kind::program);
  EXPECT_EQ(blocks[3].code, "int y = 1;\n");  // the fence's indentation is removed
  EXPECT_EQ(db::classify("// note\n\n#include <x>\n"), db::Kind::translation_unit);
  EXPECT_EQ(db::classify("int mainly = 0;\n"), db::Kind::fragment);
  EXPECT_EQ(db::classify("#include <x>\nint main(int argc, char** argv) {}\n"), db::Kind::program);
}

TEST(DocBlocksExtractor, FragmentsAreWrappedWithLineDirectives) {
  const fs::path md = write_markdown("wrap.md", "text\n```cpp\nint z = 3;\n```\n");
  const auto blocks = db::extract(md);
  ASSERT_EQ(blocks.size(), 1u);
  const std::string src = db::generated_source(blocks[0]);
  EXPECT_NE(src.find("#include <minijax/minijax.h>\n"), std::string::npos) << src;
  EXPECT_NE(src.find("void snippet() {\n#line 3 \"" + md.string() + "\"\nint z = 3;\n}\n"), std::string::npos) << src;
  EXPECT_NE(src.find("int main() {\n  snippet();"), std::string::npos) << src;
}

// The property the doc tests rest on: a block that stops compiling fails, and the compiler's
// message points at the markdown file and line (through #line). Cheap: no minijax header.
TEST(DocBlocksExtractor, ABrokenBlockFailsAtItsMarkdownLine) {
  const fs::path md = write_markdown("broken.md",
                                     "# broken\n\n```cpp\n#include <vector>\nint f() { return not_declared; }\n```\n");
  const auto blocks = db::extract(md);
  ASSERT_EQ(blocks.size(), 1u);
  const db::Outcome o = db::build_and_run(blocks[0], toolchain(), kWork);
  EXPECT_FALSE(o.compiled) << o.log;
  EXPECT_NE(o.log.find("broken.md:5"), std::string::npos) << o.log;
  EXPECT_NE(o.log.find("not_declared"), std::string::npos) << o.log;
  // And a block that compiles but fails when run fails too.
  const fs::path md2 = write_markdown("throws.md", "```cpp\n#include <cstdlib>\nint main() { return 3; }\n```\n");
  const db::Outcome r = db::build_and_run(db::extract(md2).at(0), toolchain(), kWork);
  EXPECT_TRUE(r.compiled) << r.log;
  EXPECT_TRUE(r.ran);
  EXPECT_EQ(r.exit_status, 3);
}

TEST(DocBlocksExtractor, ReadmeAndDocsHaveBlocks) {
  const auto blocks = all_blocks();
  EXPECT_GE(blocks.size(), 8u);  // README's tour, staged API, control flow, spellings, docs' ...
  int readme = 0;
  for (auto& b : blocks) readme += b.file.filename() == "README.md";
  EXPECT_GE(readme, 4);
}
