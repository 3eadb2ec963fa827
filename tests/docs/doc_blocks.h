// minijax doc-block tests: extracts the fenced C++ blocks of markdown files and builds each one.
// Owns the convention of docs/code-blocks.md: block kinds, the generated sources, the commands.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace minijax::doc_blocks {

/// How a block is built (docs/code-blocks.md): a `program` (it defines `int main(`) is compiled,
/// linked against libminijax and run; a `translation_unit` (no main, its first line of code is
/// an `#include`) is compiled alone; a `fragment` (anything else) is placed in the body of
/// `void snippet()` after `#include <minijax/minijax.h>` and a few standard headers, then
/// compiled, linked and run from a generated main.
enum class Kind { program, translation_unit, fragment };

/// One fenced block: ```cpp or ```c++ (the info string's first word), fences at column 0.
struct Block {
  std::filesystem::path file;  ///< the markdown file
  int line = 0;                ///< line (from 1) of the block's first line of code
  std::string code;            ///< the lines between the fences, each ending in '\n'
  Kind kind = Kind::fragment;
  /// A test name for the block: the file's name with non-alphanumerics as '_', then `_L<line>`
  /// (`README_md_L142`).
  std::string name() const;
};

/// The kind of a block of code (see Kind).
Kind classify(const std::string& code);
/// The C++ blocks of one markdown file, in order. An unclosed fence ends at the end of the file.
std::vector<Block> extract(const std::filesystem::path& markdown);
/// README.md, then docs/*.md in name order, of the source tree `root`.
std::vector<std::filesystem::path> markdown_files(const std::filesystem::path& root);

/// The source file generated for a block: a `// generated` header, the fragment wrapper where
/// it applies, and `#line` directives so that compiler errors name the markdown file and line.
std::string generated_source(const Block& b);

/// The compiler and flags a block is built with: read from the file the build writes
/// (tests/CMakeLists.txt, file(GENERATE)), one `key=value` a line: `launcher` (may be empty),
/// `compiler`, then any number of `flag`, `include`, `define`, `library` and `rpath` lines, and
/// `implicit_include` lines naming the compiler's own include folders (left out of `includes`).
struct Toolchain {
  std::string launcher, compiler;
  std::vector<std::string> flags, includes, defines, libraries, rpaths;
  /// Throws std::runtime_error naming the file when it is missing or has no compiler.
  static Toolchain read(const std::filesystem::path& file);
};

/// What building (and running) one block did.
struct Outcome {
  bool compiled = false;
  bool ran = false;       ///< false for translation units (compiled only) and failed builds
  int exit_status = -1;   ///< the program's, when run
  std::string log;        ///< the commands and their output
};

/// Writes the block's source under `work_dir/<name>/`, compiles it (`-c`, through the launcher,
/// e.g. ccache), links and runs it unless it is a translation unit, with `work_dir/<name>/` as
/// the working directory.
Outcome build_and_run(const Block& b, const Toolchain& tc, const std::filesystem::path& work_dir);

}  // namespace minijax::doc_blocks
