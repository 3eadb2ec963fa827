// minijax doc-block tests: fence parsing, block kinds, generated sources and the build commands.
// Owns the implementation of tests/docs/doc_blocks.h (docs/code-blocks.md is the convention).
#include "tests/docs/doc_blocks.h"

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace minijax::doc_blocks {

namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

/// Leading spaces of a line (a fence may be indented by up to 3, as CommonMark allows).
size_t indent_of(const std::string& line) {
  size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

bool is_fence(const std::string& line) {
  const size_t n = indent_of(line);
  return n <= 3 && line.compare(n, 3, "```") == 0;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Runs `cmd` through the shell; returns its exit status (-1 when it did not exit normally).
int run_shell(const std::string& cmd) {
  const int st = std::system(cmd.c_str());
  return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

const char* kHeaders =
    "#include <minijax/minijax.h>\n#include <cstdio>\n#include <fstream>\n#include <iostream>\n"
    "#include <map>\n#include <memory>\n#include <string>\n#include <utility>\n#include <vector>\n";

}  // namespace

std::string Block::name() const {
  std::string s = file.filename().string();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s + "_L" + std::to_string(line);
}

Kind classify(const std::string& code) {
  static const std::regex main_re(R"((^|[^A-Za-z0-9_])int\s+main\s*\()");
  if (std::regex_search(code, main_re)) return Kind::program;
  std::istringstream in(code);
  for (std::string line; std::getline(in, line);) {
    const std::string t = trim(line);
    if (t.empty() || t.rfind("//", 0) == 0) continue;
    return t.rfind("#include", 0) == 0 ? Kind::translation_unit : Kind::fragment;
  }
  return Kind::fragment;
}

std::vector<Block> extract(const fs::path& markdown) {
  std::ifstream in(markdown);
  if (!in) throw std::runtime_error("doc_blocks: cannot read " + markdown.string());
  std::vector<Block> out;
  std::string line;
  int n = 0;
  bool inside = false, cpp = false;
  size_t fence_indent = 0;
  Block cur;
  while (std::getline(in, line)) {
    ++n;
    if (!inside) {
      if (!is_fence(line)) continue;
      fence_indent = indent_of(line);
      std::string info = trim(line.substr(fence_indent + 3));
      info = info.substr(0, info.find_first_of(" \t{"));
      inside = true;
      cpp = info == "cpp" || info == "c++";
      cur = Block{markdown, n + 1, "", Kind::fragment};
    } else if (is_fence(line) && trim(line.substr(indent_of(line))).find_first_not_of('`') == std::string::npos) {
      inside = false;
      if (cpp) {
        cur.kind = classify(cur.code);
        out.push_back(cur);
      }
    } else if (cpp) {
      cur.code += line.substr(std::min(fence_indent, indent_of(line))) + "\n";
    }
  }
  if (inside && cpp) {
    cur.kind = classify(cur.code);
    out.push_back(cur);
  }
  return out;
}

std::vector<fs::path> markdown_files(const fs::path& root) {
  std::vector<fs::path> files{root / "README.md"};
  std::vector<fs::path> docs;
  for (auto& e : fs::directory_iterator(root / "docs"))
    if (e.path().extension() == ".md") docs.push_back(e.path());
  std::sort(docs.begin(), docs.end());
  files.insert(files.end(), docs.begin(), docs.end());
  return files;
}

std::string generated_source(const Block& b) {
  const std::string where = b.file.string() + ":" + std::to_string(b.line);
  const std::string line_directive = "#line " + std::to_string(b.line) + " \"" + b.file.string() + "\"\n";
  switch (b.kind) {
    case Kind::program:
      return "// generated from " + where + " (docs/code-blocks.md): a program, compiled and run\n" +
             line_directive + b.code;
    case Kind::translation_unit:
      return "// generated from " + where + " (docs/code-blocks.md): a translation unit, compiled\n" +
             line_directive + b.code;
    case Kind::fragment:
      break;
  }
  return "// generated from " + where + " (docs/code-blocks.md): a fragment, run as snippet()\n" +
         kHeaders + "\nvoid snippet() {\n" + line_directive + b.code + "}\n\nint main() {\n  snippet();\n  return 0;\n}\n";
}

Toolchain Toolchain::read(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("doc_blocks: cannot read the toolchain file " + file.string());
  Toolchain tc;
  std::vector<std::string> implicit;
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "launcher") tc.launcher = value;
    else if (key == "compiler") tc.compiler = value;
    else if (value.empty()) continue;
    else if (key == "flag") tc.flags.push_back(value);
    else if (key == "include") tc.includes.push_back(value);
    else if (key == "define") tc.defines.push_back(value);
    else if (key == "library") tc.libraries.push_back(value);
    else if (key == "rpath") tc.rpaths.push_back(value);
    else if (key == "implicit_include") implicit.push_back(value);
  }
  // The compiler's own include folders (e.g. /usr/include) are not passed as -I: that would
  // break libstdc++'s #include_next, as CMake knows (CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES).
  std::erase_if(tc.includes, [&](const std::string& dir) {
    return std::find(implicit.begin(), implicit.end(), dir) != implicit.end();
  });
  if (tc.compiler.empty()) throw std::runtime_error("doc_blocks: no compiler= line in " + file.string());
  return tc;
}

Outcome build_and_run(const Block& b, const Toolchain& tc, const fs::path& work_dir) {
  Outcome o;
  const fs::path dir = work_dir / b.name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path src = dir / "block.cc", obj = dir / "block.o", exe = dir / "block", log = dir / "log.txt";
  std::ofstream(src) << generated_source(b);

  std::string compile = tc.launcher.empty() ? "" : quote(tc.launcher) + " ";
  compile += quote(tc.compiler);
  for (auto& f : tc.flags) compile += " " + quote(f);
  for (auto& d : tc.defines) compile += " " + quote("-D" + d);
  for (auto& i : tc.includes) compile += " " + quote("-I" + i);
  compile += " -c " + quote(src.string()) + " -o " + quote(obj.string());
  o.log = "$ " + compile + "\n";
  o.compiled = run_shell(compile + " > " + quote(log.string()) + " 2>&1") == 0;
  o.log += read_text(log);
  if (!o.compiled || b.kind == Kind::translation_unit) return o;

  std::string link = quote(tc.compiler) + " " + quote(obj.string()) + " -o " + quote(exe.string());
  for (auto& l : tc.libraries) link += " " + quote(l);
  for (auto& r : tc.rpaths) link += " " + quote("-Wl,-rpath," + r);
  o.log += "$ " + link + "\n";
  o.compiled = run_shell(link + " > " + quote(log.string()) + " 2>&1") == 0;
  o.log += read_text(log);
  if (!o.compiled) return o;

  const std::string run = "cd " + quote(dir.string()) + " && ./block";
  o.log += "$ " + run + "\n";
  o.exit_status = run_shell(run + " > " + quote(log.string()) + " 2>&1");
  o.ran = true;
  o.log += read_text(log);
  return o;
}

}  // namespace minijax::doc_blocks
