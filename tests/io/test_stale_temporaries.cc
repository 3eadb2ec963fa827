// minijax tests (io): a save removes the temporaries that killed saves left in its folder.
// `.<name>.tmp-<pid>-<n>` files of a dead pid go; a live process's, other names and folders stay.
#include <signal.h>
#include <sys/wait.h>

#include "io_test_util.h"

namespace {

using namespace iotest;

// A pid that no process has: a child that exited and was reaped (kill(pid, 0) then fails with
// ESRCH until the kernel hands the pid out again, which takes a full wrap of the pid space).
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  return pid;
}

void touch(const std::string& p) { write_bytes(p, {1, 2, 3}); }

TEST(StaleTemporaries, ASaveRemovesDeadProcessesTemporariesOnly) {
  ScratchDir dir;
  const std::string dead = std::to_string(dead_pid());
  const std::string parent = std::to_string(::getppid());  // ctest, or the shell: alive
  const std::string self = std::to_string(::getpid());
  const std::vector<std::string> removed{".checkpoint.safetensors.tmp-" + dead + "-0",
                                         ".other.npz.tmp-" + dead + "-17", ".a.tmp-b.tmp-" + dead + "-3"};
  const std::vector<std::string> kept{
      ".checkpoint.safetensors.tmp-" + parent + "-0",  // a live process's
      ".checkpoint.safetensors.tmp-" + self + "-5",    // this process's own
      ".checkpoint.safetensors.tmp-1-0",               // init: alive (EPERM when not root)
      "checkpoint.safetensors.tmp-" + dead + "-0",     // no leading dot
      ".checkpoint.safetensors.tmp-" + dead,           // no counter
      ".checkpoint.safetensors.tmp-" + dead + "-",     // empty counter
      ".checkpoint.safetensors.tmp-0" + dead + "-0",   // not a plain decimal pid
      ".checkpoint.safetensors.tmp-0-0",               // pid 0 (kill(0, .) is the process group)
      ".tmp-" + dead + "-0",                           // no <name>
      "notes.txt"};
  for (auto& n : removed) touch(dir / n);
  for (auto& n : kept) touch(dir / n);
  fs::create_directory(dir / (".folder.tmp-" + dead + "-0"));  // not a regular file: kept

  mj::save_safetensors(dir / "checkpoint.safetensors", std::map<std::string, mj::Array>{{"x", mj::ones({2})}});
  for (auto& n : removed) EXPECT_FALSE(fs::exists(dir / n)) << n;
  for (auto& n : kept) EXPECT_TRUE(fs::exists(dir / n)) << n;
  EXPECT_TRUE(fs::is_directory(dir / (".folder.tmp-" + dead + "-0")));
  EXPECT_TRUE(fs::exists(dir / "checkpoint.safetensors"));

  // Every atomic saver cleans up (npz, npy): the same function behind AtomicFile.
  touch(dir / removed[0]);
  mj::save_npz(dir / "o.npz", std::map<std::string, mj::Array>{{"x", mj::ones({2})}});
  EXPECT_FALSE(fs::exists(dir / removed[0]));
  touch(dir / removed[0]);
  mj::save_npy(dir / "o.npy", mj::ones({2}));
  EXPECT_FALSE(fs::exists(dir / removed[0]));
  for (auto& n : kept) EXPECT_TRUE(fs::exists(dir / n)) << n;
}

// A save killed with SIGKILL mid-write leaves its temporary (nothing runs in the process); the
// next save into the folder removes it, and the target holds the last complete file throughout.
TEST(StaleTemporaries, AKilledSavesTemporaryGoesWithTheNextSave) {
  ScratchDir dir;
  const std::string p = dir / "big.safetensors";
  const auto small = std::map<std::string, mj::Array>{{"x", mj::ones({2})}};
  mj::save_safetensors(p, small);
  const auto before = read_bytes(p);
  const auto big = std::map<std::string, mj::Array>{{"x", mj::ones({4 << 20})}};  // 16 MiB
  (void)big.at("x").raw_data();  // computed here: the child only writes
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    (void)::write(ready[1], "r", 1);
    for (;;) mj::save_safetensors(p, big);
  }
  ::close(ready[1]);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  // Until a temporary exists (the save is under way), then SIGKILL.
  const std::string prefix = ".big.safetensors.tmp-" + std::to_string(pid) + "-";
  auto temporaries = [&] {
    std::vector<std::string> t;
    for (auto& e : fs::directory_iterator(dir.path))
      if (e.path().filename().string().rfind(prefix, 0) == 0) t.push_back(e.path().filename().string());
    return t;
  };
  for (int i = 0; i < 20000 && temporaries().empty(); ++i) ::usleep(500);
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  const auto left = temporaries();
  ASSERT_FALSE(left.empty()) << "the child's save left no temporary";
  const auto after = read_bytes(p);
  EXPECT_TRUE(after == before || after.size() > size_t(16) << 20) << after.size() << " bytes";
  mj::save_safetensors(p, small);
  EXPECT_TRUE(temporaries().empty());
  EXPECT_EQ(read_bytes(p), before);
}

}  // namespace
