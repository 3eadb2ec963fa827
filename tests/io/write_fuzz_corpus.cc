// minijax io fuzz corpus writer: files written by save_npy / save_npz / save_safetensors for the readers' fuzzers.
// Owns the seed corpora tests/fuzz/corpus/{npy,npz,safetensors}; skipped unless MINIJAX_WRITE_IO_CORPUS names a folder.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "io/io_test_util.h"

using namespace iotest;

namespace {

// A .npy image whose header dict has `from` replaced by `to` (same length, so the data still
// starts where the header says): big-endian or Fortran-order files as numpy writes them.
std::vector<uint8_t> edited(std::vector<uint8_t> b, const std::string& from, const std::string& to) {
  std::string s(b.begin(), b.end());
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return std::vector<uint8_t>(s.begin(), s.end());
}

}  // namespace

// Run by hand (docs in tests/fuzz/README.md): one small file per dtype, shape and format feature;
// every seed loads, so the fuzzers mutate from valid files.
TEST(IoFuzzCorpus, WriteSeedFilesOfEveryReader) {
  const char* env = std::getenv("MINIJAX_WRITE_IO_CORPUS");
  if (!env) GTEST_SKIP() << "set MINIJAX_WRITE_IO_CORPUS=DIR to write the io fuzzers' seed corpora";
  const fs::path root(env);
  for (const char* d : {"npy", "npz", "safetensors"}) fs::create_directories(root / d);

  // npy: every dtype (bf16 as '<u2' bits), a scalar, an empty array, a 3-d one; then numpy's
  // other layouts: big-endian, Fortran order, both.
  std::map<std::string, mj::Array> arrays = fixture(true);
  arrays["t"] = make<int32_t>({3, 1, 2}, {1, 2, 3, 4, 5, 6});
  arrays["z"] = make<double>({0}, {});
  for (const auto& [key, a] : arrays) {
    const std::string p = (root / "npy" / (key + ".npy")).string();
    mj::save_npy(p, a);
    EXPECT_NO_THROW(a.dtype() == mj::bf16 ? mj::load_npy(p, a) : mj::load_npy(p)) << p;
  }
  const std::vector<uint8_t> f = read_bytes((root / "npy" / "f.npy").string());
  write_bytes((root / "npy" / "f_big_endian.npy").string(), edited(f, "'<f4'", "'>f4'"));
  write_bytes((root / "npy" / "f_fortran.npy").string(), edited(f, "False", "True "));
  write_bytes((root / "npy" / "f_big_fortran.npy").string(), edited(edited(f, "'<f4'", "'>f4'"), "False", "True "));
  for (const char* k : {"f_big_endian", "f_fortran", "f_big_fortran"})
    EXPECT_NO_THROW(mj::load_npy((root / "npy" / (std::string(k) + ".npy")).string())) << k;

  // npz: stored and deflated archives, with and without the bf16 dtypes member, nested keys.
  const std::map<std::string, mj::Array> plain = fixture(false), with_bf16 = fixture(true);
  const std::map<std::string, std::map<std::string, mj::Array>> nested{
      {"layers", {{"0.w", make<float>({2, 2}, {1, 2, 3, 4})}, {"0.b", make<float>({2}, {5, 6})}}},
      {"opt", {{"step", make<int32_t>({}, {7})}, {"mu", make_bf16({2}, {0x3F80, 0x4000})}}}};
  const std::map<std::string, mj::Array> one{{"x", make<float>({3}, {1, 2, 3})}};
  int n = 0;
  for (bool compressed : {false, true}) {
    const std::string suffix = compressed ? "_deflated.npz" : "_stored.npz";
    mj::save_npz((root / "npz" / ("plain" + suffix)).string(), plain, {compressed});
    mj::save_npz((root / "npz" / ("bf16" + suffix)).string(), with_bf16, {compressed});
    mj::save_npz((root / "npz" / ("nested" + suffix)).string(), nested, {compressed});
    mj::save_npz((root / "npz" / ("one" + suffix)).string(), one, {compressed});
    n += 4;
  }
  for (const auto& e : fs::directory_iterator(root / "npz")) EXPECT_NO_THROW(mj::load_npz(e.path().string())) << e.path();

  // safetensors: every dtype (BF16 natively), with and without __metadata__, nested keys, one tensor.
  mj::save_safetensors((root / "safetensors" / "all.safetensors").string(), with_bf16);
  mj::save_safetensors((root / "safetensors" / "metadata.safetensors").string(), plain,
                       {{"format", "pt"}, {"step", "12"}, {"note", "caf\xc3\xa9 \"q\" \\"}});
  mj::save_safetensors((root / "safetensors" / "nested.safetensors").string(), nested, {{"format", "flax"}});
  mj::save_safetensors((root / "safetensors" / "one.safetensors").string(), one);
  for (const auto& e : fs::directory_iterator(root / "safetensors"))
    EXPECT_NO_THROW(mj::load_safetensors(e.path().string())) << e.path();
  std::cout << "wrote " << arrays.size() + 3 << " npy, " << n << " npz, 4 safetensors seeds to " << root << "\n";
}
