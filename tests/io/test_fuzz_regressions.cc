// minijax tests (io): the inputs the readers' fuzzers found (tests/fuzz/corpus/<reader>/regression-*).
// Owns one case per finding: what used to be undefined behaviour or a crash is a typed mj::IOError.
#include <gtest/gtest.h>

#include "io/file.h"
#include "io/zip.h"
#include "io_test_util.h"

namespace {

using namespace iotest;

// npy fuzzer: an empty file. parse_npy compared its first bytes with the magic through
// memcmp(p, magic, 0) with p null (an empty buffer's data()), undefined behaviour (UBSan).
TEST(FuzzRegression, EmptyNpyFileIsATruncationError) {
  ScratchDir dir;
  const std::string corpus = std::string(MINIJAX_SOURCE_DIR) + "/tests/fuzz/corpus/npy/regression-empty-file.npy";
  ASSERT_TRUE(fs::exists(corpus)) << corpus;
  EXPECT_EQ(fs::file_size(corpus), 0u);
  expect_io_error([&] { mj::load_npy(corpus); }, {"load_npy", corpus, "truncated .npy: 0 bytes"});
  write_bytes(dir / "empty.npy", {});
  expect_io_error([&] { mj::load_npy(dir / "empty.npy", mj::zeros({2, 3}, mj::bf16)); },
                  {"load_npy", dir / "empty.npy", "truncated .npy: 0 bytes"});
}

// The same path through npz: a zero-length .npy member.
TEST(FuzzRegression, EmptyNpyMemberOfAnNpzIsATruncationError) {
  ScratchDir dir;
  const std::string p = dir / "empty_member.npz";
  {
    mj::detail::IOContext ctx{"test", p, "", std::source_location::current()};
    mj::detail::AtomicFile f(ctx);
    mj::detail::zip::Writer w(f, ctx);
    const std::string body;
    w.add("a.npy", {{body.data(), body.size()}}, false);
    w.finish();
    f.commit();
  }
  expect_io_error([&] { mj::load_npz(p); }, {"load_npz", p, "key 'a'", "truncated .npy: 0 bytes"});
}

}  // namespace
