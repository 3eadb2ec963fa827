// Tests of the doc-block extraction (tests/docs/doc_blocks.cmake, docs/code-blocks.md): fences,
// kinds, names and generated sources of markdown written here, and a broken block failing to build.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = MINIJAX_SOURCE_DIR;
const fs::path kWork = fs::path(MINIJAX_DOC_BLOCKS_WORK_DIR) / "extractor";

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Runs `cmd` through the shell with its output in `log`; returns its exit status (-1 if none).
/// The output file is this process's own: ctest -j2 runs the tests of this file as concurrent
/// processes, and one shared file let one test read another's (or an empty) log.
int run_shell(const std::string& cmd, std::string& log) {
  const fs::path out = kWork / ("command_output." + std::to_string(::getpid()) + ".txt");
  const int st = std::system((cmd + " > " + quote(out.string()) + " 2>&1").c_str());
  log = "$ " + cmd + "\n" + read_text(out);
  fs::remove(out);
  return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

struct Extracted {
  fs::path md, out;
  std::vector<std::string> manifest;  ///< `name kind line file` lines of blocks.txt
  std::string log;
  int status = -1;
};

/// Writes `text` as `kWork/<stem>.md` and runs the extractor on it as the build does.
Extracted extract(const std::string& stem, const std::string& text) {
  fs::create_directories(kWork);
  Extracted e;
  e.md = kWork / (stem + ".md");
  e.out = kWork / (stem + "_out");
  fs::remove_all(e.out);
  std::ofstream(e.md) << text;
  e.status = run_shell(quote(MINIJAX_CMAKE_COMMAND) + " -DMD=" + quote(e.md.string()) + " -DOUT_DIR=" +
                           quote(e.out.string()) + " -P " + quote((kRoot / "tests/docs/doc_blocks.cmake").string()),
                       e.log);
  std::istringstream in(read_text(e.out / "blocks.txt"));
  for (std::string line; std::getline(in, line);) e.manifest.push_back(line);
  return e;
}

}  // namespace

TEST(DocBlocksExtractor, FindsCppBlocksNamesAndClassifiesThem) {
  const Extracted e = extract("kinds",
                              "# t\n"                                                   // 1
                              "```sh\nls\n```\n"                                        // 2-4
                              "```cpp\nauto x = mj::ones({2}); int a[3];\n\nx[0];\n```\n"  // 5-9
                              "```c++ title\n#include <vector>\nint f();\n```\n"        // 10-13
                              "```cpp\n// a program\nint main() { return 0; }\n```\n"   // 14-17
                              "   ```cpp\n   int y = 1;\n    int z;\n   ```\n"          // 18-21
                              "```python\nprint(1)\n```\n");                            // 22-24
  ASSERT_EQ(e.status, 0) << e.log;
  const std::string md = e.md.string();
  ASSERT_EQ(e.manifest, (std::vector<std::string>{"kinds_md_L6 fragment 6 " + md,
                                                  "kinds_md_L11 translation_unit 11 " + md,
                                                  "kinds_md_L15 program 15 " + md,
                                                  "kinds_md_L19 fragment 19 " + md}));
  // A translation unit and a program: the block as it is, after a #line naming the markdown.
  const std::string unit = read_text(e.out / "kinds_md_L11.cc");
  EXPECT_NE(unit.find("\n#line 11 \"" + md + "\"\n#include <vector>\nint f();\n"), std::string::npos) << unit;
  EXPECT_NE(read_text(e.out / "kinds_md_L15.cc").find("#line 15 \"" + md + "\"\n// a program\nint main()"),
            std::string::npos);
  // Fragments: test bodies in one source; ';' and brackets survive; the fence's indent is removed.
  const std::string frag = read_text(e.out / "doc_fragments.cc");
  EXPECT_NE(frag.find("#include <minijax/minijax.h>\n"), std::string::npos) << frag;
  EXPECT_NE(frag.find("void mj_doc_fragment_kinds_md_L6() {\n#line 6 \"" + md +
                      "\"\nauto x = mj::ones({2}); int a[3];\n\nx[0];\n}\n"),
            std::string::npos)
      << frag;
  EXPECT_NE(frag.find("void mj_doc_fragment_kinds_md_L19() {\n#line 19 \"" + md + "\"\nint y = 1;\n int z;\n}\n"),
            std::string::npos)
      << frag;
  // Each runs as a test of its own, in a child process.
  EXPECT_NE(frag.find("TEST(DocBlock, kinds_md_L6) { mj_doc_run_fragment(mj_doc_fragment_kinds_md_L6); }"),
            std::string::npos)
      << frag;
  EXPECT_NE(frag.find("TEST(DocBlock, kinds_md_L19) {"), std::string::npos) << frag;
  EXPECT_FALSE(fs::exists(e.out / "kinds_md_L6.cc"));
  EXPECT_EQ(frag.find("print(1)"), std::string::npos);
  EXPECT_EQ(frag.find("ls\n"), std::string::npos);
}

