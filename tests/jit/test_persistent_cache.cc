// Tests of the persistent compilation cache (config().compilation_cache_dir, jit/compile_cache.h)
// across processes: this binary re-runs itself as a child that compiles a program and reports.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <minijax/minijax.h>

#include "jit/compile_cache.h"

namespace {

namespace fs = std::filesystem;
using mj::Array;

constexpr const char* kDirEnv = "MJ_TEST_PCACHE_DIR";
constexpr const char* kReportEnv = "MJ_TEST_PCACHE_REPORT";
constexpr const char* kWhichEnv = "MJ_TEST_PCACHE_FN";

Array ramp(const mj::Shape& shape, float scale, float offset) {
  Array a = Array::allocate(mj::ShapedArray{shape, mj::f32});
  float* p = a.mutable_data<float>();
  for (int64_t i = 0; i < a.size(); ++i) p[i] = float(i) * scale + offset;
  return a;
}

bool bit_equal(const Array& a, const Array& b) {
  return a.aval().str() == b.aval().str() && std::memcmp(a.raw_data(), b.raw_data(), size_t(a.aval().nbytes())) == 0;
}

// The two programs a child compiles: "f" (a GEMM and a fused epilogue) and "g" (one fused loop).
Array prog_f(const Array& a, const Array& b) { return mj::matmul(a, b) * 1.5 + 2.0; }
Array prog_g(const Array& x) { return x * x * 7.25 - x; }

// The child: runs only when the parent set the environment. Compiles the program named by
// MJ_TEST_PCACHE_FN with the persistent cache in MJ_TEST_PCACHE_DIR and writes what happened
// to MJ_TEST_PCACHE_REPORT, one "key value" per line.
TEST(PersistentCacheChild, CompileAndReport) {
  const char* dir = std::getenv(kDirEnv);
  const char* report = std::getenv(kReportEnv);
  const char* which = std::getenv(kWhichEnv);
  if (!dir || !report || !which) GTEST_SKIP() << "runs as the child of PersistentCache tests";
  mj::config().compilation_cache_dir = dir;
  using C = std::chrono::steady_clock;
  bool ok = false;
  double wall = 0;  // the first call: trace, passes, then code generation or the cache's object code
  std::shared_ptr<const mj::Executable> exe;
  if (std::string(which) == "f") {
    Array a = ramp({16, 8}, 0.25f, -1), b = ramp({8, 4}, 0.5f, 0);
    Array want = prog_f(a, b);  // eager first: the GEMM library's own start-up is not timed
    auto jf = mj::jit(prog_f, "persistent_f");
    auto t0 = C::now();
    Array y = jf(a, b);
    wall = std::chrono::duration<double>(C::now() - t0).count();
    ok = bit_equal(y, want);  // the same GEMM call, then the epilogue without FMA
    exe = jf.lower(a, b).compile().executable();
  } else {
    Array x = ramp({1000}, 0.125f, -7);
    auto jg = mj::jit(prog_g, "persistent_g");
    auto t0 = C::now();
    Array y = jg(x);
    wall = std::chrono::duration<double>(C::now() - t0).count();
    ok = bit_equal(y, prog_g(x));
    exe = jg.lower(x).compile().executable();
  }
  const mj::CompilationCacheStats st = mj::compilation_cache_stats();
  std::ofstream out(report);
  out << "hits " << st.persistent_hits << "\nrejected " << st.persistent_rejected << "\ncache_hit "
      << exe->times.cache_hit << "\nok " << ok << "\nwall " << wall << "\noptimize " << exe->times.optimize
      << "\ncodegen " << exe->times.codegen << "\n";
  ASSERT_TRUE(out.good());
}

class PersistentCache : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("mj_pcache_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "cache");
  }
  void TearDown() override { fs::remove_all(root_); }

  // Runs the child in a new process and returns its report.
  std::map<std::string, double> run_child(const std::string& which) {
    const fs::path exe = fs::read_symlink("/proc/self/exe");
    const fs::path rep = root_ / ("report_" + std::to_string(runs_++) + ".txt");
    const std::string cmd = std::string(kDirEnv) + "='" + (root_ / "cache").string() + "' " + kReportEnv + "='" +
                            rep.string() + "' " + kWhichEnv + "=" + which + " '" + exe.string() +
                            "' --gtest_filter=PersistentCacheChild.CompileAndReport > '" +
                            (root_ / "child.log").string() + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0) << "child failed; its log: " << slurp(root_ / "child.log");
    std::map<std::string, double> r;
    std::ifstream in(rep);
    std::string k;
    double v;
    while (in >> k >> v) r[k] = v;
    EXPECT_EQ(r.size(), 7u) << "no report from the child; its log: " << slurp(root_ / "child.log");
    EXPECT_EQ(r["ok"], 1) << "the child's results differ from eager";
    return r;
  }

  // The cache's entries (file names), sorted.
  std::vector<fs::path> entries() const {
    std::vector<fs::path> v;
    for (auto& e : fs::directory_iterator(root_ / "cache")) v.push_back(e.path());
    std::sort(v.begin(), v.end());
    return v;
  }

  static std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static void write(const fs::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << bytes;
  }

  fs::path root_;
  int runs_ = 0;
};

