// minijax tests (io): atomic writes — a failed save leaves the old file as it was and no debris.
// Failures are real ones from the kernel: EFBIG past RLIMIT_FSIZE (mid-write), ENAMETOOLONG, EACCES.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>

#include "io_test_util.h"

namespace {

using namespace iotest;

// The names in a folder other than `keep` (temporary files left behind, if any).
std::vector<std::string> others(const ScratchDir& dir, const std::string& keep) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir.path))
    if (e.path().filename() != keep) out.push_back(e.path().filename().string());
  return out;
}

// Runs fn with the process's file size limit at `bytes` (writes past it fail with EFBIG; SIGXFSZ
// ignored, as a program wanting the error instead of death does), then restores both.
template <class F>
void with_file_size_limit(rlim_t bytes, F fn) {
  struct rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  struct rlimit lim = old;
  lim.rlim_cur = bytes;
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  fn();
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
}

TEST(AtomicWrite, AWriteFailingMidwayLeavesTheOldFileIntact) {
  ScratchDir dir;
  const std::map<std::string, mj::Array> old_tree{{"w", make<float>({4}, {1, 2, 3, 4})}};
  // 4 MiB of random floats: over the limit, also once deflated.
  const std::map<std::string, mj::Array> big{{"w", mj::random::uniform(mj::random::PRNGKey(0), {1 << 20})}};
  struct Case {
    std::string name;
    std::function<void(const std::string&, const std::map<std::string, mj::Array>&)> save;
  };
  const std::vector<Case> cases{
      {"a.npy", [](const std::string& p, const auto& t) { mj::save_npy(p, t.at("w")); }},
      {"a.npz", [](const std::string& p, const auto& t) { mj::save_npz(p, t); }},
      {"c.npz", [](const std::string& p, const auto& t) { mj::save_npz(p, t, {.compressed = true}); }},
      {"a.safetensors", [](const std::string& p, const auto& t) { mj::save_safetensors(p, t); }},
  };
  for (const Case& c : cases) {
    const std::string p = dir / c.name;
    c.save(p, old_tree);
    const std::vector<uint8_t> before = read_bytes(p);
    ASSERT_LT(before.size(), 4096u);
    std::string message;
    with_file_size_limit(64 * 1024, [&] {
      message = expect_io_error([&] { c.save(p, big); }, {p, "writing the temporary file failed", "File too large",
                                                          "the old file, if any, is unchanged"});
    });
    EXPECT_EQ(read_bytes(p), before) << c.name;
    EXPECT_EQ(others(dir, c.name), std::vector<std::string>{}) << c.name << ": a temporary file was left behind";
    fs::remove(p);
  }
}

TEST(AtomicWrite, ATemporaryThatCannotBeCreatedLeavesTheOldFileIntact) {
  ScratchDir dir;
  // A name of 250 bytes is valid (NAME_MAX is 255), but ".<name>.tmp-..." is not.
  const std::string name = std::string(238, 'n') + ".safetensors";
  ASSERT_EQ(name.size(), 250u);
  const std::vector<uint8_t> old{'o', 'l', 'd'};
  write_bytes(dir / name, old);
  expect_io_error([&] { mj::save_safetensors(dir / name, std::map<std::string, mj::Array>{{"x", mj::ones({2})}}); },
                  {"save_safetensors", name, "cannot create the temporary file", "File name too long"});
  EXPECT_EQ(read_bytes(dir / name), old);
  EXPECT_EQ(others(dir, name), std::vector<std::string>{});
}

// Root ignores a folder's permissions through CAP_DAC_OVERRIDE; capabilities are per thread on
// Linux (capset(2)), so this thread sets it (and CAP_DAC_READ_SEARCH, CAP_FOWNER) aside from its
// effective set for the test's duration, and takes it back after.
struct WithoutDacOverride {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct saved[2]{}, dropped[2]{};
  bool changed = false;
  WithoutDacOverride() {
    if (::syscall(SYS_capget, &header, saved) != 0) return;
    std::memcpy(dropped, saved, sizeof saved);
    dropped[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH) | (1u << CAP_FOWNER));
    changed = ::syscall(SYS_capset, &header, dropped) == 0;
  }
  ~WithoutDacOverride() {
    if (changed) ::syscall(SYS_capset, &header, saved);
  }
};

TEST(AtomicWrite, AReadOnlyFolderLeavesTheOldFileIntact) {
  ScratchDir dir;
  const std::string p = dir / "a.npz";
  mj::save_npz(p, std::map<std::string, mj::Array>{{"x", mj::ones({2})}});
  const std::vector<uint8_t> before = read_bytes(p);
  fs::permissions(dir.path, fs::perms::owner_read | fs::perms::owner_exec);
  {
    WithoutDacOverride guard;
    const std::string probe = dir / "probe";
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    ASSERT_LT(fd, 0) << "the folder is writable despite mode 0500 (a capability this thread could not drop)";
    expect_io_error([&] { mj::save_npz(p, std::map<std::string, mj::Array>{{"x", mj::zeros({3})}}); },
                    {"save_npz", p, "cannot create the temporary file", "Permission denied"});
  }
  fs::permissions(dir.path, fs::perms::owner_all);
  EXPECT_EQ(read_bytes(p), before);
  EXPECT_EQ(others(dir, "a.npz"), std::vector<std::string>{});
}

TEST(AtomicWrite, ASuccessfulSaveReplacesTheFileWhole) {
  ScratchDir dir;
  const std::string p = dir / "m.safetensors";
  mj::save_safetensors(p, std::map<std::string, mj::Array>{{"x", mj::zeros({1000})}});
  mj::save_safetensors(p, std::map<std::string, mj::Array>{{"y", make<int32_t>({1}, {5})}});
  const auto got = mj::load_safetensors(p);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got.at("y").item<int>(), 5);
  EXPECT_EQ(others(dir, "m.safetensors"), std::vector<std::string>{});
  // The new file is created as open(2) would create it: mode 0666 minus the umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st;
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

}  // namespace