TEST(DocBlocksExtractor, GeneratedLineDirectivesCountTheGeneratedFile) {
  const Extracted e = extract("lines", "```cpp\nint a = 1;\nint b = 2;\n```\n\n```cpp\nint c = 3;\n```\n"
                                      "```\nplain text, no language\n```\n");
  ASSERT_EQ(e.status, 0) << e.log;
  EXPECT_EQ(e.manifest.size(), 2u);
  const std::string frag = read_text(e.out / "doc_fragments.cc");
  // After each fragment a #line returns to the generated file's own numbering: a directive on
  // line n names n + 1, the number of the line that follows it.
  const std::string self = "\"" + (e.out / "doc_fragments.cc").string() + "\"";
  std::istringstream in(frag);
  int n = 0, directives = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.rfind("#line ", 0) != 0 || line.find(self) == std::string::npos) continue;
    ++directives;
    EXPECT_EQ(std::stoi(line.substr(6)), n + 1) << "line " << n << " of\n" << frag;
  }
  EXPECT_EQ(directives, 2) << frag;
  EXPECT_NE(frag.find("void mj_doc_fragment_lines_md_L7() {\n#line 7 "), std::string::npos) << frag;
}

TEST(DocBlocksExtractor, AnUnclosedFenceIsAnError) {
  const Extracted e = extract("unclosed", "text\n```cpp\nint a;\n");
  EXPECT_NE(e.status, 0) << e.log;
  // CMake wraps the message where the path's length puts the breaks: compare with every run of
  // whitespace read as one space.
  std::string flat;
  for (char c : e.log) {
    const bool space = c == ' ' || c == '\n' || c == '\t';
    if (!space) flat += c;
    else if (flat.empty() || flat.back() != ' ') flat += ' ';
  }
  for (const char* part : {"unclosed.md", "the code fence opened at line 2 is never closed"})
    EXPECT_NE(flat.find(part), std::string::npos) << part << " not in " << e.log;
}

// The property the doc tests rest on: a block that stops compiling fails to build, and the
// compiler points at the markdown file and line (the #line directive). Cheap: no minijax header.
TEST(DocBlocksExtractor, ABrokenBlockFailsToBuildAtItsMarkdownLine) {
  const Extracted e = extract("broken", "# broken\n\n```cpp\n#include <vector>\nint f() { return not_declared; }\n```\n");
  ASSERT_EQ(e.status, 0) << e.log;
  ASSERT_EQ(e.manifest.size(), 1u);
  std::string log;
  const int st = run_shell(quote(MINIJAX_CXX_COMPILER) + " -std=c++20 -fsyntax-only " +
                               quote((e.out / "broken_md_L4.cc").string()),
                           log);
  EXPECT_NE(st, 0) << log;
  EXPECT_NE(log.find("broken.md:5"), std::string::npos) << log;
  EXPECT_NE(log.find("not_declared"), std::string::npos) << log;
}

TEST(DocBlocksExtractor, ReadmeAndDocsBlocksAreAllBuilt) {
  // The manifest the build wrote: README's blocks and docs/'s, each a test or a compiled unit.
  std::istringstream in(read_text(fs::path(MINIJAX_DOC_BLOCKS_GENERATED_DIR) / "blocks.txt"));
  int readme = 0, docs = 0, programs = 0;
  for (std::string line; std::getline(in, line);) {
    readme += line.find("/README.md") != std::string::npos;
    docs += line.find("/docs/") != std::string::npos;
    programs += line.find(" program ") != std::string::npos;
  }
  EXPECT_GE(readme, 5);
  EXPECT_GE(docs, 4);
  EXPECT_GE(programs, 3);
}