TEST_F(PersistentCache, HitInANewProcessLoadsTheObjectCode) {
  auto cold = run_child("f");
  EXPECT_EQ(cold["hits"], 0);
  EXPECT_EQ(cold["rejected"], 0);
  EXPECT_EQ(cold["cache_hit"], 0);
  EXPECT_GT(cold["optimize"] + cold["codegen"], 0);
  ASSERT_EQ(entries().size(), 1u);
  EXPECT_EQ(entries()[0].extension(), ".mjx");
  auto warm = run_child("f");
  EXPECT_EQ(warm["hits"], 1);
  EXPECT_EQ(warm["rejected"], 0);
  EXPECT_EQ(warm["cache_hit"], 1);
  EXPECT_EQ(warm["optimize"], 0);  // optimization and code generation skipped
  EXPECT_EQ(warm["codegen"], 0);
  EXPECT_EQ(entries().size(), 1u);
  std::printf("[ measured ] first call in a new process: %.1f ms compiling, %.1f ms with a persistent hit\n",
              cold["wall"] * 1e3, warm["wall"] * 1e3);
  // Another program is another entry.
  auto other = run_child("g");
  EXPECT_EQ(other["hits"], 0);
  EXPECT_EQ(entries().size(), 2u);
}

TEST_F(PersistentCache, CorruptTruncatedAndForeignEntriesAreRejectedAndRecompiled) {
  run_child("f");
  ASSERT_EQ(entries().size(), 1u);
  const fs::path entry_f = entries()[0];
  const std::string good = slurp(entry_f);
  ASSERT_GT(good.size(), 200u);
  auto expect_rejected_then_rewritten = [&](const char* what) {
    auto r = run_child("f");
    EXPECT_EQ(r["hits"], 0) << what;
    EXPECT_EQ(r["rejected"], 1) << what;
    EXPECT_EQ(r["cache_hit"], 0) << what;
    EXPECT_EQ(slurp(entry_f), good) << what << ": the entry is written anew";
    auto again = run_child("f");
    EXPECT_EQ(again["hits"], 1) << what;
  };
  // Flipped bytes in the object code.
  std::string flipped = good;
  for (size_t i = flipped.size() - 40; i < flipped.size() - 30; ++i) flipped[i] = char(~flipped[i]);
  write(entry_f, flipped);
  expect_rejected_then_rewritten("flipped object bytes");
  // A flipped byte in the header (the digest line).
  std::string header = good;
  const size_t digest_at = header.find('\n', header.find('\n') + 1) + 4;
  header[digest_at] = header[digest_at] == '0' ? '1' : '0';
  write(entry_f, header);
  expect_rejected_then_rewritten("flipped header byte");
  // Truncated.
  write(entry_f, good.substr(0, good.size() / 2));
  expect_rejected_then_rewritten("truncated");
  // Trailing garbage.
  write(entry_f, good + "extra");
  expect_rejected_then_rewritten("trailing bytes");
  // Another key's entry copied under f's name (intact, but foreign).
  run_child("g");
  ASSERT_EQ(entries().size(), 2u);
  const fs::path entry_g = entries()[0] == entry_f ? entries()[1] : entries()[0];
  fs::copy_file(entry_g, entry_f, fs::copy_options::overwrite_existing);
  expect_rejected_then_rewritten("another key's entry");
  // Not an entry at all.
  write(entry_f, "not a minijax executable\n");
  expect_rejected_then_rewritten("foreign file");
}

TEST(PersistentCacheKey, IsSha256OfTheProgramAndTheCodeChangingOptions) {
  mj::Jaxpr p = *mj::make_jaxpr(prog_g)(ramp({8}, 1, 0)).jaxpr;
  mj::Jaxpr q = *mj::make_jaxpr(prog_g)(ramp({9}, 1, 0)).jaxpr;
  mj::CompileOptions plain, donated;
  donated.donated = {true};
  const std::string k = mj::persistent_key(p, plain);
  EXPECT_EQ(k.size(), 64u);  // SHA-256 in hex
  EXPECT_EQ(k.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(mj::persistent_key(p, plain), k);  // deterministic
  EXPECT_NE(mj::persistent_key(q, plain), k);  // another program
  EXPECT_NE(mj::persistent_key(p, donated), k);  // another donation
  mj::CompileOptions renamed;
  renamed.name = "another_name";
  EXPECT_EQ(mj::persistent_key(p, renamed), k);  // the name changes no code
  // The host's description (LLVM version, CPU and features) is part of the key's input.
  EXPECT_NE(mj::host_target().str().find("llvm-"), std::string::npos);
  EXPECT_NE(mj::host_target().str().find(mj::host_target().features), std::string::npos);
}

}  // namespace
