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

bool all_float(const std::vector<Array>& xs) {
  for (auto& x : xs)
    if (!mj::is_floating(x.dtype())) return false;
  return true;
}

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
    mj::FlatFn f = [&](const std::vector<Array>& a) { return k.fn(a); };
    write(stem, printed(mj::make_jaxpr(f)(k.args)));
    mj::FlatFn jf = [&](const std::vector<Array>& a) { return mj::jit(k.fn, std::string(k.prim))(a); };
    write(stem + "_jit", printed(mj::make_jaxpr(jf)(k.args)));
    if (!k.differentiable || !all_float(k.args)) continue;
    size_t n = k.args.size();
    mj::FlatFn jvp = [&](const std::vector<Array>& a) {
      auto [po, to] = mj::jvp_flat(k.fn, {a.begin(), a.begin() + long(n)}, {a.begin() + long(n), a.end()});
      for (auto& t : to) po.push_back(t.defined() ? t : Array());
      std::vector<Array> out;
      for (auto& o : po)
        if (o.defined()) out.push_back(o);
      return out;
    };
    std::vector<Array> pt = k.args;
    pt.insert(pt.end(), k.args.begin(), k.args.end());
    write(stem + "_jvp", printed(mj::make_jaxpr(jvp)(pt)));
    auto outs = k.fn(k.args);
    if (!all_float(outs)) continue;
    mj::FlatFn vjp = [&](const std::vector<Array>& a) {
      std::vector<Array> cts(a.begin() + long(n), a.end());
      std::vector<Array> out;
      for (auto& g : mj::vjp_flat(k.fn, {a.begin(), a.begin() + long(n)}).pullback(cts))
        if (g.defined()) out.push_back(g);
      return out;
    };
    std::vector<Array> pc = k.args;
    pc.insert(pc.end(), outs.begin(), outs.end());
    write(stem + "_vjp", printed(mj::make_jaxpr(vjp)(pc)));
  }
  std::cout << "wrote " << written << " printed jaxprs to " << dir << "\n";
  EXPECT_GT(written, 100);
}
