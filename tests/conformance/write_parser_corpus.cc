// minijax parser fuzz corpus writer: the printed jaxprs of every conformance case (plain, jit, jvp, vjp).
// Owns the seed corpus of tests/fuzz/corpus/parser; skipped unless MINIJAX_WRITE_PARSER_CORPUS names a folder.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "conformance.h"

namespace {

using conformance::Case;
using conformance::registry;
using mj::Array;

// The text parse_jaxpr reads without consts: a jaxpr's constvars become its leading invars.
std::string printed(const mj::ClosedJaxpr& cj) {
  auto j = std::make_shared<mj::Jaxpr>(*cj.jaxpr);
  j->invars.insert(j->invars.begin(), j->constvars.begin(), j->constvars.end());
  j->constvars.clear();
  return mj::to_string(*j);
}

std::string file_stem(const Case& k) {
  std::string s = k.prim + (k.label.empty() ? "" : "_" + k.label);
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return s;
}

}  // namespace

// Run by hand (tests/fuzz/README.md): one file per distinct printed jaxpr, minimized by libFuzzer -merge.
TEST(ParserCorpus, WritePrintedJaxprsOfEveryCase) {
  const char* dir = std::getenv("MINIJAX_WRITE_PARSER_CORPUS");
  if (!dir) GTEST_SKIP() << "set MINIJAX_WRITE_PARSER_CORPUS=DIR to write the parser's seed corpus";
  std::filesystem::create_directories(dir);
  std::set<std::string> seen;
  int written = 0;
  auto write = [&](const std::string& name, const std::string& text) {
    if (!seen.insert(text).second) return;
    // Every seed must parse: the fuzzer mutates from valid programs.
    EXPECT_NO_THROW(mj::parse_jaxpr(text)) << name << "\n" << text;
    std::ofstream(std::filesystem::path(dir) / (name + ".jaxpr")) << text;
    ++written;
  };
  for (const Case& k : registry()) {
    std::string stem = file_stem(k);
    for (auto& [form, j] : conformance::traced_jaxprs(k)) write(form.empty() ? stem : stem + "_" + form, printed(j));
  }
  std::cout << "wrote " << written << " printed jaxprs to " << dir << "\n";
  EXPECT_GT(written, 100);
}
